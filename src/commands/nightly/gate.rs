//! The nightly gate: a finished run against a baseline run of the same
//! suite. Its verdict is a regression (exit status 4, `ExitStatus::Regression`)
//! only for a significant regression beyond the suite's margin; a point that
//! is significantly slower but within the margin, or not significant, does
//! not fail the night.
//!
//! Each candidate variant of the run is gated on its own: its samples
//! tonight against its samples in the baseline run ([`crate::jobs::diff`]).

use crate::base::exit::ExitStatus;
use crate::commands::status::Outcome as _;
use crate::record::{GateRecord, RegressedPoint, RunMeta};
use crate::stages::analysis::param_label;
use crate::stages::report::format::relative;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// What the gate decided, and the markdown summary for a CI job page.
#[derive(Debug, Clone)]
pub struct Gate {
    /// Success: no regression beyond the margin; `Regression`: at least one.
    pub status: ExitStatus,
    pub summary: String,
    /// Each point that regressed beyond the margin, as a bisection names it.
    pub regressed: Vec<RegressedPoint>,
}

/// The variants to gate and where each one's diff is written: the one
/// asked for, or the run's only candidate, in `candidate/diff-baseline`;
/// with several candidates, each in `candidate/diff-baseline-<variant>`.
fn gated_variants(
    candidate: &Path,
    variant: Option<&str>,
) -> Result<Vec<(Option<String>, PathBuf)>> {
    let single = |v: Option<String>| vec![(v, candidate.join("diff-baseline"))];
    if variant.is_some() {
        return Ok(single(variant.map(String::from)));
    }
    crate::record::require_run_dir(candidate)?;
    let meta = RunMeta::read(candidate)?;
    if meta.kernels.len() <= 2 {
        return Ok(single(None));
    }
    Ok(meta.kernels[1..]
        .iter()
        .map(|k| {
            let dir = candidate.join(format!("diff-baseline-{}", k.variant));
            (Some(k.variant.clone()), dir)
        })
        .collect())
}

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

/// Compares `candidate` with `baseline` (`markbench diff`, written into
/// `candidate`), each gated variant on its own.
pub fn decide(baseline: &Path, candidate: &Path, variant: Option<&str>) -> Result<GateDecision> {
    let gated = gated_variants(candidate, variant)?;
    let several = gated.len() > 1;
    let mut decision = GateDecision {
        baseline: baseline.to_path_buf(),
        candidate: candidate.to_path_buf(),
        margin: 0.0,
        variants: Vec::new(),
    };
    for (variant, out) in &gated {
        let warnings = crate::jobs::diff::diff(baseline, candidate, variant.as_deref(), out)?;
        let diff_meta = RunMeta::read(out)?;
        let gated_variant = match variant {
            Some(v) => v.clone(),
            None => {
                crate::jobs::diff::default_variant(&RunMeta::read(candidate)?).unwrap_or_default()
            }
        };
        let samples = crate::record::read_samples(out)?;
        let analysis = crate::stages::analysis::analyse(&diff_meta, &samples);
        decision.margin = analysis.config.margin;
        let results = analysis
            .results
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut unmeasured = Vec::new();
        let mut regressions = Vec::new();
        // A diff compares one variant across the two runs: one comparison.
        for (key, list) in results.iter().flatten() {
            for (a, p) in list.iter().zip(&analysis.tables[key]) {
                if a.a.n_boots == 0 || a.b.n_boots == 0 {
                    unmeasured.push(Unmeasured {
                        workload: key.workload.clone(),
                        cpus: key.cpus,
                        param: p.param,
                        in_baseline: a.a.n_boots == 0,
                    });
                }
                if a.regressed_beyond(decision.margin) {
                    let point = RegressedPoint {
                        variant: gated_variant.clone(),
                        workload: key.workload.clone(),
                        metric: key.metric.clone(),
                        cpus: key.cpus,
                        param: p.param,
                    };
                    regressions.push((point, a.relative_difference.unwrap_or(f64::NAN)));
                }
            }
        }
        decision.variants.push(GatedVariant {
            label: variant.clone().filter(|_| several),
            warnings,
            verdict: crate::base::stats::summary_line(&analysis.all_points(), &analysis.config),
            report: out.join(crate::stages::report::REPORT_FILE),
            unmeasured,
            regressions,
        });
    }
    Ok(decision)
}

impl GateDecision {
    /// Every point that regressed beyond the margin, as a bisection names it.
    pub fn regressed(&self) -> Vec<RegressedPoint> {
        self.variants
            .iter()
            .flat_map(|v| v.regressions.iter().map(|(point, _)| point.clone()))
            .collect()
    }

    /// The record kept as `gate.json`.
    pub fn record(&self) -> GateRecord {
        GateRecord {
            baseline: self.baseline.display().to_string(),
            code: self.status().code(),
            regressed: self.regressed(),
        }
    }

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

/// Gates `candidate` against `baseline` ([`decide`]), appends the verdict
/// to `summary` and keeps it in `candidate` as `gate.json`.
pub fn gate(
    baseline: &Path,
    candidate: &Path,
    variant: Option<&str>,
    summary: String,
) -> Result<Gate> {
    let decision = decide(baseline, candidate, variant)?;
    decision.record().write(candidate)?;
    Ok(Gate {
        status: decision.status(),
        summary: decision.render(summary),
        regressed: decision.regressed(),
    })
}
