//! The report: rendered from `samples.csv` and `meta.toml` only, so
//! `markbench report DIR` reproduces it without rerunning anything.
//!
//! The figures come from [`crate::analysis`]; this module only renders
//! them, once per format, each format behind [`Export`]:
//! - [`markdown`]: `report.md`, one function per section;
//! - [`json`]: `summary.json`, every statistic of every comparison;
//! - [`plots`]: `plots/`, the metric and relative-difference plots.
//!
//! [`format`] formats numbers for all of them; [`sizes`] and [`profile`]
//! are the sections made from `sizes.toml` and `profiles/`.

pub mod format;
mod json;
mod markdown;
mod plots;
pub mod profile;
pub mod sizes;

pub use crate::analysis::analyse;
pub use json::summary_json;

use crate::analysis::Analysis;
use crate::images::size::SizeRecord;
use crate::samples::{RunMeta, Sample, TornLine};
use anyhow::Result;
use std::path::{Path, PathBuf};

pub use crate::run_dir::DIFFCONFIG_FILE;
pub use crate::run_dir::PLOTS_DIR;
pub use crate::run_dir::REPORT_FILE;
pub use crate::run_dir::SUMMARY_FILE;

/// What a run directory holds beside its samples and metadata.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunFiles<'a> {
    /// `scripts/diffconfig` baseline → candidate.
    pub diffconfig: Option<&'a str>,
    /// Commits, `git diff --stat` and patches of each candidate against the
    /// baseline, for kernels from revisions or patches.
    pub source_diff: Option<&'a str>,
    /// `sizes.toml`; `None` for a run made before sizes were recorded.
    pub sizes: Option<&'a SizeRecord>,
    /// The torn last line of `samples.csv` the samples were read without.
    pub torn: Option<&'a TornLine>,
}

/// Everything a format renders: the run as recorded and its analysis.
struct RunReport<'a> {
    meta: &'a RunMeta,
    samples: &'a [Sample],
    files: RunFiles<'a>,
    analysis: &'a Analysis,
    /// One per candidate against the baseline; empty without profiles.
    profiles: &'a [profile::ProfileView],
    /// Whether the markdown links the plots (they exist only once written).
    with_plots: bool,
}

/// One output format of the report, written into a run directory.
trait Export {
    fn export(&self, run: &RunReport, dir: &Path) -> Result<()>;
}

/// The whole `report.md`, without plots or profiles.
pub fn render(meta: &RunMeta, samples: &[Sample], files: RunFiles) -> String {
    let analysis = analyse(meta, samples);
    markdown::render(&RunReport {
        meta,
        samples,
        files,
        analysis: &analysis,
        profiles: &[],
        with_plots: false,
    })
}

/// Renders `report.md`, `summary.json` and the plots in a run directory
/// from its files; returns the report's path.
pub fn write(dir: &Path) -> Result<PathBuf> {
    let meta = RunMeta::read(dir)?;
    let sample_file = crate::samples::read_sample_file(dir)?;
    let (samples, hosts) = crate::samples::hosts_or(sample_file.rows, &meta.host.hostname);
    let text = |path: PathBuf| {
        crate::input_file::read_text_if_present(&path, crate::input_file::Bound::Text)
    };
    let diffconfig = text(dir.join(DIFFCONFIG_FILE))?;
    let source_diff = text(crate::run_dir::RunDir::new(dir).source_diff())?;
    let sizes = SizeRecord::read(dir)?;
    let analysis = crate::analysis::analyse_with_hosts(&meta, &samples, &hosts);
    let profiles = profile::load(dir, &meta)?;
    let run = RunReport {
        meta: &meta,
        samples: &samples,
        files: RunFiles {
            diffconfig: diffconfig.as_deref(),
            source_diff: source_diff.as_deref(),
            sizes: sizes.as_ref(),
            torn: sample_file.torn.as_ref(),
        },
        analysis: &analysis,
        profiles: &profiles,
        with_plots: true,
    };
    // Plots first: the report links them.
    let formats: [&dyn Export; 3] = [&plots::Plots, &json::Json, &markdown::Markdown];
    for format in formats {
        format.export(&run, dir)?;
    }
    Ok(dir.join(REPORT_FILE))
}
