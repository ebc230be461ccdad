//! Runs that stop at a stated precision: the fixed-width sequential
//! interval (Chow & Robbins 1965). Boots are added, a balanced block at a
//! time, until the 95% interval of every point's relative difference has a
//! half-width of at most the target; then the run stops.
//!
//! Why this rule and not "stop when significant": the width of the interval
//! of the log ratio depends on the boots' spread, not on where the means
//! lie, and for normal boot means the sample variance is independent of the
//! sample mean. Stopping on the width therefore does not select runs whose
//! difference happened to look large, and neither the false-positive rate
//! of the test nor the coverage of the interval moves far from nominal;
//! `tests/stats_monte_carlo.rs` measures both under the rule. A minimum of
//! [`MIN_BOOTS`] boots a side keeps the variance estimate from stopping a
//! run on two boots that happened to agree.

use super::Interval;
use serde::{Deserialize, Serialize};

/// The fewest boots a side a point must have before its width may stop a
/// run. With fewer, the variance estimate has so few degrees of freedom
/// that stopping on it picks runs whose boots happened to agree, and the
/// interval covers less than it says: simulated at the 1-vCPU hackbench
/// point's noise with a ±0.5% target, stopping from 3 boots a side covers
/// about 94.0%, from 4 about 94.8%, from 5 95.1% and from 6 95.5%
/// (`cargo test --release --test stats_monte_carlo -- --ignored --nocapture`).
pub const MIN_BOOTS: usize = 5;

/// The precision asked of every point of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FixedWidth {
    /// The half-width the 95% interval of the relative difference must
    /// reach, as a fraction (0.005 for ±0.5%).
    pub half_width: f64,
    /// Boots a side before a point's width may stop the run ([`MIN_BOOTS`]).
    pub min_boots: usize,
}

/// Where one point stands against the target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PointPrecision {
    /// The interval's half-width, as a fraction; `None` without an interval
    /// (fewer than two boots a side, or a failed workload).
    pub half_width: Option<f64>,
    /// Boots a side the interval stands on (the smaller side).
    pub boots: usize,
    /// Whether the point may stop the run.
    pub resolved: bool,
    /// Boots a side the point's variance says it needs for the target
    /// (`None` without an interval).
    pub boots_needed: Option<usize>,
}

/// Half the width of an interval of the relative difference, as a fraction.
/// The interval `exp(d ± h) − 1` is not symmetric about its estimate; half
/// its width is the precision a reader sees in `lower … upper`.
pub fn half_width(interval: &Interval) -> f64 {
    (interval.upper - interval.lower) / 2.0
}

impl FixedWidth {
    /// A target of `percent` (±`percent`% half-width) from [`MIN_BOOTS`] boots a side.
    pub fn percent_target(percent: f64) -> FixedWidth {
        FixedWidth {
            half_width: percent / 100.0,
            min_boots: MIN_BOOTS,
        }
    }

    /// The target in percent, as a suite writes it.
    pub fn percent(&self) -> f64 {
        self.half_width * 100.0
    }

    /// Where a point with `interval` on `boots` boots a side stands.
    pub fn assess(&self, interval: Option<&Interval>, boots: usize) -> PointPrecision {
        let half = interval.map(half_width);
        PointPrecision {
            half_width: half,
            boots,
            resolved: boots >= self.min_boots && half.is_some_and(|h| h <= self.half_width),
            boots_needed: half.map(|h| self.boots_needed(h, boots)),
        }
    }

    /// Where a point stands whose every sample is the same on each side
    /// (an always-zero count of the cycle model on one vCPU, say): its
    /// difference is known exactly, so it needs no interval, only the
    /// boots a side every point needs before it may stop a run.
    pub fn assess_exact(&self, boots: usize) -> PointPrecision {
        PointPrecision {
            half_width: Some(0.0),
            boots,
            resolved: boots >= self.min_boots,
            boots_needed: Some(self.min_boots),
        }
    }

    /// Boots a side for the half-width to reach the target, by the model
    /// that the standard error of a difference of boot means falls as
    /// 1/√n: n·(h/target)², rounded up, never fewer than `min_boots`.
    /// The t quantile also falls as boots are added, so this errs on the
    /// side of asking for a boot too many.
    pub fn boots_needed(&self, half_width: f64, boots: usize) -> usize {
        let ratio = half_width / self.half_width;
        let needed = (boots as f64 * ratio * ratio).ceil();
        if needed.is_finite() {
            (needed as usize).max(self.min_boots)
        } else {
            usize::MAX
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(lower: f64, upper: f64) -> Interval {
        Interval {
            lower,
            upper,
            level: 0.95,
        }
    }

    #[test]
    fn a_point_within_the_target_on_enough_boots_is_resolved() {
        let rule = FixedWidth::percent_target(0.5);
        let p = rule.assess(Some(&interval(0.010, 0.018)), MIN_BOOTS);
        assert!(p.resolved);
        assert!((p.half_width.unwrap() - 0.004).abs() < 1e-12);
        assert_eq!(p.boots_needed, Some(MIN_BOOTS));
    }

    #[test]
    fn a_narrow_interval_on_too_few_boots_does_not_stop_the_run() {
        let rule = FixedWidth::percent_target(0.5);
        let p = rule.assess(Some(&interval(-0.001, 0.001)), MIN_BOOTS - 1);
        assert!(!p.resolved);
    }

    #[test]
    fn a_point_known_exactly_waits_only_for_the_minimum_of_boots() {
        let rule = FixedWidth::percent_target(0.5);
        assert!(!rule.assess_exact(MIN_BOOTS - 1).resolved);
        let p = rule.assess_exact(MIN_BOOTS);
        assert!(p.resolved);
        assert_eq!(p.half_width, Some(0.0));
    }

    #[test]
    fn a_point_without_an_interval_is_unresolved_and_needs_no_guess() {
        let rule = FixedWidth::percent_target(0.5);
        let p = rule.assess(None, 5);
        assert!(!p.resolved);
        assert_eq!(p.boots_needed, None);
    }

    #[test]
    fn boots_needed_scales_with_the_square_of_the_width() {
        let rule = FixedWidth::percent_target(0.5);
        // Twice the target on 4 boots: four times the boots.
        assert_eq!(rule.boots_needed(0.010, 4), 16);
        // ±0.6% on 4 boots (the quick suite's 1-vCPU hackbench): 6 boots.
        assert_eq!(rule.boots_needed(0.006, 4), 6);
        // Already within the target: no fewer than the minimum.
        assert_eq!(rule.boots_needed(0.001, 8), MIN_BOOTS);
    }
}
