//! Multiple-comparison control over a sweep of points.
//!
//! A 48-point sweep tested at α = 0.05 each expects 2.4 false "regressions"
//! when nothing changed; the seeds' tables show exactly such scattered ±2–4%
//! cells. Adjusted p-values make the whole sweep one claim.

use serde::{Deserialize, Serialize};

/// Which family-wise adjustment to apply to the Welch p-values of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Correction {
    /// Holm's step-down procedure: controls the family-wise error rate (the
    /// chance of any false significant point) under any dependence.
    #[default]
    Holm,
    /// Benjamini–Hochberg step-up procedure: controls the false discovery
    /// rate (expected share of false points among significant ones), valid
    /// for independent or positively dependent tests.
    BenjaminiHochberg,
}

impl Correction {
    /// Short name for reports ("Holm-adjusted p").
    pub fn as_str(self) -> &'static str {
        match self {
            Correction::Holm => "Holm",
            Correction::BenjaminiHochberg => "Benjamini-Hochberg",
        }
    }
}

/// Adjusts the p-values that exist; points without a p-value (insufficient
/// data) are not part of the family and stay `None`, so untestable points do
/// not dilute the correction.
pub fn adjust_p_values(p_values: &[Option<f64>], correction: Correction) -> Vec<Option<f64>> {
    let (positions, present): (Vec<usize>, Vec<f64>) = p_values
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.map(|p| (i, p)))
        .unzip();
    let adjusted = match correction {
        Correction::Holm => holm(&present),
        Correction::BenjaminiHochberg => benjamini_hochberg(&present),
    };
    let mut out = vec![None; p_values.len()];
    for (position, p) in positions.into_iter().zip(adjusted) {
        out[position] = Some(p);
    }
    out
}

/// Holm-adjusted p-values (Holm, "A simple sequentially rejective multiple
/// test procedure", Scand. J. Statist. 6, 1979). With p₍₁₎ ≤ … ≤ p₍ₘ₎:
///   p̃₍ᵢ₎ = max_{j ≤ i} min(1, (m − j + 1) · p₍ⱼ₎),
/// so that rejecting p̃ < α is Holm's procedure at level α. Output is in
/// input order.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let order = ascending_order(p_values);
    let mut adjusted = vec![0.0; m];
    let mut running_max: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let candidate = ((m - rank) as f64 * p_values[i]).min(1.0);
        running_max = running_max.max(candidate);
        adjusted[i] = running_max;
    }
    adjusted
}

/// Benjamini–Hochberg adjusted p-values (Benjamini & Hochberg, "Controlling
/// the false discovery rate", J. R. Statist. Soc. B 57, 1995). With
/// p₍₁₎ ≤ … ≤ p₍ₘ₎:
///   p̃₍ᵢ₎ = min_{j ≥ i} min(1, m / j · p₍ⱼ₎).
/// Output is in input order.
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let order = ascending_order(p_values);
    let mut adjusted = vec![0.0; m];
    let mut running_min: f64 = 1.0;
    for (rank, &i) in order.iter().enumerate().rev() {
        let candidate = (m as f64 / (rank + 1) as f64 * p_values[i]).min(1.0);
        running_min = running_min.min(candidate);
        adjusted[i] = running_min;
    }
    adjusted
}

fn ascending_order(values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_all_close(actual: &[f64], expected: &[f64]) {
        assert_eq!(actual.len(), expected.len());
        for (a, e) in actual.iter().zip(expected) {
            assert!((a - e).abs() < 1e-15, "{actual:?} vs {expected:?}");
        }
    }

    // Worked by hand. p = [0.01, 0.04, 0.03, 0.005], m = 4, ascending order
    // 0.005, 0.01, 0.03, 0.04.

    #[test]
    fn holm_by_hand() {
        // 4·0.005 = 0.02, 3·0.01 = 0.03, 2·0.03 = 0.06, 1·0.04 = 0.04 → running
        // max keeps 0.06 for the last one.
        assert_all_close(&holm(&[0.01, 0.04, 0.03, 0.005]), &[0.03, 0.06, 0.06, 0.02]);
        // Saturates at 1.
        assert_all_close(&holm(&[0.6, 0.7]), &[1.0, 1.0]);
    }

    #[test]
    fn benjamini_hochberg_by_hand() {
        // From the top: 4/4·0.04 = 0.04, 4/3·0.03 = 0.04, 4/2·0.01 = 0.02,
        // 4/1·0.005 = 0.02; running min from the top changes nothing.
        assert_all_close(
            &benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005]),
            &[0.02, 0.04, 0.04, 0.02],
        );
        // Running min: 3/3·0.5 = 0.5, 3/2·0.4 = 0.6 → 0.5, 3/1·0.01 = 0.03.
        assert_all_close(&benjamini_hochberg(&[0.4, 0.01, 0.5]), &[0.5, 0.03, 0.5]);
    }

    #[test]
    fn points_without_a_p_value_are_outside_the_family() {
        // m = 2, not 3: 2·0.01 = 0.02, then max(0.02, 1·0.04) = 0.04.
        let adjusted = adjust_p_values(&[Some(0.01), None, Some(0.04)], Correction::Holm);
        assert_eq!(adjusted[1], None);
        assert!((adjusted[0].unwrap() - 0.02).abs() < 1e-15);
        assert!((adjusted[2].unwrap() - 0.04).abs() < 1e-15);
        assert_eq!(
            adjust_p_values(&[None, None], Correction::Holm),
            [None, None]
        );
    }
}
