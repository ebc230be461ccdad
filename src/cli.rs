//! The command line. Parsing (clap) stays here; every command is a thin call
//! into the stage modules.

use crate::error::InputError;
use crate::images::cache_dir;
use crate::images::fragments::FragmentSearch;
use crate::images::kernel::{self, KernelSource};
use crate::shard::ShardSel;
use crate::suite::{AccelChoice, FragmentLookup, Suite, DEFAULT_SUITE};
use crate::vm::qemu::QemuRunner;
use crate::{plan, prereq, report, run, vm};
use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};

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
    /// Re-render report.md of a run directory from its samples.csv and meta.toml.
    Report {
        /// A run directory, e.g. reports/20261130-101500-quick.
        dir: PathBuf,
    },
    /// Run a suite, compare it with a baseline run and exit 1 on a significant
    /// regression beyond the suite's margin (0 none, 2 input error, 3 infrastructure failure).
    Nightly(NightlyArgs),
    /// Compare two result sets run separately (e.g. last night's and tonight's):
    /// one variant of BASELINE_DIR against the same variant of CANDIDATE_DIR.
    Diff {
        baseline_dir: PathBuf,
        candidate_dir: PathBuf,
        /// The variant to compare (default: the candidate run's "with" variant).
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
    /// Print the noise floor of an A/A run (CoV between and within boots) and
    /// the resolution of an A/B run (95% CI half-width), PASS/FAIL against
    /// the targets; exit 1 when one is missed.
    NoiseFloor {
        /// A run made with `compare --aa`.
        aa_dir: PathBuf,
        /// The comparison run of the same suite.
        ab_dir: Option<PathBuf>,
        /// Target in percent, for both the between-boot CoV and the CI half-width.
        #[arg(long, default_value_t = 0.5)]
        target_pct: f64,
    },
    /// Install the prerequisites (QEMU, busybox, hackbench, ping, kernel source, build tools).
    Setup {
        /// Only check; print the install command instead of running it.
        #[arg(long)]
        check: bool,
        /// Also what CI needs: Slurm and munge, for the array-job test.
        #[arg(long)]
        ci: bool,
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
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Print the plan and exit without building or booting anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Accelerator: auto (try KVM, fall back to TCG), kvm or tcg. Default: the suite's.
    #[arg(long, value_enum)]
    pub accel: Option<AccelArg>,
    /// Where run directories go.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    #[command(flatten)]
    pub overrides: OverrideArgs,
    /// Timing mode: auto (icount under TCG, wall under KVM), wall or icount.
    #[arg(long, value_enum)]
    pub timing: Option<TimingArg>,
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
    /// thread, so their number is not limited by the host's cores.
    #[arg(long)]
    pub allow_oversubscribe: bool,
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
    /// Override the suite's CPU counts (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub cpus: Option<Vec<u32>>,
    /// Override every workload's parameters (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub params: Option<Vec<u64>>,
    /// Override every kernel compile's scope: `subset` turns a seed-scale
    /// whole-kernel compile into minutes under TCG.
    #[arg(long, value_enum)]
    pub compile_scope: Option<crate::suite::CompileScope>,
    /// Seed of the run order and the bootstrap (default: the suite's); the
    /// same seed reproduces the same order.
    #[arg(long)]
    pub seed: Option<u64>,
    /// A/A calibration: boot the baseline kernel on both sides, to measure the
    /// noise floor and the false-positive rate actually observed.
    #[arg(long)]
    pub aa: bool,
}

impl OverrideArgs {
    fn settings(&self, shard: Option<ShardSel>) -> crate::suite::Overrides {
        crate::suite::Overrides {
            scale: self.scale,
            boots: self.boots,
            iterations: self.iterations,
            cpus: self.cpus.clone(),
            params: self.params.clone(),
            compile_scope: self.compile_scope,
            aa: self.aa,
            seed: self.seed,
            shard,
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

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TimingArg {
    Auto,
    Wall,
    Icount,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum AccelArg {
    Auto,
    Kvm,
    Tcg,
}

#[derive(Debug, Args)]
pub struct ImagesArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// List what is in the cache instead of building.
    #[arg(long)]
    pub list: bool,
}

fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().context("reading the current directory")
}

/// The suite `--suite` names (a relative path is taken from the current
/// directory, as by any command), or without it suites/quick.toml in the
/// current directory, else markbench's built-in copy of that suite.
fn read_suite(path: Option<&Path>) -> Result<Suite> {
    let cwd = current_dir()?;
    let lookup = FragmentLookup::BesideSuite { cwd: cwd.clone() };
    let default = Path::new(DEFAULT_SUITE);
    match path {
        Some(path) => Ok(Suite::load(path, &lookup)?),
        None if default.is_file() => Ok(Suite::load(default, &lookup)?),
        None => {
            eprintln!(
                "markbench: no {DEFAULT_SUITE} in {}: running markbench's built-in copy of it",
                cwd.display()
            );
            Ok(Suite::built_in(default, &cwd)
                .context("the default suite is not built into markbench")??)
        }
    }
}

fn load_suite(args: &SuiteArgs) -> Result<(Suite, KernelSource)> {
    let suite = read_suite(args.suite.as_deref())?;
    let source = kernel_source(args, &suite)?;
    Ok((suite, source))
}

/// The kernel source of `--kernel-source`, else the suite's, else Debian's.
fn kernel_source(args: &SuiteArgs, suite: &Suite) -> Result<KernelSource> {
    let source_path = args
        .kernel_source
        .clone()
        .or_else(|| suite.kernel_source.clone())
        .unwrap_or_else(|| PathBuf::from(prereq::DEFAULT_KERNEL_SOURCE));
    let source = if source_path == Path::new(prereq::DEFAULT_KERNEL_SOURCE) && !source_path.exists()
    {
        // Installed by `setup` below; checked again after it ran.
        KernelSource::Tarball(source_path)
    } else {
        KernelSource::from_path(&source_path)?
    };
    Ok(source)
}

pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Setup { check, ci } => {
            prereq::ensure_with(check, ci)?;
            println!("markbench: all prerequisites are installed");
            Ok(0)
        }
        Command::Report { dir } => {
            crate::samples::require_run_dir(&dir)?;
            let path = report::write(&dir)?;
            println!("{}", path.display());
            Ok(0)
        }
        Command::Diff {
            baseline_dir,
            candidate_dir,
            variant,
            out,
        } => {
            let out = out.unwrap_or_else(|| {
                candidate_dir.join(format!(
                    "diff-{}",
                    baseline_dir
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                ))
            });
            let warnings =
                crate::diff::diff(&baseline_dir, &candidate_dir, variant.as_deref(), &out)?;
            for w in &warnings {
                eprintln!("markbench: WARNING: {w}");
            }
            println!("{}", out.join(report::REPORT_FILE).display());
            Ok(0)
        }
        Command::NoiseFloor {
            aa_dir,
            ab_dir,
            target_pct,
        } => crate::noise::command(
            &aa_dir,
            ab_dir.as_deref(),
            &crate::noise::Targets::at_pct(target_pct)?,
        ),
        Command::Nightly(args) => nightly(args),
        Command::Plan(args) => shard_plan(args),
        Command::RunShard(args) => {
            let sel = ShardSel {
                index: args.index,
                count: args.shards,
            };
            Ok(compare_run(args.compare, Some(sel), args.out)?.code)
        }
        Command::Merge { dirs, out, reports } => {
            let out = match out {
                Some(out) => out,
                None => merged_dir(&reports, &dirs)?,
            };
            let merged = crate::merge::merge(&dirs, &out)?;
            for w in &merged.warnings {
                eprintln!("markbench: WARNING: {w}");
            }
            let failed = merged.meta.boots.iter().filter(|b| !b.ok).count();
            println!(
                "merged {} shards ({} boots, {} failed) into {}",
                merged.meta.shards.len(),
                merged.meta.boots.len(),
                failed,
                out.display()
            );
            println!("report: {}", out.join(report::REPORT_FILE).display());
            Ok(if !merged.meta.complete || failed > 0 {
                3
            } else {
                0
            })
        }
        Command::Images(args) => images(args),
        Command::Compare(args) => compare(args),
    }
}

fn images(args: ImagesArgs) -> Result<i32> {
    if args.list {
        println!("cache: {}", cache_dir().display());
        for k in kernel::cached_kernels() {
            println!(
                "kernel {:<20} {}  built in {:>4.0} s  {}",
                k.name,
                &k.key[..16],
                k.build_seconds,
                k.bzimage.display()
            );
        }
        return Ok(0);
    }
    let (suite, source) = load_suite(&args.suite)?;
    prereq::ensure(false)?;
    let images = run::prepare_images(&suite, &source)?;
    for k in &images.kernels {
        println!("kernel {:<20} {}", k.name, k.bzimage.display());
    }
    println!("initramfs {}", images.base.path.display());
    Ok(0)
}

fn host_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as u32
}

/// Seconds per boot of the newest complete earlier run of this suite, if any.
fn earlier_seconds_per_boot(reports: &Path, suite: &Suite) -> Option<(f64, String)> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(reports)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.ends_with("latest"))
        .collect();
    runs.sort();
    runs.iter().rev().find_map(|dir| {
        let meta = crate::samples::RunMeta::read(dir).ok()?;
        (meta.complete
            && meta.suite == suite.name
            && meta.suite_sha256 == suite.sha256
            && meta.overrides == suite.overrides
            && !meta.boots.is_empty())
        .then(|| {
            let per_boot =
                meta.boots.iter().map(|b| b.wall_s).sum::<f64>() / meta.boots.len() as f64;
            (per_boot, dir.display().to_string())
        })
    })
}

fn print_plan(suite: &Suite, source: &KernelSource, reports: &Path) -> Result<()> {
    let units = plan::expand(suite);
    let host_cores = host_cores();
    println!("suite {} ({})", suite.name, suite.describe_path());
    if !suite.description.is_empty() {
        println!("  {}", suite.description);
    }
    println!("kernel source: {source:?}");
    println!("kernel fragments from: {}", suite.fragments.describe());
    for (i, v) in suite.variants.iter().enumerate() {
        println!(
            "  {} {}: kernel {}{}",
            if i == 0 {
                "without (baseline):"
            } else {
                "with (candidate):  "
            },
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
        println!(
            "  workload {}",
            serde_json::to_string(w).unwrap_or_default()
        );
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
        let (iterations, warmup) = w.iterations_in(suite);
        if (iterations, warmup) != (suite.iterations, suite.warmup) {
            println!(
                "  {}: {iterations} measured + {warmup} warm-up per point per boot",
                w.kind()
            );
        }
    }
    if !suite.overrides.is_empty() {
        println!("overrides: {}", suite.overrides.join(", "));
    }
    if let Some(sel) = suite.shard {
        let pieces: Vec<String> = crate::shard::pieces(suite, sel)
            .iter()
            .map(crate::shard::Piece::describe)
            .collect();
        println!(
            "shard {} of {}: both variants of {}",
            sel.index,
            sel.count,
            pieces.join("; ")
        );
    }
    let earlier = earlier_seconds_per_boot(reports, suite);
    match &earlier {
        Some((per_boot, from)) => println!(
            "estimated time: {:.0} min of booting ({per_boot:.0} s per boot in {from}), plus kernel builds on a cold cache",
            per_boot * units.len() as f64 / 60.0
        ),
        None => println!(
            "estimated time: unknown (no earlier complete run of this suite here); a minimal \
             kernel build takes about 6 minutes on 2 cores"
        ),
    }
    let earlier_run = earlier
        .as_ref()
        .map(|(per_boot, from)| crate::profile::plan::EarlierRun {
            seconds_per_boot: *per_boot,
            dir: Path::new(from),
        });
    for line in crate::profile::plan::describe(suite, earlier_run) {
        println!("{line}");
    }
    println!("order ({:?} blocks, seed {}):", suite.order, suite.seed);
    for u in &units {
        println!(
            "  {:>3}  {:<20} {} CPUs  boot {}",
            u.index, u.variant, u.cpus, u.boot
        );
    }
    if let Some(&max) = suite.cpus.iter().max() {
        if max > host_cores {
            println!(
                "note: {max} vCPUs on a host with {host_cores} cores: fine under icount (the vCPUs \
                 take turns on one host thread and guest time counts instructions); under wall \
                 time oversubscribed vCPUs make timings meaningless, and the run is refused \
                 without --allow-oversubscribe"
            );
        }
    }
    println!(
        "timing: {:?} (icount shift {} when icount is used)",
        suite.timing, suite.icount_shift
    );
    if suite.accel != AccelChoice::Kvm {
        println!(
            "note: without working KVM the guests run under TCG (software emulation): timings are \
             several times slower and noisier than on hardware"
        );
    }
    Ok(())
}

/// For `--resume`: the run's metadata and its suite as it ran (the copy kept
/// in the run directory, with the same overrides).
fn resumed_run(
    dir: &Path,
    args: &CompareArgs,
) -> Result<(crate::samples::RunMeta, Suite, KernelSource)> {
    if !dir.join(crate::samples::META_FILE).is_file() || !dir.join(run::SUITE_COPY).is_file() {
        return Err(InputError::new(format!(
            "{}: not a run directory that can be resumed (needs {} and {})",
            dir.display(),
            crate::samples::META_FILE,
            run::SUITE_COPY
        ))
        .into());
    }
    let meta = crate::samples::RunMeta::read(dir)?;
    // The fragments the run started with, as it kept them; runs from
    // before it kept them look theirs up as a new run would.
    let copies = dir.join(run::FRAGMENTS_COPY);
    let lookup = if copies.is_dir() {
        FragmentLookup::Fixed(FragmentSearch::only(&copies, "kept with the run"))
    } else {
        FragmentLookup::BesideSuite {
            cwd: current_dir()?,
        }
    };
    let mut suite = Suite::load(&dir.join(run::SUITE_COPY), &lookup)?;
    let source = kernel_source(&args.suite, &suite)?;
    if suite.sha256 != meta.suite_sha256 {
        return Err(InputError::new(format!(
            "{}: the suite copy does not match the run's recorded suite hash",
            dir.display()
        ))
        .into());
    }
    suite.apply(&meta.override_settings)?;
    Ok((meta, suite, source))
}

/// How a compare ended: its exit code and, unless it was a dry run, the run.
struct CompareOutcome {
    code: i32,
    run: Option<(PathBuf, crate::samples::RunMeta)>,
}

fn compare(args: CompareArgs) -> Result<i32> {
    Ok(compare_run(args, None, None)?.code)
}

/// `plan --shards N`: the split of the suite, printed and optionally written.
fn shard_plan(args: PlanArgs) -> Result<i32> {
    let (mut suite, _) = load_suite(&args.suite)?;
    suite.apply(&args.overrides.settings(None))?;
    let plan = crate::shard::plan(&suite, args.shards)?;
    print!("{}", crate::shard::describe(&plan));
    if let Some(out) = &args.out {
        let text = if out.extension().is_some_and(|e| e == "json") {
            serde_json::to_string_pretty(&plan)? + "\n"
        } else {
            toml::to_string(&plan)?
        };
        std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
        println!("written to {}", out.display());
    }
    Ok(0)
}

/// The default directory of a merged run: named after the first shard's suite.
fn merged_dir(reports: &Path, dirs: &[PathBuf]) -> Result<PathBuf> {
    let suite = dirs
        .first()
        .and_then(|d| crate::samples::RunMeta::read(d).ok())
        .map_or_else(|| "merged".to_string(), |m| m.suite);
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    Ok(reports.join(format!("{stamp}-{suite}-merged")))
}

/// Runs a suite (or, with `shard`, one shard of it) like `compare`; `out`
/// names the run directory instead of a new one under `--reports`.
fn compare_run(
    args: CompareArgs,
    shard: Option<ShardSel>,
    out: Option<PathBuf>,
) -> Result<CompareOutcome> {
    let resumed = match &args.resume {
        Some(dir) => Some((dir.clone(), resumed_run(dir, &args)?)),
        None => None,
    };
    let (mut suite, source) = match &resumed {
        Some((_, (_, suite, source))) => (suite.clone(), source.clone()),
        None => load_suite(&args.suite)?,
    };
    if resumed.is_none() {
        suite.apply(&args.overrides.settings(shard))?;
    } else if shard.is_some() && suite.shard != shard {
        return Err(InputError::new(format!(
            "{}: that run is not shard {} of {}",
            args.resume.as_deref().unwrap_or(Path::new("")).display(),
            shard.map_or(0, |s| s.index),
            shard.map_or(0, |s| s.count)
        ))
        .into());
    }
    if let Some(a) = args.accel {
        suite.accel = match a {
            AccelArg::Auto => AccelChoice::Auto,
            AccelArg::Kvm => AccelChoice::Kvm,
            AccelArg::Tcg => AccelChoice::Tcg,
        };
    }
    if let Some(t) = args.timing {
        suite.timing = match t {
            TimingArg::Auto => crate::suite::TimingChoice::Auto,
            TimingArg::Wall => crate::suite::TimingChoice::Wall,
            TimingArg::Icount => crate::suite::TimingChoice::Icount,
        };
    }
    suite.profile |= args.profile;
    if let Some(shift) = args.icount_shift {
        if !(1..=10).contains(&shift) {
            return Err(InputError::new("--icount-shift must be from 1 to 10").into());
        }
        suite.icount_shift = shift;
    }
    let reports = args.reports.clone();
    print_plan(&suite, &source, &reports)?;
    if args.dry_run {
        return Ok(CompareOutcome { code: 0, run: None });
    }
    if let Some(out) = out.as_ref().filter(|_| resumed.is_none()) {
        if out.join(crate::samples::META_FILE).exists() {
            return Err(InputError::new(format!(
                "{}: already holds a run; continue it with --resume {0}, or give another --out",
                out.display()
            ))
            .into());
        }
    }
    let max_cpus = suite.cpus.iter().copied().max().unwrap_or(1);
    let oversubscribed = |why: &str| -> anyhow::Error {
        InputError::new(format!(
            "{}: asks for {max_cpus} vCPUs but this host has {} cores, and {why}: \
             oversubscribed vCPUs make wall-clock timings meaningless. Use --cpus to run fewer, \
             a QEMU that counts instructions for SMP guests (icount), or --allow-oversubscribe \
             to run anyway",
            suite.path.display(),
            host_cores()
        ))
        .into()
    };
    let cannot_count =
        suite.timing == crate::suite::TimingChoice::Wall || suite.accel == AccelChoice::Kvm;
    if max_cpus > host_cores() && !args.allow_oversubscribe && cannot_count {
        return Err(oversubscribed("the run times on the wall clock"));
    }
    let qemu_path = args.qemu.clone().or_else(|| suite.qemu.clone());
    let started = std::time::Instant::now();
    prereq::ensure(false)?;
    let qemu = vm::qemu::QemuBinary::locate(qemu_path.as_deref())?;
    let source = match source {
        KernelSource::Tarball(p) => KernelSource::from_path(&p)?,
        s => s,
    };
    let images = run::prepare_images(&suite, &source)?;
    let mut runner = QemuRunner::new(&qemu);
    let (dir, machine, previous) = match resumed {
        Some((dir, (meta, _, _))) => {
            for (k, recorded) in images.kernels.iter().zip(&meta.kernels) {
                if k.key != recorded.build_key {
                    return Err(InputError::new(format!(
                        "{}: kernel {} is not the one this run started with (build key {} now, {} then); \
                         start a new run instead",
                        dir.display(),
                        recorded.variant,
                        &k.key[..16],
                        recorded.build_key.chars().take(16).collect::<String>()
                    ))
                    .into());
                }
            }
            if !meta.host.qemu_path.is_empty() && meta.host.qemu_version != qemu.version {
                eprintln!(
                    "markbench: WARNING: the run started with {} ({}); it continues with {} ({})",
                    meta.host.qemu_version,
                    meta.host.qemu_path,
                    qemu.version,
                    qemu.path.display()
                );
            }
            let machine = run::recorded_machine(&meta, &suite, qemu);
            (dir, machine, Some(meta))
        }
        None => {
            let machine = run::decide_machine(&suite, &images, qemu, &mut runner)?;
            if max_cpus > host_cores() && !args.allow_oversubscribe && !machine.timing.is_icount() {
                return Err(oversubscribed(&format!(
                    "timing is wall time ({})",
                    machine.timing.reason
                )));
            }
            let dir = match &out {
                Some(out) => {
                    std::fs::create_dir_all(out.join("logs"))
                        .with_context(|| format!("creating {}", out.display()))?;
                    out.clone()
                }
                None => run::new_run_dir(&reports, &suite)?,
            };
            (dir, machine, None)
        }
    };
    println!("run directory: {}", dir.display());
    println!(
        "QEMU: {} ({})",
        machine.qemu.version,
        machine.qemu.path.display()
    );
    println!(
        "accelerator: {} ({})",
        machine.accel.accel.as_str(),
        machine.accel.reason
    );
    println!(
        "timing: {}",
        vm::accel::describe_timing(&machine.timing, max_cpus)
    );
    let _ = ctrlc::set_handler(|| {
        vm::INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        eprintln!("\nmarkbench: interrupted: stopping the guest, keeping every sample, writing a partial report");
    });
    let meta = run::execute(&suite, &images, &machine, &mut runner, &dir, previous)
        .with_context(|| format!("run in {}", dir.display()))?;
    if out.is_none() {
        let latest = reports.join("latest");
        let _ = std::fs::remove_file(&latest);
        let _ = std::os::unix::fs::symlink(dir.file_name().unwrap_or_default(), &latest);
    }
    let failed = meta.boots.iter().filter(|b| !b.ok).count();
    println!(
        "report: {}\n{} boots, {} failed, {:.0} s in all",
        dir.join(report::REPORT_FILE).display(),
        meta.boots.len(),
        failed,
        started.elapsed().as_secs_f64()
    );
    let code = if !meta.complete {
        eprintln!(
            "markbench: the run is partial; continue it with: markbench compare --resume {}",
            dir.display()
        );
        130
    } else if failed > 0 {
        eprintln!("markbench: {failed} boot(s) failed; see the Boots table in the report");
        3
    } else {
        0
    };
    Ok(CompareOutcome {
        code,
        run: Some((dir, meta)),
    })
}

/// The newest complete run of `suite` in `reports`, other than `except`.
fn newest_baseline(reports: &Path, suite: &str, except: &Path) -> Option<PathBuf> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(reports)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.ends_with("latest") && p.file_name() != except.file_name())
        .collect();
    runs.sort();
    runs.into_iter().rev().find(|dir| {
        // A single shard ran part of the suite: never a baseline for all of it.
        crate::samples::RunMeta::read(dir)
            .is_ok_and(|m| m.complete && m.suite == suite && m.shard.is_none())
    })
}

/// `nightly`: run the suite, compare it with a baseline run, write a short
/// summary for a CI job page, and exit 0 (no regression), 1 (a significant
/// regression beyond the suite's margin), 2 (input error) or 3 (infrastructure
/// failure: a boot that failed, a kernel that would not build).
fn nightly(args: NightlyArgs) -> Result<i32> {
    let reports = args.compare.reports.clone();
    let outcome = match compare_run(args.compare, None, None) {
        Ok(o) => o,
        Err(e) if e.chain().any(|c| c.downcast_ref::<InputError>().is_some()) => return Err(e),
        Err(e) => {
            eprintln!("markbench: error: {e:#}");
            return Ok(3);
        }
    };
    let Some((dir, meta)) = outcome.run else {
        return Ok(outcome.code);
    };
    let mut summary = format!("## markbench nightly: {}\n\n", meta.suite);
    if outcome.code != 0 {
        summary.push_str(&format!(
            "**Infrastructure failure**: {} of {} boots failed or the run is partial; see {}.\n",
            meta.boots.iter().filter(|b| !b.ok).count(),
            meta.boots.len(),
            dir.join(report::REPORT_FILE).display()
        ));
        std::fs::write(dir.join(NIGHTLY_SUMMARY), &summary)?;
        println!("{summary}");
        return Ok(3);
    }
    let baseline = match args.baseline.clone() {
        Some(b) => Some(b),
        None => newest_baseline(&reports, &meta.suite, &dir),
    };
    let Some(baseline) = baseline else {
        summary.push_str("No baseline run of this suite yet: this run becomes the baseline.\n");
        std::fs::write(dir.join(NIGHTLY_SUMMARY), &summary)?;
        println!("{summary}");
        return Ok(0);
    };
    let gate = crate::nightly::gate(&baseline, &dir, args.variant.as_deref(), summary)?;
    std::fs::write(dir.join(NIGHTLY_SUMMARY), &gate.summary)?;
    println!("{}", gate.summary);
    if let Ok(path) = std::env::var("GITHUB_STEP_SUMMARY") {
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, gate.summary.as_bytes()));
    }
    Ok(gate.code)
}

/// The short markdown a nightly run leaves for a CI job page.
pub const NIGHTLY_SUMMARY: &str = "nightly-summary.md";
