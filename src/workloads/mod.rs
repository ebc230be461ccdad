//! Workloads: what runs in the guest for each (workload, parameter) step and
//! how a timed run becomes measurements. One file per workload.

pub mod command;
pub mod hackbench;
pub mod kernel_compile;
pub mod ping_flood;

use crate::protocol::{Directive, RunRecord};
use crate::suite::WorkloadSpec;
use serde::{Deserialize, Serialize};

/// One number a run yields, with its unit and direction so reports can say
/// "slower" or "faster" correctly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub value: f64,
}

impl Measurement {
    /// The agent's CLOCK_MONOTONIC wall time of a run, in seconds, lower is better.
    pub fn elapsed_time(record: &RunRecord) -> Measurement {
        Measurement {
            metric: "time".into(),
            unit: "s".into(),
            higher_is_better: false,
            value: record.elapsed_ns as f64 / 1e9,
        }
    }
}

/// Untimed commands a boot runs before any step of this workload.
pub fn setup(spec: &WorkloadSpec) -> Vec<Directive> {
    match spec {
        WorkloadSpec::Hackbench(_) => hackbench::setup(),
        WorkloadSpec::PingFlood(_) => ping_flood::setup(),
        WorkloadSpec::Command(_) | WorkloadSpec::KernelCompile(_) => Vec::new(),
    }
}

/// The untimed command run before each iteration of a step, if any.
pub fn before(spec: &WorkloadSpec) -> Option<Vec<String>> {
    match spec {
        WorkloadSpec::KernelCompile(_) => Some(kernel_compile::before()),
        WorkloadSpec::Hackbench(_) | WorkloadSpec::PingFlood(_) | WorkloadSpec::Command(_) => None,
    }
}

/// The guest command for one step.
pub fn command(spec: &WorkloadSpec, param: u64) -> Vec<String> {
    match spec {
        WorkloadSpec::Hackbench(h) => hackbench::command(h, param),
        WorkloadSpec::PingFlood(p) => ping_flood::command(p, param),
        WorkloadSpec::Command(c) => command::command(c, param),
        WorkloadSpec::KernelCompile(k) => kernel_compile::command(k, param),
    }
}

/// Measurements from one timed run; an error when the output does not look
/// like a successful run (a sample that cannot be trusted is not a sample).
pub fn measure(spec: &WorkloadSpec, record: &RunRecord) -> Result<Vec<Measurement>, String> {
    if record.status != 0 {
        return Err(format!(
            "{} exited with status {}: {}",
            spec.kind(),
            record.status,
            record.output.trim()
        ));
    }
    match spec {
        WorkloadSpec::Hackbench(_) => hackbench::measure(record),
        WorkloadSpec::PingFlood(_) => ping_flood::measure(record),
        WorkloadSpec::Command(_) => command::measure(record),
        WorkloadSpec::KernelCompile(_) => kernel_compile::measure(record),
    }
}
