//! Outlier flags. Outliers are reported, never dropped: a slow iteration in a
//! kernel benchmark is often the effect being measured (a lock convoy, a page
//! reclaim), and dropping it would bias the comparison towards "no cost".

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::summary::median;

/// |M| above this is flagged (Iglewicz & Hoaglin's recommendation).
pub const MODIFIED_Z_THRESHOLD: f64 = 3.5;

/// One flagged sample, located in the caller's input.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Index into the outer (boot) slice given to the analysis.
    pub boot: usize,
    /// Index into that boot's values (warm-up already removed by the caller).
    pub iteration: usize,
    pub value: f64,
    /// Modified z-score M; its sign says above or below the median.
    pub score: f64,
}

/// Flags samples with |M| > 3.5 where
///   M = Φ⁻¹(0.75) · (x − median) / MAD,   MAD = median |x − median|
/// (Iglewicz & Hoaglin, "How to Detect and Handle Outliers", ASQC Basic
/// References in Quality Control 16, 1993). Φ⁻¹(0.75) ≈ 0.6745 makes MAD a
/// consistent estimate of σ for normal data; it is computed from statrs rather
/// than typed in.
///
/// All samples of one variant at one point are pooled, so a boot whose values
/// sit apart from the other boots is flagged as a whole, which is what a
/// reader wants to see.
///
/// When more than half of the values are identical (quantized timings) the
/// MAD is zero and M is undefined; we then scale by the mean absolute
/// deviation from the median instead, with √(π/2) ≈ 1.2533 as the normal
/// consistency constant (the fallback IBM SPSS documents for this score). If
/// that is zero too, every value equals the median and nothing is flagged.
pub fn modified_z_outliers(boots: &[Vec<f64>]) -> Vec<Outlier> {
    let all: Vec<f64> = boots.iter().flatten().copied().collect();
    if all.is_empty() {
        return Vec::new();
    }
    let center = median(all.clone());
    let deviations: Vec<f64> = all.iter().map(|x| (x - center).abs()).collect();
    let mean_abs_deviation = deviations.iter().sum::<f64>() / deviations.len() as f64;
    let mad = median(deviations);
    let sigma_estimate = if mad > 0.0 {
        mad / Normal::standard().inverse_cdf(0.75)
    } else {
        (std::f64::consts::PI / 2.0).sqrt() * mean_abs_deviation
    };
    if sigma_estimate == 0.0 {
        return Vec::new();
    }
    boots
        .iter()
        .enumerate()
        .flat_map(|(boot, values)| {
            values
                .iter()
                .enumerate()
                .filter_map(move |(iteration, &value)| {
                    let score = (value - center) / sigma_estimate;
                    (score.abs() > MODIFIED_Z_THRESHOLD).then_some(Outlier {
                        boot,
                        iteration,
                        value,
                        score,
                    })
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_a_spike_with_its_location() {
        let boots = vec![vec![10.0, 10.1, 9.9, 10.0], vec![10.2, 9.8, 14.0, 10.1]];
        let flagged = modified_z_outliers(&boots);
        assert_eq!(flagged.len(), 1);
        assert_eq!((flagged[0].boot, flagged[0].iteration), (1, 2));
        assert_eq!(flagged[0].value, 14.0);
        assert!(flagged[0].score > MODIFIED_Z_THRESHOLD);
    }

    #[test]
    fn score_uses_mad_scaled_by_normal_quartile() {
        // median 3, MAD = median(|x−3|) = median(2,1,0,1,97) = 1.
        let flagged = modified_z_outliers(&[vec![1.0, 2.0, 3.0, 4.0, 100.0]]);
        assert_eq!(flagged.len(), 1);
        assert!((flagged[0].score - 0.674_489_750_196_081_7 * 97.0).abs() < 1e-9);
    }

    #[test]
    fn quantized_data_falls_back_to_mean_absolute_deviation() {
        let mut values = vec![5.0; 9];
        values.push(9.0);
        let flagged = modified_z_outliers(&[values]);
        assert_eq!(flagged.len(), 1);
        assert_eq!(flagged[0].iteration, 9);
        assert!(modified_z_outliers(&[vec![5.0; 4]]).is_empty());
    }
}
