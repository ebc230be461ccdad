//! The nightly gate: a finished run against a baseline run of the same
//! suite. Exit code 1 only for a significant regression beyond the suite's
//! margin; a point that is significantly slower but within the margin, or
//! not significant, does not fail the night.

use anyhow::Result;
use std::path::Path;

/// What the gate decided, and the markdown summary for a CI job page.
#[derive(Debug, Clone)]
pub struct Gate {
    /// 0: no regression beyond the margin; 1: at least one.
    pub code: i32,
    pub summary: String,
    pub regressions: usize,
}

/// Compares `candidate` with `baseline` (`markbench diff`, written to
/// `candidate/diff-baseline`) and appends the verdict to `summary`.
pub fn gate(
    baseline: &Path,
    candidate: &Path,
    variant: Option<&str>,
    mut summary: String,
) -> Result<Gate> {
    let out = candidate.join("diff-baseline");
    let warnings = crate::diff::diff(baseline, candidate, variant, &out)?;
    let diff_meta = crate::samples::RunMeta::read(&out)?;
    let samples = crate::samples::read_samples(&out)?;
    let analysis = crate::report::analyse(&diff_meta, &samples);
    let margin = analysis.config.margin;
    let mut regressions = Vec::new();
    let results = analysis
        .results
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for (key, list) in results {
        for (a, p) in list.iter().zip(&analysis.tables[key]) {
            let beyond = a.relative_difference.is_some_and(|r| {
                let worse = if p.higher_is_better { -r } else { r };
                worse > margin
            });
            if a.verdict == crate::stats::Verdict::Regression && beyond {
                regressions.push(format!(
                    "| {} | {} | {} {} | {} |",
                    key.workload,
                    key.cpus,
                    crate::report::param_label(&key.workload),
                    p.param,
                    crate::report::format::percent(
                        a.relative_difference.unwrap_or(f64::NAN) * 100.0
                    )
                ));
            }
        }
    }
    for w in &warnings {
        summary.push_str(&format!("> **Warning**: {w}\n\n"));
    }
    let flat: Vec<_> = results.values().flatten().cloned().collect();
    summary.push_str(&format!(
        "Baseline `{}`, candidate `{}`: {}.\n\n",
        baseline.display(),
        candidate.display(),
        crate::stats::summary_line(&flat, &analysis.config)
    ));
    if regressions.is_empty() {
        summary.push_str(&format!("**No regression beyond {}%.**\n", margin * 100.0));
    } else {
        summary.push_str(&format!(
            "**{} significant regression(s) beyond {}%:**\n\n| workload | CPUs | point | change [%] |\n|---|---:|---|---:|\n{}\n",
            regressions.len(),
            margin * 100.0,
            regressions.join("\n")
        ));
    }
    summary.push_str(&format!(
        "\nFull comparison: {}\n",
        out.join(crate::report::REPORT_FILE).display()
    ));
    Ok(Gate {
        code: if regressions.is_empty() { 0 } else { 1 },
        summary,
        regressions: regressions.len(),
    })
}
