//! The command line: parsing (clap) into typed values, and the dispatch of
//! each command to its handler in [`crate::commands`], which does the rest.

use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::commands;
use crate::jobs::compare::Options;
use crate::record::{Overrides, ShardSel};
use crate::stages::report;
use crate::stages::suite::{AccelChoice, TimingChoice};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "markbench",
    version,
    about = "What does this kernel change cost? Builds two kernels, boots each under QEMU, \
             runs macro-benchmarks inside them and writes a report comparing the two."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build both kernels of a suite, boot them in turn, measure, and write a report.
    Compare(CompareArgs),
    /// Build the suite's kernels and the guest initramfs into the cache, or list the cache.
    Images(ImagesArgs),
    /// Re-render report.md (and report.txt, summary.json, junit.xml, bmf.json,
    /// github-action-benchmark*.json, the plots) of a run directory from its
    /// samples.csv and meta.toml; with --format, print one format instead.
    Report {
        /// A run directory, e.g. reports/20261130-101500-quick.
        dir: PathBuf,
        /// Print this format on standard output and write nothing.
        #[arg(long, value_enum)]
        format: Option<report::Format>,
    },
    /// Run a suite, compare it with a baseline run and exit 4 on a significant
    /// regression beyond the suite's margin (0 none; 3 a boot failed, 130
    /// interrupted: not gated; docs/commands.md lists every exit status).
    Nightly(NightlyArgs),
    /// Compare two result sets run separately (e.g. last night's and tonight's):
    /// one variant of BASELINE_DIR against the same variant of CANDIDATE_DIR.
    Diff {
        baseline_dir: PathBuf,
        candidate_dir: PathBuf,
        /// The variant to compare (default: the candidate run's one candidate;
        /// required when it has several).
        #[arg(long)]
        variant: Option<String>,
        /// Where the comparison's report goes (default: CANDIDATE_DIR/diff-<baseline name>).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Split a suite over N machines: print (and with --out write) which
    /// points and boots each shard runs. Every shard runs both variants of its
    /// points, so each comparison is made on one host.
    Plan(PlanArgs),
    /// Run shard K of N of a suite (`plan --shards N` shows them) into one run
    /// directory, as compare runs a whole suite.
    RunShard(RunShardArgs),
    /// Join the run directories of all shards of a suite into one run
    /// directory and render its report.
    Merge {
        /// The shards' run directories, every shard once.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where the merged run goes (default: <reports>/<date>-<time>-<suite>-merged).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Where the default run directory goes.
        #[arg(long, default_value = "reports")]
        reports: PathBuf,
    },
    /// Every complete run under the directories, point by point and night
    /// after night: trend plots, change points, and the `markbench bisect`
    /// command for each; writes history.md and a self-contained history.html.
    History {
        /// Run directories, or directories of them (e.g. a nightly's reports).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where history.md, history.html and the plots go.
        #[arg(long)]
        out: PathBuf,
        /// The variant whose values are followed (default: each run's
        /// candidate, the one `nightly` gates).
        #[arg(long)]
        variant: Option<String>,
    },
    /// Print the noise floor of an A/A run (CoV between and within boots) and
    /// the resolution of an A/B run (95% CI half-width), PASS/FAIL against
    /// the targets; exit 6 when one is missed.
    NoiseFloor {
        /// A run made with `compare --aa`.
        aa_dir: PathBuf,
        /// The comparison run of the same suite.
        ab_dir: Option<PathBuf>,
        /// Target in percent, for both the between-boot CoV and the CI half-width.
        #[arg(long, default_value_t = 0.5)]
        target_pct: f64,
    },
    /// Find the commit that made a regression: measure GOOD and BAD of a git
    /// kernel tree, confirm the regression, then build, boot and classify
    /// the commit in the middle until one is left (exit 0), or say there is
    /// no regression to bisect (exit 5).
    Bisect(BisectArgs),
    /// List what the cache holds by kind (kernels, workspaces, sources and
    /// snapshots, guest images, QEMU builds) with sizes and last use;
    /// `cache prune` frees space.
    Cache(CacheArgs),
    /// Measure this host's CPU natively (its clock by a chain of adds, its
    /// caches' latencies, a mispredict, a line passed between two cores)
    /// and write the cycle model's profile of it into the cache, which
    /// runs under `--model cycles` on a CPU of that name then use.
    Calibrate {
        /// Write the profile here instead (for `--model-profile`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Install the prerequisites (QEMU, busybox, hackbench, ping, kernel
    /// source, build tools, and what building markbench's own QEMU needs).
    Setup {
        /// Only check; print the install command instead of running it.
        #[arg(long)]
        check: bool,
        /// What CI needs: also Slurm and munge, for the array-job test, and
        /// not `just`, which no test runs.
        #[arg(long, conflicts_with = "arch")]
        ci: bool,
        /// What building and booting guests of another architecture needs
        /// (arm64: the cross compiler, qemu-system-aarch64, Debian's rustc
        /// with its arm64 std, dpkg's arm64 lists), instead of the usual
        /// prerequisites. Never part of `--ci`.
        #[arg(long, value_name = "ARCH")]
        arch: Option<crate::base::arch::Arch>,
    },
}

#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// The suite file, relative to the current directory. Default:
    /// suites/quick.toml here, else markbench's built-in copy of it.
    #[arg(long)]
    pub suite: Option<PathBuf>,
    /// Kernel source: a tarball or a git kernel tree (never written into).
    /// Default: the suite's [kernel] source, else Debian's linux-source-6.1.
    #[arg(long)]
    pub kernel_source: Option<PathBuf>,
    /// Compare the kernel source as it is (baseline) with the source plus
    /// these patches applied in order (candidate), both with the suite's
    /// baseline kernel fragment.
    #[arg(long = "patch", value_name = "FILE", num_args = 1..)]
    pub patches: Vec<PathBuf>,
    /// Compare two git revisions of the kernel source, `A,B` (A the
    /// baseline), or every commit of a series `BASE..TIP` (BASE the
    /// baseline, each commit against it and against the one before), all
    /// with the suite's baseline kernel fragment.
    #[arg(long, value_name = "A,B|BASE..TIP")]
    pub revs: Option<crate::guest::images::source::RevSelection>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Print the plan and exit without building or booting anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Install what this machine lacks (packages, apt sources) without
    /// asking first at a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Accelerator: auto (try KVM, fall back to TCG), kvm or tcg. Default: the suite's.
    #[arg(long, value_enum)]
    pub accel: Option<AccelChoice>,
    /// Where run directories go.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    #[command(flatten)]
    pub overrides: OverrideArgs,
    /// Timing mode: auto (icount under TCG, wall under KVM), wall or icount.
    #[arg(long, value_enum)]
    pub timing: Option<TimingChoice>,
    /// icount shift: one guest instruction counts 2^N ns of guest time.
    #[arg(long)]
    pub icount_shift: Option<u32>,
    /// Continue an interrupted run in this run directory: finished boots are
    /// kept and skipped, unfinished ones run again.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Run even when a guest gets more vCPUs than the host has cores under
    /// wall-clock timing (the timings then measure the host's scheduler as
    /// much as the kernel). Under icount the vCPUs take turns on one host
    /// thread, so their number is not limited by the host's cores. Also
    /// runs a guest given more memory (`memory_mib`) than the host has.
    #[arg(long)]
    pub allow_oversubscribe: bool,
    /// Guests booted at once. Default: under icount timing one per host
    /// core, as the host's memory allows (a guest's samples do not depend
    /// on what runs beside it); on the wall clock one. More than one on
    /// the wall clock is allowed, and the report says so.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Under icount, the longest round-robin turn of one vCPU of an SMP
    /// guest, in guest instructions (0: until the next timer deadline, as
    /// upstream QEMU). Needs markbench's own QEMU, which SMP guests under
    /// icount boot with. Default: the suite's `smp_turn`.
    #[arg(long, value_name = "N")]
    pub smp_turn: Option<u32>,
    /// The QEMU binary to boot with (default: the suite's `qemu`, else
    /// qemu-system-x86_64 on PATH).
    #[arg(long, value_name = "PATH")]
    pub qemu: Option<PathBuf>,
    /// Also boot each variant once per CPU count with markbench's TCG
    /// plugin, counting the instructions of every kernel function in the
    /// timed runs, for the report's "Where the difference goes" (as the
    /// suite's `profile = true`).
    #[arg(long)]
    pub profile: bool,
    /// Run every boot under a model of caches and branch prediction (the
    /// TCG plugin's), adding per run its estimated cycles and miss counts
    /// as points of their own (as the suite's `model = "cycles"`;
    /// docs/cycle-model.md).
    #[arg(long, value_enum, value_name = "MODEL")]
    pub model: Option<crate::jobs::compare::ModelChoice>,
    /// The cycle model's settings from this profile (`markbench calibrate
    /// --out FILE`) rather than the calibrated profile of the host's CPU in
    /// the cache, or the defaults where there is none. Implies --model
    /// cycles.
    #[arg(long, value_name = "FILE")]
    pub model_profile: Option<PathBuf>,
}

/// Changes to a suite's size and shape, shared by compare, plan and run-shard.
#[derive(Debug, Args)]
pub struct OverrideArgs {
    /// Multiply each run's work (hackbench loops, ping packet counts), e.g. 0.05
    /// to run a seed-scale suite under TCG.
    #[arg(long)]
    pub scale: Option<f64>,
    /// Override the suite's boots per variant and CPU count.
    #[arg(long)]
    pub boots: Option<u32>,
    /// Override the suite's measured iterations per point per boot.
    #[arg(long)]
    pub iterations: Option<u32>,
    /// Keep the run to these CPU counts (comma-separated): a workload with
    /// CPU counts of its own runs at those of them named, and not at all
    /// when none is.
    #[arg(long, value_delimiter = ',')]
    pub cpus: Option<Vec<u32>>,
    /// Override every workload's parameters (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub params: Option<Vec<u64>>,
    /// Override every kernel compile's scope: `subset` turns a seed-scale
    /// whole-kernel compile into minutes under TCG.
    #[arg(long, value_enum)]
    pub compile_scope: Option<crate::stages::suite::CompileScope>,
    /// Seed of the run order and the bootstrap (default: the suite's); the
    /// same seed reproduces the same order.
    #[arg(long)]
    pub seed: Option<u64>,
    /// A/A calibration: boot the baseline kernel on both sides, to measure the
    /// noise floor and the false-positive rate actually observed.
    #[arg(long)]
    pub aa: bool,
    /// Run every point to this precision: after the suite's boots, add
    /// balanced blocks of boots at the CPU counts whose points' 95% interval
    /// of the relative difference is wider than ±PCT percent.
    #[arg(long, value_name = "PCT")]
    pub precision: Option<f64>,
    /// The wall time of a run with a precision target, e.g. 10m: no block
    /// of boots starts that would end after it.
    #[arg(long, value_name = "DURATION", value_parser = parse_budget)]
    pub budget: Option<u64>,
    /// The most boots of a run with a precision target, planned and added
    /// (default: eight times the plan).
    #[arg(long, value_name = "N")]
    pub max_boots: Option<u32>,
    /// The guest architecture: build the kernels for it and boot them as
    /// it (x86-64 or arm64; default: the suite's `arch`, else x86-64).
    #[arg(long, value_name = "ARCH")]
    pub arch: Option<crate::base::arch::Arch>,
}

fn parse_budget(text: &str) -> Result<u64, String> {
    crate::stages::suite::parse_budget(text)
}

impl OverrideArgs {
    fn settings(&self, shard: Option<ShardSel>) -> Overrides {
        Overrides {
            scale: self.scale,
            boots: self.boots,
            iterations: self.iterations,
            cpus: self.cpus.clone(),
            params: self.params.clone(),
            compile_scope: self.compile_scope.map(Into::into),
            aa: self.aa,
            seed: self.seed,
            shard,
            precision: self.precision,
            budget_s: self.budget,
            max_boots: self.max_boots,
            arch: self.arch,
            ..Overrides::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: Option<CacheAction>,
    /// Check every kernel, guest image, compile tree, the profile plugin
    /// and markbench's own QEMU against the size and SHA-256 recorded when
    /// it was made, one line each; exit 7 naming those that are damaged.
    #[arg(long)]
    pub verify: bool,
}

#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Remove what killed builds left (`….partial-PID` of processes that
    /// are gone), entries not used for a while, then the least recently
    /// used until the cache fits a size; never what a running markbench
    /// holds, never ccache's objects (ccache keeps its own size).
    Prune {
        /// Remove entries last used longer ago than this (e.g. 30d, 12h).
        #[arg(long, value_name = "D", value_parser = humantime::parse_duration)]
        older_than: Option<std::time::Duration>,
        /// Then remove the least recently used until the cache holds at
        /// most this much (e.g. 20GiB, 500MB).
        #[arg(long, value_name = "S")]
        max_size: Option<bytesize::ByteSize>,
        /// Print what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The git kernel tree (its commits are read, never its work tree).
    #[arg(long, value_name = "TREE")]
    pub kernel_source: Option<PathBuf>,
    /// The last commit known to be good (an ancestor of BAD).
    #[arg(long, value_name = "REV")]
    pub good: Option<String>,
    /// The first commit known to be bad.
    #[arg(long, value_name = "REV")]
    pub bad: Option<String>,
    /// The suite: its baseline variant's configuration, the point's
    /// workload, boots and iterations. Default: the quick suite.
    #[arg(long)]
    pub suite: Option<PathBuf>,
    /// The one point measured, WORKLOAD[/METRIC][@CPUS][=PARAM] (parts the
    /// suite leaves no choice in may be left out). Default with the quick
    /// suite: hackbench@1.
    #[arg(long, value_name = "SPEC")]
    pub point: Option<String>,
    /// The suite's variant whose kernel configuration and command line each
    /// commit is built and booted with (default: the baseline).
    #[arg(long)]
    pub variant: Option<String>,
    /// The smallest regression to bisect, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 1.0)]
    pub threshold: f64,
    /// Boots per round (default: the suite's).
    #[arg(long)]
    pub boots: Option<u32>,
    /// Measured iterations per boot (default: the suite's).
    #[arg(long)]
    pub iterations: Option<u32>,
    /// The most boots a commit gets before it is left undecided (default:
    /// three rounds).
    #[arg(long)]
    pub max_boots: Option<u32>,
    /// Also profile the first bad commit against its parent with the TCG
    /// plugin: the answer then ends at the function.
    #[arg(long)]
    pub profile: bool,
    /// Where the bisection directory goes.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// The bisection directory itself.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue a bisection that was interrupted, in its directory.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Install what this machine lacks without asking first at a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

impl BisectArgs {
    fn request(&self) -> crate::jobs::bisect::Request {
        crate::jobs::bisect::Request {
            tree: self.kernel_source.clone(),
            good: self.good.clone(),
            bad: self.bad.clone(),
            suite: self.suite.clone(),
            point: self.point.clone(),
            variant: self.variant.clone(),
            threshold: Some(self.threshold),
            max_boots: self.max_boots,
            boots: self.boots,
            iterations: self.iterations,
            profile: self.profile,
            reports: self.reports.clone(),
            out: self.out.clone(),
            resume: self.resume.clone(),
            yes: self.yes,
        }
    }
}

#[derive(Debug, Args)]
pub struct NightlyArgs {
    #[command(flatten)]
    pub compare: CompareArgs,
    /// The baseline run directory (default: the newest earlier complete run of the same suite).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// The variant compared across the two runs (default: the "with" variant).
    #[arg(long)]
    pub variant: Option<String>,
    /// On a regression, when the baseline's and tonight's kernels are two
    /// commits of one git tree, bisect between them and name the first bad
    /// commit in the summary (the exit status stays 4).
    #[arg(long)]
    pub bisect: bool,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// How many shards (machines) to split the suite into.
    #[arg(long)]
    pub shards: u32,
    #[command(flatten)]
    pub overrides: OverrideArgs,
    /// Also write the split to this file (TOML, or JSON when it ends in .json).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunShardArgs {
    /// Which shard, from 0 (e.g. $SLURM_ARRAY_TASK_ID).
    pub index: u32,
    /// How many shards the suite is split into.
    #[arg(long)]
    pub shards: u32,
    /// The run directory to write (default: a new one under --reports).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub compare: CompareArgs,
}

impl CompareArgs {
    /// What the user asked for, typed; `shard` and `out` for `run-shard`.
    fn options(&self, shard: Option<ShardSel>, out: Option<PathBuf>) -> Options {
        Options {
            suite: self.suite.suite.clone(),
            kernel_source: self.suite.kernel_source.clone(),
            overrides: Overrides {
                patches: self.suite.patches.clone(),
                revs: self.suite.revs.clone().map(Into::into),
                ..self.overrides.settings(shard)
            },
            accel: self.accel,
            timing: self.timing,
            icount_shift: self.icount_shift,
            profile: self.profile,
            model: self.model,
            model_profile: self.model_profile.clone(),
            qemu: self.qemu.clone(),
            resume: self.resume.clone(),
            dry_run: self.dry_run,
            yes: self.yes,
            allow_oversubscribe: self.allow_oversubscribe,
            jobs: self.jobs,
            smp_turn: self.smp_turn,
            reports: self.reports.clone(),
            out,
        }
    }
}

#[derive(Debug, Args)]
pub struct ImagesArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// List what is in the cache instead of building.
    #[arg(long)]
    pub list: bool,
    /// Install what this machine lacks without asking first at a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

impl SuiteArgs {
    fn choice(&self) -> commands::SuiteChoice {
        commands::SuiteChoice {
            suite: self.suite.clone(),
            kernel_source: self.kernel_source.clone(),
            patches: self.patches.clone(),
            revs: self.revs.clone(),
        }
    }
}

/// Runs the command; its exit status (a failure is mapped by
/// [`ExitStatus::of_error`], the one mapping of an error to a status).
pub fn run(cli: Cli) -> Result<ExitStatus> {
    match cli.command {
        Command::Setup {
            check,
            arch: Some(arch),
            ..
        } => commands::setup::run_arch(arch, check),
        Command::Setup { check, ci, .. } => commands::setup::run(check, ci),
        Command::Calibrate { out } => commands::calibrate::run(out.as_deref()),
        Command::Report { dir, format } => commands::report::run(&dir, format),
        Command::Diff {
            baseline_dir,
            candidate_dir,
            variant,
            out,
        } => commands::diff::run(&baseline_dir, &candidate_dir, variant.as_deref(), out),
        Command::History { dirs, out, variant } => {
            commands::history::run(&dirs, &out, variant.as_deref())
        }
        Command::NoiseFloor {
            aa_dir,
            ab_dir,
            target_pct,
        } => commands::noise_floor::run(
            &aa_dir,
            ab_dir.as_deref(),
            &crate::jobs::noise::Targets::at_pct(target_pct)?,
        ),
        Command::Nightly(args) => commands::nightly::run(
            &args.compare.options(None, None),
            args.baseline,
            args.variant.as_deref(),
            args.bisect,
        ),
        Command::Plan(args) => commands::plan::run(
            &args.suite.choice(),
            &args.overrides.settings(None),
            args.shards,
            args.out.as_deref(),
        ),
        Command::RunShard(args) => {
            let sel = ShardSel {
                index: args.index,
                count: args.shards,
            };
            commands::run_shard::run(&args.compare.options(Some(sel), args.out))
        }
        Command::Merge { dirs, out, reports } => commands::merge::run(&dirs, out, &reports),
        Command::Images(args) => commands::images::run(&args.suite.choice(), args.list, args.yes),
        Command::Bisect(args) => commands::bisect::run(&args.request()),
        Command::Cache(args) => {
            let prune = args.action.map(
                |CacheAction::Prune {
                     older_than,
                     max_size,
                     dry_run,
                 }| commands::cache::Prune {
                    older_than,
                    max_size: max_size.map(|s| s.as_u64()),
                    dry_run,
                },
            );
            commands::cache::run(args.verify, prune)
        }
        Command::Compare(args) => commands::compare::run(&args.options(None, None)),
    }
}
