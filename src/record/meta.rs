//! `meta.toml`: everything about a run except its samples, as data. Its
//! format is numbered ([`RUN_FORMAT`]); [`RunMeta::read`] upgrades a run
//! written in an older format, so readers see one shape.

use crate::base::error::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use super::{BootKey, META_FILE};
use crate::base::sha256::Digest;

/// What the report needs to know about the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub kernel_release: String,
    pub qemu_version: String,
    /// The QEMU binary's path (runs before it was recorded: empty).
    #[serde(default)]
    pub qemu_path: String,
}

/// A host a merged run's boots ran on: its name, and its CPU model when
/// the run knows it (empty when a host is known only from the samples it
/// measured).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RunHost {
    pub hostname: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu_model: String,
}

/// What a merged run of hosts with different CPUs says of its CPU: the
/// first shard's, and that the Hosts table names the rest.
pub fn cpu_models_words(models: &[String]) -> String {
    match models {
        [] => String::new(),
        [one] => one.clone(),
        [first, ..] => format!("{first} (and others: see the Hosts table)"),
    }
}

/// A kernel as the metadata records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelMeta {
    pub variant: String,
    pub kernel: String,
    pub cmdline: String,
    /// The source as the build identified it (runs before format 5: its
    /// words, `tarball FILE sha256 HEX` or `tree PATH HEAD COMMIT changes
    /// KEY`).
    pub source: super::Recorded<super::SourceRecord>,
    /// The source path, revision, resolved commit and subject, and patch
    /// names and hashes (absent in runs made before they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<super::OriginRecord>,
    pub build_key: Digest,
    /// The configuration the kernel started from: `tinyconfig`,
    /// `defconfig`, or a `.config`'s path and hash (runs before format 5:
    /// in words; none in runs made before there was a choice, all of them
    /// on tinyconfig).
    #[serde(default, skip_serializing_if = "super::Recorded::is_unrecorded")]
    pub config_base: super::Recorded<super::ConfigBase>,
    pub config_sha256: Digest,
    pub compiler: String,
    /// Each fragment's hash, by file name.
    pub fragments: std::collections::BTreeMap<String, Digest>,
    /// Where each fragment was found, by file name: its path, or `built in`
    /// (empty in runs made before this was recorded).
    #[serde(default)]
    pub fragment_sources: std::collections::BTreeMap<String, String>,
    pub bzimage: PathBuf,
    /// The booted bzImage's sha256 (empty in runs made before it was
    /// recorded): two variants with the same one booted the same kernel.
    #[serde(default, skip_serializing_if = "Digest::is_empty")]
    pub bzimage_sha256: Digest,
}

/// How a boot ended, as the runner saw it.
// A boot record made with `Default` (tests do) is of a completed boot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum BootEnd {
    /// The agent said `done` and the VM powered off.
    #[default]
    Completed,
    /// The agent reported an error (e.g. a workload exited non-zero).
    AgentError { message: String },
    /// The guest kernel panicked (seen on the console).
    KernelPanic { detail: String },
    /// Still running at the deadline; killed.
    TimedOut { after_s: u64 },
    /// QEMU could not start or exited with an error of its own.
    QemuFailed { detail: String },
    /// QEMU could not load the TCG plugin the boot asked for.
    PluginFailed { detail: String },
    /// The VM ended without the agent saying `done`.
    Vanished { detail: String },
    /// Stopped by the user (Ctrl-C).
    Interrupted,
    /// A profiled boot that completed, but the plugin left no profile that
    /// could be read.
    NoProfile { detail: String },
    /// A profiled boot that completed, but the plugin's counts did not pair
    /// with the runs the agent reported.
    ProfileMismatch { detail: String },
    /// An older run's ending in the words it recorded, which today's endings
    /// do not reproduce: kept as it was, so the run renders as it did.
    Recorded { sentence: String, ok: bool },
}

impl BootEnd {
    pub fn is_ok(&self) -> bool {
        match self {
            BootEnd::Completed => true,
            BootEnd::Recorded { ok, .. } => *ok,
            _ => false,
        }
    }

    /// One line for logs and the report.
    pub fn describe(&self) -> String {
        match self {
            BootEnd::Completed => "completed".into(),
            BootEnd::AgentError { message } => format!("agent error: {message}"),
            BootEnd::KernelPanic { detail } => format!("kernel panic: {detail}"),
            BootEnd::TimedOut { after_s } => format!("timed out after {after_s} s; killed"),
            BootEnd::QemuFailed { detail } => format!("QEMU failed: {detail}"),
            BootEnd::PluginFailed { detail } => format!("QEMU could not load the plugin: {detail}"),
            BootEnd::Vanished { detail } => format!("guest ended without finishing: {detail}"),
            BootEnd::Interrupted => "interrupted (Ctrl-C); stopped".into(),
            BootEnd::NoProfile { detail } => format!("no profile from the plugin: {detail}"),
            BootEnd::ProfileMismatch { detail } => detail.clone(),
            BootEnd::Recorded { sentence, .. } => sentence.clone(),
        }
    }
}

/// One boot as it went. Runs of formats 0 and 1 also recorded the ending
/// as a sentence (`status`) and a flag (`ok`); they are read into `end`
/// ([`super::upgrade::RecordedBoot`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "super::upgrade::RecordedBoot")]
pub struct BootRecord {
    pub unit: usize,
    pub variant: String,
    pub cpus: u32,
    pub boot: u32,
    pub wall_s: f64,
    pub samples: usize,
    pub console_log: String,
    /// Kernel release and online CPUs the guest reported.
    pub guest_kernel: String,
    pub guest_cpus: String,
    /// `uname -v` as the guest reported it (empty in runs from before it
    /// was reported).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub guest_version: String,
    /// Whether the failure may be the host's (hang, QEMU failure) and worth a retry.
    #[serde(default)]
    pub retryable: bool,
    /// Host cores busy with work other than markbench's and its guests',
    /// over half a second before and after the boot (runs from before
    /// boots ran side by side counted every busy core, no guest of theirs
    /// running then).
    #[serde(default)]
    pub host_load_before: f64,
    #[serde(default)]
    pub host_load_after: f64,
    /// QEMU's `-seed` of the boot (icount mode): with the same kernel, image
    /// and QEMU, booting with it again repeats the boot's figures exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_seed: Option<u64>,
    /// How the boot ended.
    pub end: BootEnd,
    /// How the first attempt ended, when the boot was retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retried_after: Option<BootEnd>,
    /// Wall seconds from QEMU's start to the guest agent's hello: the boot
    /// itself (firmware, kernel, initramfs unpack), paid once a boot. Absent
    /// in older runs and when the guest never said hello.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hello_s: Option<f64>,
    /// The host CPU the guest's QEMU was bound to, when boots ran side by
    /// side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<usize>,
}

#[cfg(test)]
impl BootRecord {
    /// A boot that completed (`ok`) or was interrupted, the rest default:
    /// what tests of a run's outcome need of its boots.
    pub(crate) fn ending_ok(ok: bool) -> BootRecord {
        BootRecord {
            end: if ok {
                BootEnd::Completed
            } else {
                BootEnd::Interrupted
            },
            ..BootRecord::default()
        }
    }
}

impl BootRecord {
    /// How a boot that ended with `end` after a first attempt that ended
    /// with `retried_after` is said in logs and the report.
    pub fn describe(end: &BootEnd, retried_after: Option<&BootEnd>) -> String {
        match (retried_after, end) {
            // An older run's sentence already says all it recorded.
            (_, BootEnd::Recorded { sentence, .. }) => sentence.clone(),
            (Some(first), _) => format!("{} (retried after: {})", end.describe(), first.describe()),
            (None, _) => end.describe(),
        }
    }

    /// How the boot ended, in words.
    pub fn status(&self) -> String {
        BootRecord::describe(&self.end, self.retried_after.as_ref())
    }

    /// The boot completed (the agent said `done`).
    pub fn ok(&self) -> bool {
        self.end.is_ok()
    }

    pub fn key(&self) -> BootKey {
        BootKey {
            variant: self.variant.clone(),
            cpus: self.cpus,
            boot: self.boot,
        }
    }

    /// A boot taken while the host was busy with something else: before it
    /// started, half the cores or more were busy with work not markbench's.
    pub fn under_load(&self, host_cores: usize) -> bool {
        self.host_load_before >= 0.5 * host_cores.max(1) as f64
    }
}

/// The format of the run directory this version writes. Format 0 is every
/// run written before the format was numbered; [`RunMeta::read`] brings it
/// (and any later older format) up to this one.
pub const RUN_FORMAT: u32 = 6;

/// A run's format number. A run made now (and `RunMeta::default()`) is in
/// [`RUN_FORMAT`]; a `meta.toml` without the number is format 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunFormat(pub u32);

impl Default for RunFormat {
    fn default() -> RunFormat {
        RunFormat(RUN_FORMAT)
    }
}

fn unnumbered() -> RunFormat {
    RunFormat(0)
}

fn default_margin() -> f64 {
    0.02
}

// The values below are decided by the stages above this one (the machine,
// the command line, the shard) and recorded in `meta.toml` as they are:
// they live here, with the rest of the run directory's schema, so that
// reading a run needs nothing of the code that decided them.

/// One unit of a run's order: one boot of one variant at one CPU count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitRecord {
    /// Its place in the run's order.
    pub index: usize,
    pub variant: String,
    pub cpus: u32,
    pub boot: u32,
    /// The shard that ran it, in a merged run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
}

/// The accelerator a boot runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    #[default]
    Tcg,
}

impl std::fmt::Display for Accel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// Where the guest's RTC starts in icount mode: any fixed date will do. It
/// is part of what a run's timing was, so it lives with the record.
pub const ICOUNT_RTC_BASE: &str = "2020-01-01T00:00:00";

/// How guest time runs in a run, decided once: `icount_shift` is `None` for
/// wall time and `Some(shift)` for instruction counting; `reason` says why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimingDecision {
    pub icount_shift: Option<u32>,
    pub reason: super::Recorded<super::TimingReason>,
    /// An older run's sentence for its timing: the run is shown as it
    /// recorded itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_sentence: Option<String>,
}

impl TimingDecision {
    /// Wall time, for `reason`.
    pub fn wall(reason: impl Into<super::Recorded<super::TimingReason>>) -> TimingDecision {
        TimingDecision {
            icount_shift: None,
            reason: reason.into(),
            recorded_sentence: None,
        }
    }

    /// Instruction counting at `shift`, for `reason`.
    pub fn icount(
        shift: u32,
        reason: impl Into<super::Recorded<super::TimingReason>>,
    ) -> TimingDecision {
        TimingDecision {
            icount_shift: Some(shift),
            reason: reason.into(),
            recorded_sentence: None,
        }
    }

    pub fn is_icount(&self) -> bool {
        self.icount_shift.is_some()
    }

    /// The mode and its setting alone: what two runs must share to be
    /// compared or merged.
    pub fn mode(&self) -> TimingMode {
        match self.icount_shift {
            Some(shift) => TimingMode::Icount { shift },
            None => TimingMode::Wall,
        }
    }
}

/// How guest time ran, without why: what two runs must share to be
/// compared or merged. Written as it is shown, `wall` or `icount shift=4`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub enum TimingMode {
    /// The guest's clock runs on host time.
    #[default]
    Wall,
    /// Guest time counts executed instructions, 2^shift ns each.
    Icount { shift: u32 },
}

impl std::fmt::Display for TimingMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimingMode::Wall => f.write_str("wall"),
            TimingMode::Icount { shift } => write!(f, "icount shift={shift}"),
        }
    }
}

impl TryFrom<String> for TimingMode {
    type Error = String;

    fn try_from(text: String) -> Result<TimingMode, String> {
        if text == "wall" {
            return Ok(TimingMode::Wall);
        }
        text.strip_prefix("icount shift=")
            .and_then(|shift| shift.parse().ok())
            .map(|shift| TimingMode::Icount { shift })
            .ok_or_else(|| format!("timing mode {text:?} is neither wall nor icount shift=N"))
    }
}

impl From<TimingMode> for String {
    fn from(mode: TimingMode) -> String {
        mode.to_string()
    }
}

/// Which shard of how many a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSel {
    /// From 0.
    pub index: u32,
    pub count: u32,
}

/// Command-line changes to a suite, as `meta.toml` records them so a
/// resumed run applies them again (applied and checked in
/// `compare::overrides`), and as the report lists them ([`Overrides::describe`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Overrides {
    /// Multiplies the work of every run: hackbench loops, ping packet counts.
    pub scale: Option<f64>,
    pub boots: Option<u32>,
    pub iterations: Option<u32>,
    /// `--cpus`: the CPU counts the run is kept to. A workload of CPU
    /// counts of its own runs at those of them named here, and not at all
    /// when none is; one without runs at each count named here.
    pub cpus: Option<Vec<u32>>,
    /// `cpus` replaced the suite's CPU counts and every workload's own,
    /// every workload running at every count: what `cpus` meant in runs of
    /// formats before 4, which a resumed run of one keeps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cpus_replace_own: bool,
    /// Replaces every workload's parameter list.
    pub params: Option<Vec<u64>>,
    /// Sets every kernel compile's scope: a seed-scale suite compiles the
    /// whole kernel, which takes hours under TCG; `subset` makes it minutes.
    #[serde(default)]
    pub compile_scope: Option<super::CompileScope>,
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
    pub shard: Option<ShardSel>,
    /// `--patch`: the kernel source against the source with these patches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<std::path::PathBuf>,
    /// `--revs`: two revisions (`A,B`) or a series (`BASE..TIP`) of the
    /// kernel source, one kernel each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revs: Option<super::RevSelection>,
    /// `--precision PCT`: the half-width every point is run to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// `--budget`: the wall time of a run with a precision target, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<u64>,
    /// `--max-boots`: the boots of a run with a precision target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_boots: Option<u32>,
    /// An older run's overrides in the words it recorded (`key=value`),
    /// where today's wording of the settings above differs from them (runs
    /// from before the settings were kept record only the words): the run is
    /// shown as it recorded itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_words: Option<Vec<String>>,
    /// `--arch`: the guest architecture, in place of the suite's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<crate::base::arch::Arch>,
}

impl Overrides {
    /// The overrides as `key=value`, as the report and the plan list them.
    /// The shard is not among them: every shard of one sweep has the same
    /// overrides.
    pub fn describe(&self) -> Vec<String> {
        if let Some(words) = &self.recorded_words {
            return words.clone();
        }
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
            out.push(format!("compile-scope={}", scope.name()));
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
        if let Some(precision) = self.precision {
            out.push(format!("precision={precision}"));
        }
        if let Some(budget) = self.budget_s {
            out.push(format!(
                "budget={}",
                humantime::format_duration(std::time::Duration::from_secs(budget))
            ));
        }
        if let Some(max_boots) = self.max_boots {
            out.push(format!("max-boots={max_boots}"));
        }
        if let Some(arch) = self.arch {
            out.push(format!("arch={arch}"));
        }
        out
    }

    /// The changes to the suite alone, without the shard they ran: what two
    /// runs (or two shards of one sweep) must share to be compared.
    pub fn suite_changes(&self) -> Overrides {
        Overrides {
            shard: None,
            ..self.clone()
        }
    }
}

/// Why two runs cannot be combined into one (a diff, a merge) for their
/// guests, if they cannot: another architecture, or another CPU model,
/// runs other instructions, so nothing measured in one compares with the
/// other.
pub fn guest_mismatch(a: &RunMeta, b: &RunMeta) -> Option<String> {
    let guest = |m: &RunMeta| match &m.guest_cpu {
        Some(cpu) => format!("{} (-cpu {cpu})", m.arch),
        None => m.arch.to_string(),
    };
    (a.arch != b.arch || a.guest_cpu != b.guest_cpu).then(|| {
        format!(
            "the runs' guests differ: {} against {}; runs of different architectures or CPU \
             models measure other instructions and are not combined",
            guest(a),
            guest(b)
        )
    })
}

/// `meta.toml`: everything about a run except its samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// [`RUN_FORMAT`] of the version that wrote the run (absent, so 0, in
    /// runs written before the format was numbered).
    #[serde(default = "unnumbered")]
    pub format: RunFormat,
    pub suite: String,
    /// A diff of two runs (`markbench diff`): one variant of each run, as
    /// its two kernels; `suite` is the runs' suite (format 2 and before
    /// appended "(diff of two runs)" to it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub diff: bool,
    pub suite_path: String,
    pub suite_sha256: Digest,
    /// Command-line overrides of the suite, so `--resume` rebuilds the same
    /// plan (formats 0 and 1 also wrote them as words, `overrides`).
    #[serde(default, rename = "override_settings")]
    pub overrides: Overrides,
    pub description: String,
    pub git_revision: String,
    pub markbench_version: String,
    pub started_at: String,
    pub finished_at: String,
    pub wall_s: f64,
    pub complete: bool,
    pub host: HostInfo,
    /// A merged run's hosts, when its shards ran on more than one, by name;
    /// `host` is then its first shard's (format 2 and before wrote the
    /// names into `host.hostname`, joined, and noted other CPUs in
    /// `host.cpu_model`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<RunHost>,
    /// The accelerator every boot ran under (`kvm` or `tcg` in the file).
    pub accel: Accel,
    pub accel_reason: super::Recorded<super::AccelReason>,
    /// How guest time ran (formats 0 and 1 also wrote its sentence,
    /// `timing`; the first versions wrote only the sentence).
    #[serde(default, rename = "timing_decision")]
    pub timing: TimingDecision,
    pub seed: u64,
    /// Equivalence margin as a fraction (0.02 = ±2%).
    #[serde(default = "default_margin")]
    pub margin: f64,
    #[serde(default)]
    pub correction: crate::base::stats::Correction,
    pub boots_per_variant: u32,
    pub iterations: u32,
    pub warmup: u32,
    pub cpus: Vec<u32>,
    pub memory_mib: u32,
    /// Baseline first, candidate second.
    pub kernels: Vec<KernelMeta>,
    /// Run order: one record per unit booted, in the order it was planned
    /// (format 2; earlier formats' sentences are read into records).
    #[serde(deserialize_with = "super::upgrade::read_order")]
    pub order: Vec<UnitRecord>,
    pub boots: Vec<BootRecord>,
    /// Each workload as the suite gave it (after the command line's
    /// overrides); runs before format 5 wrote each as a person reads it,
    /// and the first ones as JSON lines ([`RunMeta::read`] reads those as
    /// data).
    pub workloads: Vec<super::Recorded<crate::guest::workloads::WorkloadSpec>>,
    /// The kernels are a patch series (`--revs BASE..TIP`): besides each
    /// against the baseline, each is compared with the one before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub series: bool,
    /// Doubts about the comparison itself (e.g. a diff of two runs on different hosts).
    /// (Runs before format 3 recorded them as sentences, read as
    /// [`super::Warning::Text`].)
    #[serde(default, deserialize_with = "super::upgrade::read_warnings")]
    pub warnings: Vec<super::Warning>,
    /// What the guest image held: its hash and every program and library
    /// in it with its package and version (absent in runs made before it
    /// was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_image: Option<super::ImageRecord>,
    /// For a shard's run (`run-shard`): which shard and what it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardMeta>,
    /// For a merged run (`merge`): the shards it was made of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardRecord>,
    /// A run with a precision target: the target, its bounds, the boots it
    /// added and why it stopped adding them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionRecord>,
    /// How many guests booted at once, and why (absent in runs from before
    /// boots ran side by side: one at a time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<Slots>,
    /// The QEMU boots of more than one vCPU ran with, when it was not the
    /// host's (`host.qemu_*`): markbench's own build, its source, patches
    /// and the turn it gave each vCPU. Absent when every boot used the
    /// host's QEMU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smp_qemu: Option<SmpQemuRecord>,
    /// The guest architecture every kernel was built for and booted as
    /// (absent: x86-64, as in every run before format 6).
    #[serde(default, skip_serializing_if = "crate::base::arch::Arch::is_default")]
    pub arch: crate::base::arch::Arch,
    /// QEMU's `-cpu` of every guest where the architecture fixes one model
    /// (arm64: the kernel patches itself by the CPU's features, so the
    /// model decides the instructions counted); absent for x86-64, whose
    /// guests run `-cpu max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_cpu: Option<String>,
    /// The published table the suite sets the run's figures beside (its
    /// `reference`); absent in runs of suites without one and in runs
    /// from before suites named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<super::ReferenceTable>,
}

/// markbench's own QEMU as a run used it for its SMP boots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmpQemuRecord {
    pub path: String,
    /// First line of its `--version`.
    pub version: String,
    pub sha256: Digest,
    /// The build's key (source, patches, options, compiler).
    pub build_key: Digest,
    /// The upstream tarball it was built from and its SHA-256.
    pub source: String,
    pub source_sha256: Digest,
    /// Each patch applied, in order (runs before format 5: `name
    /// short-hash`).
    pub patches: Vec<super::Recorded<super::PatchRecord>>,
    /// The longest round-robin turn of one vCPU under icount, in
    /// instructions; 0 when turns ran to the next timer deadline.
    pub turn: u32,
    /// What the which-vCPU trial saw, when the run needed it (the cycle
    /// model on more than one vCPU); runs before format 5: in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub which_vcpu: Option<super::Recorded<super::WhichVcpuTrial>>,
}

/// The boot loop's slots, decided once before the first boot (`stages::slots`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slots {
    /// Guests at once.
    pub jobs: usize,
    /// The host CPU each slot's guest is bound to, one per slot; empty when
    /// guests are left where the host's scheduler puts them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_cpus: Vec<usize>,
    /// Why this many.
    pub reason: super::Recorded<super::SlotsReason>,
    /// Said in the report: boots side by side under wall-clock timing
    /// (runs before format 5 wrote it in words).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::upgrade::read_warning"
    )]
    pub warning: Option<super::Warning>,
}

impl Slots {
    /// One guest at a time, for `reason`.
    pub fn one(reason: impl Into<super::Recorded<super::SlotsReason>>) -> Slots {
        Slots {
            jobs: 1,
            host_cpus: Vec::new(),
            reason: reason.into(),
            warning: None,
        }
    }

    /// The host CPU slot `slot` binds its guest to, if any.
    pub fn host_cpu(&self, slot: usize) -> Option<usize> {
        self.host_cpus.get(slot).copied()
    }
}

/// What a run with a precision target was asked and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PrecisionRecord {
    /// The half-width asked of every point, in percent.
    pub percent: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<u64>,
    /// What spent the budget.
    #[serde(default, skip_serializing_if = "BudgetScope::is_run")]
    pub budget_scope: BudgetScope,
    /// The cap on the run's boots, planned and added.
    pub max_boots: usize,
    /// Boots a side before a point's width may stop the run.
    pub min_boots: usize,
    /// Boots added after the planned ones.
    #[serde(default)]
    pub added_boots: usize,
    /// Why no more blocks were added; `None` while the run goes on (or if
    /// it was interrupted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<PrecisionStop>,
}

/// What a precision run's budget counts. Runs recorded before the budget
/// was the boots' counted the whole command from its start, builds
/// included; their reports keep saying so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetScope {
    /// The command's wall time from when the run was asked for: kernel
    /// builds and image preparation spent it too.
    #[default]
    Run,
    /// Wall time from the first boot on: only booting and measuring
    /// spend it.
    Boots,
}

impl BudgetScope {
    fn is_run(&self) -> bool {
        *self == BudgetScope::Run
    }

    /// How a report says what the budget counted.
    pub fn describe(self) -> &'static str {
        match self {
            BudgetScope::Run => "of wall time",
            BudgetScope::Boots => {
                "of wall time from the first boot (kernel builds and image preparation are not \
                 counted)"
            }
        }
    }
}

/// Why a run with a precision target stopped adding boots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrecisionStop {
    /// Every point is within the target.
    Resolved,
    /// The next block would have ended after the budget.
    Budget,
    /// The next block would have passed the cap on boots.
    MaxBoots,
    /// A boot the run added failed: more boots of a guest that fails would
    /// spend the budget without resolving its points.
    FailedBoots,
}

impl PrecisionStop {
    pub fn describe(self) -> &'static str {
        match self {
            PrecisionStop::Resolved => "every point within the target",
            PrecisionStop::Budget => "the budget: the next block would have ended after it",
            PrecisionStop::MaxBoots => "the cap on boots: the next block would have passed it",
            PrecisionStop::FailedBoots => {
                "a failed boot: a boot it added failed, and more of them would not resolve its points"
            }
        }
    }
}

/// A shard's run: which of how many, and its pieces of the suite.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardMeta {
    pub index: u32,
    pub count: u32,
    /// The pieces, as `shard::Piece::describe` words them.
    pub pieces: Vec<String>,
}

/// One shard of a merged run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    pub index: u32,
    pub host: String,
    /// The shard's run directory as given to merge.
    pub dir: String,
    pub pieces: Vec<String>,
    pub boots: usize,
    pub failed_boots: usize,
    pub wall_s: f64,
    pub accel: String,
    /// How the shard's guest time ran, and why (runs before format 5: the
    /// sentence its report gave it).
    pub timing: super::Recorded<TimingDecision>,
    /// Its mode alone (`icount shift=4`, `wall`; format 0 wrote none, read
    /// from `timing`).
    #[serde(default)]
    pub timing_mode: TimingMode,
    pub complete: bool,
}

impl RunMeta {
    /// The icount shift the run was timed with (`None`: wall time).
    pub fn icount_shift(&self) -> Option<u32> {
        self.timing.icount_shift
    }

    /// The name of every host the run's boots ran on.
    pub fn hostnames(&self) -> Vec<String> {
        if self.hosts.is_empty() {
            vec![self.host.hostname.clone()]
        } else {
            self.hosts.iter().map(|h| h.hostname.clone()).collect()
        }
    }

    /// The run's hosts as the report names them: one, or several joined.
    pub fn hostnames_words(&self) -> String {
        self.hostnames().join(", ")
    }

    /// The CPU models of the run's hosts: the first shard's host's, then
    /// each other one the run knows.
    pub fn cpu_models(&self) -> Vec<String> {
        let mut models = vec![self.host.cpu_model.clone()];
        for h in &self.hosts {
            if !h.cpu_model.is_empty() && !models.contains(&h.cpu_model) {
                models.push(h.cpu_model.clone());
            }
        }
        models
    }

    /// The run's CPU as the report words it ([`cpu_models_words`]).
    pub fn cpu_model_words(&self) -> String {
        cpu_models_words(&self.cpu_models())
    }

    /// The suite as the report names the run's: a diff of two runs says so.
    pub fn suite_title(&self) -> String {
        if self.diff {
            format!("{} (diff of two runs)", self.suite)
        } else {
            self.suite.clone()
        }
    }

    /// The largest guest of the run, in vCPUs.
    pub fn max_cpus(&self) -> u32 {
        self.cpus.iter().copied().max().unwrap_or(1)
    }

    /// Guest time counted executed instructions (`-icount`), so host load
    /// did not reach the figures.
    pub fn counts_instructions(&self) -> bool {
        self.icount_shift().is_some()
    }

    /// The timing mode and its setting alone, without the reason: what two
    /// runs must share to be compared or merged.
    pub fn timing_mode(&self) -> TimingMode {
        self.timing.mode()
    }

    /// Writes `meta.toml` atomically: a reader never sees half of it.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(META_FILE);
        let tmp = dir.join(format!("{META_FILE}.tmp"));
        std::fs::write(&tmp, toml::to_string(self)?)?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }
}

/// Why two runs' kernels of `variant` cannot be bisected between, or the
/// tree and the two commits (`nightly --bisect` and the history's change
/// points name them).
pub fn tree_commits(
    baseline: &RunMeta,
    tonight: &RunMeta,
    variant: &str,
) -> Result<(PathBuf, String, String), String> {
    let kernel = |meta: &RunMeta| -> Result<KernelMeta, String> {
        meta.kernels
            .iter()
            .find(|k| k.variant == variant)
            .cloned()
            .ok_or_else(|| format!("a run has no variant {variant}"))
    };
    let (a, b) = (kernel(baseline)?, kernel(tonight)?);
    let origin = |k: &KernelMeta| {
        let o = k.origin.clone().unwrap_or_default();
        match (&o.commit, o.patches.is_empty()) {
            (Some(c), true) => Ok((PathBuf::from(&o.source), c.clone())),
            (Some(_), false) => Err("a kernel carries patches on top of its commit".to_string()),
            (None, _) => Err(format!(
                "the kernel of {variant} records no git commit (give the variant a `rev` of a \
                 git tree)"
            )),
        }
    };
    let ((tree_a, good), (tree_b, bad)) = (origin(&a)?, origin(&b)?);
    if tree_a != tree_b {
        return Err(format!(
            "the kernels come from two trees ({} and {})",
            tree_a.display(),
            tree_b.display()
        ));
    }
    if good == bad {
        return Err("both kernels are the same commit".into());
    }
    Ok((tree_a, good, bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_recorded_before_fragment_sources_still_reads() {
        let old = r#"
variant = "markers-on"
kernel = "markers-on"
cmdline = ""
source = "tarball"
build_key = "k"
config_sha256 = "c"
compiler = "gcc"
bzimage = "/cache/bzImage"
[fragments]
"base.config" = "d1bc"
"#;
        let k: KernelMeta = toml::from_str(old).unwrap();
        assert_eq!(k.fragments["base.config"], "d1bc");
        assert!(k.fragment_sources.is_empty());
    }

    #[test]
    fn meta_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let boot = BootRecord {
            unit: 0,
            variant: "a".into(),
            cpus: 1,
            boot: 0,
            wall_s: 20.0,
            samples: 3,
            console_log: "logs/unit-000.log".into(),
            guest_kernel: "6.1".into(),
            guest_cpus: "0".into(),
            guest_version: String::new(),
            retryable: false,
            host_load_before: 0.0,
            host_load_after: 0.0,
            // `vm::boot_seed(u64::MAX, 3, 1)`: a 63-bit seed, as a boot draws one.
            guest_seed: Some(2_754_225_531_024_541_113),
            end: BootEnd::Completed,
            retried_after: Some(BootEnd::AgentError {
                message: "exited with status 3".into(),
            }),
            hello_s: Some(4.2),
            host_cpu: Some(1),
        };
        let meta = RunMeta {
            suite: "quick".into(),
            seed: 7,
            order: vec![UnitRecord {
                index: 0,
                variant: "markers on".into(),
                cpus: 2,
                boot: 0,
                shard: None,
            }],
            boots: vec![boot],
            ..Default::default()
        };
        meta.write(dir.path()).unwrap();
        assert_eq!(RunMeta::read(dir.path()).unwrap(), meta);
    }
}
