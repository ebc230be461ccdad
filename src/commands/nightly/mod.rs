//! `nightly`: run the suite, compare it with a baseline run ([`gate`]),
//! leave a short summary for a CI job page, with `--bisect` bisect a
//! regression ([`bisect`]), and end with the exit status of
//! [`night_status`](super::status::night_status): the gate's verdict when the run measured everything,
//! else the run's own status (an error is the caller's, as in `compare`).

pub mod bisect;
pub mod gate;

use super::status::{night_status, ExitsWith as _};
use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::base::run_dir::RunDir;
use crate::jobs::compare::Options;
use crate::record::RunMeta;
use crate::stages::report::nightly as words;
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
                && !meta.diff
                && meta.suite == suite
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

/// Leaves the night's summary: on the CI job's page first, so that a
/// summary the run directory cannot take still reaches the page, then on
/// the terminal and in the run directory.
fn leave_summary(dir: &Path, summary: &str, page: &JobPage) -> Result<()> {
    page.add(summary);
    println!("{summary}");
    std::fs::write(RunDir::new(dir).nightly_summary(), summary)?;
    Ok(())
}

/// The summary of a night that ended in error `e`, for the suite titled
/// `title` when its run had started: every ending of a night leaves one,
/// so a CI job's page never stays empty.
fn erred(title: Option<&str>, e: &crate::base::error::Error) -> String {
    let status = ExitStatus::of_error(e, crate::stages::vm::interrupted());
    words::erred(title, status, e)
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

/// Appends `text` to the night's summary, on the CI job's page and in the
/// run directory.
pub fn add_to_summary(dir: &Path, text: &str, page: &JobPage) -> Result<()> {
    page.add(text);
    print!("{text}");
    let path = RunDir::new(dir).nightly_summary();
    let mut summary = std::fs::read_to_string(&path).unwrap_or_default();
    summary.push_str(text);
    std::fs::write(&path, summary)?;
    Ok(())
}

/// The CI job's summary page, when there is one (GitHub's
/// `$GITHUB_STEP_SUMMARY`), to which the night's summary is appended.
#[derive(Debug, Clone, Default)]
pub struct JobPage(Option<PathBuf>);

impl JobPage {
    /// The page `$GITHUB_STEP_SUMMARY` names, if it names one.
    pub fn from_env() -> JobPage {
        JobPage(
            std::env::var_os("GITHUB_STEP_SUMMARY")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
        )
    }

    #[cfg(test)]
    fn at(path: &Path) -> JobPage {
        JobPage(Some(path.to_path_buf()))
    }

    /// Appends `text`. A page that cannot be written is named: the night's
    /// verdict stands without it.
    fn add(&self, text: &str) {
        let Some(path) = &self.0 else {
            return;
        };
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        if let Err(e) = written {
            crate::base::message::warning(format_args!(
                "the job's summary page {} was not written: {e}",
                path.display()
            ));
        }
    }
}

/// Where the nightly keeps the history of its reports directory.
pub const HISTORY_DIR: &str = "history";

/// Rewrites `<reports>/history/` from every run in `reports` and links it
/// from tonight's summary. The history is for reading: a failure to write
/// it is reported and leaves the night's verdict as it is.
fn update_history(reports: &Path, tonight: &Path, variant: Option<&str>, page: &JobPage) {
    let out = reports.join(HISTORY_DIR);
    match crate::jobs::history::history(&[reports.to_path_buf()], &out, variant) {
        Ok(written) => {
            for skipped in &written.skipped {
                crate::base::message::warning(skipped);
            }
            let text = words::history_link(
                &out.join(crate::jobs::history::HTML_FILE),
                &out.join(crate::jobs::history::MARKDOWN_FILE),
            );
            if let Err(e) = add_to_summary(tonight, &text, page) {
                crate::base::message::warning(format_args!("linking the history: {e:#}"));
            }
        }
        Err(e) => crate::base::message::warning(format_args!("the history was not updated: {e:#}")),
    }
}

/// `markbench nightly`: runs `options`, gates the run against `baseline`
/// on `variant`, and with `bisect` bisects the first point that regressed;
/// the night's exit status. Every ending leaves a summary, on the CI job's
/// page too.
pub fn run(
    options: &Options,
    baseline: Option<PathBuf>,
    variant: Option<&str>,
    bisect: bool,
) -> Result<ExitStatus> {
    let page = JobPage::from_env();
    // Between its jobs (the gate, the history) a night still ends with its
    // summary on the page: Ctrl-C then only marks it interrupted.
    let _interrupts = crate::stages::vm::watch_interrupts("writing the night's summary");
    let night = nightly(options, baseline, variant, &page)?;
    if bisect {
        bisect::after(&night, options, &page)?;
    }
    Ok(night.status)
}

/// Runs `options` and gates the run against `baseline` (default: the newest
/// earlier complete run of the suite) on `variant`, leaving the summary in
/// the run directory and on `page`.
pub fn nightly(
    options: &Options,
    baseline: Option<PathBuf>,
    variant: Option<&str>,
    page: &JobPage,
) -> Result<Night> {
    // A failure of the run is the command's: the caller maps it to its
    // exit status as it does for `compare` (input, machinery, interrupted).
    let outcome =
        super::compare::run_and_show(options).inspect_err(|e| page.add(&erred(None, e)))?;
    let status = outcome.status();
    let Some((dir, meta)) = outcome.run else {
        // A dry run: no night to sum up.
        return Ok(Night::ended(status));
    };
    judge(options, baseline, variant, (&dir, &meta, status), page)
}

/// The night after its run (`dir`, its record and its status): gated
/// against `baseline` when the run measured everything, its summary left
/// whatever the ending, an error's too.
fn judge(
    options: &Options,
    baseline: Option<PathBuf>,
    variant: Option<&str>,
    run: (&Path, &RunMeta, ExitStatus),
    page: &JobPage,
) -> Result<Night> {
    gated(options, baseline, variant, run, page).inspect_err(|e| {
        let (dir, meta, _) = run;
        let text = erred(Some(&meta.suite_title()), e);
        page.add(&text);
        let _ = std::fs::write(RunDir::new(dir).nightly_summary(), text);
    })
}

/// [`judge`] until an error.
fn gated(
    options: &Options,
    baseline: Option<PathBuf>,
    variant: Option<&str>,
    (dir, meta, status): (&Path, &RunMeta, ExitStatus),
    page: &JobPage,
) -> Result<Night> {
    let mut summary = words::header(Some(&meta.suite_title()));
    if status != ExitStatus::Success {
        let report = RunDir::new(dir).report();
        summary.push_str(&words::not_gated(status, dir, meta, &report));
        leave_summary(dir, &summary, page)?;
        return Ok(Night::ended(night_status(status, None)));
    }
    let baseline = baseline.or_else(|| newest_baseline(&options.reports, &meta.suite, dir));
    let Some(baseline) = baseline else {
        summary.push_str(words::NO_BASELINE);
        leave_summary(dir, &summary, page)?;
        update_history(&options.reports, dir, variant, page);
        return Ok(Night::ended(night_status(ExitStatus::Success, None)));
    };
    let gate = gate::gate(&baseline, dir, variant, summary)?;
    leave_summary(dir, &gate.summary, page)?;
    update_history(&options.reports, dir, variant, page);
    Ok(Night {
        status: night_status(status, Some(gate.status)),
        runs: Some((dir.to_path_buf(), baseline)),
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
    fn every_ending_of_a_night_leaves_its_summary_on_the_job_page() {
        let tmp = tempfile::tempdir().unwrap();
        let page_path = tmp.path().join("step-summary.md");
        let page = JobPage::at(&page_path);
        let read_page = || std::fs::read_to_string(&page_path).unwrap_or_default();
        let night = |reports: &str, name: &str, status, baseline: Option<PathBuf>| {
            let reports = tmp.path().join(reports);
            let dir = run(&reports, name);
            let meta = RunMeta::read(&dir).unwrap();
            let options = Options {
                reports,
                ..Options::default()
            };
            let ended = judge(&options, baseline, None, (&dir, &meta, status), &page);
            let kept = std::fs::read_to_string(RunDir::new(&dir).nightly_summary()).unwrap();
            (ended, kept)
        };
        let mut before = String::new();
        let mut added = |kept: &str| {
            let now = read_page();
            let new = now[before.len()..].to_string();
            before = now;
            assert!(new.starts_with(kept), "page: {new}\nrun's: {kept}");
            new
        };

        let (ended, kept) = night("a", "20261201-000000-quick", ExitStatus::Interrupted, None);
        assert_eq!(ended.unwrap().status, ExitStatus::Interrupted);
        assert!(added(&kept).contains("**Interrupted**"), "{kept}");

        let (ended, kept) = night("b", "20261201-000000-quick", ExitStatus::Incomplete, None);
        assert_eq!(ended.unwrap().status, ExitStatus::Incomplete);
        assert!(
            added(&kept).contains("**Infrastructure failure**"),
            "{kept}"
        );

        let (ended, kept) = night("c", "20261201-000000-quick", ExitStatus::Success, None);
        assert_eq!(ended.unwrap().status, ExitStatus::Success);
        let new = added(&kept);
        assert!(new.contains("No baseline run"), "{new}");
        assert!(new.contains("History of every night"), "{new}");

        let baseline = run(&tmp.path().join("d"), "20261201-000000-quick");
        let (ended, kept) = night("d", "20261202-000000-quick", ExitStatus::Success, None);
        let ended = ended.unwrap();
        assert_eq!(ended.runs.map(|(_, b)| b), Some(baseline.clone()));
        assert!(
            added(&kept).contains("## markbench nightly: quick"),
            "{kept}"
        );

        // A baseline that is no run: the gate errs, and the night says so.
        let missing = tmp.path().join("no-such-run");
        let (ended, kept) = night(
            "e",
            "20261201-000000-quick",
            ExitStatus::Success,
            Some(missing),
        );
        let e = ended.unwrap_err();
        let new = added(&kept);
        assert!(
            new.contains("**Error**, not gated (exit 2 (input to fix))")
                && new.contains(&format!("{e:#}")),
            "{new}"
        );
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
