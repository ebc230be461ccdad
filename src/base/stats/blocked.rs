//! The host as a blocking factor, for points whose boots come from several
//! hosts (a sweep split over machines with `run-shard`, then `merge`d).
//!
//! Hosts differ in speed by far more than the effects measured here, so
//! pooling the boots of several hosts would bury the difference between the
//! variants in the difference between the hosts, and an unbalanced split
//! (more A boots on the fast host) would even invent one. Each host that ran
//! both variants of a point is a block; the variants are compared within
//! blocks and the comparisons combined, as in a randomized block design
//! (Montgomery, "Design and Analysis of Experiments", 8th ed., §4.1).
//!
//! Model, on log boot means (so the effect is a ratio, as TOST already
//! treats it): `ln y_hsj = μ + α_h + β_s + ε_hsj`, host h, side s, boot j,
//! ε with one variance σ² (additive: no host × variant interaction, its
//! deviations counted as error). With `n_a,h`, `n_b,h` boots of each side on
//! host h and `d_h` the difference of the sides' mean log boot means there,
//! the least-squares estimate of the effect `β_b − β_a` is the
//! inverse-variance weighted mean
//!   D = Σ w_h d_h / Σ w_h,   w_h = n_a,h n_b,h / (n_a,h + n_b,h)
//! (Var d_h = σ² / w_h), with `Var D = σ² / Σ w_h`. σ² is estimated from the
//! model's residuals: the spread of boots within each (host, side) cell plus
//! the disagreement of the hosts' differences,
//!   SS = Σ_cells Σ_j (ln y_hsj − mean_cell)² + Σ_h w_h (d_h − D)²,
//!   df = N − H − 1
//! (N boots, H hosts; for a two-level factor the interaction sum of squares
//! of unbalanced cells is exactly the weighted term). Then t = D / se on df
//! degrees of freedom gives the test, `exp(D ± t·se) − 1` the intervals of
//! the relative difference, and TOST uses the same D, se and df.
//!
//! Hosts that ran only one variant of a point cannot say anything about the
//! difference and are left out of these figures (and named). When no host
//! ran both, no within-host comparison exists (a `diff` of two runs made on
//! two machines): the point keeps the unblocked analysis, and the blocking
//! record says why.

use serde::{Deserialize, Serialize};
use statrs::distribution::ContinuousCDF;

use super::hypothesis::log_ratio_interval;
use super::summary::{mean, students_t};
use super::{AnalysisConfig, PointAnalysis, PointInput, Tost, WelchTest};

/// The host of every boot of a point, aligned with `PointInput::a` and `::b`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointHosts {
    pub a: Vec<String>,
    pub b: Vec<String>,
}

impl PointHosts {
    /// More than one host among the point's boots.
    pub fn several(&self) -> bool {
        let mut all = self.a.iter().chain(&self.b);
        let first = all.next();
        all.any(|h| Some(h) != first)
    }
}

/// One host's part of a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostStratum {
    pub host: String,
    pub boots_a: usize,
    pub boots_b: usize,
    /// `exp(d_h) − 1`: the ratio of the sides' geometric mean boot means on
    /// this host, minus one; `None` when the host ran one side only.
    pub relative_difference: Option<f64>,
}

/// How the host blocking went for one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostBlocking {
    /// Whether the test, TOST and interval are the blocked ones; false when
    /// no host ran both variants (the unblocked analysis stands).
    pub applied: bool,
    pub strata: Vec<HostStratum>,
    /// The combined log ratio D and its standard error.
    pub log_ratio: f64,
    pub se: f64,
    pub df: f64,
}

/// Replaces the test, TOST and interval of `result` by their host-blocked
/// versions. Leaves `result` as it is when the point has no boot means to
/// log (a value that is not positive) or no host ran both variants.
pub(crate) fn apply(
    result: &mut PointAnalysis,
    point: &PointInput<'_>,
    hosts: &PointHosts,
    cfg: &AnalysisConfig,
) {
    let boot_log_means = |boots: &[Vec<f64>]| -> Option<Vec<f64>> {
        boots
            .iter()
            .map(|b| {
                let m = mean(b);
                (m > 0.0).then(|| m.ln())
            })
            .collect()
    };
    let (Some(log_a), Some(log_b)) = (boot_log_means(point.a), boot_log_means(point.b)) else {
        return;
    };
    let Cells {
        strata,
        usable,
        ss_within,
        n_boots,
    } = cells(&log_a, &log_b, hosts);
    if usable.is_empty() {
        result.host_blocking = Some(HostBlocking {
            applied: false,
            strata,
            log_ratio: f64::NAN,
            se: f64::NAN,
            df: 0.0,
        });
        return;
    }
    let sum_w: f64 = usable.iter().map(|(_, w)| w).sum();
    let d = usable.iter().map(|(d, w)| d * w).sum::<f64>() / sum_w;
    let ss = ss_within
        + usable
            .iter()
            .map(|(dh, w)| w * (dh - d).powi(2))
            .sum::<f64>();
    let df = n_boots as f64 - usable.len() as f64 - 1.0;
    let se = if df >= 1.0 {
        (ss / df / sum_w).sqrt()
    } else {
        f64::NAN
    };
    result.relative_difference = Some(d.exp() - 1.0);
    result.host_blocking = Some(HostBlocking {
        applied: true,
        strata,
        log_ratio: d,
        se,
        df,
    });
    // The rank test and the bootstrap have no blocked form here; pooled ones
    // would mix hosts.
    result.mann_whitney = None;
    result.bootstrap_ci = None;
    if df < 1.0 {
        // As many estimated levels as boots: no error left to test against.
        result.welch = None;
        result.tost = None;
        result.relative_difference_ci = None;
        return;
    }
    set_blocked_tests(result, d, se, df, cfg);
}

/// The boots' log means cell by cell (host × variant).
struct Cells {
    strata: Vec<HostStratum>,
    /// (d_h, w_h) of the hosts that ran both sides.
    usable: Vec<(f64, f64)>,
    /// The within-cell sum of squares of those hosts.
    ss_within: f64,
    /// Their boots.
    n_boots: usize,
}

fn cells(log_a: &[f64], log_b: &[f64], hosts: &PointHosts) -> Cells {
    let mut names: Vec<&String> = hosts.a.iter().chain(&hosts.b).collect();
    names.sort();
    names.dedup();
    let cell = |logs: &[f64], of: &[String], host: &String| -> Vec<f64> {
        logs.iter()
            .zip(of)
            .filter(|(_, h)| *h == host)
            .map(|(v, _)| *v)
            .collect()
    };
    let mut strata = Vec::new();
    let (mut usable, mut ss_within, mut n_boots) = (Vec::new(), 0.0, 0usize);
    for host in names {
        let (ca, cb) = (cell(log_a, &hosts.a, host), cell(log_b, &hosts.b, host));
        let both = !ca.is_empty() && !cb.is_empty();
        let d = both.then(|| mean(&cb) - mean(&ca));
        if let Some(d) = d {
            let (na, nb) = (ca.len() as f64, cb.len() as f64);
            usable.push((d, na * nb / (na + nb)));
            for c in [&ca, &cb] {
                let m = mean(c);
                ss_within += c.iter().map(|v| (v - m).powi(2)).sum::<f64>();
            }
            n_boots += ca.len() + cb.len();
        }
        strata.push(HostStratum {
            host: host.clone(),
            boots_a: ca.len(),
            boots_b: cb.len(),
            relative_difference: d.map(|d| d.exp() - 1.0),
        });
    }
    Cells {
        strata,
        usable,
        ss_within,
        n_boots,
    }
}

/// The blocked test, TOST and interval of a log ratio `d` with standard
/// error `se` on `df` degrees of freedom.
fn set_blocked_tests(result: &mut PointAnalysis, d: f64, se: f64, df: f64, cfg: &AnalysisConfig) {
    let (low, high) = ((1.0 - cfg.margin).ln(), (1.0 + cfg.margin).ln());
    let interval = |level: f64| log_ratio_interval(d, se, df, level);
    result.relative_difference_ci = Some(interval(1.0 - cfg.alpha));
    if se == 0.0 {
        // No spread at all: the ratio is known exactly (as in the unblocked tests).
        let inside = low < d && d < high;
        result.welch = Some(WelchTest {
            mean_difference: d,
            t: if d == 0.0 {
                0.0
            } else {
                f64::INFINITY.copysign(d)
            },
            df,
            p_value: if d == 0.0 { 1.0 } else { 0.0 },
        });
        result.tost = Some(Tost {
            margin: cfg.margin,
            relative_difference: d.exp() - 1.0,
            ci: interval(1.0 - 2.0 * cfg.alpha),
            p_value: if inside { 0.0 } else { 1.0 },
            equivalent: inside,
            df,
        });
        return;
    }
    let t_dist = students_t(df);
    let t = d / se;
    result.welch = Some(WelchTest {
        mean_difference: d,
        t,
        df,
        p_value: (2.0 * t_dist.sf(t.abs())).min(1.0),
    });
    let p_value = t_dist.sf((d - low) / se).max(t_dist.cdf((d - high) / se));
    result.tost = Some(Tost {
        margin: cfg.margin,
        relative_difference: d.exp() - 1.0,
        ci: interval(1.0 - 2.0 * cfg.alpha),
        p_value,
        equivalent: p_value < cfg.alpha,
        df,
    });
}

#[cfg(test)]
mod tests {
    use super::super::{analyze_sweep, analyze_sweep_with_hosts, Verdict};
    use super::*;

    fn hosts(a: &[&str], b: &[&str]) -> PointHosts {
        PointHosts {
            a: a.iter().map(|h| h.to_string()).collect(),
            b: b.iter().map(|h| h.to_string()).collect(),
        }
    }

    fn boots(values: &[f64]) -> Vec<Vec<f64>> {
        values.iter().map(|&v| vec![v, v * 1.001]).collect()
    }

    /// The point of these boot values analysed pooled and host-blocked.
    fn pooled_and_blocked(a: &[f64], b: &[f64], h: PointHosts) -> (PointAnalysis, PointAnalysis) {
        let (a, b) = (boots(a), boots(b));
        let point = PointInput {
            a: &a,
            b: &b,
            higher_is_better: false,
        };
        let cfg = AnalysisConfig::default();
        let pooled = analyze_sweep(&[point], &cfg).unwrap().remove(0);
        let blocked = analyze_sweep_with_hosts(&[point], &[h], &cfg)
            .unwrap()
            .remove(0);
        (pooled, blocked)
    }

    #[test]
    fn one_host_gives_exactly_the_unblocked_analysis() {
        let (a, b) = (boots(&[1.0, 1.02, 0.99]), boots(&[1.05, 1.06, 1.04]));
        let point = PointInput {
            a: &a,
            b: &b,
            higher_is_better: false,
        };
        let cfg = AnalysisConfig::default();
        let plain = analyze_sweep(&[point], &cfg).unwrap();
        let same =
            analyze_sweep_with_hosts(&[point], &[hosts(&["h", "h", "h"], &["h", "h", "h"])], &cfg)
                .unwrap();
        assert_eq!(plain, same);
        assert!(same[0].host_blocking.is_none());
    }

    #[test]
    fn a_slow_host_does_not_hide_or_invent_a_difference() {
        // Host h2 is 30% slower than h1. Within each host B is 5% slower than A.
        let (pooled, blocked) = pooled_and_blocked(
            &[1.0, 1.01, 1.3, 1.313],
            &[1.05, 1.0605, 1.365, 1.3787],
            hosts(&["h1", "h1", "h2", "h2"], &["h1", "h1", "h2", "h2"]),
        );
        // Pooled, the host's 30% swamps the 5%: nothing significant.
        assert_ne!(pooled.verdict, Verdict::Regression);
        assert_eq!(blocked.verdict, Verdict::Regression, "{blocked:?}");
        let rel = blocked.relative_difference.unwrap();
        assert!((rel - 0.05).abs() < 0.002, "{rel}");
        let ci = blocked.relative_difference_ci.unwrap();
        assert!(ci.contains(0.05) && ci.lower > 0.0, "{ci:?}");
        let blocking = blocked.host_blocking.as_ref().unwrap();
        assert!(blocking.applied);
        assert_eq!(blocking.strata.len(), 2);
        assert_eq!(blocking.df, 8.0 - 2.0 - 1.0);

        // An unbalanced split with no real effect: A mostly on the fast host,
        // B mostly on the slow one. Pooled, B looks slower; blocked, it is not.
        let (pooled, blocked) = pooled_and_blocked(
            &[1.0, 1.01, 0.99, 1.3],
            &[1.01, 1.3, 1.31, 1.29],
            hosts(&["h1", "h1", "h1", "h2"], &["h1", "h2", "h2", "h2"]),
        );
        assert!(pooled.relative_difference.unwrap() > 0.1);
        assert!(blocked.relative_difference.unwrap().abs() < 0.01);
        assert!(!blocked.verdict.is_significant(), "{blocked:?}");
    }

    #[test]
    fn hosts_that_ran_one_variant_only_do_not_count() {
        let a = boots(&[1.0, 1.01, 2.0]);
        let b = boots(&[1.05, 1.06]);
        let point = PointInput {
            a: &a,
            b: &b,
            higher_is_better: false,
        };
        let h = hosts(&["h1", "h1", "h2"], &["h1", "h1"]);
        let r = analyze_sweep_with_hosts(&[point], &[h], &AnalysisConfig::default()).unwrap();
        let blocking = r[0].host_blocking.as_ref().unwrap();
        assert!(blocking.applied);
        assert_eq!(blocking.strata[1].relative_difference, None);
        assert_eq!(blocking.df, 4.0 - 1.0 - 1.0);
        // Only h1 counts: ln-ratio of the geometric means (1.05, 1.06) / (1.0, 1.01).
        assert!((r[0].relative_difference.unwrap() - 0.0498).abs() < 0.001);
    }

    #[test]
    fn no_host_with_both_variants_keeps_the_unblocked_analysis() {
        let (plain, r) = pooled_and_blocked(
            &[1.0, 1.02],
            &[1.05, 1.06],
            hosts(&["h1", "h1"], &["h2", "h2"]),
        );
        assert!(!r.host_blocking.as_ref().unwrap().applied);
        assert_eq!(r.welch, plain.welch);
        assert_eq!(r.verdict, plain.verdict);
    }
}
