//! Statistics: pure functions from grouped samples to summaries, intervals,
//! tests and verdicts. No I/O; every result is serde-serializable so the
//! report can write it to `summary.json` as is.
//!
//! Shape of the analysis, one a maintainer can check step by step:
//! - the independent unit is the boot; iterations within a boot are
//!   correlated, so every test runs on boot means ([`summary`]);
//! - per point: Welch's t-test for a difference, the t interval of the
//!   relative difference from the log ratio of boot means, TOST for
//!   equivalence within a margin, and two second opinions: Mann–Whitney U
//!   (rank-based) and a hierarchical bootstrap interval ([`hypothesis`],
//!   [`bootstrap`]);
//! - per sweep: Holm (or Benjamini–Hochberg) adjustment of the Welch p-values
//!   ([`correction`]), then one verdict per point ([`verdict`]);
//! - outliers are flagged, never dropped ([`outliers`]); an A/A sweep
//!   calibrates the noise floor ([`calibration`]);
//! - boots from several hosts (a merged sweep): the host is a blocking
//!   factor ([`blocked`]).

pub mod blocked;
pub mod bootstrap;
pub mod calibration;
pub mod change_points;
pub mod correction;
pub mod hypothesis;
pub mod outliers;
pub mod sequential;
pub mod summary;
pub mod verdict;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use calibration::{calibrate_aa, AaCalibration};
pub use correction::{adjust_p_values, benjamini_hochberg, holm, Correction};
pub use hypothesis::{
    mann_whitney_u, tost_log_ratio, welch_t_test, LogRatio, MannWhitney, MannWhitneyMethod, Tost,
    WelchTest,
};
pub use outliers::{modified_z_outliers, Outlier, MODIFIED_Z_THRESHOLD};
pub use summary::{summarize, CiBasis, Interval, MeanCi, SideSummary, SIDE_CI_LEVEL};
pub use verdict::{summary_line, Verdict};

/// Why an analysis could not be run. Data problems name where they are.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no measurements: at least one boot with one value is needed")]
    NoData,
    #[error("boot {boot} has no measurements; drop failed boots before analysis")]
    EmptyBoot { boot: usize },
    #[error("boot {boot}, iteration {iteration}: value {value} is not finite")]
    NonFinite {
        boot: usize,
        iteration: usize,
        value: f64,
    },
    #[error("point {point}, variant {variant}: {source}")]
    InPoint {
        point: usize,
        variant: char,
        #[source]
        source: Box<StatsError>,
    },
    #[error("invalid analysis configuration: {0}")]
    InvalidConfig(String),
}

/// Knobs of the analysis. `Default` is what reports use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalysisConfig {
    /// Significance level for the adjusted Welch p-values and for each of the
    /// two one-sided TOST tests (so TOST's interval is 1 − 2α, 90% at 0.05).
    pub alpha: f64,
    /// Equivalence margin as a fraction: 0.02 means B/A within [0.98, 1.02].
    pub margin: f64,
    /// Bootstrap resamples for the second-opinion interval of the relative
    /// difference ([`bootstrap`]); 0 skips the bootstrap (neither the verdict
    /// nor the report's interval depends on it).
    pub resamples: usize,
    /// Seed of the bootstrap. Point `i` uses ChaCha8 stream `i` of this seed,
    /// so each point's interval is reproducible and independent of which
    /// other points are analysed or in what order.
    pub seed: u64,
    pub correction: Correction,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            alpha: 0.05,
            margin: 0.02,
            resamples: 10_000,
            // Any fixed value works; this one spells "markbenc" in ASCII.
            seed: 0x6d61_726b_6265_6e63,
            correction: Correction::Holm,
        }
    }
}

impl AnalysisConfig {
    fn validate(&self) -> Result<(), StatsError> {
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            return Err(StatsError::InvalidConfig(format!(
                "alpha must be in (0, 0.5), got {}",
                self.alpha
            )));
        }
        if !(self.margin > 0.0 && self.margin < 1.0) {
            return Err(StatsError::InvalidConfig(format!(
                "margin is a fraction in (0, 1), got {}",
                self.margin
            )));
        }
        Ok(())
    }
}

/// One point of a sweep (workload × parameter × CPU count): the samples of
/// both variants, grouped by boot, warm-up removed.
#[derive(Debug, Clone, Copy)]
pub struct PointInput<'a> {
    /// Variant A ("without").
    pub a: &'a [Vec<f64>],
    /// Variant B ("with").
    pub b: &'a [Vec<f64>],
    /// Direction of the metric: false for seconds, true for packets/s.
    pub higher_is_better: bool,
}

/// Everything the analysis says about one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointAnalysis {
    /// Position in the sweep given to [`analyze_sweep`].
    pub index: usize,
    pub higher_is_better: bool,
    pub a: SideSummary,
    pub b: SideSummary,
    /// `mean(B) / mean(A) − 1` over all samples; `None` if mean(A) is zero.
    pub relative_difference: Option<f64>,
    /// Interval of the relative difference at level 1 − α: the t interval of
    /// the log ratio of boot means (Welch's standard error and df, as TOST),
    /// `exp(d ± t·se) − 1`. It excludes zero exactly when the unadjusted
    /// Welch test on log boot means rejects. `None` with fewer than two
    /// boots on a side or a boot mean that is not positive.
    pub relative_difference_ci: Option<Interval>,
    /// Hierarchical bootstrap interval of the same ([`bootstrap`]): a
    /// distribution-free second opinion. `None` where the t interval is, with
    /// `resamples = 0`, and for host-blocked points.
    #[serde(default)]
    pub bootstrap_ci: Option<Interval>,
    /// Welch's t-test on boot means; `None` with fewer than two boots on a
    /// side (never an invented p-value). With host blocking applied, the
    /// blocked t-test on log boot means (`mean_difference` is then the log
    /// ratio D; its sign means the same).
    pub welch: Option<WelchTest>,
    /// Welch p-value adjusted over the sweep by `correction`.
    pub adjusted_p_value: Option<f64>,
    pub mann_whitney: Option<MannWhitney>,
    pub tost: Option<Tost>,
    pub verdict: Verdict,
    pub outliers_a: Vec<Outlier>,
    pub outliers_b: Vec<Outlier>,
    /// Set when the point's boots come from several hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_blocking: Option<blocked::HostBlocking>,
}

impl PointAnalysis {
    /// Unadjusted two-sided Welch p-value.
    pub fn p_value(&self) -> Option<f64> {
        self.welch.map(|w| w.p_value)
    }

    /// The nightly gate's rule, which JUnit's failures follow too: a
    /// significant regression whose relative difference is worse than
    /// `margin` in the point's direction. A significant slowdown within the
    /// margin does not fail.
    pub fn regressed_beyond(&self, margin: f64) -> bool {
        self.verdict == Verdict::Regression
            && self.relative_difference.is_some_and(|r| {
                let worse = if self.higher_is_better { -r } else { r };
                worse > margin
            })
    }
}

/// Analyses every point of a sweep and adjusts the Welch p-values over the
/// points that have one.
pub fn analyze_sweep(
    points: &[PointInput<'_>],
    cfg: &AnalysisConfig,
) -> Result<Vec<PointAnalysis>, StatsError> {
    cfg.validate()?;
    let results = points
        .iter()
        .enumerate()
        .map(|(index, point)| analyze_point(index, point, cfg))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(decide_sweep(results, cfg))
}

/// [`analyze_sweep`] for points whose boots may come from several hosts
/// (`hosts[i]` names the host of every boot of `points[i]`): a point measured
/// on one host is analysed exactly as by [`analyze_sweep`]; on several, the
/// host is a blocking factor ([`blocked`]).
pub fn analyze_sweep_with_hosts(
    points: &[PointInput<'_>],
    hosts: &[blocked::PointHosts],
    cfg: &AnalysisConfig,
) -> Result<Vec<PointAnalysis>, StatsError> {
    cfg.validate()?;
    let mut results = Vec::with_capacity(points.len());
    for (index, point) in points.iter().enumerate() {
        let mut result = analyze_point(index, point, cfg)?;
        let measured = !point.a.is_empty() && !point.b.is_empty();
        if let Some(h) = hosts.get(index).filter(|h| measured && h.several()) {
            blocked::apply(&mut result, point, h, cfg);
        }
        results.push(result);
    }
    Ok(decide_sweep(results, cfg))
}

/// Adjusts the p-values over the sweep and gives each point its verdict.
fn decide_sweep(mut results: Vec<PointAnalysis>, cfg: &AnalysisConfig) -> Vec<PointAnalysis> {
    let p_values: Vec<Option<f64>> = results.iter().map(PointAnalysis::p_value).collect();
    let adjusted = adjust_p_values(&p_values, cfg.correction);
    for (result, adjusted_p) in results.iter_mut().zip(adjusted) {
        result.adjusted_p_value = adjusted_p;
        result.verdict = verdict::decide(
            result.a.n_boots,
            result.b.n_boots,
            result.welch.map(|w| w.mean_difference),
            adjusted_p,
            result.tost.is_some_and(|t| t.equivalent),
            result.higher_is_better,
            cfg.alpha,
        );
    }
    results
}

/// A point one variant has no value at (every boot of it failed, or its
/// workload did at this point): nothing to compare, so no test and no
/// interval, and insufficient data as its verdict; the other points of the
/// sweep are analysed all the same.
fn unmeasured(index: usize, point: &PointInput<'_>) -> Result<PointAnalysis, (char, StatsError)> {
    let side = |boots: &[Vec<f64>], variant: char| {
        if boots.is_empty() {
            Ok(SideSummary::unmeasured())
        } else {
            summarize(boots).map_err(|e| (variant, e))
        }
    };
    Ok(PointAnalysis {
        index,
        higher_is_better: point.higher_is_better,
        a: side(point.a, 'A')?,
        b: side(point.b, 'B')?,
        relative_difference: None,
        relative_difference_ci: None,
        bootstrap_ci: None,
        welch: None,
        adjusted_p_value: None,
        mann_whitney: None,
        tost: None,
        verdict: Verdict::InsufficientData,
        outliers_a: modified_z_outliers(point.a),
        outliers_b: modified_z_outliers(point.b),
        host_blocking: None,
    })
}

/// Everything that does not depend on the other points. The verdict is
/// provisional until the sweep's adjustment is known.
fn analyze_point(
    index: usize,
    point: &PointInput<'_>,
    cfg: &AnalysisConfig,
) -> Result<PointAnalysis, StatsError> {
    let in_point = |variant: char| {
        move |source: StatsError| StatsError::InPoint {
            point: index,
            variant,
            source: Box::new(source),
        }
    };
    if point.a.is_empty() || point.b.is_empty() {
        return unmeasured(index, point).map_err(|(variant, e)| in_point(variant)(e));
    }
    let a = summarize(point.a).map_err(in_point('A'))?;
    let b = summarize(point.b).map_err(in_point('B'))?;
    let testable = a.n_boots >= 2 && b.n_boots >= 2;

    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    rng.set_stream(index as u64);
    // One log ratio of the boot means behind the interval, the bootstrap's
    // expansion and TOST.
    let ratio = LogRatio::of_boot_means(&a.boot_means, &b.boot_means);
    let bootstrap_ci = bootstrap::relative_difference_ci(
        point.a,
        point.b,
        ratio.as_ref(),
        1.0 - cfg.alpha,
        cfg.resamples,
        &mut rng,
    );
    let relative_difference_ci = ratio.map(|ratio| ratio.interval(1.0 - cfg.alpha));

    let (welch, mann_whitney, tost) = if testable {
        (
            welch_t_test(&a.boot_means, &b.boot_means),
            mann_whitney_u(&a.boot_means, &b.boot_means),
            ratio.map(|ratio| ratio.tost(cfg.margin, cfg.alpha)),
        )
    } else {
        (None, None, None)
    };

    Ok(PointAnalysis {
        index,
        higher_is_better: point.higher_is_better,
        relative_difference: (a.mean != 0.0).then(|| b.mean / a.mean - 1.0),
        relative_difference_ci,
        bootstrap_ci,
        welch,
        adjusted_p_value: None,
        mann_whitney,
        tost,
        verdict: Verdict::InsufficientData,
        outliers_a: modified_z_outliers(point.a),
        outliers_b: modified_z_outliers(point.b),
        host_blocking: None,
        a,
        b,
    })
}
