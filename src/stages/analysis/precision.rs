//! Where a run with a precision target stands: every comparison's point
//! against the target, as the decision to add boots and the report's
//! Precision section both read it.

use super::sweep::Analysis;
use super::table::TableKey;
use crate::base::stats::sequential::{FixedWidth, PointPrecision};
use crate::record::RunMeta;

/// One point of one comparison against the target.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub key: TableKey,
    pub param: u64,
    /// Index into the analysis' comparisons.
    pub comparison: usize,
    pub precision: PointPrecision,
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
                });
            }
        }
    }
    out
}
