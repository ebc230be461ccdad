//! The history's trend plot: one point's value run after run, with its
//! interval, the baseline's band, the nights the gate called a regression,
//! where a new series began (another QEMU, timing mode, guest image…) and
//! the change points found, each segment's mean drawn across it.
//!
//! Pure data in, SVG text out, so the page can carry the plot inline.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axes::{draw_interval, unbroken_runs, with_unit, y_label_area_width, XyChart};
use super::font::FAMILY;
use super::header::{
    draw_header, draw_marker, LegendEntry, LegendGlyph, Marker, COLOR_A, COLOR_B, COLOR_MUTED,
};
use super::scale::{padded_range, tick_label};

/// Red for what a reader must not miss: regressions and change points.
const COLOR_ALERT: RGBColor = RGBColor(204, 0, 51);

/// One run of the history at one point.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrendRun {
    /// Short text under the run's tick, e.g. "11-03".
    pub label: String,
    /// The value and its 95% interval; `None` where the run lacks the point.
    pub value: Option<(f64, Option<(f64, f64)>)>,
    /// The baseline's 95% interval in the same run.
    pub band: Option<(f64, f64)>,
    /// The nightly gate called this run a regression at this point.
    pub regressed: bool,
}

/// Everything one trend plot shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrendInput {
    pub title: String,
    pub metric_label: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// What the values are (e.g. "markers-on, mean of boots") and what the
    /// band is, for the legend.
    pub value_label: String,
    pub band_label: String,
    pub runs: Vec<TrendRun>,
    /// Runs that begin a new series, with a few words on why (e.g. "QEMU").
    pub series_starts: Vec<(usize, String)>,
    /// Change points: the run after the change, and its label (e.g. "+3.0%").
    pub changes: Vec<(usize, String)>,
    /// Segments between series starts and change points: first run, last
    /// run (inclusive) and their mean.
    pub segment_means: Vec<(usize, usize, f64)>,
}

const PLOT_SIZE: (u32, u32) = (1000, 440);
const LABEL_SIZE: f64 = 14.0;

/// The plot as an SVG document.
pub fn trend_svg(input: &TrendInput) -> crate::base::error::Result<String> {
    super::font::register_bundled_font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, PLOT_SIZE).into_drawing_area();
        draw(input, &root).map_err(|e| anyhow::anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(svg)
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The plot: header and legend, the axes, then the markings under the
/// values, then the values.
fn draw<DB: DrawingBackend>(input: &TrendInput, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    let subtitle = format!(
        "{}; bars: 95% interval; red line: change point, grey dashes: new series",
        super::axes::direction_phrase(input.higher_is_better)
    );
    let area = draw_header(root, &input.title, &subtitle, &legend(input))?;

    let n = input.runs.len().max(1);
    let x_range = -0.6..(n as f64 - 0.4);
    let y_range = padded_range(
        input.runs.iter().flat_map(|r| {
            let (v, ci) = r.value.unzip();
            v.into_iter()
                .chain(ci.flatten().into_iter().flat_map(|(l, h)| [l, h]))
                .chain(r.band.into_iter().flat_map(|(l, h)| [l, h]))
        }),
        0.12,
    );
    let labels: Vec<String> = input.runs.iter().map(|r| r.label.clone()).collect();
    let x_label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let y_label = |y: &f64| tick_label(*y);
    let mut chart = ChartBuilder::on(&area)
        .margin_left(16)
        .margin_right(36)
        .margin_top(20)
        .margin_bottom(8)
        .x_label_area_size(48)
        .y_label_area_size(y_label_area_width(&area, &y_range)?)
        .build_cartesian_2d(x_range.clone(), y_range.clone())?;
    chart
        .configure_mesh()
        .x_desc("run (date started)")
        .y_desc(with_unit(&input.metric_label, &input.unit))
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        // One tick per run, up to a readable number of them.
        .x_labels(n.min(16) + 1)
        .y_labels(8)
        .disable_x_mesh()
        .label_style((FAMILY, LABEL_SIZE))
        .axis_desc_style((FAMILY, 15.0))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.04))
        .draw()?;

    draw_markings(input, &mut chart, (y_range.start, y_range.end))?;
    draw_values(input, &mut chart)?;
    if input.runs.iter().all(|r| r.value.is_none()) {
        super::axes::draw_no_data_note(&mut chart, &x_range, &y_range)?;
    }
    Ok(())
}

fn legend(input: &TrendInput) -> Vec<LegendEntry> {
    let mut legend = vec![
        LegendEntry {
            label: input.value_label.clone(),
            glyph: LegendGlyph::Series(COLOR_B, Marker::Circle),
        },
        LegendEntry {
            label: input.band_label.clone(),
            glyph: LegendGlyph::Margin(COLOR_A),
        },
    ];
    if input.runs.iter().any(|r| r.regressed) {
        legend.push(LegendEntry {
            label: "nightly gate: regression".into(),
            glyph: LegendGlyph::BootPoint(COLOR_ALERT),
        });
    }
    legend
}

/// What lies under the values: the baseline's band run by run, where a new
/// series begins, the change points and each segment's mean.
fn draw_markings<DB: DrawingBackend>(
    input: &TrendInput,
    chart: &mut XyChart<'_, DB>,
    (y_low, y_high): (f64, f64),
) -> DrawResult<DB> {
    chart.draw_series(input.runs.iter().enumerate().filter_map(|(i, r)| {
        let (low, high) = r.band?;
        let x = i as f64;
        Some(Rectangle::new(
            [(x - 0.5, low), (x + 0.5, high)],
            COLOR_A.mix(0.14).filled(),
        ))
    }))?;

    let label_style = |color: &'static RGBColor| {
        TextStyle::from((FAMILY, 13.0).into_font())
            .color(color)
            .pos(Pos::new(HPos::Left, VPos::Top))
    };
    for (run, why) in &input.series_starts {
        let x = *run as f64 - 0.5;
        chart.draw_series(DashedLineSeries::new(
            [(x, y_low), (x, y_high)],
            6,
            4,
            COLOR_MUTED.stroke_width(2),
        ))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("new series: {why}"),
            (x + 0.06, y_high),
            label_style(&COLOR_MUTED),
        )))?;
    }
    for (run, what) in &input.changes {
        let x = *run as f64 - 0.5;
        chart.draw_series(LineSeries::new(
            [(x, y_low), (x, y_high)],
            COLOR_ALERT.stroke_width(2),
        ))?;
        let below_top = y_high - (y_high - y_low) * 0.07;
        chart.draw_series(std::iter::once(Text::new(
            format!("change {what}"),
            (x + 0.06, below_top),
            label_style(&COLOR_ALERT),
        )))?;
    }
    for &(first, last, mean) in &input.segment_means {
        chart.draw_series(DashedLineSeries::new(
            [(first as f64 - 0.4, mean), (last as f64 + 0.4, mean)],
            4,
            3,
            COLOR_MUTED.stroke_width(1),
        ))?;
    }
    Ok(())
}

/// The values with their intervals, circled in red where the gate called a
/// regression.
fn draw_values<DB: DrawingBackend>(
    input: &TrendInput,
    chart: &mut XyChart<'_, DB>,
) -> DrawResult<DB> {
    // Lines only between neighbouring runs of one series that both have the
    // point, so a gap stays a gap and a new series is not joined to the old
    // one.
    let starts: Vec<usize> = input.series_starts.iter().map(|(i, _)| *i).collect();
    let mut points: Vec<(f64, Option<f64>)> = Vec::new();
    for (i, r) in input.runs.iter().enumerate() {
        if starts.contains(&i) {
            points.push((f64::NAN, None));
        }
        points.push((i as f64, r.value.map(|(v, _)| v)));
    }
    for line in unbroken_runs(points) {
        chart.draw_series(LineSeries::new(line, COLOR_B.stroke_width(2)))?;
    }
    for (i, r) in input.runs.iter().enumerate() {
        let Some((value, ci)) = r.value else {
            continue;
        };
        let x = i as f64;
        if let Some(ci) = ci {
            draw_interval(chart, x, ci, 0.12, COLOR_B.stroke_width(2))?;
        }
        draw_marker(chart.plotting_area(), Marker::Circle, (x, value), COLOR_B)?;
        if r.regressed {
            chart.draw_series(std::iter::once(Circle::new(
                (x, value),
                9,
                COLOR_ALERT.stroke_width(2),
            )))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_with_a_gap_a_new_series_and_a_change_renders() {
        let runs = (0..8)
            .map(|i| TrendRun {
                label: format!("11-{:02}", i + 1),
                value: (i != 3).then_some((if i < 5 { 10.0 } else { 10.3 }, Some((9.95, 10.35)))),
                band: Some((9.9, 10.1)),
                regressed: i == 5,
            })
            .collect();
        let svg = trend_svg(&TrendInput {
            title: "hackbench, 1 CPU, 4 groups".into(),
            metric_label: "time".into(),
            unit: "s".into(),
            value_label: "markers-on".into(),
            band_label: "markers-off".into(),
            runs,
            series_starts: vec![(6, "QEMU".into())],
            changes: vec![(5, "+3%".into())],
            segment_means: vec![(0, 4, 10.0), (5, 5, 10.3), (6, 7, 10.3)],
            ..TrendInput::default()
        })
        .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.contains("new series: QEMU") && svg.contains("change +3%"));
        // Seven values drawn (one run lacks the point), plus the regression's ring.
        assert!(svg.matches("<circle").count() >= 8);
    }
}
