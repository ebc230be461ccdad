//! What a run will do, printed before it starts (and alone with `--dry-run`).

use super::Resolved;
use crate::guest::images::kernel;
use crate::stages::suite::{AccelChoice, RunOrder, Suite, TimingChoice};
use anyhow::Result;
use std::path::Path;

/// Seconds per boot of the newest complete earlier run of this suite with
/// the same overrides, if any.
fn earlier_seconds_per_boot(
    reports: &Path,
    suite: &Suite,
    overrides: &crate::record::Overrides,
) -> Option<(f64, String)> {
    let (runs, skipped) = crate::record::scan_runs(reports);
    for s in &skipped {
        crate::base::message::warning(s);
    }
    runs.into_iter().find_map(|(dir, meta)| {
        (meta.complete
            && meta.suite_title() == suite.name
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

/// How the plan names a variant's role.
fn role(index: usize, variants: usize) -> String {
    match (index, variants) {
        (0, 2) => "without (baseline):".into(),
        (_, 2) => "with (candidate):  ".into(),
        (0, _) => "baseline:   ".into(),
        (i, _) => format!("candidate {i}:"),
    }
}

/// What a run will do, computed (and checked) before any of it is shown:
/// [`plan_summary`] makes it, [`PlanSummary::render`] writes its lines.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PlanSummary {
    pub suite: String,
    pub suite_path: String,
    pub description: String,
    pub kernel_source: String,
    pub kernel_base: String,
    pub fragments_from: String,
    /// Each variant's kernel origin, when a variant has one of its own.
    pub origins: Vec<(String, String)>,
    pub variants: Vec<VariantPlan>,
    pub workloads: Vec<String>,
    pub objects: Vec<String>,
    pub boots: usize,
    pub boots_per_variant: u32,
    pub cpu_counts: usize,
    pub timed_runs: u32,
    pub iterations: u32,
    pub warmup: u32,
    /// The workloads whose iterations differ from the suite's: kind,
    /// measured, warm-up.
    pub own_iterations: Vec<(String, u32, u32)>,
    pub overrides: Vec<String>,
    /// Shard index, count and its pieces.
    pub shard: Option<(u32, u32, Vec<String>)>,
    pub estimate: Estimate,
    pub plugin_lines: Vec<String>,
    pub precision: bool,
    pub order: RunOrder,
    pub seed: u64,
    pub units: Vec<UnitLine>,
    pub precision_rule: Vec<String>,
    /// The most vCPUs of a guest and the host's cores, when it has fewer.
    pub oversubscribed: Option<(u32, u32)>,
    pub timing: TimingChoice,
    pub icount_shift: u32,
    /// Not KVM for sure: the guests may run under TCG.
    pub maybe_tcg: bool,
    /// Guests at once the run will likely boot (the estimate's), and the
    /// lines that say how many under each timing and why.
    pub jobs: usize,
    pub slots: Vec<String>,
    /// What boots of more than one vCPU under icount boot with, when it is
    /// markbench's own QEMU.
    pub smp_qemu: Option<String>,
}

/// A variant as the plan shows it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct VariantPlan {
    pub role: String,
    pub name: String,
    pub kernel: String,
    pub cmdline: String,
    /// Each fragment: file name, where it was found, short SHA-256.
    pub fragments: Vec<(String, String, String)>,
}

/// One planned boot.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct UnitLine {
    pub index: usize,
    pub variant: String,
    pub cpus: u32,
    pub boot: u32,
}

/// How long the run will take.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Estimate {
    /// Seconds per boot in an earlier complete run (named) of the suite,
    /// and what this run multiplies them by (the cycle model's cost where
    /// the earlier run ran without it, else 1).
    Earlier {
        seconds_per_boot: f64,
        from: String,
        model_factor: f64,
    },
    /// No earlier run; the kernel base is `tinyconfig`.
    UnknownMinimal,
    /// No earlier run; the kernel base described.
    Unknown { kernel_base: String },
}

/// The summary of `run`'s plan. Checks what a run would refuse before
/// building: every patch applies (on a scratch copy), every fragment parses.
pub(super) fn plan_summary(run: &Resolved, reports: &Path) -> Result<PlanSummary> {
    let suite = &run.suite;
    let own_origins = suite
        .variants
        .iter()
        .any(|v| v.source.is_some() || v.rev.is_some() || !v.patches.is_empty());
    let origins = if own_origins {
        // Resolving checks every patch on a scratch copy: one that does not
        // apply fails the dry run as it would fail the run, before a build.
        let origins = crate::stages::run_images::resolve_origins(suite, &run.source)?;
        suite
            .variants
            .iter()
            .zip(&origins)
            .map(|(v, origin)| (v.name.clone(), origin.describe()))
            .collect()
    } else {
        Vec::new()
    };
    let mut variants = Vec::new();
    for (i, v) in suite.variants.iter().enumerate() {
        let mut fragments = Vec::new();
        for f in suite.fragments.kernel(&v.kernel)? {
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
    let overrides = run.overrides.describe();
    let earlier = earlier_seconds_per_boot(reports, suite, &run.overrides);
    let earlier_run =
        earlier.as_ref().map(
            |(per_boot, from)| crate::stages::profile::dry_run::EarlierRun {
                seconds_per_boot: *per_boot,
                dir: Path::new(from),
                under_model: crate::base::cycle_model::CycleModel::read(Path::new(from))
                    .is_ok_and(|m| m.is_some()),
            },
        );
    let mut plugin_lines = crate::stages::profile::dry_run::describe(suite, earlier_run);
    if let Some(model) = &suite.model {
        plugin_lines.extend(model_lines(suite, model, earlier_run));
    }
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
    let host_cores = crate::base::host::cores() as u32;
    let max = run.max_cpus();
    let (jobs, slots) = slot_lines(run);
    Ok(PlanSummary {
        suite: suite.name.clone(),
        suite_path: suite.describe_path(),
        description: suite.description.clone(),
        kernel_source: match &run.source {
            kernel::KernelSource::Tarball(path) => {
                format!("{} (a release tarball)", path.display())
            }
            kernel::KernelSource::Tree(path) => format!("{} (a source tree)", path.display()),
        },
        kernel_base: suite.kernel_base.describe(),
        fragments_from: suite.fragments.describe(),
        origins,
        variants,
        workloads: suite
            .workloads
            .iter()
            .map(|w| w.describe(suite.iterations, suite.warmup))
            .collect(),
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
        own_iterations: suite
            .workloads
            .iter()
            .filter_map(|w| {
                let (iterations, warmup) = w.iterations_in(suite.iterations, suite.warmup);
                ((iterations, warmup) != (suite.iterations, suite.warmup))
                    .then(|| (w.kind().to_string(), iterations, warmup))
            })
            .collect(),
        overrides,
        shard: run
            .shard_meta()
            .map(|shard| (shard.index, shard.count, shard.pieces)),
        estimate,
        plugin_lines,
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
        smp_qemu: smp_qemu_line(run, max),
    })
}

/// The dry run's lines about the cycle model: what it adds, what it costs,
/// and whether a timed boot at that cost outlasts the suite's timeout.
fn model_lines(
    suite: &Suite,
    model: &crate::base::cycle_model::CycleModel,
    earlier: Option<crate::stages::profile::dry_run::EarlierRun>,
) -> Vec<String> {
    let mut lines = vec![format!(
        "cycle model: every boot under the plugin's cache and branch model ({}), up to ×{} a \
         plain boot's wall time; each run also gets {} (docs/cycle-model.md)",
        model.geometry(),
        crate::base::cycle_model::WALL_TIME_FACTOR,
        crate::base::cycle_model::METRICS
            .iter()
            .map(|(m, _)| *m)
            .collect::<Vec<_>>()
            .join(", ")
    )];
    if let Some(e) = earlier {
        lines.extend(crate::stages::profile::dry_run::timeout_warning(
            suite,
            "a timed boot",
            e.timed_boot_s(suite),
        ));
    }
    lines
}

/// Says that SMP boots under icount use markbench's own QEMU, and whether
/// it is built or still to build.
fn smp_qemu_line(run: &Resolved, max_cpus: u32) -> Option<String> {
    use crate::guest::images::qemu_build;
    let may_count = run.suite.timing != TimingChoice::Wall && run.suite.accel != AccelChoice::Kvm;
    if max_cpus < 2 || !may_count || run.qemu.is_some() {
        return None;
    }
    let key = qemu_build::build_key();
    let root = crate::guest::images::Cache::here().qemu_builds();
    let state = if qemu_build::entry_dir(&root, &key)
        .join(qemu_build::BINARY)
        .is_file()
    {
        "in the cache".to_string()
    } else {
        "built first (about 10 minutes on 2 cores; `markbench setup` installs what it needs)"
            .to_string()
    };
    let turn = match run.suite.smp_turn {
        0 => "turns to the next timer deadline".to_string(),
        n => format!("turns of at most {n} instructions"),
    };
    Some(format!(
        "qemu: boots of more than one vCPU under icount use markbench's own QEMU {} + {} \
         patches ({turn}): {state}; 1-vCPU boots use the host's",
        qemu_build::VERSION,
        qemu_build::PATCHES.len()
    ))
}

/// How many guests the run boots at once under the timing it may get, and
/// why: icount (TCG) and the wall clock (KVM, or a QEMU that cannot count
/// instructions) decide differently, and before the trial boots only the
/// suite's choices are known.
fn slot_lines(run: &Resolved) -> (usize, Vec<String>) {
    use crate::stages::slots::{decide, HostOffer};
    let host = HostOffer::here();
    let memory = run.suite.memory_mib;
    let icount = decide(run.jobs, true, memory, &host);
    let wall = decide(run.jobs, false, memory, &host);
    let may_count = run.suite.timing != TimingChoice::Wall && run.suite.accel != AccelChoice::Kvm;
    let may_wall = run.suite.timing != TimingChoice::Icount;
    let mut lines = Vec::new();
    match (may_count, may_wall) {
        (true, false) => lines.push(format!("slots: {}", icount.reason)),
        (false, _) => lines.push(format!("slots: {}", wall.reason)),
        (true, true) => lines.push(format!(
            "slots: under icount (TCG), {}; on the wall clock (KVM, or a QEMU that cannot count \
             instructions), {}",
            icount.reason, wall.reason
        )),
    }
    let likely = if may_count { &icount } else { &wall };
    if let Some(warning) = likely
        .warning
        .as_ref()
        .or(wall.warning.as_ref().filter(|_| may_wall))
    {
        lines.push(format!("warning: {warning}"));
    }
    (likely.jobs, lines)
}

/// A suite's kernel command line in double quotes, `"` and `\` escaped,
/// as a TOML basic string writes it (a command line is one line).
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The name of a block order as the plan shows it.
fn order_name(order: RunOrder) -> &'static str {
    match order {
        RunOrder::Abba => "Abba",
        RunOrder::Shuffled => "Shuffled",
    }
}

/// The name of a timing choice, as the suite file writes it.
fn timing_name(timing: TimingChoice) -> &'static str {
    match timing {
        TimingChoice::Auto => "auto",
        TimingChoice::Wall => "wall",
        TimingChoice::Icount => "icount",
    }
}

impl PlanSummary {
    /// The plan's lines, each ending in a newline.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_kernels(&mut out);
        self.render_work(&mut out);
        self.render_order(&mut out);
        self.render_notes(&mut out);
        out
    }

    /// The suite, the kernel source and configuration, each variant's kernel.
    fn render_kernels(&self, out: &mut String) {
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        line(format!("suite {} ({})", self.suite, self.suite_path));
        if !self.description.is_empty() {
            line(format!("  {}", self.description));
        }
        line(format!("kernel source: {}", self.kernel_source));
        line(format!(
            "kernel configuration: {} + base.config + the variant's fragment",
            self.kernel_base
        ));
        line(format!("kernel fragments from: {}", self.fragments_from));
        for (variant, origin) in &self.origins {
            line(format!("  kernel of {variant}: {origin}"));
        }
        for v in &self.variants {
            line(format!(
                "  {} {}: kernel {}{}",
                v.role,
                v.name,
                v.kernel,
                if v.cmdline.is_empty() {
                    String::new()
                } else {
                    format!(", cmdline {}", quoted(&v.cmdline))
                }
            ));
            for (file, source, sha256) in &v.fragments {
                line(format!("      {file:<24} {source} (sha256 {sha256})"));
            }
        }
    }

    /// The workloads, how many boots and runs, overrides, shard, estimate.
    fn render_work(&self, out: &mut String) {
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        for w in &self.workloads {
            line(format!("  workload {w}"));
        }
        if !self.objects.is_empty() {
            line(format!(
                "  objects sized in each build: {}",
                self.objects.join(", ")
            ));
        }
        line(format!(
            "{} boots ({} per variant × {} CPU count{}), {} timed runs in all ({} measured + {} warm-up per point per boot)",
            self.boots,
            self.boots_per_variant,
            self.cpu_counts,
            if self.cpu_counts == 1 { "" } else { "s" },
            self.timed_runs,
            self.iterations,
            self.warmup
        ));
        for (kind, iterations, warmup) in &self.own_iterations {
            line(format!(
                "  {kind}: {iterations} measured + {warmup} warm-up per point per boot"
            ));
        }
        if !self.overrides.is_empty() {
            line(format!("overrides: {}", self.overrides.join(", ")));
        }
        if let Some((index, count, pieces)) = &self.shard {
            line(format!(
                "shard {index} of {count}: every variant of {}",
                pieces.join("; ")
            ));
        }
        line(match &self.estimate {
            Estimate::Earlier {
                seconds_per_boot,
                from,
                model_factor,
            } => format!(
                "estimated time: {:.0} min of booting ({seconds_per_boot:.0} s per boot in {from}{}{}), plus kernel builds on a cold cache",
                seconds_per_boot * model_factor * self.boots.div_ceil(self.jobs.max(1)) as f64
                    / 60.0,
                if *model_factor > 1.0 {
                    format!(", ×{model_factor} for the cycle model it ran without")
                } else {
                    String::new()
                },
                if self.jobs > 1 {
                    format!(", {} at once", self.jobs)
                } else {
                    String::new()
                }
            ),
            Estimate::UnknownMinimal => "estimated time: unknown (no earlier complete run of \
                 this suite here); a minimal kernel build not in the cache takes about 8 \
                 minutes on 2 idle cores"
                .to_string(),
            Estimate::Unknown { kernel_base } => format!(
                "estimated time: unknown (no earlier complete run of this suite here); a kernel on \
                 {kernel_base} builds many times longer than a minimal one (docs/your-benchmarks.md has a \
                 defconfig build's time)"
            ),
        });
        for profile_line in &self.plugin_lines {
            line(profile_line.clone());
        }
    }

    /// The order of the boots and what a precision target adds after them.
    fn render_order(&self, out: &mut String) {
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        let order_title = if self.precision {
            "order of the planned boots"
        } else {
            "order"
        };
        line(format!(
            "{order_title} ({} blocks, seed {}):",
            order_name(self.order),
            self.seed
        ));
        for u in &self.units {
            line(format!(
                "  {:>3}  {:<20} {:<7} boot {}",
                u.index,
                u.variant,
                format!("{} CPU{}", u.cpus, if u.cpus == 1 { "" } else { "s" }),
                u.boot
            ));
        }
        for rule in &self.precision_rule {
            line(rule.clone());
        }
    }

    /// Oversubscription, timing, and what TCG means for the figures.
    fn render_notes(&self, out: &mut String) {
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        if let Some((max, host_cores)) = self.oversubscribed {
            line(format!(
                "note: {max} vCPUs on a host with {host_cores} cores: fine under icount (the vCPUs \
                 take turns on one host thread and guest time counts instructions); under wall \
                 time oversubscribed vCPUs make timings meaningless, and the run is refused \
                 without --allow-oversubscribe"
            ));
        }
        line(format!(
            "timing: {} (icount shift {} when icount is used)",
            timing_name(self.timing),
            self.icount_shift
        ));
        for slots in &self.slots {
            line(slots.clone());
        }
        if let Some(q) = &self.smp_qemu {
            line(q.clone());
        }
        if self.maybe_tcg {
            line(
                "note: without working KVM the guests run under TCG (software emulation), several \
                 times slower than on hardware. Under icount (the default there) guest time counts \
                 executed instructions: a boot's figures repeat exactly whatever the host's load, \
                 and they measure code-path length, not cache, memory or timing effects; under wall \
                 time they are noisier than on hardware"
                    .to_string(),
            );
        }
    }
}

/// Prints what `run` will do (see [`plan_summary`]).
pub(super) fn print_plan(run: &Resolved, reports: &Path) -> Result<()> {
    print!("{}", plan_summary(run, reports)?.render());
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
            crate::base::stats::sequential::MIN_BOOTS
        ),
        format!(
            "  bounds: {budget}; at most {} boots in all",
            p.boot_cap(run.planned)
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan with every optional part: an own origin, a command line to
    /// quote, a workload of its own iterations, overrides, a shard, an
    /// earlier run's estimate, more vCPUs than cores and wall timing on KVM.
    fn full() -> PlanSummary {
        PlanSummary {
            suite: "s".into(),
            suite_path: "suites/s.toml".into(),
            description: "two kernels".into(),
            kernel_source: "/src/linux (a source tree)".into(),
            kernel_base: "tinyconfig".into(),
            fragments_from: "vm-images".into(),
            origins: vec![("b".into(), "the tree at abc".into())],
            variants: vec![
                VariantPlan {
                    role: role(0, 2),
                    name: "a".into(),
                    kernel: "k-a".into(),
                    cmdline: String::new(),
                    fragments: vec![(
                        "base.config".into(),
                        "vm-images/base.config".into(),
                        "0123456789abcdef".into(),
                    )],
                },
                VariantPlan {
                    role: role(1, 2),
                    name: "b".into(),
                    kernel: "k-b".into(),
                    cmdline: "quiet x=\"1\"\tq='2'".into(),
                    fragments: Vec::new(),
                },
            ],
            workloads: vec!["hackbench × 5 runs".into()],
            objects: vec!["kernel/sched/core.o".into()],
            boots: 4,
            boots_per_variant: 2,
            cpu_counts: 1,
            timed_runs: 24,
            iterations: 5,
            warmup: 1,
            own_iterations: vec![("ping-flood".into(), 7, 0)],
            overrides: vec!["boots=2".into()],
            shard: Some((0, 2, vec!["hackbench@1".into()])),
            estimate: Estimate::Earlier {
                seconds_per_boot: 90.0,
                from: "reports/x".into(),
                model_factor: 1.0,
            },
            plugin_lines: vec!["2 profiled boots".into()],
            precision: false,
            order: RunOrder::Shuffled,
            seed: 7,
            units: vec![UnitLine {
                index: 0,
                variant: "a".into(),
                cpus: 8,
                boot: 0,
            }],
            precision_rule: Vec::new(),
            oversubscribed: Some((8, 2)),
            timing: TimingChoice::Wall,
            icount_shift: 4,
            maybe_tcg: false,
            jobs: 1,
            slots: vec!["slots: one at a time".into()],
            smp_qemu: None,
        }
    }

    #[test]
    fn the_plan_renders_every_part_in_its_words() {
        let text = full().render();
        let expected = "suite s (suites/s.toml)\n  two kernels\n\
             kernel source: /src/linux (a source tree)\n\
             kernel configuration: tinyconfig + base.config + the variant's fragment\n\
             kernel fragments from: vm-images\n\
             \x20 kernel of b: the tree at abc\n\
             \x20 without (baseline): a: kernel k-a\n\
             \x20     base.config              vm-images/base.config (sha256 0123456789abcdef)\n\
             \x20 with (candidate):   b: kernel k-b, cmdline \"quiet x=\\\"1\\\"\\tq='2'\"\n\
             \x20 workload hackbench × 5 runs\n\
             \x20 objects sized in each build: kernel/sched/core.o\n\
             4 boots (2 per variant × 1 CPU count), 24 timed runs in all (5 measured + 1 warm-up per point per boot)\n\
             \x20 ping-flood: 7 measured + 0 warm-up per point per boot\n\
             overrides: boots=2\n\
             shard 0 of 2: every variant of hackbench@1\n\
             estimated time: 6 min of booting (90 s per boot in reports/x), plus kernel builds on a cold cache\n\
             2 profiled boots\n\
             order (Shuffled blocks, seed 7):\n\
             \x20   0  a                    8 CPUs  boot 0\n\
             note: 8 vCPUs on a host with 2 cores: fine under icount (the vCPUs take turns on one \
             host thread and guest time counts instructions); under wall time oversubscribed vCPUs \
             make timings meaningless, and the run is refused without --allow-oversubscribe\n\
             timing: wall (icount shift 4 when icount is used)\n\
             slots: one at a time\n";
        assert_eq!(text, expected);
        // Side by side, the boots share the estimate's time.
        let two = PlanSummary { jobs: 2, ..full() }.render();
        assert!(
            two.contains(
                "estimated time: 3 min of booting (90 s per boot in reports/x, 2 at once)"
            ),
            "{two}"
        );
    }

    #[test]
    fn a_command_line_is_quoted_as_debug_formatting_quoted_it() {
        for cmdline in ["quiet", "a=\"b c\"", "x\\y\tz", "q='1' ü"] {
            assert_eq!(quoted(cmdline), format!("{cmdline:?}"));
        }
    }

    #[test]
    fn the_unknown_estimates_name_the_kernel_base() {
        let mut plan = full();
        plan.estimate = Estimate::UnknownMinimal;
        assert!(plan.render().contains(
            "estimated time: unknown (no earlier complete run of this suite here); a minimal \
             kernel build not in the cache takes about 8 minutes on 2 idle cores\n"
        ));
        plan.estimate = Estimate::Unknown {
            kernel_base: "defconfig".into(),
        };
        assert!(plan
            .render()
            .contains("a kernel on defconfig builds many times longer than a minimal one"));
    }
}
