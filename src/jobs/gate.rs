//! The nightly gate: a finished run against a baseline run of the same
//! suite. It fails the night only for a significant regression beyond the
//! suite's margin; a point that is significantly slower but within the
//! margin, or not significant, does not.
//!
//! Each candidate variant of the run is gated on its own: its samples
//! tonight against its samples in the baseline run ([`crate::jobs::diff`]).
//! The decision is data ([`GateDecision`]); `stages::report::gate` words it
//! and `commands::status` gives its exit status.

use crate::base::error::Result;
use crate::record::{GateRecord, RegressedPoint, RunMeta};
pub use crate::stages::analysis::gate::{GateDecision, GatedVariant, Regression, Side, Unmeasured};
use crate::stages::analysis::Analysis;
use std::path::{Path, PathBuf};

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
    let mut decision = GateDecision {
        baseline: baseline.to_path_buf(),
        candidate: candidate.to_path_buf(),
        config: Default::default(),
        variants: Vec::new(),
    };
    for (variant, out) in &gated_variants(candidate, variant)? {
        let warnings = crate::jobs::diff::diff(baseline, candidate, variant.as_deref(), out)?;
        let diff_meta = RunMeta::read(out)?;
        let gated = match variant {
            Some(v) => v.clone(),
            None => {
                crate::jobs::diff::default_variant(&RunMeta::read(candidate)?).unwrap_or_default()
            }
        };
        let samples = crate::record::read_samples(out)?;
        let analysis = crate::stages::analysis::analyse(&diff_meta, &samples);
        let (unmeasured, regressions) = judge(&analysis, &gated)?;
        decision.config = analysis.config.clone();
        decision.variants.push(GatedVariant {
            variant: gated,
            warnings,
            points: analysis.all_points(),
            report: out.join(crate::stages::report::REPORT_FILE),
            unmeasured,
            regressions,
        });
    }
    Ok(decision)
}

/// The points of a diff's `analysis` of `variant` measured in one run only,
/// and those that regressed beyond the analysis's margin with their change.
fn judge(analysis: &Analysis, variant: &str) -> Result<(Vec<Unmeasured>, Vec<Regression>)> {
    let results = analysis
        .results
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut unmeasured = Vec::new();
    let mut regressions = Vec::new();
    // A diff compares one variant across the two runs: one comparison.
    for (key, list) in results.iter().flatten() {
        for (a, p) in list.iter().zip(&analysis.tables[key]) {
            let missing_in = if a.a.n_boots == 0 {
                Some(Side::Baseline)
            } else if a.b.n_boots == 0 {
                Some(Side::Tonight)
            } else {
                None
            };
            if let Some(missing_in) = missing_in {
                unmeasured.push(Unmeasured {
                    workload: key.workload.clone(),
                    cpus: key.cpus,
                    param: p.param,
                    missing_in,
                });
            }
            if a.regressed_beyond(analysis.config.margin) {
                let point = RegressedPoint {
                    variant: variant.to_string(),
                    workload: key.workload.clone(),
                    metric: key.metric.clone(),
                    cpus: key.cpus,
                    param: p.param,
                };
                regressions.push((point, a.relative_difference.unwrap_or(f64::NAN)));
            }
        }
    }
    Ok((unmeasured, regressions))
}

/// The record of `decision` kept as `gate.json`.
pub fn record(decision: &GateDecision) -> GateRecord {
    GateRecord {
        baseline: decision.baseline.display().to_string(),
        regression: decision.regression(),
        regressed: decision.regressed(),
    }
}

/// Gates `candidate` against `baseline` ([`decide`]) and keeps the decision
/// in `candidate` as `gate.json`.
pub fn gate(baseline: &Path, candidate: &Path, variant: Option<&str>) -> Result<GateDecision> {
    let decision = decide(baseline, candidate, variant)?;
    record(&decision).write(candidate)?;
    Ok(decision)
}
