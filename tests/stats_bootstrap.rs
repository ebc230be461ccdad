//! The hierarchical bootstrap respects the boot structure: when boots differ
//! much more than iterations within a boot, its interval must be as wide as
//! the between-boot spread implies. An interval that resampled iterations as
//! if they were independent would cover the truth far less often (here the
//! iid standard error is about 0.45 of the right one, so a nominal 95%
//! interval would cover about 62% of the time).

use markbench::stats::{analyze_sweep, AnalysisConfig, PointInput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BOOTS: usize = 20;
const ITERATIONS: usize = 5;

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Boot effects of 2%, iteration noise of 0.2%.
fn side(rng: &mut ChaCha8Rng) -> Vec<Vec<f64>> {
    (0..BOOTS)
        .map(|_| {
            let boot = 0.02 * normal(rng);
            (0..ITERATIONS)
                .map(|_| 10.0 * (boot + 0.002 * normal(rng)).exp())
                .collect()
        })
        .collect()
}

#[test]
fn hierarchical_interval_covers_an_aa_difference_at_about_its_level() {
    // 100 replications keep this test to a few seconds in a debug build; the
    // binomial s.e. of the coverage is then ≈ 0.022, so 0.85 is more than four
    // standard errors below the nominal 0.95 (a percentile bootstrap with 20
    // boots runs slightly narrow, resampling both stages slightly wide).
    const REPLICATIONS: usize = 100;
    let cfg = AnalysisConfig {
        resamples: 1_000,
        ..AnalysisConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (mut covered, mut width_ratio_sum) = (0, 0.0);
    for _ in 0..REPLICATIONS {
        let (a, b) = (side(&mut rng), side(&mut rng));
        let point = PointInput {
            a: &a,
            b: &b,
            higher_is_better: false,
        };
        let result = &analyze_sweep(&[point], &cfg).unwrap()[0];
        let ci = result.relative_difference_ci.unwrap();
        covered += usize::from(ci.contains(0.0));
        // Compare with the t-based interval implied by the boot means.
        let half_width_a =
            result.a.mean_ci.unwrap().interval.upper - result.a.mean_ci.unwrap().center;
        let half_width_b =
            result.b.mean_ci.unwrap().interval.upper - result.b.mean_ci.unwrap().center;
        let t_width = 2.0 * (half_width_a.powi(2) + half_width_b.powi(2)).sqrt() / result.a.mean;
        width_ratio_sum += (ci.upper - ci.lower) / t_width;
    }
    let coverage = covered as f64 / REPLICATIONS as f64;
    let mean_width_ratio = width_ratio_sum / REPLICATIONS as f64;
    println!("bootstrap coverage {coverage:.2}, width / t-interval width {mean_width_ratio:.3}");
    assert!(coverage >= 0.85, "coverage {coverage}");
    // Neither much narrower nor much wider than the t interval on boot means.
    assert!(
        (0.8..=1.25).contains(&mean_width_ratio),
        "width ratio {mean_width_ratio}"
    );
}
