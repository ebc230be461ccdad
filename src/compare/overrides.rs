//! Command-line changes to a suite: to run a seed-scale suite at a size this
//! machine can take (`--scale 0.05 --cpus 2`), or a quick look with fewer
//! boots. They change the values the suite file gave and are checked as
//! those were; the suite itself stays what its file says.

use crate::error::InputError;
use crate::samples::Overrides;
use crate::suite::{self, Suite};
use crate::workloads::{Guest, WorkloadKind};

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
        if !self.patches.is_empty() {
            let names: Vec<String> = self
                .patches
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            out.push(format!("patches={}", names.join(",")));
        }
        if let Some(revs) = &self.revs {
            out.push(format!("revs={revs}"));
        }
        out
    }

    /// The suite with these overrides applied, each value checked as the
    /// file's own would be (the same checks, naming the option instead of a
    /// line).
    pub fn apply(&self, file: &Suite) -> Result<Suite, InputError> {
        let mut suite = file.clone();
        let bad = |m: String| Err(InputError::new(m));
        if let Some(scale) = self.scale {
            if !(scale > 0.0 && scale.is_finite()) {
                return bad(format!("--scale must be a positive number, got {scale}"));
            }
            for w in &mut suite.workloads {
                w.scale(scale);
            }
        }
        if let Some(boots) = self.boots {
            if boots == 0 {
                return bad("--boots must be at least 1".into());
            }
            suite.boots = boots;
        }
        if let Some(iterations) = self.iterations {
            if iterations == 0 {
                return bad("--iterations must be at least 1".into());
            }
            suite.iterations = iterations;
            for w in &mut suite.workloads {
                w.iterations = None;
            }
        }
        if let Some(cpus) = &self.cpus {
            suite::check_cpu_counts(cpus)
                .map_err(|why| InputError::new(format!("--cpus {cpus:?}: {why}")))?;
            suite.cpus = cpus.clone();
            for w in &mut suite.workloads {
                w.cpus = None;
            }
        }
        if let Some(scope) = self.compile_scope {
            for w in &mut suite.workloads {
                if let WorkloadKind::KernelCompile(k) = &mut w.kind {
                    k.set_scope(scope);
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
                return bad(format!(
                    "--params takes values of at least 1, got {params:?}"
                ));
            }
            for w in &mut suite.workloads {
                w.params = params.clone();
            }
        }
        // The workloads as the overrides left them pass the file's checks.
        let guest = Guest {
            cpus: &suite.cpus,
            memory_mib: suite.memory_mib,
        };
        for w in &suite.workloads {
            w.check(guest).map_err(|r| InputError::new(r.message))?;
        }
        if let Some(c) = crate::workloads::collision(&suite.workloads, &suite.cpus) {
            return bad(format!(
                "{} (after the command line's {})",
                c.describe(&suite.workloads),
                self.describe().join(", ")
            ));
        }
        // Last: the split depends on the boots, CPU counts and params above.
        if let Some(sel) = self.shard {
            crate::shard::check(&suite, sel)?;
        }
        Ok(suite)
    }
}
