//! `nightly`: run the suite, compare it with a baseline run ([`gate`]),
//! leave a short summary for a CI job page, with `--bisect` bisect a
//! regression ([`bisect`]), and end with the exit status of
//! [`night_status`](super::status::night_status): the gate's verdict when the run measured everything,
//! else the run's own status (an error is the caller's, as in `compare`).

pub mod bisect;
pub mod gate;

use super::status::{night_status, Outcome as _};
use crate::base::exit::ExitStatus;
use crate::base::run_dir::RunDir;
use crate::jobs::compare::Options;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The newest complete run of `suite` in `reports`, other than `except`,
/// whose files read: a directory that cannot be read is named on the
/// screen and passed over, and the night is gated against the next one.
fn newest_baseline(reports: &Path, suite: &str, except: &Path) -> Option<PathBuf> {
    let (runs, skipped) = crate::record::scan_runs(reports);
    for s in &skipped {
        crate::base::message::warning(format_args!("baseline: {s}"));
    }
    runs.into_iter()
        .filter(|(dir, meta)| {
            // A single shard ran part of the suite: never a baseline for all of it.
            dir.file_name() != except.file_name()
                && meta.complete
                && meta.suite_title() == suite
                && meta.shard.is_none()
        })
        .find(|(dir, _)| match crate::record::read_sample_file(dir) {
            Ok(_) => true,
            Err(e) => {
                crate::base::message::warning(format_args!(
                    "baseline: skipped {}: {e:#}",
                    dir.display()
                ));
                false
            }
        })
        .map(|(dir, _)| dir)
}

fn leave_summary(dir: &Path, summary: &str) -> Result<()> {
    std::fs::write(RunDir::new(dir).nightly_summary(), summary)?;
    println!("{summary}");
    Ok(())
}

/// How a night ended: its exit status, and when it was gated, the two runs
/// and what regressed.
#[derive(Debug, Clone)]
pub struct Night {
    pub status: ExitStatus,
    /// Tonight's run and the baseline run it was gated against.
    pub runs: Option<(PathBuf, PathBuf)>,
    pub regressed: Vec<crate::record::RegressedPoint>,
}

impl Night {
    fn ended(status: ExitStatus) -> Night {
        Night {
            status,
            runs: None,
            regressed: Vec::new(),
        }
    }
}

/// Appends `text` to the night's summary, in the run directory and on the
/// CI job's page.
pub fn add_to_summary(dir: &Path, text: &str) -> Result<()> {
    let path = RunDir::new(dir).nightly_summary();
    let mut summary = std::fs::read_to_string(&path).unwrap_or_default();
    summary.push_str(text);
    std::fs::write(&path, summary)?;
    print!("{text}");
    step_summary(text);
    Ok(())
}

/// Appends to the GitHub job's summary page, when there is one.
fn step_summary(text: &str) {
    if let Ok(path) = std::env::var("GITHUB_STEP_SUMMARY") {
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    }
}

/// Where the nightly keeps the history of its reports directory.
pub const HISTORY_DIR: &str = "history";

/// Rewrites `<reports>/history/` from every run in `reports` and links it
/// from tonight's summary. The history is for reading: a failure to write
/// it is reported and leaves the night's verdict as it is.
fn update_history(reports: &Path, tonight: &Path, variant: Option<&str>) {
    let out = reports.join(HISTORY_DIR);
    match crate::jobs::history::history(&[reports.to_path_buf()], &out, variant) {
        Ok(_) => {
            let page = out.join(crate::jobs::history::HTML_FILE);
            let text = format!(
                "\nHistory of every night, point by point, with its change points: {} ({})\n",
                page.display(),
                out.join(crate::jobs::history::MARKDOWN_FILE).display()
            );
            if let Err(e) = add_to_summary(tonight, &text) {
                crate::base::message::warning(format_args!("linking the history: {e:#}"));
            }
        }
        Err(e) => crate::base::message::warning(format_args!("the history was not updated: {e:#}")),
    }
}

/// `markbench nightly`: runs `options`, gates the run against `baseline`
/// on `variant`, and with `bisect` bisects the first point that regressed;
/// the night's exit status.
pub fn run(
    options: &Options,
    baseline: Option<PathBuf>,
    variant: Option<&str>,
    bisect: bool,
) -> Result<ExitStatus> {
    let night = nightly(options, baseline, variant)?;
    if bisect {
        bisect::after(&night, options)?;
    }
    Ok(night.status)
}

/// Runs `options` and gates the run against `baseline` (default: the newest
/// earlier complete run of the suite) on `variant`.
pub fn nightly(
    options: &Options,
    baseline: Option<PathBuf>,
    variant: Option<&str>,
) -> Result<Night> {
    // A failure of the run is the command's: the caller maps it to its
    // exit status as it does for `compare` (input, machinery, interrupted).
    let outcome = super::compare::run_and_show(options)?;
    let status = outcome.status();
    let Some((dir, meta)) = outcome.run else {
        return Ok(Night::ended(status));
    };
    let mut summary = format!("## markbench nightly: {}\n\n", meta.suite_title());
    if status != ExitStatus::Success {
        let report = RunDir::new(&dir).report();
        let failed = meta.boots.iter().filter(|b| !b.ok()).count();
        summary.push_str(&match status {
            ExitStatus::Interrupted => format!(
                "**Interrupted**: the run is partial ({} boots, {failed} failed), not gated; \
                 continue it with markbench nightly --resume {}; see {}.\n",
                meta.boots.len(),
                dir.display(),
                report.display()
            ),
            _ => format!(
                "**Infrastructure failure**: {failed} of {} boots failed, not gated; see {}.\n",
                meta.boots.len(),
                report.display()
            ),
        });
        leave_summary(&dir, &summary)?;
        return Ok(Night::ended(night_status(status, None)));
    }
    let baseline =
        baseline.or_else(|| newest_baseline(&options.reports, &meta.suite_title(), &dir));
    let Some(baseline) = baseline else {
        summary.push_str("No baseline run of this suite yet: this run becomes the baseline.\n");
        leave_summary(&dir, &summary)?;
        update_history(&options.reports, &dir, variant);
        return Ok(Night::ended(night_status(ExitStatus::Success, None)));
    };
    let gate = gate::gate(&baseline, &dir, variant, summary)?;
    leave_summary(&dir, &gate.summary)?;
    step_summary(&gate.summary);
    update_history(&options.reports, &dir, variant);
    Ok(Night {
        status: night_status(status, Some(gate.status)),
        runs: Some((dir, baseline)),
        regressed: gate.regressed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of the real run kept as a fixture, complete, as `reports/name`.
    fn run(reports: &Path, name: &str) -> PathBuf {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/before-format-number");
        let dir = reports.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&fixture).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
        let meta = dir.join(crate::record::META_FILE);
        let text = std::fs::read_to_string(&meta).unwrap();
        std::fs::write(
            &meta,
            text.replace("\ncomplete = false\n", "\ncomplete = true\n"),
        )
        .unwrap();
        dir
    }

    #[test]
    fn the_baseline_is_the_newest_run_that_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let reports = tmp.path();
        let good = run(reports, "20261201-000000-quick");
        let zero = run(reports, "20261202-000000-quick");
        let samples = zero.join(crate::record::SAMPLES_FILE);
        std::fs::remove_file(&samples).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &samples).unwrap();
        let garbage = run(reports, "20261203-000000-quick");
        std::fs::write(garbage.join(crate::record::META_FILE), "format = [").unwrap();
        let tonight = run(reports, "20261204-000000-quick");
        assert_eq!(newest_baseline(reports, "quick", &tonight), Some(good));
    }
}
