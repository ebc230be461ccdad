//! The stats module against scipy/statsmodels reference values
//! (tests/fixtures/stats/reference.json, written by
//! scripts/gen_stats_fixtures.py).
//!
//! Tolerances are relative, `|actual − expected| ≤ tol · |expected|` (plus
//! 1e-15 absolute for values that are zero):
//! - 1e-12 for sums, means, medians, variances: same formulas, only the
//!   summation order differs;
//! - 1e-9 for p-values, t quantiles and intervals built from them: statrs
//!   (regularised incomplete beta, its inverse) and scipy (Boost) use different
//!   algorithms for the Student t CDF and quantile.

use markbench::base::stats::{
    analyze_sweep, benjamini_hochberg, holm, AnalysisConfig, CiBasis, Correction, PointAnalysis,
    PointInput, SideSummary,
};
use serde_json::Value;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Samples of one variant at one point: outer = boots, inner = iterations.
type Boots = Vec<Vec<f64>>;

const EXACT_ARITHMETIC: f64 = 1e-12;
const DISTRIBUTION_FUNCTIONS: f64 = 1e-9;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/stats/reference.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture exists"))
        .expect("fixture is JSON")
}

#[track_caller]
fn assert_close(actual: f64, expected: f64, tolerance: f64, what: &str) {
    let allowed = tolerance * expected.abs() + 1e-15;
    assert!(
        (actual - expected).abs() <= allowed,
        "{what}: got {actual:e}, scipy says {expected:e} (relative error {:e}, allowed {tolerance:e})",
        (actual - expected).abs() / expected.abs()
    );
}

#[track_caller]
fn assert_close_opt(actual: Option<f64>, expected: &Value, tolerance: f64, what: &str) {
    match (actual, expected.as_f64()) {
        (Some(a), Some(e)) => assert_close(a, e, tolerance, what),
        (None, None) => {}
        (a, _) => panic!("{what}: got {a:?}, scipy says {expected}"),
    }
}

fn boots(value: &Value) -> Boots {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|boot| {
            boot.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect()
        })
        .collect()
}

fn analyze_cases(correction: Correction) -> (Value, Vec<PointAnalysis>) {
    let fixture = fixture();
    let data: Vec<(Boots, Boots, bool)> = fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                boots(&c["a"]),
                boots(&c["b"]),
                c["higher_is_better"].as_bool().unwrap(),
            )
        })
        .collect();
    let points: Vec<PointInput> = data
        .iter()
        .map(|(a, b, higher_is_better)| PointInput {
            a,
            b,
            higher_is_better: *higher_is_better,
        })
        .collect();
    let cfg = AnalysisConfig {
        alpha: fixture["alpha"].as_f64().unwrap(),
        margin: fixture["margin"].as_f64().unwrap(),
        // The bootstrap has no scipy counterpart; it is tested in stats_bootstrap.rs.
        resamples: 0,
        correction,
        ..AnalysisConfig::default()
    };
    let results = analyze_sweep(&points, &cfg).expect("fixture data are valid");
    (fixture, results)
}

fn check_side(name: &str, side: &str, actual: &SideSummary, expected: &Value) {
    let what = |field: &str| format!("{name} / {side} / {field}");
    assert_eq!(actual.n_boots as u64, expected["n_boots"].as_u64().unwrap());
    assert_eq!(
        actual.n_samples as u64,
        expected["n_samples"].as_u64().unwrap()
    );
    assert_close(
        actual.mean,
        expected["mean"].as_f64().unwrap(),
        EXACT_ARITHMETIC,
        &what("mean"),
    );
    assert_close(
        actual.median,
        expected["median"].as_f64().unwrap(),
        EXACT_ARITHMETIC,
        &what("median"),
    );
    assert_close_opt(
        actual.std_dev,
        &expected["std_dev"],
        EXACT_ARITHMETIC,
        &what("std_dev"),
    );
    assert_close_opt(actual.cov, &expected["cov"], EXACT_ARITHMETIC, &what("cov"));
    for (j, (a, e)) in actual
        .boot_means
        .iter()
        .zip(expected["boot_means"].as_array().unwrap())
        .enumerate()
    {
        assert_close(
            *a,
            e.as_f64().unwrap(),
            EXACT_ARITHMETIC,
            &what(&format!("boot mean {j}")),
        );
    }
    assert_close_opt(
        actual.boot_means_variance,
        &expected["boot_means_variance"],
        EXACT_ARITHMETIC,
        &what("boot_means_variance"),
    );
    assert_close_opt(
        actual.within_boot_variance,
        &expected["within_boot_variance"],
        EXACT_ARITHMETIC,
        &what("within_boot_variance"),
    );
    // The between component is a difference of two similar numbers, so its
    // relative error is amplified by cancellation; 1e-9 still catches any
    // formula error.
    assert_close_opt(
        actual.between_boot_variance,
        &expected["between_boot_variance"],
        DISTRIBUTION_FUNCTIONS,
        &what("between_boot_variance"),
    );
    match (&actual.mean_ci, expected["mean_ci"].is_null()) {
        (None, true) => {}
        (Some(ci), false) => {
            let e = &expected["mean_ci"];
            let basis = match ci.basis {
                CiBasis::BootMeans => "boot_means",
                CiBasis::IterationsOfSingleBoot => "iterations_of_single_boot",
            };
            assert_eq!(basis, e["basis"].as_str().unwrap(), "{}", what("basis"));
            assert_eq!(ci.df, e["df"].as_f64().unwrap());
            assert_close(
                ci.center,
                e["center"].as_f64().unwrap(),
                EXACT_ARITHMETIC,
                &what("ci center"),
            );
            assert_close(
                ci.interval.lower,
                e["lower"].as_f64().unwrap(),
                DISTRIBUTION_FUNCTIONS,
                &what("ci lower"),
            );
            assert_close(
                ci.interval.upper,
                e["upper"].as_f64().unwrap(),
                DISTRIBUTION_FUNCTIONS,
                &what("ci upper"),
            );
        }
        (a, _) => panic!(
            "{}: got {a:?}, scipy says {}",
            what("mean_ci"),
            expected["mean_ci"]
        ),
    }
}

#[test]
fn side_summaries_match_numpy_and_scipy() {
    let (fixture, results) = analyze_cases(Correction::Holm);
    for (case, result) in fixture["cases"].as_array().unwrap().iter().zip(&results) {
        let name = case["name"].as_str().unwrap();
        check_side(name, "A", &result.a, &case["expected"]["a"]);
        check_side(name, "B", &result.b, &case["expected"]["b"]);
    }
}

#[test]
fn welch_mann_whitney_and_tost_match_scipy() {
    let (fixture, results) = analyze_cases(Correction::Holm);
    for (case, result) in fixture["cases"].as_array().unwrap().iter().zip(&results) {
        let name = case["name"].as_str().unwrap();
        let expected = &case["expected"];
        assert_close_opt(
            result.relative_difference,
            &expected["relative_difference"],
            EXACT_ARITHMETIC,
            &format!("{name} / relative difference"),
        );

        let welch = &expected["welch"];
        assert_eq!(result.welch.is_none(), welch.is_null(), "{name}: welch");
        if let Some(w) = result.welch {
            for (field, actual) in [
                ("mean_difference", w.mean_difference),
                ("t", w.t),
                ("df", w.df),
                ("p_value", w.p_value),
            ] {
                assert_close(
                    actual,
                    welch[field].as_f64().unwrap(),
                    DISTRIBUTION_FUNCTIONS,
                    &format!("{name} / welch {field}"),
                );
            }
        }

        let mwu = &expected["mann_whitney"];
        assert_eq!(result.mann_whitney.is_none(), mwu.is_null(), "{name}: mwu");
        if let Some(m) = result.mann_whitney {
            assert_eq!(m.u_b, mwu["u_b"].as_f64().unwrap(), "{name}: U");
            let method = serde_json::to_value(m.method).unwrap();
            assert_eq!(method, mwu["method"], "{name}: Mann-Whitney method");
            assert_close(
                m.p_value,
                mwu["p_value"].as_f64().unwrap(),
                DISTRIBUTION_FUNCTIONS,
                &format!("{name} / Mann-Whitney p"),
            );
        }

        let tost = &expected["tost"];
        assert_eq!(result.tost.is_none(), tost.is_null(), "{name}: tost");
        if let Some(t) = result.tost {
            for (field, actual) in [
                ("relative_difference", t.relative_difference),
                ("p_value", t.p_value),
                ("df", t.df),
                ("ci_lower", t.ci.lower),
                ("ci_upper", t.ci.upper),
            ] {
                assert_close(
                    actual,
                    tost[field].as_f64().unwrap(),
                    DISTRIBUTION_FUNCTIONS,
                    &format!("{name} / tost {field}"),
                );
            }
            assert_eq!(t.equivalent, tost["equivalent"].as_bool().unwrap());
            assert_eq!(t.ci.level, 0.9);
        }
    }
}

#[test]
fn sweep_adjustment_and_verdicts_match_statsmodels() {
    for (correction, key) in [
        (Correction::Holm, "adjusted_holm"),
        (Correction::BenjaminiHochberg, "adjusted_bh"),
    ] {
        let (fixture, results) = analyze_cases(correction);
        for (case, result) in fixture["cases"].as_array().unwrap().iter().zip(&results) {
            let name = case["name"].as_str().unwrap();
            assert_close_opt(
                result.adjusted_p_value,
                &case["expected"][key],
                DISTRIBUTION_FUNCTIONS,
                &format!("{name} / {key}"),
            );
            if correction == Correction::Holm {
                assert_eq!(
                    result.verdict.as_str(),
                    case["expected"]["verdict_holm"].as_str().unwrap(),
                    "{name}: verdict"
                );
            }
        }
    }
}

#[test]
fn outlier_flags_match_scipy_modified_z_scores() {
    let (fixture, results) = analyze_cases(Correction::Holm);
    let mut flagged_somewhere = false;
    for (case, result) in fixture["cases"].as_array().unwrap().iter().zip(&results) {
        let name = case["name"].as_str().unwrap();
        for (actual, key) in [
            (&result.outliers_a, "outliers_a"),
            (&result.outliers_b, "outliers_b"),
        ] {
            let Some(expected) = case["expected"][key].as_array() else {
                continue; // MAD = 0: the fallback is unit-tested in outliers.rs
            };
            assert_eq!(actual.len(), expected.len(), "{name}: {key} count");
            for (o, e) in actual.iter().zip(expected) {
                flagged_somewhere = true;
                assert_eq!(o.boot as u64, e["boot"].as_u64().unwrap());
                assert_eq!(o.iteration as u64, e["iteration"].as_u64().unwrap());
                assert_eq!(o.value, e["value"].as_f64().unwrap());
                assert_close(
                    o.score,
                    e["score"].as_f64().unwrap(),
                    DISTRIBUTION_FUNCTIONS,
                    &format!("{name} / {key} score"),
                );
            }
        }
    }
    assert!(
        flagged_somewhere,
        "the fixture should exercise a flagged outlier"
    );
}

#[test]
fn holm_and_bh_match_statsmodels() {
    for example in fixture()["corrections"].as_array().unwrap() {
        let p: Vec<f64> = example["p_values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        for (actual, key) in [(holm(&p), "holm"), (benjamini_hochberg(&p), "bh")] {
            for (i, (a, e)) in actual
                .iter()
                .zip(example[key].as_array().unwrap())
                .enumerate()
            {
                assert_close(
                    *a,
                    e.as_f64().unwrap(),
                    EXACT_ARITHMETIC,
                    &format!("{key}[{i}]"),
                );
            }
        }
    }
}

#[test]
fn statrs_t_quantiles_match_scipy() {
    for q in fixture()["t_quantiles"].as_array().unwrap() {
        let (df, p) = (q["df"].as_f64().unwrap(), q["p"].as_f64().unwrap());
        let t = StudentsT::new(0.0, 1.0, df).unwrap();
        assert_close(
            t.inverse_cdf(p),
            q["quantile"].as_f64().unwrap(),
            DISTRIBUTION_FUNCTIONS,
            &format!("t quantile df={df} p={p}"),
        );
    }
}
