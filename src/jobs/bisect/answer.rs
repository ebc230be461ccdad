//! The bisection's answer: `bisect.md` for a person, `bisect.txt` for a
//! mail and `bisect.json` for scripts, written after every step (what is
//! known so far) and at the end.
//! First the first bad commit (or the narrowest range), then every commit
//! measured in range order, the builds, and with a profile the first bad
//! commit against its parent function by function.

use super::decide::{Class, Ending, Relative, Search, Step};
use super::{Build, Plan};
use crate::record::RunMeta;
use crate::stages::report::format::{self, escape_md};
use crate::stages::report::plain::{self, Align};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One commit's build, as the answer lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum BuildOutcome {
    Built(Build),
    Failed { error: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub plan: Plan,
    /// The point's unit (`s`, `packets/s`).
    pub unit: String,
    /// The steps taken so far, while the search runs.
    pub steps_so_far: Vec<Step>,
    /// The whole search, once it ended.
    pub search: Option<Search>,
    /// Every build the bisection needed, by range index.
    pub builds: Vec<(usize, BuildOutcome)>,
    /// `git show --stat` of the first bad commit.
    pub first_bad_stat: Option<String>,
    /// The run directory of the first bad commit against its parent with
    /// the profile plugin.
    pub profile: Option<PathBuf>,
}

impl Answer {
    pub fn partial(plan: &Plan, steps: &[Step], unit: &str) -> Answer {
        Answer {
            plan: plan.clone(),
            unit: unit.to_string(),
            steps_so_far: steps.to_vec(),
            search: None,
            builds: Vec::new(),
            first_bad_stat: None,
            profile: None,
        }
    }

    pub fn finished(plan: &Plan, search: Search, unit: &str) -> Answer {
        Answer {
            plan: plan.clone(),
            unit: unit.to_string(),
            steps_so_far: search.steps.clone(),
            search: Some(search),
            builds: Vec::new(),
            first_bad_stat: None,
            profile: None,
        }
    }

    /// The answer in one line.
    pub fn headline(&self) -> String {
        let commits = &self.plan.commits;
        let named = |i: usize| format!("{} ({})", commits[i].short_id(), commits[i].subject);
        match self.search.as_ref().map(|s| &s.ending) {
            None => "in progress".into(),
            Some(Ending::NoRegression) => format!(
                "no regression to bisect between {} and {}: {}",
                commits[0].short_id(),
                commits[commits.len() - 1].short_id(),
                self.search
                    .as_ref()
                    .and_then(|s| s.confirmation.why_not.clone())
                    .unwrap_or_default()
            ),
            Some(Ending::FirstBad { index }) => format!("first bad commit: {}", named(*index)),
            Some(Ending::Range { good, bad }) => format!(
                "the first bad commit is one of the {} after {} up to {}; the commits between \
                 could not be decided",
                bad - good,
                commits[*good].short_id(),
                named(*bad)
            ),
        }
    }
}

/// One step as it is decided, for the terminal.
pub fn step_line(plan: &Plan, step: &Step, unit: &str) -> String {
    let commit = &plan.commits[step.index];
    let figures = match (step.mean, &step.vs_good, &step.vs_bad) {
        (Some(mean), Some(g), Some(b)) => format!(
            "{} {unit}, {} against GOOD, {} against BAD, {} boots",
            number(mean, unit),
            relative(g),
            relative(b),
            step.boots
        ),
        _ => step
            .build_error
            .as_deref()
            .map_or(String::new(), |e| first_error(e).to_string()),
    };
    let class = match step.index {
        0 => "GOOD",
        i if i == plan.commits.len() - 1 => "BAD",
        _ => step.class.as_str(),
    };
    format!(
        "markbench: bisect: {} {}: {class} ({figures})",
        commit.short_id(),
        commit.subject,
    )
}

/// The line of a failed build's output that says what failed: the
/// compiler's first error, else the first line.
fn first_error(output: &str) -> &str {
    output
        .lines()
        .find(|l| l.contains("error:"))
        .or_else(|| output.lines().next())
        .unwrap_or_default()
        .trim()
}

/// The answer's closing lines for the terminal.
pub fn summary(answer: &Answer) -> String {
    let mut s = format!("markbench: bisect: {}", answer.headline());
    if let Some(search) = &answer.search {
        let skipped: Vec<&str> = search
            .steps
            .iter()
            .filter(|s| s.class == Class::Skipped)
            .map(|s| answer.plan.commits[s.index].short_id())
            .collect();
        if !skipped.is_empty() {
            let _ = write!(
                s,
                "\nmarkbench: bisect: skipped (untestable): {}",
                skipped.join(", ")
            );
        }
    }
    s
}

fn number(v: f64, unit: &str) -> String {
    format::value(v, format::decimals(unit, v))
}

fn pct(v: f64) -> String {
    format::signed_percent_2dp(v)
}

fn relative(r: &Relative) -> String {
    match r.interval {
        Some(ci) => format!(
            "{} ({} … {})",
            pct(r.difference),
            pct(ci.lower),
            pct(ci.upper)
        ),
        None => pct(r.difference),
    }
}

fn cell_relative(r: Option<&Relative>) -> (String, String) {
    match r {
        Some(r) => (
            pct(r.difference),
            r.interval.map_or("–".into(), |ci| {
                format!("{} … {}", pct(ci.lower), pct(ci.upper))
            }),
        ),
        None => ("–".into(), "–".into()),
    }
}

/// The markdown: one section after the other.
pub fn markdown(answer: &Answer) -> String {
    let mut r = String::new();
    md_heading(&mut r, answer);
    md_first_bad(&mut r, answer);
    md_confirmation(&mut r, answer);
    md_commits(&mut r, answer);
    md_builds(&mut r, answer);
    if let Some(section) = answer.profile.as_deref().and_then(profile_section) {
        r.push_str(&section);
    }
    r
}

/// The headline and what was bisected: the range, the point, the rules.
fn md_heading(r: &mut String, answer: &Answer) {
    let plan = &answer.plan;
    let commits = &plan.commits;
    let _ = writeln!(r, "# Bisection: {}\n", escape_md(&answer.headline()));
    let _ = writeln!(
        r,
        "GOOD `{}` ({}) to BAD `{}` ({}) in `{}`: {} commits after GOOD, on the first-parent \
         line. Point `{}` of suite `{}`, {} boots a round, at most {} rounds a commit; a \
         regression is bisected when BAD is significantly worse than GOOD by at least {:.2}%.\n",
        commits[0].short_id(),
        escape_md(&commits[0].subject),
        commits[commits.len() - 1].short_id(),
        escape_md(&commits[commits.len() - 1].subject),
        plan.tree.display(),
        commits.len() - 1,
        plan.point,
        plan.suite
            .as_deref()
            .map_or("quick (the default)".into(), |p| p.display().to_string()),
        plan.boots,
        plan.max_rounds,
        100.0 * plan.threshold
    );
}

/// "First bad commit": the commit, its author and stat, and how to go on
/// when it is a merge. Nothing unless the search found one.
fn md_first_bad(r: &mut String, answer: &Answer) {
    let (Some(Ending::FirstBad { index }), Some(stat)) = (
        answer.search.as_ref().map(|s| &s.ending),
        &answer.first_bad_stat,
    ) else {
        return;
    };
    let c = &answer.plan.commits[*index];
    let _ = writeln!(
        r,
        "## First bad commit\n\n**`{}` {}**, by {}\n\n```\n{}\n```\n",
        c.short_id(),
        escape_md(&c.subject),
        escape_md(&c.author),
        stat.trim_end()
    );
    if c.merge {
        let _ = writeln!(
            r,
            "It is a merge: the regression came in with the branch it merged. Bisect that \
             branch with `--good $(git merge-base {0}^1 {0}^2) --bad {0}^2`.\n",
            c.short_id()
        );
    }
}

/// BAD against GOOD, and whether that was a regression to bisect.
fn md_confirmation(r: &mut String, answer: &Answer) {
    let Some(search) = &answer.search else {
        return;
    };
    let c = &search.confirmation;
    let (d, ci) = cell_relative(c.bad_vs_good.as_ref());
    let _ = writeln!(
        r,
        "BAD against GOOD: {d} (95% CI {ci}), {}{}.\n",
        c.verdict,
        if c.confirmed {
            ": bisected".to_string()
        } else {
            format!(": not bisected ({})", c.why_not.clone().unwrap_or_default())
        }
    );
}

/// "Commits measured": one row per commit, how a commit is classed, and
/// the steps in the order taken.
fn md_commits(r: &mut String, answer: &Answer) {
    let commits = &answer.plan.commits;
    let _ = writeln!(r, "## Commits measured\n");
    let unit = if answer.unit.is_empty() {
        String::new()
    } else {
        format!(" [{}]", answer.unit)
    };
    let _ = writeln!(
        r,
        "| # | commit | subject | value{unit} | 95% CI | vs GOOD | 95% CI | vs BAD | 95% CI | \
         class | boots |\n|---:|---|---|---:|---|---:|---|---:|---|---|---:|"
    );
    let last = commits.len() - 1;
    for s in measured_steps(answer) {
        let c = &commits[s.index];
        let (g, gci) = cell_relative(s.vs_good.as_ref());
        let (b, bci) = cell_relative(s.vs_bad.as_ref());
        let class = match s.index {
            0 => "GOOD".to_string(),
            i if i == last => "BAD".to_string(),
            _ => s.class.as_str().to_string(),
        };
        let class = if s.class == Class::Bad || (s.index == last) {
            format!("**{class}**")
        } else {
            class
        };
        let _ = writeln!(
            r,
            "| {} | `{}` | {} | {} | {} | {g} | {gci} | {b} | {bci} | {class} | {} |",
            s.index,
            c.short_id(),
            escape_md(&c.subject),
            s.mean.map_or("–".into(), |m| number(m, &answer.unit)),
            s.interval.map_or("–".into(), |ci| format!(
                "{} … {}",
                number(ci.lower, &answer.unit),
                number(ci.upper, &answer.unit)
            )),
            s.boots
        );
    }
    let _ = writeln!(
        r,
        "\nA commit is **bad** when its whole 95% interval against GOOD lies beyond half the \
         regression (the geometric midpoint of GOOD's and BAD's means), **good** when it lies \
         wholly on GOOD's side; otherwise it gets another round of boots, and a commit still \
         straddling the line after the last round ends the search with the range it leaves. A \
         commit that does not build, or none of whose boots completes, is skipped and the one \
         nearest the middle tried instead.\n"
    );
    if let Some(search) = &answer.search {
        let order: Vec<String> = search
            .steps
            .iter()
            .map(|s| format!("`{}` {}", commits[s.index].short_id(), s.class.as_str()))
            .collect();
        if !order.is_empty() {
            let _ = writeln!(r, "Steps, in the order taken: {}.\n", order.join(", "));
        }
    }
}

/// "Builds": each kernel the bisection needed, built, from the cache or
/// untestable. Nothing when none was needed.
fn md_builds(r: &mut String, answer: &Answer) {
    if answer.builds.is_empty() {
        return;
    }
    let _ = writeln!(
        r,
        "## Builds\n\n| commit | build | time [s] | source files rebuilt |\n|---|---|---:|---:|"
    );
    let mut built = 0;
    for (index, b) in &answer.builds {
        let c = &answer.plan.commits[*index];
        match b {
            BuildOutcome::Built(b) => {
                built += usize::from(b.seconds.is_some());
                let _ = writeln!(
                    r,
                    "| `{}` | {} | {} | {} |",
                    c.short_id(),
                    if b.seconds.is_some() {
                        "built"
                    } else {
                        "from the cache"
                    },
                    b.seconds.map_or("–".into(), |s| format!("{s:.0}")),
                    b.source_files_rebuilt.map_or("–".into(), |n| n.to_string())
                );
            }
            BuildOutcome::Failed { error: why } => {
                let _ = writeln!(
                    r,
                    "| `{}` | **untestable**: {} | – | – |",
                    c.short_id(),
                    escape_md(first_error(why))
                );
            }
        }
    }
    let _ = writeln!(
        r,
        "\n{} kernels needed, {built} built by this bisection. Each commit's boots are run \
         directories under `commits/<id>/round-<n>/`.\n",
        answer.builds.len()
    );
}

/// The "Where the difference goes" section of the profile run.
fn profile_section(run: &Path) -> Option<String> {
    let meta = RunMeta::read(run).ok()?;
    let views = crate::stages::report::profile::load(run, &meta).ok()?;
    let section = crate::stages::report::profile::section(views.first(), false);
    Some(format!(
        "{section}\n(The profile's run: `{}`.)\n",
        run.display()
    ))
}

/// The answer as plain text for a mail (ASCII, 72 columns): the answer,
/// BAD against GOOD, the first bad commit's stat and the commits measured.
pub fn text(answer: &Answer) -> String {
    let mut r = String::new();
    txt_heading(&mut r, answer);
    txt_confirmation(&mut r, answer);
    txt_first_bad(&mut r, answer);
    txt_commits(&mut r, answer);
    txt_steps(&mut r, answer);
    r.push('\n');
    r.push_str(&plain::wrap(
        "A commit is bad when its whole 95% interval against GOOD lies beyond half the \
         regression (the geometric midpoint of GOOD's and BAD's means), good when it lies \
         wholly on GOOD's side; a commit that does not build or boot is skipped.",
        "",
    ));
    r
}

/// The headline and what was bisected: the range, the point, the rules.
fn txt_heading(r: &mut String, answer: &Answer) {
    let plan = &answer.plan;
    let commits = &plan.commits;
    let last = commits.len() - 1;
    r.push_str(&plain::heading(
        &format!("Bisection: {}", answer.headline()),
        '=',
    ));
    r.push('\n');
    r.push_str(&plain::wrap(
        &format!(
            "GOOD {} ({}) to BAD {} ({}) in {}: {} commits after GOOD, on the \
             first-parent line. Point {} of suite {}, {} boots a round, at most {} rounds \
             a commit; a regression is bisected when BAD is significantly worse than GOOD \
             by at least {:.2}%.",
            commits[0].short_id(),
            commits[0].subject,
            commits[last].short_id(),
            commits[last].subject,
            plan.tree.display(),
            last,
            plan.point,
            plan.suite
                .as_deref()
                .map_or("quick (the default)".into(), |p| p.display().to_string()),
            plan.boots,
            plan.max_rounds,
            100.0 * plan.threshold
        ),
        "",
    ));
}

/// BAD against GOOD, and whether that was a regression to bisect.
fn txt_confirmation(r: &mut String, answer: &Answer) {
    let Some(search) = &answer.search else {
        return;
    };
    let c = &search.confirmation;
    let (d, ci) = cell_relative(c.bad_vs_good.as_ref());
    r.push('\n');
    r.push_str(&plain::wrap(
        &format!(
            "BAD against GOOD: {d} (95% CI {ci}), {}{}.",
            c.verdict,
            if c.confirmed {
                ": bisected".to_string()
            } else {
                format!(": not bisected ({})", c.why_not.clone().unwrap_or_default())
            }
        ),
        "",
    ));
}

/// "First bad commit": the commit, its author and stat. Nothing unless
/// the search found one.
fn txt_first_bad(r: &mut String, answer: &Answer) {
    let (Some(Ending::FirstBad { index }), Some(stat)) = (
        answer.search.as_ref().map(|s| &s.ending),
        &answer.first_bad_stat,
    ) else {
        return;
    };
    let c = &answer.plan.commits[*index];
    r.push('\n');
    r.push_str(&plain::heading("First bad commit", '-'));
    r.push('\n');
    r.push_str(&plain::wrap(
        &format!("{} {}, by {}", c.short_id(), c.subject, c.author),
        "",
    ));
    r.push('\n');
    for line in stat.trim_end().lines() {
        r.push_str(&plain::verbatim(line, "    "));
        r.push('\n');
    }
}

/// "Commits measured": a table of the commits (one paragraph a commit when
/// the table is too wide), then each commit's subject.
fn txt_commits(r: &mut String, answer: &Answer) {
    let commits = &answer.plan.commits;
    let last = commits.len() - 1;
    r.push('\n');
    r.push_str(&plain::heading("Commits measured", '-'));
    r.push('\n');
    let rows_of = measured_steps(answer);
    let unit = if answer.unit.is_empty() {
        String::new()
    } else {
        format!(" [{}]", answer.unit)
    };
    let value_header = format!("value{unit}");
    let rows: Vec<Vec<String>> = rows_of
        .iter()
        .map(|s| {
            let (g, gci) = cell_relative(s.vs_good.as_ref());
            let class = match s.index {
                0 => "GOOD".to_string(),
                i if i == last => "BAD".to_string(),
                _ if s.class == Class::Skipped => "skipped".to_string(),
                _ => s.class.as_str().to_string(),
            };
            vec![
                s.index.to_string(),
                commits[s.index].short_id().to_string(),
                s.mean.map_or("-".into(), |m| number(m, &answer.unit)),
                g,
                gci,
                class,
                s.boots.to_string(),
            ]
        })
        .collect();
    let header = [
        "#",
        "commit",
        value_header.as_str(),
        "vs GOOD",
        "95% CI",
        "class",
        "boots",
    ];
    let align = [
        Align::Right,
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Left,
        Align::Left,
        Align::Right,
    ];
    match plain::table("  ", &header, &align, &rows) {
        Some(t) => r.push_str(&t),
        None => {
            for row in &rows {
                r.push_str(&plain::wrap_hanging(
                    &format!(
                        "{} {}: {} {}, vs GOOD {} (95% CI {}), {}, {} boots",
                        row[0], row[1], value_header, row[2], row[3], row[4], row[5], row[6]
                    ),
                    "  ",
                    "      ",
                ));
            }
        }
    }
    r.push('\n');
    for s in &rows_of {
        let c = &commits[s.index];
        r.push_str(&plain::wrap_hanging(
            &c.subject,
            &format!("  {:>2} {}  ", s.index, c.short_id()),
            &" ".repeat(19),
        ));
    }
}

/// The steps in the order taken, when there were any.
fn txt_steps(r: &mut String, answer: &Answer) {
    let Some(search) = &answer.search else {
        return;
    };
    let order: Vec<String> = search
        .steps
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                answer.plan.commits[s.index].short_id(),
                s.class.as_str()
            )
        })
        .collect();
    if !order.is_empty() {
        r.push('\n');
        r.push_str(&plain::wrap(
            &format!("Steps, in the order taken: {}.", order.join(", ")),
            "",
        ));
    }
}

/// Every commit measured so far, in range order.
fn measured_steps(answer: &Answer) -> Vec<&Step> {
    let mut rows: Vec<&Step> = answer
        .search
        .as_ref()
        .map(|s| s.ends.iter().collect())
        .unwrap_or_default();
    rows.extend(&answer.steps_so_far);
    rows.sort_by_key(|s| s.index);
    rows.dedup_by_key(|s| s.index);
    rows
}

/// Writes `bisect.md`, `bisect.txt` and `bisect.json` into `dir`; returns
/// the markdown's path.
pub fn write(dir: &Path, answer: &Answer) -> Result<PathBuf> {
    let md = dir.join("bisect.md");
    std::fs::write(&md, markdown(answer)).with_context(|| format!("writing {}", md.display()))?;
    let txt = dir.join("bisect.txt");
    std::fs::write(&txt, text(answer)).with_context(|| format!("writing {}", txt.display()))?;
    let json = dir.join("bisect.json");
    std::fs::write(&json, serde_json::to_string_pretty(answer)?)
        .with_context(|| format!("writing {}", json.display()))?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::stats::{Interval, Verdict};
    use crate::jobs::bisect::decide::Confirmation;
    use crate::jobs::bisect::range::RangeCommit;
    use crate::stages::report::plain::WIDTH;

    fn commit(i: usize, subject: &str) -> RangeCommit {
        RangeCommit {
            id: format!("{i:x}").repeat(40)[..40].to_string(),
            subject: subject.into(),
            author: "A. Developer <a@example.org>".into(),
            merge: false,
        }
    }

    fn relative(difference: f64) -> Relative {
        Relative {
            difference,
            interval: Some(Interval {
                lower: difference - 0.005,
                upper: difference + 0.005,
                level: 0.95,
            }),
            p_value: Some(0.001),
        }
    }

    fn step(index: usize, class: Class, mean: f64, vs_good: f64) -> Step {
        Step {
            index,
            class,
            rounds: 1,
            boots: 4,
            mean: Some(mean),
            interval: Some(Interval {
                lower: mean - 0.01,
                upper: mean + 0.01,
                level: 0.95,
            }),
            vs_good: Some(relative(vs_good)),
            vs_bad: None,
            build_error: None,
        }
    }

    fn answer() -> Answer {
        let plan = Plan {
            tree: "/src/linux".into(),
            good: "v6.1".into(),
            bad: "HEAD".into(),
            suite: None,
            suite_sha256: crate::base::sha256::Sha256::of(b"suite"),
            point: "hackbench:time@1cpu:2".into(),
            variant: String::new(),
            threshold: 0.02,
            boots: 4,
            iterations: None,
            max_rounds: 3,
            profile: false,
            commits: vec![
                commit(1, "linux-source-6.1 as Debian ships it"),
                commit(2, "sched: comment schedule()"),
                commit(
                    3,
                    &format!(
                        "af_unix: spin in unix_stream_sendmsg {}",
                        "and more ".repeat(8)
                    ),
                ),
            ],
        };
        let search = Search {
            confirmation: Confirmation {
                bad_vs_good: Some(relative(0.17)),
                verdict: Verdict::Regression,
                confirmed: true,
                why_not: None,
            },
            ends: vec![
                step(0, Class::Good, 2.173, 0.0),
                step(2, Class::Bad, 2.550, 0.17),
            ],
            steps: vec![step(1, Class::Good, 2.171, -0.001)],
            ending: Ending::FirstBad { index: 2 },
        };
        let mut answer = Answer::finished(&plan, search, "s");
        answer.first_bad_stat = Some(format!(
            " net/unix/af_unix.c | 3 +++\n 1 file changed, 3 insertions(+)\n {}",
            "x".repeat(100)
        ));
        answer
    }

    /// bisect.md of a first bad commit that is a merge, with a kernel
    /// built, one from the cache and one that did not build: every section.
    #[test]
    fn bisect_md_shows_every_section() {
        let mut answer = answer();
        answer.plan.commits[2].merge = true;
        answer.builds = vec![
            (
                0,
                BuildOutcome::Built(Build {
                    seconds: None,
                    source_files_rebuilt: None,
                    kernel_dir: "/cache/k0".into(),
                }),
            ),
            (
                1,
                BuildOutcome::Failed {
                    error: "make: *** [Makefile:1] Error 2".into(),
                },
            ),
            (
                2,
                BuildOutcome::Built(Build {
                    seconds: Some(412.4),
                    source_files_rebuilt: Some(3),
                    kernel_dir: "/cache/k2".into(),
                }),
            ),
        ];
        insta::assert_snapshot!(markdown(&answer));
        let mut unconfirmed = self::answer();
        if let Some(search) = &mut unconfirmed.search {
            search.confirmation.confirmed = false;
            search.confirmation.why_not = Some("BAD is not worse than GOOD".into());
            search.ending = Ending::NoRegression;
            search.steps.clear();
        }
        unconfirmed.first_bad_stat = None;
        insta::assert_snapshot!("bisect_md_of_no_regression", markdown(&unconfirmed));
        insta::assert_snapshot!("bisect_txt_shows_every_section", text(&answer));
        insta::assert_snapshot!("bisect_txt_of_no_regression", text(&unconfirmed));
    }

    #[test]
    fn bisect_txt_gives_the_answer_the_commits_and_the_stat_within_72_columns() {
        let text = text(&answer());
        for line in text.lines() {
            assert!(line.len() <= WIDTH, "{line:?}");
            assert!(line.is_ascii(), "{line:?}");
        }
        assert!(
            text.starts_with("Bisection: first bad commit: 333333333333 (af_unix: spin"),
            "{text}"
        );
        let flowing = text.replace('\n', " ");
        assert!(
            flowing.contains(
                "BAD against GOOD: +17.00% (95% CI +16.50% ... +17.50%), regression: bisected."
            ),
            "{text}"
        );
        assert!(
            text.contains("\n     net/unix/af_unix.c | 3 +++\n"),
            "{text}"
        );
        let rows: Vec<Vec<&str>> = text
            .lines()
            .filter(|l| {
                l.starts_with("  ") && l.trim_start().starts_with(|c: char| c.is_ascii_digit())
            })
            .map(|l| l.split_whitespace().collect())
            .filter(|cells: &Vec<&str>| cells.len() >= 7 && cells[2].parse::<f64>().is_ok())
            .collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert_eq!(rows[0][..3], ["0", "111111111111", "2.173"]);
        assert_eq!(rows[1][..4], ["1", "222222222222", "2.171", "-0.10%"]);
        assert_eq!(rows[2][..4], ["2", "333333333333", "2.550", "+17.00%"]);
        assert!(rows[2].contains(&"BAD"), "{:?}", rows[2]);
    }
}
