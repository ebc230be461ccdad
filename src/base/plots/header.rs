//! The band above each chart: title, one line of explanation, and the legend.
//!
//! The legend lives here rather than inside the plotting area (plotters'
//! series labels) so it can never cover data, whatever shape the curves take.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::font::FAMILY;

/// Okabe–Ito colours: distinguishable with common colour-vision deficiencies.
pub(super) const COLOR_A: RGBColor = RGBColor(0, 114, 178);
pub(super) const COLOR_B: RGBColor = RGBColor(213, 94, 0);
pub(super) const COLOR_EQUIVALENCE: RGBColor = RGBColor(0, 158, 115);
pub(super) const COLOR_MUTED: RGBColor = RGBColor(90, 90, 90);

/// Variants differ by marker shape too, so a grey print still tells them apart.
#[derive(Debug, Clone, Copy)]
pub(super) enum Marker {
    Circle,
    Triangle,
}

pub(super) const MARKER_SIZE: i32 = 4;
pub(super) const BOOT_POINT_SIZE: i32 = 3;

#[derive(Debug, Clone, Copy)]
pub(super) enum LegendGlyph {
    /// A line through a filled marker: a series of means.
    Series(RGBColor, Marker),
    /// A small hollow circle: one boot's mean.
    BootPoint(RGBColor),
    /// A dashed line over a light band: the equivalence margin.
    Margin(RGBColor),
}

pub(super) struct LegendEntry {
    pub label: String,
    pub glyph: LegendGlyph,
}

const TITLE_SIZE: f64 = 24.0;
const SUBTITLE_SIZE: f64 = 15.0;
const LEGEND_TEXT_SIZE: f64 = 15.0;
const LEGEND_ROW_HEIGHT: i32 = 24;
const GLYPH_WIDTH: i32 = 34;
const GLYPH_TEXT_GAP: i32 = 8;
const ENTRY_GAP: i32 = 30;
const SIDE_MARGIN: i32 = 40;
const TITLE_TOP: i32 = 10;
const SUBTITLE_TOP: i32 = 44;
const LEGEND_TOP: i32 = 76;

/// Fills `root` white, draws the header and returns the area left for the chart.
pub(super) fn draw_header<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    legend: &[LegendEntry],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (width, _) = root.dim_in_pixel();
    let width = width as i32;
    let centre = width / 2;

    let title_style = TextStyle::from((FAMILY, TITLE_SIZE).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    root.draw(&Text::new(title, (centre, TITLE_TOP), title_style))?;
    let subtitle_style = TextStyle::from((FAMILY, SUBTITLE_SIZE).into_font())
        .color(&COLOR_MUTED)
        .pos(Pos::new(HPos::Center, VPos::Top));
    root.draw(&Text::new(subtitle, (centre, SUBTITLE_TOP), subtitle_style))?;

    let rows = layout_legend(root, legend, width - 2 * SIDE_MARGIN)?;
    let text_style = TextStyle::from((FAMILY, LEGEND_TEXT_SIZE).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (row_index, row) in rows.iter().enumerate() {
        let row_width: i32 = row.iter().map(|(_, w)| w).sum::<i32>() - ENTRY_GAP;
        let mut x = centre - row_width / 2;
        let y = LEGEND_TOP + row_index as i32 * LEGEND_ROW_HEIGHT + LEGEND_ROW_HEIGHT / 2;
        for (entry, entry_width) in row {
            draw_glyph(root, entry.glyph, x, y)?;
            root.draw(&Text::new(
                entry.label.as_str(),
                (x + GLYPH_WIDTH + GLYPH_TEXT_GAP, y),
                text_style.clone(),
            ))?;
            x += entry_width;
        }
    }
    let header_height = LEGEND_TOP + rows.len() as i32 * LEGEND_ROW_HEIGHT + 6;
    Ok(root.split_vertically(header_height).1)
}

/// One legend row: each entry with its width, including the gap after it.
type LegendRow<'e> = Vec<(&'e LegendEntry, i32)>;

/// Greedy rows fitting `max_width`.
fn layout_legend<'e, DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    legend: &'e [LegendEntry],
    max_width: i32,
) -> Result<Vec<LegendRow<'e>>, DrawingAreaErrorKind<DB::ErrorType>> {
    let font = TextStyle::from((FAMILY, LEGEND_TEXT_SIZE).into_font());
    let mut rows: Vec<LegendRow> = Vec::new();
    let mut row_width = 0;
    for entry in legend {
        let (text_width, _) = root.estimate_text_size(&entry.label, &font)?;
        let entry_width = GLYPH_WIDTH + GLYPH_TEXT_GAP + text_width as i32 + ENTRY_GAP;
        match rows.last_mut() {
            Some(row) if row_width + entry_width - ENTRY_GAP <= max_width => {
                row.push((entry, entry_width));
                row_width += entry_width;
            }
            _ => {
                rows.push(vec![(entry, entry_width)]);
                row_width = entry_width;
            }
        }
    }
    Ok(rows)
}

fn draw_glyph<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    glyph: LegendGlyph,
    left: i32,
    y: i32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let right = left + GLYPH_WIDTH;
    let middle = left + GLYPH_WIDTH / 2;
    match glyph {
        LegendGlyph::Series(color, marker) => {
            root.draw(&PathElement::new(
                vec![(left, y), (right, y)],
                color.stroke_width(2),
            ))?;
            draw_marker(root, marker, (middle, y), color)?;
        }
        LegendGlyph::BootPoint(color) => {
            root.draw(&Circle::new(
                (middle - 6, y - 3),
                BOOT_POINT_SIZE,
                color.stroke_width(1),
            ))?;
            root.draw(&Circle::new(
                (middle + 5, y + 2),
                BOOT_POINT_SIZE,
                color.stroke_width(1),
            ))?;
        }
        LegendGlyph::Margin(color) => {
            root.draw(&Rectangle::new(
                [(left, y - 7), (right, y + 7)],
                color.mix(0.12).filled(),
            ))?;
            root.draw(&plotters::element::DashedPathElement::new(
                vec![(left, y - 7), (right, y - 7)],
                6,
                4,
                color.stroke_width(2),
            ))?;
            root.draw(&plotters::element::DashedPathElement::new(
                vec![(left, y + 7), (right, y + 7)],
                6,
                4,
                color.stroke_width(2),
            ))?;
        }
    }
    Ok(())
}

/// Draws one filled marker at a pixel or data coordinate.
pub(super) fn draw_marker<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    marker: Marker,
    at: CT::From,
    color: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    CT::From: Clone,
{
    match marker {
        Marker::Circle => area.draw(&Circle::new(at, MARKER_SIZE, color.filled())),
        Marker::Triangle => area.draw(&TriangleMarker::new(at, MARKER_SIZE + 2, color.filled())),
    }
}
