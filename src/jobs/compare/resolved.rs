//! One resolved run: the suite with the command line's changes applied and
//! checked, the shard it runs, the kernel source, and the plan computed once.
//! Everything after it (images, boots, metadata) takes this value and
//! decides nothing again.

use super::Options;
use crate::base::error::InputError;
use crate::base::error::{Context, Result};
use crate::guest::images::fragments::FragmentSearch;
use crate::guest::images::kernel::KernelSource;
use crate::record::{Overrides, RunMeta, ShardMeta, ShardSel};
use crate::stages::plan::{self, Unit};
use crate::stages::suite::{FragmentLookup, Suite, DEFAULT_SUITE};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Resolved {
    /// The suite with the overrides (and the accelerator, timing and
    /// profile options) applied.
    pub suite: Suite,
    /// The overrides as given, recorded so a resumed run applies them again.
    pub overrides: Overrides,
    /// The part of the suite this run does; `None` for all of it.
    pub shard: Option<ShardSel>,
    pub source: KernelSource,
    /// The run order: every unit this run boots.
    pub units: Vec<Unit>,
    /// The QEMU binary asked for (`--qemu`, else the suite's).
    pub qemu: Option<PathBuf>,
    pub allow_oversubscribe: bool,
    /// The interrupted run this one continues: its directory and metadata.
    pub resumed: Option<(PathBuf, RunMeta)>,
    /// Whether the run is a patch series (`--revs BASE..TIP`): its kernels
    /// are then also compared each with the one before.
    pub series: bool,
    /// Units the plan holds, before any a run with a precision target added
    /// (a resumed run's additions follow them in `units`).
    pub planned: usize,
    /// Guests at once as asked (`--jobs`, the suite's `jobs`) or not.
    pub jobs: crate::stages::slots::Asked,
    /// What `--cpus` leaves out of the suite, in words (the dry run says it).
    pub left_out: Vec<String>,
}

fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().context("reading the current directory")
}

/// The suite `path` names (a relative path is taken from the current
/// directory, as by any command), or without it suites/quick.toml in the
/// current directory, else markbench's built-in copy of that suite (whose
/// `built_in` says so, for the caller to tell).
pub fn read_suite(path: Option<&Path>) -> Result<Suite> {
    let cwd = current_dir()?;
    let lookup = FragmentLookup::BesideSuite { cwd: cwd.clone() };
    let default = Path::new(DEFAULT_SUITE);
    match path {
        Some(path) => Ok(Suite::load(path, &lookup)?),
        None if crate::base::input_file::present(default)? => Ok(Suite::load(default, &lookup)?),
        None => Ok(Suite::built_in(default, &cwd)
            .context("the default suite is not built into markbench")??),
    }
}

/// The kernel source `path` names, else the suite's, else Debian's.
pub fn kernel_source(path: Option<&Path>, suite: &Suite) -> Result<KernelSource> {
    let source_path = path
        .map(Path::to_path_buf)
        .or_else(|| suite.kernel_source.clone())
        .unwrap_or_else(|| PathBuf::from(crate::base::prereq::DEFAULT_KERNEL_SOURCE));
    let source = if source_path == Path::new(crate::base::prereq::DEFAULT_KERNEL_SOURCE)
        && !source_path.exists()
    {
        // Installed by `setup` before the build; checked again after it ran.
        KernelSource::Tarball(source_path)
    } else {
        KernelSource::from_path(&source_path)?
    };
    Ok(source)
}

/// For `--resume`: the run's metadata and its suite as it ran (the copy kept
/// in the run directory), with the overrides it ran with.
fn resumed_suite(dir: &Path) -> Result<(RunMeta, Suite)> {
    let layout = crate::base::run_dir::RunDir::new(dir);
    let present = crate::base::input_file::present;
    if !present(&layout.meta())? || !present(&layout.suite_copy())? {
        return Err(InputError::in_file(
            dir,
            format!(
                "not a run directory that can be resumed (needs {} and {})",
                crate::base::run_dir::META_FILE,
                crate::base::run_dir::SUITE_COPY
            ),
        )
        .into());
    }
    let meta = RunMeta::read(dir)?;
    // The fragments the run started with, as it kept them; runs from
    // before it kept them look theirs up as a new run would.
    let copies = layout.fragments_copy();
    let lookup = if copies.is_dir() {
        FragmentLookup::Fixed(FragmentSearch::only(&copies, "kept with the run"))
    } else {
        FragmentLookup::BesideSuite {
            cwd: current_dir()?,
        }
    };
    let suite = Suite::load(&layout.suite_copy(), &lookup)?;
    if suite.sha256 != meta.suite_sha256 {
        return Err(InputError::in_file(
            dir,
            "the suite copy does not match the run's recorded suite hash",
        )
        .into());
    }
    Ok((meta, suite))
}

/// The cycle model a run takes, from the suite's (`suite`): an interrupted
/// run's as it recorded it (`recorded`), else the profile `--model-profile`
/// names over the suite's settings, else the calibrated profile of the
/// host's CPU in the cache (`cached`, when there is one) over the defaults
/// when the suite names the model without settings of its own, else the
/// suite's. A profile is read when the run starts and recorded with it,
/// so calibrating again changes no run already made.
fn model_settings(
    suite: &crate::base::cycle_model::CycleModel,
    recorded: Option<crate::base::cycle_model::CycleModel>,
    named: Option<&Path>,
    cached: &Path,
) -> Result<crate::base::cycle_model::CycleModel> {
    if let Some(recorded) = recorded {
        return Ok(recorded);
    }
    let file = match named {
        Some(path) => path,
        None if *suite == crate::base::cycle_model::CycleModel::default()
            && crate::base::input_file::present(cached)? =>
        {
            cached
        }
        None => return Ok(suite.clone()),
    };
    let profile = crate::base::calibration::read(file)?;
    let mut model = suite.clone();
    profile
        .apply(&mut model, file)
        .map_err(|m| InputError::in_file(file, m))?;
    Ok(model)
}

impl Resolved {
    /// Resolves what `options` ask for: reads and checks the suite (or, to
    /// resume, the run's own copy and overrides), applies the overrides and
    /// options, and plans the run.
    pub fn new(options: &Options) -> Result<Resolved> {
        let (file, overrides, resumed) = match &options.resume {
            Some(dir) => {
                let (meta, suite) = resumed_suite(dir)?;
                let asked = options.overrides.shard;
                if asked.is_some() && meta.overrides.shard != asked {
                    return Err(InputError::in_file(
                        dir,
                        format!(
                            "that run is not shard {} of {}",
                            asked.map_or(0, |s| s.index),
                            asked.map_or(0, |s| s.count)
                        ),
                    )
                    .into());
                }
                (suite, meta.overrides.clone(), Some((dir.clone(), meta)))
            }
            None => (
                read_suite(options.suite.as_deref())?,
                options.overrides.clone(),
                None,
            ),
        };
        let source = kernel_source(options.kernel_source.as_deref(), &file)?;
        let mut run = Resolved::planned(&file, overrides, source)?;
        if let Some((_, meta)) = &resumed {
            let added = plan::recorded_additions(&run.suite, &run.units, &meta.order);
            run.units.extend(added);
        }
        run.resumed = resumed;
        run.qemu = options.qemu.clone().or_else(|| run.suite.qemu.clone());
        run.allow_oversubscribe = options.allow_oversubscribe;
        if let Some(jobs) = options.jobs {
            if jobs == 0 {
                return Err(InputError::new("--jobs must be at least 1").into());
            }
            run.jobs = crate::stages::slots::Asked::CommandLine(jobs);
        }
        let suite = &mut run.suite;
        if let Some(accel) = options.accel {
            suite.accel = accel;
        }
        if let Some(timing) = options.timing {
            suite.timing = timing;
        }
        if let Some(turn) = options.smp_turn {
            crate::stages::suite::check_smp_turn(turn)
                .map_err(|m| InputError::new(format!("--smp-turn {m}")))?;
            suite.smp_turn = turn;
        }
        if let Some(shift) = options.icount_shift {
            crate::stages::suite::check_icount_shift(shift)
                .map_err(|m| InputError::new(format!("--icount-shift {m}")))?;
            suite.icount_shift = shift;
        }
        suite.profile |= options.profile;
        if (options.model.is_some() || options.model_profile.is_some()) && suite.model.is_none() {
            suite.model = Some(Default::default());
        }
        if suite.model.is_some() && suite.arch != crate::base::arch::Arch::X86_64 {
            return Err(InputError::new(format!(
                "--model: {}",
                crate::stages::suite::model_refusal(suite.arch)
            ))
            .into());
        }
        if let Some(model) = &mut suite.model {
            let recorded = match &run.resumed {
                Some((dir, _)) => crate::base::cycle_model::CycleModel::read(dir)?,
                None => None,
            };
            *model = model_settings(
                model,
                recorded,
                options.model_profile.as_deref(),
                &crate::guest::images::cache::model_profile(&crate::base::host::cpu_model()),
            )?;
        }
        Ok(run)
    }

    /// `file` with `overrides` applied and planned (the whole run order, or
    /// the shard's selection of it): a new run, no options beyond the suite's.
    pub fn planned(file: &Suite, overrides: Overrides, source: KernelSource) -> Result<Resolved> {
        let file = super::source_variants::apply(file, &overrides, &source)?;
        let series = super::source_variants::is_series(&overrides);
        let (suite, left_out) = overrides.apply_saying_what_is_left_out(&file)?;
        let whole = plan::expand(&suite);
        let units = match overrides.shard {
            Some(sel) => crate::stages::shard::select(&whole, &suite, sel),
            None => whole,
        };
        Ok(Resolved {
            planned: units.len(),
            jobs: suite.jobs.map_or(
                crate::stages::slots::Asked::Default,
                crate::stages::slots::Asked::Suite,
            ),
            shard: overrides.shard,
            qemu: suite.qemu.clone(),
            allow_oversubscribe: false,
            suite,
            overrides,
            source,
            units,
            resumed: None,
            series,
            left_out,
        })
    }

    /// This run as the continuation of the interrupted run in `dir`.
    pub fn resuming(mut self, dir: &Path, meta: RunMeta) -> Resolved {
        self.resumed = Some((dir.to_path_buf(), meta));
        self
    }

    /// What decides the blocks a run with a precision target adds, writing
    /// into `dir`, booting `jobs` guests at once, its budget counted from
    /// `first_boot` (a resumed run's earlier boots have spent their wall
    /// time of it, as many at once as it booted); `None` without a target.
    pub fn additions<'a>(
        &'a self,
        dir: &'a Path,
        jobs: usize,
        first_boot: std::time::Instant,
    ) -> Option<super::precision::Additions<'a>> {
        let precision = self.suite.precision?;
        let already_s = self.resumed.as_ref().map_or(0.0, |(_, meta)| {
            let at_once = meta.slots.as_ref().map_or(1, |s| s.jobs.max(1));
            meta.boots.iter().map(|b| b.wall_s).sum::<f64>() / at_once as f64
        });
        Some(super::precision::Additions {
            suite: &self.suite,
            dir,
            rule: crate::base::stats::sequential::FixedWidth::percent_target(precision.percent),
            cap: precision.boot_cap(self.planned),
            budget_s: precision.budget_s.map(|s| s as f64),
            first_boot,
            already_s,
            jobs: jobs.max(1),
            shard: self.shard.map_or((0, 1), |s| (s.index, s.count)),
        })
    }

    /// The record a new run with a precision target starts with.
    pub fn precision_record(&self) -> Option<crate::record::PrecisionRecord> {
        let precision = self.suite.precision?;
        Some(crate::record::PrecisionRecord {
            percent: precision.percent,
            budget_s: precision.budget_s,
            budget_scope: crate::record::BudgetScope::Boots,
            max_boots: precision.boot_cap(self.planned),
            min_boots: crate::base::stats::sequential::MIN_BOOTS,
            added_boots: 0,
            stopped: None,
        })
    }

    /// The largest guest of the run, in vCPUs.
    pub fn max_cpus(&self) -> u32 {
        self.suite.cpus.iter().copied().max().unwrap_or(1)
    }

    /// A shard's run: which shard and what it runs, for its metadata.
    pub fn shard_meta(&self) -> Option<ShardMeta> {
        self.shard.map(|sel| ShardMeta {
            index: sel.index,
            count: sel.count,
            pieces: crate::stages::shard::pieces(&self.suite, sel)
                .iter()
                .map(crate::stages::shard::Piece::describe)
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::cycle_model::CycleModel;

    const PROFILE: &str =
        "cpu = \"AMD EPYC\"\nhost = \"vm\"\nmeasured = \"2026-12-07T14:00:00Z\"\n\
        clock-ghz = 2.9\n[figures]\nmemory-cycles = 700.2\n[settings]\nmemory-cycles = 695\n\
        issue-width = 3\n";

    #[test]
    fn a_run_takes_the_cpus_profile_unless_the_suite_or_the_command_line_names_another() {
        let dir = tempfile::tempdir().unwrap();
        let cached = dir.path().join("amd-epyc.toml");
        let none = dir.path().join("none.toml");
        let default = CycleModel::default();
        // No profile: the suite's model as it is.
        assert_eq!(
            model_settings(&default, None, None, &none).unwrap(),
            default
        );
        std::fs::write(&cached, PROFILE).unwrap();
        let calibrated = model_settings(&default, None, None, &cached).unwrap();
        assert_eq!(calibrated.get("memory-cycles"), 695);
        assert_eq!(calibrated.get("issue-width"), 3);
        assert_eq!(calibrated.get("l2-cycles"), default.get("l2-cycles"));
        let note = calibrated.profile.as_ref().unwrap();
        assert_eq!((note.cpu.as_str(), note.host.as_str()), ("AMD EPYC", "vm"));
        assert_eq!(note.file, cached.display().to_string());
        // A suite with settings of its own keeps them.
        let mut own = default.clone();
        own.set("memory-cycles", 300).unwrap();
        assert_eq!(model_settings(&own, None, None, &cached).unwrap(), own);
        // --model-profile goes over the suite's settings.
        let named = model_settings(&own, None, Some(&cached), &none).unwrap();
        assert_eq!(named.get("memory-cycles"), 695);
        // A resumed run keeps what it recorded, whatever was calibrated since.
        assert_eq!(
            model_settings(&default, Some(own.clone()), None, &cached).unwrap(),
            own
        );
    }

    #[test]
    fn a_damaged_profile_is_an_input_error_naming_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(&file, PROFILE.replace("issue-width = 3", "tlb-entries = 3")).unwrap();
        let e = model_settings(&CycleModel::default(), None, Some(&file), &file).unwrap_err();
        assert!(matches!(e, crate::base::error::Error::Input(_)), "{e:#}");
        assert!(format!("{e:#}").contains("p.toml"), "{e:#}");
        assert!(format!("{e:#}").contains("tlb-entries"), "{e:#}");
        std::fs::write(&file, "cpu = ").unwrap();
        let e = model_settings(&CycleModel::default(), None, Some(&file), &file).unwrap_err();
        assert!(format!("{e:#}").contains("p.toml:1"), "{e:#}");
    }
}
