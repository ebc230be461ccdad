//! `report.txt`: the report as a mail carries it. Plain ASCII within 72
//! columns: the verdict, what was compared, per point the table the
//! Desnoyers 2006 and Aoki 2008 mails posted (without | with | diff |
//! diff %, here with the 95% interval and the verdict), the kernels' size
//! and the method in two sentences.

use super::format::{relative, signed, value};
use super::plain::{self, Align};
use super::{Export, RunReport, REPORT_TEXT_FILE};
use crate::base::stats::{Interval, PointAnalysis, Verdict};
use crate::record::{KernelMeta, Recorded, RunMeta, SourceRecord};
use crate::stages::analysis::{param_label, Analysis, Comparison, Point, TableKey};
use std::fmt::Write as _;

/// How many lines of the configuration or source difference the text
/// quotes; the rest is in the run directory's file.
const QUOTED_LINES: usize = 12;

pub(super) struct Text;

impl Export for Text {
    fn file(&self) -> &'static str {
        REPORT_TEXT_FILE
    }

    fn render(&self, run: &RunReport) -> crate::base::error::Result<String> {
        Ok(render(run))
    }
}

/// The whole text.
pub(super) fn render(run: &RunReport) -> String {
    let mut r = header(run);
    r.push('\n');
    r.push_str(&what_was_compared(run));
    r.push('\n');
    r.push_str(&results(run.analysis));
    r.push('\n');
    let beside = super::reference::text(run);
    if !beside.is_empty() {
        r.push_str(&beside);
        r.push('\n');
    }
    r.push_str(&size_line(run));
    r.push('\n');
    r.push_str(&method(run));
    r
}

/// The two sides of a comparison as the tables' columns and the prose call
/// them: "without" and "with" for a pair, the variants' names beyond.
fn sides(analysis: &Analysis) -> Vec<String> {
    if analysis.is_pair() {
        vec!["without".into(), "with".into()]
    } else {
        (0..analysis.variants.len())
            .map(|i| match i {
                0 => "baseline".to_string(),
                i => format!("candidate {i}"),
            })
            .collect()
    }
}

fn header(run: &RunReport) -> String {
    let (meta, analysis) = (run.meta, run.analysis);
    let mut r = plain::heading(
        &format!(
            "markbench: {} vs {} ({} suite)",
            analysis.variants[0],
            analysis.variants[1..].join(", "),
            meta.suite_title()
        ),
        '=',
    );
    r.push('\n');
    if let Some(arch) = super::words::architecture(meta) {
        r.push_str(&plain::wrap(&format!("Architecture: {arch}"), ""));
        r.push('\n');
    }
    if !meta.complete {
        r.push_str(&plain::wrap(
            "Partial run: the run did not finish; the tables hold what was measured \
             before it stopped.",
            "",
        ));
        r.push('\n');
    }
    for w in &meta.warnings {
        r.push_str(&plain::wrap_hanging(&format!("Warning: {w}"), "", "  "));
        r.push('\n');
    }
    if !meta.description.is_empty() {
        r.push_str(&plain::wrap(&meta.description, ""));
        r.push('\n');
    }
    let accel = meta.accel.as_str().to_uppercase();
    if analysis.is_pair() {
        r.push_str(&plain::wrap(
            &format!(
                "Verdict ({} against {}, measured under {accel}): {}.",
                analysis.variants[1],
                analysis.variants[0],
                super::markdown::verdict_text(analysis, 0)
            ),
            "",
        ));
    } else {
        let _ = writeln!(r, "Verdict (measured under {accel}):");
        for (i, c) in analysis.comparisons.iter().enumerate() {
            let [base, cand] = analysis.names(c);
            r.push_str(&plain::wrap_hanging(
                &format!(
                    "{cand} against {base}: {}.",
                    super::markdown::verdict_text(analysis, i)
                ),
                "- ",
                "  ",
            ));
        }
    }
    r.push('\n');
    r.push_str(&plain::wrap(
        &format!(
            "{} boots ran ({} failed); {} measured samples over {} points in {} tables.",
            meta.boots.len(),
            meta.boots.iter().filter(|b| !b.ok()).count(),
            run.samples.iter().filter(|s| !s.warmup).count(),
            analysis.tables.values().map(Vec::len).sum::<usize>(),
            analysis.tables.len()
        ),
        "",
    ));
    r
}

/// At most [`QUOTED_LINES`] lines of `text`, indented, then how many more
/// there are in `file`.
fn quoted(text: &str, file: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut r = String::new();
    for line in lines.iter().take(QUOTED_LINES) {
        let _ = writeln!(r, "{}", plain::verbatim(line, "    "));
    }
    if lines.len() > QUOTED_LINES {
        let _ = writeln!(
            r,
            "    ({} more lines in {file})",
            lines.len() - QUOTED_LINES
        );
    }
    r
}

fn what_was_compared(run: &RunReport) -> String {
    let (meta, analysis) = (run.meta, run.analysis);
    let mut r = plain::heading("What was compared", '-');
    r.push('\n');
    let sides = sides(analysis);
    let width = sides.iter().map(String::len).max().unwrap_or(0) + 2;
    let same_source = meta.kernels.windows(2).all(|w| w[0].source == w[1].source);
    for (side, k) in sides.iter().zip(&meta.kernels) {
        let label = format!("{side}:");
        let mut what = format!(
            "{} (kernel {}, built from {}",
            k.variant,
            k.kernel,
            config_of(k)
        );
        if !k.cmdline.is_empty() {
            let _ = write!(what, ", command line {}", k.cmdline);
        }
        if !same_source {
            let _ = write!(what, ", source {}", short_source(&k.source));
        }
        what.push(')');
        r.push_str(&plain::wrap_hanging(
            &what,
            &format!("{label:<width$}"),
            &" ".repeat(width),
        ));
    }
    if same_source {
        if let Some(k) = meta.kernels.first().filter(|k| !k.source.is_unrecorded()) {
            r.push_str(&plain::wrap_hanging(
                &short_source(&k.source),
                &format!("{:<width$}", "source:"),
                &" ".repeat(width),
            ));
        }
    }
    r.push_str(&identical_builds(meta, analysis));
    match run.files.diffconfig {
        Some(text) if !text.trim().is_empty() => {
            r.push('\n');
            r.push_str(&plain::wrap(
                "Configuration difference (scripts/diffconfig, baseline -> candidate):",
                "",
            ));
            r.push_str(&quoted(text, super::DIFFCONFIG_FILE));
        }
        Some(_) => {
            r.push('\n');
            r.push_str(&plain::wrap(
                "The kernels' configurations are identical.",
                "",
            ));
        }
        None => {}
    }
    if let Some(text) = run.files.source_diff.filter(|t| !t.trim().is_empty()) {
        r.push('\n');
        r.push_str(&plain::wrap(
            "Source difference (commits and git diff --stat, baseline -> candidate, \
             patches on top):",
            "",
        ));
        r.push_str(&quoted(text, crate::base::run_dir::SOURCE_DIFF_FILE));
    }
    r
}

/// The configuration a kernel was built from: its base and fragments, the
/// base fragment first, as the build applies them.
fn config_of(k: &KernelMeta) -> String {
    let base = k.config_base_words();
    let first = crate::guest::images::fragments::BASE;
    let fragments = k
        .fragments
        .keys()
        .filter(|f| f.as_str() == first)
        .chain(k.fragments.keys().filter(|f| f.as_str() != first));
    std::iter::once(base.as_str())
        .chain(fragments.map(String::as_str))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// A kernel's source with its hashes cut to their first 16 digits: a
/// 64-digit sha256 does not fit a line.
fn short_source(source: &Recorded<SourceRecord>) -> String {
    match source {
        Recorded::Data(source) => source.short(),
        Recorded::Legacy(words) => short_hashes(words),
    }
}

/// `text` with every long hexadecimal hash cut to its first 16 digits, as
/// the markdown report shows them: a run before format 5 recorded its
/// kernels' sources in words.
fn short_hashes(text: &str) -> String {
    static HASH: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\b([0-9a-f]{16})[0-9a-f]{16,}\b").unwrap());
    HASH.replace_all(text, "$1").into_owned()
}

/// A note for each comparison (and each step of a series) whose two
/// variants booted the same bzImage, as the markdown report notes them.
fn identical_builds(meta: &RunMeta, analysis: &Analysis) -> String {
    let mut r = String::new();
    for same in super::identical::identical_builds(meta, analysis) {
        let why = if same.same_cmdline {
            ", with the same command line: whatever differs between them is noise, \
             so that comparison is an A/A test."
        } else {
            ": that comparison measures their command lines alone."
        };
        r.push_str(&plain::wrap(
            &format!(
                "{} booted the same bzImage as {}, byte for byte{why}",
                same.candidate, same.baseline
            ),
            "",
        ));
    }
    r
}

/// The verdict as a table cell: short enough for the 72 columns, with the
/// long ones named in the legend under the tables.
fn verdict_cell(a: Option<&PointAnalysis>) -> &'static str {
    match a.map(|a| a.verdict) {
        Some(Verdict::Regression) => "REGRESSION",
        Some(Verdict::Improvement) => "IMPROVEMENT",
        Some(Verdict::Equivalent) => "equivalent",
        Some(Verdict::NoSignificantDifference) => "n.s.",
        Some(Verdict::InsufficientData) | None => "too few",
    }
}

fn interval_cell(a: Option<&PointAnalysis>) -> String {
    a.and_then(|a| a.relative_difference_ci.as_ref())
        .map_or("-".into(), interval_text)
}

/// A relative interval's bounds in percent with two decimals each, trailing
/// zeros kept, so both ends read alike ("-1.91..-0.90", not "-1.91..-0.9").
fn interval_text(ci: &Interval) -> String {
    format!(
        "{}..{}",
        signed(ci.lower * 100.0, 2),
        signed(ci.upper * 100.0, 2)
    )
}

/// One table: a comparison's points of one workload, metric and CPU count.
fn table(
    key: &TableKey,
    points: &[Point],
    c: &Comparison,
    analyses: Option<&[PointAnalysis]>,
    sides: [&str; 2],
) -> String {
    let d = super::markdown::decimals_of(points);
    let label = param_label(&key.workload);
    let cells: Vec<[String; 7]> = points
        .iter()
        .enumerate()
        .map(|(j, p)| {
            let (ma, mb) = (p.mean(c.baseline), p.mean(c.candidate));
            let a = analyses.and_then(|a| a.get(j));
            [
                p.param.to_string(),
                value(ma, d),
                value(mb, d),
                signed(mb - ma, d),
                relative((mb - ma) / ma),
                interval_cell(a),
                verdict_cell(a).to_string(),
            ]
        })
        .collect();
    let rows: Vec<Vec<String>> = cells.iter().map(|c| c.to_vec()).collect();
    let header = [
        label, sides[0], sides[1], "diff", "diff %", "95% CI %", "verdict",
    ];
    let align = [
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Left,
        Align::Left,
    ];
    if let Some(t) = plain::table("  ", &header, &align, &rows) {
        return t;
    }
    // Too wide for a mail: each point as a paragraph.
    let mut r = String::new();
    for [param, a, b, diff, pct, ci, verdict] in &cells {
        r.push_str(&plain::wrap_hanging(
            &format!(
                "{label} {param}: {} {a}, {} {b}, diff {diff} ({pct}%), 95% CI {ci}%, {verdict}",
                sides[0], sides[1]
            ),
            "  ",
            "      ",
        ));
    }
    r
}

fn results(analysis: &Analysis) -> String {
    let mut r = plain::heading("Results", '-');
    if analysis.tables.is_empty() {
        r.push_str("\nNo samples were measured.\n");
        return r;
    }
    // Each table sets one candidate against the baseline, as the mails did.
    let sides = ["without", "with"];
    for (key, points) in &analysis.tables {
        let first = &points[0];
        r.push('\n');
        r.push_str(&plain::wrap(
            &format!(
                "{}: {} [{}], {}, {} CPU{}",
                key.workload,
                key.metric,
                first.unit,
                if first.higher_is_better {
                    "higher is better"
                } else {
                    "lower is better"
                },
                key.cpus,
                if key.cpus == 1 { "" } else { "s" }
            ),
            "",
        ));
        for (i, c) in analysis.comparisons.iter().enumerate() {
            if !analysis.is_pair() {
                let [base, cand] = analysis.names(c);
                r.push_str(&plain::wrap(&format!("{cand} against {base}:"), "  "));
            }
            r.push('\n');
            r.push_str(&table(key, points, c, analysis.results_of(i, key), sides));
        }
    }
    r.push('\n');
    r.push_str(&plain::wrap(
        "diff % is (with - without) / without; 95% CI % its interval. n.s.: no \
         significant difference; too few: fewer than 2 boots on a side.",
        "",
    ));
    r
}

fn size_line(run: &RunReport) -> String {
    let lines = super::sizes::plain_lines(run.files.sizes);
    let mut r = String::new();
    for line in lines {
        r.push_str(&plain::wrap_hanging(&line, "", "  "));
    }
    r
}

/// The method in two sentences: how the figures were made and how a
/// verdict is reached.
fn method(run: &RunReport) -> String {
    let (meta, cfg) = (run.meta, &run.analysis.config);
    // What the run did, not what its suite planned: a run to a precision
    // adds boots, a partial run has fewer, and workloads set their own runs.
    let mut boots: std::collections::BTreeMap<(&str, u32), usize> = Default::default();
    for b in meta.boots.iter().filter(|b| b.ok()) {
        *boots.entry((b.variant.as_str(), b.cpus)).or_default() += 1;
    }
    let mut runs: std::collections::BTreeMap<_, usize> = Default::default();
    for s in run.samples.iter().filter(|s| !s.warmup) {
        let key = (&s.workload, &s.metric, s.param, s.cpus, &s.variant, s.boot);
        *runs.entry(key).or_default() += 1;
    }
    let span = |counts: &mut dyn Iterator<Item = usize>, planned: usize| {
        let counts: Vec<usize> = counts.collect();
        match (counts.iter().min(), counts.iter().max()) {
            (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
            (Some(lo), Some(hi)) => format!("{lo} to {hi}"),
            _ => planned.to_string(),
        }
    };
    let mut boots_text = format!(
        "{} boots of each kernel per CPU count",
        span(
            &mut boots.values().copied(),
            meta.boots_per_variant as usize
        )
    );
    if let Some(p) = meta.precision.as_ref().filter(|p| p.added_boots > 0) {
        boots_text.push_str(&format!(
            " ({} planned, the rest added to reach +/-{}%)",
            meta.boots_per_variant, p.percent
        ));
    }
    let measured = format!(
        "{boots_text}, interleaved in balanced blocks, {} \
         measured runs (+{} warm-up) per point and boot, timed by {}",
        span(&mut runs.values().copied(), meta.iterations as usize),
        meta.warmup,
        meta.timing_mode()
    );
    let mut text = format!(
        "Method: {measured}; boots are the independent unit. A verdict is read from \
         the boot means: regression or improvement when Welch's t-test gives p < {} \
         after {} correction, equivalent when TOST puts the 90% interval of the ratio \
         inside +/-{}%; the 95% CI is that of (with - without) / without.",
        cfg.alpha,
        cfg.correction.as_str(),
        cfg.margin * 100.0
    );
    if let Some(model) = run.cycle_model {
        text.push_str(&format!(
            " Every boot also ran under a cache and branch model; {} (a relative \
             measure, not a machine's cycles).",
            model
                .formula(run.meta.cpus.iter().any(|&c| c > 1))
                .replace('·', "*")
                .replace('−', "-")
        ));
    }
    plain::wrap(&text, "")
}

#[cfg(test)]
mod tests {
    use crate::base::stats::Interval;
    use crate::record::{KernelMeta, RunMeta, Sample};
    use crate::stages::report::plain::WIDTH;

    fn sample(variant: &str, boot: u32, value: f64) -> Sample {
        Sample {
            suite: "t".into(),
            workload: "hackbench".into(),
            metric: "time".into(),
            unit: "s".into(),
            higher_is_better: false,
            param: 4,
            cpus: 1,
            variant: variant.into(),
            boot,
            iteration: 0,
            warmup: false,
            value,
            started_at: String::new(),
        }
    }

    fn meta(variants: &[&str]) -> RunMeta {
        RunMeta {
            suite: "t".into(),
            kernels: variants
                .iter()
                .map(|v| KernelMeta {
                    variant: v.to_string(),
                    kernel: format!(
                        "{v} – with a name “too long” for one line {}",
                        "x".repeat(90)
                    ),
                    ..Default::default()
                })
                .collect(),
            complete: true,
            ..Default::default()
        }
    }

    #[test]
    fn huge_figures_and_long_names_stay_inside_72_ascii_columns() {
        let mut samples = Vec::new();
        for boot in 0..3 {
            samples.push(sample("off", boot, 1.0e12 + boot as f64));
            samples.push(sample("on", boot, 3.0e12 + boot as f64));
        }
        let text =
            crate::stages::report::render_text(&meta(&["off", "on"]), &samples, Default::default());
        for line in text.lines() {
            assert!(line.len() <= WIDTH, "{} columns: {line:?}", line.len());
            assert!(line.is_ascii(), "{line:?}");
        }
        // The table gave way to a paragraph that still has every figure.
        assert!(text.contains("groups 4: without 1000000000001"), "{text}");
        assert!(text.contains("REGRESSION"), "{text}");
    }

    #[test]
    fn several_candidates_get_a_table_each_against_the_baseline() {
        let mut samples = Vec::new();
        for boot in 0..3 {
            let b = boot as f64 * 0.001;
            samples.push(sample("off", boot, 2.0 + b));
            samples.push(sample("on", boot, 2.2 + b));
            samples.push(sample("generic", boot, 2.0 + b));
        }
        let text = crate::stages::report::render_text(
            &meta(&["off", "on", "generic"]),
            &samples,
            Default::default(),
        );
        assert!(text.contains("  on against off:"), "{text}");
        assert!(text.contains("  generic against off:"), "{text}");
        assert!(text.contains("candidate 1: on (kernel on"), "{text}");
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("4 "))
            .collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert!(
            rows[0].contains("+10") && rows[0].contains("REGRESSION"),
            "{text}"
        );
        assert!(rows[1].contains("+0"), "{text}");
    }

    #[test]
    fn an_intervals_bounds_have_the_same_decimals() {
        let ci = |lower, upper| Interval {
            lower,
            upper,
            level: 0.95,
        };
        assert_eq!(super::interval_text(&ci(-0.0191, -0.009)), "-1.91..-0.90");
        assert_eq!(super::interval_text(&ci(-0.002, 0.03)), "-0.20..+3.00");
        assert_eq!(super::interval_text(&ci(-0.00001, 0.0)), "+0.00..+0.00");
    }

    #[test]
    fn kernels_that_booted_the_same_bzimage_are_named_as_in_the_markdown() {
        let mut samples = Vec::new();
        for boot in 0..3 {
            for v in ["off", "same", "tracing", "other"] {
                samples.push(sample(v, boot, 2.0 + boot as f64 * 0.001));
            }
        }
        let mut run = meta(&["off", "same", "tracing", "other"]);
        let shas = ["ab", "ab", "ab", "cd"];
        for (k, sha) in run.kernels.iter_mut().zip(shas) {
            k.bzimage_sha256 = sha.repeat(32).into();
        }
        run.kernels[2].cmdline = "trace_event=sched:*".into();
        let text = crate::stages::report::render_text(&run, &samples, Default::default());
        let prose = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            prose.contains(
                "same booted the same bzImage as off, byte for byte, with the same command \
                 line: whatever differs between them is noise"
            ),
            "{text}"
        );
        assert!(
            prose.contains(
                "tracing booted the same bzImage as off, byte for byte: that comparison \
                 measures their command lines alone."
            ),
            "{text}"
        );
        assert!(!prose.contains("other booted"), "{text}");

        // A series' steps are compared too: each kernel with the one before.
        run.series = true;
        let text = crate::stages::report::render_text(&run, &samples, Default::default());
        let prose = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            prose.contains("tracing booted the same bzImage as same, byte for byte:"),
            "{text}"
        );
    }
}
