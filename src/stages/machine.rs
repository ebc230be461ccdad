//! The machine every boot of a run is made with: the QEMU binary, the
//! accelerator and the timing mode, decided once before the first boot (by
//! trial boots where a setting is `auto`) or taken as recorded when a run
//! is resumed.

use crate::base::error::{Context, Result};
use crate::guest::images::initramfs;
use crate::record::RunMeta;
use crate::stages::run_images::Images;
use crate::stages::suite::Suite;
use crate::stages::vm::{Machine, Runner};

/// Decides what every boot of the run is made with: the accelerator (under
/// `auto` a KVM trial boot), then, for a suite with more than one vCPU under
/// TCG that may count instructions, whether this QEMU can run SMP guests
/// under icount (a trial boot, remembered per binary), and from both the
/// timing mode. The trials' console logs stay in the cache's `trials/`.
///
/// SMP guests under icount boot with markbench's own QEMU (built into the
/// cache the first time), unless `named_qemu`: a binary the suite or the
/// command line names is used for every boot.
pub fn decide(
    suite: &Suite,
    images: &Images,
    qemu: crate::stages::vm::qemu::QemuBinary,
    named_qemu: bool,
    runner: &mut dyn Runner,
) -> Result<Machine> {
    use crate::stages::vm::accel;
    let trials = crate::guest::images::Cache::here().trials();
    std::fs::create_dir_all(&trials).with_context(|| format!("creating {}", trials.display()))?;
    let initrd = trials.join(format!("trial-{}.initrd", std::process::id()));
    initramfs::write_boot_initrd(&images.base, &[], &initrd)?;
    let kernel = &images.kernels[0].bzimage;
    let decision = accel::decide_for(
        suite.arch,
        suite.accel,
        runner,
        &qemu,
        kernel,
        &initrd,
        &trials.join("accel-trial.log"),
    )?;
    let max_cpus = suite.cpus.iter().copied().max().unwrap_or(1);
    let may_count = decision.accel == crate::record::Accel::Tcg && smp_may_count(suite);
    let smp = match may_count && own_qemu_for(suite, named_qemu) {
        true => Some(own_qemu(suite.smp_turn)?),
        false => None,
    };
    let smp_icount = may_count.then(|| {
        let (binary, turn) = match &smp {
            Some(s) => (&s.qemu, Some(s.turn)),
            None => (&qemu, None),
        };
        accel::smp_icount_trial(
            runner,
            (binary, turn, suite.arch),
            kernel,
            &initrd,
            &trials.join("smp-icount-trial.log"),
        )
    });
    let _ = std::fs::remove_file(&initrd);
    let mut smp = smp;
    if suite.model.is_some() && max_cpus > 1 && may_count {
        let (binary, turn) = match &smp {
            Some(s) => (&s.qemu, Some(s.turn)),
            None => (&qemu, None),
        };
        let seen = check_which_vcpu(runner, (binary, turn), kernel, &images.base)?;
        if let Some(s) = smp.as_mut() {
            s.which_vcpu = Some(seen);
        }
    }
    let timing = accel::timing_for(
        suite.timing,
        suite.icount_shift,
        decision.accel,
        max_cpus,
        smp_icount.as_ref(),
        smp.as_ref().map_or(&qemu, |s| &s.qemu),
    )?;
    Ok(Machine {
        qemu,
        accel: decision,
        // Only instruction counting needs the own QEMU's turns.
        smp: smp.filter(|_| timing.is_icount()),
        timing,
    })
}

/// Whether a guest of the suite has more than one vCPU and may count
/// instructions (the suite does not ask for wall time, nor for KVM, under
/// which it cannot).
fn smp_may_count(suite: &Suite) -> bool {
    suite.cpus.iter().any(|&c| c > 1)
        && suite.timing != crate::stages::suite::TimingChoice::Wall
        && suite.accel != crate::stages::suite::AccelChoice::Kvm
}

/// Whether the run may boot markbench's own QEMU, planned before the KVM
/// trial decides it: for the outcome that needs more, TCG. A QEMU the suite
/// or the command line names is used for every boot instead.
pub fn may_need_own_qemu(suite: &Suite, named_qemu: bool) -> bool {
    smp_may_count(suite) && own_qemu_for(suite, named_qemu)
}

/// Whether SMP guests under icount boot with markbench's own QEMU: for
/// x86-64, unless a binary is named. markbench builds its own QEMU for
/// x86-64 alone (`qemu_build`), so arm64 SMP guests run on the host's
/// `qemu-system-aarch64` (8.1 or later runs them under icount, which the
/// SMP trial checks), with QEMU's own round-robin turns: a suite's
/// `smp_turn` does not reach them, and the run records no own QEMU.
fn own_qemu_for(suite: &Suite, named_qemu: bool) -> bool {
    !named_qemu && suite.arch == crate::base::arch::Arch::X86_64
}

/// markbench's own QEMU (built when the cache has none) with `turn`.
fn own_qemu(turn: u32) -> Result<crate::stages::vm::SmpQemu> {
    let built = crate::guest::images::qemu_build::ensure()?;
    let qemu = crate::stages::vm::qemu::QemuBinary::locate(Some(&built.binary))?;
    Ok(crate::stages::vm::SmpQemu {
        qemu,
        build: built.record,
        turn,
        which_vcpu: None,
    })
}

/// The cycle model on more than one vCPU keeps caches and predictors per
/// vCPU, so its QEMU must tell the plugin which vCPU runs each block: the
/// which-vCPU trial says (remembered per QEMU binary and plugin). A QEMU
/// that fails it is refused, naming the fix.
fn check_which_vcpu(
    runner: &dyn Runner,
    (qemu, turn): (&crate::stages::vm::qemu::QemuBinary, Option<u32>),
    kernel: &std::path::Path,
    base: &initramfs::BaseImage,
) -> Result<crate::record::Recorded<crate::record::WhichVcpuTrial>> {
    use crate::guest::images::{key_of, plugin, Cache};
    use crate::stages::vm::accel::{which_vcpu_trial, WhichVcpuVerdict};
    let plugin = plugin::ensure_plugin()?;
    let key = key_of(&[
        ("qemu", qemu.sha256.as_bytes()),
        ("plugin", plugin.key.as_bytes()),
    ]);
    let cache = Cache::here();
    let remembered = cache.which_vcpu_verdict(key.as_str());
    let verdict = match std::fs::read_to_string(&remembered)
        .ok()
        .and_then(|t| toml::from_str::<WhichVcpuVerdict>(&t).ok())
    {
        Some(v) => v,
        None => {
            let v = which_vcpu_trial(
                runner,
                (qemu, turn),
                &plugin.path,
                kernel,
                base,
                &cache.trials(),
            )?;
            if let Some(dir) = remembered.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(&remembered, toml::to_string(&v).unwrap_or_default());
            v
        }
    };
    if !verdict.right {
        return Err(crate::base::error::InputError::new(format!(
            "the cycle model on more than one vCPU needs a QEMU that tells its plugin which vCPU \
             runs each block, and {} ({}) does not: {}. markbench's own QEMU does (leave out \
             --qemu and the suite's `qemu`), or run the model on 1 vCPU (--cpus 1)",
            qemu.version,
            qemu.path.display(),
            verdict.detail
        ))
        .into());
    }
    Ok(verdict.detail)
}

/// The machine a resumed run was started with, from its metadata: the same
/// accelerator and timing, whatever a trial would say now.
/// Its SMP boots go on with markbench's own QEMU as it is now (rebuilt if
/// the cache lost it), with the recorded turn.
pub fn recorded(meta: &RunMeta, qemu: crate::stages::vm::qemu::QemuBinary) -> Result<Machine> {
    let timing = meta.timing.clone();
    let smp = match &meta.smp_qemu {
        Some(record) => {
            let smp = own_qemu(record.turn)?;
            if record.build_key != *smp.build.key.as_str() {
                crate::base::message::warning(format_args!(
                    "the run's SMP boots started with markbench's QEMU build {}; they continue \
                     with build {}",
                    record.build_key.short(),
                    smp.build.key.short()
                ));
            }
            Some(smp)
        }
        None => None,
    };
    Ok(Machine {
        smp,
        qemu,
        accel: crate::stages::vm::accel::AccelDecision {
            accel: meta.accel,
            reason: meta.accel_reason.clone(),
        },
        timing,
    })
}
