//! The chart frame shared by both plots: axes, grid, tick labels, descriptions.

use std::ops::Range;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::font::FAMILY;
use super::scale::tick_label;

const TICK_LABEL_SIZE: f64 = 14.0;
const X_TICKS: usize = 10;
const Y_TICKS: usize = 8;
const AXIS_DESC_SIZE: f64 = 16.0;

pub(super) type XyChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What the x axis is: the parameter as a number line, or the one value a
/// point was measured at.
pub(super) enum XAxis<'s> {
    /// A sweep: ticks along the parameter, described by its label.
    Sweep(&'s str),
    /// One parameter value: no number line around it (ticks of 1.9 and 2.1
    /// groups would suggest values that were never run), the value in the
    /// description instead.
    Single { label: &'s str, value: f64 },
}

impl XAxis<'_> {
    /// The axis for the parameters a plot shows: a sweep unless they are
    /// all one value.
    pub(super) fn of(label: &str, params: impl IntoIterator<Item = f64>) -> XAxis<'_> {
        let mut finite = params.into_iter().filter(|p| p.is_finite());
        match finite.next() {
            Some(first) if finite.all(|p| p == first) => XAxis::Single {
                label,
                value: first,
            },
            _ => XAxis::Sweep(label),
        }
    }
}

/// Builds a chart on `area` with labelled axes and a light grid.
pub(super) fn build_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, plotters::coord::Shift>,
    x_range: Range<f64>,
    y_range: Range<f64>,
    x_axis: XAxis<'_>,
    y_desc: &str,
) -> Result<XyChart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let y_label_area_width = y_label_area_width(area, &y_range)?;
    let mut chart = ChartBuilder::on(area)
        .margin_left(16)
        .margin_right(36)
        .margin_top(6)
        .margin_bottom(12)
        .x_label_area_size(56)
        .y_label_area_size(y_label_area_width)
        .build_cartesian_2d(x_range, y_range)?;
    let format_tick = |value: &f64| tick_label(*value);
    let (x_desc, x_ticks) = match x_axis {
        XAxis::Sweep(label) => (label.to_string(), X_TICKS),
        XAxis::Single { label, value } => (format!("{label} {}", tick_label(value)), 0),
    };
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&format_tick)
        .y_label_formatter(&format_tick)
        .x_labels(x_ticks)
        .y_labels(Y_TICKS)
        .label_style((FAMILY, TICK_LABEL_SIZE))
        .axis_desc_style((FAMILY, AXIS_DESC_SIZE))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.04))
        .draw()?;
    Ok(chart)
}

/// Room left of the y axis for tick labels plus the rotated description: wide
/// enough for "180000", not so wide that "80" floats far from its description.
/// Measures the ticks plotters will draw (the same key points the mesh asks for).
pub(super) fn y_label_area_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    y_range: &Range<f64>,
) -> Result<u32, DrawingAreaErrorKind<DB::ErrorType>> {
    let style = TextStyle::from((FAMILY, TICK_LABEL_SIZE).into_font());
    let ticks = RangedCoordf64::from(y_range.clone()).key_points(Y_TICKS);
    let mut widest = 0;
    for tick in ticks {
        widest = widest.max(area.estimate_text_size(&tick_label(tick), &style)?.0);
    }
    Ok((widest + 48).clamp(60, 120))
}

/// "time [s]", or just "time" when the unit is empty.
pub(super) fn with_unit(label: &str, unit: &str) -> String {
    if unit.trim().is_empty() {
        label.to_string()
    } else {
        format!("{label} [{unit}]")
    }
}

pub(super) fn direction_phrase(higher_is_better: bool) -> &'static str {
    if higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    }
}

/// A vertical interval bar with short caps, `cap_half_width` in data units.
pub(super) fn draw_interval<DB: DrawingBackend>(
    chart: &mut XyChart<'_, DB>,
    x: f64,
    (low, high): (f64, f64),
    cap_half_width: f64,
    style: ShapeStyle,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let segments = [
        vec![(x, low), (x, high)],
        vec![(x - cap_half_width, low), (x + cap_half_width, low)],
        vec![(x - cap_half_width, high), (x + cap_half_width, high)],
    ];
    chart.draw_series(
        segments
            .into_iter()
            .map(|points| PathElement::new(points, style)),
    )?;
    Ok(())
}

/// Runs of consecutive points that all have a value: a missing (non-finite)
/// value breaks the line instead of being silently bridged.
pub(super) fn unbroken_runs(
    points: impl IntoIterator<Item = (f64, Option<f64>)>,
) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (x, y) in points {
        match y {
            Some(y) => runs.last_mut().expect("never empty").push((x, y)),
            None => runs.push(Vec::new()),
        }
    }
    runs.retain(|run| !run.is_empty());
    runs
}

/// Centred note for a chart with nothing to show.
pub(super) fn draw_no_data_note<DB: DrawingBackend>(
    chart: &mut XyChart<'_, DB>,
    x_range: &Range<f64>,
    y_range: &Range<f64>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let centre = (
        (x_range.start + x_range.end) / 2.0,
        (y_range.start + y_range.end) / 2.0,
    );
    let style = TextStyle::from((FAMILY, 18).into_font())
        .color(&super::header::COLOR_MUTED)
        .pos(Pos::new(HPos::Center, VPos::Center));
    chart.draw_series(std::iter::once(Text::new("no data", centre, style)))?;
    Ok(())
}
