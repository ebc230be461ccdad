//! Hierarchical (two-stage) bootstrap of the relative difference `B/A − 1`.
//!
//! Davison & Hinkley, "Bootstrap Methods and their Application", CUP 1997,
//! §3.8 (hierarchical data): resample the top-level units (boots) with
//! replacement, then the observations (iterations) within each chosen unit.
//! Resampling both stages with replacement slightly overstates the variance
//! (D&H §3.8, the within-stage variance is counted twice); for a confidence
//! interval that errs on the safe side. The interval is the percentile
//! interval (D&H §5.3.1). With few boots (say 5) a percentile interval is
//! somewhat too narrow, as every bootstrap interval is with tiny samples;
//! the verdict therefore rests on the Welch and TOST t procedures, and this
//! interval is reported as a distribution-free description.
//!
//! Cost. A naive resample draws every iteration of every chosen boot:
//! O(resamples × samples), 10¹⁰ draws for 10⁶ samples × 10⁴ resamples. The
//! only thing a resample needs from a boot is the mean of its redrawn
//! iterations, whose bootstrap distribution has mean ȳ_j and variance
//! σ̂²_j / r_j (σ̂²_j the plug-in variance, divisor r_j; D&H §2.2) and is
//! normal to O(r_j^{-1/2}) by the central limit theorem. So for boots with more
//! than `exact_max_iterations` iterations we draw that mean from
//! N(ȳ_j, σ̂²_j / r_j) instead of redrawing r_j values; smaller boots (the usual
//! case: a handful of iterations) are resampled exactly. The cost becomes
//! O(resamples × boots × min(r_j, exact_max_iterations)).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::summary::{mean, Interval};

/// What a resample needs to know about one boot.
struct BootDigest<'a> {
    values: &'a [f64],
    mean: f64,
    /// Standard deviation of the bootstrap mean of this boot, σ̂ / √r.
    resample_mean_sd: f64,
    exact: bool,
}

impl<'a> BootDigest<'a> {
    fn new(values: &'a [f64], exact_max_iterations: usize) -> Self {
        let mean = mean(values);
        let r = values.len() as f64;
        let plug_in_variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / r;
        BootDigest {
            values,
            mean,
            resample_mean_sd: (plug_in_variance / r).sqrt(),
            exact: values.len() <= exact_max_iterations,
        }
    }

    /// Sum of the boot's iterations in one resample (mean × r, so that boots
    /// keep their weight in the mean of all samples).
    fn resample_sum(&self, rng: &mut ChaCha8Rng, normal: &mut StandardNormal) -> f64 {
        let r = self.values.len();
        if self.exact {
            (0..r).map(|_| self.values[rng.random_range(0..r)]).sum()
        } else {
            (self.mean + self.resample_mean_sd * normal.sample(rng)) * r as f64
        }
    }
}

/// One variant's boots, digested once and resampled many times.
struct Side<'a> {
    boots: Vec<BootDigest<'a>>,
}

impl<'a> Side<'a> {
    fn new(boots: &'a [Vec<f64>], exact_max_iterations: usize) -> Self {
        Side {
            boots: boots
                .iter()
                .map(|b| BootDigest::new(b, exact_max_iterations))
                .collect(),
        }
    }

    /// Mean of all samples of one two-stage resample, mirroring the point
    /// estimate (mean of all samples).
    fn resample_mean(&self, rng: &mut ChaCha8Rng, normal: &mut StandardNormal) -> f64 {
        let k = self.boots.len();
        let mut sum = 0.0;
        let mut count = 0usize;
        for _ in 0..k {
            let boot = &self.boots[rng.random_range(0..k)];
            sum += boot.resample_sum(rng, normal);
            count += boot.values.len();
        }
        sum / count as f64
    }
}

/// Percentile interval at `level` of `B/A − 1` from `resamples` two-stage
/// resamples. `None` when a side has fewer than two boots (resampling one
/// boot would ignore the between-boot variance and give a falsely narrow
/// interval), when `resamples` is zero, or when a resampled A mean is zero.
pub fn relative_difference_ci(
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    level: f64,
    resamples: usize,
    exact_max_iterations: usize,
    rng: &mut ChaCha8Rng,
) -> Option<Interval> {
    if a.len() < 2 || b.len() < 2 || resamples == 0 {
        return None;
    }
    let (side_a, side_b) = (
        Side::new(a, exact_max_iterations),
        Side::new(b, exact_max_iterations),
    );
    let mut normal = StandardNormal::default();
    let mut estimates = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mean_a = side_a.resample_mean(rng, &mut normal);
        let mean_b = side_b.resample_mean(rng, &mut normal);
        if mean_a == 0.0 {
            return None;
        }
        estimates.push(mean_b / mean_a - 1.0);
    }
    estimates.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
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

/// Standard normal deviates by the Box–Muller transform (Box & Muller, "A note
/// on the generation of random normal deviates", Ann. Math. Statist. 29, 1958).
/// Written here because statrs samples through rand 0.10 while this crate uses
/// rand 0.9. Each transform yields two deviates; the second is kept.
#[derive(Default)]
pub(crate) struct StandardNormal {
    spare: Option<f64>,
}

impl StandardNormal {
    pub(crate) fn sample(&mut self, rng: &mut impl Rng) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // 1 − U lies in (0, 1], so the logarithm is finite.
        let u1: f64 = 1.0 - rng.random::<f64>();
        let u2: f64 = rng.random::<f64>();
        let radius = (-2.0 * u1.ln()).sqrt();
        let angle = std::f64::consts::TAU * u2;
        self.spare = Some(radius * angle.sin());
        radius * angle.cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn quantile_matches_hyndman_fan_type_7() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&sorted, 0.0), 1.0);
        assert_eq!(quantile_sorted(&sorted, 1.0), 4.0);
        assert_eq!(quantile_sorted(&sorted, 0.5), 2.5);
        assert!((quantile_sorted(&sorted, 0.25) - 1.75).abs() < 1e-12);
    }

    #[test]
    fn box_muller_has_unit_moments() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut normal = StandardNormal::default();
        let draws: Vec<f64> = (0..200_000).map(|_| normal.sample(&mut rng)).collect();
        let m = mean(&draws);
        let var = draws.iter().map(|z| (z - m).powi(2)).sum::<f64>() / draws.len() as f64;
        // Standard errors: 1/√n ≈ 0.0022 for the mean, √(2/n) ≈ 0.0032 for the variance.
        assert!(m.abs() < 0.01, "mean {m}");
        assert!((var - 1.0).abs() < 0.015, "variance {var}");
    }

    #[test]
    fn normal_shortcut_matches_exact_resampling_width() {
        // Same data resampled exactly and through the normal shortcut: the
        // interval widths should agree closely for boots of 200 iterations.
        let boots = |shift: f64| -> Vec<Vec<f64>> {
            (0..6)
                .map(|j| {
                    (0..200)
                        .map(|k| {
                            100.0 + shift + j as f64 * 0.01 + ((k * 37 % 101) as f64 - 50.0) * 0.02
                        })
                        .collect()
                })
                .collect()
        };
        let (a, b) = (boots(0.0), boots(1.0));
        let width = |exact_max: usize| {
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let ci = relative_difference_ci(&a, &b, 0.95, 4000, exact_max, &mut rng).unwrap();
            ci.upper - ci.lower
        };
        let (exact, shortcut) = (width(usize::MAX), width(0));
        assert!(
            (exact / shortcut - 1.0).abs() < 0.05,
            "exact {exact}, shortcut {shortcut}"
        );
    }
}
