//! The figures of `markbench noise-floor` (`commands::noise_floor`): how
//! finely a timing mode resolves a kernel change on this machine, checked
//! against targets.
//!
//! Two run directories go in. An A/A run (`compare --aa`: the same kernel on
//! both sides) gives, per point, the coefficient of variation of the boot
//! means (between boots) and the pooled within-boot CoV of each side: the
//! noise floor. An A/B run (the real comparison) gives the 95% interval of
//! the relative difference and its half-width: the resolution actually
//! reached with the boots it took. Every figure comes from the same analysis
//! the run's report uses ([`crate::stages::analysis::analyse`]), so the two always agree.
//! An A/B run of several candidates gives one interval per candidate and point.

use crate::base::error::InputError;
use crate::base::error::Result;
use crate::record::{read_samples, PointKey, RunMeta};
use crate::stages::analysis::{Analysis, TableKey};
use std::path::Path;

/// The figures' records are the report's, which renders them.
pub use crate::stages::report::noise::{AaPoint, AbPoint, Row, Targets};

impl Targets {
    /// The default targets with both limits set to `pct` percent.
    pub fn at_pct(pct: f64) -> Result<Targets, InputError> {
        if !(pct > 0.0 && pct.is_finite()) {
            return Err(InputError::new(format!(
                "--target-pct must be a positive number of percent, got {pct}"
            )));
        }
        Ok(Targets {
            max_between_boot_cov: pct / 100.0,
            max_ci_half_width: pct / 100.0,
            ..Targets::default()
        })
    }
}

fn point_key(key: &TableKey, param: u64) -> PointKey {
    PointKey {
        workload: key.workload.clone(),
        metric: key.metric.clone(),
        cpus: key.cpus,
        param,
    }
}

/// The noise figures of every point of an A/A run.
pub fn aa_points(analysis: &Analysis) -> Result<Vec<AaPoint>, crate::base::stats::StatsError> {
    // Without the statistics there is no figure: say why rather than list none.
    analysis.results.as_ref().map_err(Clone::clone)?;
    let mut out = Vec::new();
    for (key, points) in &analysis.tables {
        for (j, point) in points.iter().enumerate() {
            let summaries: Vec<_> = (0..analysis.variants.len())
                .filter_map(|v| analysis.variant_summary(key, j, v).map(|(s, _)| s))
                .collect();
            out.push(AaPoint {
                key: point_key(key, point.param),
                boots: summaries.iter().map(|s| s.n_boots).collect(),
                between_boot_cov: summaries
                    .iter()
                    .map(|s| s.cov_of(s.boot_means_variance))
                    .collect(),
                within_boot_cov: summaries
                    .iter()
                    .map(|s| s.cov_of(s.within_boot_variance))
                    .collect(),
            });
        }
    }
    Ok(out)
}

/// The resolution figures of every comparison at every point of an A/B run.
pub fn ab_points(analysis: &Analysis) -> Result<Vec<AbPoint>, crate::base::stats::StatsError> {
    let results = analysis.results.as_ref().map_err(Clone::clone)?;
    let mut out = Vec::new();
    for (c, per_table) in analysis.comparisons.iter().zip(results) {
        let [_, candidate] = analysis.names(c);
        for (key, list) in per_table {
            for (point, a) in analysis.tables[key].iter().zip(list) {
                out.push(AbPoint {
                    key: point_key(key, point.param),
                    candidate: candidate.to_string(),
                    boots: [a.a.n_boots, a.b.n_boots],
                    relative_difference: a.relative_difference,
                    interval: a
                        .relative_difference_ci
                        .map(|i| (i.lower, i.upper, i.level)),
                });
            }
        }
    }
    out.sort_by(|x, y| x.key.cmp(&y.key));
    Ok(out)
}

/// Joins the two runs point by point and checks each figure against the
/// targets: one row per candidate of the A/B run at a point, or one for a
/// point only the A/A run has.
pub fn evaluate(aa: &[AaPoint], ab: &[AbPoint], targets: &Targets) -> Vec<Row> {
    let mut keys: Vec<PointKey> = aa
        .iter()
        .map(|p| p.key.clone())
        .chain(ab.iter().map(|p| p.key.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .flat_map(|key| {
            let aa = aa.iter().find(|p| p.key == key).cloned();
            let mut abs: Vec<Option<AbPoint>> = ab
                .iter()
                .filter(|p| p.key == key)
                .cloned()
                .map(Some)
                .collect();
            if abs.is_empty() {
                abs.push(None);
            }
            abs.into_iter().map(move |ab| (key.clone(), aa.clone(), ab))
        })
        .map(|(key, aa, ab)| {
            // A side without a figure (one boot) cannot show it meets the target.
            let between_ok = aa.as_ref().map(|p| {
                p.between_boot_cov
                    .iter()
                    .all(|c| c.is_some_and(|c| c <= targets.max_between_boot_cov))
            });
            let ci_ok = ab
                .as_ref()
                .filter(|_| targets.ci_workloads.contains(&key.workload))
                .map(|p| {
                    p.boots.iter().all(|&b| b <= targets.max_boots)
                        && p.half_width()
                            .is_some_and(|h| h <= targets.max_ci_half_width)
                });
            Row {
                key,
                aa,
                ab,
                between_ok,
                ci_ok,
            }
        })
        .collect()
}

/// True when every figure that is a target meets it (and there is one).
pub fn all_met(rows: &[Row]) -> bool {
    let checks: Vec<bool> = rows
        .iter()
        .flat_map(|r| [r.between_ok, r.ci_ok])
        .flatten()
        .collect();
    !checks.is_empty() && checks.iter().all(|&ok| ok)
}

/// The same kernel and command line for every variant?
pub fn is_aa(meta: &RunMeta) -> bool {
    meta.kernels.len() >= 2
        && meta.kernels.iter().all(|k| {
            k.build_key == meta.kernels[0].build_key && k.cmdline == meta.kernels[0].cmdline
        })
}

/// Input error unless `meta`, read from `dir`, is an A/A run.
pub fn require_aa(dir: &Path, meta: &RunMeta) -> Result<(), InputError> {
    if is_aa(meta) {
        return Ok(());
    }
    Err(InputError::in_file(
        dir,
        "not an A/A run (its variants are different kernels or command lines); \
         make one with `markbench compare --aa`",
    ))
}

/// A run directory's metadata and analysis.
pub fn load(dir: &Path) -> Result<(RunMeta, Analysis)> {
    crate::record::require_run_dir(dir)?;
    let meta = RunMeta::read(dir)?;
    let samples = read_samples(dir)?;
    let analysis = crate::stages::analysis::analyse(&meta, &samples);
    Ok((meta, analysis))
}

/// Whether a noise floor met its targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetVerdict {
    /// Every target was met (and there was one to meet).
    Met,
    /// A target was missed, or there was no figure to meet one.
    Missed,
}

/// The noise floor's verdict on `rows` ([`all_met`]).
pub fn verdict(rows: &[Row]) -> TargetVerdict {
    if all_met(rows) {
        TargetVerdict::Met
    } else {
        TargetVerdict::Missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{KernelMeta, Sample};
    use crate::stages::report::noise::render;

    /// Samples of one point: `boots[side][boot]` = that boot's iterations.
    fn samples(workload: &str, param: u64, names: [&str; 2], boots: [&[&[f64]]; 2]) -> Vec<Sample> {
        let mut out = Vec::new();
        for (side, list) in boots.iter().enumerate() {
            for (boot, values) in list.iter().enumerate() {
                for (iteration, &value) in values.iter().enumerate() {
                    out.push(Sample {
                        suite: "noise".into(),
                        workload: workload.into(),
                        metric: "time".into(),
                        unit: "s".into(),
                        higher_is_better: false,
                        param,
                        cpus: 1,
                        variant: names[side].into(),
                        boot: boot as u32,
                        iteration: iteration as u32,
                        warmup: false,
                        value,
                        started_at: String::new(),
                    });
                }
            }
        }
        out
    }

    fn meta(names: [&str; 2], keys: [&str; 2]) -> RunMeta {
        RunMeta {
            suite: "noise".into(),
            seed: 7,
            kernels: names
                .iter()
                .zip(keys)
                .map(|(n, k)| KernelMeta {
                    variant: n.to_string(),
                    build_key: k.into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    const AA: [&str; 2] = ["off", "off-again"];
    const AB: [&str; 2] = ["off", "on"];

    /// Boot means 1.00, 1.01, 0.99 (sd 0.01, so 1.00% between boots); each
    /// boot ±0.02 around its mean (within-boot sd 0.02·√2, 2.83%).
    const NOISY: &[&[f64]] = &[&[0.98, 1.02], &[0.99, 1.03], &[0.97, 1.01]];
    /// Boot means 1.000, 1.002, 0.998: 0.20% between boots, 0.001·√2 (0.14%) within.
    const QUIET: &[&[f64]] = &[&[0.999, 1.001], &[1.001, 1.003], &[0.997, 0.999]];

    fn analysis(meta: &RunMeta, samples: &[Sample]) -> Analysis {
        crate::stages::analysis::analyse(meta, samples)
    }

    #[test]
    fn aa_figures_are_the_cov_of_boot_means_and_the_pooled_within_boot_cov() {
        let s = samples("hackbench", 2, AA, [NOISY, QUIET]);
        let points = aa_points(&analysis(&meta(AA, ["k", "k"]), &s)).unwrap();
        assert_eq!(points.len(), 1);
        let p = &points[0];
        assert_eq!(p.boots, [3, 3]);
        let close = |x: Option<f64>, y: f64| (x.unwrap() - y).abs() < 1e-9;
        assert!(close(p.between_boot_cov[0], 0.01), "{p:?}");
        assert!(close(p.within_boot_cov[0], 0.02 * 2f64.sqrt()), "{p:?}");
        assert!(close(p.between_boot_cov[1], 0.002), "{p:?}");
        assert!(close(p.within_boot_cov[1], 0.001 * 2f64.sqrt()), "{p:?}");
    }

    #[test]
    fn targets_pass_only_when_every_side_and_every_targeted_point_meets_them() {
        let quiet_aa = samples("hackbench", 2, AA, [QUIET, QUIET]);
        let mixed_aa = samples("hackbench", 2, AA, [QUIET, NOISY]);
        let aa_meta = meta(AA, ["k", "k"]);
        let targets = Targets::default();

        let quiet = aa_points(&analysis(&aa_meta, &quiet_aa)).unwrap();
        let rows = evaluate(&quiet, &[], &targets);
        assert_eq!(rows[0].between_ok, Some(true));
        assert_eq!(rows[0].ci_ok, None);
        assert!(all_met(&rows));
        assert_eq!(verdict(&rows), TargetVerdict::Met);

        // One noisy side is enough to miss the A/A target.
        let mixed = aa_points(&analysis(&aa_meta, &mixed_aa)).unwrap();
        let rows = evaluate(&mixed, &[], &targets);
        assert_eq!(rows[0].between_ok, Some(false));
        assert!(!all_met(&rows));
        assert_eq!(verdict(&rows), TargetVerdict::Missed);
        assert!(render(&rows, &targets).contains("FAIL: 0 of 1 targets met"));
    }

    #[test]
    fn the_ab_interval_is_a_target_for_the_named_workloads_within_the_boot_budget() {
        // B is A shifted by +5%: the interval sits around +5%.
        let shifted: Vec<Vec<f64>> = QUIET
            .iter()
            .map(|b| b.iter().map(|v| v * 1.05).collect())
            .collect();
        let shifted: Vec<&[f64]> = shifted.iter().map(Vec::as_slice).collect();
        let mut s = samples("hackbench", 2, AB, [QUIET, &shifted]);
        s.extend(samples("ping-flood", 2000, AB, [NOISY, NOISY]));
        let ab = ab_points(&analysis(&meta(AB, ["k1", "k2"]), &s)).unwrap();
        let hb = ab.iter().find(|p| p.key.workload == "hackbench").unwrap();
        let (lower, upper, level) = hb.interval.unwrap();
        assert!(lower < 0.05 && 0.05 < upper && level == 0.95, "{hb:?}");
        assert!(hb.half_width().unwrap() < 0.005, "{hb:?}");

        let targets = Targets::default();
        let rows = evaluate(&[], &ab, &targets);
        let row = |w: &str| rows.iter().find(|r| r.key.workload == w).unwrap();
        assert_eq!(row("hackbench").ci_ok, Some(true));
        // ping-flood is shown, not judged.
        assert_eq!(row("ping-flood").ci_ok, None);
        assert!(row("ping-flood").ab.as_ref().unwrap().half_width().unwrap() > 0.005);
        assert!(all_met(&rows));
        let text = render(&rows, &targets);
        assert!(text.contains("(not a target)"), "{text}");
        assert!(text.starts_with("| workload |"), "{text}");

        // The same interval with more boots than allowed does not count.
        let strict = Targets {
            max_boots: 2,
            ..Targets::default()
        };
        let rows = evaluate(&[], &ab, &strict);
        assert_eq!(rows[0].ci_ok, Some(false));
    }

    #[test]
    fn a_target_in_percent_sets_both_limits_and_must_be_positive() {
        let t = Targets::at_pct(1.0).unwrap();
        assert_eq!((t.max_between_boot_cov, t.max_ci_half_width), (0.01, 0.01));
        assert_eq!(t.max_boots, 5);
        assert!(Targets::at_pct(0.0).is_err());
        assert!(Targets::at_pct(f64::NAN).is_err());
    }

    #[test]
    fn no_figures_is_not_a_pass() {
        assert!(!all_met(&[]));
        assert_eq!(verdict(&[]), TargetVerdict::Missed);
    }

    #[test]
    fn an_ab_run_is_refused_as_the_aa_run() {
        let dir = tempfile::tempdir().unwrap();
        meta(AB, ["k1", "k2"]).write(dir.path()).unwrap();
        let mut w = crate::record::SampleWriter::open(dir.path()).unwrap();
        for s in samples("hackbench", 2, AB, [QUIET, QUIET]) {
            w.append(&s).unwrap();
        }
        drop(w);
        let (read, _) = load(dir.path()).unwrap();
        let e = require_aa(dir.path(), &read).unwrap_err();
        assert!(format!("{e}").contains("not an A/A run"), "{e}");
    }
}
