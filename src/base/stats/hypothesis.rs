//! Tests between the two variants, all on boot means (one value per boot),
//! because boots are the independent unit: testing all iterations as if they
//! were independent would understate the variance and overstate significance
//! (Kalibera & Jones, ISMM 2013, §3).

use serde::{Deserialize, Serialize};
use statrs::distribution::ContinuousCDF;
use statrs::stats_tests::mannwhitneyu::{mannwhitneyu, MannWhitneyUMethod};
use statrs::stats_tests::Alternative;

use super::summary::{mean, sample_variance, students_t, Interval};

/// Welch's unequal-variances t-test of `mean(b) − mean(a)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WelchTest {
    /// `mean(b) − mean(a)` of the boot means: the tested difference. Its sign
    /// decides the direction of a significant verdict.
    pub mean_difference: f64,
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value, not corrected for multiple comparisons.
    pub p_value: f64,
}

/// Welch's t-test (Welch, "The generalization of Student's problem when
/// several different population variances are involved", Biometrika 34, 1947)
/// with the Welch–Satterthwaite degrees of freedom
///   df = (v_a/n_a + v_b/n_b)² / ((v_a/n_a)²/(n_a−1) + (v_b/n_b)²/(n_b−1)),
/// p = 2·P(T_df > |t|) from statrs' Student t survival function.
///
/// `None` when either side has fewer than two values. When both samples have
/// zero variance the statistic is degenerate: equal means give p = 1 (no
/// evidence of a difference), different means give p = 0 and t = ±∞; df is
/// then the pooled n_a + n_b − 2 (the limit for equal variances).
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<WelchTest> {
    let (var_a, var_b) = (sample_variance(a)?, sample_variance(b)?);
    let (n_a, n_b) = (a.len() as f64, b.len() as f64);
    let mean_difference = mean(b) - mean(a);
    let (se2_a, se2_b) = (var_a / n_a, var_b / n_b);
    let se2 = se2_a + se2_b;
    if se2 == 0.0 {
        let (t, p_value) = if mean_difference == 0.0 {
            (0.0, 1.0)
        } else {
            (f64::INFINITY.copysign(mean_difference), 0.0)
        };
        return Some(WelchTest {
            mean_difference,
            t,
            df: n_a + n_b - 2.0,
            p_value,
        });
    }
    let df = welch_satterthwaite_df(se2_a, n_a, se2_b, n_b);
    let t = mean_difference / se2.sqrt();
    let p_value = (2.0 * students_t(df).sf(t.abs())).min(1.0);
    Some(WelchTest {
        mean_difference,
        t,
        df,
        p_value,
    })
}

/// Welch–Satterthwaite df from the squared standard errors `v/n` of each side.
fn welch_satterthwaite_df(se2_a: f64, n_a: f64, se2_b: f64, n_b: f64) -> f64 {
    (se2_a + se2_b).powi(2) / (se2_a.powi(2) / (n_a - 1.0) + se2_b.powi(2) / (n_b - 1.0))
}

/// How the Mann–Whitney p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MannWhitneyMethod {
    /// Exact null distribution of U (no ties, a small side).
    Exact,
    /// Normal approximation with tie and continuity corrections.
    Asymptotic,
}

/// Mann–Whitney U test, the rank-based second opinion next to Welch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U statistic of `b` (the number of (b, a) pairs with b > a, ties ½).
    pub u_b: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    pub method: MannWhitneyMethod,
}

/// The exact method costs O(n_a · n_b · n_a·n_b); past this many steps we use
/// the normal approximation instead of stalling a report.
const MAX_EXACT_MWU_WORK: f64 = 5e7;

/// Two-sided Mann–Whitney U (Mann & Whitney, "On a test of whether one of two
/// random variables is stochastically larger than the other", Ann. Math.
/// Statist. 18, 1947). The method choice is scipy's `method="auto"`: exact
/// when a side has at most 8 values and there are no ties, otherwise the
/// normal approximation with tie and continuity corrections; plus a guard
/// that falls back to the approximation when the exact count would be too
/// costly. `None` when a side is empty.
///
/// The asymptotic p-value comes from statrs. The exact one is computed here:
/// statrs 0.19.1's exact branch returns the complement of the tail whenever
/// the first sample is not the larger one (with 3 vs 3 completely separated
/// values it gives p = 1 instead of 0.1); see the unit test that pins this,
/// so the workaround can go when statrs is fixed.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (n_a, n_b) = (a.len(), b.len());
    let work = (n_a * n_b) as f64 * (n_a * n_b) as f64;
    let exact = (n_a <= 8 || n_b <= 8) && !has_ties(a, b) && work <= MAX_EXACT_MWU_WORK;
    let (u_b, asymptotic_p) = mannwhitneyu(
        b,
        a,
        MannWhitneyUMethod::AsymptoticInclContinuityCorrection,
        Alternative::TwoSided,
    )
    .expect("inputs are finite and non-empty");
    if !exact {
        return Some(MannWhitney {
            u_b,
            p_value: asymptotic_p,
            method: MannWhitneyMethod::Asymptotic,
        });
    }
    // Two-sided exact p as scipy computes it: 2·P(U ≥ max(U_b, U_a)), capped at 1.
    let u_max = u_b.max((n_a * n_b) as f64 - u_b);
    let p_value = (2.0 * exact_u_upper_tail(u_max as usize, n_b, n_a)).min(1.0);
    Some(MannWhitney {
        u_b,
        p_value,
        method: MannWhitneyMethod::Exact,
    })
}

/// P(U ≥ u) under H0 for samples of sizes m and n without ties.
///
/// Counts arrangements with the recurrence of Mann & Whitney (1947), eq. (2):
/// the largest pooled value is either from the first sample (it beats all n
/// values of the second: U gains n) or from the second (U gains nothing):
///   N(u; m, n) = N(u − n; m − 1, n) + N(u; m, n − 1),
/// with N(0; m, 0) = N(0; 0, n) = 1. The table runs over n in place; counts
/// are f64, exact up to 2⁵³ and relatively accurate beyond.
fn exact_u_upper_tail(u: usize, m: usize, n: usize) -> f64 {
    let max_u = m * n;
    // counts[i][v] = N(v; i, current n)
    let mut counts = vec![vec![0.0_f64; max_u + 1]; m + 1];
    for row in counts.iter_mut() {
        row[0] = 1.0;
    }
    for current_n in 1..=n {
        for i in 1..=m {
            for v in (current_n..=i * current_n).rev() {
                counts[i][v] += counts[i - 1][v - current_n];
            }
        }
    }
    let row = &counts[m];
    let total: f64 = row.iter().sum();
    row[u.min(max_u + 1)..].iter().sum::<f64>() / total
}

fn has_ties(a: &[f64], b: &[f64]) -> bool {
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    all.windows(2).any(|w| w[0] == w[1])
}

/// Two one-sided tests for equivalence of the two variants within ±margin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tost {
    /// Relative margin, e.g. 0.02 for ±2%.
    pub margin: f64,
    /// Ratio of geometric means of the boot means minus one, `exp(d) − 1`.
    pub relative_difference: f64,
    /// `(1 − 2α)` interval of the relative difference; equivalence holds
    /// exactly when it lies within `[−margin, +margin]` (up to rounding at the
    /// boundary, where `equivalent` follows the p-value).
    pub ci: Interval,
    /// max of the two one-sided p-values.
    pub p_value: f64,
    pub equivalent: bool,
    pub df: f64,
}

/// TOST (Schuirmann, "A comparison of the two one-sided tests procedure and
/// the power approach for assessing the equivalence of average
/// bioavailability", J. Pharmacokin. Biopharm. 15, 1987) on the log ratio, as
/// bioequivalence studies do (FDA guidance "Statistical Approaches to
/// Establishing Bioequivalence", 2001): with `d = mean(ln b_j) − mean(ln a_j)`
/// over boot means and Welch's standard error and df,
///   p_low  = P(T > (d − ln(1 − m)) / se)   H0: ratio ≤ 1 − m
///   p_high = P(T < (d − ln(1 + m)) / se)   H0: ratio ≥ 1 + m
/// and equivalence at level α when max(p_low, p_high) < α, which is the same
/// as the (1 − 2α) t interval of d lying inside [ln(1 − m), ln(1 + m)].
///
/// Why this and not the bootstrap interval: it gives a p-value with a known
/// null distribution, uses the same boot-level variance as the Welch test, and
/// the log makes the ratio's interval exact under lognormal noise rather than
/// relying on a delta-method approximation.
///
/// `None` when a side has fewer than two boot means or a boot mean is not
/// positive (a log ratio needs positive quantities: times and rates are).
pub fn tost_log_ratio(a: &[f64], b: &[f64], margin: f64, alpha: f64) -> Option<Tost> {
    LogRatio::of_boot_means(a, b).map(|ratio| ratio.tost(margin, alpha))
}

/// The log ratio of two variants' boot means, `d = mean(ln b_j) − mean(ln a_j)`,
/// with Welch's standard error and Welch–Satterthwaite df: the one estimate
/// behind TOST's interval and the report's interval of the relative
/// difference, so the two always agree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogRatio {
    pub d: f64,
    pub se: f64,
    pub df: f64,
    /// The squared standard error of each side's mean log boot mean.
    pub se2: [f64; 2],
    pub boots: [usize; 2],
}

impl LogRatio {
    /// `None` when a side has fewer than two boot means or a boot mean is
    /// not positive (a log ratio needs positive quantities: times and rates
    /// are).
    pub fn of_boot_means(a: &[f64], b: &[f64]) -> Option<LogRatio> {
        if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|&v| v <= 0.0) {
            return None;
        }
        let log_a: Vec<f64> = a.iter().map(|v| v.ln()).collect();
        let log_b: Vec<f64> = b.iter().map(|v| v.ln()).collect();
        let (n_a, n_b) = (a.len() as f64, b.len() as f64);
        let se2_a = sample_variance(&log_a)? / n_a;
        let se2_b = sample_variance(&log_b)? / n_b;
        let se = (se2_a + se2_b).sqrt();
        Some(LogRatio {
            d: mean(&log_b) - mean(&log_a),
            se,
            // With no spread at all the df is 0/0; any value gives the same
            // zero-width interval, so take the pooled one.
            df: if se == 0.0 {
                n_a + n_b - 2.0
            } else {
                welch_satterthwaite_df(se2_a, n_a, se2_b, n_b)
            },
            se2: [se2_a, se2_b],
            boots: [a.len(), b.len()],
        })
    }

    /// Two-sided t interval at `level` of the relative difference
    /// `exp(d) − 1`: `exp(d ± t·se) − 1`. Exact under lognormal boot means,
    /// and it excludes zero exactly when the Welch test on log boot means
    /// rejects at 1 − `level`.
    pub fn interval(&self, level: f64) -> Interval {
        log_ratio_interval(self.d, self.se, self.df, level)
    }

    /// TOST for equivalence within ±`margin` at level `alpha` (see
    /// [`tost_log_ratio`]).
    pub fn tost(&self, margin: f64, alpha: f64) -> Tost {
        let (d, se, df) = (self.d, self.se, self.df);
        let (low, high) = ((1.0 - margin).ln(), (1.0 + margin).ln());
        let relative_difference = d.exp() - 1.0;
        let ci = self.interval(1.0 - 2.0 * alpha);
        if se == 0.0 {
            // No spread at all: the ratio is known exactly.
            let inside = low < d && d < high;
            return Tost {
                margin,
                relative_difference,
                ci,
                p_value: if inside { 0.0 } else { 1.0 },
                equivalent: inside,
                df,
            };
        }
        let t_dist = students_t(df);
        let p_low = t_dist.sf((d - low) / se);
        let p_high = t_dist.cdf((d - high) / se);
        let p_value = p_low.max(p_high);
        Tost {
            margin,
            relative_difference,
            ci,
            p_value,
            equivalent: p_value < alpha,
            df,
        }
    }
}

/// `exp(d ± t·se) − 1`, the two-sided t interval at `level` of a relative
/// difference estimated on the log scale (zero width when `se` is zero).
pub(crate) fn log_ratio_interval(d: f64, se: f64, df: f64, level: f64) -> Interval {
    let half = if se == 0.0 {
        0.0
    } else {
        students_t(df).inverse_cdf(0.5 + level / 2.0) * se
    };
    Interval {
        lower: (d - half).exp() - 1.0,
        upper: (d + half).exp() - 1.0,
        level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_df_reduces_to_pooled_df_for_equal_variances_and_sizes() {
        let df = welch_satterthwaite_df(1.0 / 5.0, 5.0, 1.0 / 5.0, 5.0);
        assert!((df - 8.0).abs() < 1e-12);
    }

    #[test]
    fn the_log_ratio_interval_is_tosts_and_agrees_with_welch_on_log_means() {
        let a = [10.0, 10.1, 9.95, 10.05, 10.02];
        let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
        for shift in [0.0, 0.002, 0.004, 0.006, 0.01, 0.03] {
            let b: Vec<f64> = a.iter().rev().map(|v| v * (1.0 + shift)).collect();
            let ratio = LogRatio::of_boot_means(&a, &b).unwrap();
            let tost = tost_log_ratio(&a, &b, 0.02, 0.05).unwrap();
            assert_eq!(ratio.interval(0.90), tost.ci);
            let welch = welch_t_test(&logs(&a), &logs(&b)).unwrap();
            assert_eq!(
                ratio.interval(0.95).contains(0.0),
                welch.p_value >= 0.05,
                "shift {shift}: p {}",
                welch.p_value
            );
        }
        assert_eq!(LogRatio::of_boot_means(&[1.0, -1.0], &[1.0, 2.0]), None);
        assert_eq!(LogRatio::of_boot_means(&[1.0], &[1.0, 2.0]), None);
    }

    #[test]
    fn welch_needs_two_values_per_side() {
        assert_eq!(welch_t_test(&[1.0], &[1.0, 2.0]), None);
        assert!(welch_t_test(&[1.0, 2.0], &[1.0, 2.0]).is_some());
    }

    #[test]
    fn welch_degenerate_cases() {
        let same = welch_t_test(&[2.0, 2.0], &[2.0, 2.0]).unwrap();
        assert_eq!(same.p_value, 1.0);
        let apart = welch_t_test(&[2.0, 2.0], &[3.0, 3.0]).unwrap();
        assert_eq!(apart.p_value, 0.0);
        assert!(apart.t > 0.0);
    }

    #[test]
    fn mann_whitney_exact_for_small_samples_and_guarded_for_large() {
        let separated = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!(separated.method, MannWhitneyMethod::Exact);
        // Complete separation of 3 vs 3: two-sided exact p = 2/C(6,3) = 0.1.
        assert!((separated.p_value - 0.1).abs() < 1e-15);
        assert_eq!(separated.u_b, 9.0);
        // 8 against 5000 would be 1.6e9 steps of the exact count.
        let a: Vec<f64> = (0..8).map(|i| i as f64 + 0.5).collect();
        let b: Vec<f64> = (0..5000).map(f64::from).collect();
        assert_eq!(
            mann_whitney_u(&a, &b).unwrap().method,
            MannWhitneyMethod::Asymptotic
        );
    }

    #[test]
    fn exact_u_distribution_is_symmetric_and_sums_to_one() {
        // P(U ≥ 0) = 1; P(U ≥ mn) = 1/C(m+n, m); symmetric around mn/2.
        assert_eq!(exact_u_upper_tail(0, 4, 6), 1.0);
        assert!((exact_u_upper_tail(24, 4, 6) - 1.0 / 210.0).abs() < 1e-15);
        for u in 0..=24 {
            let upper = exact_u_upper_tail(u, 4, 6);
            let lower_mirror = 1.0 - exact_u_upper_tail(24 - u + 1, 6, 4);
            assert!((upper - lower_mirror).abs() < 1e-12, "u = {u}");
        }
    }

    #[test]
    fn statrs_exact_mann_whitney_is_still_wrong_for_a_first_sample_not_larger() {
        // Pins why `mann_whitney_u` counts the exact distribution itself. If
        // this starts failing, statrs fixed its exact branch and the local
        // count can be replaced by it.
        let (_, p) = mannwhitneyu(
            &[4.0, 5.0, 6.0],
            &[1.0, 2.0, 3.0],
            MannWhitneyUMethod::Exact,
            Alternative::TwoSided,
        )
        .unwrap();
        assert_eq!(p, 1.0, "correct value is 0.1");
    }

    #[test]
    fn tost_interval_and_p_value_agree() {
        let a = [100.0, 101.0, 99.5, 100.4, 100.1];
        let b = [100.6, 100.9, 99.9, 101.0, 100.2];
        for margin in [0.002, 0.005, 0.01, 0.02] {
            let tost = tost_log_ratio(&a, &b, margin, 0.05).unwrap();
            let inside = -margin <= tost.ci.lower && tost.ci.upper <= margin;
            assert_eq!(inside, tost.equivalent, "margin {margin}");
        }
    }

    #[test]
    fn tost_rejects_non_positive_values() {
        assert_eq!(tost_log_ratio(&[1.0, 0.0], &[1.0, 2.0], 0.02, 0.05), None);
    }
}
