//! Hierarchical bootstrap of the relative difference `B/A − 1`: a
//! distribution-free second opinion on the report's t interval
//! ([`super::hypothesis::LogRatio`]).
//!
//! Davison & Hinkley, "Bootstrap Methods and their Application", CUP 1997,
//! §3.8 (hierarchical data), compare two ways to resample a two-level design:
//! boots with replacement and then iterations *with* replacement inside each
//! chosen boot (their strategy 2), or iterations *without* replacement, which
//! keeps each chosen boot's iterations as they are (strategy 1). Strategy 2
//! counts the within-boot variance twice: it is already in the spread of the
//! boot means, and redrawing the iterations adds it again. That widens the
//! interval most where the boot means are most precise (many iterations a
//! boot), and far more when the iterations of a boot follow a pattern that
//! every boot repeats (the first runs after boot slower, as under icount),
//! which the boot means rightly do not show. So this is strategy 1: boots are
//! resampled, each with all of its iterations. The estimate is the mean of
//! all samples, as the point estimate is, so a boot keeps the weight of its
//! iteration count.
//!
//! A percentile interval from few units is too narrow in two ways: the
//! bootstrap variance of a mean is (n − 1)/n of the unbiased one, and it uses
//! normal rather than t quantiles. The "expanded percentile interval" of
//! Hesterberg ("What Teachers Should Know About the Bootstrap", The American
//! Statistician 69(4), 2015, §4.3) corrects both: it reads the bootstrap
//! distribution at the level whose normal quantile is
//! `√(n/(n − 1)) · t_{n−1}` instead of `t`'s. For two sides the factor is the
//! ratio of the unbiased to the bootstrap variance of the log ratio, and the t
//! quantile has the Welch–Satterthwaite df of the boot means' log ratio.
//!
//! The interval cannot reach beyond the most extreme resample. With two or
//! three boots a side that bound is near the range of the boot means, too
//! narrow for any claim; from about five boots a side it tracks the t
//! interval (tests/stats_bootstrap.rs measures both).
//!
//! Cost: O(resamples × boots) after one pass over the samples, whatever the
//! number of iterations per boot.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{ContinuousCDF, Normal};

use super::hypothesis::LogRatio;
use super::summary::{students_t, Interval};

/// One variant's boots, each reduced to its sum and count.
struct Side {
    sums: Vec<f64>,
    counts: Vec<usize>,
}

impl Side {
    fn new(boots: &[Vec<f64>]) -> Self {
        Side {
            sums: boots.iter().map(|b| b.iter().sum()).collect(),
            counts: boots.iter().map(Vec::len).collect(),
        }
    }

    /// Mean of all samples of one resample of the boots.
    fn resample_mean(&self, rng: &mut ChaCha8Rng) -> f64 {
        let k = self.sums.len();
        let (mut sum, mut count) = (0.0, 0usize);
        for _ in 0..k {
            let j = rng.random_range(0..k);
            sum += self.sums[j];
            count += self.counts[j];
        }
        sum / count as f64
    }
}

/// The tail probability at which to read the bootstrap distribution so that
/// the interval has the coverage of a t interval at `level` (Hesterberg's
/// expansion, above), from the log ratio of the boot means. Without one (a
/// boot mean that is not positive) it is the plain percentile tail.
fn expanded_tail(ratio: Option<&LogRatio>, level: f64) -> f64 {
    let plain = (1.0 - level) / 2.0;
    let Some(ratio) = ratio else {
        return plain;
    };
    let unbiased = ratio.se2[0] + ratio.se2[1];
    let shrink = |i: usize| (ratio.boots[i] as f64 - 1.0) / ratio.boots[i] as f64;
    let bootstrap = ratio.se2[0] * shrink(0) + ratio.se2[1] * shrink(1);
    if unbiased == 0.0 || bootstrap == 0.0 {
        return plain;
    }
    let t = students_t(ratio.df).inverse_cdf(1.0 - plain);
    let z = t * (unbiased / bootstrap).sqrt();
    Normal::standard().sf(z)
}

/// Expanded percentile interval at `level` of `B/A − 1` from `resamples`
/// resamples of the boots; `ratio` is the log ratio of the same boots' means
/// (it sets the expansion). `None` when a side has fewer than two boots
/// (resampling one boot would ignore the between-boot variance and give a
/// falsely narrow interval), when `resamples` is zero, or when a resampled A
/// mean is zero.
pub fn relative_difference_ci(
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    ratio: Option<&LogRatio>,
    level: f64,
    resamples: usize,
    rng: &mut ChaCha8Rng,
) -> Option<Interval> {
    if a.len() < 2 || b.len() < 2 || resamples == 0 {
        return None;
    }
    let (side_a, side_b) = (Side::new(a), Side::new(b));
    let mut estimates = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mean_a = side_a.resample_mean(rng);
        let mean_b = side_b.resample_mean(rng);
        if mean_a == 0.0 {
            return None;
        }
        estimates.push(mean_b / mean_a - 1.0);
    }
    estimates.sort_by(f64::total_cmp);
    let tail = expanded_tail(ratio, level);
    Some(Interval {
        lower: quantile_sorted(&estimates, tail),
        upper: quantile_sorted(&estimates, 1.0 - tail),
        level,
    })
}

/// Quantile of sorted data by linear interpolation between order statistics
/// (Hyndman & Fan, "Sample quantiles in statistical packages", Am. Stat. 50,
/// 1996, definition 7; numpy's and R's default).
pub(crate) fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let below = h.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    sorted[below] + (h - below as f64) * (sorted[above] - sorted[below])
}

#[cfg(test)]
mod tests {
    use super::super::summary::mean;
    use super::*;
    use rand::SeedableRng;

    fn boots(means: &[f64], spread: f64, iterations: usize) -> Vec<Vec<f64>> {
        means
            .iter()
            .map(|m| {
                (0..iterations)
                    .map(|k| m + spread * (k as f64 - (iterations - 1) as f64 / 2.0))
                    .collect()
            })
            .collect()
    }

    fn log_ratio(a: &[Vec<f64>], b: &[Vec<f64>]) -> Option<LogRatio> {
        let means = |boots: &[Vec<f64>]| boots.iter().map(|v| mean(v)).collect::<Vec<f64>>();
        LogRatio::of_boot_means(&means(a), &means(b))
    }

    #[test]
    fn iterations_that_every_boot_repeats_do_not_widen_the_interval() {
        // Each boot runs the same ±10% pattern of iterations around its mean;
        // the boot means differ by 0.1%. Only the boot means carry
        // information about the kernel, so the interval must be as narrow as
        // they are (redrawing iterations would make it ±5% wide).
        let a = boots(&[100.0, 100.1, 99.9, 100.05, 99.95], 1.0, 21);
        let b = boots(&[101.0, 101.1, 100.9, 101.05, 100.95], 1.0, 21);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let ratio = log_ratio(&a, &b);
        let ci = relative_difference_ci(&a, &b, ratio.as_ref(), 0.95, 10_000, &mut rng).unwrap();
        assert!(ci.lower > 0.008 && ci.upper < 0.012, "{ci:?}");
    }

    #[test]
    fn the_expansion_reads_further_out_with_fewer_boots() {
        let tail = |n: usize| {
            let means: Vec<f64> = (0..n).map(|j| 100.0 + (j % 3) as f64).collect();
            let side = boots(&means, 0.0, 1);
            expanded_tail(log_ratio(&side, &side).as_ref(), 0.95)
        };
        let (three, five, fifty) = (tail(3), tail(5), tail(50));
        assert!(three < five && five < fifty, "{three} {five} {fifty}");
        assert!(fifty < 0.025 && fifty > 0.02, "{fifty}");
        // A side of one boot has no spread to expand: the plain tail.
        let one_boot = expanded_tail(
            log_ratio(&boots(&[1.0], 0.0, 3), &boots(&[1.0, 2.0], 0.0, 3)).as_ref(),
            0.95,
        );
        assert!((one_boot - 0.025).abs() < 1e-12, "{one_boot}");
    }

    #[test]
    fn quantile_matches_hyndman_fan_type_7() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&sorted, 0.0), 1.0);
        assert_eq!(quantile_sorted(&sorted, 1.0), 4.0);
        assert_eq!(quantile_sorted(&sorted, 0.5), 2.5);
        assert!((quantile_sorted(&sorted, 0.25) - 1.75).abs() < 1e-12);
    }
}
