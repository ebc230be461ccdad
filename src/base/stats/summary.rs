//! Descriptive statistics of one variant at one point.
//!
//! The input is grouped by boot because the boot, not the iteration, is the
//! independent unit: iterations inside one boot share that boot's page layout,
//! interrupt routing, frequency state and so on, so they are correlated.
//! Kalibera & Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013,
//! model a measurement as `Y_jk = μ + boot effect_j + iteration noise_jk` and
//! estimate the two variance components separately; we do the same.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::StatsError;

/// Confidence level of the per-variant interval of the mean. It is descriptive
/// (a report column), so it does not follow `AnalysisConfig::alpha`.
pub const SIDE_CI_LEVEL: f64 = 0.95;

/// A two-sided interval at `level` (e.g. 0.95).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
    pub level: f64,
}

impl Interval {
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }
}

/// Which values the Student t interval of the mean was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CiBasis {
    /// One value per boot (the boot means): the honest interval.
    BootMeans,
    /// Only one boot was measured, so the iterations of that boot were used.
    /// This interval ignores between-boot variation and is too narrow for any
    /// claim about the kernel; it only describes that one boot.
    IterationsOfSingleBoot,
}

/// Student t interval of the mean and what it was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeanCi {
    /// Centre of the interval: the mean of the values in `basis` (with equal
    /// iterations per boot this equals `SideSummary::mean`).
    pub center: f64,
    pub interval: Interval,
    pub basis: CiBasis,
    /// Degrees of freedom of the t quantile (values in `basis` minus one).
    pub df: f64,
}

/// Summary of one variant (one side) at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideSummary {
    pub n_boots: usize,
    pub n_samples: usize,
    /// Mean of all samples, every iteration weighted equally.
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n − 1) of all samples; `None` with one sample.
    pub std_dev: Option<f64>,
    /// Coefficient of variation `std_dev / |mean|`; `None` without a standard
    /// deviation or when the mean is zero.
    pub cov: Option<f64>,
    /// Mean of each boot, in input order.
    pub boot_means: Vec<f64>,
    /// Sample variance (n − 1) of the boot means; `None` with one boot.
    /// It contains both variance components: between + within / iterations.
    pub boot_means_variance: Option<f64>,
    /// Pooled within-boot variance (Kalibera & Jones' S₁²; the ANOVA mean
    /// square within). `None` when no boot has two iterations.
    pub within_boot_variance: Option<f64>,
    /// Between-boot variance component (Kalibera & Jones' T₂², generalised to
    /// unequal iterations per boot by the one-way random-effects ANOVA
    /// estimator), truncated at zero. `None` with one boot or when the
    /// within-boot variance cannot be estimated, since then the two components
    /// cannot be separated.
    pub between_boot_variance: Option<f64>,
    /// 95% Student t interval of the mean; `None` with a single value.
    pub mean_ci: Option<MeanCi>,
}

impl SideSummary {
    /// A variant with no value at a point: no boots, no samples, and a mean
    /// and median that are not numbers (JSON gives them as `null`).
    pub fn unmeasured() -> SideSummary {
        SideSummary {
            n_boots: 0,
            n_samples: 0,
            mean: f64::NAN,
            median: f64::NAN,
            std_dev: None,
            cov: None,
            boot_means: Vec::new(),
            boot_means_variance: None,
            within_boot_variance: None,
            between_boot_variance: None,
            mean_ci: None,
        }
    }

    /// A variance of this side (`boot_means_variance`, `within_boot_variance`)
    /// as a coefficient of variation of the mean: `√variance / |mean|`.
    /// `None` without the variance or when the mean is zero.
    pub fn cov_of(&self, variance: Option<f64>) -> Option<f64> {
        variance
            .filter(|_| self.mean != 0.0)
            .map(|v| v.sqrt() / self.mean.abs())
    }

    /// True when the interval of the mean had to fall back to iterations.
    #[cfg(test)]
    fn ci_from_iterations(&self) -> bool {
        matches!(
            self.mean_ci,
            Some(MeanCi {
                basis: CiBasis::IterationsOfSingleBoot,
                ..
            })
        )
    }
}

/// Checks the shape of one side's input: at least one boot, no empty boot, and
/// only finite values. Failed boots must be dropped by the caller, so that a
/// missing boot is a visible decision rather than a silent one here.
pub(crate) fn validate(boots: &[Vec<f64>]) -> Result<(), StatsError> {
    if boots.is_empty() {
        return Err(StatsError::NoData);
    }
    for (boot, values) in boots.iter().enumerate() {
        if values.is_empty() {
            return Err(StatsError::EmptyBoot { boot });
        }
        if let Some((iteration, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NonFinite {
                boot,
                iteration,
                value,
            });
        }
    }
    Ok(())
}

/// Summarizes one variant at one point.
///
/// `boots[j][k]` is iteration `k` of boot `j`, warm-up already removed.
pub fn summarize(boots: &[Vec<f64>]) -> Result<SideSummary, StatsError> {
    validate(boots)?;
    let n_boots = boots.len();
    let n_samples: usize = boots.iter().map(Vec::len).sum();
    let all: Vec<f64> = boots.iter().flatten().copied().collect();
    let mean = mean(&all);
    let std_dev = sample_variance(&all).map(f64::sqrt);
    let cov = std_dev.filter(|_| mean != 0.0).map(|sd| sd / mean.abs());
    let boot_means: Vec<f64> = boots.iter().map(|b| self::mean(b)).collect();
    let (within_boot_variance, between_boot_variance) = variance_components(boots, mean);

    let mean_ci = if n_boots >= 2 {
        t_interval(&boot_means, SIDE_CI_LEVEL, CiBasis::BootMeans)
    } else {
        t_interval(&boots[0], SIDE_CI_LEVEL, CiBasis::IterationsOfSingleBoot)
    };

    Ok(SideSummary {
        n_boots,
        n_samples,
        mean,
        median: median(all),
        std_dev,
        cov,
        boot_means_variance: sample_variance(&boot_means),
        boot_means,
        within_boot_variance,
        between_boot_variance,
        mean_ci,
    })
}

/// Within- and between-boot variance components.
///
/// One-way random-effects ANOVA (Searle, Casella & McCulloch, "Variance
/// Components", Wiley 1992, §3.5 and §3.6 for unbalanced data):
///   MSW = Σ_j Σ_k (y_jk − ȳ_j)² / (N − J)
///   MSB = Σ_j r_j (ȳ_j − ȳ)² / (J − 1)
///   n₀  = (N − Σ_j r_j² / N) / (J − 1)
///   σ²_between = (MSB − MSW) / n₀
/// With r iterations in every boot this is exactly Kalibera & Jones' (2013)
/// T₂² = S₂² − S₁²/r. The estimate can be negative by chance; the usual
/// practice (Searle et al. §3.5d) truncates it at zero.
fn variance_components(boots: &[Vec<f64>], grand_mean: f64) -> (Option<f64>, Option<f64>) {
    let n_boots = boots.len();
    let n_samples: usize = boots.iter().map(Vec::len).sum();
    let df_within = n_samples - n_boots;
    let mut ss_within = 0.0;
    let mut ss_between = 0.0;
    for values in boots {
        let boot_mean = mean(values);
        ss_within += values.iter().map(|y| (y - boot_mean).powi(2)).sum::<f64>();
        ss_between += values.len() as f64 * (boot_mean - grand_mean).powi(2);
    }
    let within = (df_within > 0).then(|| ss_within / df_within as f64);
    let between = match within {
        Some(ms_within) if n_boots >= 2 => {
            let n = n_samples as f64;
            let sum_sq_sizes: f64 = boots.iter().map(|b| (b.len() as f64).powi(2)).sum();
            let n0 = (n - sum_sq_sizes / n) / (n_boots - 1) as f64;
            let ms_between = ss_between / (n_boots - 1) as f64;
            Some(((ms_between - ms_within) / n0).max(0.0))
        }
        _ => None,
    };
    (within, between)
}

/// Student t interval `x̄ ± t(1−(1−level)/2; n−1) · s/√n`; `None` with fewer
/// than two values.
pub(crate) fn t_interval(values: &[f64], level: f64, basis: CiBasis) -> Option<MeanCi> {
    let variance = sample_variance(values)?;
    let n = values.len() as f64;
    let center = mean(values);
    let df = n - 1.0;
    let quantile = students_t(df).inverse_cdf(1.0 - (1.0 - level) / 2.0);
    let half_width = quantile * (variance / n).sqrt();
    Some(MeanCi {
        center,
        interval: Interval {
            lower: center - half_width,
            upper: center + half_width,
            level,
        },
        basis,
        df,
    })
}

/// Standard Student t distribution with `df` degrees of freedom.
pub(crate) fn students_t(df: f64) -> StudentsT {
    StudentsT::new(0.0, 1.0, df).expect("degrees of freedom are positive and finite")
}

pub(crate) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample variance with n − 1 in the denominator (two-pass, for accuracy).
pub(crate) fn sample_variance(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|v| (v - m).powi(2)).sum();
    Some(ss / (values.len() - 1) as f64)
}

/// Median by selection (O(n)), averaging the two middle values for even n.
/// Takes ownership because selection reorders the buffer.
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    let n = values.len();
    let mid = n / 2;
    let (lower_half, upper_middle, _) = values.select_nth_unstable_by(mid, f64::total_cmp);
    let upper_middle = *upper_middle;
    if n % 2 == 1 {
        upper_middle
    } else {
        let lower_middle = lower_half.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower_middle + upper_middle) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![7.0]), 7.0);
    }

    #[test]
    fn balanced_components_match_kalibera_jones() {
        // Two boots of three iterations: S₁² = pooled within variance,
        // S₂² = variance of boot means, T₂² = S₂² − S₁²/3.
        let boots = vec![vec![1.0, 2.0, 3.0], vec![5.0, 6.0, 7.0]];
        let s = summarize(&boots).unwrap();
        let s1_sq = (2.0 + 2.0) / 4.0; // (1+0+1)+(1+0+1) over 2·(3−1)
        let s2_sq = 8.0; // boot means 2 and 6
        assert_eq!(s.within_boot_variance, Some(s1_sq));
        assert!((s.between_boot_variance.unwrap() - (s2_sq - s1_sq / 3.0)).abs() < 1e-12);
        assert_eq!(s.boot_means_variance, Some(s2_sq));
    }

    #[test]
    fn between_component_is_truncated_at_zero() {
        // Boot means identical, lots of within noise: the raw estimate is negative.
        let boots = vec![vec![1.0, 3.0], vec![3.0, 1.0]];
        let s = summarize(&boots).unwrap();
        assert_eq!(s.between_boot_variance, Some(0.0));
    }

    #[test]
    fn one_boot_falls_back_to_iterations_and_says_so() {
        let s = summarize(&[vec![10.0, 11.0, 12.0]]).unwrap();
        assert!(s.ci_from_iterations());
        assert_eq!(s.between_boot_variance, None);
        let s = summarize(&[vec![10.0], vec![11.0]]).unwrap();
        assert!(!s.ci_from_iterations());
        assert_eq!(s.within_boot_variance, None);
    }

    #[test]
    fn a_single_value_has_no_interval_and_no_spread() {
        let s = summarize(&[vec![4.811]]).unwrap();
        assert_eq!(s.mean_ci, None);
        assert_eq!(s.std_dev, None);
        assert_eq!(s.cov, None);
        assert_eq!(s.mean, 4.811);
    }

    #[test]
    fn bad_input_is_named() {
        assert_eq!(summarize(&[]), Err(StatsError::NoData));
        assert_eq!(
            summarize(&[vec![1.0], vec![]]),
            Err(StatsError::EmptyBoot { boot: 1 })
        );
        assert!(matches!(
            summarize(&[vec![1.0, f64::NAN]]),
            Err(StatsError::NonFinite {
                boot: 0,
                iteration: 1,
                ..
            })
        ));
    }
}
