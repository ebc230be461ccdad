//! What the analysis says about hand-built sweeps: seed-style tables, verdict
//! direction, the summary line, A/A calibration, bootstrap reproducibility,
//! and how bad input is reported.

use markbench::base::stats::{
    analyze_sweep, calibrate_aa, summary_line, AnalysisConfig, Correction, PointInput, StatsError,
    Verdict,
};

/// Samples of one variant at one point: outer = boots, inner = iterations.
type Boots = Vec<Vec<f64>>;

/// Aoki 2008 (Hideo Aoki, LKML), 2 CPUs: hackbench seconds without and with
/// markers, one averaged value per cell, and the diff % the mail printed.
const AOKI_2008_TWO_CPUS: [(f64, f64, f64); 16] = [
    (4.811, 4.872, 1.27),
    (9.854, 10.309, 4.61),
    (15.602, 15.040, -3.6),
    (20.489, 20.380, -0.53),
    (25.798, 25.652, -0.56),
    (31.260, 30.797, -1.48),
    (36.121, 35.770, -0.97),
    (42.288, 42.102, -0.44),
    (47.778, 47.253, -1.1),
    (51.953, 52.278, 0.63),
    (58.401, 57.700, -1.2),
    (63.334, 63.222, -0.18),
    (68.816, 68.511, -0.44),
    (74.667, 74.088, -0.78),
    (78.612, 79.582, 1.23),
    (85.431, 85.263, -0.2),
];

fn boots_scaled(boot_factors: &[f64], iteration_factors: &[f64], base: f64) -> Boots {
    boot_factors
        .iter()
        .map(|b| iteration_factors.iter().map(|i| base * b * i).collect())
        .collect()
}

/// Five boots whose means spread ±0.5% around `base`, three iterations each.
fn quiet(base: f64) -> Boots {
    boots_scaled(
        &[0.995, 0.9975, 1.0, 1.0025, 1.005],
        &[0.999, 1.0, 1.001],
        base,
    )
}

/// Five boots whose means spread ±10%: nothing can be concluded.
fn noisy(base: f64) -> Boots {
    boots_scaled(&[0.9, 0.95, 1.0, 1.05, 1.1], &[0.99, 1.0, 1.01], base)
}

fn scaled(boots: &[Vec<f64>], factor: f64) -> Boots {
    boots
        .iter()
        .map(|b| b.iter().map(|v| v * factor).collect())
        .collect()
}

fn no_bootstrap() -> AnalysisConfig {
    AnalysisConfig {
        resamples: 0,
        ..AnalysisConfig::default()
    }
}

#[test]
fn a_seed_style_table_is_insufficient_data_without_any_p_value() {
    let sides: Vec<(Boots, Boots)> = AOKI_2008_TWO_CPUS
        .iter()
        .map(|&(without, with, _)| (vec![vec![without]], vec![vec![with]]))
        .collect();
    let points: Vec<PointInput> = sides
        .iter()
        .map(|(a, b)| PointInput {
            a,
            b,
            higher_is_better: false,
        })
        .collect();
    let cfg = AnalysisConfig::default();
    let results = analyze_sweep(&points, &cfg).unwrap();

    for (r, &(_, _, mail_diff_percent)) in results.iter().zip(&AOKI_2008_TWO_CPUS) {
        assert_eq!(r.verdict, Verdict::InsufficientData);
        assert_eq!(r.p_value(), None);
        assert_eq!(r.adjusted_p_value, None);
        assert_eq!(r.mann_whitney, None);
        assert_eq!(r.tost, None);
        assert_eq!(r.relative_difference_ci, None);
        assert_eq!(r.bootstrap_ci, None);
        assert_eq!(r.a.mean_ci, None);
        // The point estimate is still reported, and it is the mail's diff %
        // (which was printed truncated or rounded to at most two decimals).
        let ours = r.relative_difference.unwrap() * 100.0;
        assert!(
            (ours - mail_diff_percent).abs() < 0.01,
            "{ours} vs {mail_diff_percent}"
        );
    }
    assert_eq!(
        summary_line(&results, &cfg),
        "insufficient data on all 16 points (fewer than 2 boots per variant): \
         no significance or equivalence claimed"
    );
}

#[test]
fn regression_follows_the_metric_direction() {
    let a = quiet(20.0);
    let larger = scaled(&a, 1.10);
    let smaller = scaled(&a, 0.90);
    let cases = [
        (false, &larger, Verdict::Regression),   // seconds: B slower
        (false, &smaller, Verdict::Improvement), // seconds: B faster
        (true, &larger, Verdict::Improvement),   // packets/s: B more
        (true, &smaller, Verdict::Regression),   // packets/s: B fewer
    ];
    for (higher_is_better, b, expected) in cases {
        let point = PointInput {
            a: &a,
            b,
            higher_is_better,
        };
        let result = &analyze_sweep(&[point], &no_bootstrap()).unwrap()[0];
        assert_eq!(
            result.verdict, expected,
            "higher_is_better = {higher_is_better}, rel diff {:?}",
            result.relative_difference
        );
    }
}

/// Equivalent, regression, improvement, inconclusive, insufficient: one each.
fn one_of_each_verdict() -> Vec<(Boots, Boots)> {
    let a = quiet(20.0);
    vec![
        (a.clone(), scaled(&a, 1.001)),
        (a.clone(), scaled(&a, 1.10)),
        (a.clone(), scaled(&a, 0.95)),
        (noisy(20.0), noisy(20.0)),
        (vec![vec![20.0, 20.1]], vec![vec![20.2, 20.3]]),
    ]
}

fn analyze_pairs(
    pairs: &[(Boots, Boots)],
    cfg: &AnalysisConfig,
) -> Vec<markbench::base::stats::PointAnalysis> {
    let points: Vec<PointInput> = pairs
        .iter()
        .map(|(a, b)| PointInput {
            a,
            b,
            higher_is_better: false,
        })
        .collect();
    analyze_sweep(&points, cfg).unwrap()
}

#[test]
fn summary_line_counts_every_verdict_and_names_the_largest_change() {
    let cfg = no_bootstrap();
    let results = analyze_pairs(&one_of_each_verdict(), &cfg);
    let verdicts: Vec<Verdict> = results.iter().map(|r| r.verdict).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Equivalent,
            Verdict::Regression,
            Verdict::Improvement,
            Verdict::NoSignificantDifference,
            Verdict::InsufficientData,
        ]
    );
    assert_eq!(
        summary_line(&results, &cfg),
        "equivalent within ±2% on 1 of 5 points (TOST, α = 0.05); \
         1 regression (Holm-adjusted p < 0.05; largest +10%); \
         1 improvement (Holm-adjusted p < 0.05; largest −5%); \
         1 inconclusive (no significant difference, not shown within ±2%); \
         1 with insufficient data (fewer than 2 boots per variant)"
    );
    let bh = AnalysisConfig {
        correction: Correction::BenjaminiHochberg,
        margin: 0.025,
        ..no_bootstrap()
    };
    let line = summary_line(&analyze_pairs(&one_of_each_verdict(), &bh), &bh);
    assert!(
        line.starts_with("equivalent within ±2.5% on 1 of 5 points"),
        "{line}"
    );
    assert!(
        line.contains("Benjamini-Hochberg-adjusted p < 0.05"),
        "{line}"
    );
}

#[test]
fn aa_calibration_reports_noise_floor_and_false_positive_rate() {
    let results = analyze_pairs(&one_of_each_verdict(), &no_bootstrap());
    let calibration = calibrate_aa(&results);
    assert_eq!(calibration.points, 5);
    assert_eq!(calibration.testable_points, 4);
    // Regression and improvement are both false positives in an A/A run.
    assert_eq!(calibration.significant_points, 2);
    assert_eq!(calibration.false_positive_rate, Some(0.5));
    assert_eq!(calibration.equivalent_rate, Some(0.25));
    // |rel diff| = 0.001, 0.10, 0.05, 0, and 20.25/20.05 − 1 ≈ 0.009975.
    let max = calibration.max_abs_relative_difference.unwrap();
    assert!((max - 0.10).abs() < 1e-12, "{max}");
    let median = calibration.median_abs_relative_difference.unwrap();
    assert!((median - (20.25 / 20.05 - 1.0)).abs() < 1e-12, "{median}");
    assert!(calibration.median_cov.unwrap() > 0.0);
}

#[test]
fn bootstrap_interval_is_reproducible_and_independent_of_other_points() {
    let a = quiet(20.0);
    let b = scaled(&noisy(20.0), 1.01);
    let other = noisy(40.0);
    let cfg = AnalysisConfig {
        resamples: 2_000,
        ..AnalysisConfig::default()
    };
    let point = PointInput {
        a: &a,
        b: &b,
        higher_is_better: false,
    };
    let unrelated = PointInput {
        a: &other,
        b: &other,
        higher_is_better: true,
    };
    let first = analyze_sweep(&[point, unrelated], &cfg).unwrap();
    let again = analyze_sweep(&[point, unrelated], &cfg).unwrap();
    assert_eq!(first, again, "same seed, same results");

    // Point 0's stream does not depend on what point 1 is.
    let with_other_neighbour = analyze_sweep(&[point, point], &cfg).unwrap();
    assert_eq!(first[0].bootstrap_ci, with_other_neighbour[0].bootstrap_ci);
    // Different points get different streams, even with identical data.
    assert_ne!(
        with_other_neighbour[0].bootstrap_ci,
        with_other_neighbour[1].bootstrap_ci
    );
    let reseeded = analyze_sweep(
        &[point],
        &AnalysisConfig {
            seed: cfg.seed + 1,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert_ne!(first[0].bootstrap_ci, reseeded[0].bootstrap_ci);

    let ci = first[0].bootstrap_ci.unwrap();
    assert_eq!(ci.level, 0.95);
    assert!(ci.contains(first[0].relative_difference.unwrap()));
    // The report's interval is a t interval: no seed enters it.
    assert_eq!(
        first[0].relative_difference_ci,
        reseeded[0].relative_difference_ci
    );
    assert!(AnalysisConfig::default().resamples >= 10_000);
}

#[test]
fn bad_input_names_the_point_and_variant() {
    let good = quiet(20.0);
    let with_failed_boot = vec![vec![20.0, 20.1], vec![]];
    let points = [
        PointInput {
            a: &good,
            b: &good,
            higher_is_better: false,
        },
        PointInput {
            a: &good,
            b: &with_failed_boot,
            higher_is_better: false,
        },
    ];
    let error = analyze_sweep(&points, &no_bootstrap()).unwrap_err();
    assert_eq!(
        error,
        StatsError::InPoint {
            point: 1,
            variant: 'B',
            source: Box::new(StatsError::EmptyBoot { boot: 1 }),
        }
    );
    assert_eq!(
        error.to_string(),
        "point 1, variant B: boot 1 has no measurements; drop failed boots before analysis"
    );
    let bad_margin = AnalysisConfig {
        margin: 2.0,
        ..AnalysisConfig::default()
    };
    assert!(matches!(
        analyze_sweep(&points[..1], &bad_margin),
        Err(StatsError::InvalidConfig(_))
    ));
}

#[test]
fn results_serialize_to_json_with_nulls_for_missing_tests() {
    let results = analyze_pairs(&one_of_each_verdict(), &no_bootstrap());
    let json = serde_json::to_value(&results).unwrap();
    assert_eq!(json[1]["verdict"], "regression");
    assert_eq!(json[3]["verdict"], "no_significant_difference");
    assert_eq!(json[4]["verdict"], "insufficient_data");
    assert!(json[4]["welch"].is_null());
    assert!(json[4]["adjusted_p_value"].is_null());
    assert_eq!(
        json[4]["a"]["mean_ci"]["basis"],
        "iterations_of_single_boot"
    );
}

#[test]
fn a_side_without_boots_is_insufficient_data_and_leaves_the_family_alone() {
    let (a, b) = (quiet(20.0), quiet(22.0));
    let none: Boots = Vec::new();
    let measured = PointInput {
        a: &a,
        b: &b,
        higher_is_better: false,
    };
    let alone = analyze_sweep(&[measured], &no_bootstrap()).unwrap();
    for missing in [
        PointInput {
            a: &a,
            b: &none,
            higher_is_better: false,
        },
        PointInput {
            a: &none,
            b: &b,
            higher_is_better: false,
        },
    ] {
        let both = analyze_sweep(&[measured, missing], &no_bootstrap()).unwrap();
        assert_eq!(both[0].verdict, Verdict::Regression);
        // The unmeasured point has no p-value, so it is not in the family.
        assert_eq!(both[0].adjusted_p_value, alone[0].adjusted_p_value);
        let m = &both[1];
        assert_eq!(m.verdict, Verdict::InsufficientData);
        assert_eq!(m.adjusted_p_value, None);
        assert_eq!(m.relative_difference, None);
        assert_eq!(m.relative_difference_ci, None);
        assert_eq!((m.a.n_boots.min(m.b.n_boots)), 0);
        assert_eq!(m.a.n_boots.max(m.b.n_boots), 5);
    }
}
