//! Cleaning input points and choosing axis ranges and tick labels.

use std::ops::Range;

use super::{RelPoint, SidePoint};

/// A [`SidePoint`] with every non-finite number dropped.
#[derive(Debug, Clone)]
pub(super) struct CleanSidePoint {
    pub param: f64,
    pub mean: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub boot_means: Vec<f64>,
}

/// A [`RelPoint`] in percent with every non-finite number dropped.
#[derive(Debug, Clone)]
pub(super) struct CleanRelPoint {
    pub param: f64,
    pub rel_percent: Option<f64>,
    pub ci_percent: Option<(f64, f64)>,
}

/// Points with a finite parameter, sorted by it (lines join neighbours).
pub(super) fn clean_side(points: &[SidePoint]) -> Vec<CleanSidePoint> {
    let mut cleaned: Vec<CleanSidePoint> = points
        .iter()
        .filter(|p| p.param.is_finite())
        .map(|p| CleanSidePoint {
            param: p.param,
            mean: Some(p.mean).filter(|m| m.is_finite()),
            ci: p.ci.and_then(ordered_finite_pair),
            boot_means: p
                .boot_means
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .collect(),
        })
        .collect();
    // Stable sort with a total order: equal inputs always give the same drawing.
    cleaned.sort_by(|x, y| x.param.total_cmp(&y.param));
    cleaned
}

/// Relative points with a finite parameter, sorted by it, converted to percent.
pub(super) fn clean_rel(points: &[RelPoint]) -> Vec<CleanRelPoint> {
    let mut cleaned: Vec<CleanRelPoint> = points
        .iter()
        .filter(|p| p.param.is_finite())
        .map(|p| CleanRelPoint {
            param: p.param,
            rel_percent: Some(p.rel * 100.0).filter(|r| r.is_finite()),
            ci_percent: p
                .ci
                .and_then(ordered_finite_pair)
                .map(|(lo, hi)| (lo * 100.0, hi * 100.0))
                .filter(|(lo, hi)| lo.is_finite() && hi.is_finite()),
        })
        .collect();
    cleaned.sort_by(|x, y| x.param.total_cmp(&y.param));
    cleaned
}

/// `(low, high)` in order, or `None` if either end is not finite.
fn ordered_finite_pair((a, b): (f64, f64)) -> Option<(f64, f64)> {
    (a.is_finite() && b.is_finite()).then(|| (a.min(b), a.max(b)))
}

/// Range covering every finite value with `pad_fraction` of the span added on
/// each side. A single distinct value gets a range around it (plotters cannot
/// draw an empty range); no values at all give 0..1.
pub(super) fn padded_range(values: impl IntoIterator<Item = f64>, pad_fraction: f64) -> Range<f64> {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return 0.0..1.0;
    }
    let span = hi - lo;
    // Spans that vanish next to the values themselves (all-equal, or differing
    // in the last bits) would produce unreadable ticks: widen around the centre.
    let scale = lo.abs().max(hi.abs());
    if span <= scale * 1e-9 || span == 0.0 {
        let half_width = if scale > 0.0 { scale * 0.1 } else { 1.0 };
        let centre = lo + span / 2.0;
        return (centre - half_width)..(centre + half_width);
    }
    (lo - span * pad_fraction)..(hi + span * pad_fraction)
}

/// Horizontal distance between a parameter and where variant A (left) and B
/// (right) draw at it, so CI bars and boot points of both stay visible.
/// Small against the axis, and never more than a fifth of the gap between
/// neighbouring parameters so variants at different parameters never cross.
pub(super) fn variant_offset(params: &[f64], x_range: &Range<f64>) -> f64 {
    let axis_based = (x_range.end - x_range.start) * 0.006;
    let mut sorted: Vec<f64> = params.iter().copied().filter(|p| p.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let smallest_gap = sorted
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .filter(|gap| *gap > 0.0)
        .fold(f64::INFINITY, f64::min);
    axis_based.min(smallest_gap * 0.2)
}

/// Tick label without float noise: "50", "0.25", "-1.5", "120000".
pub(super) fn tick_label(value: f64) -> String {
    if value == 0.0 {
        // Also turns -0 into "0".
        return "0".to_string();
    }
    let magnitude = value.abs();
    if (1e-3..1e7).contains(&magnitude) {
        let fixed = format!("{value:.4}");
        let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
        if trimmed == "-0" {
            "0".to_string()
        } else {
            trimmed.to_string()
        }
    } else {
        format!("{value:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_value_gets_a_non_empty_range_around_it() {
        let range = padded_range([50.0], 0.05);
        assert!(range.start < 50.0 && 50.0 < range.end);
    }

    #[test]
    fn zero_only_gets_a_unit_range() {
        assert_eq!(padded_range([0.0, 0.0], 0.05), -1.0..1.0);
    }

    #[test]
    fn no_finite_values_give_the_unit_range() {
        assert_eq!(padded_range([f64::NAN, f64::INFINITY], 0.05), 0.0..1.0);
    }

    #[test]
    fn spread_values_are_padded_by_the_fraction_of_the_span() {
        assert_eq!(padded_range([10.0, 20.0], 0.1), 9.0..21.0);
    }

    #[test]
    fn offset_stays_within_a_fifth_of_the_smallest_gap() {
        let offset = variant_offset(&[1.0, 2.0, 100.0], &(0.0..1000.0));
        assert!(offset <= 0.2 + 1e-12);
        assert!(offset > 0.0);
    }

    #[test]
    fn tick_labels_drop_float_noise() {
        assert_eq!(tick_label(50.0), "50");
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(-1.5), "-1.5");
        assert_eq!(tick_label(-0.0), "0");
        assert_eq!(tick_label(120000.0), "120000");
        assert_eq!(tick_label(2.5e-5), "2.50e-5");
    }

    #[test]
    fn nan_points_are_cleaned_and_sorted() {
        let points = vec![
            SidePoint {
                param: 200.0,
                mean: f64::NAN,
                ci: Some((1.0, f64::NAN)),
                boot_means: vec![1.0, f64::NAN],
            },
            SidePoint {
                param: f64::NAN,
                mean: 1.0,
                ci: None,
                boot_means: vec![],
            },
            SidePoint {
                param: 100.0,
                mean: 2.0,
                ci: Some((3.0, 1.0)),
                boot_means: vec![],
            },
        ];
        let cleaned = clean_side(&points);
        assert_eq!(cleaned.len(), 2);
        assert_eq!(cleaned[0].param, 100.0);
        assert_eq!(cleaned[0].ci, Some((1.0, 3.0)));
        assert_eq!(cleaned[1].mean, None);
        assert_eq!(cleaned[1].ci, None);
        assert_eq!(cleaned[1].boot_means, vec![1.0]);
    }
}
