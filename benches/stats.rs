//! How long the statistics take on a large run.
//!
//!     cargo bench --bench stats
//!
//! prints, before criterion's own measurements, one wall-clock figure per
//! scenario:
//! - `million`: one million samples, 48 points × 2 variants × 10 boots ×
//!   1042 iterations (1,000,320 samples), 10,000 bootstrap resamples per
//!   point. The bootstrap resamples boots, each with all of its iterations
//!   (see `stats::bootstrap`), so after one pass over the samples its cost
//!   does not grow with the iterations per boot.
//! - `typical`: 48 points × 2 variants × 5 boots × 10 iterations, 10,000
//!   resamples (the shape of a real run).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use markbench::base::stats::{analyze_sweep, AnalysisConfig, PointInput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Samples of one variant at one point: outer = boots, inner = iterations.
type Boots = Vec<Vec<f64>>;

struct Sweep {
    sides: Vec<(Boots, Boots)>,
}

impl Sweep {
    /// Lognormal two-level noise (1% between boots, 1% within) around
    /// hackbench-like seconds; B 0.5% slower.
    fn generate(points: usize, boots: usize, iterations: usize) -> Sweep {
        let mut rng = ChaCha8Rng::seed_from_u64(2024);
        let mut normal = move || {
            let u1: f64 = 1.0 - rng.random::<f64>();
            let u2: f64 = rng.random::<f64>();
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        };
        let mut side = |base: f64| -> Boots {
            (0..boots)
                .map(|_| {
                    let boot = 0.01 * normal();
                    (0..iterations)
                        .map(|_| base * (boot + 0.01 * normal()).exp())
                        .collect()
                })
                .collect()
        };
        let sides = (0..points)
            .map(|i| {
                let base = 5.0 * (i + 1) as f64;
                (side(base), side(base * 1.005))
            })
            .collect();
        Sweep { sides }
    }

    fn samples(&self) -> usize {
        self.sides
            .iter()
            .flat_map(|(a, b)| a.iter().chain(b))
            .map(Vec::len)
            .sum()
    }

    fn points(&self) -> Vec<PointInput<'_>> {
        self.sides
            .iter()
            .map(|(a, b)| PointInput {
                a,
                b,
                higher_is_better: false,
            })
            .collect()
    }
}

fn time_once(sweep: &Sweep, cfg: &AnalysisConfig) -> Duration {
    let points = sweep.points();
    let start = Instant::now();
    black_box(analyze_sweep(black_box(&points), cfg).unwrap());
    start.elapsed()
}

fn print_figures(million: &Sweep, typical: &Sweep, cfg: &AnalysisConfig) {
    println!(
        "million: analyze_sweep on {} samples (48 points x 2 variants x 10 boots x 1042 \
         iterations), {} resamples per point: {:.3} s",
        million.samples(),
        cfg.resamples,
        time_once(million, cfg).as_secs_f64()
    );
    println!(
        "typical: analyze_sweep on {} samples (48 points x 2 variants x 5 boots x 10 \
         iterations), {} resamples per point: {:.3} s",
        typical.samples(),
        cfg.resamples,
        time_once(typical, cfg).as_secs_f64()
    );
}

fn bench(c: &mut Criterion) {
    let cfg = AnalysisConfig::default();
    let million = Sweep::generate(48, 10, 1042);
    let typical = Sweep::generate(48, 5, 10);
    print_figures(&million, &typical, &cfg);

    let mut group = c.benchmark_group("analyze_sweep");
    // Each run takes a sizeable fraction of a second: few flat samples.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    for (name, sweep) in [("million", &million), ("typical", &typical)] {
        let points = sweep.points();
        group.bench_function(name, |b| {
            b.iter(|| analyze_sweep(black_box(&points), &cfg).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
