//! Workloads: what runs in the guest for each (workload, parameter) step and
//! how a timed run becomes measurements.
//!
//! Each workload is one file here, owning its settings as the suite file
//! writes them (serde), their checks, how `--scale` changes its work, its
//! parameter's label, the command line it runs in the guest and how that
//! command's output becomes samples, behind the [`Workload`] trait. The keys
//! every workload has (`params`, `name`, `iterations`, `warmup`, `cpus`) are
//! [`WorkloadSpec`]'s. Adding a workload is one new file and one line in the
//! `workloads!` list below.

use crate::base::protocol::{Directive, RunRecord};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod output;
pub use output::OutputError;

/// The cycle model's counts of the parts of one timed run, by part number.
pub type ModelParts = BTreeMap<u8, crate::base::cycle_model::RegionCounts>;

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

/// The guest a suite boots, as far as a workload's checks need it.
#[derive(Debug, Clone, Copy)]
pub struct Guest<'a> {
    /// The suite's CPU counts.
    pub cpus: &'a [u32],
    pub memory_mib: u32,
}

/// Why a workload cannot run as the suite gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub message: String,
    /// The suite's own key the problem is about (e.g. `memory_mib`), when it
    /// is not the workload's own settings.
    pub suite_key: Option<&'static str>,
    /// The key and value in the workload's table the problem is about (a
    /// path, a pattern), so the error can point at its line rather than the
    /// table's first.
    pub near: Option<(&'static str, String)>,
}

impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Refusal {
            message,
            suite_key: None,
            near: None,
        }
    }
}

impl Refusal {
    /// A refusal about the value `value` of the workload's key `key`.
    pub fn near(message: String, key: &'static str, value: &str) -> Refusal {
        Refusal {
            message,
            suite_key: None,
            near: Some((key, value.to_string())),
        }
    }
}

/// A host file a workload carries into the guest image: `from` on the host
/// (relative to the suite file as written, absolute once the suite is
/// read), `to` its absolute path in the guest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestFile {
    pub from: String,
    pub to: String,
}

/// Paths of the guest that are not the image's to fill: filesystems the
/// agent mounts over it, and the agent and its job.
const GUEST_PATHS_NOT_IN_IMAGE: &[&str] = &["/proc", "/sys", "/dev", "/init", "/job"];

/// Why `path` cannot be a file's path in the guest image, if it cannot: it
/// must be absolute and plain (no `.` or `..`, no empty part) and lie in
/// the image, not on a filesystem mounted over it.
pub fn check_guest_path(path: &str) -> Result<(), String> {
    let plain = path.starts_with('/')
        && path.len() > 1
        && path[1..]
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && !path.contains(['\t', '\n', '\r']);
    if !plain {
        return Err(format!(
            "guest path {path:?} must be absolute, without empty, `.` or `..` parts"
        ));
    }
    if let Some(taken) = GUEST_PATHS_NOT_IN_IMAGE
        .iter()
        .find(|t| path == **t || path.starts_with(&format!("{t}/")))
    {
        return Err(format!(
            "guest path {path:?} is outside the image: {taken} is {}",
            if ["/init", "/job"].contains(taken) {
                "markbench's own"
            } else {
                "a filesystem mounted over it at boot"
            }
        ));
    }
    Ok(())
}

/// One kind of workload: its settings (the suite file's keys besides the
/// ones every workload has) and what it does with them.
pub trait Workload {
    /// What the sweep parameter is called in table headers ("groups").
    const PARAM_LABEL: &'static str;

    /// Why these settings cannot run in `guest` at `params`, if they cannot.
    fn check(&self, params: &[u64], guest: Guest<'_>) -> Result<(), Refusal>;

    /// `--scale F`: multiply the work of every run (loops, packet counts);
    /// some workloads' work is their parameter, so `params` may change too.
    fn scale(&mut self, params: &mut Vec<u64>, factor: f64);

    /// Untimed commands a boot runs before any step of this workload.
    fn setup(&self) -> Vec<Directive> {
        Vec::new()
    }

    /// Host programs (absolute paths) the workload runs in the guest beyond
    /// what every image holds: each is copied into the guest image at the
    /// same path, with the shared libraries it links.
    fn programs(&self) -> Vec<String> {
        Vec::new()
    }

    /// Host files the workload carries into the guest image.
    fn files(&self) -> Vec<GuestFile> {
        Vec::new()
    }

    /// The untimed command run before each iteration of a step, if any.
    fn before(&self) -> Option<Vec<String>> {
        None
    }

    /// The guest command of one step.
    fn command(&self, param: u64) -> Vec<String>;

    /// Measurements from one timed run that exited 0; an error when the
    /// output does not look like a successful run (a sample that cannot be
    /// trusted is not a sample).
    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError>;

    /// Measurements from the cycle model's counts of the parts the guest
    /// marked inside one timed run (see [`crate::base::cycle_model::parts`]),
    /// given the run's record; called only when the model ran, the run was
    /// measured and it has parts. A workload whose guest marks no parts
    /// makes nothing of them.
    fn model_parts(
        &self,
        _record: &RunRecord,
        _parts: &ModelParts,
    ) -> Result<Vec<Measurement>, OutputError> {
        Ok(Vec::new())
    }

    /// The command line as a person reads it, the parameter shown as
    /// `params`: one value, or a list in braces (`hackbench -g {2, 4} -l 20 …`).
    fn describe(&self, params: &str) -> String;
}

/// The last lines of a run's output, for an error that says what the
/// program printed instead of what was expected.
pub fn output_tail(output: &str) -> String {
    let lines: Vec<&str> = output.trim_end().lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

/// A run that exited 0 after `elapsed_ns` of guest time and printed
/// `output`: what the tests of a workload's parser give it.
#[cfg(test)]
pub(crate) fn finished_run(id: &str, output: &str, elapsed_ns: u64) -> RunRecord {
    RunRecord {
        id: id.into(),
        iteration: 0,
        status: 0,
        elapsed_ns,
        user_ns: 0,
        sys_ns: 0,
        output: output.into(),
    }
}

/// `--scale`'s rounding: never below one of anything.
pub fn scaled(value: u64, factor: f64) -> u64 {
    ((value as f64 * factor).round() as u64).max(1)
}

/// `--scale` for a workload whose parameter is its work (periods, seconds):
/// each value scaled and capped at `max`, values that became equal kept once.
pub fn scale_work_params(params: &mut Vec<u64>, factor: f64, max: u64) {
    let mut out: Vec<u64> = Vec::new();
    for &p in params.iter() {
        let p = scaled(p, factor).min(max);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    *params = out;
}

/// Declares the workloads: for each, the module holding it, its `kind` in a
/// suite file, and its settings' type. Generates [`WorkloadKind`] (the
/// settings of any workload, tagged by `kind`) and [`KINDS`].
macro_rules! workloads {
    ($($module:ident: $kind:literal => $variant:ident($settings:ident)),+ $(,)?) => {
        $(pub mod $module;)+

        /// The settings of one workload, of whichever kind the suite's
        /// `kind` key names.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind")]
        pub enum WorkloadKind {
            $(#[serde(rename = $kind)] $variant($module::$settings),)+
        }

        /// Every workload kind and its parameter's label, in the order above.
        pub const KINDS: &[(&str, &str)] = &[
            $(($kind, <$module::$settings as Workload>::PARAM_LABEL),)+
        ];

        impl WorkloadKind {
            /// The suite file's `kind`.
            pub fn name(&self) -> &'static str {
                match self { $(WorkloadKind::$variant(_) => $kind,)+ }
            }
            fn check(&self, params: &[u64], guest: Guest<'_>) -> Result<(), Refusal> {
                match self { $(WorkloadKind::$variant(w) => w.check(params, guest),)+ }
            }
            fn scale(&mut self, params: &mut Vec<u64>, factor: f64) {
                match self { $(WorkloadKind::$variant(w) => w.scale(params, factor),)+ }
            }
            fn setup(&self) -> Vec<Directive> {
                match self { $(WorkloadKind::$variant(w) => w.setup(),)+ }
            }
            fn programs(&self) -> Vec<String> {
                match self { $(WorkloadKind::$variant(w) => w.programs(),)+ }
            }
            fn files(&self) -> Vec<GuestFile> {
                match self { $(WorkloadKind::$variant(w) => w.files(),)+ }
            }
            fn before(&self) -> Option<Vec<String>> {
                match self { $(WorkloadKind::$variant(w) => w.before(),)+ }
            }
            fn command(&self, param: u64) -> Vec<String> {
                match self { $(WorkloadKind::$variant(w) => w.command(param),)+ }
            }
            fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
                match self { $(WorkloadKind::$variant(w) => w.measure(record),)+ }
            }
            fn model_parts(
                &self,
                record: &RunRecord,
                parts: &ModelParts,
            ) -> Result<Vec<Measurement>, OutputError> {
                match self { $(WorkloadKind::$variant(w) => w.model_parts(record, parts),)+ }
            }
            fn describe(&self, params: &str) -> String {
                match self { $(WorkloadKind::$variant(w) => w.describe(params),)+ }
            }
        }
    };
}

workloads! {
    hackbench: "hackbench" => Hackbench(HackbenchSpec),
    ping_flood: "ping-flood" => PingFlood(PingFloodSpec),
    command: "command" => Command(CommandSpec),
    kernel_compile: "kernel-compile" => KernelCompile(KernelCompileSpec),
    ring_buffer: "ring-buffer" => RingBuffer(RingBufferSpec),
    tracepoint_benchmark: "tracepoint-benchmark" => TracepointBenchmark(TracepointBenchmarkSpec),
    micro: "micro" => Micro(MicroSpec),
    perf_bench: "perf-bench" => PerfBench(PerfBenchSpec),
    stress_ng: "stress-ng" => StressNg(StressNgSpec),
}

/// The workload kind of a samples' `workload` column, as
/// [`WorkloadSpec::label`] wrote it.
pub fn kind_of_label(label: &str) -> &str {
    label.split_once(':').map_or(label, |(kind, _)| kind)
}

/// What the sweep parameter of the workload a sample names (its `workload`
/// column: the kind, or `kind:name`) is called in table headers.
pub fn param_label(workload: &str) -> &'static str {
    let kind = kind_of_label(workload);
    KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or("param", |(_, label)| label)
}

/// Why a timed run gave no measurements.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeasureError {
    /// The workload's command exited non-zero.
    #[error("{workload} exited with status {status}: {output}")]
    Exited {
        workload: &'static str,
        status: i32,
        output: String,
    },
    /// It exited 0, but its output does not look like a successful run
    /// (the workload's parser says where and why).
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// A `[[workload]]` of a suite: the keys every workload has, and its kind's
/// own settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    /// The parameter values it sweeps (what each is: the kind's `PARAM_LABEL`).
    pub params: Vec<u64>,
    /// Tells two workloads of one kind apart in the samples and the report
    /// (`command:NAME`); without it the samples carry the kind alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Measured iterations and warm-ups per boot of this workload (default:
    /// the suite's). `--iterations` on the command line sets every
    /// workload's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<u32>,
    /// The CPU counts this workload runs at, a subset of the suite's
    /// (default: all of them): a suite can measure a precise point on one
    /// vCPU and an SMP point beside it without running everything twice.
    /// `--cpus` on the command line keeps it to those of them it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
    /// Its own keys are checked by the kind's type (unknown keys refused
    /// there: serde cannot refuse them beside a flattened field).
    #[serde(flatten)]
    pub kind: WorkloadKind,
}

impl WorkloadSpec {
    /// The suite file's `kind`.
    pub fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// What its samples' `workload` column holds: the kind, or `kind:name`
    /// (read back by [`kind_of_label`]).
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => format!("{}:{name}", self.kind()),
            None => self.kind().to_string(),
        }
    }

    pub fn param_label(&self) -> &'static str {
        param_label(self.kind())
    }

    /// Whether this workload runs in a boot with `cpus` vCPUs.
    pub fn runs_at(&self, cpus: u32) -> bool {
        self.cpus.as_ref().is_none_or(|list| list.contains(&cpus))
    }

    /// (measured iterations, warm-ups) per boot, given the suite's.
    pub fn iterations_in(&self, suite_iterations: u32, suite_warmup: u32) -> (u32, u32) {
        (
            self.iterations.unwrap_or(suite_iterations),
            self.warmup.unwrap_or(suite_warmup),
        )
    }

    /// Why this workload cannot run in `guest`, if it cannot. The message
    /// starts with the workload's kind.
    pub fn check(&self, guest: Guest<'_>) -> Result<(), Refusal> {
        let kind = self.kind();
        if self.params.is_empty() || self.params.contains(&0) {
            return Err(
                format!("{kind}: params must list at least one value, each at least 1").into(),
            );
        }
        if let Some((i, p)) = self
            .params
            .iter()
            .enumerate()
            .find(|(i, p)| self.params[..*i].contains(p))
        {
            return Err(format!(
                "{kind}: params lists {p} twice (entries {} and {}); each point is measured once a boot",
                self.params.iter().position(|q| q == p).unwrap_or(0) + 1,
                i + 1
            )
            .into());
        }
        if let Some(name) = &self.name {
            if name.trim().is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                return Err(format!(
                    "{kind}: name {name:?} must be letters, digits, _ - or . (it names the workload in samples.csv)"
                )
                .into());
            }
        }
        if let Some(own) = &self.cpus {
            if own.is_empty() || own.iter().any(|c| !guest.cpus.contains(c)) {
                return Err(format!(
                    "{kind}: cpus = {own:?} must be one or more of the suite's CPU counts {:?}",
                    guest.cpus
                )
                .into());
            }
        }
        if let Some(iterations) = self.iterations {
            crate::base::error::at_least_one(iterations, &format!("{kind}: iterations"))?;
        }
        self.kind.check(&self.params, guest)
    }

    /// `--scale F`: multiply the work of every run.
    pub fn scale(&mut self, factor: f64) {
        self.kind.scale(&mut self.params, factor);
    }

    /// Untimed commands a boot runs before any step of this workload.
    pub fn setup(&self) -> Vec<Directive> {
        self.kind.setup()
    }

    /// The untimed command run before each iteration of a step, if any.
    pub fn before(&self) -> Option<Vec<String>> {
        self.kind.before()
    }

    /// Host programs the workload needs in the guest beyond every image's.
    pub fn programs(&self) -> Vec<String> {
        self.kind.programs()
    }

    /// Host files the workload carries into the guest image.
    pub fn files(&self) -> Vec<GuestFile> {
        self.kind.files()
    }

    /// Resolves the host side of each carried file with `resolve` (a
    /// suite's relative paths are relative to it).
    pub fn resolve_files(&mut self, resolve: impl Fn(&str) -> String) {
        if let WorkloadKind::Command(command) = &mut self.kind {
            for f in &mut command.files {
                f.from = resolve(&f.from);
            }
        }
    }

    /// The guest command for one step.
    pub fn command(&self, param: u64) -> Vec<String> {
        self.kind.command(param)
    }

    /// Measurements from one timed run; an error when it failed or its
    /// output does not look like a successful run.
    pub fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, MeasureError> {
        if record.status != 0 {
            return Err(MeasureError::Exited {
                workload: self.kind(),
                status: record.status,
                output: record.output.trim().to_string(),
            });
        }
        self.kind.measure(record).map_err(MeasureError::Output)
    }

    /// Measurements from the cycle model's counts of the parts of one
    /// measured timed run (see [`Workload::model_parts`]).
    pub fn model_parts(
        &self,
        record: &RunRecord,
        parts: &ModelParts,
    ) -> Result<Vec<Measurement>, OutputError> {
        self.kind.model_parts(record, parts)
    }

    /// The workload as a person reads it: its command line, how many runs a
    /// boot and at which CPU counts, given the suite's runs a boot
    /// (`hackbench -g 2 -l 20 (process, socket) × 18 runs + 1 warm-up`).
    pub fn describe(&self, suite_iterations: u32, suite_warmup: u32) -> String {
        let params: Vec<String> = self.params.iter().map(u64::to_string).collect();
        let mut text = String::new();
        if let Some(name) = &self.name {
            text.push_str(&format!("{name}: "));
        }
        let params = match params.as_slice() {
            [one] => one.clone(),
            many => format!("{{{}}}", many.join(", ")),
        };
        text.push_str(&self.kind.describe(&params));
        let (iterations, warmup) = self.iterations_in(suite_iterations, suite_warmup);
        text.push_str(&format!(
            " × {iterations} run{}",
            if iterations == 1 { "" } else { "s" }
        ));
        if warmup > 0 {
            text.push_str(&format!(" + {warmup} warm-up"));
        }
        if let Some(cpus) = &self.cpus {
            let cpus: Vec<String> = cpus.iter().map(u32::to_string).collect();
            text.push_str(&format!(
                ", on {} vCPU{}",
                cpus.join(", "),
                if cpus.len() == 1 && cpus[0] == "1" {
                    ""
                } else {
                    "s"
                }
            ));
        }
        text
    }
}

/// Two workloads whose samples would pool into one point: the same label
/// (kind, or `kind:name`) at a CPU count and parameter both run. With
/// different commands they measure different things; with the same one
/// (a suite's 1-vCPU and SMP points, had `--cpus` run both at every count
/// as it did in runs of format 3) each numbers its runs from 0, so a boot
/// would record every run's sample twice and the run could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Collision {
    /// Indices into the suite's workloads, `first < second`.
    pub first: usize,
    pub second: usize,
    pub cpus: u32,
    pub param: u64,
}

impl Collision {
    pub fn describe(&self, workloads: &[WorkloadSpec]) -> String {
        let (a, b) = (&workloads[self.first], &workloads[self.second]);
        if a.command(self.param) == b.command(self.param) {
            return format!(
                "{}: workloads {} and {} both run {:?} at {} vCPU(s); each would record its \
                 runs as the same samples of one point: keep one of them (its `iterations` \
                 sets how many runs), or give one a `name`",
                b.kind(),
                self.first + 1,
                self.second + 1,
                b.command(self.param).join(" "),
                self.cpus,
            );
        }
        format!(
            "{}: workloads {} and {} both measure {} {} at {} vCPU(s) with other settings \
             ({:?} against {:?}); their samples would pool into one point: give one of them \
             a `name`",
            b.kind(),
            self.first + 1,
            self.second + 1,
            b.param_label(),
            self.param,
            self.cpus,
            a.command(self.param).join(" "),
            b.command(self.param).join(" ")
        )
    }
}

/// The first pair of `workloads` whose samples would pool, if any.
pub fn collision(workloads: &[WorkloadSpec], cpus: &[u32]) -> Option<Collision> {
    for (second, b) in workloads.iter().enumerate() {
        for (first, a) in workloads[..second].iter().enumerate() {
            if a.label() != b.label() {
                continue;
            }
            for &c in cpus.iter().filter(|&&c| a.runs_at(c) && b.runs_at(c)) {
                if let Some(&param) = b.params.iter().find(|p| a.params.contains(p)) {
                    return Some(Collision {
                        first,
                        second,
                        cpus: c,
                        param,
                    });
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(toml_text: &str) -> WorkloadSpec {
        toml::from_str(toml_text).unwrap()
    }

    const GUEST: Guest<'static> = Guest {
        cpus: &[1, 2],
        memory_mib: 1024,
    };

    #[test]
    fn a_run_that_failed_or_said_nothing_measurable_is_told_apart() {
        let s = spec("kind = \"hackbench\"\nparams = [2]\n");
        let run = |status: i32, output: &str| RunRecord {
            id: "0".into(),
            iteration: 0,
            status,
            elapsed_ns: 1,
            user_ns: 0,
            sys_ns: 0,
            output: output.into(),
        };
        let exited = s.measure(&run(3, "fork failed\n")).unwrap_err();
        assert_eq!(
            exited,
            MeasureError::Exited {
                workload: "hackbench",
                status: 3,
                output: "fork failed".into()
            }
        );
        assert_eq!(
            exited.to_string(),
            "hackbench exited with status 3: fork failed"
        );
        let silent = s.measure(&run(0, "nothing\n")).unwrap_err();
        assert!(matches!(silent, MeasureError::Output(_)), "{silent:?}");
        assert_eq!(
            silent.to_string(),
            "hackbench: no `Time:` line; output: nothing"
        );
    }

    #[test]
    fn every_kind_has_a_label_and_unknown_ones_fall_back() {
        assert_eq!(param_label("hackbench"), "groups");
        assert_eq!(param_label("ping-flood"), "packets");
        assert_eq!(param_label("kernel-compile"), "jobs");
        assert_eq!(param_label("ring-buffer"), "periods");
        assert_eq!(param_label("tracepoint-benchmark"), "seconds");
        assert_eq!(param_label("hackbench:threads"), "groups");
        assert_eq!(param_label("command"), "param");
        assert_eq!(param_label("micro"), "loops");
        assert_eq!(param_label("perf-bench"), "param");
        assert_eq!(param_label("stress-ng"), "bogo ops");
        assert_eq!(param_label("dbench"), "param");
        let kinds: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            kinds,
            [
                "hackbench",
                "ping-flood",
                "command",
                "kernel-compile",
                "ring-buffer",
                "tracepoint-benchmark",
                "micro",
                "perf-bench",
                "stress-ng"
            ]
        );
    }

    #[test]
    fn a_param_listed_twice_is_refused() {
        let s = spec("kind = \"hackbench\"\nparams = [2, 4, 2]\n");
        let e = s.check(GUEST).unwrap_err().message;
        assert!(e.contains("params lists 2 twice (entries 1 and 3)"), "{e}");
    }

    #[test]
    fn unknown_keys_of_a_kind_are_refused_and_common_keys_read() {
        let e = toml::from_str::<WorkloadSpec>("kind = \"hackbench\"\nparams = [2]\nlops = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("lops") && e.contains("loops"), "{e}");
        let s = spec("kind = \"ping-flood\"\nparams = [5]\niterations = 3\ncpus = [1]\n");
        assert_eq!((s.iterations, s.cpus.as_deref()), (Some(3), Some(&[1][..])));
        assert!(s.runs_at(1) && !s.runs_at(2));
    }

    #[test]
    fn workloads_of_one_kind_collide_only_with_other_commands_at_a_shared_point() {
        let a = spec("kind = \"command\"\nparams = [1]\nargv = [\"/bin/a\"]\n");
        let b = spec("kind = \"command\"\nparams = [1]\nargv = [\"/bin/b\"]\n");
        let c = collision(&[a.clone(), b.clone()], &[1]).unwrap();
        assert_eq!((c.first, c.second, c.cpus, c.param), (0, 1, 1, 1));
        assert!(c
            .describe(&[a.clone(), b.clone()])
            .contains("give one of them a `name`"));
        let mut named = b.clone();
        named.name = Some("b".into());
        assert_eq!(named.label(), "command:b");
        assert_eq!(collision(&[a.clone(), named], &[1]), None);
        // Apart in CPU counts or params: no pooling.
        let mut here = a.clone();
        here.cpus = Some(vec![1]);
        let mut elsewhere = b.clone();
        elsewhere.cpus = Some(vec![2]);
        assert_eq!(collision(&[here.clone(), elsewhere], &[1, 2]), None);
        assert!(collision(&[here, b.clone()], &[1, 2]).is_some());
        let mut other_param = b.clone();
        other_param.params = vec![2];
        assert_eq!(collision(&[a.clone(), other_param], &[1]), None);
        // The same command twice at one point would record each run twice.
        let twice = collision(&[a.clone(), a.clone()], &[1]).unwrap();
        assert!(twice
            .describe(&[a.clone(), a])
            .contains("both run \"/bin/a\" at 1 vCPU(s)"));
    }

    #[test]
    fn a_workload_reads_as_its_command_line() {
        let s = spec("kind = \"hackbench\"\nparams = [2]\nloops = 20\ncpus = [1]\n");
        assert_eq!(
            s.describe(18, 1),
            "hackbench -g 2 -l 20 -f 20 -s 100 (process, socket) × 18 runs + 1 warm-up, on 1 vCPU"
        );
        let s = spec("kind = \"ping-flood\"\nparams = [2000, 4000]\niterations = 9\nwarmup = 0\n");
        assert_eq!(
            s.describe(18, 1),
            "ping -f -q -n -c {2000, 4000} -s 56 127.0.0.1 × 9 runs"
        );
    }
}
