//! Plots for the report: one metric plot and one relative-difference plot per
//! (workload, CPU count), each written as SVG (for the web) and PNG (for mail).
//!
//! Pure data in, files out: the report stage summarizes samples into
//! [`PlotInput`] and calls [`render`]. Nothing here reads samples or computes
//! statistics, so the pictures show exactly the numbers in the tables.
//!
//! Output is deterministic (same input, byte-identical files) because reports
//! are re-rendered from `samples.csv` and compared byte for byte. Plotters
//! draws in input order with no clocks or randomness; the PNG text comes from a
//! bundled font rather than whatever the host has installed.

mod axes;
mod diff;
mod font;
mod header;
mod metric;
mod profile;
mod scale;
mod trend;

pub use profile::ProfileBars;
pub use trend::{trend_svg, TrendInput, TrendRun};

use std::path::{Path, PathBuf};

use crate::base::error::Context;
use anyhow::anyhow;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One variant's summary at one parameter value.
#[derive(Debug, Clone, PartialEq)]
pub struct SidePoint {
    pub param: f64,
    pub mean: f64,
    /// Confidence interval of the mean, (lower, upper), in the metric's unit.
    pub ci: Option<(f64, f64)>,
    /// Mean of each boot, so boot-to-boot spread is visible.
    pub boot_means: Vec<f64>,
}

/// Relative difference of variant B against A at one parameter value.
#[derive(Debug, Clone, PartialEq)]
pub struct RelPoint {
    pub param: f64,
    /// B/A - 1 as a fraction (0.01 is +1 %).
    pub rel: f64,
    /// Confidence interval of `rel`, as fractions.
    pub ci: Option<(f64, f64)>,
}

/// Everything one pair of plots shows.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotInput {
    /// E.g. "hackbench, 2 CPUs".
    pub title: String,
    /// E.g. "groups".
    pub param_label: String,
    /// E.g. "time".
    pub metric_label: String,
    /// E.g. "s" or "packets/s"; may be empty.
    pub unit: String,
    pub higher_is_better: bool,
    /// Variant A, the baseline ("without"), e.g. "markers-off".
    pub label_a: String,
    /// Variant B ("with"), e.g. "markers-on".
    pub label_b: String,
    pub a: Vec<SidePoint>,
    pub b: Vec<SidePoint>,
    pub rel: Vec<RelPoint>,
    /// Equivalence margin as a fraction, e.g. 0.02; not drawn unless positive and finite.
    pub margin: f64,
}

/// Pixel size of every plot, SVG and PNG alike.
const PLOT_SIZE: (u32, u32) = (1000, 620);

/// Writes `<stem>-metric.svg`, `<stem>-metric.png`, `<stem>-diff.svg`,
/// `<stem>-diff.png` into `dir` (created if missing); returns the paths written.
///
/// Non-finite values are skipped, so a sweep with a failed point still plots.
pub fn render(
    input: &PlotInput,
    dir: &Path,
    stem: &str,
) -> crate::base::error::Result<Vec<PathBuf>> {
    font::register_bundled_font()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::with_capacity(4);
    written.extend(write_svg_and_png(
        &metric::MetricChart(input),
        dir,
        stem,
        "metric",
    )?);
    written.extend(write_svg_and_png(
        &diff::DiffChart(input),
        dir,
        stem,
        "diff",
    )?);
    Ok(written)
}

/// Writes `<stem>-bars.svg` and `<stem>-bars.png` into `dir`: the functions
/// whose instruction counts differ most between the kernels.
pub fn render_profile(
    input: &ProfileBars,
    dir: &Path,
    stem: &str,
) -> crate::base::error::Result<Vec<PathBuf>> {
    font::register_bundled_font()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_svg_and_png(&profile::ProfileChart(input), dir, stem, "bars")
}

/// A chart that can draw itself on any plotters backend, so the SVG and the
/// PNG come from the same drawing code.
trait Chart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn write_svg_and_png(
    chart: &impl Chart,
    dir: &Path,
    stem: &str,
    kind: &str,
) -> crate::base::error::Result<Vec<PathBuf>> {
    let svg_path = dir.join(format!("{stem}-{kind}.svg"));
    let png_path = dir.join(format!("{stem}-{kind}.png"));
    {
        let root = SVGBackend::new(&svg_path, PLOT_SIZE).into_drawing_area();
        draw_and_present(chart, &root)
            .with_context(|| format!("writing {}", svg_path.display()))?;
    }
    {
        let root = BitMapBackend::new(&png_path, PLOT_SIZE).into_drawing_area();
        draw_and_present(chart, &root)
            .with_context(|| format!("writing {}", png_path.display()))?;
    }
    Ok(vec![svg_path, png_path])
}

fn draw_and_present<DB: DrawingBackend>(
    chart: &impl Chart,
    root: &DrawingArea<DB, Shift>,
) -> crate::base::error::Result<()> {
    // Plotters' error types are generic over the backend; flatten them to text.
    chart.draw(root).map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
