//! `markbench history DIR…`: every complete run under the directories,
//! grouped by suite and point and ordered by time, each point's values run
//! after run with the change points in them, written as `history.md` and a
//! self-contained `history.html`.
//!
//! - the value of a run at a point is the gated variant's mean over boots
//!   (`--variant`, by default the run's candidate, as `nightly` gates it)
//!   with its 95% t interval on boot means; the band beside it is the
//!   baseline variant's interval in the same run;
//! - a run whose conditions differ from the run before it (what `diff`
//!   warns of: QEMU, timing mode, guest image, accelerator, suite file…)
//!   begins a new series: change points are searched within a series only,
//!   since values across such a change are not comparable;
//! - change points come from [`crate::base::stats::change_points`]; each names the
//!   runs it lies between, the step (ratio of the two segments' means, with
//!   the Welch interval of their log ratio) and, when both runs' kernels are
//!   commits of one git tree, the `markbench bisect` command that finds the
//!   commit.

use crate::base::error::InputError;
use crate::base::error::{Context, Result};
use crate::base::input_file;
use crate::base::stats::change_points::{e_divisive, ChangePointConfig};
use crate::base::stats::hypothesis::LogRatio;
use crate::record::GateRecord;
use crate::record::{ConditionChange, PointKey, RunMeta, SkippedRun};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The history's records and files are the report's, which renders them.
pub use crate::stages::report::history::{
    Change, PointHistory, Run, SuiteHistory, Value, HTML_FILE, MARKDOWN_FILE, PLOTS_DIR,
};

/// The histories written, and the directories that look like runs but
/// could not be read (named on the page, and left out), for the caller to
/// tell.
pub struct Written {
    pub histories: Vec<SuiteHistory>,
    pub skipped: Vec<SkippedRun>,
}

/// Reads the runs under `dirs`, writes `history.md` and `history.html`
/// into `out` and returns the histories.
pub fn history(dirs: &[PathBuf], out: &Path, variant: Option<&str>) -> Result<Written> {
    let (runs, skipped) = collect(dirs)?;
    let histories = by_suite(runs)
        .into_iter()
        .map(|runs| suite_history(runs, variant))
        .collect::<Result<Vec<_>>>()?;
    write(&histories, &skipped, out)?;
    Ok(Written { histories, skipped })
}

/// Writes the page's files into `out`: `history.md` with its plots beside
/// it, and `history.html` (rendered by `report::history`).
fn write(histories: &[SuiteHistory], skipped: &[SkippedRun], out: &Path) -> Result<()> {
    let page = crate::stages::report::history::render(histories, skipped)?;
    let plots = out.join(PLOTS_DIR);
    std::fs::create_dir_all(&plots).with_context(|| format!("creating {}", plots.display()))?;
    for (anchor, svg) in &page.plots {
        let path = plots.join(format!("{anchor}.svg"));
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
    }
    for (file, text) in [(MARKDOWN_FILE, &page.markdown), (HTML_FILE, &page.html)] {
        let path = out.join(file);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Every complete, whole (not a single shard's) run under `dirs`: each a
/// run directory or a directory of runs, with its samples; and the
/// directories passed over because they cannot be read, each with why. An
/// input error names a directory with no readable run.
pub fn collect(dirs: &[PathBuf]) -> Result<(Vec<Run>, Vec<SkippedRun>)> {
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for dir in dirs {
        require_dir(dir)?;
        let skip = |e: crate::base::error::Error| {
            (
                Vec::new(),
                vec![SkippedRun {
                    dir: dir.clone(),
                    why: format!("{e:#}"),
                }],
            )
        };
        // A meta.toml that cannot be looked at may be a run's: it is skipped
        // with why, as one that cannot be read, never taken for a directory
        // of runs with none in it.
        let (found, unreadable) = match input_file::present(&dir.join(crate::record::META_FILE)) {
            Ok(true) => match RunMeta::read(dir) {
                Ok(meta) => (vec![(dir.clone(), meta)], Vec::new()),
                Err(e) => skip(e),
            },
            Ok(false) => crate::record::scan_runs(dir),
            Err(e) => skip(e),
        };
        skipped.extend(unreadable);
        let before = runs.len();
        for (dir, meta) in found {
            if !(meta.complete && meta.shard.is_none()) {
                continue;
            }
            let read = GateRecord::read(&dir)
                .and_then(|gate| Ok((gate, crate::record::read_samples(&dir)?)));
            match read {
                Ok((gate, samples)) => runs.push(Run {
                    dir,
                    meta,
                    gate,
                    samples,
                }),
                Err(e) => skipped.push(SkippedRun {
                    dir,
                    why: format!("{e:#}"),
                }),
            }
        }
        if runs.len() == before {
            let why = skipped
                .iter()
                .map(|s| format!("\n  {s}"))
                .collect::<String>();
            return Err(InputError::in_file(dir, format!("no complete run here (a run directory with meta.toml, or a directory of them){why}"))
            .into());
        }
    }
    // The same run named twice (a directory and a run in it, or two
    // spellings of one path) counts once; two runs whose paths cannot be
    // resolved stay two.
    let runs = once_each(runs, |r| &r.dir);
    let skipped = once_each(skipped, |s| &s.dir);
    Ok((runs, skipped))
}

/// `items` in the order of their runs' resolved paths, each run once; each
/// path is resolved once.
fn once_each<T>(items: Vec<T>, dir: impl Fn(&T) -> &PathBuf) -> Vec<T> {
    let mut keyed: Vec<(PathBuf, T)> = items
        .into_iter()
        .map(|item| (same_run_key(dir(&item)), item))
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.dedup_by(|a, b| a.0 == b.0);
    keyed.into_iter().map(|(_, item)| item).collect()
}

/// What tells two names of one run directory apart from two runs: the
/// resolved path, or the path as given where it cannot be resolved.
fn same_run_key(dir: &Path) -> PathBuf {
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

/// Input error unless `dir`, a directory `history` was given, is one; a
/// stat that fails otherwise than "not found" is that error, named.
fn require_dir(dir: &Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(InputError::in_file(dir, "not a directory").into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(InputError::in_file(dir, "no such directory").into())
        }
        Err(e) => Err(input_file::io_failure(
            e,
            format!("{}: cannot be read", dir.display()),
        )),
    }
}

/// The runs grouped by suite, each group in time order; diffs of two runs
/// of a suite are a group of their own.
fn by_suite(runs: Vec<Run>) -> Vec<Vec<Run>> {
    let mut groups: BTreeMap<(String, bool), Vec<Run>> = BTreeMap::new();
    for run in runs {
        groups
            .entry((run.meta.suite.clone(), run.meta.diff))
            .or_default()
            .push(run);
    }
    let time = |run: &Run| {
        chrono::DateTime::parse_from_rfc3339(&run.meta.started_at)
            .map(|t| t.timestamp_millis())
            .ok()
    };
    groups
        .into_values()
        .map(|mut runs| {
            // By start time; the directory name (which begins with the date)
            // for runs that record none.
            runs.sort_by(|a, b| time(a).cmp(&time(b)).then_with(|| a.dir.cmp(&b.dir)));
            runs
        })
        .collect()
}

fn suite_history(runs: Vec<Run>, variant: Option<&str>) -> Result<SuiteHistory> {
    let newest = &runs[runs.len() - 1].meta;
    let variant = match variant {
        Some(v) => v.to_string(),
        None => crate::jobs::diff::default_variant(newest).ok_or_else(|| {
            InputError::in_file(
                &runs[runs.len() - 1].dir,
                "the run records no candidate variant",
            )
        })?,
    };
    let baseline_variant = newest
        .kernels
        .first()
        .map(|k| k.variant.clone())
        .unwrap_or_default();
    let series_starts: Vec<(usize, Vec<ConditionChange>)> = runs
        .windows(2)
        .enumerate()
        .filter_map(|(i, pair)| {
            let why = ConditionChange::between(&pair[0].meta, &pair[1].meta);
            (!why.is_empty()).then_some((i + 1, why))
        })
        .collect();

    let mut points: BTreeMap<PointKey, PointHistory> = BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        let analysis = crate::stages::analysis::analyse_unbootstrapped(&run.meta, &run.samples);
        let side = |name: &str| analysis.variants.iter().position(|v| v == name);
        let Some(tracked) = side(&variant) else {
            continue;
        };
        let baseline = side(&baseline_variant).filter(|&b| b != tracked);
        for (table, list) in &analysis.tables {
            for (j, point) in list.iter().enumerate() {
                let key = PointKey {
                    workload: table.workload.clone(),
                    metric: table.metric.clone(),
                    cpus: table.cpus,
                    param: point.param,
                };
                let Some((summary, _)) = analysis.variant_summary(table, j, tracked) else {
                    continue;
                };
                if summary.n_boots == 0 || !summary.mean.is_finite() {
                    continue;
                }
                let interval = |s: &crate::base::stats::SideSummary| {
                    s.mean_ci.map(|c| (c.interval.lower, c.interval.upper))
                };
                let band = baseline
                    .and_then(|b| analysis.variant_summary(table, j, b))
                    .filter(|(s, _)| s.n_boots > 0 && s.mean.is_finite())
                    .map(|(s, _)| interval(s).unwrap_or((s.mean, s.mean)));
                let regressed = run.gate.as_ref().is_some_and(|g| {
                    g.regressed.iter().any(|r| {
                        r.variant == variant
                            && r.workload == key.workload
                            && r.metric == key.metric
                            && r.cpus == key.cpus
                            && r.param == key.param
                    })
                });
                let history = points.entry(key.clone()).or_insert_with(|| PointHistory {
                    key,
                    unit: point.unit.clone(),
                    higher_is_better: point.higher_is_better,
                    values: vec![None; runs.len()],
                    changes: Vec::new(),
                    series_starts: Vec::new(),
                });
                history.values[i] = Some(Value {
                    mean: summary.mean,
                    interval: interval(summary),
                    band,
                    regressed,
                });
            }
        }
    }
    let mut points: Vec<PointHistory> = points.into_values().collect();
    let config = ChangePointConfig::default();
    for point in &mut points {
        point.series_starts = series_starts
            .iter()
            .map(|(i, why)| (*i, short_reason(why)))
            .collect();
        point.changes = changes(point, &runs, &series_starts, &variant, &config);
    }
    Ok(SuiteHistory {
        suite: runs[0].meta.suite_title(),
        variant,
        baseline_variant,
        runs,
        series_starts,
        points,
    })
}

/// The few words a plot shows for why a series began: what differs.
fn short_reason(why: &[ConditionChange]) -> String {
    let mut what: Vec<&str> = why.iter().map(ConditionChange::condition).collect();
    what.dedup();
    what.join(", ")
}

/// The change points of one point, series by series.
fn changes(
    point: &PointHistory,
    runs: &[Run],
    series_starts: &[(usize, Vec<ConditionChange>)],
    variant: &str,
    config: &ChangePointConfig,
) -> Vec<Change> {
    let mut bounds: Vec<usize> = std::iter::once(0)
        .chain(series_starts.iter().map(|(i, _)| *i))
        .chain(std::iter::once(runs.len()))
        .collect();
    bounds.dedup();
    let mut found = Vec::new();
    for series in bounds.windows(2) {
        // The runs of this series that have the point: a gap is left out,
        // not counted as a zero.
        let present: Vec<(usize, f64)> = (series[0]..series[1])
            .filter_map(|i| point.values[i].map(|v| (i, v.mean)))
            .collect();
        let values: Vec<f64> = present.iter().map(|(_, v)| *v).collect();
        let cuts = e_divisive(&values, config);
        let mut edges: Vec<usize> = std::iter::once(0)
            .chain(cuts.iter().map(|c| c.index))
            .chain(std::iter::once(values.len()))
            .collect();
        edges.dedup();
        for (k, cut) in cuts.iter().enumerate() {
            // The segments on either side of this change point alone.
            let left = &values[edges[k]..cut.index];
            let right = &values[cut.index..edges[k + 2]];
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let ratio = LogRatio::of_boot_means(left, right);
            let before = present[cut.index - 1].0;
            let after = present[cut.index].0;
            found.push(Change {
                before,
                after,
                step: mean(right) / mean(left) - 1.0,
                interval: ratio.map(|r| r.interval(crate::base::stats::SIDE_CI_LEVEL)),
                p_value: cut.p_value,
                bisect: bisect_command(&runs[before], &runs[after], variant, &point.key),
            });
        }
    }
    found
}

/// `markbench bisect …` between the kernels of two runs, when both are
/// commits of one git tree.
fn bisect_command(before: &Run, after: &Run, variant: &str, key: &PointKey) -> Option<String> {
    let (tree, good, bad) = crate::record::tree_commits(&before.meta, &after.meta, variant).ok()?;
    let suite = match after.meta.suite_path.as_str() {
        "" => String::new(),
        path => format!(" --suite {}", shell_word(path)),
    };
    Some(format!(
        "markbench bisect --kernel-source {} --good {good} --bad {bad}{suite} --point {}/{}@{}={} --variant {}",
        shell_word(&tree.display().to_string()),
        key.workload,
        key.metric,
        key.cpus,
        key.param,
        shell_word(variant)
    ))
}

/// `text` quoted for a POSIX shell when it needs to be.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_named_two_ways_is_one_and_two_unresolvable_runs_stay_two() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::create_dir(dir.path().join("x")).unwrap();
        assert_eq!(same_run_key(&run), same_run_key(&run.join(".")));
        assert_eq!(
            same_run_key(&run),
            same_run_key(&dir.path().join("x/../run"))
        );
        let gone = |name: &str| dir.path().join("gone").join(name);
        assert_ne!(same_run_key(&gone("a")), same_run_key(&gone("b")));
    }
    use crate::record::Both;

    #[test]
    fn a_run_whose_meta_cannot_be_looked_at_is_named_as_skipped() {
        let root = tempfile::tempdir().unwrap();
        let run = input_file::dir_whose_files_cannot_be_named(root.path());
        let e = format!("{:#}", collect(std::slice::from_ref(&run)).unwrap_err());
        assert!(e.contains("no complete run here"), "{e}");
        assert!(
            e.contains(&format!(
                "\n  skipped {}: {0}/meta.toml: cannot be read: File name too long",
                run.display()
            )),
            "{e}"
        );
    }

    #[test]
    fn a_directory_history_cannot_look_at_is_named_with_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = collect(&[dir.path().join("absent")]).unwrap_err();
        assert!(e.to_string().ends_with("absent: no such directory"), "{e}");
        let file = dir.path().join("runs");
        std::fs::write(&file, "").unwrap();
        let e = collect(std::slice::from_ref(&file)).unwrap_err();
        assert!(e.to_string().ends_with("runs: not a directory"), "{e}");
        let e = collect(&[file.join("run")]).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("runs/run: cannot be read: Not a directory (os error 20)"),
            "{e}"
        );
    }

    #[test]
    fn words_a_shell_would_split_are_quoted() {
        assert_eq!(shell_word("/src/linux"), "/src/linux");
        assert_eq!(shell_word("my tree"), "'my tree'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn a_new_series_is_named_by_what_differs() {
        let both = |a: &str, b: &str| Both {
            baseline: a.to_string(),
            candidate: b.to_string(),
        };
        let why = vec![
            ConditionChange::Qemu(both("8.2", "9.0")),
            ConditionChange::TimingMode(Both {
                baseline: crate::record::TimingMode::Wall,
                candidate: crate::record::TimingMode::Icount { shift: 4 },
            }),
        ];
        assert_eq!(short_reason(&why), "QEMU, timing mode");
        let why = vec![ConditionChange::SuiteFile(Both {
            baseline: "12aa".into(),
            candidate: "401a".into(),
        })];
        assert_eq!(short_reason(&why), "suite file");
    }
}
