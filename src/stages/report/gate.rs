//! The nightly gate's summary for a CI job page: tonight's run against the
//! baseline run, each gated variant's verdict, the points not compared and
//! the regressions beyond the margin. `commands::nightly` decides the gate
//! into a [`GateDecision`]; this module only words it.

use crate::record::RegressedPoint;
use crate::stages::analysis::param_label;
use crate::stages::report::format::relative;
use std::path::PathBuf;

/// What the gate found, before any of it is shown or written: each gated
/// variant's comparison, and the margin a regression must exceed.
#[derive(Debug, Clone)]
pub struct GateDecision {
    pub baseline: PathBuf,
    pub candidate: PathBuf,
    /// The suite's margin (the same in every variant's comparison).
    pub margin: f64,
    pub variants: Vec<GatedVariant>,
}

/// One variant of tonight's run against the same variant of the baseline.
#[derive(Debug, Clone)]
pub struct GatedVariant {
    /// The variant's name in the summary's lines and table: set when the
    /// run has several candidates, each gated on its own.
    pub label: Option<String>,
    /// What differs between the two runs' conditions (`diff`'s warnings).
    pub warnings: Vec<String>,
    /// The comparison's verdict line (`stats::summary_line`).
    pub verdict: String,
    /// The comparison's report.
    pub report: PathBuf,
    /// The points measured in one run only.
    pub unmeasured: Vec<Unmeasured>,
    /// The points that regressed beyond the margin, with their change.
    pub regressions: Vec<(RegressedPoint, f64)>,
}

/// A point measured in one of the two runs only.
#[derive(Debug, Clone, PartialEq)]
pub struct Unmeasured {
    pub workload: String,
    pub cpus: u32,
    pub param: u64,
    /// No values in the baseline run (else none in tonight's).
    pub in_baseline: bool,
}

impl GateDecision {
    /// `summary` followed by the gate's markdown for a CI job page: the
    /// warnings, each variant's verdict, the points not compared, the
    /// regressions and where each full comparison is.
    pub fn render(&self, mut summary: String) -> String {
        let several = self.variants.iter().any(|v| v.label.is_some());
        for w in self.variants.iter().flat_map(|v| &v.warnings) {
            summary.push_str(&format!("> **Warning**: {w}\n\n"));
        }
        for v in &self.variants {
            summary.push_str(&format!(
                "Baseline `{}`, candidate `{}`{}: {}.\n\n",
                self.baseline.display(),
                self.candidate.display(),
                v.label
                    .as_ref()
                    .map_or(String::new(), |l| format!(", variant {l}")),
                v.verdict
            ));
        }
        let unmeasured: Vec<String> = self
            .variants
            .iter()
            .flat_map(|v| v.unmeasured.iter().map(move |u| (&v.label, u)))
            .map(|(label, u)| {
                format!(
                    "{}{} on {} CPU(s), {} {} (no values in {})",
                    label.as_ref().map_or(String::new(), |l| format!("{l}: ")),
                    u.workload,
                    u.cpus,
                    param_label(&u.workload),
                    u.param,
                    if u.in_baseline {
                        "the baseline run"
                    } else {
                        "this run"
                    }
                )
            })
            .collect();
        if !unmeasured.is_empty() {
            summary.push_str(&format!(
                "**Not compared** ({} point(s) measured in one run only): {}.\n\n",
                unmeasured.len(),
                unmeasured.join("; ")
            ));
        }
        let rows: Vec<String> = self
            .variants
            .iter()
            .flat_map(|v| v.regressions.iter().map(move |r| (&v.label, r)))
            .map(|(label, (point, change))| {
                format!(
                    "{}| {} | {} | {} {} | {} |",
                    label.as_ref().map_or(String::new(), |l| format!("| {l} ")),
                    point.workload,
                    point.cpus,
                    param_label(&point.workload),
                    point.param,
                    relative(*change)
                )
            })
            .collect();
        if rows.is_empty() {
            summary.push_str(&format!(
                "**No regression beyond {}%.**\n",
                self.margin * 100.0
            ));
        } else {
            let (head, rule) = if several {
                (
                    "| variant | workload | CPUs | point | change [%] |",
                    "|---|---|---:|---|---:|",
                )
            } else {
                (
                    "| workload | CPUs | point | change [%] |",
                    "|---|---:|---|---:|",
                )
            };
            summary.push_str(&format!(
                "**{} significant regression(s) beyond {}%:**\n\n{head}\n{rule}\n{}\n",
                rows.len(),
                self.margin * 100.0,
                rows.join("\n")
            ));
        }
        for v in &self.variants {
            summary.push_str(&format!("\nFull comparison: {}\n", v.report.display()));
        }
        summary
    }
}
