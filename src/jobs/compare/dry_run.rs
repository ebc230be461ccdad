//! What a run will do, computed and checked before it starts (and alone
//! with `--dry-run`); `report::dry_run` words it.

use super::Resolved;
use crate::base::error::Result;
use crate::guest::images::kernel;
use crate::record::{RunMeta, SkippedRun};
use crate::stages::report::dry_run::{
    role, Estimate, ModelPlan, PlanSummary, PrecisionPlan, SlotsPlan, SmpQemuPlan, SourcePlan,
    UnitLine, VariantPlan,
};
use crate::stages::suite::{AccelChoice, Suite, TimingChoice};
use std::path::{Path, PathBuf};

/// Seconds per boot of the newest complete earlier run of this suite with
/// the same overrides among `runs`, if any.
fn earlier_seconds_per_boot(
    runs: Vec<(PathBuf, RunMeta)>,
    suite: &Suite,
    overrides: &crate::record::Overrides,
) -> Option<(f64, String)> {
    runs.into_iter().find_map(|(dir, meta)| {
        (meta.complete
            && !meta.diff
            && meta.suite == suite.name
            && meta.suite_sha256 == suite.sha256
            && meta.overrides.suite_changes() == overrides.suite_changes()
            && !meta.boots.is_empty())
        .then(|| {
            let per_boot =
                meta.boots.iter().map(|b| b.wall_s).sum::<f64>() / meta.boots.len() as f64;
            (per_boot, dir.display().to_string())
        })
    })
}

/// The summary of `run`'s plan. Checks what a run would refuse before
/// building: every patch applies (on a scratch copy), every fragment parses.
/// Also returns the directories under `reports` that look like runs but
/// could not be read for the estimate.
pub(super) fn plan_summary(
    run: &Resolved,
    reports: &Path,
    host: &crate::base::prereq::HostPlan,
) -> Result<(PlanSummary, Vec<SkippedRun>)> {
    let suite = &run.suite;
    let resolved = resolved_origins(run)?;
    let origins = own_origins(run, resolved.as_deref());
    let kernels_cached = match &resolved {
        Some(resolved) => Some(crate::stages::run_images::cached_kernels(suite, resolved)?),
        None => None,
    };
    let variants = variant_plans(suite)?;
    let (earlier_runs, skipped) = crate::record::scan_runs(reports);
    let (estimate, profile, model) = estimate(run, earlier_runs);
    let host_cores = crate::base::host::cores() as u32;
    let max = run.max_cpus();
    let (jobs, slots) = slots_plan(run);
    let summary = PlanSummary {
        suite: suite.name.clone(),
        suite_path: suite.describe_path(),
        description: suite.description.clone(),
        kernel_source: match &run.source {
            kernel::KernelSource::Tarball(path) => SourcePlan::Tarball(path.display().to_string()),
            kernel::KernelSource::Tree(path) => SourcePlan::Tree(path.display().to_string()),
        },
        kernel_base: suite.kernel_base.describe(),
        arch: suite.arch,
        fragments_from: suite.fragments.describe(),
        origins,
        variants,
        workloads: suite
            .workloads
            .iter()
            .map(|w| w.describe(suite.iterations, suite.warmup))
            .collect(),
        left_out: run.left_out.clone(),
        objects: suite.objects.clone(),
        boots: run.units.len(),
        boots_per_variant: suite.boots,
        cpu_counts: suite.cpus.len(),
        timed_runs: run
            .units
            .iter()
            .flat_map(|u| &u.steps)
            .map(|s| s.iterations)
            .sum(),
        iterations: suite.iterations,
        warmup: suite.warmup,
        own_iterations: own_iterations(suite),
        overrides: run.overrides.describe(),
        shard: run
            .shard_meta()
            .map(|shard| (shard.index, shard.count, shard.pieces)),
        estimate,
        profile,
        model,
        precision: suite.precision.is_some(),
        order: suite.order,
        seed: suite.seed,
        units: run
            .units
            .iter()
            .map(|u| UnitLine {
                index: u.index,
                variant: u.variant.clone(),
                cpus: u.cpus,
                boot: u.boot,
            })
            .collect(),
        precision_rule: precision_rule(run),
        oversubscribed: (max > host_cores).then_some((max, host_cores)),
        timing: suite.timing,
        icount_shift: suite.icount_shift,
        maybe_tcg: suite.accel != AccelChoice::Kvm,
        jobs,
        slots,
        smp_qemu: smp_qemu(run),
        host: host.clone(),
        disk: disk(run, kernels_cached.as_deref()),
        kernels_cached,
    };
    Ok((summary, skipped))
}

/// Every variant's kernel origin, resolved: its revision found and its
/// patches checked on a scratch copy, so one that does not apply fails the
/// dry run as it would fail the run, before a build. `None` where the run's
/// kernel source is not there yet (Debian's tarball, which a run installs
/// before its first build) and no variant names an origin of its own.
fn resolved_origins(
    run: &Resolved,
) -> Result<Option<Vec<crate::guest::images::source::ResolvedOrigin>>> {
    let suite = &run.suite;
    let own_origins = has_own_origins(suite);
    if !own_origins && !run.source.path().exists() {
        return Ok(None);
    }
    Ok(Some(crate::stages::run_images::resolve_origins(
        suite,
        &run.source,
    )?))
}

/// Whether a variant names a kernel origin of its own (a source, a
/// revision or patches).
fn has_own_origins(suite: &Suite) -> bool {
    suite
        .variants
        .iter()
        .any(|v| v.source.is_some() || v.rev.is_some() || !v.patches.is_empty())
}

/// Each variant's kernel origin, when a variant has one of its own.
fn own_origins(
    run: &Resolved,
    resolved: Option<&[crate::guest::images::source::ResolvedOrigin]>,
) -> Vec<(String, String)> {
    let suite = &run.suite;
    let own_origins = has_own_origins(suite);
    match resolved {
        Some(origins) if own_origins => suite
            .variants
            .iter()
            .zip(origins)
            .map(|(v, origin)| (v.name.clone(), origin.describe()))
            .collect(),
        _ => Vec::new(),
    }
}

/// Each variant's kernel, command line and fragments, every fragment parsed.
fn variant_plans(suite: &Suite) -> Result<Vec<VariantPlan>> {
    let mut variants = Vec::new();
    for (i, v) in suite.variants.iter().enumerate() {
        let mut fragments = Vec::new();
        for f in suite.fragments.kernel_for(&v.kernel, suite.arch)? {
            kernel::parse_fragment(&f.label(), &f.text)?;
            fragments.push((
                f.file_name.clone(),
                f.source(),
                f.sha256().short().to_string(),
            ));
        }
        variants.push(VariantPlan {
            role: role(i, suite.variants.len()),
            name: v.name.clone(),
            kernel: v.kernel.clone(),
            cmdline: v.cmdline.clone(),
            fragments,
        });
    }
    Ok(variants)
}

/// How long the run will take, from an earlier complete run of the suite
/// among `earlier_runs` when there is one, and the plugins' (the
/// profiler's, the cycle model's) plans and cost.
fn estimate(
    run: &Resolved,
    earlier_runs: Vec<(PathBuf, RunMeta)>,
) -> (
    Estimate,
    Option<crate::stages::profile::dry_run::ProfilePlan>,
    Option<ModelPlan>,
) {
    let suite = &run.suite;
    let earlier = earlier_seconds_per_boot(earlier_runs, suite, &run.overrides);
    let earlier_run =
        earlier.as_ref().map(
            |(per_boot, from)| crate::stages::profile::dry_run::EarlierRun {
                seconds_per_boot: *per_boot,
                dir: Path::new(from),
                under_model: crate::base::cycle_model::CycleModel::read(Path::new(from))
                    .is_ok_and(|m| m.is_some()),
            },
        );
    let profile = crate::stages::profile::dry_run::plan(suite, earlier_run);
    let model = suite.model.as_ref().map(|model| ModelPlan {
        geometry: model.geometry(),
        profile: model.profile.clone(),
        timeout: earlier_run.and_then(|e| {
            crate::stages::profile::dry_run::timeout_risk(
                suite,
                crate::stages::profile::dry_run::EstimatedBoot::Timed,
                e.timed_boot_s(suite),
            )
        }),
    });
    let model_factor = earlier_run.map_or(1.0, |e| e.model_factor(suite));
    let estimate = match earlier {
        Some((seconds_per_boot, from)) => Estimate::Earlier {
            seconds_per_boot,
            from,
            model_factor,
        },
        None if suite.kernel_base == kernel::KernelBase::Tinyconfig => Estimate::UnknownMinimal,
        None => Estimate::Unknown {
            kernel_base: suite.kernel_base.describe(),
        },
    };
    (estimate, profile, model)
}

/// The workloads whose iterations differ from the suite's: kind, measured,
/// warm-up.
fn own_iterations(suite: &Suite) -> Vec<(String, u32, u32)> {
    suite
        .workloads
        .iter()
        .filter_map(|w| {
            let (iterations, warmup) = w.iterations_in(suite.iterations, suite.warmup);
            ((iterations, warmup) != (suite.iterations, suite.warmup))
                .then(|| (w.kind().to_string(), iterations, warmup))
        })
        .collect()
}

/// Whether the run may build markbench's QEMU: an SMP point may boot it
/// and the cache does not hold it.
fn builds_own_qemu(run: &Resolved) -> bool {
    use crate::guest::images::qemu_build;
    let root = crate::guest::images::Cache::here().qemu_builds();
    crate::stages::machine::may_need_own_qemu(&run.suite, run.qemu.is_some())
        && !qemu_build::entry_dir(&root, &qemu_build::build_key())
            .join(qemu_build::BINARY)
            .is_file()
}

/// What a cold cache's builds take on disk here (docs/measurements.md):
/// Debian's kernel source unpacked, a minimal kernel's workspace and entry,
/// markbench's QEMU's build.
const UNPACKED_SOURCE_BYTES: u64 = 1_600_000_000;
const KERNEL_BUILD_BYTES: u64 = 1_900_000_000;
const QEMU_BUILD_BYTES: u64 = 600_000_000;

/// The disk the run's builds take in the cache, and what it has free;
/// `None` when nothing is built.
fn disk(
    run: &Resolved,
    kernels_cached: Option<&[(String, bool)]>,
) -> Option<crate::stages::report::dry_run::Disk> {
    let kernels_to_build = match kernels_cached {
        Some(kernels) => kernels.iter().filter(|(_, cached)| !cached).count(),
        None => {
            let mut names: Vec<&str> = run
                .suite
                .variants
                .iter()
                .map(|v| v.kernel.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            names.len()
        }
    } as u64;
    let mut needed = kernels_to_build * KERNEL_BUILD_BYTES;
    if kernels_to_build > 0 {
        needed += UNPACKED_SOURCE_BYTES;
    }
    if builds_own_qemu(run) {
        needed += QEMU_BUILD_BYTES;
    }
    let cache = crate::guest::images::cache_dir();
    (needed > 0).then(|| crate::stages::report::dry_run::Disk {
        needed,
        free: crate::base::host::free_bytes(&cache),
        cache: cache.display().to_string(),
    })
}

/// markbench's own QEMU, when boots of more than one vCPU under icount
/// may use it, and whether the cache holds it.
fn smp_qemu(run: &Resolved) -> Option<SmpQemuPlan> {
    use crate::guest::images::qemu_build;
    if !crate::stages::machine::may_need_own_qemu(&run.suite, run.qemu.is_some()) {
        return None;
    }
    Some(SmpQemuPlan {
        version: qemu_build::VERSION.to_string(),
        patches: qemu_build::PATCHES.len(),
        smp_turn: run.suite.smp_turn,
        in_cache: !builds_own_qemu(run),
    })
}

/// How many guests the run boots at once under the timing it may get, and
/// why: icount (TCG) and the wall clock (KVM, or a QEMU that cannot count
/// instructions) decide differently, and before the trial boots only the
/// suite's choices are known.
fn slots_plan(run: &Resolved) -> (usize, SlotsPlan) {
    use crate::stages::slots::{decide, HostOffer};
    let host = HostOffer::here();
    let memory = run.suite.memory_mib;
    let icount = decide(run.jobs, true, memory, &host);
    let wall = decide(run.jobs, false, memory, &host);
    let may_count = run.suite.timing != TimingChoice::Wall && run.suite.accel != AccelChoice::Kvm;
    let may_wall = run.suite.timing != TimingChoice::Icount;
    let likely = if may_count { &icount } else { &wall };
    let warning = likely
        .warning
        .as_ref()
        .or(wall.warning.as_ref().filter(|_| may_wall))
        .cloned();
    let plan = SlotsPlan {
        under_icount: may_count.then(|| icount.reason.clone()),
        on_wall: (!may_count || may_wall).then(|| wall.reason.clone()),
        warning,
    };
    (likely.jobs, plan)
}

/// What a run with a precision target does after its planned boots.
fn precision_rule(run: &Resolved) -> Option<PrecisionPlan> {
    let p = run.suite.precision?;
    Some(PrecisionPlan {
        percent: p.percent,
        min_boots: crate::base::stats::sequential::MIN_BOOTS,
        budget_s: p.budget_s,
        boot_cap: p.boot_cap(run.planned),
    })
}
