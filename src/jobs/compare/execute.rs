//! Starting a resolved run: its metadata as it begins, the directory
//! locked, the boot loop (`run`) with the profiled boots after it
//! (`profile`), then the report from the directory.

use super::Resolved;
use crate::base::error::Result;
use crate::record::{HostInfo, KernelMeta, RunMeta};
use crate::stages::events::{RunEvent, RunObserver};
use crate::stages::run_images::Images;
use crate::stages::vm::{Machine, Runner};
use crate::{base::host, stages::profile, stages::report, stages::run};
use std::path::Path;

/// Runs `run` into `dir` (continuing `run.resumed` when set) and writes
/// the report; returns the run's metadata.
pub fn execute(
    run: &Resolved,
    images: &Images,
    machine: &Machine,
    runner: &mut dyn Runner,
    dir: &Path,
) -> Result<RunMeta> {
    let lock = run::RunLock::acquire(dir)?;
    let mut terminal = report::terminal::Terminal::default();
    // Before any boot: a profile that cannot be made fails now, not after
    // hours of timed boots.
    let profiler = profile::prepare(&run.suite, machine)?;
    let model = prepare_model(&run.suite, machine, dir)?;
    let slots = crate::stages::slots::decide(
        run.jobs,
        machine.timing.is_icount(),
        run.suite.memory_mib,
        &crate::stages::slots::HostOffer::here(),
    );
    let start = match &run.resumed {
        Some((_, meta)) => {
            let mut meta = meta.clone();
            note_slots(&mut meta, &slots);
            run::Start::Resume(meta)
        }
        None => {
            let mut meta = initial_meta(run, images, machine);
            note_slots(&mut meta, &slots);
            if let Some(warning) = qemu_release(machine) {
                terminal.on(&RunEvent::Warned { warning: &warning })?;
                meta.warnings.push(warning);
            }
            run::Start::New(meta)
        }
    };
    let mut profiled_boots =
        |runner: &dyn Runner,
         slots: &crate::stages::slots::Slots,
         events: &mut dyn crate::stages::events::RunObserver| {
            match &profiler {
                Some(profiler) => {
                    profiler.run(&run.suite, images, machine, runner, slots, events, dir)
                }
                None => Ok(()),
            }
        };
    // Everything before here (builds, images, trial boots, the profiler)
    // prepares the run; the budget is the boots'.
    let additions = run.additions(dir, slots.jobs, std::time::Instant::now());
    let mut more_boots = |units: &[crate::stages::plan::Unit],
                          running: &[crate::stages::plan::Unit]| {
        match &additions {
            Some(additions) => additions.next(units, running),
            None => Ok(crate::stages::plan::Addition::Stop(
                crate::record::PrecisionStop::Resolved,
            )),
        }
    };
    let meta = run::execute(
        &run.suite,
        &run.units,
        start,
        images,
        machine,
        &*runner,
        &slots,
        &lock,
        model.as_ref(),
        profiler
            .is_some()
            .then_some(&mut profiled_boots as run::AfterBoots),
        additions
            .is_some()
            .then_some(&mut more_boots as run::MoreBoots),
        &mut terminal,
    )?;
    report::write(dir)?;
    Ok(meta)
}

/// The warning a new run says once, and records, when the host's QEMU is
/// not of the release markbench's own QEMU is built from: the stock
/// package moves with the registry while the own build's source is fixed
/// by its hash.
fn qemu_release(machine: &Machine) -> Option<crate::record::Warning> {
    let smp = machine.smp.as_ref()?;
    if crate::stages::vm::qemu::same_release(&machine.qemu.version, &smp.build.version) {
        return None;
    }
    Some(crate::record::Warning::QemuRelease {
        host: machine.qemu.version.clone(),
        own: smp.build.version.clone(),
    })
}

/// Records how many guests boot at once, and says in the report when they
/// run side by side on the wall clock.
fn note_slots(meta: &mut RunMeta, slots: &crate::stages::slots::Slots) {
    if let Some(warning) = &slots.warning {
        if !meta.warnings.contains(warning) {
            meta.warnings.push(warning.clone());
        }
    }
    meta.slots = Some(slots.clone());
}

/// For a run under the cycle model: checks that guest time counts
/// instructions (the model's counts are the timed runs' own only then, and
/// round-robin icount is what keeps it deterministic on several vCPUs),
/// builds the plugin and records the model's settings in the run directory.
fn prepare_model(
    suite: &crate::stages::suite::Suite,
    machine: &Machine,
    dir: &Path,
) -> Result<Option<run::ModelPlugin>> {
    let Some(model) = &suite.model else {
        return Ok(None);
    };
    if machine.timing.icount_shift.is_none() {
        return Err(crate::base::error::InputError::in_file(
            &suite.path,
            format!(
                "the cycle model needs instruction-count timing (icount, under TCG), and this \
             run times on the wall clock ({}); run with --timing icount, or without --model",
                machine.timing.reason
            ),
        )
        .into());
    }
    let plugin = crate::guest::images::plugin::ensure_plugin()?;
    model.write(dir).map_err(|e| {
        anyhow::anyhow!(
            "writing {}: {e}",
            dir.join(crate::base::cycle_model::SETTINGS_FILE).display()
        )
    })?;
    Ok(Some(run::ModelPlugin {
        library: plugin.path,
        args: model.plugin_args(),
    }))
}

/// The revision markbench was built from (build.rs asks git then: at run
/// time the checkout may be gone, or be another).
fn git_revision() -> String {
    env!("MARKBENCH_GIT_REVISION").to_string()
}

/// The metadata of a run about to start.
pub fn initial_meta(run: &Resolved, images: &Images, machine: &Machine) -> RunMeta {
    let suite = &run.suite;
    let units = &run.units;
    RunMeta {
        format: Default::default(),
        suite: suite.name.clone(),
        diff: false,
        suite_path: suite.describe_path(),
        suite_sha256: suite.sha256.clone(),
        overrides: run.overrides.clone(),
        description: suite.description.clone(),
        git_revision: git_revision(),
        markbench_version: env!("CARGO_PKG_VERSION").into(),
        started_at: run::now(),
        finished_at: String::new(),
        wall_s: 0.0,
        complete: false,
        host: HostInfo {
            hostname: host::name(),
            cpu_model: host::cpu_model(),
            cores: host::cores(),
            memory_gib: host::memory_gib(),
            kernel_release: host::kernel_release(),
            qemu_version: machine.qemu.version.clone(),
            qemu_path: machine.qemu.path.display().to_string(),
        },
        hosts: Vec::new(),
        accel: machine.accel.accel,
        accel_reason: machine.accel.reason.clone(),
        timing: machine.timing.clone(),
        seed: suite.seed,
        margin: suite.margin,
        correction: suite.correction,
        boots_per_variant: suite.boots,
        iterations: suite.iterations,
        warmup: suite.warmup,
        cpus: suite.cpus.clone(),
        memory_mib: suite.memory_mib,
        kernels: kernel_metas(run, images),
        order: units.iter().map(crate::stages::plan::record_of).collect(),
        boots: Vec::new(),
        series: run.series,
        warnings: Vec::new(),
        guest_image: Some((&images.guest).into()),
        shard: run.shard_meta(),
        shards: Vec::new(),
        precision: run.precision_record(),
        slots: None,
        smp_qemu: machine.smp.as_ref().map(smp_qemu_record),
        arch: suite.arch,
        guest_cpu: (!suite.arch.is_default()).then(|| suite.arch.guest_cpu().to_string()),
        reference: suite.reference,
        workloads: suite
            .workloads
            .iter()
            .map(|w| crate::record::Recorded::Data(w.clone()))
            .collect(),
    }
}

/// Each kernel of the run as the record keeps it, baseline first.
fn kernel_metas(run: &Resolved, images: &Images) -> Vec<KernelMeta> {
    let suite = &run.suite;
    suite
        .variants
        .iter()
        .zip(&images.kernels)
        .enumerate()
        .map(|(i, (v, k))| (v, k, images.fragments.get(i).map_or(&[][..], Vec::as_slice)))
        .map(|(v, k, fragments)| KernelMeta {
            variant: v.name.clone(),
            kernel: v.kernel.clone(),
            cmdline: v.cmdline.clone(),
            source: match crate::record::SourceRecord::of_identity(&k.source_identity) {
                Some(source) => crate::record::Recorded::Data(source),
                None => k.source_identity.as_str().into(),
            },
            origin: (!k.origin.source.is_empty()).then(|| (&k.origin).into()),
            build_key: k.key.clone(),
            config_base: crate::record::Recorded::Data((&suite.kernel_base).into()),
            config_sha256: k.config_sha256.clone(),
            compiler: k.compiler.clone(),
            fragments: fragments
                .iter()
                .map(|f| (f.file_name.clone(), f.sha256().into()))
                .collect(),
            fragment_sources: fragments
                .iter()
                .map(|f| (f.file_name.clone(), f.source()))
                .collect(),
            bzimage: k.bzimage.clone(),
            bzimage_sha256: file_sha256(&k.bzimage).into(),
        })
        .collect()
}

/// markbench's own QEMU as the record keeps it.
fn smp_qemu_record(smp: &crate::stages::vm::SmpQemu) -> crate::record::SmpQemuRecord {
    crate::record::SmpQemuRecord {
        path: smp.qemu.path.display().to_string(),
        version: smp.qemu.version.clone(),
        sha256: smp.qemu.sha256.clone(),
        build_key: smp.build.key.as_str().into(),
        source: smp.build.source.clone(),
        source_sha256: smp.build.source_sha256.clone(),
        patches: smp
            .build
            .patches
            .iter()
            .map(|p| {
                crate::record::Recorded::Data(crate::record::PatchRecord {
                    name: p.name.clone(),
                    sha256: p.sha256.clone(),
                })
            })
            .collect(),
        turn: smp.turn,
        which_vcpu: smp.which_vcpu.clone(),
    }
}

/// A file's sha256 in hex; empty when it cannot be read (the boots will
/// say why).
fn file_sha256(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    std::fs::read(path)
        .map(|bytes| hex::encode(Sha256::digest(bytes)))
        .unwrap_or_default()
}
