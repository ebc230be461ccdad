//! Command-line changes to a suite: to run a seed-scale suite at a size this
//! machine can take (`--scale 0.05 --cpus 2`), or a quick look with fewer
//! boots. They change the values the suite file gave and are checked as
//! those were; the suite itself stays what its file says.

use crate::error::InputError;
use crate::suite::{self, CompileScope, Suite, WorkloadSpec};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Overrides {
    /// Multiplies the work of every run: hackbench loops, ping packet counts.
    pub scale: Option<f64>,
    pub boots: Option<u32>,
    pub iterations: Option<u32>,
    pub cpus: Option<Vec<u32>>,
    /// Replaces every workload's parameter list.
    pub params: Option<Vec<u64>>,
    /// Sets every kernel compile's scope: a seed-scale suite compiles the
    /// whole kernel, which takes hours under TCG; `subset` makes it minutes.
    #[serde(default)]
    pub compile_scope: Option<CompileScope>,
    /// The seed of the run order (and of the report's bootstrap).
    #[serde(default)]
    pub seed: Option<u64>,
    /// A/A calibration: both sides boot the baseline variant, so every
    /// difference found is noise (or a false positive).
    #[serde(default)]
    pub aa: bool,
    /// Run only this shard of the suite (`run-shard K --shards N`). Not
    /// listed with the overrides: every shard of one sweep has the same
    /// overrides, and merge checks that they do. Kept here so a resumed
    /// shard's run selects the same part again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shard::ShardSel>,
}

fn scaled(value: u64, scale: f64) -> u64 {
    ((value as f64 * scale).round() as u64).max(1)
}

impl Overrides {
    /// The overrides as `key=value`, for the record (meta.toml, the report).
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(scale) = self.scale {
            out.push(format!("scale={scale}"));
        }
        if let Some(boots) = self.boots {
            out.push(format!("boots={boots}"));
        }
        if let Some(iterations) = self.iterations {
            out.push(format!("iterations={iterations}"));
        }
        if let Some(cpus) = &self.cpus {
            out.push(format!("cpus={cpus:?}"));
        }
        if let Some(scope) = self.compile_scope {
            let name = clap::ValueEnum::to_possible_value(&scope)
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            out.push(format!("compile-scope={name}"));
        }
        if let Some(seed) = self.seed {
            out.push(format!("seed={seed}"));
        }
        if self.aa {
            out.push("aa=true".into());
        }
        if let Some(params) = &self.params {
            out.push(format!("params={params:?}"));
        }
        out
    }

    /// The suite with these overrides applied, each value checked as the
    /// file's own would be (the same check, naming the option instead of a
    /// line).
    pub fn apply(&self, file: &Suite) -> Result<Suite, InputError> {
        let mut suite = file.clone();
        let bad = |option: &str, m: String| InputError::new(format!("--{option}: {m}"));
        if let Some(scale) = self.scale {
            if !(scale > 0.0 && scale.is_finite()) {
                return Err(bad(
                    "scale",
                    format!("must be a positive number, got {scale}"),
                ));
            }
            for w in &mut suite.workloads {
                match w {
                    WorkloadSpec::Hackbench(h) => h.loops = scaled(h.loops, scale),
                    // A compile's work is the tree; its parameter is the job count.
                    WorkloadSpec::Command(_) | WorkloadSpec::KernelCompile(_) => {}
                    WorkloadSpec::PingFlood(p) => {
                        for c in &mut p.params {
                            *c = scaled(*c, scale);
                        }
                        p.params.dedup();
                    }
                }
            }
        }
        if let Some(boots) = self.boots {
            suite::check_count(boots, "boots").map_err(|m| bad("boots", m))?;
            suite.boots = boots;
        }
        if let Some(iterations) = self.iterations {
            suite::check_count(iterations, "iterations").map_err(|m| bad("iterations", m))?;
            suite.iterations = iterations;
            for w in &mut suite.workloads {
                *w.own_counts_mut().0 = None;
            }
        }
        if let Some(cpus) = &self.cpus {
            suite::check_cpus(cpus).map_err(|m| bad("cpus", format!("{m}, got {cpus:?}")))?;
            suite.cpus = cpus.clone();
            for w in &mut suite.workloads {
                *w.own_cpus_mut() = None;
            }
        }
        if let Some(scope) = self.compile_scope {
            for w in &mut suite.workloads {
                if let WorkloadSpec::KernelCompile(k) = w {
                    k.scope = scope;
                    // The suite's targets and driver were chosen for its own
                    // scope; the new one takes its defaults.
                    k.targets = None;
                    k.driver = None;
                }
            }
        }
        if let Some(seed) = self.seed {
            suite.seed = seed;
        }
        if self.aa {
            let baseline = suite.variants[0].clone();
            let mut again = baseline.clone();
            again.name = format!("{}-again", again.name);
            suite.variants = vec![baseline, again];
        }
        if let Some(params) = &self.params {
            if params.is_empty() || params.contains(&0) {
                return Err(bad(
                    "params",
                    format!("takes values of at least 1, got {params:?}"),
                ));
            }
            for w in &mut suite.workloads {
                match w {
                    WorkloadSpec::Hackbench(h) => h.params = params.clone(),
                    WorkloadSpec::PingFlood(p) => p.params = params.clone(),
                    WorkloadSpec::Command(c) => c.params = params.clone(),
                    WorkloadSpec::KernelCompile(k) => k.params = params.clone(),
                }
            }
            for w in &suite.workloads {
                if let WorkloadSpec::Hackbench(h) = w {
                    crate::workloads::hackbench::check(h).map_err(|m| bad("params", m))?;
                }
            }
        }
        // Last: the split depends on the boots, CPU counts and params above.
        if let Some(sel) = self.shard {
            crate::shard::check(&suite, sel)?;
        }
        Ok(suite)
    }
}
