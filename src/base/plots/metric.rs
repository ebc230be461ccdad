//! The metric plot: both variants' means against the parameter, with CI bars
//! and every boot's mean, so boot-to-boot spread is visible next to the CI.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axes::{
    build_chart, direction_phrase, draw_interval, draw_no_data_note, unbroken_runs, with_unit,
    XAxis, XyChart,
};
use super::header::{
    draw_header, draw_marker, LegendEntry, LegendGlyph, Marker, BOOT_POINT_SIZE, COLOR_A, COLOR_B,
    COLOR_MUTED,
};
use super::scale::{clean_side, padded_range, variant_offset, CleanSidePoint};
use super::{Chart, DrawResult, PlotInput};

pub(super) struct MetricChart<'a>(pub &'a PlotInput);

impl Chart for MetricChart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let input = self.0;
        let side_a = clean_side(&input.a);
        let side_b = clean_side(&input.b);

        let legend = [
            LegendEntry {
                label: input.label_a.clone(),
                glyph: LegendGlyph::Series(COLOR_A, Marker::Circle),
            },
            LegendEntry {
                label: input.label_b.clone(),
                glyph: LegendGlyph::Series(COLOR_B, Marker::Triangle),
            },
            LegendEntry {
                label: "per-boot means".to_string(),
                glyph: LegendGlyph::BootPoint(COLOR_MUTED),
            },
        ];
        let subtitle = format!(
            "mean {}, {}; bars: confidence interval of the mean; hollow circles: one boot's mean",
            input.metric_label,
            direction_phrase(input.higher_is_better)
        );
        let title = format!("{}: {}", input.title, input.metric_label);
        let area = draw_header(root, &title, &subtitle, &legend)?;

        let params: Vec<f64> = side_a.iter().chain(&side_b).map(|p| p.param).collect();
        let x_range = padded_range(params.iter().copied(), 0.04);
        let offset = variant_offset(&params, &x_range);
        let y_values = side_a.iter().chain(&side_b).flat_map(|p| {
            p.mean
                .into_iter()
                .chain(p.ci.into_iter().flat_map(|(low, high)| [low, high]))
                .chain(p.boot_means.iter().copied())
        });
        let y_range = padded_range(y_values, 0.06);

        let y_desc = format!(
            "{}, {}",
            with_unit(&input.metric_label, &input.unit),
            direction_phrase(input.higher_is_better)
        );
        let mut chart = build_chart(
            &area,
            x_range.clone(),
            y_range.clone(),
            XAxis::of(&input.param_label, params.iter().copied()),
            &y_desc,
        )?;
        // A left of each parameter, B right of it: bars and boot points never hide each other.
        draw_side(&mut chart, &side_a, -offset, COLOR_A, Marker::Circle)?;
        draw_side(&mut chart, &side_b, offset, COLOR_B, Marker::Triangle)?;
        if side_a
            .iter()
            .chain(&side_b)
            .all(|p| p.mean.is_none() && p.boot_means.is_empty())
        {
            draw_no_data_note(&mut chart, &x_range, &y_range)?;
        }
        Ok(())
    }
}

/// One variant, drawn `offset` away from each parameter (negative: left).
fn draw_side<DB: DrawingBackend>(
    chart: &mut XyChart<'_, DB>,
    points: &[CleanSidePoint],
    offset: f64,
    color: RGBColor,
    marker: Marker,
) -> DrawResult<DB> {
    for run in unbroken_runs(points.iter().map(|p| (p.param + offset, p.mean))) {
        chart.draw_series(LineSeries::new(run, color.stroke_width(2)))?;
    }
    for point in points {
        if let Some(ci) = point.ci {
            draw_interval(
                chart,
                point.param + offset,
                ci,
                offset.abs() * 0.8,
                color.stroke_width(2),
            )?;
        }
    }
    // Boot points sit a little further out than the mean so the marker does not cover them.
    let boot_x_offset = offset * 2.2;
    chart.draw_series(points.iter().flat_map(|p| {
        p.boot_means.iter().map(move |&boot_mean| {
            Circle::new(
                (p.param + boot_x_offset, boot_mean),
                BOOT_POINT_SIZE,
                color.stroke_width(1),
            )
        })
    }))?;
    let plotting_area = chart.plotting_area();
    for point in points {
        if let Some(mean) = point.mean {
            draw_marker(plotting_area, marker, (point.param + offset, mean), color)?;
        }
    }
    Ok(())
}
