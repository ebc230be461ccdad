//! A bisection's answer, rendered: `bisect.md` for a person, `bisect.txt`
//! for a mail (ASCII, 72 columns), and the lines the terminal shows as it
//! goes. The bisection (`jobs::bisect`) fills one [`Bisection`] of plain
//! facts; each format words it.
//!
//! First the first bad commit (or the narrowest range), then every commit
//! measured in range order, the builds, and with a profile the first bad
//! commit against its parent function by function.

use super::format::{self, escape_md};
use super::plain::{self, Align};
use crate::base::stats::{Interval, Verdict};
use crate::record::RunMeta;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What a bisection found so far, as its answer shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Bisection {
    /// How the search ended; `None` while it goes on.
    pub finding: Option<Finding>,
    pub good: Commit,
    pub bad: Commit,
    /// The git tree.
    pub tree: String,
    /// Commits after GOOD, up to BAD.
    pub commits_after_good: usize,
    /// The point, as `--point` writes it.
    pub point: String,
    /// The suite's file, or that it is the default.
    pub suite: String,
    pub boots: u32,
    pub max_rounds: u32,
    /// The smallest regression bisected, as a fraction.
    pub threshold: f64,
    /// BAD against GOOD, once the search ended.
    pub confirmation: Option<Confirmation>,
    /// The first bad commit with its stat, when the search found one.
    pub first_bad: Option<FirstBad>,
    /// The point's unit (`s`, `packets/s`).
    pub unit: String,
    /// Every commit measured so far, in range order.
    pub measured: Vec<Measured>,
    /// The search's steps in the order taken, once it ended.
    pub order: Vec<Taken>,
    /// Every build the bisection needed.
    pub builds: Vec<BuildRow>,
    /// The run directory of the first bad commit against its parent with
    /// the profile plugin.
    pub profile: Option<PathBuf>,
}

/// How a bisection's search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// GOOD and BAD do not differ by the threshold (the confirmation says
    /// why not).
    NoRegression,
    FirstBad(Commit),
    /// The first bad commit is one of the `commits` after `good` up to
    /// `bad`, which could not be decided between.
    Range {
        commits: usize,
        good: Commit,
        bad: Commit,
    },
}

/// The answer in one line.
pub fn headline(b: &Bisection) -> String {
    let named = |c: &Commit| format!("{} ({})", c.short_id, c.subject);
    match &b.finding {
        None => "in progress".into(),
        Some(Finding::NoRegression) => format!(
            "no regression to bisect between {} and {}: {}",
            b.good.short_id,
            b.bad.short_id,
            b.confirmation
                .as_ref()
                .and_then(|c| c.why_not.clone())
                .unwrap_or_default()
        ),
        Some(Finding::FirstBad(commit)) => format!("first bad commit: {}", named(commit)),
        Some(Finding::Range { commits, good, bad }) => format!(
            "the first bad commit is one of the {commits} after {} up to {}; the commits between \
             could not be decided",
            good.short_id,
            named(bad)
        ),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    pub short_id: String,
    pub subject: String,
}

/// One commit's figures against another's, as a fraction and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relative {
    pub difference: f64,
    pub interval: Option<Interval>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Confirmation {
    pub bad_vs_good: Option<Relative>,
    pub verdict: Verdict,
    pub confirmed: bool,
    pub why_not: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FirstBad {
    pub short_id: String,
    pub subject: String,
    pub author: String,
    /// `git show --stat`.
    pub stat: String,
    /// A merge: the regression came with the branch it merged.
    pub merge: bool,
}

/// Where a measured commit stands in the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Good,
    Bad,
    /// A commit between them.
    Between,
}

/// One measured commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Its position in the range (0 is GOOD).
    pub index: usize,
    pub commit: Commit,
    pub end: End,
    /// Its class in words ("good", "bad", "undecided", "skipped (untestable)").
    pub class: &'static str,
    /// Classed bad.
    pub bad: bool,
    /// Skipped: it does not build or boot.
    pub skipped: bool,
    pub boots: usize,
    pub mean: Option<f64>,
    pub interval: Option<Interval>,
    pub vs_good: Option<Relative>,
    pub vs_bad: Option<Relative>,
    /// Why it was skipped.
    pub build_error: Option<String>,
}

/// One step of the search, in the order taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    pub short_id: String,
    /// Its class in words.
    pub class: &'static str,
    pub skipped: bool,
}

/// One commit's build.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildRow {
    pub short_id: String,
    pub build: Build,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Build {
    /// Built by this bisection (`seconds`) or found in the cache (`None`).
    Built {
        seconds: Option<f64>,
        source_files_rebuilt: Option<usize>,
    },
    /// It does not build: the build's output.
    Failed { error: String },
}

/// One step as it is decided, for the terminal.
pub fn step_line(m: &Measured, unit: &str) -> String {
    let figures = match (m.mean, &m.vs_good, &m.vs_bad) {
        (Some(mean), Some(g), Some(b)) => format!(
            "{} {unit}, {} against GOOD, {} against BAD, {} boots",
            number(mean, unit),
            relative(g),
            relative(b),
            m.boots
        ),
        _ => m
            .build_error
            .as_deref()
            .map_or(String::new(), |e| first_error(e).to_string()),
    };
    let class = match m.end {
        End::Good => "GOOD",
        End::Bad => "BAD",
        End::Between => m.class,
    };
    format!(
        "markbench: bisect: {} {}: {class} ({figures})",
        m.commit.short_id, m.commit.subject,
    )
}

/// What a bisection searches, before its first build: its directory, the
/// range of `commits_after_good` commits from `good` up to `bad` in
/// `tree`, the point and the threshold (a fraction).
pub fn started(
    dir: &Path,
    commits_after_good: usize,
    (good, bad): (&str, &str),
    tree: &Path,
    point: &str,
    threshold: f64,
) -> String {
    format!(
        "bisection directory: {}\nrange: {commits_after_good} commits after {good} up to {bad} \
         ({}); point {point}; threshold {:.2}%\n",
        dir.display(),
        tree.display(),
        100.0 * threshold
    )
}

/// Where the answer was written, and the bisection's time in all.
pub fn answered(written: &Path, seconds: f64) -> String {
    format!("answer: {}\n{seconds:.0} s in all\n", written.display())
}

/// The note that a round of `boots` boots (`what`: of which commit, for
/// what) starts in `dir`.
pub fn round_started(what: &str, boots: usize, dir: &Path) -> String {
    format!("{what}: {boots} boots in {}", dir.display())
}

/// The note that the commit `short_id` is skipped.
pub fn untestable(short_id: &str) -> String {
    format!("{short_id} cannot be measured: skipped")
}

/// The warning that the answer so far could not be written.
pub fn answer_not_written(error: &anyhow::Error) -> String {
    format!("writing the answer so far: {error:#}")
}

/// The warning that a directory the answer does not need stays.
pub fn not_removed(dir: &Path, error: &std::io::Error) -> String {
    format!("removing {}: {error}", dir.display())
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
pub fn summary(b: &Bisection) -> String {
    let mut s = format!("markbench: bisect: {}", headline(b));
    let skipped: Vec<&str> = b
        .order
        .iter()
        .filter(|t| t.skipped)
        .map(|t| t.short_id.as_str())
        .collect();
    if !skipped.is_empty() {
        let _ = write!(
            s,
            "\nmarkbench: bisect: skipped (untestable): {}",
            skipped.join(", ")
        );
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

/// What was bisected, in one sentence: the range, the point, the rules.
fn what_was_bisected(b: &Bisection, code: &dyn Fn(&str) -> String) -> String {
    format!(
        "GOOD {} ({}) to BAD {} ({}) in {}: {} commits after GOOD, on the first-parent \
         line. Point {} of suite {}, {} boots a round, at most {} rounds a commit; a \
         regression is bisected when BAD is significantly worse than GOOD by at least {:.2}%.",
        code(&b.good.short_id),
        b.good.subject,
        code(&b.bad.short_id),
        b.bad.subject,
        code(&b.tree),
        b.commits_after_good,
        code(&b.point),
        code(&b.suite),
        b.boots,
        b.max_rounds,
        100.0 * b.threshold
    )
}

/// BAD against GOOD, and whether that was a regression to bisect.
fn confirmation_sentence(c: &Confirmation) -> String {
    let (d, ci) = cell_relative(c.bad_vs_good.as_ref());
    format!(
        "BAD against GOOD: {d} (95% CI {ci}), {}{}.",
        c.verdict,
        if c.confirmed {
            ": bisected".to_string()
        } else {
            format!(": not bisected ({})", c.why_not.clone().unwrap_or_default())
        }
    )
}

/// "Steps, in the order taken", when there were any.
fn order_sentence(b: &Bisection, code: &dyn Fn(&str) -> String) -> Option<String> {
    let order: Vec<String> = b
        .order
        .iter()
        .map(|t| format!("{} {}", code(&t.short_id), t.class))
        .collect();
    (!order.is_empty()).then(|| format!("Steps, in the order taken: {}.", order.join(", ")))
}

fn unit_header(unit: &str) -> String {
    if unit.is_empty() {
        String::new()
    } else {
        format!(" [{unit}]")
    }
}

/// `bisect.md`: one section after the other.
pub fn markdown(b: &Bisection) -> String {
    let mut r = String::new();
    md_heading(&mut r, b);
    md_first_bad(&mut r, b);
    if let Some(c) = &b.confirmation {
        let _ = writeln!(r, "{}\n", confirmation_sentence(c));
    }
    md_commits(&mut r, b);
    md_builds(&mut r, b);
    if let Some(section) = b.profile.as_deref().and_then(profile_section) {
        r.push_str(&section);
    }
    r
}

fn md_heading(r: &mut String, b: &Bisection) {
    let _ = writeln!(r, "# Bisection: {}\n", escape_md(&headline(b)));
    let escaped = Bisection {
        good: Commit {
            short_id: b.good.short_id.clone(),
            subject: escape_md(&b.good.subject),
        },
        bad: Commit {
            short_id: b.bad.short_id.clone(),
            subject: escape_md(&b.bad.subject),
        },
        ..b.clone()
    };
    let code = |s: &str| format!("`{s}`");
    let _ = writeln!(r, "{}\n", what_was_bisected(&escaped, &code));
}

/// "First bad commit": the commit, its author and stat, and how to go on
/// when it is a merge.
fn md_first_bad(r: &mut String, b: &Bisection) {
    let Some(c) = &b.first_bad else {
        return;
    };
    let _ = writeln!(
        r,
        "## First bad commit\n\n**`{}` {}**, by {}\n\n```\n{}\n```\n",
        c.short_id,
        escape_md(&c.subject),
        escape_md(&c.author),
        c.stat.trim_end()
    );
    if c.merge {
        let _ = writeln!(
            r,
            "It is a merge: the regression came in with the branch it merged. Bisect that \
             branch with `--good $(git merge-base {0}^1 {0}^2) --bad {0}^2`.\n",
            c.short_id
        );
    }
}

/// "Commits measured": one row per commit, how a commit is classed, and
/// the steps in the order taken.
fn md_commits(r: &mut String, b: &Bisection) {
    let _ = writeln!(r, "## Commits measured\n");
    let unit = unit_header(&b.unit);
    let _ = writeln!(
        r,
        "| # | commit | subject | value{unit} | 95% CI | vs GOOD | 95% CI | vs BAD | 95% CI | \
         class | boots |\n|---:|---|---|---:|---|---:|---|---:|---|---|---:|"
    );
    for m in &b.measured {
        let (g, gci) = cell_relative(m.vs_good.as_ref());
        let (bd, bci) = cell_relative(m.vs_bad.as_ref());
        let class = match m.end {
            End::Good => "GOOD",
            End::Bad => "BAD",
            End::Between => m.class,
        };
        let class = if m.bad || m.end == End::Bad {
            format!("**{class}**")
        } else {
            class.to_string()
        };
        let _ = writeln!(
            r,
            "| {} | `{}` | {} | {} | {} | {g} | {gci} | {bd} | {bci} | {class} | {} |",
            m.index,
            m.commit.short_id,
            escape_md(&m.commit.subject),
            m.mean.map_or("–".into(), |v| number(v, &b.unit)),
            m.interval.map_or("–".into(), |ci| format!(
                "{} … {}",
                number(ci.lower, &b.unit),
                number(ci.upper, &b.unit)
            )),
            m.boots
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
    if let Some(order) = order_sentence(b, &|s| format!("`{s}`")) {
        let _ = writeln!(r, "{order}\n");
    }
}

/// "Builds": each kernel the bisection needed, built, from the cache or
/// untestable. Nothing when none was needed.
fn md_builds(r: &mut String, b: &Bisection) {
    if b.builds.is_empty() {
        return;
    }
    let _ = writeln!(
        r,
        "## Builds\n\n| commit | build | time [s] | source files rebuilt |\n|---|---|---:|---:|"
    );
    let mut built = 0;
    for row in &b.builds {
        match &row.build {
            Build::Built {
                seconds,
                source_files_rebuilt,
            } => {
                built += usize::from(seconds.is_some());
                let _ = writeln!(
                    r,
                    "| `{}` | {} | {} | {} |",
                    row.short_id,
                    if seconds.is_some() {
                        "built"
                    } else {
                        "from the cache"
                    },
                    seconds.map_or("–".into(), |s| format!("{s:.0}")),
                    source_files_rebuilt.map_or("–".into(), |n| n.to_string())
                );
            }
            Build::Failed { error } => {
                let _ = writeln!(
                    r,
                    "| `{}` | **untestable**: {} | – | – |",
                    row.short_id,
                    escape_md(first_error(error))
                );
            }
        }
    }
    let _ = writeln!(
        r,
        "\n{} kernels needed, {built} built by this bisection. Each commit's boots are run \
         directories under `commits/<id>/round-<n>/`.\n",
        b.builds.len()
    );
}

/// The "Where the difference goes" section of the profile run.
fn profile_section(run: &Path) -> Option<String> {
    let meta = RunMeta::read(run).ok()?;
    let views = super::profile::load(run, &meta).ok()?;
    let section = super::profile::section(views.first(), false);
    Some(format!(
        "{section}\n(The profile's run: `{}`.)\n",
        run.display()
    ))
}

/// `bisect.txt`: the answer, BAD against GOOD, the first bad commit's stat
/// and the commits measured.
pub fn text(b: &Bisection) -> String {
    let mut r = String::new();
    r.push_str(&plain::heading(&format!("Bisection: {}", headline(b)), '='));
    r.push('\n');
    r.push_str(&plain::wrap(&what_was_bisected(b, &|s| s.to_string()), ""));
    if let Some(c) = &b.confirmation {
        r.push('\n');
        r.push_str(&plain::wrap(&confirmation_sentence(c), ""));
    }
    txt_first_bad(&mut r, b);
    txt_commits(&mut r, b);
    if let Some(order) = order_sentence(b, &|s| s.to_string()) {
        r.push('\n');
        r.push_str(&plain::wrap(&order, ""));
    }
    r.push('\n');
    r.push_str(&plain::wrap(
        "A commit is bad when its whole 95% interval against GOOD lies beyond half the \
         regression (the geometric midpoint of GOOD's and BAD's means), good when it lies \
         wholly on GOOD's side; a commit that does not build or boot is skipped.",
        "",
    ));
    r
}

/// "First bad commit": the commit, its author and stat.
fn txt_first_bad(r: &mut String, b: &Bisection) {
    let Some(c) = &b.first_bad else {
        return;
    };
    r.push('\n');
    r.push_str(&plain::heading("First bad commit", '-'));
    r.push('\n');
    r.push_str(&plain::wrap(
        &format!("{} {}, by {}", c.short_id, c.subject, c.author),
        "",
    ));
    r.push('\n');
    for line in c.stat.trim_end().lines() {
        r.push_str(&plain::verbatim(line, "    "));
        r.push('\n');
    }
}

/// "Commits measured": a table of the commits (one paragraph a commit when
/// the table is too wide), then each commit's subject.
fn txt_commits(r: &mut String, b: &Bisection) {
    r.push('\n');
    r.push_str(&plain::heading("Commits measured", '-'));
    r.push('\n');
    let value_header = format!("value{}", unit_header(&b.unit));
    let rows: Vec<Vec<String>> = b
        .measured
        .iter()
        .map(|m| {
            let (g, gci) = cell_relative(m.vs_good.as_ref());
            let class = match m.end {
                End::Good => "GOOD",
                End::Bad => "BAD",
                End::Between if m.skipped => "skipped",
                End::Between => m.class,
            };
            vec![
                m.index.to_string(),
                m.commit.short_id.clone(),
                m.mean.map_or("-".into(), |v| number(v, &b.unit)),
                g,
                gci,
                class.to_string(),
                m.boots.to_string(),
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
    for m in &b.measured {
        r.push_str(&plain::wrap_hanging(
            &m.commit.subject,
            &format!("  {:>2} {}  ", m.index, m.commit.short_id),
            &" ".repeat(19),
        ));
    }
}
