//! How often E-Divisive means ([`markbench::stats::change_points`]) calls a
//! change on series of nightly runs that have none, and how often it finds a
//! 2% step, at the noise measured on markbench's points: run means of 4
//! boots whose boot means vary by 0.3% (the 1-vCPU hackbench point, so a run
//! mean varies by 0.15%) or by 2% (an SMP point: 1% per run mean).
//!
//! The fast test asserts bounds a few hundred seeded series keep; the
//! ignored one prints the rates docs/history.md states:
//!
//! ```text
//! cargo test --release --test change_points -- --ignored --nocapture
//! ```

use markbench::stats::change_points::{e_divisive, ChangePointConfig};

#[path = "common/split_mix.rs"]
mod split_mix;
use split_mix::SplitMix64;

/// Boots per run of the quick suite.
const BOOTS: f64 = 4.0;
/// Boot-to-boot CoV of the 1-vCPU hackbench point's boot means.
const UP_BOOT_COV: f64 = 0.003;
/// Boot-to-boot CoV of an SMP point's boot means.
const SMP_BOOT_COV: f64 = 0.02;

/// `runs` run means with the step `step` (a fraction) from run `at` on.
fn series(rng: &mut SplitMix64, runs: usize, boot_cov: f64, at: usize, step: f64) -> Vec<f64> {
    let run_cov = boot_cov / BOOTS.sqrt();
    (0..runs)
        .map(|i| {
            let level = if i >= at { 1.0 + step } else { 1.0 };
            20.0 * level * (1.0 + run_cov * rng.standard_normal())
        })
        .collect()
}

/// Share of `trials` flat series with any change point, and share of step
/// series with one found within a run of the step.
fn rates(trials: usize, runs: usize, boot_cov: f64, seed: u64) -> (f64, f64) {
    let config = ChangePointConfig::default();
    let mut rng = SplitMix64(seed);
    let at = runs / 2;
    let (mut alarms, mut found) = (0, 0);
    for _ in 0..trials {
        if !e_divisive(&series(&mut rng, runs, boot_cov, runs, 0.0), &config).is_empty() {
            alarms += 1;
        }
        let stepped = e_divisive(&series(&mut rng, runs, boot_cov, at, 0.02), &config);
        if stepped.iter().any(|c| c.index.abs_diff(at) <= 1) {
            found += 1;
        }
    }
    (alarms as f64 / trials as f64, found as f64 / trials as f64)
}

#[test]
fn flat_series_rarely_alarm_and_a_two_percent_step_is_found() {
    // 0.01 per series expected; 200 trials give at most 8 alarms with
    // probability > 0.999 (binomial).
    let (alarms, found) = rates(200, 14, UP_BOOT_COV, 1);
    assert!(alarms <= 0.04, "false alarms {alarms}");
    // A 2% step is 13 run-to-run standard deviations at this noise.
    assert!(found >= 0.97, "detection {found}");
    let (alarms, found) = rates(200, 20, SMP_BOOT_COV, 2);
    assert!(alarms <= 0.04, "false alarms {alarms}");
    // Two standard deviations, ten runs a side: found about half the time.
    assert!(found >= 0.45, "detection {found}");
}

#[test]
#[ignore = "prints the rates docs/history.md states; run with --release --nocapture"]
fn print_rates() {
    let config = ChangePointConfig::default();
    println!(
        "E-Divisive means, permutation test: alpha {}, {} permutations, at least {} runs a side",
        config.alpha, config.permutations, config.min_segment
    );
    println!("| noise (boot means CoV, 4 boots a run) | runs | false alarms (flat) | 2% step found (step halfway) |");
    println!("|---|---:|---:|---:|");
    for (what, cov) in [("1-vCPU 0.3%", UP_BOOT_COV), ("SMP 2%", SMP_BOOT_COV)] {
        for runs in [8, 10, 12, 14, 20, 30] {
            let (alarms, found) = rates(2000, runs, cov, runs as u64);
            println!(
                "| {what} | {runs} | {:.1}% | {:.1}% |",
                alarms * 100.0,
                found * 100.0
            );
        }
    }
}
