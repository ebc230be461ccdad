//! The statistics of a whole run: every comparison at every point, as one
//! family for the multiple-testing correction.

use super::comparison::{variant_names, Against, Comparison};
use super::point::Point;
use super::table::{tables, TableKey};
use crate::base::stats::blocked::PointHosts;
use crate::base::stats::{AnalysisConfig, Outlier, PointAnalysis, PointInput, SideSummary};
use crate::record::{RunMeta, Sample};
use std::collections::BTreeMap;

/// One comparison's analyses: per table, one per point.
pub type ComparisonResults = BTreeMap<TableKey, Vec<PointAnalysis>>;

/// Every table's points analysed as one sweep over all comparisons.
pub struct Analysis {
    pub config: AnalysisConfig,
    /// The run's variants, baseline first: the order of [`Point::sides`].
    pub variants: Vec<String>,
    /// What the candidates are compared against.
    pub against: Against,
    pub comparisons: Vec<Comparison>,
    /// For a patch series, each kernel after the first candidate against the
    /// one before it (the first candidate's step is its comparison with the
    /// baseline); empty otherwise.
    pub steps: Vec<Comparison>,
    pub tables: BTreeMap<TableKey, Vec<Point>>,
    /// One entry per comparison, in the order of `comparisons`, then one per
    /// step; `Err` holds why the sweep could not be analysed.
    pub results: Result<Vec<ComparisonResults>, crate::base::stats::StatsError>,
}

impl Analysis {
    /// The analyses of one comparison's points in a table.
    pub fn results_of(&self, comparison: usize, key: &TableKey) -> Option<&[PointAnalysis]> {
        self.results
            .as_ref()
            .ok()?
            .get(comparison)?
            .get(key)
            .map(Vec::as_slice)
    }

    /// One comparison's analyses, table after table: what its verdict line summarises.
    pub fn comparison_points(&self, comparison: usize) -> Vec<PointAnalysis> {
        self.results
            .as_ref()
            .ok()
            .and_then(|r| r.get(comparison))
            .map(|r| r.values().flatten().cloned().collect())
            .unwrap_or_default()
    }

    /// The analyses of a step of a series (`steps[step]`) in a table.
    pub fn step_results_of(&self, step: usize, key: &TableKey) -> Option<&[PointAnalysis]> {
        self.results_of(self.comparisons.len() + step, key)
    }

    /// Every analysis of the run: the correction's family.
    pub fn all_points(&self) -> Vec<PointAnalysis> {
        match &self.results {
            Ok(r) => r
                .iter()
                .flat_map(|c| c.values().flatten().cloned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The two variants a comparison sets against each other, baseline first.
    pub fn names(&self, comparison: &Comparison) -> [&str; 2] {
        [
            self.variants[comparison.baseline].as_str(),
            self.variants[comparison.candidate].as_str(),
        ]
    }

    /// One variant's summary and outliers at point `j` of a table, from the
    /// first comparison that includes the variant (every comparison that
    /// does summarises the same boots).
    pub fn variant_summary(
        &self,
        key: &TableKey,
        j: usize,
        variant: usize,
    ) -> Option<(&SideSummary, &[Outlier])> {
        self.comparisons.iter().enumerate().find_map(|(i, c)| {
            let a = self.results_of(i, key)?.get(j)?;
            if c.baseline == variant {
                Some((&a.a, a.outliers_a.as_slice()))
            } else if c.candidate == variant {
                Some((&a.b, a.outliers_b.as_slice()))
            } else {
                None
            }
        })
    }

    /// True for the common run of one baseline and one candidate.
    pub fn is_pair(&self) -> bool {
        self.comparisons.len() == 1
    }
}

/// The statistics settings a run's report uses.
pub fn config(meta: &RunMeta) -> AnalysisConfig {
    AnalysisConfig {
        // Runs recorded before the margin was a setting carry none: use the default.
        margin: if meta.margin > 0.0 {
            meta.margin
        } else {
            AnalysisConfig::default().margin
        },
        correction: meta.correction,
        seed: meta.seed,
        ..AnalysisConfig::default()
    }
}

/// The analysis of a run measured on one host.
pub fn analyse(meta: &RunMeta, samples: &[Sample]) -> Analysis {
    let hosts = vec![meta.host.hostname.clone(); samples.len()];
    analyse_with_hosts(meta, samples, &hosts)
}

/// [`analyse`] without the bootstrap's second-opinion intervals, which
/// nothing but the report reads: for decisions taken during a run.
pub fn analyse_unbootstrapped(meta: &RunMeta, samples: &[Sample]) -> Analysis {
    let hosts = vec![meta.host.hostname.clone(); samples.len()];
    let config = AnalysisConfig {
        resamples: 0,
        ..config(meta)
    };
    analyse_with_config(meta, samples, &hosts, config)
}

/// [`analyse`] with the host that measured each sample (`hosts[i]` for
/// `samples[i]`): points whose boots come from several hosts are analysed
/// with the host as a blocking factor; the others exactly as on one machine.
pub fn analyse_with_hosts(meta: &RunMeta, samples: &[Sample], hosts: &[String]) -> Analysis {
    analyse_with_config(meta, samples, hosts, config(meta))
}

pub(super) fn analyse_with_config(
    meta: &RunMeta,
    samples: &[Sample],
    hosts: &[String],
    config: AnalysisConfig,
) -> Analysis {
    let variants = variant_names(meta);
    let tables = tables(samples, &variants);
    let against = Against::Baseline;
    let comparisons = Comparison::all(variants.len(), against);
    let steps: Vec<Comparison> = if meta.series {
        Comparison::all(variants.len(), Against::Previous)
            .into_iter()
            .filter(|c| c.baseline != 0)
            .collect()
    } else {
        Vec::new()
    };
    // The host of each boot of each point and variant, in the boot order
    // `tables` uses (ascending boot number), so it lines up with `sides`.
    let mut boot_hosts: BTreeMap<(TableKey, u64, usize), BTreeMap<u32, String>> = BTreeMap::new();
    for (s, host) in samples.iter().zip(hosts).filter(|(s, _)| !s.warmup) {
        let Some(side) = variants.iter().position(|v| *v == s.variant) else {
            continue;
        };
        boot_hosts
            .entry((TableKey::of(s), s.param, side))
            .or_default()
            .insert(s.boot, host.clone());
    }
    let hosts_of = |key: &TableKey, param: u64, side: usize| -> Vec<String> {
        boot_hosts
            .get(&(key.clone(), param, side))
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    };
    // Comparison after comparison, each over every table's points: the
    // first comparison's points keep the positions (and bootstrap streams)
    // they have in a run of two variants.
    let mut inputs = Vec::new();
    let mut point_hosts = Vec::new();
    for c in comparisons.iter().chain(&steps) {
        for (key, points) in &tables {
            for p in points {
                inputs.push(PointInput {
                    a: &p.sides[c.baseline],
                    b: &p.sides[c.candidate],
                    higher_is_better: p.higher_is_better,
                });
                point_hosts.push(PointHosts {
                    a: hosts_of(key, p.param, c.baseline),
                    b: hosts_of(key, p.param, c.candidate),
                });
            }
        }
    }
    let results =
        crate::base::stats::analyze_sweep_with_hosts(&inputs, &point_hosts, &config).map(|flat| {
            let mut flat = flat.into_iter();
            comparisons
                .iter()
                .chain(&steps)
                .map(|_| {
                    tables
                        .iter()
                        .map(|(k, points)| (k.clone(), flat.by_ref().take(points.len()).collect()))
                        .collect()
                })
                .collect()
        });
    Analysis {
        config,
        variants,
        against,
        comparisons,
        steps,
        tables,
        results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::stats::{Correction, Verdict};
    use crate::record::KernelMeta;

    /// One hackbench point; variant `i` of `factors` runs `factors[i]` times
    /// as long as the baseline, with a small fixed wobble between boots.
    fn run(factors: &[(&str, f64)], correction: Correction) -> (RunMeta, Vec<Sample>) {
        let meta = RunMeta {
            kernels: factors
                .iter()
                .map(|(n, _)| KernelMeta {
                    variant: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            correction,
            seed: 1,
            ..Default::default()
        };
        let mut samples = Vec::new();
        for (variant, factor) in factors {
            for boot in 0..4u32 {
                for iteration in 0..3u32 {
                    let wobble = 1.0 + 0.002 * ((boot * 3 + iteration) % 4) as f64;
                    samples.push(Sample {
                        suite: "t".into(),
                        workload: "hackbench".into(),
                        metric: "time".into(),
                        unit: "s".into(),
                        higher_is_better: false,
                        param: 4,
                        cpus: 1,
                        variant: variant.to_string(),
                        boot,
                        iteration,
                        warmup: false,
                        value: factor * wobble,
                        started_at: String::new(),
                    });
                }
            }
        }
        (meta, samples)
    }

    #[test]
    fn each_candidate_is_compared_with_the_baseline() {
        let (meta, samples) = run(
            &[("off", 1.0), ("on", 1.2), ("generic", 1.0)],
            Correction::Holm,
        );
        let a = analyse(&meta, &samples);
        assert_eq!(a.comparisons.len(), 2);
        assert_eq!(a.names(&a.comparisons[1]), ["off", "generic"]);
        let key = a.tables.keys().next().unwrap().clone();
        let on = &a.results_of(0, &key).unwrap()[0];
        let generic = &a.results_of(1, &key).unwrap()[0];
        assert_eq!(on.verdict, Verdict::Regression);
        assert!((on.relative_difference.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(generic.verdict, Verdict::Equivalent);
        assert_eq!(a.all_points().len(), 2);
    }

    #[test]
    fn the_correction_covers_every_comparison_and_point() {
        let pair = run(&[("off", 1.0), ("on", 1.01)], Correction::Holm);
        let three = run(
            &[("off", 1.0), ("on", 1.01), ("other", 1.01)],
            Correction::Holm,
        );
        let (a2, a3) = (analyse(&pair.0, &pair.1), analyse(&three.0, &three.1));
        let key = a2.tables.keys().next().unwrap().clone();
        let p2 = a2.results_of(0, &key).unwrap()[0].clone();
        let p3 = a3.results_of(0, &key).unwrap()[0].clone();
        // The same data; with a second candidate in the family Holm's
        // adjustment of the smaller p-value doubles it.
        assert_eq!(p2.p_value(), p3.p_value());
        let (raw, adjusted) = (p3.p_value().unwrap(), p3.adjusted_p_value.unwrap());
        assert!(raw < 0.5, "{raw}");
        assert!(
            (adjusted - (2.0 * raw).min(1.0)).abs() < 1e-12,
            "{raw} {adjusted}"
        );
        assert_eq!(p2.adjusted_p_value, p2.p_value());
    }

    #[test]
    fn a_run_of_two_variants_has_one_comparison_analysed_as_before() {
        let (meta, samples) = run(&[("off", 1.0), ("on", 1.05)], Correction::Holm);
        let a = analyse(&meta, &samples);
        assert!(a.is_pair());
        let key = a.tables.keys().next().unwrap().clone();
        let p = &a.tables[&key][0];
        let direct = crate::base::stats::analyze_sweep(
            &[PointInput {
                a: &p.sides[0],
                b: &p.sides[1],
                higher_is_better: false,
            }],
            &a.config,
        )
        .unwrap();
        assert_eq!(a.results_of(0, &key).unwrap(), direct.as_slice());
    }
}
