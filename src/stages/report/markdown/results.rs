//! The Results section: one table per workload, metric and CPU count.

use super::super::format::{decimals, escape_md, relative, signed, value};
use super::RunReport;
use crate::base::stats::{Correction, PointAnalysis, Verdict};
use crate::stages::analysis::{param_label, Analysis, Comparison, Point, TableKey};
use std::fmt::Write as _;

/// The decimals every value of `points` is shown with: enough for the
/// largest mean of any variant.
pub(crate) fn decimals_of(points: &[Point]) -> usize {
    let unit = points.first().map_or("", |p| p.unit.as_str());
    let magnitude = points
        .iter()
        .flat_map(|p| (0..p.sides.len()).map(|i| p.mean(i).abs()))
        .filter(|m| m.is_finite())
        .fold(0.0, f64::max);
    decimals(unit, magnitude)
}

/// A table's heading: `workload: metric [unit], direction, N CPU(s)`.
pub(super) fn heading(key: &TableKey, point: &Point) -> String {
    format!(
        "{}: {} [{}], {}, {} CPU{}",
        escape_md(&key.workload),
        escape_md(&key.metric),
        escape_md(&point.unit),
        direction(point.higher_is_better),
        key.cpus,
        if key.cpus == 1 { "" } else { "s" }
    )
}

fn direction(higher_is_better: bool) -> &'static str {
    if higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    }
}

/// A p-value with two significant digits, small ones in scientific notation.
fn p_value(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

pub(super) fn interval_cell(a: &PointAnalysis) -> String {
    a.relative_difference_ci
        .as_ref()
        .map_or("–".to_string(), |ci| {
            format!("{} … {}", relative(ci.lower), relative(ci.upper))
        })
}

pub(super) fn verdict_cell(a: &PointAnalysis) -> String {
    if a.verdict.is_significant() {
        format!("**{}**", a.verdict.as_str())
    } else {
        a.verdict.as_str().to_string()
    }
}

/// What a verdict cell says of a verdict the second weights change.
const WEIGHT_SENSITIVE: &str = "weight-sensitive";

/// [`verdict_cell`], marked where the verdict is `second` under the
/// cycle model's second weights.
fn marked_verdict_cell(a: &PointAnalysis, second: Option<Verdict>) -> String {
    match second {
        Some(_) => format!("{} ({WEIGHT_SENSITIVE})", verdict_cell(a)),
        None => verdict_cell(a),
    }
}

/// The verdict under the second weights at a comparison (its index) and a
/// point (its parameter), where it differs from the run's.
pub type SecondVerdict<'a> = &'a dyn Fn(usize, u64) -> Option<Verdict>;

/// One table of results.
///
/// With one comparison, the seeds' layout: param | without | with | diff |
/// diff %, then, when `analyses` is given (one list per comparison, one
/// analysis per point), the 95% interval of the relative difference, the
/// corrected p-value and the verdict; then n and sd per side.
///
/// With several, the baseline's value, then per candidate a column group
/// (value, diff %, 95% interval, verdict, as mmtests' compare-kernels sets
/// kernels side by side), then n per variant. `second` marks the verdicts
/// the cycle model's second weights change.
pub fn render_table(
    key: &TableKey,
    points: &[Point],
    names: &[String],
    comparisons: &[Comparison],
    analyses: Option<&[&[PointAnalysis]]>,
    correction: Correction,
    second: SecondVerdict,
) -> String {
    match comparisons {
        [c] => pair_table(
            key,
            points,
            names,
            c,
            analyses.map(|a| a[0]),
            correction,
            &|param| second(0, param),
        ),
        _ => comparison_table(
            key,
            points,
            names,
            comparisons,
            analyses,
            decimals_of(points),
            second,
        ),
    }
}

fn pair_table(
    key: &TableKey,
    points: &[Point],
    names: &[String],
    c: &Comparison,
    analyses: Option<&[PointAnalysis]>,
    correction: Correction,
    second: &dyn Fn(u64) -> Option<Verdict>,
) -> String {
    let d = decimals_of(points);
    let unit = points.first().map_or("", |p| p.unit.as_str());
    let u = escape_md(unit);
    let (base, cand) = (c.baseline, c.candidate);
    let (a, b) = (escape_md(&names[base]), escape_md(&names[cand]));
    let mut t = String::new();
    let stats_header = if analyses.is_some() {
        format!(
            " 95% CI of diff [%] | p ({}) | verdict |",
            correction.as_str()
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        t,
        "| {} | without: {a} [{u}] | with: {b} [{u}] | diff [{u}] | diff [%] |{stats_header} n without | n with | sd without [{u}] | sd with [{u}] |",
        param_label(&key.workload)
    );
    let _ = writeln!(
        t,
        "|---:|---:|---:|---:|---:|{}---:|---:|---:|---:|",
        if analyses.is_some() {
            "---|---:|---|"
        } else {
            ""
        }
    );
    for (i, p) in points.iter().enumerate() {
        let (ma, mb) = (p.mean(base), p.mean(cand));
        let diff = mb - ma;
        let stats_cells = match analyses.and_then(|a| a.get(i)) {
            Some(a) => format!(
                " {} | {} | {} |",
                interval_cell(a),
                match (a.adjusted_p_value, a.welch) {
                    // Both sides gave one value every run: the means differ
                    // exactly, and no spread is left to test them against.
                    (Some(_), Some(w)) if w.t.is_infinite() => "0 (no spread)".to_string(),
                    (p, _) => p.map_or("–".to_string(), p_value),
                },
                marked_verdict_cell(a, second(p.param))
            ),
            None => String::new(),
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} |{stats_cells} {} | {} | {} | {} |",
            p.param,
            value(ma, d),
            value(mb, d),
            signed(diff, d),
            relative(diff / ma),
            p.n(base),
            p.n(cand),
            value(p.sd(base), d),
            value(p.sd(cand), d),
        );
    }
    t
}

fn comparison_table(
    key: &TableKey,
    points: &[Point],
    names: &[String],
    comparisons: &[Comparison],
    analyses: Option<&[&[PointAnalysis]]>,
    d: usize,
    second: SecondVerdict,
) -> String {
    let unit = points.first().map_or("", |p| p.unit.as_str());
    let u = escape_md(unit);
    let base = comparisons.first().map_or(0, |c| c.baseline);
    let mut header = format!(
        "| {} | {} [{u}] |",
        param_label(&key.workload),
        escape_md(&names[base])
    );
    let mut rule = String::from("|---:|---:|");
    for c in comparisons {
        let _ = write!(
            header,
            " {} [{u}] | diff [%] | 95% CI of diff [%] | verdict |",
            escape_md(&names[c.candidate])
        );
        rule.push_str("---:|---:|---|---|");
    }
    for name in names {
        let _ = write!(header, " n {} |", escape_md(name));
        rule.push_str("---:|");
    }
    let mut t = format!("{header}\n{rule}\n");
    for (i, p) in points.iter().enumerate() {
        let ma = p.mean(base);
        let _ = write!(t, "| {} | {} |", p.param, value(ma, d));
        for (j, c) in comparisons.iter().enumerate() {
            let mb = p.mean(c.candidate);
            let a = analyses.and_then(|a| a.get(j)).and_then(|a| a.get(i));
            let _ = write!(
                t,
                " {} | {} | {} | {} |",
                value(mb, d),
                relative((mb - ma) / ma),
                a.map_or("–".into(), interval_cell),
                a.map_or("–".into(), |a| marked_verdict_cell(a, second(j, p.param)))
            );
        }
        for side in 0..names.len() {
            let _ = write!(t, " {} |", p.n(side));
        }
        t.push('\n');
    }
    t
}

/// The per-comparison analyses of a table, when every comparison has them.
fn table_analyses<'a>(analysis: &'a Analysis, key: &TableKey) -> Option<Vec<&'a [PointAnalysis]>> {
    (0..analysis.comparisons.len())
        .map(|i| analysis.results_of(i, key))
        .collect()
}

/// The section: every table, with its plots when they were drawn.
pub(super) fn section(run: &RunReport) -> String {
    let analysis = run.analysis;
    let mut r = String::new();
    let _ = writeln!(r, "## Results\n");
    if analysis.tables.is_empty() {
        let _ = writeln!(r, "No samples were measured.\n");
    }
    let mut compile_explained = false;
    for (key, points) in &analysis.tables {
        let _ = writeln!(r, "### {}\n", heading(key, &points[0]));
        let is_compile = crate::guest::workloads::kind_of_label(&key.workload) == "kernel-compile";
        if is_compile && !compile_explained && run.meta.counts_instructions() {
            r.push_str(&compile_under_icount(run.meta));
            compile_explained = true;
        }
        let analyses = table_analyses(analysis, key);
        let _ = writeln!(
            r,
            "{}",
            render_table(
                key,
                points,
                &analysis.variants,
                &analysis.comparisons,
                analyses.as_deref(),
                analysis.config.correction,
                &|comparison, param| run.weights.and_then(|w| w.second(comparison, key, param))
            )
        );
        if let Some(weights) = run.weights {
            r.push_str(&weight_sensitive_lines(analysis, weights, key));
        }
        if run.with_plots {
            r.push_str(&plot_links(analysis, key));
        }
    }
    r
}

/// A line per verdict of the table that the cycle model's second weights
/// change: which verdict it becomes, and what that means.
fn weight_sensitive_lines(
    analysis: &Analysis,
    weights: &crate::stages::analysis::weights::WeightCheck,
    key: &TableKey,
) -> String {
    let mut r = String::new();
    for w in weights
        .sensitive
        .iter()
        .filter(|w| w.key == *key && w.result < analysis.comparisons.len())
    {
        let which = if analysis.is_pair() {
            String::new()
        } else {
            let [base, cand] = analysis
                .names(&analysis.comparisons[w.result])
                .map(escape_md);
            format!(", {cand} against {base}")
        };
        let _ = writeln!(
            r,
            "*{WEIGHT_SENSITIVE}* ({} {}{which}): *{}* with the model's weights, *{}* with the \
             second ({} cycles). Which costs the misses are given decides this verdict: read \
             the counts (instructions, the misses of each level, the mispredicts) rather than \
             their sum.\n",
            param_label(&key.workload),
            w.param,
            w.verdict.as_str(),
            w.second.as_str(),
            weights.weights_text
        );
    }
    r
}

/// What a compile's `real`, `user` and `sys` are when the guest's clock
/// runs on its instruction count: not `time`'s figures on a real CPU.
fn compile_under_icount(meta: &crate::record::RunMeta) -> String {
    let per_instruction = match meta.icount_shift() {
        Some(shift) => format!(
            " (`-icount shift={shift}`: {} ns an instruction)",
            1u64 << shift
        ),
        None => String::new(),
    };
    format!(
        "Under icount{per_instruction} the guest's clock advances with the instructions it \
         executes, so these are counts of work, not a CPU's seconds: `real` is the compile's \
         elapsed guest time, the instructions of make, gcc, as and the kernel serving them \
         (and idle time, which skips to the next timer); `user` and `sys` are the guest \
         kernel's tick accounting of make and all its children (the agent's cutime and \
         cstime, 10 ms ticks), whose ticks run on the same instruction count: gcc's and \
         make's own instructions, and the kernel's on their behalf.\n\n"
    )
}

/// The table's plots: one pair per comparison.
fn plot_links(analysis: &Analysis, key: &TableKey) -> String {
    let mut r = String::new();
    for c in &analysis.comparisons {
        let stem = super::super::plots::plot_stem(key, analysis, c);
        let what = if analysis.is_pair() {
            String::new()
        } else {
            let [base, cand] = analysis.names(c).map(escape_md);
            format!("{cand} against {base}: ")
        };
        let _ = writeln!(
            r,
            "{what}![{0} against {1}](plots/{2}-metric.png) ![relative difference](plots/{2}-diff.png)\n\n\
             Plots as SVG: [{0}](plots/{2}-metric.svg), [relative difference](plots/{2}-diff.svg).\n",
            escape_md(&key.metric),
            param_label(&key.workload),
            stem
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn reference_points() -> BTreeMap<u32, Vec<(Point, String, String)>> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hackbench-ia64-2008.csv");
        let mut reader = csv::Reader::from_path(path).unwrap();
        let mut out: BTreeMap<u32, Vec<(Point, String, String)>> = BTreeMap::new();
        for row in reader.records() {
            let row = row.unwrap();
            let cpus: u32 = row[0].parse().unwrap();
            let point = Point {
                param: row[1].parse().unwrap(),
                unit: "s".into(),
                higher_is_better: false,
                sides: vec![
                    vec![vec![row[2].parse().unwrap()]],
                    vec![vec![row[3].parse().unwrap()]],
                ],
            };
            out.entry(cpus)
                .or_default()
                .push((point, row[4].to_string(), row[5].to_string()));
        }
        out
    }

    /// The seed's diffs were computed from unrounded means; from the rounded
    /// means it printed, a diff can differ by one unit in the last digit.
    #[test]
    fn rendering_aoki_2008_reproduces_its_diff_columns() {
        let names = ["without".to_string(), "with".to_string()];
        let pair = [Comparison {
            baseline: 0,
            candidate: 1,
        }];
        let (mut rows, mut exact) = (0, 0);
        for (cpus, entries) in reference_points() {
            let points: Vec<Point> = entries.iter().map(|e| e.0.clone()).collect();
            let key = TableKey {
                workload: "hackbench".into(),
                metric: "time".into(),
                cpus,
            };
            let table = render_table(
                &key,
                &points,
                &names,
                &pair,
                None,
                Correction::Holm,
                &|_, _| None,
            );
            for ((point, seed_diff, seed_pct), line) in entries.iter().zip(table.lines().skip(2)) {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                assert_eq!(cells[1], point.param.to_string());
                let (diff, pct) = (cells[4], cells[5]);
                let near = |a: &str, b: &str, tol: f64| {
                    (a.parse::<f64>().unwrap() - b.parse::<f64>().unwrap()).abs() <= tol
                };
                assert!(
                    near(diff, seed_diff, 0.0011),
                    "{cpus} CPUs {line}: {diff} vs {seed_diff}"
                );
                assert!(
                    near(pct, seed_pct, 0.021),
                    "{cpus} CPUs {line}: {pct} vs {seed_pct}"
                );
                assert_eq!(diff.starts_with('+'), seed_diff.starts_with('+'), "{line}");
                rows += 1;
                if diff == seed_diff && pct == seed_pct {
                    exact += 1;
                }
            }
        }
        assert_eq!(rows, 48);
        // 35 rows match to the character; the other 13 are off by the seed's rounding.
        assert!(exact >= 35, "only {exact} of 48 rows match exactly");
    }

    #[test]
    fn several_candidates_get_a_column_group_each() {
        let names = ["off", "on", "generic"].map(String::from);
        let comparisons =
            crate::stages::analysis::Comparison::all(3, crate::stages::analysis::Against::Baseline);
        let points = [Point {
            param: 4,
            unit: "s".into(),
            higher_is_better: false,
            sides: vec![vec![vec![2.0]], vec![vec![2.2]], vec![vec![1.9], vec![1.9]]],
        }];
        let key = TableKey {
            workload: "hackbench".into(),
            metric: "time".into(),
            cpus: 1,
        };
        let table = render_table(
            &key,
            &points,
            &names,
            &comparisons,
            None,
            Correction::Holm,
            &|_, _| None,
        );
        let lines: Vec<&str> = table.lines().collect();
        let cells =
            |line: &str| -> Vec<String> { line.split('|').map(|c| c.trim().to_string()).collect() };
        let header = cells(lines[0]);
        assert_eq!(header[2], "off [s]");
        assert_eq!(
            &header[3..7],
            ["on [s]", "diff [%]", "95% CI of diff [%]", "verdict"]
        );
        assert_eq!(header[7], "generic [s]");
        assert_eq!(&header[11..14], ["n off", "n on", "n generic"]);
        assert_eq!(lines[1].matches('|').count(), header.len() - 1);
        let row = cells(lines[2]);
        assert_eq!(&row[1..5], ["4", "2.000", "2.200", "+10"]);
        assert_eq!(&row[7..9], ["1.900", "-5"]);
        assert_eq!(&row[11..14], ["1", "1", "2"]);
    }
}
