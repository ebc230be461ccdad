//! The boot loop of a run: each unit of the plan booted in order, samples
//! appended as they arrive, metadata rewritten after every boot so an
//! interrupted run leaves a directory `markbench report` can read. It takes
//! the images (`run_images`) and the machine as decided, and returns the
//! run's metadata; `compare` renders the report from the directory after.

use crate::images::initramfs;
use crate::images::size::SizeRecord;
use crate::plan::Unit;
use crate::protocol::Message;
use crate::run_dir::RunDir;
use crate::samples::{BootKey, BootRecord, RunMeta, Sample, SampleWriter};
use crate::suite::Suite;
use crate::vm::{BootEnd, BootRequest, Machine, Runner};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A fresh run directory `<root>/<timestamp>-<suite>`.
pub fn new_run_dir(root: &Path, suite: &Suite) -> Result<PathBuf> {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let mut dir = root.join(format!("{stamp}-{}", suite.name));
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = root.join(format!("{stamp}-{}-{n}", suite.name));
    }
    crate::run_dir::RunDir::new(&dir)
        .create()
        .with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Now, as the run's records write times.
pub fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Decides what every boot of the run is made with: the accelerator (under
/// `auto` a KVM trial boot), then, for a suite with more than one vCPU under
/// TCG that may count instructions, whether this QEMU can run SMP guests
/// under icount (a trial boot, remembered per binary), and from both the
/// timing mode. The trials' console logs stay in the cache's `trials/`.
pub fn decide_machine(
    suite: &Suite,
    images: &Images,
    qemu: crate::vm::qemu::QemuBinary,
    runner: &mut dyn Runner,
) -> Result<Machine> {
    use crate::vm::accel;
    let trials = crate::images::cache_dir().join("trials");
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
    let smp_icount = (decision.accel == crate::samples::Accel::Tcg
        && max_cpus > 1
        && suite.timing != crate::suite::TimingChoice::Wall)
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
pub fn recorded_machine(meta: &RunMeta, qemu: crate::vm::qemu::QemuBinary) -> Machine {
    let timing = meta
        .timing_decision
        .clone()
        .unwrap_or_else(|| crate::samples::TimingDecision {
            icount_shift: None,
            reason: "as the run started".into(),
        });
    Machine {
        qemu,
        accel: crate::vm::accel::AccelDecision {
            accel: meta.accel,
            reason: meta.accel_reason.clone(),
        },
        timing,
    }
}

/// Boots one unit and records its samples; returns its boot record.
/// `attempt` counts retries of the unit (0 first).
#[allow(clippy::too_many_arguments)]
pub fn run_unit(
    suite: &Suite,
    unit: &Unit,
    images: &Images,
    machine: &Machine,
    runner: &mut dyn Runner,
    dir: &Path,
    writer: &mut SampleWriter,
    attempt: u32,
) -> Result<BootRecord> {
    let log_name = format!(
        "logs/unit-{:03}-{}-{}cpu-boot{}.log",
        unit.index, unit.variant, unit.cpus, unit.boot
    );
    let initrd = dir.join(format!("logs/unit-{:03}.initrd", unit.index));
    images.write_unit_initrd(suite, unit, &initrd)?;
    let timing = machine.timing.icount_shift;
    let request = BootRequest {
        icount_shift: timing,
        // Only icount keeps the host out of the guest otherwise; the retry of
        // a hang gets a seed of its own, since the same one would hang again.
        guest_seed: timing.map(|_| crate::vm::boot_seed(suite.seed, unit.index, attempt)),
        ..images.boot_request(
            suite,
            unit,
            machine.accel.accel,
            initrd.clone(),
            dir.join(&log_name),
        )
    };
    let mut samples = 0usize;
    let mut guest = (String::new(), String::new(), String::new());
    let mut sample_error: Option<String> = None;
    let mut write_error: Option<anyhow::Error> = None;
    let outcome = runner.boot(&request, &mut |message| match message {
        Message::Hello {
            kernel_release,
            kernel_version,
            online_cpus,
            ..
        } => guest = (kernel_release, online_cpus, kernel_version),
        Message::Run(record) => {
            let Some(step) = unit.step(&record.id) else {
                sample_error.get_or_insert(format!(
                    "the guest reported an unknown step {:?}",
                    record.id
                ));
                return;
            };
            let spec = &suite.workloads[step.workload];
            match spec.measure(&record) {
                Ok(measurements) => {
                    for m in measurements {
                        let sample = Sample {
                            suite: suite.name.clone(),
                            workload: spec.label(),
                            metric: m.metric,
                            unit: m.unit,
                            higher_is_better: m.higher_is_better,
                            param: step.param,
                            cpus: unit.cpus,
                            variant: unit.variant.clone(),
                            boot: unit.boot,
                            iteration: record.iteration,
                            warmup: record.iteration < step.warmup,
                            value: m.value,
                            started_at: now(),
                        };
                        match writer.append(&sample) {
                            Ok(()) => samples += 1,
                            Err(e) => {
                                write_error.get_or_insert(e);
                            }
                        }
                    }
                }
                Err(e) => {
                    sample_error.get_or_insert(e);
                }
            }
        }
        _ => {}
    });
    let _ = std::fs::remove_file(&initrd);
    if let Some(e) = write_error {
        return Err(e.context("writing samples.csv"));
    }
    let mut end = outcome.end;
    // The host's reading of a failed run ("exited with status 3: …") says
    // more than the agent's ("command failed"), so it wins.
    if let (BootEnd::Completed | BootEnd::AgentError { .. }, Some(message)) = (&end, sample_error) {
        end = BootEnd::AgentError { message };
    }
    let expected_cpus = if unit.cpus == 1 {
        "0".to_string()
    } else {
        format!("0-{}", unit.cpus - 1)
    };
    if end.is_ok() && guest.1 != expected_cpus {
        end = BootEnd::AgentError {
            message: format!("guest saw CPUs {:?}, expected {expected_cpus:?}", guest.1),
        };
    }
    let retryable = matches!(
        end,
        BootEnd::TimedOut { .. } | BootEnd::QemuFailed { .. } | BootEnd::Vanished { .. }
    );
    Ok(BootRecord {
        guest_seed: request.guest_seed,
        retryable,
        host_load_before: 0.0,
        host_load_after: 0.0,
        unit: unit.index,
        variant: unit.variant.clone(),
        cpus: unit.cpus,
        boot: unit.boot,
        status: end.describe(),
        ok: end.is_ok(),
        wall_s: (outcome.wall.as_secs_f64() * 10.0).round() / 10.0,
        samples,
        console_log: log_name,
        guest_kernel: guest.0,
        guest_cpus: guest.1,
        guest_version: guest.2,
    })
}

/// A lock file that stops two runs writing into one directory. A lock left
/// by a process that no longer exists (killed with SIGKILL) is taken over.
pub struct RunLock {
    path: PathBuf,
}

impl RunLock {
    pub fn acquire(dir: &Path) -> Result<RunLock> {
        let path = RunDir::new(dir).lock();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    use std::io::Write;
                    write!(f, "{}", std::process::id())?;
                    return Ok(RunLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(&path).unwrap_or_default();
                    let alive = holder
                        .trim()
                        .parse::<u32>()
                        .is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
                    if alive {
                        return Err(crate::error::InputError::new(format!(
                            "{}: another markbench (pid {}) is writing into this run directory",
                            dir.display(),
                            holder.trim()
                        ))
                        .into());
                    }
                    std::fs::remove_file(&path)?;
                }
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The boot a unit makes, as its samples and boot record name it.
fn unit_key(unit: &Unit) -> BootKey {
    BootKey {
        variant: unit.variant.clone(),
        cpus: unit.cpus,
        boot: unit.boot,
    }
}

/// How a run starts: new, with its metadata as it begins, or as the
/// continuation of an interrupted run, with the metadata that run left.
pub enum Start {
    New(RunMeta),
    Resume(RunMeta),
}

/// What runs after the timed boots of a run that was not interrupted (the
/// profiled boots), with the run's runner.
pub type AfterBoots<'a> = &'a mut dyn FnMut(&mut dyn Runner) -> Result<()>;

/// Runs every unit in order into `dir` and returns the run's metadata as
/// written last; the caller holds `dir`'s [`RunLock`] and renders the report.
/// With [`Start::Resume`], boots that finished are kept and skipped, the
/// partial samples of any other are dropped, and the rest run as planned.
#[allow(clippy::too_many_arguments)]
pub fn execute(
    suite: &Suite,
    units: &[Unit],
    start: Start,
    images: &Images,
    machine: &Machine,
    runner: &mut dyn Runner,
    dir: &Path,
    after_boots: Option<AfterBoots>,
) -> Result<RunMeta> {
    let layout = RunDir::new(dir);
    let started = Instant::now();
    let (mut meta, previous_wall) = match start {
        Start::Resume(mut meta) => {
            meta.boots.retain(|b| b.ok);
            let done: std::collections::BTreeSet<_> =
                meta.boots.iter().map(BootRecord::key).collect();
            let dropped = crate::samples::retain_samples(dir, |s| done.contains(&s.boot_key()))?;
            eprintln!(
                "markbench: resuming: {} of {} boots already done; dropped {dropped} samples of unfinished boots",
                meta.boots.len(),
                units.len()
            );
            meta.complete = false;
            // A run begun before sizes were recorded gets them now: the
            // kernels are the ones it started with.
            if SizeRecord::read(dir)?.is_none() {
                images.sizes.write(dir)?;
            }
            let wall = meta.wall_s;
            (meta, wall)
        }
        Start::New(meta) => {
            std::fs::write(layout.diffconfig(), &images.diffconfig)?;
            if !images.source_diff.is_empty() {
                std::fs::write(layout.source_diff(), &images.source_diff)?;
            }
            images.sizes.write(dir)?;
            std::fs::write(layout.suite_copy(), &suite.text)
                .with_context(|| format!("keeping a copy of the suite in {}", dir.display()))?;
            keep_fragments(images, dir)?;
            (meta, 0.0)
        }
    };
    meta.write(dir)?;
    let mut writer = SampleWriter::open(dir)?;
    let mut interrupted = false;
    let progress = crate::progress::Progress::new(units.len(), meta.boots.len());
    for unit in units {
        if meta.boots.iter().any(|b| b.ok && b.key() == unit_key(unit)) {
            continue;
        }
        if crate::vm::interrupted() {
            interrupted = true;
            break;
        }
        progress.start_boot(&format!(
            "boot {}/{}: {} on {} CPU{}, boot {}",
            unit.index + 1,
            units.len(),
            unit.variant,
            unit.cpus,
            if unit.cpus == 1 { "" } else { "s" },
            unit.boot
        ));
        let load_before = crate::host::load();
        let mut record = run_unit(suite, unit, images, machine, runner, dir, &mut writer, 0)?;
        if record.retryable && !crate::vm::interrupted() {
            // A hang or a QEMU failure may be the host's doing: try once more,
            // after dropping whatever the failed attempt measured.
            progress.note(&format!("  {}; retrying once", record.status));
            let key = unit_key(unit);
            drop(writer);
            crate::samples::retain_samples(dir, |s| s.boot_key() != key)?;
            writer = SampleWriter::open(dir)?;
            let first = record.status.clone();
            record = run_unit(suite, unit, images, machine, runner, dir, &mut writer, 1)?;
            record.status = format!("{} (retried after: {first})", record.status);
        }
        record.host_load_before = load_before;
        record.host_load_after = crate::host::load();
        progress.finish_boot(&format!(
            "boot {}/{} ({} on {} CPUs, boot {}): {} in {:.1} s, {} samples, host load {:.1} → {:.1}",
            unit.index + 1,
            units.len(),
            unit.variant,
            unit.cpus,
            unit.boot,
            record.status,
            record.wall_s,
            record.samples,
            record.host_load_before,
            record.host_load_after
        ));
        meta.boots.push(record);
        meta.wall_s = previous_wall + started.elapsed().as_secs_f64().round();
        meta.write(dir)?;
        if crate::vm::interrupted() {
            interrupted = true;
            break;
        }
    }
    progress.finish();
    if let Some(after_boots) = after_boots.filter(|_| !interrupted) {
        after_boots(runner)?;
        interrupted = crate::vm::interrupted();
    }
    meta.complete = !interrupted;
    meta.finished_at = now();
    meta.wall_s = previous_wall + started.elapsed().as_secs_f64().round();
    meta.write(dir)?;
    Ok(meta)
}

pub use crate::run_dir::{FRAGMENTS_COPY, SUITE_COPY};
/// The images moved to their own stage (`run_images`); kept reachable here.
pub use crate::run_images::Images;

fn keep_fragments(images: &Images, dir: &Path) -> Result<()> {
    let copies = RunDir::new(dir).fragments_copy();
    std::fs::create_dir_all(&copies).with_context(|| format!("creating {}", copies.display()))?;
    for f in images.fragments.iter().flatten() {
        let path = copies.join(&f.file_name);
        std::fs::write(&path, &f.text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
