//! Where a run with a precision target stands: every comparison's point
//! against the target, as the decision to add boots and the report's
//! Precision section both read it.

use super::sweep::Analysis;
use super::table::TableKey;
use crate::base::stats::sequential::{FixedWidth, PointPrecision};
use crate::base::stats::SideSummary;
use crate::record::RunMeta;

/// One point of one comparison against the target.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub key: TableKey,
    pub param: u64,
    /// Index into the analysis' comparisons.
    pub comparison: usize,
    pub precision: PointPrecision,
    /// What the spread of the boot means is made of; none without a
    /// spread (one boot a side, or values that repeat exactly).
    pub spread: Option<SpreadSource>,
}

/// What most of a point's spread of boot means comes from, and so what
/// narrows its interval: a boot mean's variance is the between-boot
/// component plus the within-boot variance over the runs a boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpreadSource {
    /// One run a boot: the two components cannot be told apart.
    OneRunABoot,
    /// The between-boot component is the larger: only more boots narrow it.
    BetweenBoots,
    /// The runs' own spread over the runs a boot is the larger: more runs
    /// a boot narrow it as well as more boots do.
    WithinBoots,
}

/// The source of the spread of both sides' boot means together.
pub fn spread_source(a: &SideSummary, b: &SideSummary) -> Option<SpreadSource> {
    let sides = [a, b];
    if sides.iter().any(|s| s.n_boots < 2) || sides.iter().all(|s| s.std_dev == Some(0.0)) {
        return None;
    }
    if sides.iter().all(|s| s.n_samples <= s.n_boots) {
        return Some(SpreadSource::OneRunABoot);
    }
    let mut between = 0.0;
    let mut within = 0.0;
    for s in sides {
        between += s.between_boot_variance?;
        within += s.within_boot_variance? * s.n_boots as f64 / s.n_samples as f64;
    }
    Some(if between >= within {
        SpreadSource::BetweenBoots
    } else {
        SpreadSource::WithinBoots
    })
}

/// The rule a run recorded, if it had a precision target.
pub fn rule(meta: &RunMeta) -> Option<FixedWidth> {
    meta.precision.as_ref().map(|p| FixedWidth {
        half_width: p.percent / 100.0,
        min_boots: p.min_boots,
    })
}

/// Every point of every comparison with the baseline (a series' steps are
/// read from the same boots, so they need nothing more), against `rule`.
pub fn standings(analysis: &Analysis, rule: FixedWidth) -> Vec<Standing> {
    let mut out = Vec::new();
    for comparison in 0..analysis.comparisons.len() {
        for (key, points) in &analysis.tables {
            let Some(results) = analysis.results_of(comparison, key) else {
                continue;
            };
            for (point, result) in points.iter().zip(results) {
                let boots = result.a.n_boots.min(result.b.n_boots);
                let exact = [&result.a, &result.b]
                    .iter()
                    .all(|side| side.std_dev == Some(0.0));
                let precision = if exact {
                    rule.assess_exact(boots)
                } else {
                    rule.assess(result.relative_difference_ci.as_ref(), boots)
                };
                out.push(Standing {
                    key: key.clone(),
                    param: point.param,
                    comparison,
                    precision,
                    spread: spread_source(&result.a, &result.b),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::stats::summarize;

    fn source(a: &[Vec<f64>], b: &[Vec<f64>]) -> Option<SpreadSource> {
        spread_source(&summarize(a).unwrap(), &summarize(b).unwrap())
    }

    #[test]
    fn the_spread_is_named_by_its_larger_component() {
        let one_run = vec![vec![10.0], vec![10.4], vec![9.8]];
        assert_eq!(source(&one_run, &one_run), Some(SpreadSource::OneRunABoot));
        // Boots apart by far more than their runs vary.
        let apart = vec![
            vec![10.0, 10.01, 9.99],
            vec![11.0, 11.01, 10.99],
            vec![9.0, 9.01, 8.99],
        ];
        assert_eq!(source(&apart, &apart), Some(SpreadSource::BetweenBoots));
        // Runs spread widely, boot means alike.
        let runs = vec![
            vec![9.0, 11.0, 10.0],
            vec![11.0, 9.0, 10.0],
            vec![10.0, 9.0, 11.0],
        ];
        assert_eq!(source(&runs, &runs), Some(SpreadSource::WithinBoots));
        assert_eq!(source(&[vec![10.0, 11.0]], &runs), None);
        let exact = vec![vec![10.0, 10.0], vec![10.0, 10.0]];
        assert_eq!(source(&exact, &exact), None);
    }
}
