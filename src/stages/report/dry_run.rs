//! What a run will do, as the plan shows it before the run starts (and
//! alone with `--dry-run`): `jobs::compare` computes and checks the plan
//! into a [`PlanSummary`]; this module only words it.

use crate::base::cycle_model::{ProfileNote, METRICS, WALL_TIME_FACTOR};
use crate::base::prereq::{HostPlan, HostStep};
use crate::record::{Recorded, SlotsReason, Warning};
use crate::stages::profile::dry_run::{
    EstimatedBoot, ProfilePlan, ProfileTotal, TimeoutRisk, SLOWDOWN,
};
use crate::stages::suite::{RunOrder, TimingChoice};

/// How the plan names a variant's role.
pub fn role(index: usize, variants: usize) -> String {
    match (index, variants) {
        (0, 2) => "without (baseline):".into(),
        (_, 2) => "with (candidate):  ".into(),
        (0, _) => "baseline:   ".into(),
        (i, _) => format!("candidate {i}:"),
    }
}

/// What a run will do, computed (and checked) before any of it is shown:
/// `jobs::compare` makes it, [`PlanSummary::render`] writes its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSummary {
    pub suite: String,
    pub suite_path: String,
    pub description: String,
    pub kernel_source: SourcePlan,
    pub kernel_base: String,
    /// The guest architecture the kernels are built for and boot as.
    pub arch: crate::base::arch::Arch,
    pub fragments_from: String,
    /// Each variant's kernel origin, when a variant has one of its own.
    pub origins: Vec<(String, String)>,
    pub variants: Vec<VariantPlan>,
    pub workloads: Vec<String>,
    /// What the command line's CPU counts leave out of the suite: a
    /// workload that runs at none of them, a count no workload runs at.
    pub left_out: Vec<String>,
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
    /// The profiled boots, when the suite profiles.
    pub profile: Option<ProfilePlan>,
    /// The cycle model, when the suite runs under it.
    pub model: Option<ModelPlan>,
    pub precision: bool,
    pub order: RunOrder,
    pub seed: u64,
    pub units: Vec<UnitLine>,
    /// What a run with a precision target does after its planned boots.
    pub precision_rule: Option<PrecisionPlan>,
    /// The most vCPUs of a guest and the host's cores, when it has fewer.
    pub oversubscribed: Option<(u32, u32)>,
    pub timing: TimingChoice,
    pub icount_shift: u32,
    /// Not KVM for sure: the guests may run under TCG.
    pub maybe_tcg: bool,
    /// Guests at once the run will likely boot (the estimate's), and how
    /// many under each timing it may get, and why.
    pub jobs: usize,
    pub slots: SlotsPlan,
    /// What boots of more than one vCPU under icount boot with, when it is
    /// markbench's own QEMU.
    pub smp_qemu: Option<SmpQemuPlan>,
    /// What this machine lacks of what the run needs, and how the run
    /// gives it before the first build.
    pub host: HostPlan,
    /// Each kernel and whether the cache holds it; `None` while the kernel
    /// source is not there to say.
    pub kernels_cached: Option<Vec<(String, bool)>>,
    /// What the run's builds take on disk, when it builds anything.
    pub disk: Option<Disk>,
}

/// The cycle model a run boots under: its caches' and predictors'
/// geometry, the calibrated profile of this CPU it takes its settings
/// from (else the defaults or the suite's own), and whether a timed boot
/// under it may outlast the suite's timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPlan {
    pub geometry: String,
    pub profile: Option<ProfileNote>,
    pub timeout: Option<TimeoutRisk>,
}

fn cpus_words(cpus: u32) -> String {
    format!("{cpus} CPU{}", if cpus == 1 { "" } else { "s" })
}

/// The warning that a boot under the cycle model would be stopped as hung.
pub fn timeout_line(risk: &TimeoutRisk) -> String {
    let what = match &risk.boot {
        EstimatedBoot::Timed => "a timed boot".to_string(),
        EstimatedBoot::Profiled { variant, cpus } => {
            format!("the profiled boot of {variant} on {}", cpus_words(*cpus))
        }
    };
    format!(
        "warning: {what} under the cycle model is estimated at {:.0} s, above the suite's \
         boot_timeout_s = {} s: such a boot would be stopped as hung; raise boot_timeout_s",
        risk.seconds, risk.boot_timeout_s
    )
}

/// The plan's lines about the profiled boots.
pub fn profile_lines(p: &ProfilePlan) -> Vec<String> {
    let mut lines = vec![format!(
        "{} profiled boots after the timed ones, one per variant per CPU count, with markbench's \
         TCG plugin (their runs count instructions by function and are not samples; they need \
         icount timing):",
        p.boots.len()
    )];
    for boot in &p.boots {
        let points: Vec<String> = boot
            .points
            .iter()
            .map(|pt| {
                format!(
                    "{} {} ({} measured + {} warm-up)",
                    pt.kind, pt.param, pt.measured, pt.warmup
                )
            })
            .collect();
        lines.push(format!(
            "  {} on {}: {}{}",
            boot.variant,
            cpus_words(boot.cpus),
            points.join(", "),
            boot.seconds
                .map_or(String::new(), |s| format!(", about {s:.0} s"))
        ));
    }
    let with_model = |adds_model: bool| {
        if adds_model {
            format!(", ×{WALL_TIME_FACTOR} for the cycle model, which it ran without")
        } else {
            String::new()
        }
    };
    lines.push(match &p.total {
        ProfileTotal::AsTheyTook {
            seconds,
            from,
            adds_model,
        } => format!(
            "estimated time of the profiled boots: {:.1} min (as they took in {}{})",
            seconds / 60.0,
            from.display(),
            with_model(*adds_model)
        ),
        ProfileTotal::FromTimedBoot {
            seconds,
            seconds_per_boot,
            from,
            adds_model,
        } => format!(
            "estimated time of the profiled boots: {:.1} min (×{SLOWDOWN} the {:.0} s of a timed \
             boot in {}: the plugin's slow-down{})",
            seconds / 60.0,
            seconds_per_boot,
            from.display(),
            with_model(*adds_model)
        ),
        ProfileTotal::UnderModel => format!(
            "estimated time of the profiled boots: about ×{:.1} a timed boot without the model \
             each (×{SLOWDOWN} the plugin's slow-down, ×{WALL_TIME_FACTOR} the cycle model's)",
            SLOWDOWN * WALL_TIME_FACTOR
        ),
        ProfileTotal::Unknown => format!(
            "estimated time of the profiled boots: about ×{SLOWDOWN} a timed boot each (the \
             plugin's slow-down)"
        ),
    });
    lines.extend(p.timeout.as_ref().map(timeout_line));
    lines
}

/// The plan's lines about the cycle model: what it adds, what it costs,
/// its settings, and whether a timed boot at that cost outlasts the
/// suite's timeout.
pub fn model_lines(m: &ModelPlan) -> Vec<String> {
    let mut lines = vec![format!(
        "cycle model: every boot under the plugin's cache and branch model ({}), up to ×{} a \
         plain boot's wall time; each run also gets {} (docs/cycle-model.md)",
        m.geometry,
        WALL_TIME_FACTOR,
        METRICS
            .iter()
            .map(|(m, _)| *m)
            .collect::<Vec<_>>()
            .join(", ")
    )];
    lines.push(match &m.profile {
        Some(p) => format!(
            "cycle model settings: the profile of the {} measured on {} at {} ({}); {}",
            p.cpu,
            p.host,
            p.measured,
            p.file,
            p.check.as_ref().map_or(
                "never checked against its CPU (scripts/cycle-model-check/check.py --native \
                 --profile FILE --record)"
                    .to_string(),
                |c| format!(
                    "checked against it at {}: {:.0}% off on geometric mean over {} programs",
                    c.checked,
                    c.error * 100.0,
                    c.patterns
                )
            )
        ),
        None => "cycle model settings: the generic core of the defaults or the suite's own \
                 (no calibrated profile of this CPU: `markbench calibrate` makes one)"
            .to_string(),
    });
    lines.extend(m.timeout.as_ref().map(timeout_line));
    lines
}

/// The kernel source a run builds from.
#[derive(Debug, Clone, PartialEq)]
pub enum SourcePlan {
    Tarball(String),
    Tree(String),
}

/// A precision target's rule: the half-width (percent) a point's interval
/// must reach on at least `min_boots` boots a side, and the run's bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct PrecisionPlan {
    pub percent: f64,
    pub min_boots: usize,
    /// No block starts that would end after this much wall time from the
    /// first boot.
    pub budget_s: Option<u64>,
    /// The most boots in all.
    pub boot_cap: usize,
}

/// How many guests boot at once under each timing the run may get, and
/// why (the slots' reasons); before the trial boots only the suite's
/// choices are known.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotsPlan {
    /// Under icount (TCG), when the run may count instructions.
    pub under_icount: Option<Recorded<SlotsReason>>,
    /// On the wall clock, when the run may time on it.
    pub on_wall: Option<Recorded<SlotsReason>>,
    /// What the likely slots warn of.
    pub warning: Option<Warning>,
}

/// markbench's own QEMU, which boots the guests of more than one vCPU
/// under icount.
#[derive(Debug, Clone, PartialEq)]
pub struct SmpQemuPlan {
    pub version: String,
    pub patches: usize,
    /// The suite's `smp_turn`: at most this many instructions a turn (0:
    /// to the next timer deadline).
    pub smp_turn: u32,
    /// Whether the cache holds it already (else it is built first).
    pub in_cache: bool,
}

impl SourcePlan {
    fn words(&self) -> String {
        match self {
            SourcePlan::Tarball(path) => format!("{path} (a release tarball)"),
            SourcePlan::Tree(path) => format!("{path} (a source tree)"),
        }
    }
}

impl PrecisionPlan {
    fn lines(&self) -> [String; 2] {
        let budget = match self.budget_s {
            Some(s) => format!(
                "no block starts that would end after {} of wall time from the first boot \
                 (kernel builds and image preparation are not counted)",
                humantime::format_duration(std::time::Duration::from_secs(s))
            ),
            None => "no budget of time".to_string(),
        };
        [
            format!(
                "precision: then, while a point's 95% interval of the relative difference is \
                 wider than ±{}% (or has fewer than {} boots a side), one more block (one boot \
                 of each variant, order drawn from the seed) at its CPU count, the count nearest \
                 its target first",
                self.percent, self.min_boots
            ),
            format!("  bounds: {budget}; at most {} boots in all", self.boot_cap),
        ]
    }
}

impl SlotsPlan {
    fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        match (&self.under_icount, &self.on_wall) {
            (Some(icount), Some(wall)) => lines.push(format!(
                "slots: under icount (TCG), {icount}; on the wall clock (KVM, or a QEMU that \
                 cannot count instructions), {wall}"
            )),
            (Some(reason), None) | (None, Some(reason)) => lines.push(format!("slots: {reason}")),
            (None, None) => {}
        }
        if let Some(warning) = &self.warning {
            lines.push(format!("warning: {warning}"));
        }
        lines
    }
}

impl SmpQemuPlan {
    fn line(&self) -> String {
        let state = if self.in_cache {
            "in the cache"
        } else {
            "built first (about 4 minutes on 2 cores, after the kernels)"
        };
        let turn = match self.smp_turn {
            0 => "turns to the next timer deadline".to_string(),
            n => format!("turns of at most {n} instructions"),
        };
        format!(
            "qemu: boots of more than one vCPU under icount use markbench's own QEMU {} + {} \
             patches ({turn}): {state}; 1-vCPU boots use the host's",
            self.version, self.patches
        )
    }
}

/// The disk a run's builds take in the cache and what it has free.
#[derive(Debug, Clone, PartialEq)]
pub struct Disk {
    /// Bytes, about.
    pub needed: u64,
    /// Bytes free on the cache's filesystem, when they could be read.
    pub free: Option<u64>,
    pub cache: String,
}

/// A variant as the plan shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantPlan {
    pub role: String,
    pub name: String,
    pub kernel: String,
    pub cmdline: String,
    /// Each fragment: file name, where it was found, short SHA-256.
    pub fragments: Vec<(String, String, String)>,
}

/// One planned boot.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitLine {
    pub index: usize,
    pub variant: String,
    pub cpus: u32,
    pub boot: u32,
}

/// How long the run will take.
#[derive(Debug, Clone, PartialEq)]
pub enum Estimate {
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

/// What the run installs before its first build, or where it cannot, the
/// one command that would.
fn render_host(host: &HostPlan, out: &mut String) {
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    for note in &host.notes {
        line(format!("note: {note}"));
    }
    if host.is_empty() {
        line("this machine: has every package and apt source the run needs".into());
        return;
    }
    if !host.can_install {
        line(format!(
            "this machine lacks: {}\n  the run stops before building anything; to install them, \
             run (as root or with sudo):\n    {}",
            host.missing.join(", "),
            host.command()
        ));
        return;
    }
    line(format!(
        "before building, the run installs what this machine lacks: {}",
        host.missing.join(", ")
    ));
    for step in &host.steps {
        line(match step {
            HostStep::AddSource { path, types } => {
                format!("  adds Debian's bookworm-backports ({types}) in {path}")
            }
            HostStep::Update => "  apt-get update".into(),
            HostStep::Install {
                packages,
                backports: false,
            } => format!("  apt-get install {}", packages.join(" ")),
            HostStep::Install {
                packages,
                backports: true,
            } => format!(
                "  apt-get install -t bookworm-backports {}",
                packages.join(" ")
            ),
        });
    }
}

/// How long a minimal kernel not in the cache takes to build here
/// (docs/measurements.md).
const MINIMAL_KERNEL_BUILD: &str = "a minimal kernel: 7 to 10 minutes on 2 cores";

impl PlanSummary {
    /// Which kernels the run builds and which the cache holds, and the
    /// disk the builds take.
    fn render_builds(&self, out: &mut String) {
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        if let Some(disk) = &self.disk {
            let gib = |bytes: u64| format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64);
            let free = match disk.free {
                Some(free) if free < disk.needed => format!(
                    "; warning: only {} free there: free some, or give the cache another place \
                     with MARKBENCH_CACHE=DIR",
                    gib(free)
                ),
                Some(free) => format!(", {} free", gib(free)),
                None => String::new(),
            };
            line(format!(
                "disk: the builds take about {} in {}{free}",
                gib(disk.needed),
                disk.cache
            ));
        }
        match &self.kernels_cached {
            None => line(format!(
                "kernels: each built first unless the cache holds it (known once the kernel \
                 source is installed; {MINIMAL_KERNEL_BUILD})"
            )),
            Some(kernels) => {
                let built = |cached: bool| -> Vec<&str> {
                    kernels
                        .iter()
                        .filter(|(_, c)| *c == cached)
                        .map(|(name, _)| name.as_str())
                        .collect()
                };
                let (in_cache, to_build) = (built(true), built(false));
                if !in_cache.is_empty() {
                    line(format!("kernels in the cache: {}", in_cache.join(", ")));
                }
                if !to_build.is_empty() {
                    let what = match self.kernel_base.as_str() {
                        "tinyconfig" => MINIMAL_KERNEL_BUILD.to_string(),
                        base => format!("on {base}, many times a minimal kernel's build"),
                    };
                    line(format!(
                        "kernels built first: {} ({what} each)",
                        to_build.join(", ")
                    ));
                }
            }
        }
    }

    /// The plan's lines, each ending in a newline.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_kernels(&mut out);
        render_host(&self.host, &mut out);
        self.render_builds(&mut out);
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
        line(format!("kernel source: {}", self.kernel_source.words()));
        if !self.arch.is_default() {
            line(format!(
                "guest architecture: {} (kernels cross-built with {}gcc, booted on {} -M {} \
                 -cpu {} under TCG)",
                self.arch,
                self.arch.cross_compile().unwrap_or_default(),
                self.arch.qemu_binary(),
                self.arch.machine().unwrap_or("default"),
                self.arch.guest_cpu()
            ));
        }
        line(format!(
            "kernel configuration: {} + {} + the variant's fragment",
            self.kernel_base,
            crate::guest::images::fragments::base_for(self.arch)
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
        for what in &self.left_out {
            line(format!("  not run: {what}"));
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
        let plugins = self.profile.iter().flat_map(profile_lines);
        for plugin_line in plugins.chain(self.model.iter().flat_map(model_lines)) {
            line(plugin_line);
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
        for rule in self.precision_rule.iter().flat_map(PrecisionPlan::lines) {
            line(rule);
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
        for slots in self.slots.lines() {
            line(slots);
        }
        if let Some(q) = &self.smp_qemu {
            line(q.line());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_says_whether_the_profile_was_checked_against_its_cpu() {
        let note = ProfileNote {
            cpu: "Intel(R) Xeon(R) Processor".into(),
            host: "vm".into(),
            measured: "2026-12-07T20:53:25Z".into(),
            file: "p.toml".into(),
            check: None,
        };
        let plan = |profile| ModelPlan {
            geometry: String::new(),
            profile: Some(profile),
            timeout: None,
        };
        let lines = model_lines(&plan(note.clone()));
        assert!(
            lines[1].contains("never checked against its CPU"),
            "{lines:?}"
        );
        let check: crate::base::cycle_model::ProfileCheck = toml::from_str(
            "error = 0.3449\npatterns = 13\nworst-pattern = \"sweep 32768\"\n\
             worst-ratio = 2.35\nchecked = \"2026-12-07T20:54:51Z\"\ncommand = \"c\"\n\
             commit = \"c954d3fa9d64\"\n",
        )
        .unwrap();
        let lines = model_lines(&plan(ProfileNote {
            check: Some(check),
            ..note
        }));
        assert!(
            lines[1].contains(
                "checked against it at 2026-12-07T20:54:51Z: 34% off on geometric mean over 13"
            ),
            "{lines:?}"
        );
    }

    /// A plan with every optional part: an own origin, a command line to
    /// quote, a workload of its own iterations, overrides, a shard, an
    /// earlier run's estimate, more vCPUs than cores and wall timing on KVM.
    fn full() -> PlanSummary {
        PlanSummary {
            suite: "s".into(),
            suite_path: "suites/s.toml".into(),
            description: "two kernels".into(),
            kernel_source: SourcePlan::Tree("/src/linux".into()),
            kernel_base: "tinyconfig".into(),
            arch: Default::default(),
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
            left_out: vec!["workload 2, ping-flood (--cpus 8 names none of its CPU counts)".into()],
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
            profile: None,
            model: None,
            precision: false,
            order: RunOrder::Shuffled,
            seed: 7,
            units: vec![UnitLine {
                index: 0,
                variant: "a".into(),
                cpus: 8,
                boot: 0,
            }],
            precision_rule: None,
            oversubscribed: Some((8, 2)),
            timing: TimingChoice::Wall,
            icount_shift: 4,
            maybe_tcg: false,
            jobs: 1,
            slots: SlotsPlan {
                under_icount: None,
                on_wall: Some(Recorded::Data(SlotsReason::WallClock)),
                warning: None,
            },
            smp_qemu: None,
            host: HostPlan {
                can_install: true,
                debian_like: true,
                ..HostPlan::default()
            },
            kernels_cached: Some(vec![("k-a".into(), true), ("k-b".into(), false)]),
            disk: Some(Disk {
                needed: 2 << 30,
                free: Some(80 << 30),
                cache: "/cache".into(),
            }),
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
             this machine: has every package and apt source the run needs\n\
             disk: the builds take about 2.0 GiB in /cache, 80.0 GiB free\n\
             kernels in the cache: k-a\n\
             kernels built first: k-b (a minimal kernel: 7 to 10 minutes on 2 cores each)\n\
             \x20 workload hackbench × 5 runs\n\
             \x20 not run: workload 2, ping-flood (--cpus 8 names none of its CPU counts)\n\
             \x20 objects sized in each build: kernel/sched/core.o\n\
             4 boots (2 per variant × 1 CPU count), 24 timed runs in all (5 measured + 1 warm-up per point per boot)\n\
             \x20 ping-flood: 7 measured + 0 warm-up per point per boot\n\
             overrides: boots=2\n\
             shard 0 of 2: every variant of hackbench@1\n\
             estimated time: 6 min of booting (90 s per boot in reports/x), plus kernel builds on a cold cache\n\
             order (Shuffled blocks, seed 7):\n\
             \x20   0  a                    8 CPUs  boot 0\n\
             note: 8 vCPUs on a host with 2 cores: fine under icount (the vCPUs take turns on one \
             host thread and guest time counts instructions); under wall time oversubscribed vCPUs \
             make timings meaningless, and the run is refused without --allow-oversubscribe\n\
             timing: wall (icount shift 4 when icount is used)\n\
             slots: one guest at a time: timing is on the wall clock, where guests beside each \
             other disturb each other's time\n";
        assert_eq!(text, expected);
        // Side by side, the boots share the estimate's time.
        let two = PlanSummary { jobs: 2, ..full() }.render();
        let arm64 = PlanSummary {
            arch: crate::base::arch::Arch::Arm64,
            ..full()
        }
        .render();
        assert!(
            arm64.contains(
                "guest architecture: arm64 (kernels cross-built with aarch64-linux-gnu-gcc, \
                 booted on qemu-system-aarch64 -M virt -cpu neoverse-n1 under TCG)\n\
                 kernel configuration: tinyconfig + base-arm64.config + the variant's fragment"
            ),
            "{arm64}"
        );
        assert!(!full().render().contains("guest architecture"));
        assert!(
            two.contains(
                "estimated time: 3 min of booting (90 s per boot in reports/x, 2 at once)"
            ),
            "{two}"
        );
    }

    #[test]
    fn what_the_machine_lacks_is_shown_before_the_work_with_how_it_is_given() {
        let lacking = HostPlan {
            steps: vec![
                HostStep::AddSource {
                    path: "/etc/apt/sources.list.d/b.sources",
                    types: "deb-src",
                },
                HostStep::Update,
                HostStep::Install {
                    packages: vec!["ninja-build"],
                    backports: false,
                },
            ],
            missing: vec!["ninja", "a deb-src entry"],
            notes: Vec::new(),
            can_install: true,
            debian_like: true,
        };
        let text = PlanSummary {
            host: lacking.clone(),
            ..full()
        }
        .render();
        let first_work = text.find("  workload").unwrap();
        let installs = text
            .find(
                "before building, the run installs what this machine lacks: ninja, a deb-src entry\n\
                 \x20 adds Debian's bookworm-backports (deb-src) in /etc/apt/sources.list.d/b.sources\n\
                 \x20 apt-get update\n\
                 \x20 apt-get install ninja-build\n",
            )
            .unwrap_or_else(|| panic!("{text}"));
        assert!(installs < first_work);
        let refused = PlanSummary {
            host: HostPlan {
                can_install: false,
                ..lacking.clone()
            },
            ..full()
        }
        .render();
        assert!(
            refused.contains(&format!(
                "this machine lacks: ninja, a deb-src entry\n  the run stops before building \
                 anything; to install them, run (as root or with sudo):\n    {}\n",
                lacking.command()
            )),
            "{refused}"
        );
    }

    #[test]
    fn a_cache_without_room_for_the_builds_is_warned_of() {
        let plan = PlanSummary {
            disk: Some(Disk {
                needed: 5 << 30,
                free: Some(1 << 30),
                cache: "/cache".into(),
            }),
            ..full()
        };
        assert!(plan.render().contains(
            "disk: the builds take about 5.0 GiB in /cache; warning: only 1.0 GiB free there: \
             free some, or give the cache another place with MARKBENCH_CACHE=DIR\n"
        ));
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

/// The profiled boots' and the cycle model's lines, from the plans the
/// profile stage makes of a suite.
#[cfg(test)]
mod profiled_boots {
    use super::*;
    use crate::stages::profile::boot::units;
    use crate::stages::profile::dry_run::{plan, timeout_risk, EarlierRun};
    use crate::stages::profile::store::{Manifest, ProfileBoot};
    use crate::stages::suite::Suite;
    use std::path::Path;

    fn describe(suite: &Suite, earlier: Option<EarlierRun>) -> Vec<String> {
        plan(suite, earlier).map_or_else(Vec::new, |p| profile_lines(&p))
    }

    fn timeout_warning(suite: &Suite, seconds: f64) -> Option<String> {
        timeout_risk(suite, EstimatedBoot::Timed, seconds).map(|r| timeout_line(&r))
    }

    fn suite(profile: bool) -> Suite {
        let text = crate::stages::suite::tests::GOOD.replace("cpus = [2]", "cpus = [1, 2]");
        let text = if profile {
            format!("profile = true\n{text}")
        } else {
            text
        };
        Suite::parse(
            Path::new("t.toml"),
            &text,
            &crate::stages::suite::tests::lookup(),
        )
        .unwrap()
    }

    #[test]
    fn each_profiled_boot_is_listed_with_its_points_and_an_estimate() {
        assert!(describe(&suite(false), None).is_empty());

        let s = suite(true);
        let lines = describe(&s, None);
        assert!(lines[0].starts_with("4 profiled boots"), "{lines:?}");
        let boots: Vec<&String> = lines.iter().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(boots.len(), 4, "{lines:?}");
        for (variant, cpus) in [("off", "1 CPU:"), ("on", "1 CPU:"), ("off", "2 CPUs:")] {
            let line = format!("  {variant} on {cpus}");
            assert!(
                boots.iter().any(|l| l.starts_with(&line)),
                "{line} in {lines:?}"
            );
        }
        // GOOD: hackbench 2 and 4, 3 measured runs + 1 warm-up each.
        assert!(
            boots[0].contains("hackbench 2 (3 measured + 1 warm-up), hackbench 4"),
            "{lines:?}"
        );
        assert!(lines.last().unwrap().contains("about ×1.2 a timed boot"));

        let tmp = tempfile::tempdir().unwrap();
        let earlier = EarlierRun {
            seconds_per_boot: 50.0,
            dir: tmp.path(),
            under_model: false,
        };
        let lines = describe(&s, Some(earlier));
        assert!(lines[1].ends_with(", about 60 s"), "{lines:?}");
        assert!(
            lines.last().unwrap().contains("4.0 min (×1.2 the 50 s"),
            "{lines:?}"
        );

        // The earlier run's own profiled boots are better evidence.
        let boots: Vec<ProfileBoot> = units(&s)
            .iter()
            .map(|u| ProfileBoot {
                variant: u.variant.clone(),
                side: u.side,
                cpus: u.cpus,
                guest_seed: None,
                end: crate::record::BootEnd::Completed,
                wall_s: 30.0 * u.cpus as f64,
                console_log: String::new(),
                file: String::new(),
                model_file: None,
                points: Vec::new(),
            })
            .collect();
        Manifest {
            plugin: "k".into(),
            icount_shift: 4,
            boots,
        }
        .write(tmp.path())
        .unwrap();
        let lines = describe(&s, Some(earlier));
        let two = lines.iter().find(|l| l.contains("on 2 CPUs")).unwrap();
        assert!(two.ends_with(", about 60 s"), "{lines:?}");
        let one = lines.iter().find(|l| l.contains("on 1 CPU:")).unwrap();
        assert!(one.ends_with(", about 30 s"), "{lines:?}");
        assert!(
            lines.last().unwrap().contains("3.0 min (as they took in"),
            "{lines:?}"
        );
    }

    #[test]
    fn under_the_model_a_profiled_boot_costs_the_models_factor_too_and_a_long_one_is_warned_of() {
        let text = format!(
            "model = \"cycles\"\nboot_timeout_s = 200\n{}",
            crate::stages::suite::tests::GOOD
        );
        let model = Suite::parse(
            Path::new("t.toml"),
            &text,
            &crate::stages::suite::tests::lookup(),
        )
        .unwrap();
        assert!(model.model.is_some());
        let factor = crate::base::cycle_model::WALL_TIME_FACTOR;
        // No earlier run: the factors, no figure to warn of.
        let lines = describe(&suite(true), None);
        assert!(
            lines.iter().all(|l| !l.contains("cycle model")),
            "{lines:?}"
        );
        let profiled = Suite {
            profile: true,
            ..model.clone()
        };
        let lines = describe(&profiled, None);
        let last = lines.last().unwrap();
        assert!(
            last.contains(&format!(
                "about ×{:.1} a timed boot without the model",
                SLOWDOWN * factor
            )),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.starts_with("warning")), "{lines:?}");

        // An earlier run of 30 s boots without the model: ×factor ×SLOWDOWN.
        let tmp = tempfile::tempdir().unwrap();
        let without = EarlierRun {
            seconds_per_boot: 30.0,
            dir: tmp.path(),
            under_model: false,
        };
        let estimate = 30.0 * factor * SLOWDOWN;
        assert!(estimate < 200.0);
        let lines = describe(&profiled, Some(without));
        assert!(
            lines[1].ends_with(&format!(", about {estimate:.0} s")),
            "{lines:?}"
        );
        assert!(
            lines.last().unwrap().contains(&format!(
                "×{factor} for the cycle model, which it ran without"
            )),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.starts_with("warning")), "{lines:?}");
        assert_eq!(without.timed_boot_s(&profiled), 30.0 * factor);
        // An earlier run under the model already paid its cost.
        let under = EarlierRun {
            under_model: true,
            ..without
        };
        assert_eq!(under.timed_boot_s(&profiled), 30.0);
        let lines = describe(&profiled, Some(under));
        assert!(
            lines[1].ends_with(&format!(", about {:.0} s", 30.0 * SLOWDOWN)),
            "{lines:?}"
        );

        // Boots of 50 s: a profiled one under the model outlasts 200 s.
        let longer = EarlierRun {
            seconds_per_boot: 50.0,
            ..without
        };
        let lines = describe(&profiled, Some(longer));
        let warning = lines.last().unwrap();
        assert!(
            warning.starts_with(&format!(
                "warning: the profiled boot of off on 2 CPUs under the cycle model is estimated \
                 at {:.0} s, above the suite's boot_timeout_s = 200 s",
                50.0 * factor * SLOWDOWN
            )),
            "{lines:?}"
        );
        // Without the model no such warning: the timeout is the suite's own business.
        let plain = describe(&suite(true), Some(longer));
        assert!(!plain.iter().any(|l| l.starts_with("warning")), "{plain:?}");
        assert_eq!(timeout_warning(&suite(true), 1e6), None);
        assert!(timeout_warning(&model, 201.0)
            .unwrap()
            .contains("a timed boot under the cycle model is estimated at 201 s"));
        assert_eq!(timeout_warning(&model, 200.0), None);
    }
}
