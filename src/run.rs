//! Running a suite: images first, then each unit of the plan booted in
//! order, samples appended as they arrive, metadata rewritten after every
//! boot so an interrupted run leaves a directory `markbench report` can read.

use crate::compare::Resolved;
use crate::images::fragments::Fragment;
use crate::images::initramfs::{self, BaseImage};
use crate::images::kernel::{self, KernelImage, KernelSource, KernelSpec};
use crate::images::size::{self, SizeRecord};
use crate::images::source::{KernelOrigin, ResolvedOrigin};
use crate::plan::Unit;
use crate::protocol::{Directive, Message};
use crate::run_dir::RunDir;
use crate::samples::{BootKey, BootRecord, HostInfo, KernelMeta, RunMeta, Sample, SampleWriter};
use crate::suite::Suite;
use crate::vm::Machine;
use crate::vm::{BootEnd, BootRequest, Runner};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The built images a run boots.
#[derive(Debug, Clone)]
pub struct Images {
    /// One per variant: the baseline first, then each candidate.
    pub kernels: Vec<KernelImage>,
    /// The fragments each kernel was built from, as found for this run.
    pub fragments: Vec<Vec<Fragment>>,
    pub base: BaseImage,
    /// Archives appended to every boot's initrd after the base (the
    /// kernel-compile tree and toolchain when the suite compiles).
    pub extra_archives: Vec<PathBuf>,
    /// The configuration difference of each candidate against the baseline.
    pub diffconfig: String,
    /// The source difference of each candidate against the baseline, where
    /// their kernels come from other revisions or patches; empty otherwise.
    pub source_diff: String,
    /// Every kernel's sizes and each candidate's against the baseline's,
    /// read from their builds.
    pub sizes: SizeRecord,
}

/// Each variant's kernel origin, its revision resolved and its patches
/// checked on a scratch copy: a patch that does not apply stops the run
/// here, before any kernel is built. `source` is the run's, for variants
/// that name none of their own.
pub fn resolve_origins(suite: &Suite, source: &KernelSource) -> Result<Vec<ResolvedOrigin>> {
    let mut origins = Vec::new();
    for v in &suite.variants {
        let origin = KernelOrigin {
            source: match &v.source {
                Some(path) => KernelSource::from_path(path)?,
                None => source.clone(),
            },
            rev: v.rev.clone(),
            patches: v.patches.clone(),
        };
        let resolved =
            ResolvedOrigin::resolve(&origin).with_context(|| format!("variant {}", v.name))?;
        resolved
            .check_patches()
            .with_context(|| format!("variant {}", v.name))?;
        origins.push(resolved);
    }
    Ok(origins)
}

/// Builds (or finds in the cache) every variant's kernel and the base initramfs.
pub fn prepare_images(suite: &Suite, source: &KernelSource) -> Result<Images> {
    let origins = resolve_origins(suite, source)?;
    let mut built = Vec::new();
    let mut fragments = Vec::new();
    for (v, origin) in suite.variants.iter().zip(&origins) {
        let spec = KernelSpec {
            name: v.kernel.clone(),
            fragments: suite.fragments.kernel(&v.kernel)?,
        };
        built.push(kernel::ensure_kernel(origin, &spec)?);
        fragments.push(spec.fragments);
    }
    let kernels = built;
    // What all kernels share (scripts, the compile workload's tree) comes
    // from the baseline's tree.
    let baseline = &origins[0];
    let baseline_tree = baseline.tree()?.path;
    let diffconfig = diffconfigs(&baseline_tree, &suite.variants, &kernels)?;
    let mut source_diff = String::new();
    for (v, origin) in suite.variants.iter().zip(&origins).skip(1) {
        if let Some(diff) = crate::images::source::source_difference(baseline, origin)? {
            source_diff.push_str(&format!(
                "# {} against {}\n{diff}",
                v.name, suite.variants[0].name
            ));
            if !source_diff.ends_with('\n') {
                source_diff.push('\n');
            }
        }
    }
    let tree: Result<PathBuf, String> = Ok(baseline_tree.clone());
    let variants: Vec<String> = suite.variants.iter().map(|v| v.name.clone()).collect();
    let sizes = size::record(
        &variants,
        &kernels,
        &suite.objects,
        tree.as_deref().map_err(Clone::clone),
    );
    for k in &sizes.kernels {
        for e in &k.errors {
            eprintln!("markbench: WARNING: sizes of {}: {e}", k.variant);
        }
    }
    for c in &sizes.comparisons {
        if let Some(e) = &c.bloat_error {
            eprintln!(
                "markbench: WARNING: bloat-o-meter of {} against {}: {e}",
                c.candidate, c.baseline
            );
        }
    }
    let base = initramfs::ensure_base()?;
    let mut extra_archives = Vec::new();
    for spec in &suite.workloads {
        if let crate::workloads::WorkloadKind::KernelCompile(k) = &spec.kind {
            let tree = crate::images::compile_tree::ensure_compile_tree(
                &baseline.source,
                &baseline.source_identity,
                &fragments[0][0],
                &k.make_targets(),
            )?;
            if !extra_archives.contains(&tree.archive) {
                extra_archives.push(tree.archive);
            }
        }
    }
    Ok(Images {
        kernels,
        fragments,
        base,
        extra_archives,
        diffconfig,
        source_diff,
        sizes,
    })
}

/// The configuration difference of each candidate against the baseline:
/// for two variants the diffconfig alone, for more one headed section per
/// candidate.
fn diffconfigs(
    tree: &Path,
    variants: &[crate::suite::Variant],
    kernels: &[KernelImage],
) -> Result<String> {
    if kernels.len() == 2 {
        return kernel::diffconfig(tree, &kernels[0], &kernels[1]);
    }
    let mut text = String::new();
    for (v, k) in variants.iter().zip(kernels).skip(1) {
        let diff = kernel::diffconfig(tree, &kernels[0], k)?;
        text.push_str(&format!(
            "# {} against {}\n{diff}",
            v.name, variants[0].name
        ));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok(text)
}

/// The directives one unit's guest runs.
pub fn job_for(suite: &Suite, unit: &Unit) -> Vec<Directive> {
    let mut directives: Vec<Directive> = Vec::new();
    for spec in &suite.workloads {
        for d in spec.setup() {
            if !directives.contains(&d) {
                directives.push(d);
            }
        }
    }
    for step in &unit.steps {
        if let Some(argv) = suite.workloads[step.workload].before() {
            directives.push(Directive::Before {
                id: step.id().to_wire(suite),
                argv,
            });
        }
        directives.push(Directive::Run {
            id: step.id().to_wire(suite),
            iterations: step.iterations,
            argv: suite.workloads[step.workload].command(step.param),
        });
    }
    directives
}

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

/// The revision markbench was built from (build.rs asks git then: at run
/// time the checkout may be gone, or be another).
fn git_revision() -> String {
    env!("MARKBENCH_GIT_REVISION").to_string()
}

fn now() -> String {
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
pub fn recorded_machine(
    meta: &RunMeta,
    suite: &Suite,
    qemu: crate::vm::qemu::QemuBinary,
) -> Machine {
    let timing = meta
        .timing_decision
        .clone()
        .unwrap_or_else(|| crate::samples::TimingDecision {
            icount_shift: meta.counts_instructions().then_some(suite.icount_shift),
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

/// The metadata of a run about to start.
pub fn initial_meta(run: &Resolved, images: &Images, machine: &Machine) -> RunMeta {
    let suite = &run.suite;
    let units = &run.units;
    RunMeta {
        suite: suite.name.clone(),
        suite_path: suite.describe_path(),
        suite_sha256: suite.sha256.clone(),
        overrides: run.overrides_record(),
        override_settings: run.overrides.clone(),
        description: suite.description.clone(),
        git_revision: git_revision(),
        markbench_version: env!("CARGO_PKG_VERSION").into(),
        started_at: now(),
        finished_at: String::new(),
        wall_s: 0.0,
        complete: false,
        host: HostInfo {
            hostname: crate::host::name(),
            cpu_model: crate::host::cpu_model(),
            cores: crate::host::cores(),
            memory_gib: crate::host::memory_gib(),
            kernel_release: crate::host::kernel_release(),
            qemu_version: machine.qemu.version.clone(),
            qemu_path: machine.qemu.path.display().to_string(),
        },
        accel: machine.accel.accel,
        accel_reason: machine.accel.reason.clone(),
        timing: crate::vm::accel::describe_timing(&machine.timing, run.max_cpus()),
        timing_decision: Some(machine.timing.clone()),
        seed: suite.seed,
        margin: suite.margin,
        correction: suite.correction,
        boots_per_variant: suite.boots,
        iterations: suite.iterations,
        warmup: suite.warmup,
        cpus: suite.cpus.clone(),
        memory_mib: suite.memory_mib,
        kernels: suite
            .variants
            .iter()
            .zip(&images.kernels)
            .enumerate()
            .map(|(i, (v, k))| (v, k, images.fragments.get(i).map_or(&[][..], Vec::as_slice)))
            .map(|(v, k, fragments)| KernelMeta {
                variant: v.name.clone(),
                kernel: v.kernel.clone(),
                cmdline: v.cmdline.clone(),
                source: k.source_identity.clone(),
                origin: (!k.origin.source.is_empty()).then(|| k.origin.clone()),
                build_key: k.key.clone(),
                config_sha256: k.config_sha256.clone(),
                compiler: k.compiler.clone(),
                fragments: fragments
                    .iter()
                    .map(|f| (f.file_name.clone(), f.sha256()))
                    .collect(),
                fragment_sources: fragments
                    .iter()
                    .map(|f| (f.file_name.clone(), f.source()))
                    .collect(),
                bzimage: k.bzimage.clone(),
                bzimage_sha256: file_sha256(&k.bzimage),
            })
            .collect(),
        order: units
            .iter()
            .map(|u| format!("{} {} {}cpu boot{}", u.index, u.variant, u.cpus, u.boot))
            .collect(),
        boots: Vec::new(),
        series: crate::compare::source_variants::is_series(&run.overrides),
        warnings: Vec::new(),
        shard: run.shard_meta(),
        shards: Vec::new(),
        workloads: suite
            .workloads
            .iter()
            .map(|w| w.describe(suite.iterations, suite.warmup))
            .collect(),
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
    initramfs::write_boot_initrd_with_archives(
        &images.base,
        &images.extra_archives,
        &job_for(suite, unit),
        &initrd,
    )?;
    let variant = &suite.variants[unit.side];
    let timing = machine.timing.icount_shift;
    let request = BootRequest {
        kernel: images.kernels[unit.side].bzimage.clone(),
        initrd: initrd.clone(),
        extra_cmdline: variant.cmdline.clone(),
        cpus: unit.cpus,
        memory_mib: suite.memory_mib,
        accel: machine.accel.accel,
        icount_shift: timing,
        // Only icount keeps the host out of the guest otherwise; the retry of
        // a hang gets a seed of its own, since the same one would hang again.
        guest_seed: timing.map(|_| crate::vm::boot_seed(suite.seed, unit.index, attempt)),
        deadline: Duration::from_secs(suite.boot_timeout_s),
        console_log: dir.join(&log_name),
        plugin: None,
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

/// Runs every unit in order into `dir`, then renders the report. With
/// `resume`, the metadata of an interrupted run in `dir`: boots that finished
/// are kept and skipped, the partial samples of any other are dropped, and
/// the rest run as planned.
pub fn execute(
    run: &Resolved,
    images: &Images,
    machine: &Machine,
    runner: &mut dyn Runner,
    dir: &Path,
) -> Result<RunMeta> {
    let suite = &run.suite;
    let layout = RunDir::new(dir);
    let _lock = RunLock::acquire(dir)?;
    let profiler = crate::profile::prepare(suite, machine)?;
    let started = Instant::now();
    let units = &run.units;
    let (mut meta, previous_wall) = match run.resumed.as_ref().map(|(_, meta)| meta.clone()) {
        Some(mut meta) => {
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
        None => {
            let meta = initial_meta(run, images, machine);
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
    if let Some(profiler) = profiler.as_ref().filter(|_| !interrupted) {
        profiler.run(suite, images, machine, runner, dir)?;
        interrupted = crate::vm::interrupted();
    }
    meta.complete = !interrupted;
    meta.finished_at = now();
    meta.wall_s = previous_wall + started.elapsed().as_secs_f64().round();
    meta.write(dir)?;
    crate::report::write(dir)?;
    Ok(meta)
}

pub use crate::run_dir::{FRAGMENTS_COPY, SUITE_COPY};

fn keep_fragments(images: &Images, dir: &Path) -> Result<()> {
    let copies = RunDir::new(dir).fragments_copy();
    std::fs::create_dir_all(&copies).with_context(|| format!("creating {}", copies.display()))?;
    for f in images.fragments.iter().flatten() {
        let path = copies.join(&f.file_name);
        std::fs::write(&path, &f.text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// A file's sha256 in hex; empty when it cannot be read (the boots will
/// say why).
fn file_sha256(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    std::fs::read(path)
        .map(|bytes| hex::encode(Sha256::digest(bytes)))
        .unwrap_or_default()
}
