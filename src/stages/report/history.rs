//! The history of runs as a page: `history.html` (one file, the plots
//! inline as SVG, no script, no network) and `history.md` (the same tables,
//! the plots as SVG files beside it, for a CI job's summary). `jobs::history`
//! reads the runs and finds the change points into these records; this
//! module only renders them.

use crate::base::error::Result;
use crate::base::plots::{trend_svg, TrendInput, TrendRun};
use crate::base::stats::Interval;
use crate::guest::images::source::short_commit;
use crate::record::{ConditionChange, GateRecord, PointKey, RunMeta, SkippedRun};
use crate::stages::analysis::param_label;
use crate::stages::report::format::{decimals, escape_html, escape_md, relative, value};
use std::fmt::Write as _;
use std::path::PathBuf;

/// The page's files in the output directory.
pub const MARKDOWN_FILE: &str = "history.md";
pub const HTML_FILE: &str = "history.html";
/// The plots `history.md` shows (the HTML carries them inline).
pub const PLOTS_DIR: &str = "plots";

/// One complete run of the history.
#[derive(Debug, Clone)]
pub struct Run {
    pub dir: PathBuf,
    pub meta: RunMeta,
    pub gate: Option<GateRecord>,
    pub samples: Vec<crate::record::Sample>,
}

impl Run {
    /// The run's directory name, which names it in tables.
    pub fn name(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.dir.display().to_string())
    }

    /// The commit the kernel of `variant` was built from, if it records one.
    pub fn commit(&self, variant: &str) -> Option<&str> {
        self.meta
            .kernels
            .iter()
            .find(|k| k.variant == variant)?
            .origin
            .as_ref()?
            .commit
            .as_deref()
    }
}

/// A point's value in one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    pub mean: f64,
    /// 95% t interval of the mean on boot means.
    pub interval: Option<(f64, f64)>,
    /// The baseline variant's 95% interval (or its mean alone) in the same run.
    pub band: Option<(f64, f64)>,
    /// The night's gate called this point a regression.
    pub regressed: bool,
}

/// A change point of one point's history.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The last run before the change and the first after it (indices into
    /// the suite's runs).
    pub before: usize,
    pub after: usize,
    /// Mean after / mean before − 1, and its 95% interval.
    pub step: f64,
    pub interval: Option<Interval>,
    pub p_value: f64,
    /// The command that finds the commit, when both runs' kernels are
    /// commits of one tree.
    pub bisect: Option<String>,
}

/// One point's history within one suite.
#[derive(Debug, Clone)]
pub struct PointHistory {
    pub key: PointKey,
    pub unit: String,
    pub higher_is_better: bool,
    /// One entry per run of the suite; `None` where the run lacks the point.
    pub values: Vec<Option<Value>>,
    pub changes: Vec<Change>,
    /// Runs (after the first) where the point's values begin a new series.
    pub series_starts: Vec<(usize, String)>,
}

/// The runs of one suite and its points' histories.
#[derive(Debug, Clone)]
pub struct SuiteHistory {
    pub suite: String,
    /// The variant whose values are tracked.
    pub variant: String,
    pub baseline_variant: String,
    pub runs: Vec<Run>,
    /// Runs (after the first) that begin a new series, and why (what differs).
    pub series_starts: Vec<(usize, Vec<ConditionChange>)>,
    pub points: Vec<PointHistory>,
}

/// One point's rendered pieces, shared by both formats.
struct PointView {
    anchor: String,
    title: String,
    latest: String,
    since: String,
    /// Whether the last change point made the point worse (by its metric's direction).
    worse: Option<bool>,
    sparkline: Vec<Option<f64>>,
    svg: String,
    /// Rows of the change-point table: cells as plain text, and the bisect command.
    changes: Vec<([String; 4], Option<String>)>,
    gaps: usize,
}

/// The page's files, rendered: `history.md`, `history.html`, and each
/// point's plot (by its anchor) that `history.md` shows from `plots/`.
pub struct Page {
    pub markdown: String,
    pub html: String,
    pub plots: Vec<(String, String)>,
}

/// The page of `histories`, with the directories that were `skipped`.
pub fn render(histories: &[SuiteHistory], skipped: &[SkippedRun]) -> Result<Page> {
    let mut md = String::from("# markbench history\n\n");
    let mut html = String::new();
    let mut plots = Vec::new();
    for suite in histories {
        let views: Vec<PointView> = suite
            .points
            .iter()
            .map(|p| view(suite, p))
            .collect::<Result<_>>()?;
        for v in &views {
            plots.push((v.anchor.clone(), v.svg.clone()));
        }
        markdown(suite, &views, &mut md);
        html_section(suite, &views, &mut html);
    }
    if !skipped.is_empty() {
        md.push_str("## Skipped directories\n\nThese look like runs but cannot be read; the history leaves them out.\n\n| directory | why |\n|---|---|\n");
        html.push_str("<h2>Skipped directories</h2>\n<p class=\"note\">These look like runs but cannot be read; the history leaves them out.</p>\n<table>\n<tr><th>directory</th><th>why</th></tr>\n");
        for s in skipped {
            let dir = s.dir.display().to_string();
            let _ = writeln!(
                md,
                "| {} | {} |",
                escape_md(&dir),
                escape_md(&s.why.replace('\n', " "))
            );
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td></tr>",
                escape_html(&dir),
                escape_html(&s.why)
            );
        }
        md.push('\n');
        html.push_str("</table>\n");
    }
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>markbench history</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>markbench history</h1>\n{html}</body>\n</html>\n"
    );
    Ok(Page {
        markdown: md,
        html: page,
        plots,
    })
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1040px;margin:1em auto;\
padding:0 1em;color:#222}table{border-collapse:collapse;margin:.5em 0 1em}\
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:middle}\
td.num{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}\
.worse{color:#c03}.better{color:#067}figure{margin:0}figure svg{width:100%;height:auto}\
code{font-size:.9em}pre{background:#f6f6f6;padding:.5em;white-space:pre-wrap;overflow-wrap:anywhere}\
.note{color:#555}";

fn point_title(p: &PointHistory) -> String {
    format!(
        "{} {}, {} CPU{}, {} {}",
        p.key.workload,
        p.key.metric,
        p.key.cpus,
        if p.key.cpus == 1 { "" } else { "s" },
        param_label(&p.key.workload),
        p.key.param
    )
}

fn anchor(suite: &str, p: &PointHistory) -> String {
    format!(
        "{suite}-{}-{}-{}cpu-{}",
        p.key.workload, p.key.metric, p.key.cpus, p.key.param
    )
    .chars()
    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
    .collect()
}

/// The day a run started ("11-03"), with the time ("11-03 10:15") when
/// another run of the suite started the same day; its directory name when
/// it records no time.
fn run_label(run: &Run, runs: &[Run]) -> String {
    let day = |r: &Run| {
        chrono::DateTime::parse_from_rfc3339(&r.meta.started_at)
            .ok()
            .map(|t| t.format("%m-%d").to_string())
    };
    let Ok(started) = chrono::DateTime::parse_from_rfc3339(&run.meta.started_at) else {
        return run.name();
    };
    let same_day = runs.iter().filter(|r| day(r) == day(run)).count() > 1;
    let format = if same_day { "%m-%d %H:%M" } else { "%m-%d" };
    started.format(format).to_string()
}

fn with_interval(mean: f64, interval: Option<(f64, f64)>, unit: &str) -> String {
    let d = decimals(unit, mean);
    match interval {
        Some((low, high)) => format!(
            "{} ± {} {unit}",
            value(mean, d),
            value((high - low) / 2.0, d)
        ),
        None => format!("{} {unit}", value(mean, d)),
    }
}

fn step_text(c: &Change) -> String {
    match c.interval {
        Some(i) => format!(
            "{}% [{}, {}]",
            relative(c.step),
            relative(i.lower),
            relative(i.upper)
        ),
        None => format!("{}%", relative(c.step)),
    }
}

/// A run as the tables name it: its number, date and commit.
fn run_cell(suite: &SuiteHistory, i: usize) -> String {
    let run = &suite.runs[i];
    let commit = run
        .commit(&suite.variant)
        .map(|c| format!(", {}", short_commit(c)))
        .unwrap_or_default();
    format!("{}: {}{commit}", i + 1, run.name())
}

fn view(suite: &SuiteHistory, p: &PointHistory) -> Result<PointView> {
    let latest = p
        .values
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, v)| v.map(|v| (i, v)));
    let latest_text = latest.map_or("–".into(), |(i, v)| {
        let gap = if i + 1 < p.values.len() {
            format!(" (run {})", i + 1)
        } else {
            String::new()
        };
        format!("{}{gap}", with_interval(v.mean, v.interval, &p.unit))
    });
    let since = match p.changes.last() {
        Some(c) => format!(
            "{} between runs {} and {}",
            step_text(c),
            c.before + 1,
            c.after + 1
        ),
        None => format!(
            "no change point in {} runs",
            p.values.iter().flatten().count()
        ),
    };
    let input = trend_input(suite, p);
    let changes = p
        .changes
        .iter()
        .map(|c| {
            (
                [
                    run_cell(suite, c.before),
                    run_cell(suite, c.after),
                    step_text(c),
                    format!("{:.3}", c.p_value),
                ],
                c.bisect.clone(),
            )
        })
        .collect();
    Ok(PointView {
        anchor: anchor(&suite.suite, p),
        title: point_title(p),
        latest: latest_text,
        since,
        worse: p
            .changes
            .last()
            .map(|c| (c.step > 0.0) != p.higher_is_better),
        sparkline: p.values.iter().map(|v| v.map(|v| v.mean)).collect(),
        svg: trend_svg(&input)?,
        changes,
        gaps: p.values.iter().filter(|v| v.is_none()).count(),
    })
}

/// The means of the stretches between series starts and change points:
/// each stretch's first and last run with a value, and its mean.
fn segment_means(p: &PointHistory) -> Vec<(usize, usize, f64)> {
    let mut cuts: Vec<usize> = p
        .series_starts
        .iter()
        .map(|(i, _)| *i)
        .chain(p.changes.iter().map(|c| c.after))
        .collect();
    cuts.push(0);
    cuts.push(p.values.len());
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .filter_map(|w| {
            let present: Vec<(usize, f64)> = (w[0]..w[1])
                .filter_map(|i| p.values[i].map(|v| (i, v.mean)))
                .collect();
            let (first, last) = (present.first()?.0, present.last()?.0);
            let mean = present.iter().map(|(_, v)| v).sum::<f64>() / present.len() as f64;
            Some((first, last, mean))
        })
        .collect()
}

/// What the trend plot of a point shows.
fn trend_input(suite: &SuiteHistory, p: &PointHistory) -> TrendInput {
    TrendInput {
        title: point_title(p),
        metric_label: p.key.metric.clone(),
        unit: p.unit.clone(),
        higher_is_better: p.higher_is_better,
        value_label: format!("{}: mean of boots", suite.variant),
        band_label: format!("{}: 95% interval in the same run", suite.baseline_variant),
        runs: p
            .values
            .iter()
            .zip(&suite.runs)
            .map(|(v, run)| TrendRun {
                label: run_label(run, &suite.runs),
                value: v.map(|v| (v.mean, v.interval)),
                band: v.and_then(|v| v.band),
                regressed: v.is_some_and(|v| v.regressed),
            })
            .collect(),
        series_starts: p.series_starts.clone(),
        changes: p
            .changes
            .iter()
            .map(|c| (c.after, format!("{}%", relative(c.step))))
            .collect(),
        segment_means: segment_means(p),
    }
}

/// The values as a line of block characters, a gap as a space: a trend a
/// markdown table can hold.
fn text_sparkline(values: &[Option<f64>]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let (low, high) = values
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    values
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(_) if high <= low => BARS[3],
            Some(v) => BARS[(((v - low) / (high - low)) * 7.0).round() as usize],
        })
        .collect()
}

/// The values as a small inline SVG polyline (a gap breaks the line).
fn svg_sparkline(values: &[Option<f64>]) -> String {
    let (w, h) = (120.0, 24.0);
    let (low, high) = values
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    let step = w / (values.len().max(2) - 1) as f64;
    let y = |v: f64| {
        if high > low {
            h - 2.0 - (v - low) / (high - low) * (h - 4.0)
        } else {
            h / 2.0
        }
    };
    let mut lines = vec![String::new()];
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(v) => {
                let _ = write!(
                    lines.last_mut().expect("never empty"),
                    "{:.1},{:.1} ",
                    i as f64 * step,
                    y(*v)
                );
            }
            None => lines.push(String::new()),
        }
    }
    let mut svg = format!(
        "<svg class=\"spark\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\">"
    );
    for line in lines.iter().filter(|l| !l.is_empty()) {
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"#d55e00\" stroke-width=\"1.5\" points=\"{}\"/>",
            line.trim_end()
        );
    }
    svg.push_str("</svg>");
    svg
}

fn runs_rows(suite: &SuiteHistory) -> Vec<[String; 5]> {
    suite
        .runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let verdict = match &run.gate {
                Some(g) if g.regression => format!("regression ({} points)", g.regressed.len()),
                Some(_) => "no regression".into(),
                None => "not gated".into(),
            };
            let new_series = suite
                .series_starts
                .iter()
                .find(|(s, _)| *s == i)
                .map(|(_, why)| {
                    let why: Vec<String> = why
                        .iter()
                        .map(crate::record::ConditionChange::warning)
                        .collect();
                    format!("new series: {}", why.join("; "))
                })
                .unwrap_or_default();
            [
                format!("{}", i + 1),
                when(run),
                run.name(),
                run.commit(&suite.variant)
                    .map(|c| short_commit(c).to_string())
                    .unwrap_or_else(|| "–".into()),
                format!(
                    "{verdict}{}",
                    if new_series.is_empty() {
                        String::new()
                    } else {
                        format!("; {new_series}")
                    }
                ),
            ]
        })
        .collect()
}

/// A run's start as "2026-11-03 02:00 UTC", or as recorded when it does not parse.
fn when(run: &Run) -> String {
    chrono::DateTime::parse_from_rfc3339(&run.meta.started_at)
        .map(|t| t.to_utc().format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|_| run.meta.started_at.clone())
}

fn intro(suite: &SuiteHistory) -> String {
    format!(
        "{} runs of suite {}, {} to {}. Each value is {}'s mean over boots with its 95% \
         interval; the band is {}'s 95% interval in the same run. Change points: E-Divisive \
         means with a permutation test, within each series.",
        suite.runs.len(),
        suite.suite,
        when(&suite.runs[0]),
        when(&suite.runs[suite.runs.len() - 1]),
        suite.variant,
        suite.baseline_variant
    )
}

fn markdown(suite: &SuiteHistory, views: &[PointView], md: &mut String) {
    let _ = writeln!(
        md,
        "## Suite {}\n\n{}\n",
        escape_md(&suite.suite),
        escape_md(&intro(suite))
    );
    md.push_str("| point | latest value | change since the last change point | trend |\n|---|---:|---|---|\n");
    for v in views {
        let _ = writeln!(
            md,
            "| [{}](#{}) | {} | {} | `{}` |",
            escape_md(&v.title),
            v.anchor,
            escape_md(&v.latest),
            escape_md(&v.since),
            text_sparkline(&v.sparkline)
        );
    }
    md.push_str("\n<details><summary>Runs</summary>\n\n| run | started | directory | commit | nightly gate |\n|---|---|---|---|---|\n");
    for row in runs_rows(suite) {
        let cells: Vec<String> = row.iter().map(|c| escape_md(c)).collect();
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    md.push_str("\n</details>\n\n");
    for v in views {
        let _ = writeln!(
            md,
            "### <a id=\"{}\"></a>{}\n\n![{}]({PLOTS_DIR}/{}.svg)\n",
            v.anchor,
            escape_md(&v.title),
            escape_md(&v.title),
            v.anchor
        );
        if v.gaps > 0 {
            let _ = writeln!(md, "Missing in {} run(s): a gap, not a zero.\n", v.gaps);
        }
        if v.changes.is_empty() {
            md.push_str("No change point.\n\n");
            continue;
        }
        md.push_str("| last run before | first run after | step [95% interval] | p |\n|---|---|---:|---:|\n");
        for (cells, _) in &v.changes {
            let cells: Vec<String> = cells.iter().map(|c| escape_md(c)).collect();
            let _ = writeln!(md, "| {} |", cells.join(" | "));
        }
        md.push('\n');
        for (_, bisect) in &v.changes {
            if let Some(command) = bisect {
                let _ = writeln!(md, "```sh\n{command}\n```\n");
            }
        }
    }
}

fn html_section(suite: &SuiteHistory, views: &[PointView], html: &mut String) {
    let _ = writeln!(
        html,
        "<h2>Suite {}</h2>\n<p class=\"note\">{}</p>",
        escape_html(&suite.suite),
        escape_html(&intro(suite))
    );
    html.push_str("<table class=\"summary\">\n<tr><th>point</th><th>latest value</th><th>change since the last change point</th><th>trend</th></tr>\n");
    for v in views {
        let class = match v.worse {
            Some(true) => " class=\"worse\"",
            Some(false) => " class=\"better\"",
            None => "",
        };
        let _ = writeln!(
            html,
            "<tr><td><a href=\"#{}\">{}</a></td><td class=\"num\">{}</td><td{class}>{}</td><td>{}</td></tr>",
            v.anchor,
            escape_html(&v.title),
            escape_html(&v.latest),
            escape_html(&v.since),
            svg_sparkline(&v.sparkline)
        );
    }
    html.push_str("</table>\n<details><summary>Runs</summary>\n<table>\n<tr><th>run</th><th>started</th><th>directory</th><th>commit</th><th>nightly gate</th></tr>\n");
    for row in runs_rows(suite) {
        html.push_str("<tr>");
        for cell in row {
            let _ = write!(html, "<td>{}</td>", escape_html(&cell));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n</details>\n");
    for v in views {
        let _ = writeln!(
            html,
            "<section id=\"{}\">\n<h3>{}</h3>\n<figure class=\"trend\">{}</figure>",
            v.anchor,
            escape_html(&v.title),
            v.svg
        );
        if v.gaps > 0 {
            let _ = writeln!(
                html,
                "<p class=\"note\">Missing in {} run(s): a gap, not a zero.</p>",
                v.gaps
            );
        }
        if v.changes.is_empty() {
            html.push_str("<p>No change point.</p>\n</section>\n");
            continue;
        }
        html.push_str("<table>\n<tr><th>last run before</th><th>first run after</th><th>step [95% interval]</th><th>p</th></tr>\n");
        for (cells, _) in &v.changes {
            html.push_str("<tr>");
            for (k, cell) in cells.iter().enumerate() {
                let class = if k >= 2 { " class=\"num\"" } else { "" };
                let _ = write!(html, "<td{class}>{}</td>", escape_html(cell));
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</table>\n");
        for (_, bisect) in &v.changes {
            if let Some(command) = bisect {
                let _ = writeln!(html, "<pre><code>{}</code></pre>", escape_html(command));
            }
        }
        html.push_str("</section>\n");
    }
}

/// A suite's history in one line for the terminal.
pub fn suite_note(h: &SuiteHistory) -> String {
    let changes: usize = h.points.iter().map(|p| p.changes.len()).sum();
    format!(
        "{}: {} runs, {} points, {changes} change point(s)",
        h.suite,
        h.runs.len(),
        h.points.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparkline_shows_a_gap_as_a_space_and_a_flat_line_level() {
        assert_eq!(text_sparkline(&[Some(1.0), None, Some(2.0)]), "▁ █");
        assert_eq!(text_sparkline(&[Some(5.0), Some(5.0)]), "▄▄");
        let svg = svg_sparkline(&[Some(1.0), Some(2.0), None, Some(1.5)]);
        assert_eq!(svg.matches("<polyline").count(), 2);
    }
}
