//! Why a run booted as it did (the accelerator, how guest time ran, how
//! many guests at once), as data: each reason names its case and keeps
//! its values; the report words them (`stages::report::words`).

use super::meta::{Accel, BootEnd};
use serde::{Deserialize, Serialize};

/// A value as a run records it: data, or the words a run of an older format
/// wrote in its place (which no data can be read from), kept so the run is
/// shown as it recorded itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Recorded<T> {
    Data(T),
    Legacy(String),
}

impl<T> Default for Recorded<T> {
    fn default() -> Recorded<T> {
        Recorded::Legacy(String::new())
    }
}

impl<T> From<&str> for Recorded<T> {
    fn from(words: &str) -> Recorded<T> {
        Recorded::Legacy(words.to_string())
    }
}

impl<T> From<String> for Recorded<T> {
    fn from(words: String) -> Recorded<T> {
        Recorded::Legacy(words)
    }
}

impl<T> Recorded<T> {
    /// Nothing recorded: no data and no words (a value older runs did not
    /// record reads so).
    pub fn is_unrecorded(&self) -> bool {
        matches!(self, Recorded::Legacy(words) if words.is_empty())
    }

    /// The data, unless the run recorded words.
    pub fn data(&self) -> Option<&T> {
        match self {
            Recorded::Data(data) => Some(data),
            Recorded::Legacy(_) => None,
        }
    }
}

/// Why the run's accelerator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AccelReason {
    /// The suite or the command line named it.
    Asked { accel: Accel },
    /// `auto`, and the host has no `/dev/kvm`: TCG.
    NoDevKvm,
    /// `auto`: a trial boot under KVM completed, in `wall_s` seconds.
    KvmTrialCompleted { wall_s: f64 },
    /// `auto`: `/dev/kvm` exists, but a trial boot under KVM ended so: TCG.
    KvmTrialFailed { end: BootEnd },
    /// An earlier run's verdict on this host and QEMU, kept in `path`.
    Remembered {
        verdict: Box<Recorded<AccelReason>>,
        path: String,
    },
    /// Guests of `arch`, another architecture than the host's: KVM cannot
    /// run them, so TCG, whatever the host has.
    OtherArch { arch: crate::base::arch::Arch },
}

/// Why guest time ran as it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TimingReason {
    /// The suite or the command line asked for wall time.
    AskedWall,
    /// The suite or the command line asked for icount; `smp_trial` is what
    /// the SMP trial boot saw, for a run of more than one vCPU.
    AskedIcount {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        smp_trial: Option<Recorded<SmpTrial>>,
    },
    /// `auto` under KVM, where the guest's clock is the host's.
    AutoKvm,
    /// `auto` under TCG, on wall time: the QEMU (its version and path)
    /// cannot run SMP guests under icount, as its trial boot showed.
    AutoSmpIcountFails {
        qemu_version: String,
        qemu_path: String,
        smp_trial: Recorded<SmpTrial>,
    },
    /// `auto` under TCG: instruction counting, on one vCPU.
    AutoIcount,
    /// `auto` under TCG: instruction counting with up to `max_cpus` vCPUs,
    /// and what the SMP trial boot saw (`None`: not tried).
    AutoIcountSmp {
        max_cpus: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        smp_trial: Option<Recorded<SmpTrial>>,
    },
}

/// What the trial boot of an SMP guest under icount saw: whether the QEMU
/// runs one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SmpTrial {
    /// The guest of `cpus` vCPUs reached the agent with `online` CPUs
    /// online, in `wall_s` seconds.
    Reached {
        cpus: u32,
        online: String,
        wall_s: f64,
    },
    /// The guest came up with other CPUs online than `expected`.
    OtherCpus {
        cpus: u32,
        online: String,
        expected: String,
    },
    /// The guest never reached the agent: how the boot ended, and its
    /// console log.
    NoAgent {
        cpus: u32,
        end: BootEnd,
        console_log: String,
    },
    /// An earlier trial's, kept in `path`.
    Remembered {
        trial: Box<Recorded<SmpTrial>>,
        path: String,
    },
}

/// What the plugin was told in the which-vCPU trial: the vCPU index at each
/// execution of the marker (`seen`), at each store after it (`stores`) and
/// the vCPU that ran both (`expected`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhichVcpuTrial {
    pub seen: Vec<u32>,
    pub expected: Vec<u32>,
    /// The vCPU index the plugin's memory callback was given at the store
    /// after each marker; absent in runs from before the trial checked
    /// memory callbacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<Vec<u32>>,
}

impl WhichVcpuTrial {
    /// Whether the plugin was told the running vCPU at every marker and,
    /// where the trial checked them, at every store.
    pub fn right(&self) -> bool {
        self.seen == self.expected && self.stores.as_ref().is_none_or(|s| *s == self.expected)
    }
}

/// Who asked for a number of guests at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobsAskedBy {
    /// `--jobs N`.
    CommandLine,
    /// The suite's `jobs = N`.
    Suite,
}

/// What the host's memory holds: `fit` guests of `guest_mib` each, with
/// `qemu_mib` of QEMU's own, in `available_mib` beside `headroom_mib` kept
/// for the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryFit {
    pub fit: usize,
    pub guest_mib: u32,
    pub qemu_mib: u64,
    pub available_mib: u64,
    pub headroom_mib: u64,
}

/// Why as many guests as were wanted under icount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SlotsWanted {
    /// Nobody asked: the host's cores, as a guest's samples do not depend
    /// on what runs beside it.
    HostCores { cores: usize },
    /// As many as asked.
    Asked { by: JobsAskedBy },
}

/// Why a run booted as many guests at once as it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SlotsReason {
    /// Wall-clock timing, nobody asking for more: one at a time, since
    /// guests beside each other disturb each other's time.
    WallClock,
    /// Wall-clock timing, `jobs` at once as asked.
    WallClockAsked { jobs: usize, by: JobsAskedBy },
    /// Instruction counting: `wanted` guests at once, or as many as the
    /// memory holds when that is fewer (`memory`).
    Icount {
        wanted: usize,
        why: SlotsWanted,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        memory: Option<MemoryFit>,
    },
}

impl JobsAskedBy {
    /// The setting that asked, as the suite or the command line names it.
    pub fn option(self) -> &'static str {
        match self {
            JobsAskedBy::CommandLine => "--jobs",
            JobsAskedBy::Suite => "the suite's jobs",
        }
    }
}
