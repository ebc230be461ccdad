//! The nightly gate: a finished run against a baseline run of the same
//! suite. Its verdict is a regression (exit status 4, `ExitStatus::Regression`)
//! only for a significant regression beyond the suite's margin; a point that
//! is significantly slower but within the margin, or not significant, does
//! not fail the night.
//!
//! Each candidate variant of the run is gated on its own: its samples
//! tonight against its samples in the baseline run ([`crate::diff`]).

use crate::analysis::param_label;
use crate::exit::ExitStatus;
use crate::report::format::relative;
use crate::samples::{GateRecord, RegressedPoint, RunMeta};
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
    crate::samples::require_run_dir(candidate)?;
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

/// The gate's verdict: a regression when a point regressed beyond the margin.
pub fn verdict(regressed: bool) -> ExitStatus {
    if regressed {
        ExitStatus::Regression
    } else {
        ExitStatus::Success
    }
}

/// Compares `candidate` with `baseline` (`markbench diff`, written into
/// `candidate`) and appends the verdict to `summary`.
pub fn gate(
    baseline: &Path,
    candidate: &Path,
    variant: Option<&str>,
    mut summary: String,
) -> Result<Gate> {
    let gated = gated_variants(candidate, variant)?;
    let several = gated.len() > 1;
    let mut regressions = Vec::new();
    let mut regressed = Vec::new();
    let mut unmeasured = Vec::new();
    let mut verdicts = String::new();
    let mut reports = Vec::new();
    let mut margin = 0.0;
    for (variant, out) in &gated {
        let warnings = crate::diff::diff(baseline, candidate, variant.as_deref(), out)?;
        let diff_meta = RunMeta::read(out)?;
        let gated_variant = match variant {
            Some(v) => v.clone(),
            None => crate::diff::default_variant(&RunMeta::read(candidate)?).unwrap_or_default(),
        };
        let samples = crate::samples::read_samples(out)?;
        let analysis = crate::analysis::analyse(&diff_meta, &samples);
        margin = analysis.config.margin;
        let results = analysis
            .results
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        // A diff compares one variant across the two runs: one comparison.
        for (key, list) in results.iter().flatten() {
            for (a, p) in list.iter().zip(&analysis.tables[key]) {
                if a.a.n_boots == 0 || a.b.n_boots == 0 {
                    let which = match (several, variant) {
                        (true, Some(v)) => format!("{v}: "),
                        _ => String::new(),
                    };
                    let side = if a.a.n_boots == 0 {
                        "the baseline run"
                    } else {
                        "this run"
                    };
                    unmeasured.push(format!(
                        "{which}{} on {} CPU(s), {} {} (no values in {side})",
                        key.workload,
                        key.cpus,
                        param_label(&key.workload),
                        p.param
                    ));
                }
                if a.regressed_beyond(margin) {
                    regressed.push(RegressedPoint {
                        variant: gated_variant.clone(),
                        workload: key.workload.clone(),
                        metric: key.metric.clone(),
                        cpus: key.cpus,
                        param: p.param,
                    });
                    let which = match (several, variant) {
                        (true, Some(v)) => format!("| {v} "),
                        _ => String::new(),
                    };
                    regressions.push(format!(
                        "{which}| {} | {} | {} {} | {} |",
                        key.workload,
                        key.cpus,
                        param_label(&key.workload),
                        p.param,
                        relative(a.relative_difference.unwrap_or(f64::NAN))
                    ));
                }
            }
        }
        for w in &warnings {
            summary.push_str(&format!("> **Warning**: {w}\n\n"));
        }
        verdicts.push_str(&format!(
            "Baseline `{}`, candidate `{}`{}: {}.\n\n",
            baseline.display(),
            candidate.display(),
            match (several, variant) {
                (true, Some(v)) => format!(", variant {v}"),
                _ => String::new(),
            },
            crate::stats::summary_line(&analysis.all_points(), &analysis.config)
        ));
        reports.push(out.join(crate::report::REPORT_FILE));
    }
    summary.push_str(&verdicts);
    if !unmeasured.is_empty() {
        summary.push_str(&format!(
            "**Not compared** ({} point(s) measured in one run only): {}.\n\n",
            unmeasured.len(),
            unmeasured.join("; ")
        ));
    }
    if regressions.is_empty() {
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
            regressions.len(),
            margin * 100.0,
            regressions.join("\n")
        ));
    }
    for report in reports {
        summary.push_str(&format!("\nFull comparison: {}\n", report.display()));
    }
    let status = verdict(!regressions.is_empty());
    GateRecord {
        baseline: baseline.display().to_string(),
        code: status.code(),
        regressed: regressed.clone(),
    }
    .write(candidate)?;
    Ok(Gate {
        status,
        summary,
        regressed,
    })
}
