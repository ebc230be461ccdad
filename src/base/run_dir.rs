//! The layout of a run directory, spelled once. Every stage that writes or
//! reads a run's files asks a [`RunDir`] for their paths.

use std::path::{Path, PathBuf};

/// One row per measured iteration (see `record`).
pub const SAMPLES_FILE: &str = "samples.csv";
/// Everything about a run except its samples.
pub const META_FILE: &str = "meta.toml";
/// The copy of the suite file a run keeps, for `--resume`.
pub const SUITE_COPY: &str = "suite.toml";
/// The copies of every fragment the run's kernels were built from:
/// `--resume` builds from these, wherever the originals were.
pub const FRAGMENTS_COPY: &str = "vm-images";
pub const REPORT_FILE: &str = "report.md";
pub const DIFFCONFIG_FILE: &str = "diffconfig.txt";
/// The source difference of each candidate against the baseline (commits,
/// `git diff --stat`, patches), for kernels from revisions or patches.
pub const SOURCE_DIFF_FILE: &str = "source-diff.txt";
pub const SUMMARY_FILE: &str = "summary.json";
/// The report as plain text for a mail.
pub const REPORT_TEXT_FILE: &str = "report.txt";
/// One test case per point and candidate, for a CI's test reporter.
pub const JUNIT_FILE: &str = "junit.xml";
/// Bencher Metric Format, for `bencher run --adapter json`.
pub const BMF_FILE: &str = "bmf.json";
/// github-action-benchmark's custom format, the points where smaller is
/// better (`tool: customSmallerIsBetter`).
pub const GAB_FILE: &str = "github-action-benchmark.json";
/// The same for the points where bigger is better (`customBiggerIsBetter`):
/// the action reads one direction a file.
pub const GAB_BIGGER_FILE: &str = "github-action-benchmark-bigger.json";
pub const PLOTS_DIR: &str = "plots";
pub const SIZES_FILE: &str = "sizes.toml";
/// The console log of every boot.
pub const LOGS_DIR: &str = "logs";
/// The short markdown a nightly run leaves for a CI job page.
pub const NIGHTLY_SUMMARY: &str = "nightly-summary.md";
/// What the nightly gate decided, as data (the history marks regressed nights).
pub const GATE_FILE: &str = "gate.json";
/// Held while a markbench writes into the directory.
pub const LOCK_FILE: &str = ".lock";

/// A run directory and the paths of its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    pub fn new(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn samples(&self) -> PathBuf {
        self.root.join(SAMPLES_FILE)
    }

    pub fn meta(&self) -> PathBuf {
        self.root.join(META_FILE)
    }

    pub fn suite_copy(&self) -> PathBuf {
        self.root.join(SUITE_COPY)
    }

    pub fn fragments_copy(&self) -> PathBuf {
        self.root.join(FRAGMENTS_COPY)
    }

    pub fn report(&self) -> PathBuf {
        self.root.join(REPORT_FILE)
    }

    pub fn diffconfig(&self) -> PathBuf {
        self.root.join(DIFFCONFIG_FILE)
    }

    pub fn source_diff(&self) -> PathBuf {
        self.root.join(SOURCE_DIFF_FILE)
    }

    pub fn summary(&self) -> PathBuf {
        self.root.join(SUMMARY_FILE)
    }

    pub fn plots(&self) -> PathBuf {
        self.root.join(PLOTS_DIR)
    }

    pub fn sizes(&self) -> PathBuf {
        self.root.join(SIZES_FILE)
    }

    pub fn logs(&self) -> PathBuf {
        self.root.join(LOGS_DIR)
    }

    pub fn nightly_summary(&self) -> PathBuf {
        self.root.join(NIGHTLY_SUMMARY)
    }

    pub fn gate(&self) -> PathBuf {
        self.root.join(GATE_FILE)
    }

    pub fn lock(&self) -> PathBuf {
        self.root.join(LOCK_FILE)
    }

    /// Creates the directory with its `logs/`.
    pub fn create(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(self.logs())
    }

    /// Creates a fresh run directory `<root>/<timestamp>-<suite>` (with a
    /// `-2`, `-3`, … when one started in the same second).
    pub fn create_new(root: &Path, suite: &str) -> std::io::Result<RunDir> {
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
        std::fs::create_dir_all(root)?;
        let mut dir = root.join(format!("{stamp}-{suite}"));
        let mut n = 1;
        // Made, not looked for: a name taken by another run (or one the
        // disk fails to show) is never written into.
        loop {
            match std::fs::create_dir(&dir) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    n += 1;
                    dir = root.join(format!("{stamp}-{suite}-{n}"));
                }
                Err(e) => return Err(e),
            }
        }
        let run = RunDir::new(dir);
        run.create()?;
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_directory_is_never_one_that_is_there() {
        let root = tempfile::tempdir().unwrap();
        let made: Vec<PathBuf> = (0..3)
            .map(|_| {
                RunDir::create_new(root.path(), "quick")
                    .unwrap()
                    .root()
                    .to_path_buf()
            })
            .collect();
        assert_ne!(made[0], made[1]);
        assert_ne!(made[1], made[2]);
        assert!(made.iter().all(|d| d.join("logs").is_dir()));
        // A file where the reports directory should be is that error.
        let file = root.path().join("not-a-dir");
        std::fs::write(&file, "").unwrap();
        assert!(RunDir::create_new(&file, "quick").is_err());
    }
}
