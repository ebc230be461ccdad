//! The bisection's answer: `bisect.json` for scripts, and the facts that
//! `bisect.md` (for a person) and `bisect.txt` (for a mail) are rendered
//! from (`report::bisect`), written after every step (what is known so
//! far) and at the end.

use super::decide::{Class, Ending, Relative, Search, Step};
use super::{Build, Plan};
use crate::base::error::{Context, Result};
use crate::stages::report::bisect::{self as shown, markdown, text, Bisection};
use serde::{Deserialize, Serialize};
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
}

impl Answer {
    /// The answer's facts, as the report renders them (`report::bisect`).
    pub fn facts(&self) -> Bisection {
        let plan = &self.plan;
        let commits = &plan.commits;
        let last = commits.len() - 1;
        let commit = |i: usize| shown::CommitLabel {
            short_id: commits[i].short_id().to_string(),
            subject: commits[i].subject.clone(),
        };
        let first_bad = match (
            self.search.as_ref().map(|s| &s.ending),
            &self.first_bad_stat,
        ) {
            (Some(Ending::FirstBad { index }), Some(stat)) => {
                let c = &commits[*index];
                Some(shown::FirstBad {
                    short_id: c.short_id().to_string(),
                    subject: c.subject.clone(),
                    author: c.author.clone(),
                    stat: stat.clone(),
                    merge: c.merge,
                })
            }
            _ => None,
        };
        let finding = self.search.as_ref().map(|s| match &s.ending {
            Ending::NoRegression => shown::Finding::NoRegression,
            Ending::FirstBad { index } => shown::Finding::FirstBad(commit(*index)),
            Ending::Range { good, bad } => shown::Finding::Range {
                commits: bad - good,
                good: commit(*good),
                bad: commit(*bad),
            },
        });
        Bisection {
            finding,
            good: commit(0),
            bad: commit(last),
            tree: plan.tree.display().to_string(),
            commits_after_good: last,
            point: plan.point.to_string(),
            suite: plan
                .suite
                .as_deref()
                .map_or("quick (the default)".into(), |p| p.display().to_string()),
            boots: plan.boots,
            max_rounds: plan.max_rounds,
            threshold: plan.threshold,
            confirmation: self.search.as_ref().map(|s| shown::Confirmation {
                bad_vs_good: s.confirmation.bad_vs_good.as_ref().map(relative),
                verdict: s.confirmation.verdict,
                confirmed: s.confirmation.confirmed,
                why_not: s.confirmation.why_not.clone(),
            }),
            first_bad,
            unit: self.unit.clone(),
            measured: measured_steps(self)
                .into_iter()
                .map(|s| measured(plan, s))
                .collect(),
            order: self
                .search
                .as_ref()
                .map(|search| {
                    search
                        .steps
                        .iter()
                        .map(|s| shown::Taken {
                            short_id: commits[s.index].short_id().to_string(),
                            class: s.class.as_str(),
                            skipped: s.class == Class::Skipped,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            builds: self
                .builds
                .iter()
                .map(|(index, b)| shown::BuildRow {
                    short_id: commits[*index].short_id().to_string(),
                    build: match b {
                        BuildOutcome::Built(b) => shown::Build::Built {
                            seconds: b.seconds,
                            source_files_rebuilt: b.source_files_rebuilt,
                        },
                        BuildOutcome::Failed { error } => shown::Build::Failed {
                            error: error.clone(),
                        },
                    },
                })
                .collect(),
            profile: self.profile.clone(),
        }
    }
}

/// One measured commit's facts, as the answer and the terminal show it.
pub fn measured(plan: &Plan, step: &Step) -> shown::MeasuredCommit {
    let c = &plan.commits[step.index];
    shown::MeasuredCommit {
        index: step.index,
        commit: shown::CommitLabel {
            short_id: c.short_id().to_string(),
            subject: c.subject.clone(),
        },
        end: match step.index {
            0 => shown::End::Good,
            i if i == plan.commits.len() - 1 => shown::End::Bad,
            _ => shown::End::Between,
        },
        class: step.class.as_str(),
        bad: step.class == Class::Bad,
        skipped: step.class == Class::Skipped,
        boots: step.boots,
        mean: step.mean,
        interval: step.interval,
        vs_good: step.vs_good.as_ref().map(relative),
        vs_bad: step.vs_bad.as_ref().map(relative),
        build_error: step.build_error.clone(),
    }
}

fn relative(r: &Relative) -> shown::Relative {
    shown::Relative {
        difference: r.difference,
        interval: r.interval,
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
    let facts = answer.facts();
    std::fs::write(&md, markdown(&facts)).with_context(|| format!("writing {}", md.display()))?;
    let txt = dir.join("bisect.txt");
    std::fs::write(&txt, text(&facts)).with_context(|| format!("writing {}", txt.display()))?;
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
            point: crate::jobs::bisect::point::PointSpec::parse("hackbench/time@1=2").unwrap(),
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
        insta::assert_snapshot!(markdown(&answer.facts()));
        let mut unconfirmed = self::answer();
        if let Some(search) = &mut unconfirmed.search {
            search.confirmation.confirmed = false;
            search.confirmation.why_not = Some("BAD is not worse than GOOD".into());
            search.ending = Ending::NoRegression;
            search.steps.clear();
        }
        unconfirmed.first_bad_stat = None;
        insta::assert_snapshot!("bisect_md_of_no_regression", markdown(&unconfirmed.facts()));
        insta::assert_snapshot!("bisect_txt_shows_every_section", text(&answer.facts()));
        insta::assert_snapshot!("bisect_txt_of_no_regression", text(&unconfirmed.facts()));
    }

    #[test]
    fn bisect_txt_gives_the_answer_the_commits_and_the_stat_within_72_columns() {
        let text = text(&answer().facts());
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

    #[test]
    fn the_terminal_lines_name_each_commit_its_class_and_figures() {
        use crate::stages::report::bisect::{step_line, summary};
        let mut answer = answer();
        let mut good = step(1, Class::Good, 2.171, -0.001);
        good.vs_bad = Some(relative(-0.15));
        assert_eq!(
            step_line(&measured(&answer.plan, &good), "s"),
            "markbench: bisect: 222222222222 sched: comment schedule(): good (2.171 s, \
             -0.10% (-0.60% … +0.40%) against GOOD, -15.00% (-15.50% … -14.50%) against BAD, \
             4 boots)"
        );
        let skipped = Step {
            class: Class::Skipped,
            mean: None,
            build_error: Some("make: Entering\nsched.c:1: error: oops\n".into()),
            ..step(1, Class::Skipped, 0.0, 0.0)
        };
        assert_eq!(
            step_line(&measured(&answer.plan, &skipped), "s"),
            "markbench: bisect: 222222222222 sched: comment schedule(): skipped (untestable) \
             (sched.c:1: error: oops)"
        );
        assert_eq!(
            summary(&answer.facts()),
            "markbench: bisect: first bad commit: 333333333333 (af_unix: spin in \
             unix_stream_sendmsg and more and more and more and more and more and more and \
             more and more )"
        );
        if let Some(search) = &mut answer.search {
            search.steps = vec![skipped];
        }
        assert!(summary(&answer.facts())
            .ends_with("\nmarkbench: bisect: skipped (untestable): 222222222222"));
    }
}
