//! The nightly gate's summary for a CI job page: tonight's run against the
//! baseline run, each gated variant's verdict, the points not compared and
//! the regressions beyond the margin. `jobs::gate` decides the gate into a
//! [`GateDecision`]; this module only words it.

use crate::stages::analysis::gate::{GateDecision, Side};
use crate::stages::analysis::param_label;
use crate::stages::report::format::relative;

/// The variant's name in the summary's lines and table, when the run is
/// gated on several variants.
fn label(decision: &GateDecision, variant: &str) -> Option<String> {
    decision.several().then(|| variant.to_string())
}

impl GateDecision {
    /// `summary` followed by the gate's markdown for a CI job page: the
    /// warnings, each variant's verdict, the points not compared, the
    /// regressions and where each full comparison is.
    pub fn render(&self, mut summary: String) -> String {
        let several = self.several();
        let margin = self.margin();
        for w in self.variants.iter().flat_map(|v| &v.warnings) {
            summary.push_str(&format!("> **Warning**: {w}\n\n"));
        }
        for v in &self.variants {
            summary.push_str(&format!(
                "Baseline `{}`, candidate `{}`{}: {}.\n\n",
                self.baseline.display(),
                self.candidate.display(),
                label(self, &v.variant).map_or(String::new(), |l| format!(", variant {l}")),
                crate::base::stats::summary_line(&v.points, &self.config)
            ));
        }
        let unmeasured: Vec<String> = self
            .variants
            .iter()
            .flat_map(|v| {
                v.unmeasured
                    .iter()
                    .map(move |u| (label(self, &v.variant), u))
            })
            .map(|(label, u)| {
                format!(
                    "{}{} on {} CPU(s), {} {} (no values in {})",
                    label.as_ref().map_or(String::new(), |l| format!("{l}: ")),
                    u.workload,
                    u.cpus,
                    param_label(&u.workload),
                    u.param,
                    match u.missing_in {
                        Side::Baseline => "the baseline run",
                        Side::Tonight => "this run",
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
            .flat_map(|v| {
                v.regressions
                    .iter()
                    .map(move |r| (label(self, &v.variant), r))
            })
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
            summary.push_str(&format!("**No regression beyond {}%.**\n", margin * 100.0));
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
                margin * 100.0,
                rows.join("\n")
            ));
        }
        for v in &self.variants {
            summary.push_str(&format!("\nFull comparison: {}\n", v.report.display()));
        }
        summary
    }
}
