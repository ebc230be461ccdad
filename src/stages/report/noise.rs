//! `markbench noise-floor`'s figures, rendered: the table of each point's
//! noise (A/A) and resolution (A/B) against the targets, with the verdict,
//! and the line naming each run. `jobs::noise` computes the figures into
//! these records; this module only words them.

use crate::record::RunMeta;
use crate::stages::analysis::param_label;
use crate::stages::report::format::{percent_2dp, signed_percent_2dp};
use std::fmt::Write as _;
use std::path::Path;

pub use crate::record::PointKey;

/// What "good enough" means. The defaults are the project's targets for
/// instruction-count timing: 0.5% between boots in A/A, and the hackbench
/// difference resolved to ±0.5% with at most 5 boots per variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Targets {
    /// Largest CoV of the boot means allowed on either side of an A/A point.
    pub max_between_boot_cov: f64,
    /// Largest half-width of the A/B interval of the relative difference.
    pub max_ci_half_width: f64,
    /// The interval must be reached with at most this many boots per side.
    pub max_boots: usize,
    /// Workloads whose A/B interval is a target; the others are shown only.
    pub ci_workloads: Vec<String>,
}

impl Default for Targets {
    fn default() -> Self {
        Targets {
            max_between_boot_cov: 0.005,
            max_ci_half_width: 0.005,
            max_boots: 5,
            ci_workloads: vec!["hackbench".into()],
        }
    }
}

/// The noise of one A/A point, per variant (each a copy of the same kernel).
#[derive(Debug, Clone, PartialEq)]
pub struct AaPoint {
    pub key: PointKey,
    pub boots: Vec<usize>,
    /// Standard deviation of the boot means over the mean.
    pub between_boot_cov: Vec<Option<f64>>,
    /// Pooled within-boot standard deviation over the mean.
    pub within_boot_cov: Vec<Option<f64>>,
}

/// The resolution of one candidate against the baseline at one A/B point.
#[derive(Debug, Clone, PartialEq)]
pub struct AbPoint {
    pub key: PointKey,
    /// The candidate variant.
    pub candidate: String,
    /// Boots of the baseline and of the candidate.
    pub boots: [usize; 2],
    /// B/A − 1.
    pub relative_difference: Option<f64>,
    /// The interval of B/A − 1 and its level (0.95 with the report's α).
    pub interval: Option<(f64, f64, f64)>,
}

impl AbPoint {
    pub fn half_width(&self) -> Option<f64> {
        self.interval.map(|(lower, upper, _)| (upper - lower) / 2.0)
    }
}

/// One line of the verdict: a point with whatever each run says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: PointKey,
    pub aa: Option<AaPoint>,
    pub ab: Option<AbPoint>,
    /// `None`: no A/A figure for this point.
    pub between_ok: Option<bool>,
    /// `None`: no A/B figure, or not a target for this workload.
    pub ci_ok: Option<bool>,
}

fn mark(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "PASS",
        Some(false) => "FAIL",
        None => "–",
    }
}

/// The figures as a markdown table, then one line with the overall verdict.
pub fn render(rows: &[Row], targets: &Targets) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| workload | CPUs | point | A/A CoV between boots (A / A′) | A/A CoV within a boot (A / A′) | ≤ {} | A/B difference [95% CI] | CI half-width | boots | ≤ {} |",
        percent_2dp(Some(targets.max_between_boot_cov)),
        percent_2dp(Some(targets.max_ci_half_width))
    );
    let _ = writeln!(out, "|---|---:|---|---:|---:|---|---:|---:|---:|---|");
    // With several candidates, each difference says whose it is.
    let mut candidates: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.ab.as_ref().map(|p| p.candidate.as_str()))
        .collect();
    candidates.sort();
    candidates.dedup();
    for r in rows {
        let each = |v: &[Option<f64>]| {
            v.iter()
                .map(|c| percent_2dp(*c))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let (between, within) = r.aa.as_ref().map_or(("–".into(), "–".into()), |p| {
            (each(&p.between_boot_cov), each(&p.within_boot_cov))
        });
        let (difference, half, boots) = r.ab.as_ref().map_or(
            ("–".to_string(), "–".to_string(), "–".to_string()),
            |p| {
                let whose = if candidates.len() > 1 {
                    format!("{}: ", p.candidate)
                } else {
                    String::new()
                };
                let difference = match (p.relative_difference, p.interval) {
                    (Some(d), Some((lo, hi, level))) => format!(
                        "{whose}{} [{}, {}]{}",
                        signed_percent_2dp(d),
                        signed_percent_2dp(lo),
                        signed_percent_2dp(hi),
                        if (level - 0.95).abs() > 1e-9 {
                            format!(" ({:.0}%)", level * 100.0)
                        } else {
                            String::new()
                        }
                    ),
                    (Some(d), None) => format!("{whose}{}", signed_percent_2dp(d)),
                    _ => "–".into(),
                };
                (
                    difference,
                    percent_2dp(p.half_width()),
                    format!("{} / {}", p.boots[0], p.boots[1]),
                )
            },
        );
        let ci_mark = match (r.ci_ok, &r.ab) {
            (None, Some(_)) => "(not a target)",
            (ok, _) => mark(ok),
        };
        let _ = writeln!(
            out,
            "| {} {} | {} | {} {} | {} | {} | {} | {} | {} | {} | {} |",
            r.key.workload,
            r.key.metric,
            r.key.cpus,
            param_label(&r.key.workload),
            r.key.param,
            between,
            within,
            mark(r.between_ok),
            difference,
            half,
            boots,
            ci_mark
        );
    }
    let checks: Vec<bool> = rows
        .iter()
        .flat_map(|r| [r.between_ok, r.ci_ok])
        .flatten()
        .collect();
    let met = checks.iter().filter(|&&ok| ok).count();
    let _ = writeln!(
        out,
        "\n{}: {met} of {} targets met (A/A: between-boot CoV ≤ {} on every point; A/B: 95% CI \
         half-width of the relative difference ≤ {} on {} with at most {} boots per variant)",
        if !checks.is_empty() && met == checks.len() {
            "PASS"
        } else {
            "FAIL"
        },
        checks.len(),
        percent_2dp(Some(targets.max_between_boot_cov)),
        percent_2dp(Some(targets.max_ci_half_width)),
        targets.ci_workloads.join(", "),
        targets.max_boots
    );
    out
}

/// One line naming a run: its suite, variants, size and timing mode.
pub fn describe(label: &str, dir: &Path, meta: &RunMeta) -> String {
    format!(
        "{label}: {} ({}: {} vs {}; {} boots × {} iterations a side{}; {})",
        dir.display(),
        meta.suite,
        meta.kernels.first().map_or("?", |k| k.variant.as_str()),
        if meta.kernels.len() < 2 {
            "?".to_string()
        } else {
            meta.kernels[1..]
                .iter()
                .map(|k| k.variant.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        },
        meta.boots_per_variant,
        meta.iterations,
        match meta.overrides.describe() {
            words if words.is_empty() => String::new(),
            words => format!(", overrides {}", words.join(" ")),
        },
        // The mode and its settings, without the explanation the report gives.
        meta.timing_mode()
    )
}
