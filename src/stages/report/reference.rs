//! The section that sets a run's points beside the published table its
//! suite names (`reference`), in `report.md` and `report.txt`: per point
//! the table's relative difference, markbench's with its 95% interval,
//! whether the two agree in sign and what markbench's statistics resolve
//! that the table, one average a side, could not. The figures come from
//! [`crate::stages::analysis::reference`].

use super::format::{escape_md, relative};
use super::plain::{self, Align};
use super::RunReport;
use crate::base::stats::Verdict;
use crate::stages::analysis::reference::{beside, Beside, BesideRow, Resolution, Sign};
use std::fmt::Write as _;

/// The cells of one row, shared by both formats.
struct Cells {
    cpus: String,
    param: String,
    loops: String,
    reference: Option<String>,
    measured: String,
    interval: Option<(String, String)>,
    sign: &'static str,
}

fn cells(row: &BesideRow) -> Cells {
    Cells {
        cpus: row.cpus.to_string(),
        param: row.param.to_string(),
        loops: row.loops.map_or("–".into(), |l| l.to_string()),
        reference: row.reference.as_ref().map(|r| r.diff_pct.clone()),
        measured: row.measured_diff().map_or("–".into(), relative),
        interval: row
            .measured
            .and_then(|a| a.relative_difference_ci.as_ref())
            .map(|ci| (relative(ci.lower), relative(ci.upper))),
        sign: match row.sign() {
            Some(Sign::Agrees) => "agrees",
            Some(Sign::Opposite) => "opposite",
            Some(Sign::Undecided) => "either way",
            None => "–",
        },
    }
}

/// What markbench resolves at a point, in words; `margin` a fraction.
fn resolution_words(resolution: Resolution, margin: f64) -> String {
    match resolution {
        Resolution::Difference(Verdict::Improvement) => "a difference: improvement".into(),
        Resolution::Difference(_) => "a difference: regression".into(),
        Resolution::WithinMargin => format!("no difference beyond ±{}%", margin * 100.0),
        Resolution::Unresolved => "not resolved".into(),
        Resolution::TooFewBoots => "too few boots".into(),
    }
}

/// The prose before the table: what the table is, which comparison sits
/// beside it, and where the loops differ.
fn introduction(run: &RunReport, beside: &Beside) -> String {
    let table = beside.table;
    let analysis = run.analysis;
    let [base, cand] = analysis.names(&analysis.comparisons[beside.comparison]);
    let mut r = format!(
        "{}: one average a side and no interval, so the mail cannot tell a difference of a \
         percent from its runs' noise. Beside each point markbench measured, the mail's \
         relative difference at the same CPU count and group count, and markbench's \
         ({cand} against {base}, under {}) with its 95% interval and what its tests resolve.",
        table.source(),
        run.meta.accel.as_str().to_uppercase()
    );
    let loops = beside.other_loops();
    if !loops.is_empty() {
        let _ = write!(
            r,
            " The mail's runs were of {} loops, markbench's of {} ({}): the seconds differ by \
             design, only the relative differences compare.",
            table.loops(),
            loops
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" and "),
            match run.meta.overrides.scale {
                Some(scale) => format!("the suite's loops scaled by --scale {scale}"),
                None => "as the suite sets them".into(),
            }
        );
    }
    r
}

/// The summary after the table: agreement in sign and what is resolved.
fn summary(beside: &Beside, margin: f64) -> String {
    let t = beside.tally();
    let author = beside.table.author();
    let mut r = format!(
        "Of the {} points markbench measured, {} are in {author}'s table",
        beside.rows.len(),
        t.in_table
    );
    if t.in_table > 0 {
        let mut signs = vec![format!(
            "{} with it in sign",
            count(t.agree, "agrees", "agree")
        )];
        if t.opposite > 0 {
            signs.push(format!("{} opposite", count(t.opposite, "is", "are")));
        }
        if t.undecided > 0 {
            signs.push(format!(
                "{} either way (markbench's interval holds zero)",
                count(t.undecided, "could go", "could go")
            ));
        }
        let _ = write!(
            r,
            ": {}; markbench resolves {} of them ({} a difference, {} no difference beyond \
             ±{}%), {} not resolved",
            signs.join(", "),
            t.difference + t.within_margin,
            t.difference,
            t.within_margin,
            margin * 100.0,
            count(t.unresolved, "is", "are")
        );
        if t.too_few > 0 {
            let _ = write!(
                r,
                " and {} too few boots to test",
                count(t.too_few, "has", "have")
            );
        }
    }
    r.push('.');
    if t.not_in_table > 0 {
        let _ = write!(
            r,
            " The other {} at points the mail does not have.",
            count(t.not_in_table, "is", "are")
        );
    }
    r
}

/// "1 agrees", "2 agree".
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The markdown section, or nothing when the run has no reference table.
pub(super) fn markdown(run: &RunReport) -> String {
    let Some(beside) = beside(run.meta, run.analysis) else {
        return String::new();
    };
    let table = beside.table;
    let margin = run.analysis.config.margin;
    let mut r = format!("## Beside {}'s table\n\n", table.author());
    let _ = writeln!(r, "{}\n", escape_md(&introduction(run, &beside)));
    let _ = writeln!(
        r,
        "| CPUs | {} | loops (mail: {}) | mail diff [%] | markbench diff [%] | 95% CI of diff [%] | sign | markbench resolves |\n\
         |---:|---:|---:|---:|---:|---|---|---|",
        crate::stages::analysis::param_label(table.workload().0),
        table.loops()
    );
    for row in &beside.rows {
        let c = cells(row);
        let loops = if row.loops_differ(table) {
            format!("**{}**", c.loops)
        } else {
            c.loops
        };
        let _ = writeln!(
            r,
            "| {} | {} | {loops} | {} | {} | {} | {} | {} |",
            c.cpus,
            c.param,
            c.reference.unwrap_or_else(|| "not in the mail".into()),
            c.measured,
            c.interval
                .map_or("–".into(), |(lo, hi)| format!("{lo} … {hi}")),
            c.sign,
            resolution_words(row.resolution(), margin)
        );
    }
    let _ = writeln!(r, "\n{}\n", escape_md(&summary(&beside, margin)));
    r
}

/// The text section, or nothing when the run has no reference table.
pub(super) fn text(run: &RunReport) -> String {
    let Some(beside) = beside(run.meta, run.analysis) else {
        return String::new();
    };
    let margin = run.analysis.config.margin;
    let mut r = plain::heading(&format!("Beside {}'s table", beside.table.author()), '-');
    r.push('\n');
    r.push_str(&plain::wrap(&introduction(run, &beside), ""));
    r.push('\n');
    let rows: Vec<Vec<String>> = beside
        .rows
        .iter()
        .map(|row| {
            let c = cells(row);
            vec![
                c.cpus,
                c.param,
                c.loops,
                c.reference.unwrap_or_else(|| "none".into()),
                c.measured,
                c.interval
                    .map_or("-".into(), |(lo, hi)| format!("{lo}..{hi}")),
                match row.sign() {
                    Some(Sign::Agrees) => "same",
                    Some(Sign::Opposite) => "other",
                    Some(Sign::Undecided) => "open",
                    None => "-",
                }
                .to_string(),
                short_resolution(row.resolution()),
            ]
        })
        .collect();
    let header = [
        "cpus", "groups", "loops", "mail %", "diff %", "95% CI %", "sign", "resolves",
    ];
    let align = [
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Left,
        Align::Left,
        Align::Left,
    ];
    match plain::table("  ", &header, &align, &rows) {
        Some(t) => r.push_str(&t),
        None => {
            for c in &rows {
                r.push_str(&plain::wrap_hanging(
                    &format!(
                        "{} CPUs, {} groups, {} loops: mail {}%, markbench {}% (95% CI {}%), \
                         sign {}, resolves: {}",
                        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
                    ),
                    "  ",
                    "      ",
                ));
            }
        }
    }
    r.push('\n');
    r.push_str(&plain::wrap(
        &format!(
            "mail %: the mail's diff % (none: not in the mail). sign: whether markbench's diff \
             has the mail's (same) or not (other). resolves: what markbench's tests decide: \
             REGRESSION or IMPROVED, a difference; within, no difference beyond +-{}%; no, \
             neither; too few, fewer than 2 boots a side. {}",
            margin * 100.0,
            summary(&beside, margin)
        ),
        "",
    ));
    r
}

/// [`resolution_words`] short enough for a 72-column table.
fn short_resolution(resolution: Resolution) -> String {
    match resolution {
        Resolution::Difference(Verdict::Improvement) => "IMPROVED".into(),
        Resolution::Difference(_) => "REGRESSION".into(),
        Resolution::WithinMargin => "within".into(),
        Resolution::Unresolved => "no".into(),
        Resolution::TooFewBoots => "too few".into(),
    }
}

#[cfg(test)]
mod tests {
    use crate::record::{KernelMeta, Recorded, ReferenceTable, RunMeta, Sample};

    /// A reduced ia64-2008 run: hackbench of 2 loops at 20, 50 and 100
    /// groups on 2 vCPUs and at 50 groups on 4, four boots a side.
    pub(crate) fn meta(reference: Option<ReferenceTable>) -> RunMeta {
        RunMeta {
            suite: "ia64-2008".into(),
            kernels: ["markers-off-generic", "markers-generic"]
                .iter()
                .map(|v| KernelMeta {
                    variant: v.to_string(),
                    ..Default::default()
                })
                .collect(),
            workloads: vec![Recorded::Data(
                toml::from_str("kind = \"hackbench\"\nparams = [20, 50, 100]\nloops = 2\n")
                    .unwrap(),
            )],
            margin: 0.02,
            complete: true,
            reference,
            ..Default::default()
        }
    }

    /// With markers +5% at 50 groups on 2 vCPUs (a regression), -0.2% at
    /// 100 (within the margin), +1% at 20 (not in the mail), and on 4 vCPUs
    /// at 50 groups boots spread ±10% (not resolved).
    pub(crate) fn samples() -> Vec<Sample> {
        let mut out = Vec::new();
        let points: [(u32, u64, f64, f64); 4] = [
            (2, 20, 1.01, 0.001),
            (2, 50, 1.05, 0.002),
            (2, 100, 0.998, 0.004),
            (4, 50, 1.01, 0.1),
        ];
        for (cpus, param, factor, spread) in points {
            for (variant, f) in [("markers-off-generic", 1.0), ("markers-generic", factor)] {
                for boot in 0..4u32 {
                    for iteration in 0..3u32 {
                        let wobble = 1.0 + spread * (((boot * 5 + iteration) % 4) as f64 - 1.5);
                        out.push(Sample {
                            suite: "ia64-2008".into(),
                            workload: "hackbench".into(),
                            metric: "time".into(),
                            unit: "s".into(),
                            higher_is_better: false,
                            param,
                            cpus,
                            variant: variant.into(),
                            boot,
                            iteration,
                            warmup: false,
                            value: param as f64 * 0.002 * f * wobble,
                            started_at: String::new(),
                        });
                    }
                }
            }
        }
        out
    }

    fn section(report: &str, heading: &str) -> String {
        let start = report.find(heading).expect(heading);
        let rest = &report[start + heading.len()..];
        let end = rest
            .find("\n## ")
            .or_else(|| rest.find("\n\n\n"))
            .unwrap_or(rest.len());
        format!("{heading}{}", &rest[..end])
    }

    fn row<'a>(section: &'a str, start: &str) -> Vec<&'a str> {
        let line = section
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no row {start:?} in {section}"));
        line.split('|').map(str::trim).collect()
    }

    #[test]
    fn each_point_sits_beside_the_mails_figure_at_its_cpus_and_groups() {
        let report = crate::stages::report::render(
            &meta(Some(ReferenceTable::Aoki2008)),
            &samples(),
            Default::default(),
        );
        let s = section(&report, "## Beside Aoki 2008's table");
        // cpus | groups | loops | mail | markbench | interval | sign | resolves
        let regression = row(&s, "| 2 | 50 |");
        assert_eq!(regression[3], "**2**", "{s}");
        assert_eq!(regression[4], "+1.27", "{s}");
        assert_eq!(regression[5], "+5", "{s}");
        assert!(regression[6].contains(" … "), "{s}");
        assert_eq!(regression[7], "agrees", "{s}");
        assert_eq!(regression[8], "a difference: regression", "{s}");
        let within = row(&s, "| 2 | 100 |");
        // -0.2% against the mail's +4.61%, but an interval that holds zero:
        // no sign to set against the mail's.
        assert_eq!((within[4], within[7]), ("+4.61", "either way"), "{s}");
        assert_eq!(within[8], "no difference beyond ±2%", "{s}");
        let absent = row(&s, "| 2 | 20 |");
        assert_eq!((absent[4], absent[7]), ("not in the mail", "–"), "{s}");
        let wide = row(&s, "| 4 | 50 |");
        assert_eq!((wide[4], wide[8]), ("-0.1", "not resolved"), "{s}");
        assert_eq!(wide[7], "either way", "{s}");
        assert!(
            s.contains("The mail's runs were of 100 loops, markbench's of 2 (as the suite sets"),
            "{s}"
        );
        let prose = s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            prose.contains(
                "Of the 4 points markbench measured, 3 are in Aoki 2008's table: 1 agrees with \
                 it in sign, 2 could go either way (markbench's interval holds zero); markbench \
                 resolves 2 of them (1 a difference, 1 no difference beyond ±2%), 1 is not \
                 resolved. The other 1 is at points the mail does not have."
            ),
            "{s}"
        );
    }

    #[test]
    fn a_run_without_a_reference_or_from_before_has_no_such_section() {
        for meta in [meta(None), {
            let mut m = meta(Some(ReferenceTable::Aoki2008));
            m.workloads = vec![Recorded::Legacy("hackbench".into())];
            m
        }] {
            let report = crate::stages::report::render(&meta, &samples(), Default::default());
            let has = report.contains("## Beside Aoki 2008's table");
            assert_eq!(has, meta.reference.is_some(), "{report}");
            if has {
                // Loops not recorded as data: no claim about them.
                assert!(!report.contains("The mail's runs were of"), "{report}");
            }
        }
    }

    #[test]
    fn the_text_report_sets_the_same_figures_within_72_columns() {
        let text = crate::stages::report::render_text(
            &meta(Some(ReferenceTable::Aoki2008)),
            &samples(),
            Default::default(),
        );
        let s = section(&text, "Beside Aoki 2008's table");
        for line in s.lines() {
            assert!(line.len() <= super::plain::WIDTH, "{line:?}");
            assert!(line.is_ascii(), "{line:?}");
        }
        let cells = |start: &str| -> Vec<String> {
            s.lines()
                .find(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" ") == start)
                .unwrap_or_else(|| panic!("no row {start:?} in {s}"))
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        let r = cells("2 50");
        assert_eq!(&r[2..5], ["2", "+1.27", "+5"], "{s}");
        assert_eq!(&r[6..], ["same", "REGRESSION"], "{s}");
        assert_eq!(&cells("2 20")[3..4], ["none"], "{s}");
        assert_eq!(cells("4 50").last().unwrap(), "no", "{s}");
        assert!(
            text.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains(
                    "3 are in Aoki 2008's table: 1 agrees with it in sign, 2 could go either way"
                ),
            "{s}"
        );
    }
}
