//! The report: rendered from `samples.csv` and `meta.toml` only, so
//! `markbench report DIR` reproduces it without rerunning anything.
//!
//! The figures come from [`crate::stages::analysis`]; this module only renders
//! them, once per format, each format behind [`Export`]: a pure function
//! of the run that returns its file's text, which [`write`] alone writes.
//! - [`markdown`]: `report.md`, one function per section;
//! - [`json`]: `summary.json`, every statistic of every comparison;
//! - [`text`]: `report.txt`, the report as a mail carries it;
//! - [`junit`]: `junit.xml`, one test case per point and candidate;
//! - [`bmf`]: `bmf.json`, Bencher's metric format;
//! - [`gab`]: github-action-benchmark's custom format, one file per
//!   direction.
//!
//! Beside a run's report, the answers of the jobs above are rendered here
//! too, each from a plain record of facts the job fills: [`bisect`]
//! (`bisect.md`, `bisect.txt`, the terminal's lines), [`noise`] (the
//! noise floor's table and verdict), [`history`] (`history.md` and
//! `history.html`), [`dry_run`] (the plan a run shows before it starts),
//! [`gate`] (the nightly gate's summary).
//!
//! [`plots`] draws `plots/`, the metric and relative-difference plots;
//! [`format`] and [`plain`] format numbers and text for all of them;
//! [`sizes`] and [`profile`] are the sections made from `sizes.toml` and
//! `profiles/`; [`reference`] the section setting a run beside the
//! published table its suite names, in both `report.md` and `report.txt`.

pub mod bisect;
mod bmf;
pub mod cache;
pub mod dry_run;
pub mod format;
mod gab;
pub mod gate;
pub mod history;
mod identical;
mod json;
mod junit;
mod markdown;
pub mod nightly;
pub mod noise;
pub mod plain;
mod plots;
pub mod profile;
mod reference;
pub mod sizes;
pub mod terminal;
mod text;
pub mod words;

pub use crate::stages::analysis::analyse;
pub use json::summary_json;

use crate::base::error::{Context, Result};
use crate::guest::images::size::SizeRecord;
use crate::record::{RunMeta, Sample, TornLine};
use crate::stages::analysis::Analysis;
use std::path::{Path, PathBuf};

pub use crate::base::run_dir::{
    BMF_FILE, DIFFCONFIG_FILE, GAB_BIGGER_FILE, GAB_FILE, JUNIT_FILE, PLOTS_DIR, REPORT_FILE,
    REPORT_TEXT_FILE, SUMMARY_FILE,
};

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
    /// The cycle model's settings, for a run made under it.
    cycle_model: Option<&'a crate::base::cycle_model::CycleModel>,
    /// For a run made under the cycle model, its estimates' verdicts under
    /// the second weights.
    weights: Option<&'a crate::stages::analysis::weights::WeightCheck>,
}

/// One output format of the report: one file of the run directory,
/// rendered from the run alone.
trait Export {
    /// The file's name in the run directory.
    fn file(&self) -> &'static str;
    fn render(&self, run: &RunReport) -> Result<String>;
}

/// A format `markbench report DIR --format` prints. The command line takes
/// it as it is (`clap::ValueEnum`), so its variants' docs are the help text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// report.md.
    Markdown,
    /// summary.json.
    Json,
    /// report.txt: plain ASCII within 72 columns, for a mail.
    Text,
    /// junit.xml: one test case per point and candidate.
    Junit,
    /// bmf.json: Bencher Metric Format.
    Bmf,
    /// github-action-benchmark.json: the points where smaller is better.
    Gab,
    /// github-action-benchmark-bigger.json: the points where bigger is better.
    GabBigger,
}

impl Format {
    fn exporter(self) -> &'static dyn Export {
        match self {
            Format::Markdown => &markdown::Markdown,
            Format::Json => &json::Json,
            Format::Text => &text::Text,
            Format::Junit => &junit::Junit,
            Format::Bmf => &bmf::Bmf,
            Format::Gab => &gab::Gab::SMALLER,
            Format::GabBigger => &gab::Gab::BIGGER,
        }
    }

    /// The file the format is written to.
    pub fn file(self) -> &'static str {
        self.exporter().file()
    }
}

/// Every format, in the order [`write`] writes them: the markdown last, as
/// before, so that a `report.md` is there only once everything else is.
const FORMATS: [Format; 7] = [
    Format::Json,
    Format::Text,
    Format::Junit,
    Format::Bmf,
    Format::Gab,
    Format::GabBigger,
    Format::Markdown,
];

fn run_report<'a>(
    meta: &'a RunMeta,
    samples: &'a [Sample],
    files: RunFiles<'a>,
    analysis: &'a Analysis,
) -> RunReport<'a> {
    RunReport {
        meta,
        samples,
        files,
        analysis,
        profiles: &[],
        with_plots: false,
        cycle_model: None,
        weights: None,
    }
}

/// The whole `report.md`, without plots or profiles.
pub fn render(meta: &RunMeta, samples: &[Sample], files: RunFiles) -> String {
    let analysis = analyse(meta, samples);
    markdown::render(&run_report(meta, samples, files, &analysis))
}

/// The whole `report.txt`.
#[cfg(test)]
pub(crate) fn render_text(meta: &RunMeta, samples: &[Sample], files: RunFiles) -> String {
    let analysis = analyse(meta, samples);
    text::render(&run_report(meta, samples, files, &analysis))
}

/// A run directory's files, read and analysed.
struct Loaded {
    meta: RunMeta,
    samples: Vec<Sample>,
    diffconfig: Option<String>,
    source_diff: Option<String>,
    sizes: Option<SizeRecord>,
    torn: Option<TornLine>,
    analysis: Analysis,
    profiles: Vec<profile::ProfileView>,
    cycle_model: Option<crate::base::cycle_model::CycleModel>,
    weights: Option<crate::stages::analysis::weights::WeightCheck>,
}

impl Loaded {
    fn read(dir: &Path) -> Result<Loaded> {
        let meta = RunMeta::read(dir)?;
        let sample_file = crate::record::read_sample_file(dir)?;
        let (samples, hosts) = crate::record::hosts_or(sample_file.rows, &meta.host.hostname);
        let text = |path: PathBuf| {
            crate::base::input_file::read_text_if_present(
                &path,
                crate::base::input_file::Bound::Text,
            )
        };
        let diffconfig = text(dir.join(DIFFCONFIG_FILE))?;
        let source_diff = text(crate::base::run_dir::RunDir::new(dir).source_diff())?;
        let sizes = SizeRecord::read(dir)?;
        let analysis = crate::stages::analysis::analyse_with_hosts(&meta, &samples, &hosts);
        let profiles = profile::load(dir, &meta)?;
        let cycle_model = crate::base::cycle_model::CycleModel::read(dir)?;
        let weights = cycle_model.as_ref().map(|model| {
            crate::stages::analysis::weights::check(&meta, &samples, &hosts, &analysis, model)
        });
        Ok(Loaded {
            cycle_model,
            weights,
            meta,
            samples,
            diffconfig,
            source_diff,
            sizes,
            torn: sample_file.torn,
            analysis,
            profiles,
        })
    }

    fn run(&self, with_plots: bool) -> RunReport<'_> {
        RunReport {
            meta: &self.meta,
            samples: &self.samples,
            files: RunFiles {
                diffconfig: self.diffconfig.as_deref(),
                source_diff: self.source_diff.as_deref(),
                sizes: self.sizes.as_ref(),
                torn: self.torn.as_ref(),
            },
            analysis: &self.analysis,
            profiles: &self.profiles,
            with_plots,
            cycle_model: self.cycle_model.as_ref(),
            weights: self.weights.as_ref(),
        }
    }
}

/// Renders `report.md`, `summary.json`, every other format and the plots
/// in a run directory from its files; returns the report's path.
pub fn write(dir: &Path) -> Result<PathBuf> {
    let loaded = Loaded::read(dir)?;
    let run = loaded.run(true);
    // Plots first: the report links them.
    plots::write(&run, dir)?;
    for format in FORMATS {
        let exporter = format.exporter();
        let path = dir.join(exporter.file());
        let text = exporter.render(&run)?;
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(dir.join(REPORT_FILE))
}

/// One format of a run directory's report, rendered from its files and
/// written nowhere (`markbench report DIR --format`).
pub fn render_dir(dir: &Path, format: Format) -> Result<String> {
    let loaded = Loaded::read(dir)?;
    // The markdown links the plots where a report was written before; a
    // plots directory the disk fails to stat is that failure, not "no plots".
    let plots = dir.join(PLOTS_DIR);
    let with_plots = match std::fs::metadata(&plots) {
        Ok(m) => m.is_dir(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e).with_context(|| format!("looking at {}", plots.display())),
    };
    let run = loaded.run(with_plots);
    format.exporter().render(&run)
}
