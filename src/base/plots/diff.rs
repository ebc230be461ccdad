//! The relative-difference plot: (B/A - 1) in percent against the parameter,
//! with its CI, the zero line and the equivalence margin, so a reader sees at
//! a glance whether every interval lies inside the margin.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axes::{
    build_chart, direction_phrase, draw_interval, draw_no_data_note, unbroken_runs, XAxis, XyChart,
};
use super::header::{
    draw_header, draw_marker, LegendEntry, LegendGlyph, Marker, COLOR_B, COLOR_EQUIVALENCE,
};
use super::scale::{clean_rel, padded_range, tick_label};
use super::{Chart, DrawResult, PlotInput};

pub(super) struct DiffChart<'a>(pub &'a PlotInput);

impl Chart for DiffChart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let input = self.0;
        let points = clean_rel(&input.rel);
        // A margin that is zero, negative or NaN means "no equivalence test": draw none.
        let margin_percent = Some(input.margin * 100.0).filter(|m| m.is_finite() && *m > 0.0);

        let mut legend = vec![LegendEntry {
            label: format!(
                "{} vs {}, bars: confidence interval",
                input.label_b, input.label_a
            ),
            glyph: LegendGlyph::Series(COLOR_B, Marker::Triangle),
        }];
        if let Some(margin) = margin_percent {
            legend.push(LegendEntry {
                label: format!("equivalence margin ±{} %", tick_label(margin)),
                glyph: LegendGlyph::Margin(COLOR_EQUIVALENCE),
            });
        }
        let favoured_side = if input.higher_is_better {
            "above"
        } else {
            "below"
        };
        let subtitle = format!(
            "({b} / {a} − 1) × 100; {metric}: {direction}, so {side} 0 favours {b}",
            a = input.label_a,
            b = input.label_b,
            metric = input.metric_label,
            direction = direction_phrase(input.higher_is_better),
            side = favoured_side,
        );
        let title = format!(
            "{}: {} relative to {}",
            input.title, input.label_b, input.label_a
        );
        let area = draw_header(root, &title, &subtitle, &legend)?;

        let x_range = padded_range(points.iter().map(|p| p.param), 0.04);
        // Zero and the margin are always in view: they are the reference the reader judges by.
        let y_values = points
            .iter()
            .flat_map(|p| {
                p.rel_percent
                    .into_iter()
                    .chain(p.ci_percent.into_iter().flat_map(|(low, high)| [low, high]))
            })
            .chain([0.0])
            .chain(margin_percent.into_iter().flat_map(|m| [-m, m]));
        let y_range = padded_range(y_values, 0.08);

        let y_desc = format!("{} difference [%]", input.metric_label);
        let mut chart = build_chart(
            &area,
            x_range.clone(),
            y_range.clone(),
            XAxis::of(&input.param_label, points.iter().map(|p| p.param)),
            &y_desc,
        )?;
        if let Some(margin) = margin_percent {
            draw_margin(&mut chart, &x_range, margin)?;
        }
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x_range.start, 0.0), (x_range.end, 0.0)],
            BLACK.mix(0.75).stroke_width(1),
        )))?;

        let cap_half_width = (x_range.end - x_range.start) * 0.005;
        // The parameters are discrete, so the line only guides the eye: thin and
        // light, leaving the markers and intervals to carry the data. (Plotters
        // also rasterizes steep 2-px lines as hairlines in PNG.)
        for run in unbroken_runs(points.iter().map(|p| (p.param, p.rel_percent))) {
            chart.draw_series(LineSeries::new(run, COLOR_B.mix(0.7).stroke_width(1)))?;
        }
        for point in &points {
            if let Some(ci) = point.ci_percent {
                draw_interval(
                    &mut chart,
                    point.param,
                    ci,
                    cap_half_width,
                    COLOR_B.stroke_width(2),
                )?;
            }
        }
        let plotting_area = chart.plotting_area();
        for point in &points {
            if let Some(rel) = point.rel_percent {
                draw_marker(plotting_area, Marker::Triangle, (point.param, rel), COLOR_B)?;
            }
        }
        if points
            .iter()
            .all(|p| p.rel_percent.is_none() && p.ci_percent.is_none())
        {
            draw_no_data_note(&mut chart, &x_range, &y_range)?;
        }
        Ok(())
    }
}

/// The equivalence zone: a light band between dashed lines at ±margin.
fn draw_margin<DB: DrawingBackend>(
    chart: &mut XyChart<'_, DB>,
    x_range: &std::ops::Range<f64>,
    margin_percent: f64,
) -> DrawResult<DB> {
    chart.draw_series(std::iter::once(Rectangle::new(
        [
            (x_range.start, -margin_percent),
            (x_range.end, margin_percent),
        ],
        COLOR_EQUIVALENCE.mix(0.12).filled(),
    )))?;
    chart.draw_series([-margin_percent, margin_percent].into_iter().map(|level| {
        plotters::element::DashedPathElement::new(
            vec![(x_range.start, level), (x_range.end, level)],
            8,
            5,
            COLOR_EQUIVALENCE.stroke_width(2),
        )
    }))?;
    Ok(())
}
