//! The decisions of a bisection, free of builds and boots: whether GOOD and
//! BAD differ by a regression worth bisecting, whether a commit between them
//! is good or bad, and which commit to measure next. The search asks for
//! measurements through a closure, so the same code runs on real boots, on
//! a run directory's stored measurements (resume) and on made-up figures
//! (the unit tests).

use crate::base::stats::{self, AnalysisConfig, Interval, PointAnalysis, PointInput, Verdict};
use serde::{Deserialize, Serialize};

/// A commit's figures at the bisected point: one list of values per boot.
pub type Boots = Vec<Vec<f64>>;

/// What measuring a commit gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    /// Its boots so far (every round asked for, in order).
    Boots(Boots),
    /// It cannot be measured (it does not build, or no boot of it
    /// completed); the reason, for the answer.
    Untestable(String),
}

/// The knobs of the decisions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rules {
    /// The smallest regression worth bisecting, as a fraction (0.01 = 1%).
    pub threshold: f64,
    /// Rounds of boots a commit may get before it is left undecided.
    pub max_rounds: u32,
    /// Whether a larger value is better (packets/s) or worse (seconds).
    pub higher_is_better: bool,
}

/// One commit's figures against another's: `mean(of) / mean(against) − 1`
/// and its 95% interval (the t interval of the log ratio of boot means,
/// as the reports give it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Relative {
    pub difference: f64,
    pub interval: Option<Interval>,
    /// Welch's two-sided p-value on the boot means.
    pub p_value: Option<f64>,
}

/// The analysis of `of` against `against` (A = against, B = of).
fn analyse(against: &Boots, of: &Boots, higher_is_better: bool) -> Option<PointAnalysis> {
    let cfg = AnalysisConfig {
        resamples: 0,
        ..AnalysisConfig::default()
    };
    let point = PointInput {
        a: against,
        b: of,
        higher_is_better,
    };
    stats::analyze_sweep(&[point], &cfg).ok()?.pop()
}

/// `of` against `against`, or `None` when either has no value.
pub fn relative(against: &Boots, of: &Boots, higher_is_better: bool) -> Option<Relative> {
    let a = analyse(against, of, higher_is_better)?;
    Some(Relative {
        difference: a.relative_difference?,
        interval: a.relative_difference_ci,
        p_value: a.p_value(),
    })
}

/// Whether BAD is a regression from GOOD worth bisecting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// BAD against GOOD.
    pub bad_vs_good: Option<Relative>,
    pub verdict: Verdict,
    /// Significant, in the worse direction, and at least the threshold.
    pub confirmed: bool,
    /// Why not, in words, when it is not.
    pub why_not: Option<String>,
}

/// How much worse `difference` is, as a positive fraction when worse.
fn worse_by(difference: f64, higher_is_better: bool) -> f64 {
    if higher_is_better {
        -difference
    } else {
        difference
    }
}

/// Confirms (or not) that BAD regressed from GOOD by at least the threshold.
pub fn confirm(good: &Boots, bad: &Boots, rules: &Rules) -> Confirmation {
    let analysis = analyse(good, bad, rules.higher_is_better);
    let verdict = analysis
        .as_ref()
        .map_or(Verdict::InsufficientData, |a| a.verdict);
    let bad_vs_good = relative(good, bad, rules.higher_is_better);
    let size = bad_vs_good.map(|r| worse_by(r.difference, rules.higher_is_better));
    let why_not = match (verdict, size) {
        (Verdict::Regression, Some(s)) if s >= rules.threshold => None,
        (Verdict::Regression, Some(s)) => Some(format!(
            "BAD is significantly worse than GOOD, but by {:.2}%, less than the threshold of {:.2}%",
            100.0 * s,
            100.0 * rules.threshold
        )),
        (Verdict::InsufficientData, _) => Some(
            "too few boots to test a difference (a commit needs at least two boots)".into(),
        ),
        (v, _) => Some(format!("BAD against GOOD is {v}, not a regression")),
    };
    Confirmation {
        bad_vs_good,
        verdict,
        confirmed: why_not.is_none(),
        why_not,
    }
}

/// Where a measured commit stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Good,
    Bad,
    /// Its interval still straddles the line after every round it may have.
    Undecided,
    /// It cannot be measured: it does not build, or does not boot.
    Skipped,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Good => "good",
            Class::Bad => "bad",
            Class::Undecided => "undecided",
            Class::Skipped => "skipped (untestable)",
        }
    }
}

/// The line between good and bad: half the regression, on the ratio's
/// log scale (the geometric midpoint of GOOD's and BAD's means), as a
/// difference from GOOD.
pub fn halfway(bad_vs_good: f64) -> f64 {
    (1.0 + bad_vs_good).sqrt() - 1.0
}

/// Classifies a commit by its interval against GOOD: bad when the whole
/// interval lies beyond the halfway line towards BAD, good when it lies
/// wholly on GOOD's side, undecided when it straddles the line (or there is
/// no interval yet).
pub fn classify(vs_good: Option<&Relative>, bad_vs_good: f64) -> Class {
    let Some(interval) = vs_good.and_then(|r| r.interval) else {
        return Class::Undecided;
    };
    let line = halfway(bad_vs_good);
    let (near_bad, near_good) = if bad_vs_good > 0.0 {
        (interval.lower > line, interval.upper < line)
    } else {
        (interval.upper < line, interval.lower > line)
    };
    if near_bad {
        Class::Bad
    } else if near_good {
        Class::Good
    } else {
        Class::Undecided
    }
}

/// One measured commit, as the answer lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Its position in the range (0 is GOOD, the last is BAD).
    pub index: usize,
    pub class: Class,
    /// Rounds of boots it took (0 for a commit that does not build).
    pub rounds: u32,
    pub boots: usize,
    /// The mean of its values and the mean's 95% interval over boots.
    pub mean: Option<f64>,
    pub interval: Option<Interval>,
    pub vs_good: Option<Relative>,
    pub vs_bad: Option<Relative>,
    /// Why it was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_error: Option<String>,
}

/// How a bisection ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ending {
    /// GOOD and BAD do not differ by a regression: nothing to bisect.
    NoRegression,
    /// The first bad commit: the one after the last good one.
    FirstBad { index: usize },
    /// The first bad commit lies after `good` and at or before `bad`, but
    /// the commits between could not be decided (skipped or undecided).
    Range { good: usize, bad: usize },
}

/// The bisection's record: GOOD's and BAD's confirmation, every step in
/// the order it was taken, and the ending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub confirmation: Confirmation,
    /// GOOD's and BAD's own figures, as steps.
    pub ends: Vec<Step>,
    pub steps: Vec<Step>,
    pub ending: Ending,
}

/// The mean of a commit's values and its 95% interval over boots.
fn mean_of(boots: &Boots) -> (Option<f64>, Option<Interval>) {
    let measured: Boots = boots.iter().filter(|b| !b.is_empty()).cloned().collect();
    match stats::summarize(&measured) {
        Ok(s) if !measured.is_empty() => (Some(s.mean), s.mean_ci.map(|ci| ci.interval)),
        _ => (None, None),
    }
}

/// A commit measured for `rounds` rounds, as a step.
fn step(
    index: usize,
    class: Class,
    rounds: u32,
    boots: &Boots,
    ends: &Ends,
    rules: &Rules,
) -> Step {
    let (mean, interval) = mean_of(boots);
    Step {
        index,
        class,
        rounds,
        boots: boots.iter().filter(|b| !b.is_empty()).count(),
        mean,
        interval,
        vs_good: relative(&ends.good, boots, rules.higher_is_better),
        vs_bad: relative(&ends.bad, boots, rules.higher_is_better),
        build_error: None,
    }
}

/// GOOD's and BAD's figures.
struct Ends {
    good: Boots,
    bad: Boots,
}

/// The commit to measure next between `good` and `bad` (exclusive): the one
/// nearest the middle that is not known to fail to build, the earlier of
/// two as near.
pub fn next(good: usize, bad: usize, skipped: &[usize]) -> Option<usize> {
    let middle = (good + bad) as f64 / 2.0;
    ((good + 1)..bad)
        .filter(|i| !skipped.contains(i))
        .min_by(|a, b| {
            (*a as f64 - middle)
                .abs()
                .total_cmp(&(*b as f64 - middle).abs())
                .then(a.cmp(b))
        })
}

/// Bisects the range `0..=last` (0 is GOOD, `last` is BAD). `measure(i,
/// rounds)` gives commit `i`'s figures over its first `rounds` rounds of
/// boots (or that it does not build); `observe` sees GOOD and BAD once
/// both are measured, then each step as it is decided. GOOD and BAD get one round each: the confirmation is made on
/// them as the suite sizes it.
pub fn bisect<E>(
    last: usize,
    rules: &Rules,
    measure: &mut dyn FnMut(usize, u32) -> Result<Measured, E>,
    observe: &mut dyn FnMut(&Step),
) -> Result<Search, E> {
    let boots_of = |m: Measured| match m {
        Measured::Boots(b) => b,
        Measured::Untestable(_) => Vec::new(),
    };
    let ends = Ends {
        good: boots_of(measure(0, 1)?),
        bad: boots_of(measure(last, 1)?),
    };
    let confirmation = confirm(&ends.good, &ends.bad, rules);
    let mut steps = Vec::new();
    let verdict = confirmation.confirmed;
    let end_steps = vec![
        step(0, Class::Good, 1, &ends.good, &ends, rules),
        step(
            last,
            if verdict {
                Class::Bad
            } else {
                Class::Undecided
            },
            1,
            &ends.bad,
            &ends,
            rules,
        ),
    ];
    for end in &end_steps {
        observe(end);
    }
    let Some(bad_vs_good) = confirmation
        .confirmed
        .then(|| confirmation.bad_vs_good.map(|r| r.difference))
        .flatten()
    else {
        return Ok(Search {
            confirmation,
            ends: end_steps,
            steps,
            ending: Ending::NoRegression,
        });
    };
    let (mut good, mut bad) = (0, last);
    let mut skipped = Vec::new();
    while let Some(index) = next(good, bad, &skipped) {
        let mut rounds = 1;
        let taken = loop {
            match measure(index, rounds)? {
                Measured::Untestable(why) => {
                    let mut s = step(index, Class::Skipped, 0, &Vec::new(), &ends, rules);
                    s.build_error = Some(why);
                    break s;
                }
                Measured::Boots(boots) => {
                    let vs_good = relative(&ends.good, &boots, rules.higher_is_better);
                    let class = classify(vs_good.as_ref(), bad_vs_good);
                    if class != Class::Undecided || rounds >= rules.max_rounds {
                        break step(index, class, rounds, &boots, &ends, rules);
                    }
                    rounds += 1;
                }
            }
        };
        observe(&taken);
        let class = taken.class;
        steps.push(taken);
        match class {
            Class::Good => good = index,
            Class::Bad => bad = index,
            Class::Skipped => skipped.push(index),
            Class::Undecided => break,
        }
    }
    let ending = if bad == good + 1 {
        Ending::FirstBad { index: bad }
    } else {
        Ending::Range { good, bad }
    };
    Ok(Search {
        confirmation,
        ends: end_steps,
        steps,
        ending,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const RULES: Rules = Rules {
        threshold: 0.01,
        max_rounds: 3,
        higher_is_better: false,
    };

    /// Four boots of ten values around `mean`, with a little noise that
    /// differs by boot and round (as icount boots with other seeds do).
    fn round(mean: f64, round: u32) -> Boots {
        (0..4)
            .map(|b| {
                (0..10)
                    .map(|i| {
                        let wobble = ((b * 7 + i * 3 + round as usize * 5) % 11) as f64 - 5.0;
                        mean * (1.0 + 0.001 * wobble)
                    })
                    .collect()
            })
            .collect()
    }

    /// A fake measurement: commit `i` has mean `means[i]` (None: does not
    /// build), and every call is counted.
    struct Fake {
        means: Vec<Option<f64>>,
        /// Commits whose every round straddles the line: one boot like
        /// GOOD's and one like BAD's.
        straddling: Vec<usize>,
        calls: BTreeMap<usize, u32>,
    }

    impl Fake {
        fn new(means: &[Option<f64>]) -> Fake {
            Fake {
                means: means.to_vec(),
                straddling: Vec::new(),
                calls: BTreeMap::new(),
            }
        }
        fn measure(&mut self, i: usize, rounds: u32) -> Result<Measured, ()> {
            *self.calls.entry(i).or_default() = rounds;
            let Some(mean) = self.means[i] else {
                return Ok(Measured::Untestable("error: expected ';'".into()));
            };
            let mut boots = Vec::new();
            for r in 1..=rounds {
                if self.straddling.contains(&i) {
                    let last = self.means.len() - 1;
                    for end in [0, last] {
                        boots.extend(round(self.means[end].unwrap(), r).into_iter().take(1));
                    }
                } else {
                    boots.extend(round(mean, r));
                }
            }
            Ok(Measured::Boots(boots))
        }
        fn run(&mut self) -> Search {
            let last = self.means.len() - 1;
            bisect(last, &RULES, &mut |i, r| self.measure(i, r), &mut |_| {}).unwrap()
        }
    }

    /// GOOD, eight commits, the sixth (index 6) 5% slower.
    fn range() -> Vec<Option<f64>> {
        (0..=8)
            .map(|i| Some(if i >= 6 { 2.1 } else { 2.0 }))
            .collect()
    }

    #[test]
    fn a_clear_step_is_found_in_log2_measurements() {
        let mut fake = Fake::new(&range());
        let search = fake.run();
        assert!(search.confirmation.confirmed, "{search:?}");
        assert_eq!(search.ending, Ending::FirstBad { index: 6 });
        // GOOD, BAD and ⌈log₂ 8⌉ = 3 commits between, one round each.
        assert_eq!(fake.calls.len(), 5, "{:?}", fake.calls);
        assert!(fake.calls.values().all(|&r| r == 1));
        for s in &search.steps {
            assert_eq!(
                s.class,
                if s.index >= 6 {
                    Class::Bad
                } else {
                    Class::Good
                }
            );
        }
    }

    #[test]
    fn a_commit_that_does_not_build_is_skipped_and_its_neighbour_measured() {
        let mut means = range();
        means[4] = None;
        let mut fake = Fake::new(&means);
        let search = fake.run();
        assert_eq!(search.ending, Ending::FirstBad { index: 6 });
        let skipped: Vec<_> = search
            .steps
            .iter()
            .filter(|s| s.class == Class::Skipped)
            .map(|s| s.index)
            .collect();
        assert_eq!(skipped, [4]);
        assert!(search.steps[0]
            .build_error
            .as_deref()
            .unwrap()
            .contains("expected"));
        // The neighbour nearest the middle came next.
        assert_eq!(search.steps[1].index, 3);
    }

    #[test]
    fn a_skipped_commit_next_to_the_answer_leaves_a_range() {
        let mut means = range();
        means[5] = None;
        let search = Fake::new(&means).run();
        assert_eq!(search.ending, Ending::Range { good: 4, bad: 6 });
    }

    #[test]
    fn an_undecidable_commit_gets_more_rounds_then_stops_with_the_narrowest_range() {
        let mut fake = Fake::new(&range());
        fake.straddling = vec![4];
        let search = fake.run();
        let undecided = search.steps.iter().find(|s| s.index == 4).unwrap();
        assert_eq!(undecided.class, Class::Undecided);
        assert_eq!(undecided.rounds, RULES.max_rounds);
        assert_eq!(fake.calls[&4], RULES.max_rounds);
        assert_eq!(search.ending, Ending::Range { good: 0, bad: 8 });
    }

    #[test]
    fn a_range_without_a_regression_is_not_bisected() {
        let means: Vec<_> = (0..=8).map(|_| Some(2.0)).collect();
        let mut fake = Fake::new(&means);
        let search = fake.run();
        assert_eq!(search.ending, Ending::NoRegression);
        assert!(!search.confirmation.confirmed);
        assert!(search.confirmation.why_not.is_some());
        assert_eq!(fake.calls.keys().copied().collect::<Vec<_>>(), [0, 8]);
    }

    #[test]
    fn a_regression_below_the_threshold_is_not_bisected() {
        let means: Vec<_> = (0..=8)
            .map(|i| Some(if i == 8 { 2.008 } else { 2.0 }))
            .collect();
        let search = Fake::new(&means).run();
        assert_eq!(search.confirmation.verdict, Verdict::Regression);
        assert!(search.confirmation.why_not.unwrap().contains("threshold"));
        assert_eq!(search.ending, Ending::NoRegression);
    }

    #[test]
    fn an_improvement_is_not_a_regression_but_a_throughput_drop_is() {
        let faster: Vec<_> = (0..=4)
            .map(|i| Some(if i >= 2 { 1.9 } else { 2.0 }))
            .collect();
        assert_eq!(Fake::new(&faster).run().ending, Ending::NoRegression);
        let rules = Rules {
            higher_is_better: true,
            ..RULES
        };
        let mut fake = Fake::new(&faster);
        let search = bisect(4, &rules, &mut |i, r| fake.measure(i, r), &mut |_| {}).unwrap();
        assert_eq!(search.ending, Ending::FirstBad { index: 2 });
    }

    #[test]
    fn resuming_from_stored_measurements_takes_the_same_steps_and_measures_only_the_rest() {
        let means = range();
        let whole = Fake::new(&means).run();
        // Killed during the third commit between: the stored measurements
        // are those finished before it.
        let mut first = Fake::new(&means);
        let mut seen = 0;
        let killed = bisect(
            8,
            &RULES,
            &mut |i, r| {
                if ![0, 8].contains(&i) {
                    seen += 1;
                    if seen == 3 {
                        return Err(());
                    }
                }
                first.measure(i, r)
            },
            &mut |_| {},
        );
        assert!(killed.is_err());
        let stored = first.calls.clone();
        let mut second = Fake::new(&means);
        let mut fresh = Vec::new();
        let resumed = bisect(
            8,
            &RULES,
            &mut |i, r| {
                if stored.get(&i).is_none_or(|&done| r > done) {
                    fresh.push(i);
                }
                second.measure(i, r)
            },
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(resumed, whole);
        assert_eq!(fresh.len(), 1, "measured again: {fresh:?}");
    }

    #[test]
    fn the_next_commit_is_the_middle_one_avoiding_skipped_ones() {
        assert_eq!(next(0, 8, &[]), Some(4));
        assert_eq!(next(0, 8, &[4]), Some(3));
        assert_eq!(next(0, 8, &[4, 3]), Some(5));
        assert_eq!(next(3, 4, &[]), None);
        assert_eq!(next(3, 5, &[4]), None);
    }

    #[test]
    fn the_line_is_the_geometric_midpoint() {
        assert!((halfway(0.21) - 0.1).abs() < 1e-12);
        let ci = |lower, upper| Relative {
            difference: (lower + upper) / 2.0,
            interval: Some(Interval {
                lower,
                upper,
                level: 0.95,
            }),
            p_value: None,
        };
        assert_eq!(classify(Some(&ci(0.15, 0.25)), 0.21), Class::Bad);
        assert_eq!(classify(Some(&ci(-0.01, 0.02)), 0.21), Class::Good);
        assert_eq!(classify(Some(&ci(0.05, 0.15)), 0.21), Class::Undecided);
        assert_eq!(classify(Some(&ci(-0.15, -0.12)), -0.19), Class::Bad);
        assert_eq!(classify(None, 0.21), Class::Undecided);
    }
}
