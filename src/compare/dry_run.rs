//! What a run will do, printed before it starts (and alone with `--dry-run`).

use super::Resolved;
use crate::images::kernel;
use crate::suite::{AccelChoice, Suite};
use anyhow::Result;
use std::path::Path;

/// Seconds per boot of the newest complete earlier run of this suite with
/// the same overrides, if any.
fn earlier_seconds_per_boot(
    reports: &Path,
    suite: &Suite,
    overrides: &[String],
) -> Option<(f64, String)> {
    let (runs, skipped) = crate::samples::scan_runs(reports);
    for s in &skipped {
        crate::message::warning(s);
    }
    runs.into_iter().find_map(|(dir, meta)| {
        (meta.complete
            && meta.suite == suite.name
            && meta.suite_sha256 == suite.sha256
            && meta.overrides == overrides
            && !meta.boots.is_empty())
        .then(|| {
            let per_boot =
                meta.boots.iter().map(|b| b.wall_s).sum::<f64>() / meta.boots.len() as f64;
            (per_boot, dir.display().to_string())
        })
    })
}

/// How the plan names a variant's role.
fn role(index: usize, variants: usize) -> String {
    match (index, variants) {
        (0, 2) => "without (baseline):".into(),
        (_, 2) => "with (candidate):  ".into(),
        (0, _) => "baseline:   ".into(),
        (i, _) => format!("candidate {i}:"),
    }
}

pub(super) fn print_plan(run: &Resolved, reports: &Path) -> Result<()> {
    let suite = &run.suite;
    let units = &run.units;
    let host_cores = crate::host::cores() as u32;
    println!("suite {} ({})", suite.name, suite.describe_path());
    if !suite.description.is_empty() {
        println!("  {}", suite.description);
    }
    println!(
        "kernel source: {}",
        match &run.source {
            kernel::KernelSource::Tarball(path) =>
                format!("{} (a release tarball)", path.display()),
            kernel::KernelSource::Tree(path) => format!("{} (a source tree)", path.display()),
        }
    );
    println!(
        "kernel configuration: {} + base.config + the variant's fragment",
        suite.kernel_base.describe()
    );
    println!("kernel fragments from: {}", suite.fragments.describe());
    let own_origins = suite
        .variants
        .iter()
        .any(|v| v.source.is_some() || v.rev.is_some() || !v.patches.is_empty());
    if own_origins {
        // Resolving checks every patch on a scratch copy: one that does not
        // apply fails the dry run as it would fail the run, before a build.
        let origins = crate::run_images::resolve_origins(suite, &run.source)?;
        for (v, origin) in suite.variants.iter().zip(&origins) {
            println!("  kernel of {}: {}", v.name, origin.describe());
        }
    }
    for (i, v) in suite.variants.iter().enumerate() {
        println!(
            "  {} {}: kernel {}{}",
            role(i, suite.variants.len()),
            v.name,
            v.kernel,
            if v.cmdline.is_empty() {
                String::new()
            } else {
                format!(", cmdline {:?}", v.cmdline)
            }
        );
        for f in suite.fragments.kernel(&v.kernel)? {
            kernel::parse_fragment(&f.label(), &f.text)?;
            println!(
                "      {:<24} {} (sha256 {})",
                f.file_name,
                f.source(),
                &f.sha256()[..16]
            );
        }
    }
    for w in &suite.workloads {
        println!("  workload {}", w.describe(suite.iterations, suite.warmup));
    }
    if !suite.objects.is_empty() {
        println!(
            "  objects sized in each build: {}",
            suite.objects.join(", ")
        );
    }
    let runs: u32 = units
        .iter()
        .flat_map(|u| &u.steps)
        .map(|s| s.iterations)
        .sum();
    println!(
        "{} boots ({} per variant × {} CPU count{}), {} timed runs in all ({} measured + {} warm-up per point per boot)",
        units.len(),
        suite.boots,
        suite.cpus.len(),
        if suite.cpus.len() == 1 { "" } else { "s" },
        runs,
        suite.iterations,
        suite.warmup
    );
    for w in &suite.workloads {
        let (iterations, warmup) = w.iterations_in(suite.iterations, suite.warmup);
        if (iterations, warmup) != (suite.iterations, suite.warmup) {
            println!(
                "  {}: {iterations} measured + {warmup} warm-up per point per boot",
                w.kind()
            );
        }
    }
    let overrides = run.overrides_record();
    if !overrides.is_empty() {
        println!("overrides: {}", overrides.join(", "));
    }
    if let Some(shard) = run.shard_meta() {
        println!(
            "shard {} of {}: every variant of {}",
            shard.index,
            shard.count,
            shard.pieces.join("; ")
        );
    }
    let earlier = earlier_seconds_per_boot(reports, suite, &overrides);
    match &earlier {
        Some((per_boot, from)) => println!(
            "estimated time: {:.0} min of booting ({per_boot:.0} s per boot in {from}), plus kernel builds on a cold cache",
            per_boot * units.len() as f64 / 60.0
        ),
        None if suite.kernel_base == kernel::KernelBase::Tinyconfig => println!(
            "estimated time: unknown (no earlier complete run of this suite here); a minimal \
             kernel build not in the cache takes about 8 minutes on 2 idle cores"
        ),
        None => println!(
            "estimated time: unknown (no earlier complete run of this suite here); a kernel on \
             {} builds many times longer than a minimal one (docs/your-benchmarks.md has a \
             defconfig build's time)",
            suite.kernel_base.describe()
        ),
    }
    let earlier_run =
        earlier
            .as_ref()
            .map(|(per_boot, from)| crate::profile::dry_run::EarlierRun {
                seconds_per_boot: *per_boot,
                dir: Path::new(from),
            });
    for line in crate::profile::dry_run::describe(suite, earlier_run) {
        println!("{line}");
    }
    if let Some(model) = &suite.model {
        println!(
            "cycle model: every boot under the plugin's cache and branch model ({}), about 2-3x \
             a plain boot's wall time; each run also gets {} (docs/cycle-model.md)",
            model.geometry(),
            crate::cycle_model::METRICS
                .iter()
                .map(|(m, _)| *m)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let order_title = if suite.precision.is_some() {
        "order of the planned boots"
    } else {
        "order"
    };
    println!(
        "{order_title} ({:?} blocks, seed {}):",
        suite.order, suite.seed
    );
    for u in units {
        println!(
            "  {:>3}  {:<20} {:<7} boot {}",
            u.index,
            u.variant,
            format!("{} CPU{}", u.cpus, if u.cpus == 1 { "" } else { "s" }),
            u.boot
        );
    }
    for line in precision_rule(run) {
        println!("{line}");
    }
    let max = run.max_cpus();
    if max > host_cores {
        println!(
            "note: {max} vCPUs on a host with {host_cores} cores: fine under icount (the vCPUs \
             take turns on one host thread and guest time counts instructions); under wall \
             time oversubscribed vCPUs make timings meaningless, and the run is refused \
             without --allow-oversubscribe"
        );
    }
    println!(
        "timing: {} (icount shift {} when icount is used)",
        format!("{:?}", suite.timing).to_lowercase(),
        suite.icount_shift
    );
    if suite.accel != AccelChoice::Kvm {
        println!(
            "note: without working KVM the guests run under TCG (software emulation), several \
             times slower than on hardware. Under icount (the default there) guest time counts \
             executed instructions: a boot's figures repeat exactly whatever the host's load, \
             and they measure code-path length, not cache, memory or timing effects; under wall \
             time they are noisier than on hardware"
        );
    }
    Ok(())
}

/// What a run with a precision target does after its planned boots.
fn precision_rule(run: &Resolved) -> Vec<String> {
    let Some(p) = run.suite.precision else {
        return Vec::new();
    };
    let budget = match p.budget_s {
        Some(s) => format!(
            "no block starts that would end after {} of wall time from the first boot \
             (kernel builds and image preparation are not counted)",
            humantime::format_duration(std::time::Duration::from_secs(s))
        ),
        None => "no budget of time".to_string(),
    };
    vec![
        format!(
            "precision: then, while a point's 95% interval of the relative difference is wider \
             than ±{}% (or has fewer than {} boots a side), one more block (one boot of each \
             variant, order drawn from the seed) at its CPU count, the count nearest its target \
             first",
            p.percent,
            crate::stats::sequential::MIN_BOOTS
        ),
        format!(
            "  bounds: {budget}; at most {} boots in all",
            p.boot_cap(run.planned)
        ),
    ]
}
