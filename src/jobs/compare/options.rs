//! What the user asked `compare` (and `nightly`, `run-shard`) for, typed and
//! free of the command-line parser: the suite, the changes to it and how to
//! run it.

use crate::record::Overrides;
use crate::stages::suite::{AccelChoice, TimingChoice};
use std::path::PathBuf;

/// The models `--model` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModelChoice {
    /// Caches and branch prediction: estimated cycles and miss counts.
    Cycles,
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The suite file; `None`: suites/quick.toml here, else the built-in copy.
    pub suite: Option<PathBuf>,
    /// The kernel source; `None`: the suite's, else Debian's linux-source.
    pub kernel_source: Option<PathBuf>,
    /// Changes to the suite's size and shape, and the shard to run.
    pub overrides: Overrides,
    pub accel: Option<AccelChoice>,
    pub timing: Option<TimingChoice>,
    pub icount_shift: Option<u32>,
    /// Profiled boots too (also when the suite says `profile = true`).
    pub profile: bool,
    /// Every boot under the cycle model (also when the suite names one).
    pub model: Option<ModelChoice>,
    /// The cycle model's calibrated profile to run with (`--model-profile`).
    pub model_profile: Option<PathBuf>,
    /// The QEMU binary; `None`: the suite's, else qemu-system-x86_64 on PATH.
    pub qemu: Option<PathBuf>,
    /// An interrupted run to continue.
    pub resume: Option<PathBuf>,
    /// Print the plan only.
    pub dry_run: bool,
    /// Guests booted at once (`--jobs N`); `None`: the suite's, else the
    /// default for the timing (`stages::slots`).
    pub jobs: Option<u32>,
    /// The longest turn of one vCPU of an SMP guest under icount (`--smp-turn`).
    pub smp_turn: Option<u32>,
    /// Run wall-time guests with more vCPUs than the host has cores.
    pub allow_oversubscribe: bool,
    /// Install what the host lacks without asking (`--yes`).
    pub yes: bool,
    /// Where new run directories go.
    pub reports: PathBuf,
    /// The run directory itself, instead of a new one under `reports`.
    pub out: Option<PathBuf>,
}

impl Options {
    /// Whether what the host lacks may be installed without asking.
    pub fn consent(&self) -> crate::base::prereq::Consent {
        match self.yes {
            true => crate::base::prereq::Consent::Given,
            false => crate::base::prereq::Consent::AskInTerminal,
        }
    }
}
