//! What a run's profiled boots will be, for the dry run: which variant on
//! how many CPUs, which points they run, and what they cost in time.

use super::boot::units;
use super::store::Manifest;
use crate::stages::suite::Suite;
use std::path::{Path, PathBuf};

/// A profiled boot's time over a timed boot of the same job, as measured
/// here (docs/reading-a-report.md, "Where the difference goes", "What it
/// costs": QEMU's CPU time ×1.08 on 1 vCPU with inline counters, ×1.18 on
/// 2 vCPUs with callbacks). Used when no earlier run of the suite has
/// profiled boots of its own to go by.
pub const SLOWDOWN: f64 = 1.2;

/// A timed boot of the suite measured before: its mean wall time and the
/// run directory it comes from.
#[derive(Debug, Clone, Copy)]
pub struct EarlierRun<'a> {
    pub seconds_per_boot: f64,
    pub dir: &'a Path,
    /// Whether its boots ran under the cycle model (`--model` is no
    /// override of the suite, so a run of the same suite may not have).
    pub under_model: bool,
}

impl EarlierRun<'_> {
    /// What the earlier run's wall times are multiplied by to give this
    /// run's: the cycle model's cost where this run adds the model.
    pub fn model_factor(&self, suite: &Suite) -> f64 {
        if suite.model.is_some() && !self.under_model {
            crate::base::cycle_model::WALL_TIME_FACTOR
        } else {
            1.0
        }
    }

    /// A timed boot of this run, by the earlier one's.
    pub fn timed_boot_s(&self, suite: &Suite) -> f64 {
        self.seconds_per_boot * self.model_factor(suite)
    }
}

/// A boot under the cycle model whose estimated time would pass the
/// suite's `boot_timeout_s`: it would be stopped as hung.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeoutRisk {
    pub boot: EstimatedBoot,
    pub seconds: f64,
    pub boot_timeout_s: u64,
}

/// Which boot an estimate is of.
#[derive(Debug, Clone, PartialEq)]
pub enum EstimatedBoot {
    Timed,
    Profiled { variant: String, cpus: u32 },
}

/// The risk that `boot`, estimated at `seconds` under the cycle model,
/// is stopped by the suite's `boot_timeout_s`; none within it.
pub fn timeout_risk(suite: &Suite, boot: EstimatedBoot, seconds: f64) -> Option<TimeoutRisk> {
    (suite.model.is_some() && seconds > suite.boot_timeout_s as f64).then_some(TimeoutRisk {
        boot,
        seconds,
        boot_timeout_s: suite.boot_timeout_s,
    })
}

/// A run's profiled boots: each with its points and estimated time, their
/// time in all and what it is estimated from, and the longest's risk of
/// the timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfilePlan {
    pub boots: Vec<ProfiledBootPlan>,
    pub total: ProfileTotal,
    pub timeout: Option<TimeoutRisk>,
}

/// One profiled boot: a variant on a CPU count, the points it runs and
/// its estimated time, when there is something to estimate it from.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfiledBootPlan {
    pub variant: String,
    pub cpus: u32,
    pub points: Vec<ProfiledPoint>,
    pub seconds: Option<f64>,
}

/// A point a profiled boot runs: the workload's kind, its parameter and
/// its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfiledPoint {
    pub kind: String,
    pub param: u64,
    pub measured: u32,
    pub warmup: u32,
}

/// The profiled boots' time in all, and what it is estimated from.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileTotal {
    /// As the earlier run's own profiled boots took (`adds_model`: times
    /// the cycle model's factor, which it ran without).
    AsTheyTook {
        seconds: f64,
        from: PathBuf,
        adds_model: bool,
    },
    /// [`SLOWDOWN`] times the earlier run's timed boot.
    FromTimedBoot {
        seconds: f64,
        seconds_per_boot: f64,
        from: PathBuf,
        adds_model: bool,
    },
    /// No earlier run: the factors, under the cycle model.
    UnderModel,
    /// No earlier run: the plugin's factor.
    Unknown,
}

/// The dry run's plan of the profiled boots; none when the suite does not
/// profile.
pub fn plan(suite: &Suite, earlier: Option<EarlierRun>) -> Option<ProfilePlan> {
    if !suite.profile {
        return None;
    }
    // An earlier run's own profiled boots say what this one's will cost.
    let profiled = earlier
        .and_then(|e| Manifest::read(e.dir).ok().flatten())
        .unwrap_or_default();
    let mut boots = Vec::new();
    let mut total = Some(0.0);
    let mut longest: Option<(f64, EstimatedBoot)> = None;
    for unit in &units(suite) {
        let points = unit
            .steps
            .iter()
            .map(|s| ProfiledPoint {
                kind: suite.workloads[s.workload].kind().to_string(),
                param: s.param,
                measured: s.iterations - s.warmup,
                warmup: s.warmup,
            })
            .collect();
        let seconds = profiled
            .boots
            .iter()
            .find(|b| b.ok() && b.variant == unit.variant && b.cpus == unit.cpus)
            .map(|b| b.wall_s * earlier.map_or(1.0, |e| e.model_factor(suite)))
            .or_else(|| earlier.map(|e| e.timed_boot_s(suite) * SLOWDOWN));
        total = total.zip(seconds).map(|(t, s)| t + s);
        if let Some(s) = seconds.filter(|&s| longest.as_ref().is_none_or(|(l, _)| s > *l)) {
            let boot = EstimatedBoot::Profiled {
                variant: unit.variant.clone(),
                cpus: unit.cpus,
            };
            longest = Some((s, boot));
        }
        boots.push(ProfiledBootPlan {
            variant: unit.variant.clone(),
            cpus: unit.cpus,
            points,
            seconds,
        });
    }
    let adds_model = earlier.is_some_and(|e| e.model_factor(suite) > 1.0);
    let total = match (total, earlier) {
        (Some(seconds), Some(e)) if !profiled.boots.is_empty() => ProfileTotal::AsTheyTook {
            seconds,
            from: e.dir.to_path_buf(),
            adds_model,
        },
        (Some(seconds), Some(e)) => ProfileTotal::FromTimedBoot {
            seconds,
            seconds_per_boot: e.seconds_per_boot,
            from: e.dir.to_path_buf(),
            adds_model,
        },
        _ if suite.model.is_some() => ProfileTotal::UnderModel,
        _ => ProfileTotal::Unknown,
    };
    let timeout = longest.and_then(|(seconds, boot)| timeout_risk(suite, boot, seconds));
    Some(ProfilePlan {
        boots,
        total,
        timeout,
    })
}
