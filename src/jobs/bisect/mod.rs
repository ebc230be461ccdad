//! `bisect`: from a regression between two commits of a git tree to the
//! commit that made it. GOOD and BAD are measured first and the regression
//! confirmed; then each step builds the commit nearest the middle of what is
//! left in the configuration's workspace (one rebuilt file per commit, as a
//! series is built), boots it as the suite says, and classifies it against
//! both ends ([`decide`]). Every measurement is an ordinary run directory
//! under the bisection's own (`commits/<id>/round-<n>/`), written as it is
//! measured, and the search is a pure function of those measurements: a
//! bisection resumed after a kill takes the same steps, reading what is
//! stored and measuring only what is not.

pub mod answer;
pub mod decide;
pub mod point;
pub mod range;

use crate::base::error::{Context, Result};
use crate::base::error::{InputError, Interrupted};
use crate::base::input_file::{self, Bound};
use crate::guest::images::kernel::{BuildFailed, KernelSource};
use crate::jobs::compare::{self, Resolved};
use crate::record::{Overrides, RunMeta};
use crate::stages::suite::Suite;
use crate::{base::run_dir::RunDir, stages::vm};
use decide::{Boots, Measured, Rules};
use point::PointSpec;
use range::RangeCommit;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub tree: Option<PathBuf>,
    pub good: Option<String>,
    pub bad: Option<String>,
    /// The suite (default: the quick suite).
    pub suite: Option<PathBuf>,
    pub point: Option<String>,
    /// The suite's variant whose configuration each commit is built with
    /// (default: the baseline).
    pub variant: Option<String>,
    /// In percent.
    pub threshold: Option<f64>,
    /// Boots a commit may get in all (default: three rounds of the suite's).
    pub max_boots: Option<u32>,
    /// The suite's boots and iterations per round, replaced.
    pub boots: Option<u32>,
    pub iterations: Option<u32>,
    /// Profile the first bad commit against its parent.
    pub profile: bool,
    pub reports: PathBuf,
    pub out: Option<PathBuf>,
    pub resume: Option<PathBuf>,
    /// Install what the host lacks without asking (`--yes`).
    pub yes: bool,
}

impl Request {
    /// Whether what the host lacks may be installed without asking.
    pub fn consent(&self) -> crate::base::prereq::Consent {
        match self.yes {
            true => crate::base::prereq::Consent::Given,
            false => crate::base::prereq::Consent::AskInTerminal,
        }
    }
}

/// The bisection as it started, kept in its directory (`bisect.toml`), so
/// that a resumed one asks the same questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub tree: PathBuf,
    pub good: String,
    pub bad: String,
    /// The suite file, absolute; `None`: the default quick suite, found
    /// again as `compare` finds it.
    pub suite: Option<PathBuf>,
    pub suite_sha256: crate::base::sha256::Sha256,
    /// The point, resolved against the suite (kept as `--point` writes it).
    pub point: PointSpec,
    /// The suite variant whose kernel configuration and command line each
    /// commit is built and booted with (empty: the baseline).
    #[serde(default)]
    pub variant: String,
    pub threshold: f64,
    pub boots: u32,
    pub iterations: Option<u32>,
    pub max_rounds: u32,
    pub profile: bool,
    /// Every commit, GOOD first and BAD last.
    pub commits: Vec<RangeCommit>,
}

const PLAN_FILE: &str = "bisect.toml";

/// What building one commit's kernel did (or that it failed), kept beside
/// its measurements so a resumed bisection reports it without building.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Build {
    /// Seconds the build took, when this bisection built it; `None` when
    /// the kernel was in the cache already.
    pub seconds: Option<f64>,
    pub source_files_rebuilt: Option<usize>,
    /// The kernel's directory in the cache.
    pub kernel_dir: PathBuf,
}

const BUILD_FILE: &str = "build.toml";
/// Why a commit cannot be measured: its kernel does not build, or none of
/// a round's boots completed.
const UNTESTABLE_FILE: &str = "untestable.txt";

/// What a bisection has to tell as it goes, before it returns, as values:
/// the command's handler words it (`report::bisect`) and prints it.
pub enum BisectProgress<'a> {
    /// Where the bisection goes and what it searches.
    Started { dir: &'a Path, plan: &'a Plan },
    /// QEMU and the machine, decided at the first boot.
    Machine {
        machine: &'a vm::Machine,
        max_cpus: u32,
    },
    /// A step of the search is decided (`unit`: the point's unit).
    Step {
        step: &'a crate::stages::report::bisect::MeasuredCommit,
        unit: &'a str,
    },
    /// The answer, written to `written`, after `elapsed` in all.
    Answered {
        answer: &'a crate::stages::report::bisect::Bisection,
        written: &'a Path,
        elapsed: std::time::Duration,
    },
    /// No suite was named and the current directory `cwd` has none: the
    /// suite built into markbench is measured.
    BuiltInSuite { cwd: &'a Path },
    /// A round of `boots` boots (`what`: of which commit, for what) starts
    /// in `dir`.
    RoundStarted {
        what: &'a str,
        boots: usize,
        dir: &'a Path,
    },
    /// The commit (short id) cannot be measured and is skipped.
    Untestable { commit: &'a str },
    /// The answer so far could not be written; the search goes on.
    AnswerNotWritten {
        error: &'a crate::base::error::Error,
    },
    /// A directory the answer does not need could not be removed.
    NotRemoved {
        dir: &'a Path,
        error: &'a std::io::Error,
    },
}

/// Runs a bisection, passing what it has to show to `show` as it goes: its
/// directory and answer (whose search holds how it ended).
pub fn run(
    request: &Request,
    show: &dyn Fn(BisectProgress<'_>),
) -> Result<(PathBuf, answer::Answer)> {
    let (dir, plan) = start(request)?;
    let suite = suite_of(&plan)?;
    if suite.built_in {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        show(BisectProgress::BuiltInSuite { cwd: &cwd });
    }
    let point_suite = restricted(&suite, &plan)?;
    let needs = compare::host_needs(&point_suite, point_suite.qemu.is_some());
    crate::base::prereq::ensure(needs, request.consent())?;
    show(BisectProgress::Started {
        dir: &dir,
        plan: &plan,
    });
    let spec = plan.point.clone();
    let mut bench = Bench::new(&dir, &plan, suite, spec, show)?;
    let _interrupts = vm::watch_interrupts("stopping the guest; continue with bisect --resume");
    let started = std::time::Instant::now();
    let last = plan.commits.len() - 1;
    let mut shown = Vec::new();
    let rules = bench.rules()?;
    let unit = bench.unit().to_string();
    let search = decide::bisect(
        last,
        &rules,
        &mut |index, rounds| bench.measure(index, rounds),
        &mut |step| {
            shown.push(step.clone());
            let so_far = answer::Answer::partial(&plan, &shown, &unit);
            show(BisectProgress::Step {
                step: &answer::measured(&plan, step),
                unit: &unit,
            });
            if let Err(error) = answer::write(&dir, &so_far) {
                show(BisectProgress::AnswerNotWritten { error: &error });
            }
        },
    )?;
    let mut answer = answer::Answer::finished(&plan, search, &unit);
    answer.builds = builds(&dir, &plan)?;
    if let Some(decide::Ending::FirstBad { index }) =
        answer.search.as_ref().map(|s| s.ending.clone())
    {
        answer.first_bad_stat = range::stat(&plan.tree, &plan.commits[index].id).ok();
        if plan.profile && index >= 1 {
            answer.profile = Some(bench.profile(index - 1, index)?);
        }
    }
    keep_only_what_the_answer_needs(&plan, &answer, show);
    let written = answer::write(&dir, &answer)?;
    show(BisectProgress::Answered {
        answer: &answer.facts(),
        written: &written,
        elapsed: started.elapsed(),
    });
    Ok((dir, answer))
}

/// The bisection's directory and plan: a resumed one's, or a new one
/// checked (the tree, the revisions, the suite and its point) before
/// anything is built, written into a new directory.
fn start(request: &Request) -> Result<(PathBuf, Plan)> {
    if let Some(dir) = &request.resume {
        return Ok((dir.clone(), resumed_plan(dir)?));
    }
    let plan = new_plan(request)?;
    let dir = new_dir(request)?;
    std::fs::write(dir.join(PLAN_FILE), toml::to_string(&plan)?)
        .with_context(|| format!("writing {}", dir.join(PLAN_FILE).display()))?;
    Ok((dir, plan))
}

/// The plan a bisection in `dir` started with. A plan that cannot be read
/// for the system's fault (a failing disk) is the machinery's failure; one
/// that reads but is malformed or damaged is input to fix, naming the file.
fn resumed_plan(dir: &Path) -> Result<Plan> {
    let path = dir.join(PLAN_FILE);
    let Some(text) = input_file::read_text_if_present(&path, Bound::Record)? else {
        return Err(InputError::in_file(
            dir,
            format!("not a bisection directory (no {PLAN_FILE})"),
        )
        .into());
    };
    let plan: Plan = input_file::parse_toml(&path, &text, "bisection plan")?;
    plan.check()
        .map_err(|why| InputError::in_file(&path, format!("damaged bisection plan: {why}")))?;
    Ok(plan)
}

impl Plan {
    /// Why a plan read back is not one [`new_plan`] could have written, if
    /// it is not: the search indexes its commits from GOOD (the first) to
    /// BAD (the last) and names each by its id, so a plan with fewer than
    /// two, or an id that is not one, cannot be bisected; nor can figures be
    /// judged with a threshold, boots or rounds `new_plan` refuses.
    fn check(&self) -> Result<(), String> {
        if self.commits.len() < 2 {
            let held = if self.commits.is_empty() {
                "no commit"
            } else {
                "one commit"
            };
            return Err(format!(
                "`commits` holds {held}: a bisection runs from GOOD to BAD, two commits at least"
            ));
        }
        let not_an_id = |id: &str| id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit());
        if let Some((i, c)) = self
            .commits
            .iter()
            .enumerate()
            .find(|(_, c)| not_an_id(&c.id))
        {
            return Err(format!(
                "commit {} of `commits` has the id {:?}, not a git commit id",
                i + 1,
                c.id
            ));
        }
        if !(self.threshold > 0.0 && self.threshold < 1.0) {
            return Err(format!(
                "threshold {} is not a fraction above 0 and below 1",
                self.threshold
            ));
        }
        if self.boots < 2 {
            return Err(format!(
                "boots {}: a commit's figures need at least two boots to have an interval",
                self.boots
            ));
        }
        if self.max_rounds < 1 {
            return Err("max_rounds 0: a commit gets one round at least".into());
        }
        Ok(())
    }
}

/// The plan `request` asks for, every part of it checked: the tree and its
/// range of commits, the suite, the point, the variant, the threshold and
/// the boots; and the suite reduced to the point is one the checks accept.
fn new_plan(request: &Request) -> Result<Plan> {
    let missing = |flag: &str| InputError::new(format!("bisect needs {flag}"));
    let tree = request
        .tree
        .clone()
        .ok_or_else(|| missing("--kernel-source TREE (a git tree)"))?;
    let tree = tree
        .canonicalize()
        .map_err(|e| input_file::io_failure(e, format!("--kernel-source {}", tree.display())))?;
    let good = request
        .good
        .as_deref()
        .ok_or_else(|| missing("--good REV"))?;
    let bad = request.bad.as_deref().ok_or_else(|| missing("--bad REV"))?;
    let commits = range::commits(&tree, good, bad)?;
    let file = compare::read_suite(request.suite.as_deref())?;
    let spec = match &request.point {
        Some(p) => PointSpec::parse(p)?,
        None if request.suite.is_none() => PointSpec::parse(point::QUICK_DEFAULT)?,
        None => PointSpec::default(),
    };
    let resolved = spec.resolve(&file)?;
    let variant = chosen_variant(&file, request.variant.as_deref())?;
    let threshold = request.threshold.unwrap_or(1.0);
    if !(threshold > 0.0 && threshold < 100.0) {
        return Err(InputError::new(format!(
            "--threshold {threshold}: give a percentage above 0 and below 100"
        ))
        .into());
    }
    let (boots, max_rounds) = rounds(&file, request)?;
    let plan = Plan {
        tree,
        good: commits[0].id.clone(),
        bad: commits[commits.len() - 1].id.clone(),
        suite: request
            .suite
            .as_ref()
            .map(|path| path.canonicalize().unwrap_or_else(|_| path.clone())),
        suite_sha256: crate::base::sha256::Sha256::parse(file.sha256.clone())?,
        point: resolved,
        variant,
        threshold: threshold / 100.0,
        boots,
        iterations: request.iterations,
        max_rounds,
        profile: request.profile,
        commits,
    };
    // The suite with the point alone must be a suite the checks accept.
    restricted(&file, &plan)?;
    Ok(plan)
}

/// The variant each commit is built and booted as: the one asked for,
/// which the suite must have, else the suite's baseline.
fn chosen_variant(file: &Suite, asked: Option<&str>) -> Result<String> {
    match asked {
        None => Ok(file.variants[0].name.clone()),
        Some(v) if file.variants.iter().any(|x| x.name == v) => Ok(v.to_string()),
        Some(v) => Err(InputError::new(format!(
            "--variant {v}: {} has no such variant (it has {})",
            file.path.display(),
            file.variants
                .iter()
                .map(|x| x.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into()),
    }
}

/// Boots a round and the most rounds a commit gets, from the request or
/// the suite.
fn rounds(file: &Suite, request: &Request) -> Result<(u32, u32)> {
    // A suite run to a precision plans few boots and adds the rest; a
    // round of a bisection gets as many as such a run stops on at least.
    let suite_round = match file.precision {
        Some(_) => file
            .boots
            .max(crate::base::stats::sequential::MIN_BOOTS as u32),
        None => file.boots,
    };
    let boots = request.boots.unwrap_or(suite_round);
    if boots < 2 {
        return Err(InputError::new(format!(
            "--boots {boots}: a commit's figures need at least two boots to have an interval"
        ))
        .into());
    }
    let max_rounds = match request.max_boots {
        Some(m) if m < boots => {
            return Err(InputError::new(format!(
                "--max-boots {m} is fewer than one round of {boots} boots"
            ))
            .into())
        }
        Some(m) => m / boots,
        None => 3,
    };
    Ok((boots, max_rounds))
}

/// The directory a new bisection writes into: `--out` (refused when it
/// holds a bisection already, or when whether it does cannot be told: only
/// a `bisect.toml` not found is none to write over) or a new one under
/// `--reports`.
fn new_dir(request: &Request) -> Result<PathBuf> {
    match &request.out {
        Some(out) => {
            if input_file::present(&out.join(PLAN_FILE))? {
                return Err(InputError::in_file(
                    out,
                    format_args!(
                        "already holds a bisection; continue it with --resume {}",
                        out.display()
                    ),
                )
                .into());
            }
            std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
            Ok(out.clone())
        }
        None => Ok(RunDir::create_new(&request.reports, "bisect")
            .with_context(|| {
                format!(
                    "creating a bisection directory in {}",
                    request.reports.display()
                )
            })?
            .root()
            .to_path_buf()),
    }
}

/// The plan's suite, read again (a resumed bisection refuses one that
/// changed since it started).
fn suite_of(plan: &Plan) -> Result<Suite> {
    let file = compare::read_suite(plan.suite.as_deref())?;
    let now = crate::base::sha256::Sha256::parse(file.sha256.clone())?;
    if now != plan.suite_sha256 {
        return Err(InputError::in_file(
            &file.path,
            format!(
                "the suite changed since the bisection started (sha256 {} then, {} now)",
                plan.suite_sha256.short(),
                now.short()
            ),
        )
        .into());
    }
    Ok(file)
}

/// The suite reduced to the bisected point, its baseline variant's
/// configuration built from each commit in turn.
fn restricted(file: &Suite, plan: &Plan) -> Result<Suite> {
    let spec = &plan.point;
    let mut suite = spec.restrict(file)?;
    suite.boots = plan.boots;
    suite.profile = false;
    // A bisection decides how many rounds a commit gets; a suite's
    // precision target would add boots inside each round.
    suite.precision = None;
    let overrides = Overrides {
        iterations: plan.iterations,
        ..Overrides::default()
    };
    Ok(overrides.apply(&suite)?)
}

/// The suite measuring `commits` (one variant each, named by short id),
/// each built and booted as the plan's variant.
fn of_commits(suite: &Suite, plan: &Plan, commits: &[&RangeCommit]) -> Suite {
    let like = suite
        .variants
        .iter()
        .find(|v| v.name == plan.variant)
        .unwrap_or(&suite.variants[0]);
    let mut out = suite.clone();
    out.variants = compare::source_variants::at_commits(
        like,
        commits.iter().map(|c| (c.short_id(), c.id.as_str())),
    );
    out
}

/// Measures commits: builds their kernels, boots them in rounds, each
/// round a run directory of its own, and reads back what is stored.
struct Bench<'a> {
    dir: &'a Path,
    plan: &'a Plan,
    suite: Suite,
    spec: PointSpec,
    source: KernelSource,
    machine: Option<(vm::qemu::QemuRunner, vm::Machine)>,
    unit: String,
    higher_is_better: Option<bool>,
    show: &'a dyn Fn(BisectProgress<'_>),
}

impl<'a> Bench<'a> {
    fn new(
        dir: &'a Path,
        plan: &'a Plan,
        file: Suite,
        spec: PointSpec,
        show: &'a dyn Fn(BisectProgress<'_>),
    ) -> Result<Bench<'a>> {
        let suite = restricted(&file, plan)?;
        let source = KernelSource::from_path(&plan.tree)?;
        Ok(Bench {
            dir,
            plan,
            suite,
            spec,
            source,
            machine: None,
            unit: String::new(),
            higher_is_better: None,
            show,
        })
    }

    fn unit(&self) -> &str {
        &self.unit
    }

    /// The rules, the metric's direction read from GOOD's first round.
    fn rules(&mut self) -> Result<Rules> {
        let higher_is_better = match self.higher_is_better {
            Some(h) => h,
            None => {
                self.measure(0, 1)?;
                self.higher_is_better.unwrap_or(false)
            }
        };
        Ok(Rules {
            threshold: self.plan.threshold,
            max_rounds: self.plan.max_rounds,
            higher_is_better,
        })
    }

    fn commit_dir(&self, index: usize) -> PathBuf {
        commit_dir(self.dir, &self.plan.commits[index])
    }

    /// Commit `index`'s boots over its first `rounds` rounds, measuring
    /// the rounds not stored yet.
    fn measure(&mut self, index: usize, rounds: u32) -> Result<Measured> {
        let commit_dir = self.commit_dir(index);
        if let Some(why) = untestable(&commit_dir)? {
            return Ok(Measured::Untestable(why));
        }
        let mut boots = Vec::new();
        for round in 1..=rounds {
            let run = commit_dir.join(format!("round-{round}"));
            let meta = stored_run(&run)?;
            if !meta.as_ref().is_some_and(|m| m.complete) {
                let untestable = match self.boot(index, round, &run, meta) {
                    Ok(meta) if !meta.boots.iter().any(|b| b.ok()) => Some(format!(
                        "no boot of it completed ({}); see {}",
                        meta.boots
                            .iter()
                            .map(|b| b.status())
                            .collect::<Vec<_>>()
                            .join(", "),
                        run.join("report.md").display()
                    )),
                    Ok(_) => None,
                    Err(crate::base::error::Error::Machinery(e)) => {
                        match e.downcast::<BuildFailed>() {
                            Ok(failed) => Some(failed.to_string()),
                            Err(e) => return Err(e.into()),
                        }
                    }
                    Err(e) => return Err(e),
                };
                if let Some(why) = untestable {
                    std::fs::create_dir_all(&commit_dir)?;
                    std::fs::write(commit_dir.join(UNTESTABLE_FILE), &why)?;
                    (self.show)(BisectProgress::Untestable {
                        commit: self.plan.commits[index].short_id(),
                    });
                    return Ok(Measured::Untestable(why));
                }
            }
            boots.extend(self.read_round(&run)?);
        }
        Ok(Measured::Boots(boots))
    }

    /// The bisected point's values in one round's run directory, by boot.
    fn read_round(&mut self, run: &Path) -> Result<Boots> {
        let samples = crate::record::read_samples(run)?;
        let picked = self
            .spec
            .pick(&samples)
            .map_err(|m| InputError::in_file(run, m))?;
        if let Some(first) = picked.first() {
            self.unit = first.unit.clone();
            self.higher_is_better = Some(first.higher_is_better);
        }
        let mut by_boot: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
        for s in picked {
            by_boot.entry(s.boot).or_default().push(s.value);
        }
        Ok(by_boot.into_values().collect())
    }

    /// Builds commit `index`'s kernel and boots its `round` (continuing
    /// the round's run when `meta` holds an interrupted one).
    fn boot(
        &mut self,
        index: usize,
        round: u32,
        run: &Path,
        meta: Option<RunMeta>,
    ) -> Result<RunMeta> {
        let commit = &self.plan.commits[index];
        let suite = of_commits(&self.suite, self.plan, &[commit]);
        let images = self.images(index, &suite)?;
        // Each round's boots get seeds of their own: under icount the same
        // seed would measure the same figures again.
        let overrides = Overrides {
            seed: Some(self.suite.seed + u64::from(round - 1) * 1000),
            ..Overrides::default()
        };
        let what = format!(
            "measuring {} ({}), round {round}",
            commit.short_id(),
            commit.subject
        );
        let meta = self.execute(&suite, &images, overrides, run, meta, &what)?;
        if !meta.complete {
            return Err(Interrupted::new(format!(
                "{}: the round was interrupted; continue with markbench bisect --resume {}",
                run.display(),
                self.dir.display()
            ))
            .into());
        }
        Ok(meta)
    }

    /// The kernel of `suite`'s one commit, built or found in the cache, with
    /// what that took kept beside the commit's measurements.
    fn images(&self, index: usize, suite: &Suite) -> Result<crate::stages::run_images::Images> {
        let started = std::time::Instant::now();
        let images = crate::stages::run_images::prepare_images(suite, &self.source)?;
        let kernel = &images.kernels[0];
        keep_build(&self.commit_dir(index), || {
            // A kernel built by this call took at least its build time.
            let built_now = started.elapsed().as_secs_f64() >= kernel.build_seconds;
            Build {
                seconds: built_now.then_some(kernel.build_seconds),
                source_files_rebuilt: kernel.source_files_rebuilt,
                kernel_dir: kernel.dir.clone(),
            }
        })?;
        Ok(images)
    }

    /// QEMU and the machine, decided at the first boot of this process.
    fn machine(
        &mut self,
        run: &Resolved,
        images: &crate::stages::run_images::Images,
    ) -> Result<(&mut vm::qemu::QemuRunner, &vm::Machine)> {
        if self.machine.is_none() {
            let qemu = vm::qemu::QemuBinary::locate_for(run.qemu.as_deref(), run.suite.arch)?;
            let mut runner = vm::qemu::QemuRunner::new(&qemu);
            let machine = crate::stages::machine::decide(
                &run.suite,
                images,
                qemu,
                run.qemu.is_some(),
                &mut runner,
            )?;
            (self.show)(BisectProgress::Machine {
                machine: &machine,
                max_cpus: run.max_cpus(),
            });
            self.machine = Some((runner, machine));
        }
        let (runner, machine) = self.machine.as_mut().expect("decided above");
        Ok((runner, machine))
    }

    /// The first bad commit against its parent, function by function: a
    /// run of the two with the profile plugin (one timed boot each, then
    /// the profiled boots), in `profile/`.
    fn profile(&mut self, parent: usize, first_bad: usize) -> Result<PathBuf> {
        let run = self.dir.join("profile");
        let commits = [&self.plan.commits[parent], &self.plan.commits[first_bad]];
        let mut suite = of_commits(&self.suite, self.plan, &commits);
        suite.profile = true;
        suite.boots = 1;
        suite.precision = None;
        let meta = stored_run(&run)?;
        if meta.as_ref().is_some_and(|m| m.complete) {
            return Ok(run);
        }
        let images = crate::stages::run_images::prepare_images(&suite, &self.source)?;
        let what = format!(
            "profiling {} against its parent {}",
            commits[1].short_id(),
            commits[0].short_id()
        );
        self.execute(&suite, &images, Overrides::default(), &run, meta, &what)?;
        Ok(run)
    }

    /// Runs `suite` into the run directory `run` (continuing it when `meta`
    /// holds an interrupted run of it), as `compare` runs a suite.
    fn execute(
        &mut self,
        suite: &Suite,
        images: &crate::stages::run_images::Images,
        overrides: Overrides,
        run: &Path,
        meta: Option<RunMeta>,
        what: &str,
    ) -> Result<RunMeta> {
        let mut resolved = Resolved::planned(suite, overrides, self.source.clone())?;
        let show = self.show;
        let (runner, machine) = self.machine(&resolved, images)?;
        match meta {
            Some(meta) => resolved = resolved.resuming(run, meta),
            None => RunDir::new(run)
                .create()
                .with_context(|| format!("creating {}", run.display()))?,
        }
        show(BisectProgress::RoundStarted {
            what,
            boots: resolved.units.len(),
            dir: run,
        });
        compare::execute(&resolved, images, machine, runner, run)
            .with_context(|| format!("run in {}", run.display()))
    }
}

/// Where a commit's builds and rounds are kept in the bisection's directory.
fn commit_dir(dir: &Path, commit: &RangeCommit) -> PathBuf {
    dir.join("commits").join(commit.short_id())
}

/// The run stored in `run`, if one was started there. Only a `meta.toml`
/// not found is a round not started: one whose stat fails otherwise is an
/// error naming it, not a round measured again over the one stored.
fn stored_run(run: &Path) -> Result<Option<RunMeta>> {
    if input_file::present(&RunDir::new(run).meta())? {
        RunMeta::read(run).map(Some)
    } else {
        Ok(None)
    }
}

/// Why the commit whose directory is `commit_dir` cannot be measured, when
/// it was found so. Only an `untestable.txt` not found means it was not:
/// one that cannot be read is an error naming it, never a commit measured
/// again (or reported) as if it built.
fn untestable(commit_dir: &Path) -> Result<Option<String>> {
    input_file::read_text_if_present(&commit_dir.join(UNTESTABLE_FILE), Bound::Text)
}

/// What building the commit whose directory is `commit_dir` did, when it
/// was built; a record that cannot be read or parsed is an error naming it
/// (at its line and column when malformed).
fn build_record(commit_dir: &Path) -> Result<Option<Build>> {
    let path = commit_dir.join(BUILD_FILE);
    let Some(text) = input_file::read_text_if_present(&path, Bound::Record)? else {
        return Ok(None);
    };
    Ok(Some(input_file::parse_toml(&path, &text, "build record")?))
}

/// Writes `build()` as the commit's build record unless one is kept
/// already: the first build of a commit is the one that took its time (a
/// resumed bisection finds the kernel in the cache). A record whose stat
/// fails otherwise than "not found" is an error naming it, not a record
/// written over.
fn keep_build(commit_dir: &Path, build: impl FnOnce() -> Build) -> Result<()> {
    let record = commit_dir.join(BUILD_FILE);
    if input_file::present(&record)? {
        return Ok(());
    }
    std::fs::create_dir_all(commit_dir)
        .with_context(|| format!("creating {}", commit_dir.display()))?;
    std::fs::write(&record, toml::to_string(&build())?)
        .with_context(|| format!("writing {}", record.display()))?;
    Ok(())
}

/// Every build the bisection needed, in range order.
fn builds(dir: &Path, plan: &Plan) -> Result<Vec<(usize, answer::BuildOutcome)>> {
    let mut out = Vec::new();
    for (index, commit) in plan.commits.iter().enumerate() {
        let commit_dir = commit_dir(dir, commit);
        if let Some(why) = untestable(&commit_dir)? {
            out.push((index, answer::BuildOutcome::Failed { error: why }));
        } else if let Some(build) = build_record(&commit_dir)? {
            out.push((index, answer::BuildOutcome::Built(build)));
        }
    }
    Ok(out)
}

/// Of every intermediate commit, keeps what booting its kernel again needs
/// (its bzImage, configuration and record) and removes the rest: its
/// kernel's build directory (objects and vmlinux, some 150 MB) and the
/// snapshot of its source (some 1.5 GB; made again if ever needed). The
/// answer's commits (GOOD, BAD, the first bad commit and its parent) keep
/// theirs, for sizes and profiles.
fn keep_only_what_the_answer_needs(
    plan: &Plan,
    answer: &answer::Answer,
    show: &dyn Fn(BisectProgress<'_>),
) {
    let last = plan.commits.len() - 1;
    let mut kept = vec![0, last];
    if let Some(decide::Ending::FirstBad { index }) = answer.search.as_ref().map(|s| &s.ending) {
        kept.extend([*index, index - 1]);
    }
    for (index, build) in &answer.builds {
        if kept.contains(index) {
            continue;
        }
        let mut removed = vec![crate::guest::images::source::snapshot_dir(
            &plan.commits[*index].id,
        )];
        if let answer::BuildOutcome::Built(build) = build {
            removed.push(build.kernel_dir.join("build"));
        }
        for dir in removed.iter().filter(|d| d.is_dir()) {
            if let Err(error) = std::fs::remove_dir_all(dir) {
                show(BisectProgress::NotRemoved { dir, error: &error });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::exit::ExitStatus;

    fn plan(commits: usize) -> Plan {
        Plan {
            tree: "/src/linux".into(),
            good: "a".repeat(40),
            bad: "b".repeat(40),
            suite: None,
            suite_sha256: crate::base::sha256::Sha256::of(b"suite"),
            point: PointSpec::parse("hackbench/time@1=2").unwrap(),
            variant: String::new(),
            threshold: 0.01,
            boots: 4,
            iterations: None,
            max_rounds: 3,
            profile: false,
            commits: (0..commits)
                .map(|i| RangeCommit {
                    id: format!("{:040x}", i + 1),
                    subject: format!("commit {i}"),
                    author: "A. Developer <a@example.org>".into(),
                    merge: false,
                })
                .collect(),
        }
    }

    /// `plan` written as `dir`'s bisect.toml, and what resuming it reads.
    fn resumed(dir: &Path, plan: &Plan) -> Result<Plan> {
        std::fs::write(dir.join(PLAN_FILE), toml::to_string(plan).unwrap()).unwrap();
        resumed_plan(dir)
    }

    /// Why `e` ended a resumed bisection, as the user sees it, after
    /// checking it is input to fix.
    fn input_to_fix(e: crate::base::error::Error) -> String {
        assert_eq!(ExitStatus::of_error(&e, false), ExitStatus::Input, "{e:#}");
        format!("{e:#}")
    }

    /// The quick suite as `bisect` reads it.
    fn quick() -> Suite {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.toml");
        std::fs::write(&path, include_str!("../../../suites/quick.toml")).unwrap();
        Suite::load(
            &path,
            &crate::stages::suite::FragmentLookup::FromCwd {
                cwd: dir.path().to_path_buf(),
            },
        )
        .unwrap()
    }

    #[test]
    fn a_round_is_the_suites_boots_or_a_precision_runs_least() {
        let suite = quick();
        assert!(suite.precision.is_some());
        let request = |boots, max_boots| Request {
            boots,
            max_boots,
            ..Request::default()
        };
        // A suite run to a precision stops on no fewer boots than this.
        let least = crate::base::stats::sequential::MIN_BOOTS as u32;
        assert_eq!(rounds(&suite, &request(None, None)).unwrap(), (least, 3));
        let fixed = Suite {
            precision: None,
            ..suite.clone()
        };
        assert_eq!(rounds(&fixed, &request(None, None)).unwrap(), (2, 3));
        assert_eq!(rounds(&suite, &request(Some(4), Some(13))).unwrap(), (4, 3));
        for (boots, max_boots, says) in [
            (Some(1), None, "at least two boots"),
            (Some(4), Some(3), "fewer than one round of 4 boots"),
        ] {
            let e = rounds(&suite, &request(boots, max_boots)).unwrap_err();
            assert!(format!("{e:#}").contains(says), "{e:#}");
        }
    }

    #[test]
    fn each_commit_is_built_as_the_variant_asked_for_or_the_baseline() {
        let suite = quick();
        let names: Vec<&str> = suite.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(chosen_variant(&suite, None).unwrap(), names[0]);
        assert_eq!(chosen_variant(&suite, Some(names[1])).unwrap(), names[1]);
        let e = format!("{:#}", chosen_variant(&suite, Some("nope")).unwrap_err());
        assert!(
            e.contains("--variant nope") && e.contains(&names.join(", ")),
            "{e}"
        );
    }

    #[test]
    fn a_commit_measures_the_point_alone_in_the_plans_rounds() {
        let suite = quick();
        let plan = Plan {
            point: PointSpec::parse("hackbench@2=2").unwrap(),
            boots: 6,
            iterations: Some(7),
            ..plan(2)
        };
        let only = restricted(&suite, &plan).unwrap();
        assert_eq!(only.workloads.len(), 1);
        assert_eq!(only.workloads[0].label(), "hackbench");
        assert_eq!(only.workloads[0].params, [2]);
        assert_eq!(only.cpus, [2]);
        assert_eq!(only.boots, 6);
        assert_eq!((only.iterations, only.workloads[0].iterations), (7, None));
        // The bisection decides the rounds: no precision target, no profile.
        assert!(only.precision.is_none() && !only.profile);
    }

    #[test]
    fn a_commit_is_kept_under_its_short_id() {
        let plan = plan(2);
        assert_eq!(
            commit_dir(Path::new("/b"), &plan.commits[1]),
            Path::new("/b/commits").join(&plan.commits[1].id[..12])
        );
    }

    #[test]
    fn a_plan_as_written_resumes() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(resumed(dir.path(), &plan(2)).unwrap(), plan(2));
    }

    #[test]
    fn a_plan_without_two_commits_is_input_to_fix_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        for (n, held) in [(0, "no commit"), (1, "one commit")] {
            let e = input_to_fix(resumed(dir.path(), &plan(n)).unwrap_err());
            assert!(
                e.contains(&format!(
                    "bisect.toml: damaged bisection plan: `commits` holds {held}"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn a_plan_with_values_a_new_one_cannot_have_is_input_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        type Damage = fn(&mut Plan);
        let damaged: [(Damage, &str); 4] = [
            (
                |p| p.commits[1].id = "é".repeat(20),
                "commit 2 of `commits` has the id",
            ),
            (
                |p| p.threshold = f64::NAN,
                "threshold NaN is not a fraction",
            ),
            (|p| p.boots = 1, "boots 1: a commit's figures need"),
            (|p| p.max_rounds = 0, "max_rounds 0"),
        ];
        for (damage, says) in damaged {
            let mut p = plan(3);
            damage(&mut p);
            let e = input_to_fix(resumed(dir.path(), &p).unwrap_err());
            assert!(e.contains("bisect.toml: damaged bisection plan: "), "{e}");
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_plan_that_is_not_toml_or_not_there_is_input_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let e = input_to_fix(resumed_plan(dir.path()).unwrap_err());
        assert!(
            e.contains("not a bisection directory (no bisect.toml)"),
            "{e}"
        );
        std::fs::write(
            dir.path().join(PLAN_FILE),
            "tree = \"/src/linux\"\ncommits = 3\n",
        )
        .unwrap();
        let e = input_to_fix(resumed_plan(dir.path()).unwrap_err());
        assert!(
            e.contains("bisect.toml:2:11: malformed bisection plan"),
            "{e}"
        );
    }

    #[test]
    fn a_plan_the_disk_fails_to_read_is_the_machinery() {
        let dir = tempfile::tempdir().unwrap();
        crate::base::input_file::link_to_failing_read(&dir.path().join(PLAN_FILE));
        let e = resumed_plan(dir.path()).unwrap_err();
        assert_eq!(ExitStatus::of_error(&e, false), ExitStatus::Machinery);
        assert!(
            format!("{e:#}").contains("bisect.toml: cannot be read: Input/output error"),
            "{e:#}"
        );
    }

    #[test]
    fn out_is_refused_when_whether_it_holds_a_bisection_cannot_be_told() {
        let dir = tempfile::tempdir().unwrap();
        let request = |out: &Path| Request {
            out: Some(out.to_path_buf()),
            ..Request::default()
        };
        let out = dir.path().join("bisection");
        assert_eq!(new_dir(&request(&out)).unwrap(), out);
        std::fs::write(out.join(PLAN_FILE), "").unwrap();
        let e = input_to_fix(new_dir(&request(&out)).unwrap_err());
        assert!(e.contains("already holds a bisection"), "{e}");
        // ENOTDIR: `--out` is a file.
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let e = input_to_fix(new_dir(&request(&file)).unwrap_err());
        assert!(
            e.contains("file/bisect.toml: cannot be read: Not a directory"),
            "{e}"
        );
    }

    /// `plan(commits)` with ids that differ in their short form, so each
    /// commit has a directory of its own.
    fn plan_of_distinct_commits(commits: usize) -> Plan {
        let mut plan = plan(commits);
        for (i, c) in plan.commits.iter_mut().enumerate() {
            c.id = format!("{:x}{}", i + 1, "0".repeat(39));
        }
        plan
    }

    /// `plan`'s first commit's directory in `dir`, made.
    fn first_commit_dir(dir: &Path, plan: &Plan) -> PathBuf {
        let commit_dir = commit_dir(dir, &plan.commits[0]);
        std::fs::create_dir_all(&commit_dir).unwrap();
        commit_dir
    }

    fn a_build() -> Build {
        Build {
            seconds: Some(90.5),
            source_files_rebuilt: Some(1),
            kernel_dir: "/cache/kernels/k".into(),
        }
    }

    #[test]
    fn builds_reads_what_each_commit_left() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_of_distinct_commits(3);
        assert_eq!(builds(dir.path(), &plan).unwrap(), Vec::new());
        keep_build(&commit_dir(dir.path(), &plan.commits[0]), a_build).unwrap();
        let untestable = commit_dir(dir.path(), &plan.commits[2]);
        std::fs::create_dir_all(&untestable).unwrap();
        std::fs::write(untestable.join(UNTESTABLE_FILE), "it does not build").unwrap();
        assert_eq!(
            builds(dir.path(), &plan).unwrap(),
            vec![
                (0, answer::BuildOutcome::Built(a_build())),
                (
                    2,
                    answer::BuildOutcome::Failed {
                        error: "it does not build".into()
                    }
                )
            ]
        );
    }

    #[test]
    fn a_malformed_build_record_is_input_to_fix_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(2);
        let commit_dir = first_commit_dir(dir.path(), &plan);
        std::fs::write(
            commit_dir.join(BUILD_FILE),
            "kernel_dir = \"/cache/k\"\nseconds = \"many\"\n",
        )
        .unwrap();
        let e = input_to_fix(builds(dir.path(), &plan).unwrap_err());
        assert!(
            e.contains(&format!(
                "{}:2:11: malformed build record: invalid type",
                commit_dir.join(BUILD_FILE).display()
            )),
            "{e}"
        );
    }

    #[test]
    fn a_commit_record_the_disk_fails_to_read_is_the_machinery_not_absent() {
        for file in [UNTESTABLE_FILE, BUILD_FILE] {
            let dir = tempfile::tempdir().unwrap();
            let plan = plan(2);
            let commit_dir = first_commit_dir(dir.path(), &plan);
            crate::base::input_file::link_to_failing_read(&commit_dir.join(file));
            let e = builds(dir.path(), &plan).unwrap_err();
            assert_eq!(ExitStatus::of_error(&e, false), ExitStatus::Machinery);
            assert!(
                format!("{e:#}").contains(&format!("{file}: cannot be read: Input/output error")),
                "{e:#}"
            );
            if file == UNTESTABLE_FILE {
                let e = untestable(&commit_dir).unwrap_err();
                assert_eq!(ExitStatus::of_error(&e, false), ExitStatus::Machinery);
            }
        }
    }

    #[test]
    fn a_round_whose_record_cannot_be_looked_at_is_an_error_not_a_round_to_measure() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("round-1");
        assert!(stored_run(&run).unwrap().is_none());
        // A stat failing otherwise than "not found" (here ENOTDIR: the
        // round's directory is a file) says nothing of the round.
        std::fs::write(&run, "").unwrap();
        let e = input_to_fix(stored_run(&run).unwrap_err());
        assert!(
            e.contains("round-1/meta.toml: cannot be read: Not a directory"),
            "{e}"
        );
    }

    #[test]
    fn a_build_record_is_written_once_and_never_over_one_that_cannot_be_looked_at() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(2);
        let commit_dir = commit_dir(dir.path(), &plan.commits[0]);
        keep_build(&commit_dir, a_build).unwrap();
        keep_build(&commit_dir, || Build {
            seconds: None,
            ..a_build()
        })
        .unwrap();
        assert_eq!(build_record(&commit_dir).unwrap(), Some(a_build()));
        // ENOTDIR: the commit's directory is a file.
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let e = input_to_fix(keep_build(&file, a_build).unwrap_err());
        assert!(
            e.contains("file/build.toml: cannot be read: Not a directory"),
            "{e}"
        );
    }
}
