//! Choosing the accelerator. `auto` tries KVM with a short trial boot and
//! falls back to TCG when KVM is missing or broken; `/dev/kvm` existing proves
//! nothing (under nested virtualization it exists and guests die with
//! "KVM internal error"). The verdict is remembered per host and QEMU
//! version, and the report says which accelerator ran and why.

use super::qemu::QemuBinary;
use super::{BootEnd, BootRequest, Runner};
use crate::base::protocol::Message;
use crate::guest::images::{key_of, Cache};
/// The decision's recorded form belongs to the run directory (`record`).
pub use crate::record::TimingDecision;
use crate::record::{Accel, AccelReason, Recorded, SmpTrial, TimingReason, WhichVcpuTrial};
use crate::stages::suite::AccelChoice;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The accelerator chosen for a run and the reason, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccelDecision {
    pub accel: Accel,
    /// In words when an older markbench remembered the verdict.
    pub reason: Recorded<AccelReason>,
}

/// Whether a QEMU binary runs an SMP guest under icount, found by a trial
/// boot. QEMU before 8.1 hangs the guest bringing up its second CPU (its
/// round-robin vCPU budget under icount was unfair until "accel/tcg/
/// tcg-accel-ops-rr: ensure fairness with icount"), but a version number
/// says nothing of a distribution's backports or a build of one's own: the
/// trial does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmpIcountVerdict {
    pub works: bool,
    /// What the trial saw, for the report (in words, when an older
    /// markbench remembered the verdict).
    pub detail: Recorded<SmpTrial>,
}

/// vCPUs of the trial boot: the smallest SMP guest, which is where QEMU 7.2 hangs.
const TRIAL_CPUS: u32 = 2;
/// A 2-vCPU icount guest reaches the agent in a few seconds of host time;
/// one that hangs never does.
const TRIAL_DEADLINE: Duration = Duration::from_secs(60);

fn smp_verdict_path(qemu: &QemuBinary) -> PathBuf {
    let key = key_of(&[
        ("path", qemu.path.to_string_lossy().as_bytes()),
        ("sha256", qemu.sha256.as_bytes()),
    ]);
    Cache::here().qemu_verdict(key.as_str())
}

/// Boots `kernel` with an empty job on [`TRIAL_CPUS`] vCPUs under icount and
/// says whether the agent came up seeing all of them. The verdict is
/// remembered per QEMU binary (path and content hash) in the cache.
pub fn smp_icount_trial(
    runner: &mut dyn Runner,
    (qemu, turn, arch): (&QemuBinary, Option<u32>, crate::base::arch::Arch),
    kernel: &Path,
    initrd: &Path,
    trial_log: &Path,
) -> SmpIcountVerdict {
    let path = smp_verdict_path(qemu);
    if let Some(v) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| toml::from_str::<SmpIcountVerdict>(&t).ok())
    {
        return SmpIcountVerdict {
            works: v.works,
            detail: Recorded::Data(SmpTrial::Remembered {
                trial: Box::new(v.detail),
                path: path.display().to_string(),
            }),
        };
    }
    let verdict = run_smp_icount_trial(runner, (qemu, turn, arch), kernel, initrd, trial_log);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(&path, toml::to_string(&verdict).unwrap_or_default());
    verdict
}

fn run_smp_icount_trial(
    runner: &mut dyn Runner,
    (qemu, turn, arch): (&QemuBinary, Option<u32>, crate::base::arch::Arch),
    kernel: &Path,
    initrd: &Path,
    trial_log: &Path,
) -> SmpIcountVerdict {
    let request = BootRequest {
        kernel: kernel.to_path_buf(),
        initrd: initrd.to_path_buf(),
        extra_cmdline: String::new(),
        cpus: TRIAL_CPUS,
        memory_mib: 256,
        accel: Accel::Tcg,
        icount_shift: Some(4),
        guest_seed: Some(1),
        deadline: TRIAL_DEADLINE,
        console_log: trial_log.to_path_buf(),
        plugin: None,
        host_cpu: None,
        qemu: Some(qemu.path.clone()),
        rr_turn: turn,
        arch,
    };
    let mut online = None;
    let outcome = runner.boot(&request, &mut |m| {
        if let Message::Hello { online_cpus, .. } = m {
            online = Some(online_cpus);
        }
    });
    let expected = format!("0-{}", TRIAL_CPUS - 1);
    match (&outcome.end, online) {
        (BootEnd::Completed, Some(cpus)) if cpus == expected => SmpIcountVerdict {
            works: true,
            detail: Recorded::Data(SmpTrial::Reached {
                cpus: TRIAL_CPUS,
                online: cpus,
                wall_s: outcome.wall.as_secs_f64(),
            }),
        },
        (_, Some(cpus)) if cpus != expected => SmpIcountVerdict {
            works: false,
            detail: Recorded::Data(SmpTrial::OtherCpus {
                cpus: TRIAL_CPUS,
                online: cpus,
                expected,
            }),
        },
        (end, _) => SmpIcountVerdict {
            works: false,
            detail: Recorded::Data(SmpTrial::NoAgent {
                cpus: TRIAL_CPUS,
                end: end.clone(),
                console_log: trial_log.display().to_string(),
            }),
        },
    }
}

/// Whether the profile plugin is told the vCPU that runs a block, found by
/// a trial boot: a 2-vCPU icount guest whose agent runs one marker and a
/// store right after it pinned to each CPU in turn, [`WHICH_VCPU_ROUNDS`]
/// times, while the plugin (`check=vcpu`) writes down the vCPU index each
/// execution of the marker and each store's memory callback was given
/// (the model's caches are fed by memory callbacks). Stock QEMU 10.0
/// compiles the index of the vCPU that translated the marker's block into
/// it, so every execution names the same vCPU; markbench's own QEMU names
/// the one running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhichVcpuVerdict {
    pub right: bool,
    /// What the trial saw (in words, when an older markbench remembered
    /// the verdict).
    pub detail: Recorded<WhichVcpuTrial>,
}

/// Rounds of the which-vCPU trial: each CPU runs the marker this often.
pub const WHICH_VCPU_ROUNDS: u32 = 4;

/// The vCPU indexes a right plugin sees in the which-vCPU trial of `cpus`
/// vCPUs: the CPUs in order, round after round.
pub fn which_vcpu_expected(cpus: u32) -> Vec<u32> {
    (0..WHICH_VCPU_ROUNDS).flat_map(|_| 0..cpus).collect()
}

/// What the plugin wrote under `check=vcpu`: the vCPU index of each
/// marker's callback and of each store's memory callback, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WhichVcpuSeen {
    pub marks: Vec<u32>,
    pub stores: Vec<u32>,
}

/// Reads the file the plugin writes under `check=vcpu` (`mark N` and
/// `store N` lines after the header).
pub fn read_which_vcpu(text: &str) -> Result<WhichVcpuSeen, String> {
    let mut lines = text.lines();
    match lines.next() {
        Some("# markbench-which-vcpu 2") => {}
        other => return Err(format!("not a which-vCPU file (first line {other:?})")),
    }
    let mut seen = WhichVcpuSeen::default();
    for (i, l) in lines.enumerate() {
        let bad = || format!("line {}: {l:?} is no callback and vCPU index", i + 2);
        let (kind, index) = l.trim().split_once(' ').ok_or_else(bad)?;
        let index: u32 = index.parse().map_err(|_| bad())?;
        match kind {
            "mark" => seen.marks.push(index),
            "store" => seen.stores.push(index),
            _ => return Err(bad()),
        }
    }
    Ok(seen)
}

/// The verdict from what the plugin saw against what it should have: the
/// running vCPU at every marker and at every store after one.
pub fn which_vcpu_verdict(seen: &WhichVcpuSeen, expected: &[u32]) -> WhichVcpuVerdict {
    let detail = WhichVcpuTrial {
        seen: seen.marks.clone(),
        expected: expected.to_vec(),
        stores: Some(seen.stores.clone()),
    };
    WhichVcpuVerdict {
        right: detail.right(),
        detail: Recorded::Data(detail),
    }
}

/// Boots the which-vCPU trial with `qemu` (and its turn) and `plugin`;
/// `dir` keeps the console log, the initrd and the plugin's file.
pub fn which_vcpu_trial(
    runner: &dyn Runner,
    (qemu, turn): (&QemuBinary, Option<u32>),
    plugin: &Path,
    kernel: &Path,
    base: &crate::guest::images::initramfs::BaseImage,
    dir: &Path,
) -> crate::base::error::Result<WhichVcpuVerdict> {
    use crate::base::error::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let initrd = dir.join(format!("which-vcpu-{}.initrd", std::process::id()));
    crate::guest::images::initramfs::write_boot_initrd(
        base,
        &[crate::base::protocol::Directive::WhichVcpu {
            rounds: WHICH_VCPU_ROUNDS,
        }],
        &initrd,
    )?;
    let output = dir.join("which-vcpu.txt");
    let _ = std::fs::remove_file(&output);
    let request = BootRequest {
        kernel: kernel.to_path_buf(),
        initrd: initrd.clone(),
        extra_cmdline: String::new(),
        cpus: TRIAL_CPUS,
        memory_mib: 256,
        accel: Accel::Tcg,
        icount_shift: Some(4),
        guest_seed: Some(1),
        deadline: TRIAL_DEADLINE,
        console_log: dir.join("which-vcpu-trial.log"),
        plugin: Some(super::PluginLoad {
            library: plugin.to_path_buf(),
            output: output.clone(),
            args: vec!["check=vcpu".into()],
        }),
        host_cpu: None,
        qemu: Some(qemu.path.clone()),
        rr_turn: turn,
        // The trial serves the cycle model, which runs on x86-64 guests alone.
        arch: crate::base::arch::Arch::X86_64,
    };
    let mut agent_error = None;
    let outcome = runner.boot(&request, &mut |m| {
        if let Message::Error { message } = m {
            agent_error = Some(message);
        }
    });
    let _ = std::fs::remove_file(&initrd);
    if let Some(message) = agent_error {
        crate::base::error::bail!("the which-vCPU trial's agent failed: {message}");
    }
    if !outcome.end.is_ok() {
        crate::base::error::bail!(
            "the which-vCPU trial boot with {} did not complete ({}; console in {})",
            qemu.path.display(),
            outcome.end.describe(),
            request.console_log.display()
        );
    }
    let text = std::fs::read_to_string(&output)
        .with_context(|| format!("reading the plugin's {}", output.display()))?;
    let seen = read_which_vcpu(&text).map_err(|e| anyhow::anyhow!("{}: {e}", output.display()))?;
    Ok(which_vcpu_verdict(&seen, &which_vcpu_expected(TRIAL_CPUS)))
}

/// The timing mode of a run, given the accelerator, the largest vCPU count
/// and, for an SMP suite under TCG, the trial's verdict on the QEMU binary
/// (`None` when no trial was needed). `auto` counts instructions under TCG
/// whenever the QEMU can; an explicit `icount` it cannot give is refused,
/// naming the fix.
pub fn timing_for(
    choice: crate::stages::suite::TimingChoice,
    shift: u32,
    accel: Accel,
    max_cpus: u32,
    smp_icount: Option<&SmpIcountVerdict>,
    qemu: &QemuBinary,
) -> Result<TimingDecision, crate::base::error::InputError> {
    use crate::stages::suite::TimingChoice::*;
    let wall = |reason| TimingDecision::wall(Recorded::Data(reason));
    let icount = |reason| TimingDecision::icount(shift, Recorded::Data(reason));
    let smp_fails = match smp_icount {
        Some(v) if max_cpus > 1 && !v.works => Some(v),
        _ => None,
    };
    let cannot = |v: &SmpIcountVerdict| {
        format!(
            "this QEMU ({}, {}) cannot run SMP guests under icount: {}. A QEMU of 8.1 or later \
             can; {}",
            qemu.version,
            qemu.path.display(),
            v.detail,
            crate::base::prereq::smp_icount_qemu_hint()
        )
    };
    match (choice, accel) {
        (Wall, _) => Ok(wall(TimingReason::AskedWall)),
        (Auto, Accel::Kvm) => Ok(wall(TimingReason::AutoKvm)),
        (Icount, Accel::Kvm) => Err(crate::base::error::InputError::new(
            "timing = \"icount\" needs TCG; under KVM guest time is host time (use --accel tcg or --timing wall)",
        )),
        (Auto, Accel::Tcg) => Ok(match smp_fails {
            Some(v) => wall(TimingReason::AutoSmpIcountFails {
                qemu_version: qemu.version.clone(),
                qemu_path: qemu.path.display().to_string(),
                smp_trial: v.detail.clone(),
            }),
            None if max_cpus > 1 => icount(TimingReason::AutoIcountSmp {
                max_cpus,
                smp_trial: smp_icount.map(|v| v.detail.clone()),
            }),
            None => icount(TimingReason::AutoIcount),
        }),
        (Icount, Accel::Tcg) => match smp_fails {
            Some(v) => Err(crate::base::error::InputError::new(format!(
                "timing = \"icount\" with {max_cpus} vCPUs: {} (or use --cpus 1, or --timing wall)",
                cannot(v)
            ))),
            None => Ok(icount(TimingReason::AskedIcount {
                smp_trial: match smp_icount {
                    Some(v) if max_cpus > 1 => Some(v.detail.clone()),
                    _ => None,
                },
            })),
        },
    }
}

/// Identifies the host for the remembered verdict: kernel, CPU and QEMU.
fn host_key(qemu: &QemuBinary) -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpu = crate::base::host::cpu_model();
    let qemu = &qemu.sha256;
    key_of(&[
        ("release", release.trim().as_bytes()),
        ("cpu", cpu.as_bytes()),
        ("qemu", qemu.as_bytes()),
    ])
    .short()
    .to_string()
}

fn verdict_path(qemu: &QemuBinary) -> PathBuf {
    Cache::here().accel_verdict(&host_key(qemu))
}

/// Decides the accelerator of guests of `arch`: for the host's own
/// architecture as [`decide`] does; for another, TCG, since KVM runs only
/// guests of the host's architecture (an explicit `kvm` is refused).
pub fn decide_for(
    arch: crate::base::arch::Arch,
    choice: AccelChoice,
    runner: &mut dyn Runner,
    qemu: &QemuBinary,
    kernel: &Path,
    initrd: &Path,
    trial_log: &Path,
) -> Result<AccelDecision, crate::base::error::InputError> {
    if arch.kvm_possible() {
        return Ok(decide(choice, runner, qemu, kernel, initrd, trial_log));
    }
    match choice {
        AccelChoice::Kvm => Err(crate::base::error::InputError::new(format!(
            "accel = \"kvm\" cannot run {arch} guests: KVM runs only the host's architecture \
             (x86-64); use --accel tcg or auto"
        ))),
        AccelChoice::Tcg => Ok(AccelDecision {
            accel: Accel::Tcg,
            reason: Recorded::Data(AccelReason::Asked { accel: Accel::Tcg }),
        }),
        AccelChoice::Auto => Ok(AccelDecision {
            accel: Accel::Tcg,
            reason: Recorded::Data(AccelReason::OtherArch { arch }),
        }),
    }
}

/// Decides the accelerator. `trial` boots the given kernel and initrd (an
/// empty job) under KVM; the trial's console log goes to `trial_log`.
pub fn decide(
    choice: AccelChoice,
    runner: &mut dyn Runner,
    qemu: &QemuBinary,
    kernel: &Path,
    initrd: &Path,
    trial_log: &Path,
) -> AccelDecision {
    match choice {
        AccelChoice::Tcg => {
            return AccelDecision {
                accel: Accel::Tcg,
                reason: Recorded::Data(AccelReason::Asked { accel: Accel::Tcg }),
            }
        }
        AccelChoice::Kvm => {
            return AccelDecision {
                accel: Accel::Kvm,
                reason: Recorded::Data(AccelReason::Asked { accel: Accel::Kvm }),
            }
        }
        AccelChoice::Auto => {}
    }
    if !Path::new("/dev/kvm").exists() {
        return AccelDecision {
            accel: Accel::Tcg,
            reason: Recorded::Data(AccelReason::NoDevKvm),
        };
    }
    let path = verdict_path(qemu);
    if let Some(d) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| toml::from_str::<AccelDecision>(&t).ok())
    {
        return AccelDecision {
            accel: d.accel,
            reason: Recorded::Data(AccelReason::Remembered {
                verdict: Box::new(d.reason),
                path: path.display().to_string(),
            }),
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
        plugin: None,
        host_cpu: None,
        qemu: None,
        rr_turn: None,
        arch: crate::base::arch::Arch::X86_64,
    };
    let mut hello = false;
    let outcome = runner.boot(&request, &mut |m| {
        hello |= matches!(m, Message::Hello { .. })
    });
    let decision = if outcome.end.is_ok() && hello {
        AccelDecision {
            accel: Accel::Kvm,
            reason: Recorded::Data(AccelReason::KvmTrialCompleted {
                wall_s: outcome.wall.as_secs_f64(),
            }),
        }
    } else {
        AccelDecision {
            accel: Accel::Tcg,
            reason: Recorded::Data(AccelReason::KvmTrialFailed {
                end: outcome.end.clone(),
            }),
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
    use crate::stages::suite::TimingChoice;
    use crate::stages::vm::fake::FakeRunner;

    fn qemu() -> QemuBinary {
        QemuBinary {
            path: "/usr/bin/qemu-system-x86_64".into(),
            version: "QEMU emulator version 7.2.0".into(),
            sha256: "ab".into(),
        }
    }

    fn verdict(works: bool) -> SmpIcountVerdict {
        SmpIcountVerdict {
            works,
            detail: "trial".into(),
        }
    }

    fn shift(
        choice: TimingChoice,
        accel: Accel,
        cpus: u32,
        smp: Option<&SmpIcountVerdict>,
    ) -> Option<u32> {
        timing_for(choice, 4, accel, cpus, smp, &qemu())
            .unwrap()
            .icount_shift
    }

    #[test]
    fn auto_timing_counts_instructions_under_tcg_whenever_the_qemu_can() {
        use Accel::*;
        use TimingChoice::*;
        assert_eq!(shift(Auto, Tcg, 1, None), Some(4));
        assert_eq!(shift(Auto, Tcg, 8, Some(&verdict(true))), Some(4));
        assert_eq!(shift(Auto, Tcg, 2, Some(&verdict(false))), None);
        // One vCPU needs no SMP: a failed trial does not matter there.
        assert_eq!(shift(Auto, Tcg, 1, Some(&verdict(false))), Some(4));
        assert_eq!(shift(Auto, Kvm, 1, None), None);
        assert_eq!(shift(Wall, Tcg, 1, None), None);
        assert_eq!(shift(Icount, Tcg, 4, Some(&verdict(true))), Some(4));
    }

    #[test]
    fn wall_time_after_a_failed_trial_says_why_and_how_to_get_a_qemu_that_can() {
        let t = timing_for(
            TimingChoice::Auto,
            4,
            Accel::Tcg,
            2,
            Some(&verdict(false)),
            &qemu(),
        )
        .unwrap();
        let reason = t.reason.to_string();
        assert!(
            reason.contains("cannot run SMP guests under icount"),
            "{reason}"
        );
        assert!(reason.contains("7.2.0"), "{reason}");
        assert!(t.describe(2).starts_with("wall"));
    }

    #[test]
    fn explicit_icount_on_a_qemu_that_fails_the_trial_is_an_input_error_naming_the_fix() {
        let err = timing_for(
            TimingChoice::Icount,
            4,
            Accel::Tcg,
            2,
            Some(&verdict(false)),
            &qemu(),
        )
        .unwrap_err();
        assert!(err.message.contains("8.1 or later"), "{err}");
        assert!(err.message.contains("--timing wall"), "{err}");
        assert!(timing_for(TimingChoice::Icount, 4, Accel::Kvm, 1, None, &qemu()).is_err());
    }

    /// The plugin's file of a trial that saw `marks` and `stores`, each
    /// store after its marker.
    fn which_vcpu_file(marks: &[u32], stores: &[u32]) -> String {
        let mut text = String::from("# markbench-which-vcpu 2\n");
        for i in 0..marks.len().max(stores.len()) {
            if let Some(m) = marks.get(i) {
                text.push_str(&format!("mark {m}\n"));
            }
            if let Some(s) = stores.get(i) {
                text.push_str(&format!("store {s}\n"));
            }
        }
        text
    }

    #[test]
    fn the_which_vcpu_file_reads_and_a_constant_index_is_the_wrong_verdict() {
        let expected = which_vcpu_expected(2);
        assert_eq!(expected, vec![0, 1, 0, 1, 0, 1, 0, 1]);
        let right = read_which_vcpu(&which_vcpu_file(&expected, &expected)).unwrap();
        assert_eq!((&right.marks, &right.stores), (&expected, &expected));
        let verdict = which_vcpu_verdict(&right, &expected);
        assert!(verdict.right);
        assert_eq!(
            verdict.detail.to_string(),
            "the plugin was told the running vCPU at all 8 executions of the marker \
             (0 1 0 1 0 1 0 1) and at the store after each"
        );
        // What stock QEMU gives: the translating vCPU, every time.
        let stock = vec![0; 8];
        let v = which_vcpu_verdict(
            &read_which_vcpu(&which_vcpu_file(&stock, &stock)).unwrap(),
            &expected,
        );
        assert!(!v.right);
        let words = v.detail.to_string();
        assert!(words.contains("4 of 8 wrong"), "{words}");
        let short = which_vcpu_verdict(
            &read_which_vcpu(&which_vcpu_file(&[0, 1], &[0, 1])).unwrap(),
            &expected,
        );
        assert!(!short.right && short.detail.to_string().contains("2 executions seen"));
        assert!(read_which_vcpu("0\n1\n").is_err());
        assert!(read_which_vcpu("# markbench-which-vcpu 1\n0\n1\n").is_err());
        let e = read_which_vcpu("# markbench-which-vcpu 2\nmark 0\nmark x\n").unwrap_err();
        assert!(e.contains("line 3"), "{e}");
        let e = read_which_vcpu("# markbench-which-vcpu 2\nload 0\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn a_memory_callback_told_another_vcpu_fails_the_trial_though_every_marker_is_right() {
        let expected = which_vcpu_expected(2);
        // The markers right, the stores' callbacks given the translating vCPU.
        let file = which_vcpu_file(&expected, &[0; 8]);
        let v = which_vcpu_verdict(&read_which_vcpu(&file).unwrap(), &expected);
        assert!(!v.right);
        let words = v.detail.to_string();
        assert!(
            words.contains("at all 8 executions of the marker (0 1 0 1 0 1 0 1), but its memory callbacks were told vCPUs 0 0 0 0 0 0 0 0 at the stores after them (4 of 8 wrong)"),
            "{words}"
        );
        // A store the plugin never saw (its marker last in its block).
        let file = which_vcpu_file(&expected, &expected[..7]);
        let v = which_vcpu_verdict(&read_which_vcpu(&file).unwrap(), &expected);
        assert!(!v.right);
        assert!(
            v.detail.to_string().contains("7 stores seen"),
            "{}",
            v.detail
        );
        // A trial recorded before stores were checked is judged by its markers.
        let old = WhichVcpuTrial {
            seen: expected.clone(),
            expected: expected.clone(),
            stores: None,
        };
        assert!(old.right());
        assert_eq!(
            old.to_string(),
            "the plugin was told the running vCPU at all 8 executions of the marker \
             (0 1 0 1 0 1 0 1)"
        );
    }

    fn trial_with(runner: &mut FakeRunner) -> SmpIcountVerdict {
        let dir = tempfile::tempdir().unwrap();
        let qemu = QemuBinary {
            path: "/usr/bin/qemu-system-x86_64".into(),
            version: "QEMU emulator version 10.0.2".into(),
            sha256: "0".repeat(64).into(),
        };
        run_smp_icount_trial(
            runner,
            (&qemu, None, crate::base::arch::Arch::X86_64),
            Path::new("/k"),
            Path::new("/i"),
            &dir.path().join("trial.log"),
        )
    }

    #[test]
    fn arm64_guests_run_under_tcg_without_a_kvm_trial() {
        use crate::base::arch::Arch;
        let mut runner = FakeRunner::default();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("trial.log");
        let (k, i) = (Path::new("/k"), Path::new("/i"));
        let d = decide_for(
            Arch::Arm64,
            AccelChoice::Auto,
            &mut runner,
            &qemu(),
            k,
            i,
            &log,
        )
        .unwrap();
        assert_eq!(d.accel, Accel::Tcg);
        assert_eq!(
            d.reason,
            Recorded::Data(AccelReason::OtherArch { arch: Arch::Arm64 })
        );
        assert!(d.reason.to_string().contains("software emulation (TCG)"));
        assert!(runner.requests().is_empty(), "no trial boot");
        let e = decide_for(
            Arch::Arm64,
            AccelChoice::Kvm,
            &mut runner,
            &qemu(),
            k,
            i,
            &log,
        )
        .unwrap_err();
        assert!(e.to_string().contains("cannot run arm64 guests"), "{e}");
        let asked = decide_for(
            Arch::Arm64,
            AccelChoice::Tcg,
            &mut runner,
            &qemu(),
            k,
            i,
            &log,
        );
        assert_eq!(asked.unwrap().accel, Accel::Tcg);
    }

    #[test]
    fn an_smp_trial_of_an_arm64_guest_boots_it_as_arm64() {
        let mut runner = FakeRunner::default();
        let dir = tempfile::tempdir().unwrap();
        let qemu = QemuBinary {
            path: "/usr/bin/qemu-system-aarch64".into(),
            version: "QEMU emulator version 10.0.2".into(),
            sha256: "1".repeat(64).into(),
        };
        let v = run_smp_icount_trial(
            &mut runner,
            (&qemu, None, crate::base::arch::Arch::Arm64),
            Path::new("/k/Image"),
            Path::new("/i"),
            &dir.path().join("trial.log"),
        );
        assert!(v.works, "{}", v.detail);
        assert_eq!(runner.requests()[0].arch, crate::base::arch::Arch::Arm64);
    }

    #[test]
    fn the_trial_passes_when_the_agent_sees_both_cpus() {
        let mut runner = FakeRunner::default();
        let v = trial_with(&mut runner);
        assert!(v.works, "{}", v.detail);
        let asked = &runner.requests()[0];
        assert_eq!((asked.cpus, asked.icount_shift), (2, Some(4)));
    }

    #[test]
    fn the_trial_fails_on_a_hang_a_missing_qemu_and_a_guest_short_of_cpus() {
        let mut hang = FakeRunner {
            hang_before_agent: true,
            ..FakeRunner::default()
        };
        let v = trial_with(&mut hang);
        assert!(
            !v.works && v.detail.to_string().contains("timed out"),
            "{}",
            v.detail
        );
        let mut missing = FakeRunner {
            fail_to_start: Some("No such file or directory".into()),
            ..FakeRunner::default()
        };
        let v = trial_with(&mut missing);
        assert!(
            !v.works && v.detail.to_string().contains("QEMU failed"),
            "{}",
            v.detail
        );
        let mut short = FakeRunner {
            online_cpus: Some("0".into()),
            ..FakeRunner::default()
        };
        let v = trial_with(&mut short);
        assert!(
            !v.works && v.detail.to_string().contains("\"0\""),
            "{}",
            v.detail
        );
    }
}
