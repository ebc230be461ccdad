//! The Series section of a patch series (`--revs BASE..TIP`), in the layout
//! of the ring-buffer series measured commit by commit: one row per kernel,
//! its value, and its change against the baseline and against the kernel
//! before it, each with its interval and verdict.

use super::super::format::{escape_md, relative, value};
use super::results::{decimals_of, heading, interval_cell, verdict_cell};
use super::RunReport;
use crate::stages::analysis::param_label;
use std::fmt::Write as _;

/// A kernel's row label: its short id and, when recorded, its subject.
fn kernel_cells(run: &RunReport, side: usize) -> (String, String) {
    let name = run.analysis.variants[side].clone();
    let subject = run
        .meta
        .kernels
        .get(side)
        .and_then(|k| k.origin.as_ref())
        .and_then(|o| o.subject.clone())
        .unwrap_or_default();
    (escape_md(&name), escape_md(&subject))
}

pub(super) fn section(run: &RunReport) -> String {
    let analysis = run.analysis;
    if !run.meta.series || analysis.variants.len() < 2 {
        return String::new();
    }
    let mut r = String::from(
        "## Series\n\nEach kernel of the series against the baseline (its first kernel) and \
         against the kernel before it. Every change here is one of the report's comparisons, \
         corrected as one family with the Results tables.\n\n",
    );
    for (key, points) in &analysis.tables {
        for (i, p) in points.iter().enumerate() {
            let d = decimals_of(std::slice::from_ref(p));
            let _ = writeln!(
                r,
                "### {}, {} {}\n",
                heading(key, p),
                param_label(&key.workload),
                p.param
            );
            let _ = writeln!(
                r,
                "| kernel | subject | {} [{}] | vs baseline [%] | 95% CI [%] | verdict | vs previous [%] | 95% CI [%] | verdict |\n|---|---|---:|---:|---|---|---:|---|---|",
                escape_md(&key.metric),
                escape_md(&p.unit)
            );
            let base = p.mean(0);
            for side in 0..analysis.variants.len() {
                let (name, subject) = kernel_cells(run, side);
                let mean = p.mean(side);
                let _ = write!(r, "| {name} | {subject} | {} |", value(mean, d));
                if side == 0 {
                    r.push_str(" – | – | baseline | – | – | – |\n");
                    continue;
                }
                let against_base = analysis.results_of(side - 1, key).and_then(|a| a.get(i));
                let _ = write!(
                    r,
                    " {} | {} | {} |",
                    relative((mean - base) / base),
                    against_base.map_or("–".into(), interval_cell),
                    against_base.map_or("–".into(), verdict_cell)
                );
                let previous = p.mean(side - 1);
                // The first candidate's step is its comparison with the baseline.
                let step = if side == 1 {
                    against_base
                } else {
                    analysis
                        .step_results_of(side - 2, key)
                        .and_then(|a| a.get(i))
                };
                let _ = writeln!(
                    r,
                    " {} | {} | {} |",
                    relative((mean - previous) / previous),
                    step.map_or("–".into(), interval_cell),
                    step.map_or("–".into(), verdict_cell)
                );
            }
            r.push('\n');
        }
    }
    r
}
