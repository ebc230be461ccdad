//! Choosing the accelerator. `auto` tries KVM with a short trial boot and
//! falls back to TCG when KVM is missing or broken; `/dev/kvm` existing proves
//! nothing (under nested virtualization it exists and guests die with
//! "KVM internal error"). The verdict is remembered per host and QEMU
//! version, and the report says which accelerator ran and why.

use super::{Accel, BootRequest, Runner};
use crate::images::{cache_dir, key_of, tool_version};
use crate::protocol::Message;
use crate::suite::AccelChoice;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The accelerator chosen for a run and the reason, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccelDecision {
    pub accel: Accel,
    pub reason: String,
}

/// The timing mode a run uses, given the accelerator and the largest vCPU
/// count: `None` for wall time, `Some(shift)` for instruction counting.
/// icount exists only under TCG, and with QEMU 7.2 a guest hangs bringing up
/// its second CPU under icount (seen with every shift, sleep and clock
/// setting we tried), so `auto` uses it for 1-vCPU suites only and an
/// explicit `icount` with more vCPUs is refused.
pub fn timing_for(
    choice: crate::suite::TimingChoice,
    shift: u32,
    accel: Accel,
    max_cpus: u32,
) -> Result<Option<u32>, crate::error::InputError> {
    use crate::suite::TimingChoice::*;
    match (choice, accel) {
        (Wall, _) | (Auto, Accel::Kvm) => Ok(None),
        (Auto, Accel::Tcg) => Ok((max_cpus == 1).then_some(shift)),
        (Icount, Accel::Tcg) if max_cpus == 1 => Ok(Some(shift)),
        (Icount, Accel::Tcg) => Err(crate::error::InputError::new(format!(
            "timing = \"icount\" works with 1 vCPU only: SMP guests hang bringing up their \
             second CPU under -icount; this suite asks for {max_cpus} (use --cpus 1 or --timing wall)"
        ))),
        (Icount, Accel::Kvm) => Err(crate::error::InputError::new(
            "timing = \"icount\" needs TCG; under KVM guest time is host time (use --accel tcg or --timing wall)",
        )),
    }
}

/// One line for the report on what a timing mode measures.
pub fn describe_timing(icount_shift: Option<u32>) -> String {
    match icount_shift {
        None => "wall: the guest's CLOCK_MONOTONIC runs on host time".into(),
        Some(shift) => format!(
            "icount (shift={shift}, sleep=off, RTC from {} on guest time, a -seed per boot): \
             guest time counts executed instructions (2^{shift} ns each), so timings measure \
             code-path length and do not move with host load; each boot repeats exactly with \
             its seed (in the Boots records of meta.toml); they cannot show cache, memory or \
             timing effects",
            super::qemu::ICOUNT_RTC_BASE
        ),
    }
}

/// Identifies the host for the remembered verdict: kernel, CPU and QEMU.
fn host_key() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpu = crate::samples::host_cpu_model();
    let qemu = tool_version(super::qemu::QEMU);
    key_of(&[
        ("release", release.trim().as_bytes()),
        ("cpu", cpu.as_bytes()),
        ("qemu", qemu.as_bytes()),
    ])[..16]
        .to_string()
}

fn verdict_path() -> PathBuf {
    cache_dir()
        .join("accel")
        .join(format!("{}.toml", host_key()))
}

/// Decides the accelerator. `trial` boots the given kernel and initrd (an
/// empty job) under KVM; the trial's console log goes to `trial_log`.
pub fn decide(
    choice: AccelChoice,
    runner: &mut dyn Runner,
    kernel: &Path,
    initrd: &Path,
    trial_log: &Path,
) -> AccelDecision {
    match choice {
        AccelChoice::Tcg => {
            return AccelDecision {
                accel: Accel::Tcg,
                reason: "the suite or command line asked for TCG".into(),
            }
        }
        AccelChoice::Kvm => {
            return AccelDecision {
                accel: Accel::Kvm,
                reason: "the suite or command line asked for KVM (not checked)".into(),
            }
        }
        AccelChoice::Auto => {}
    }
    if !Path::new("/dev/kvm").exists() {
        return AccelDecision {
            accel: Accel::Tcg,
            reason: "auto: /dev/kvm does not exist, so software emulation (TCG)".into(),
        };
    }
    let path = verdict_path();
    if let Some(d) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| toml::from_str::<AccelDecision>(&t).ok())
    {
        return AccelDecision {
            accel: d.accel,
            reason: format!("{} (remembered in {})", d.reason, path.display()),
        };
    }
    let request = BootRequest {
        kernel: kernel.to_path_buf(),
        initrd: initrd.to_path_buf(),
        extra_cmdline: String::new(),
        cpus: 1,
        memory_mib: 256,
        accel: Accel::Kvm,
        icount_shift: None,
        guest_seed: None,
        deadline: Duration::from_secs(30),
        console_log: trial_log.to_path_buf(),
    };
    let mut hello = false;
    let outcome = runner.boot(&request, &mut |m| {
        hello |= matches!(m, Message::Hello { .. })
    });
    let decision = if outcome.end.is_ok() && hello {
        AccelDecision {
            accel: Accel::Kvm,
            reason: format!(
                "auto: a KVM trial boot completed in {:.1} s",
                outcome.wall.as_secs_f64()
            ),
        }
    } else {
        AccelDecision {
            accel: Accel::Tcg,
            reason: format!(
                "auto: /dev/kvm exists but a KVM trial boot failed ({}), so software emulation (TCG)",
                outcome.end.describe()
            ),
        }
    };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(&path, toml::to_string(&decision).unwrap_or_default());
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::TimingChoice;

    #[test]
    fn auto_timing_counts_instructions_only_for_one_vcpu_under_tcg() {
        assert_eq!(
            timing_for(TimingChoice::Auto, 4, Accel::Tcg, 1).unwrap(),
            Some(4)
        );
        assert_eq!(
            timing_for(TimingChoice::Auto, 4, Accel::Tcg, 2).unwrap(),
            None
        );
        assert_eq!(
            timing_for(TimingChoice::Auto, 4, Accel::Kvm, 1).unwrap(),
            None
        );
        assert_eq!(
            timing_for(TimingChoice::Wall, 4, Accel::Tcg, 1).unwrap(),
            None
        );
        assert!(timing_for(TimingChoice::Icount, 4, Accel::Tcg, 2).is_err());
        assert!(timing_for(TimingChoice::Icount, 4, Accel::Kvm, 1).is_err());
    }
}
