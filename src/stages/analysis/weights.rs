//! Whether a verdict on the cycle model's estimate rests on its weights:
//! every estimated-cycles point recomputed, sample by sample, from the
//! counts the run kept under a second set of costs
//! ([`crate::base::cycle_model::SECOND_WEIGHTS`]), analysed as the run is
//! (the same family for the correction, the same tests), and its verdicts
//! set beside the run's own.

use super::sweep::{analyse_with_config, Analysis};
use super::table::TableKey;
use crate::base::cycle_model::CycleModel;
use crate::base::stats::{AnalysisConfig, Verdict};
use crate::record::{RunMeta, Sample};
use std::collections::BTreeMap;

/// The point every estimate is, alone or after a part's prefix
/// (`memcpy/dormant/estimated-cycles`).
const ESTIMATE: &str = "estimated-cycles";

/// The prefix of an estimated-cycles metric (`""`, `memcpy/dormant/`), or
/// `None` for any other metric.
fn estimate_prefix(metric: &str) -> Option<&str> {
    let prefix = metric.strip_suffix(ESTIMATE)?;
    (prefix.is_empty() || prefix.ends_with('/')).then_some(prefix)
}

/// One timed run's points, or one part's: what identifies a sample but its
/// metric, and the part's prefix.
type RunKey = (String, String, u64, u32, String, u32, u32, bool, String);

fn run_key(s: &Sample, prefix: &str) -> RunKey {
    (
        s.suite.clone(),
        s.workload.clone(),
        s.param,
        s.cpus,
        s.variant.clone(),
        s.boot,
        s.iteration,
        s.warmup,
        prefix.to_string(),
    )
}

/// `samples` with each estimated-cycles value recomputed under `weights`
/// from the same run's (or part's) other model points; an estimate whose
/// counts are not all there keeps its value.
pub fn reweighted(samples: &[Sample], weights: &CycleModel) -> Vec<Sample> {
    let mut points: BTreeMap<RunKey, BTreeMap<&str, f64>> = BTreeMap::new();
    for s in samples {
        let (prefix, name) = match s.metric.rsplit_once('/') {
            Some((part, name)) => (format!("{part}/"), name),
            None => (String::new(), s.metric.as_str()),
        };
        if crate::base::cycle_model::is_model_metric(name) {
            points
                .entry(run_key(s, &prefix))
                .or_default()
                .insert(name, s.value);
        }
    }
    samples
        .iter()
        .map(|s| {
            let estimate = estimate_prefix(&s.metric)
                .and_then(|prefix| points.get(&run_key(s, prefix)))
                .and_then(|run| weights.estimate(|name| run.get(name).copied()));
            match estimate {
                Some(value) => Sample { value, ..s.clone() },
                None => s.clone(),
            }
        })
        .collect()
}

/// A verdict on an estimate that the second weights turn into another.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightSensitive {
    /// Index into the analysis' results: its comparisons, then its steps.
    pub result: usize,
    pub key: TableKey,
    pub param: u64,
    pub verdict: Verdict,
    pub second: Verdict,
}

/// The estimates' verdicts under the second weights, beside the run's.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WeightCheck {
    /// How many verdicts on an estimate there are.
    pub verdicts: usize,
    /// Those the second weights change.
    pub sensitive: Vec<WeightSensitive>,
    /// The second weights in words, with those of the parts the run's
    /// model had.
    pub weights_text: String,
}

impl WeightCheck {
    /// The verdict under the second weights at point `param` of a table in
    /// result `result`, where it differs from the run's.
    pub fn second(&self, result: usize, key: &TableKey, param: u64) -> Option<Verdict> {
        self.sensitive
            .iter()
            .find(|w| w.result == result && w.key == *key && w.param == param)
            .map(|w| w.second)
    }
}

/// The run's estimated-cycles verdicts (in `analysis`, made from
/// `samples` measured on `hosts`) against the same analysis of the
/// estimates recomputed under `model`'s second weights. Neither the
/// bootstrap nor anything else a verdict is not made of is computed again.
pub fn check(
    meta: &RunMeta,
    samples: &[Sample],
    hosts: &[String],
    analysis: &Analysis,
    model: &CycleModel,
) -> WeightCheck {
    let second_samples = reweighted(samples, &model.second_weights());
    let second_config = AnalysisConfig {
        resamples: 0,
        ..analysis.config.clone()
    };
    let second = analyse_with_config(meta, &second_samples, hosts, second_config);
    let (Ok(first), Ok(other)) = (&analysis.results, &second.results) else {
        return WeightCheck::default();
    };
    let mut out = WeightCheck {
        weights_text: format!(
            "{}{}",
            CycleModel::second_weights_text(),
            model.second_weights_parts_text()
        ),
        ..WeightCheck::default()
    };
    for (result, (first, other)) in first.iter().zip(other).enumerate() {
        for (key, analyses) in first {
            if estimate_prefix(&key.metric).is_none() {
                continue;
            }
            let (Some(points), Some(others)) = (analysis.tables.get(key), other.get(key)) else {
                continue;
            };
            for ((point, a), b) in points.iter().zip(analyses).zip(others) {
                out.verdicts += 1;
                if a.verdict != b.verdict {
                    out.sensitive.push(WeightSensitive {
                        result,
                        key: key.clone(),
                        param: point.param,
                        verdict: a.verdict,
                        second: b.verdict,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::KernelMeta;

    /// Four boots of three runs a side; each run's instructions and
    /// accesses to memory (misses of every level) as given per side, with
    /// a small wobble, and the estimate as the plugin gives it.
    fn run(sides: [(f64, f64); 2]) -> (RunMeta, Vec<Sample>) {
        let model = CycleModel::default();
        let meta = RunMeta {
            kernels: ["off", "on"]
                .iter()
                .map(|n| KernelMeta {
                    variant: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            seed: 1,
            ..Default::default()
        };
        let mut samples = Vec::new();
        for (variant, (instructions, memory)) in ["off", "on"].iter().zip(sides) {
            for boot in 0..4u32 {
                for iteration in 0..3u32 {
                    let wobble = 1.0 + 0.002 * ((boot * 3 + iteration) % 4) as f64;
                    let (i, m) = ((instructions * wobble).round(), (memory * wobble).round());
                    let points = [
                        ("instructions", i),
                        ("l1i-misses", 0.0),
                        ("l1d-misses", m),
                        ("l2-misses", m),
                        ("llc-misses", m),
                        ("coherence-misses", 0.0),
                        ("branch-mispredicts", 0.0),
                    ];
                    let by_name: BTreeMap<&str, f64> = points.into();
                    let estimate = model.estimate(|n| by_name.get(n).copied()).unwrap();
                    for (metric, value) in
                        points.into_iter().chain([("estimated-cycles", estimate)])
                    {
                        samples.push(Sample {
                            suite: "t".into(),
                            workload: "hackbench".into(),
                            metric: metric.into(),
                            unit: "misses".into(),
                            higher_is_better: false,
                            param: 4,
                            cpus: 1,
                            variant: variant.to_string(),
                            boot,
                            iteration,
                            warmup: false,
                            value,
                            started_at: String::new(),
                        });
                    }
                }
            }
        }
        (meta, samples)
    }

    fn checked(sides: [(f64, f64); 2]) -> WeightCheck {
        let (meta, samples) = run(sides);
        let hosts = vec![String::new(); samples.len()];
        let analysis = crate::stages::analysis::analyse(&meta, &samples);
        check(&meta, &samples, &hosts, &analysis, &CycleModel::default())
    }

    #[test]
    fn the_estimates_are_recomputed_from_their_own_runs_counts_and_nothing_else_moves() {
        let (_, samples) = run([(100_000.0, 100.0), (90_000.0, 200.0)]);
        let second = CycleModel::default().second_weights();
        let out = reweighted(&samples, &second);
        assert_eq!(out.len(), samples.len());
        for (before, after) in samples.iter().zip(&out) {
            if before.metric != ESTIMATE {
                assert_eq!(before, after);
                continue;
            }
            let count = |name: &str| {
                samples
                    .iter()
                    .find(|s| {
                        s.metric == name
                            && (&s.variant, s.boot, s.iteration)
                                == (&before.variant, before.boot, before.iteration)
                    })
                    .unwrap()
                    .value
            };
            assert_eq!(
                after.value,
                count("instructions") + 35.0 * count("llc-misses")
            );
        }
        // With the model's own weights the plugin's estimates come back.
        assert_eq!(reweighted(&samples, &CycleModel::default()), samples);
        assert_eq!(
            estimate_prefix("memcpy/dormant/estimated-cycles"),
            Some("memcpy/dormant/")
        );
        assert_eq!(estimate_prefix("not-estimated-cycles"), None);
    }

    #[test]
    fn a_verdict_that_the_second_weights_turn_is_found_and_one_they_keep_is_not() {
        // Fewer instructions, more accesses to memory: dearer at 200 cycles
        // an access, cheaper at 35.
        let flips = checked([(100_000.0, 100.0), (90_000.0, 200.0)]);
        assert_eq!(flips.verdicts, 1);
        let [w] = &flips.sensitive[..] else {
            panic!("{flips:?}")
        };
        assert_eq!(
            (w.verdict, w.second),
            (Verdict::Regression, Verdict::Improvement)
        );
        assert_eq!(flips.second(0, &w.key, 4), Some(Verdict::Improvement));
        // More of both: a regression at any price.
        let keeps = checked([(100_000.0, 100.0), (110_000.0, 200.0)]);
        assert_eq!((keeps.verdicts, keeps.sensitive.len()), (1, 0));
    }
}
