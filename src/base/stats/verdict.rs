//! The one-word answer per point, and the one-line answer per sweep.

use serde::{Deserialize, Serialize};

use super::{AnalysisConfig, PointAnalysis};

/// Verdict for one point, from a fixed vocabulary so that reports and scripts
/// can rely on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is significantly worse than A (adjusted p < α), in the metric's
    /// direction.
    Regression,
    /// B is significantly better than A.
    Improvement,
    /// Not significantly different, and shown to be within ±margin (TOST).
    Equivalent,
    /// Neither a significant difference nor shown equivalent: inconclusive.
    NoSignificantDifference,
    /// Fewer than two boots on a side: no between-boot variance, no test.
    InsufficientData,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Equivalent => "equivalent",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::InsufficientData => "insufficient data",
        }
    }

    /// Regression or improvement: a claim that the variants differ.
    pub fn is_significant(self) -> bool {
        matches!(self, Verdict::Regression | Verdict::Improvement)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The decision rule, in order:
/// 1. fewer than two boots on either side → `InsufficientData`;
/// 2. adjusted p < α → `Regression` or `Improvement`, by the sign of the
///    tested difference `mean(B boot means) − mean(A boot means)` and the
///    metric's direction (for seconds B larger is worse; for packets/s B
///    larger is better);
/// 3. TOST shows the ratio within ±margin → `Equivalent`;
/// 4. otherwise `NoSignificantDifference`.
pub(crate) fn decide(
    boots_a: usize,
    boots_b: usize,
    mean_difference: Option<f64>,
    adjusted_p: Option<f64>,
    equivalent: bool,
    higher_is_better: bool,
    alpha: f64,
) -> Verdict {
    if boots_a < 2 || boots_b < 2 {
        return Verdict::InsufficientData;
    }
    match (adjusted_p, mean_difference) {
        (Some(p), Some(difference)) if p < alpha => {
            let b_is_higher = difference > 0.0;
            if b_is_higher == higher_is_better {
                Verdict::Improvement
            } else {
                Verdict::Regression
            }
        }
        _ if equivalent => Verdict::Equivalent,
        _ => Verdict::NoSignificantDifference,
    }
}

/// One sentence for the top of a report, counting points by verdict, e.g.
/// "equivalent within ±2% on 46 of 48 points (TOST, α = 0.05); 2 inconclusive
/// (no significant difference, not shown within ±2%)".
///
/// It never says "no regression" for points that were not shown equivalent,
/// and it gives the largest significant change so that a tiny but
/// significant difference is not mistaken for a large one.
pub fn summary_line(results: &[PointAnalysis], cfg: &AnalysisConfig) -> String {
    let total = results.len();
    if total == 0 {
        return "no points analysed".to_string();
    }
    let count = |v: Verdict| results.iter().filter(|r| r.verdict == v).count();
    let margin = percent(cfg.margin);
    let alpha = trim_number(cfg.alpha);
    let insufficient = count(Verdict::InsufficientData);
    if insufficient == total {
        return format!(
            "insufficient data on all {total} points (fewer than 2 boots per variant): \
             no significance or equivalence claimed"
        );
    }

    let mut parts = Vec::new();
    let equivalent = count(Verdict::Equivalent);
    parts.push(format!(
        "equivalent within ±{margin} on {equivalent} of {total} points (TOST, α = {alpha})"
    ));
    for (verdict, singular, plural) in [
        (Verdict::Regression, "regression", "regressions"),
        (Verdict::Improvement, "improvement", "improvements"),
    ] {
        let n = count(verdict);
        if n > 0 {
            let largest = results
                .iter()
                .filter(|r| r.verdict == verdict)
                .filter_map(|r| r.relative_difference)
                .max_by(|x, y| x.abs().total_cmp(&y.abs()));
            let largest = largest
                .map(|d| format!("; largest {}", signed_percent(d)))
                .unwrap_or_default();
            parts.push(format!(
                "{n} {} ({}-adjusted p < {alpha}{largest})",
                if n == 1 { singular } else { plural },
                cfg.correction.as_str()
            ));
        }
    }
    let inconclusive = count(Verdict::NoSignificantDifference);
    if inconclusive > 0 {
        parts.push(format!(
            "{inconclusive} inconclusive (no significant difference, not shown within ±{margin})"
        ));
    }
    if insufficient > 0 {
        parts.push(format!(
            "{insufficient} with insufficient data (fewer than 2 boots per variant)"
        ));
    }
    parts.join("; ")
}

/// 0.02 → "2%", 0.025 → "2.5%".
fn percent(fraction: f64) -> String {
    format!("{}%", trim_number(fraction * 100.0))
}

/// 0.031 → "+3.1%", −0.004 → "−0.4%".
fn signed_percent(fraction: f64) -> String {
    let sign = if fraction < 0.0 { "−" } else { "+" };
    format!("{sign}{}%", trim_number((fraction * 100.0).abs()))
}

/// At most two decimals, without trailing zeros.
fn trim_number(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_follows_the_metric() {
        // B larger than A and significant.
        let slower = decide(5, 5, Some(0.3), Some(0.001), false, false, 0.05);
        assert_eq!(slower, Verdict::Regression);
        let more_packets = decide(5, 5, Some(0.3), Some(0.001), false, true, 0.05);
        assert_eq!(more_packets, Verdict::Improvement);
        let faster = decide(5, 5, Some(-0.3), Some(0.001), false, false, 0.05);
        assert_eq!(faster, Verdict::Improvement);
        let fewer_packets = decide(5, 5, Some(-0.3), Some(0.001), false, true, 0.05);
        assert_eq!(fewer_packets, Verdict::Regression);
    }

    #[test]
    fn not_significant_is_equivalent_only_when_tost_passes() {
        assert_eq!(
            decide(5, 5, Some(0.1), Some(0.5), true, false, 0.05),
            Verdict::Equivalent
        );
        assert_eq!(
            decide(5, 5, Some(0.1), Some(0.5), false, false, 0.05),
            Verdict::NoSignificantDifference
        );
        // Exactly at α is not below α.
        assert_eq!(
            decide(5, 5, Some(0.1), Some(0.05), false, false, 0.05),
            Verdict::NoSignificantDifference
        );
    }

    #[test]
    fn one_boot_is_insufficient_whatever_the_numbers() {
        assert_eq!(
            decide(1, 5, Some(9.0), Some(0.0), true, false, 0.05),
            Verdict::InsufficientData
        );
    }

    #[test]
    fn vocabulary_is_fixed() {
        assert_eq!(
            Verdict::NoSignificantDifference.as_str(),
            "no significant difference"
        );
        assert_eq!(Verdict::InsufficientData.to_string(), "insufficient data");
    }

    #[test]
    fn percent_formatting() {
        assert_eq!(percent(0.02), "2%");
        assert_eq!(percent(0.025), "2.5%");
        assert_eq!(signed_percent(0.031), "+3.1%");
        assert_eq!(signed_percent(-0.004), "−0.4%");
    }
}
