//! `compare`: resolve what the user asked for into one run, build its
//! images, decide the machine once, boot every unit and write the report.
//!
//! The stages, in order: [`Options`] (typed, from the command line) →
//! [`Resolved`] (suite + overrides + shard + plan) → `run_images` (the
//! kernels and initramfs) → a `vm::Machine` (QEMU, accelerator, timing) →
//! [`execute`]: `run::execute` (boots, samples, metadata) and the profiled
//! boots → `report`. Each stage returns its result here; none calls the
//! next. `nightly` and `run-shard` are compares too.

mod dry_run;
mod execute;
mod options;
mod overrides;
pub mod precision;
mod resolved;
pub mod source_variants;

/// The overrides' recorded form is the run directory's (`record`).
pub use crate::record::Overrides;
pub use crate::stages::report::dry_run::PlanSummary;
pub use execute::{execute, initial_meta};
pub use options::{ModelChoice, Options};
pub use resolved::{kernel_source, read_suite, Resolved};

use crate::base::error::InputError;
use crate::base::error::{Context, Result};
use crate::base::run_dir::RunDir;
use crate::guest::images::kernel::KernelSource;
use crate::record::RunMeta;
use crate::stages::suite::{AccelChoice, TimingChoice};
use crate::{base::prereq, stages::vm};
use std::path::PathBuf;

/// How a compare ended: unless it was a dry run, the run (whose record
/// says whether it is complete and how each boot ended) and how long it took.
pub struct Outcome {
    pub run: Option<(PathBuf, RunMeta)>,
    pub elapsed: std::time::Duration,
}

/// What a compare has to tell as it goes, before it returns, as values:
/// the command's handler words it (`report`) and prints it.
pub enum CompareProgress<'a> {
    /// No suite was named and the current directory `cwd` has none: the
    /// suite built into markbench runs.
    BuiltInSuite { cwd: &'a std::path::Path },
    /// A directory under the reports that looks like a run but could not
    /// be read (for the estimate of the run's time); it is left out.
    SkippedRun(&'a crate::record::SkippedRun),
    /// What the run will do, before anything is built (the whole of a dry run).
    Plan(&'a PlanSummary),
    /// A resumed run continues with another QEMU than it started with.
    QemuChanged {
        recorded_version: &'a str,
        recorded_path: &'a str,
        now: &'a vm::qemu::QemuBinary,
    },
    /// Where the run goes and what it boots with, before the first boot.
    Starting {
        dir: &'a std::path::Path,
        machine: &'a vm::Machine,
        max_cpus: u32,
    },
}

/// The refusal of a wall-time run whose guests have more vCPUs than the
/// host has cores.
fn oversubscribed(run: &Resolved, why: &str) -> crate::base::error::Error {
    InputError::in_file(
        &run.suite.path,
        format!(
            "asks for {} vCPUs but this host has {} cores, and {why}: \
         oversubscribed vCPUs make wall-clock timings meaningless. Use --cpus to run fewer, \
         a QEMU that counts instructions for SMP guests (icount), or --allow-oversubscribe \
         to run anyway",
            run.max_cpus(),
            crate::base::host::cores()
        ),
    )
    .into()
}

/// The run's refusals that depend on this host and the output directory,
/// checked before anything is built or written (and by the dry run, so it
/// refuses what the run would). Returns whether the guests have more vCPUs
/// than the host has cores, which the machine's timing must then make up.
fn refuse_what_this_host_cannot_run(run: &Resolved, options: &Options) -> Result<bool> {
    if let Some(out) = options.out.as_ref().filter(|_| run.resumed.is_none()) {
        // A run there whose record cannot be looked at is not overwritten.
        if crate::base::input_file::present(&RunDir::new(out).meta())? {
            return Err(InputError::in_file(
                out,
                format_args!(
                    "already holds a run; continue it with --resume {}, or give another --out",
                    out.display()
                ),
            )
            .into());
        }
    }
    let host_cores = crate::base::host::cores() as u32;
    let oversubscribed_here = run.max_cpus() > host_cores && !run.allow_oversubscribe;
    let cannot_count =
        run.suite.timing == TimingChoice::Wall || run.suite.accel == AccelChoice::Kvm;
    if oversubscribed_here && cannot_count {
        return Err(oversubscribed(run, "the run times on the wall clock"));
    }
    // Unlike vCPUs, guest memory is not made up for by icount: a guest
    // larger than the host swaps or is killed.
    let host_mib = crate::base::host::memory_mib();
    if host_mib > 0 && u64::from(run.suite.memory_mib) > host_mib && !run.allow_oversubscribe {
        return Err(run
            .suite
            .error_at_key(
                "memory_mib",
                format!(
                    "memory_mib = {} is more than this host's {host_mib} MiB; give a smaller \
                     memory_mib, or --allow-oversubscribe to run anyway",
                    run.suite.memory_mib
                ),
            )
            .into());
    }
    Ok(oversubscribed_here)
}

/// What the run needs of the host: a run's tools, and what building
/// markbench's QEMU needs where an SMP point may boot it.
/// `named_qemu`: a QEMU the suite or the command line names, which boots
/// every guest instead.
pub fn host_needs(suite: &crate::stages::suite::Suite, named_qemu: bool) -> prereq::HostNeeds {
    prereq::HostNeeds {
        run: true,
        qemu_build: crate::stages::machine::may_need_own_qemu(suite, named_qemu),
        ci: false,
    }
}

/// Runs what `options` ask for (one shard of a suite when they name one),
/// passing what it has to show to `show` as it goes.
pub fn compare(options: &Options, show: &mut dyn FnMut(CompareProgress<'_>)) -> Result<Outcome> {
    let run = Resolved::new(options)?;
    if run.suite.built_in && run.resumed.is_none() {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        show(CompareProgress::BuiltInSuite { cwd: &cwd });
    }
    // The dry run refuses what the run would: it is the run's preview.
    let oversubscribed_here = refuse_what_this_host_cannot_run(&run, options)?;
    // What the host lacks is decided once, shown by the plan and taken
    // before the first build, so a missing piece never stops a run after
    // its kernels are built.
    let needs = host_needs(&run.suite, run.qemu.is_some());
    let host = prereq::plan_for(needs, &prereq::HostState::read());
    let (plan, skipped) = dry_run::plan_summary(&run, &options.reports, &host)?;
    for skipped in &skipped {
        show(CompareProgress::SkippedRun(skipped));
    }
    show(CompareProgress::Plan(&plan));
    if options.dry_run {
        return Ok(Outcome {
            run: None,
            elapsed: std::time::Duration::ZERO,
        });
    }
    let started = std::time::Instant::now();
    host.apply(needs, options.consent())?;
    let qemu = vm::qemu::QemuBinary::locate_for(run.qemu.as_deref(), run.suite.arch)?;
    let mut run = run;
    if let KernelSource::Tarball(p) = &run.source {
        // The default tarball may have been installed just now.
        run.source = KernelSource::from_path(p)?;
    }
    let images = crate::stages::run_images::prepare_images(&run.suite, &run.source)?;
    let mut runner = vm::qemu::QemuRunner::new(&qemu);
    let (dir, machine) = directory_and_machine(
        &run,
        options,
        &images,
        qemu,
        &mut runner,
        oversubscribed_here,
        show,
    )?;
    show(CompareProgress::Starting {
        dir: &dir,
        machine: &machine,
        max_cpus: run.max_cpus(),
    });
    let _interrupts =
        vm::watch_interrupts("stopping the guest, keeping every sample, writing a partial report");
    let meta = execute(&run, &images, &machine, &mut runner, &dir)
        .with_context(|| format!("run in {}", dir.display()))?;
    if options.out.is_none() {
        let latest = options.reports.join("latest");
        let _ = std::fs::remove_file(&latest);
        let _ = std::os::unix::fs::symlink(dir.file_name().unwrap_or_default(), &latest);
    }
    Ok(Outcome {
        run: Some((dir, meta)),
        elapsed: started.elapsed(),
    })
}

/// The run directory and the machine: a resumed run's own (its kernels
/// checked to be the ones it started with), or a new directory and a
/// machine decided now.
fn directory_and_machine(
    run: &Resolved,
    options: &Options,
    images: &crate::stages::run_images::Images,
    qemu: vm::qemu::QemuBinary,
    runner: &mut dyn vm::Runner,
    oversubscribed_here: bool,
    show: &mut dyn FnMut(CompareProgress<'_>),
) -> Result<(PathBuf, vm::Machine)> {
    if let Some((dir, meta)) = &run.resumed {
        for (k, recorded) in images.kernels.iter().zip(&meta.kernels) {
            if k.key != recorded.build_key {
                return Err(InputError::in_file(
                    dir,
                    format!(
                        "kernel {} is not the one this run started with (build key {} now, \
                         {} then); start a new run instead",
                        recorded.variant,
                        k.short_key(),
                        recorded.build_key.short()
                    ),
                )
                .into());
            }
        }
        if !meta.host.qemu_path.is_empty() && meta.host.qemu_version != qemu.version {
            show(CompareProgress::QemuChanged {
                recorded_version: &meta.host.qemu_version,
                recorded_path: &meta.host.qemu_path,
                now: &qemu,
            });
        }
        return Ok((dir.clone(), crate::stages::machine::recorded(meta, qemu)?));
    }
    let machine =
        crate::stages::machine::decide(&run.suite, images, qemu, run.qemu.is_some(), runner)?;
    if oversubscribed_here && !machine.timing.is_icount() {
        return Err(oversubscribed(
            run,
            &format!("timing is wall time ({})", machine.timing.reason),
        ));
    }
    let dir = match &options.out {
        Some(out) => {
            RunDir::new(out)
                .create()
                .with_context(|| format!("creating {}", out.display()))?;
            out.clone()
        }
        None => RunDir::create_new(&options.reports, &run.suite.name)
            .with_context(|| format!("creating a run directory in {}", options.reports.display()))?
            .root()
            .to_path_buf(),
    };
    Ok((dir, machine))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::prereq::{plan_for, HostState, HostStep};

    fn quick_suite() -> crate::stages::suite::Suite {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        crate::stages::suite::Suite::load(
            &dir.join("suites/quick.toml"),
            &crate::stages::suite::FragmentLookup::BesideSuite { cwd: dir.into() },
        )
        .unwrap()
    }

    #[test]
    fn the_quick_suite_on_a_new_machine_plans_the_qemu_build_before_anything_is_built() {
        let suite = quick_suite();
        let needs = host_needs(&suite, false);
        assert!(needs.qemu_build, "its 2-vCPU point boots markbench's QEMU");
        let plan = plan_for(needs, &HostState::new_debian_12());
        assert!(plan.steps.contains(&HostStep::AddSource {
            path: "/etc/apt/sources.list.d/markbench-bookworm-backports-src.sources",
            types: "deb-src",
        }));
        for package in ["ninja-build", "meson", "python3-pycotap", "libglib2.0-dev"] {
            assert!(plan.packages().contains(&package), "{package}: {plan:?}");
        }
        // A QEMU the command line names boots every guest: nothing to build.
        assert!(!host_needs(&suite, true).qemu_build);
    }

    #[test]
    fn one_vcpu_or_wall_time_needs_no_qemu_build() {
        let mut suite = quick_suite();
        suite.cpus = vec![1];
        assert!(!host_needs(&suite, false).qemu_build);
        let mut suite = quick_suite();
        suite.timing = TimingChoice::Wall;
        assert!(!host_needs(&suite, false).qemu_build);
        let mut suite = quick_suite();
        suite.accel = AccelChoice::Kvm;
        assert!(!host_needs(&suite, false).qemu_build);
    }
}
