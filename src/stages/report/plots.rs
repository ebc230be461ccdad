//! `plots/`: per table and comparison, the metric of both variants and
//! their relative difference; per profiled point, its largest differences
//! by function.

use super::{profile, RunReport, PLOTS_DIR};
use crate::base::error::Result;
use crate::base::plots::{PlotInput, RelPoint, SidePoint};
use crate::stages::analysis::{param_label, Analysis, Comparison, Point, TableKey};
use std::path::Path;

/// Draws every plot into `dir/plots/`. Not an [`super::Export`]: the
/// plotting backends write their files themselves.
pub(super) fn write(run: &RunReport, dir: &Path) -> Result<()> {
    let plots_dir = dir.join(PLOTS_DIR);
    let analysis = run.analysis;
    for (key, points) in &analysis.tables {
        for (i, c) in analysis.comparisons.iter().enumerate() {
            let input = plot_input(key, points, analysis, i, c);
            crate::base::plots::render(&input, &plots_dir, &plot_stem(key, analysis, c))?;
        }
    }
    for view in run.profiles {
        for p in &view.points {
            crate::base::plots::render_profile(
                &profile::plot_input(view, p),
                &plots_dir,
                &profile::plot_stem(view, p),
            )?;
        }
    }
    Ok(())
}

/// `s` with everything but letters, digits and '-' replaced, for a file name.
fn file_name_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// File stem of a comparison's plots of a table. A run of two variants has
/// one comparison, and its plots are named after the table alone.
pub(super) fn plot_stem(key: &TableKey, analysis: &Analysis, c: &Comparison) -> String {
    let table = format!(
        "{}-{}-{}cpu",
        file_name_part(&key.workload),
        file_name_part(&key.metric),
        key.cpus
    );
    if analysis.is_pair() {
        table
    } else {
        let [_, candidate] = analysis.names(c);
        format!("{table}-{}", file_name_part(candidate))
    }
}

/// The plot data of one comparison (number `i` of the analysis) in a table.
fn plot_input(
    key: &TableKey,
    points: &[Point],
    analysis: &Analysis,
    i: usize,
    c: &Comparison,
) -> PlotInput {
    let analyses = analysis.results_of(i, key);
    let side = |variant: usize, is_baseline: bool| -> Vec<SidePoint> {
        points
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let summary =
                    analyses
                        .and_then(|a| a.get(j))
                        .map(|a| if is_baseline { &a.a } else { &a.b });
                SidePoint {
                    param: p.param as f64,
                    mean: p.mean(variant),
                    ci: summary
                        .and_then(|s| s.mean_ci.as_ref())
                        .map(|ci| (ci.interval.lower, ci.interval.upper)),
                    boot_means: p.boot_means(variant),
                }
            })
            .collect()
    };
    let rel = points
        .iter()
        .enumerate()
        .map(|(j, p)| {
            let a = analyses.and_then(|a| a.get(j));
            RelPoint {
                param: p.param as f64,
                rel: a
                    .and_then(|a| a.relative_difference)
                    .unwrap_or(p.mean(c.candidate) / p.mean(c.baseline) - 1.0),
                ci: a
                    .and_then(|a| a.relative_difference_ci.as_ref())
                    .map(|ci| (ci.lower, ci.upper)),
            }
        })
        .collect();
    let [label_a, label_b] = analysis.names(c).map(String::from);
    PlotInput {
        title: format!(
            "{}, {} CPU{}",
            key.workload,
            key.cpus,
            if key.cpus == 1 { "" } else { "s" }
        ),
        param_label: param_label(&key.workload).into(),
        metric_label: key.metric.clone(),
        unit: points.first().map_or(String::new(), |p| p.unit.clone()),
        higher_is_better: points.first().is_some_and(|p| p.higher_is_better),
        label_a,
        label_b,
        a: side(c.baseline, true),
        b: side(c.candidate, false),
        rel,
        margin: analysis.config.margin,
    }
}
