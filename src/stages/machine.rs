//! The machine every boot of a run is made with: the QEMU binary, the
//! accelerator and the timing mode, decided once before the first boot (by
//! trial boots where a setting is `auto`) or taken as recorded when a run
//! is resumed.

use crate::guest::images::initramfs;
use crate::record::RunMeta;
use crate::stages::run_images::Images;
use crate::stages::suite::Suite;
use crate::stages::vm::{Machine, Runner};
use anyhow::{Context, Result};

/// Decides what every boot of the run is made with: the accelerator (under
/// `auto` a KVM trial boot), then, for a suite with more than one vCPU under
/// TCG that may count instructions, whether this QEMU can run SMP guests
/// under icount (a trial boot, remembered per binary), and from both the
/// timing mode. The trials' console logs stay in the cache's `trials/`.
pub fn decide(
    suite: &Suite,
    images: &Images,
    qemu: crate::stages::vm::qemu::QemuBinary,
    runner: &mut dyn Runner,
) -> Result<Machine> {
    use crate::stages::vm::accel;
    let trials = crate::guest::images::Cache::here().trials();
    std::fs::create_dir_all(&trials).with_context(|| format!("creating {}", trials.display()))?;
    let initrd = trials.join(format!("trial-{}.initrd", std::process::id()));
    initramfs::write_boot_initrd(&images.base, &[], &initrd)?;
    let kernel = &images.kernels[0].bzimage;
    let decision = accel::decide(
        suite.accel,
        runner,
        &qemu,
        kernel,
        &initrd,
        &trials.join("accel-trial.log"),
    );
    let max_cpus = suite.cpus.iter().copied().max().unwrap_or(1);
    let smp_icount = (decision.accel == crate::record::Accel::Tcg
        && max_cpus > 1
        && suite.timing != crate::stages::suite::TimingChoice::Wall)
        .then(|| {
            accel::smp_icount_trial(
                runner,
                &qemu,
                kernel,
                &initrd,
                &trials.join("smp-icount-trial.log"),
            )
        });
    let _ = std::fs::remove_file(&initrd);
    let timing = accel::timing_for(
        suite.timing,
        suite.icount_shift,
        decision.accel,
        max_cpus,
        smp_icount.as_ref(),
        &qemu,
    )?;
    Ok(Machine {
        qemu,
        accel: decision,
        timing,
    })
}

/// The machine a resumed run was started with, from its metadata: the same
/// accelerator and timing, whatever a trial would say now.
pub fn recorded(meta: &RunMeta, qemu: crate::stages::vm::qemu::QemuBinary) -> Machine {
    let timing = meta.timing.clone();
    Machine {
        qemu,
        accel: crate::stages::vm::accel::AccelDecision {
            accel: meta.accel,
            reason: meta.accel_reason.clone(),
        },
        timing,
    }
}
