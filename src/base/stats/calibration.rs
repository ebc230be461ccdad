//! A/A calibration: run the same kernel as both variants and see what the
//! analysis says. Any significant verdict is a false positive by construction,
//! and the spread of the relative differences is the noise floor below which
//! no A/B difference can be believed on this machine.

use serde::{Deserialize, Serialize};

use super::summary::median;
use super::PointAnalysis;

/// What an A/A sweep says about the measurement setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AaCalibration {
    pub points: usize,
    /// Points with at least two boots per side (a verdict other than
    /// insufficient data).
    pub testable_points: usize,
    /// Median of |B/A − 1| over points that have it.
    pub median_abs_relative_difference: Option<f64>,
    /// Largest |B/A − 1|: the smallest margin no A/A point would have
    /// exceeded.
    pub max_abs_relative_difference: Option<f64>,
    /// Median coefficient of variation of all samples, over both sides of all
    /// points.
    pub median_cov: Option<f64>,
    /// Testable points with a regression or improvement verdict.
    pub significant_points: usize,
    /// `significant_points / testable_points`. With Holm correction, a
    /// properly calibrated setup has a significant point in at most α of A/A
    /// sweeps, so more than one here is already suspicious.
    pub false_positive_rate: Option<f64>,
    /// Share of testable points shown equivalent within the margin; low
    /// values mean the margin is below what this setup can resolve.
    pub equivalent_rate: Option<f64>,
}

/// Summarizes an A/A sweep (both variants were the same kernel).
pub fn calibrate_aa(results: &[PointAnalysis]) -> AaCalibration {
    let testable: Vec<&PointAnalysis> = results
        .iter()
        .filter(|r| r.verdict != super::Verdict::InsufficientData)
        .collect();
    let abs_differences: Vec<f64> = results
        .iter()
        .filter_map(|r| r.relative_difference.map(f64::abs))
        .collect();
    let covs: Vec<f64> = results
        .iter()
        .flat_map(|r| [r.a.cov, r.b.cov])
        .flatten()
        .collect();
    let significant_points = testable
        .iter()
        .filter(|r| r.verdict.is_significant())
        .count();
    let equivalent_points = testable
        .iter()
        .filter(|r| r.verdict == super::Verdict::Equivalent)
        .count();
    let rate = |count: usize| (!testable.is_empty()).then(|| count as f64 / testable.len() as f64);
    AaCalibration {
        points: results.len(),
        testable_points: testable.len(),
        median_abs_relative_difference: (!abs_differences.is_empty())
            .then(|| median(abs_differences.clone())),
        max_abs_relative_difference: abs_differences.iter().copied().reduce(f64::max),
        median_cov: (!covs.is_empty()).then(|| median(covs)),
        significant_points,
        false_positive_rate: rate(significant_points),
        equivalent_rate: rate(equivalent_points),
    }
}
