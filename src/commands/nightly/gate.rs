//! The nightly gate: a finished run against a baseline run of the same
//! suite. Its verdict is a regression (exit status 4, `ExitStatus::Regression`)
//! only for a significant regression beyond the suite's margin; a point that
//! is significantly slower but within the margin, or not significant, does
//! not fail the night.
//!
//! Each candidate variant of the run is gated on its own: its samples
//! tonight against its samples in the baseline run ([`crate::jobs::diff`]).

use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::commands::status::Outcome as _;
use crate::record::{GateRecord, RegressedPoint, RunMeta};
/// The gate's decision is a record of the report, which words it.
pub use crate::stages::report::gate::{GateDecision, GatedVariant, Unmeasured};
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
