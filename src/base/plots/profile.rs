//! The profile plot: horizontal bars of the functions whose instruction
//! counts differ most between the two kernels, largest at the top, so a
//! reader sees where a point's difference goes.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::font::FAMILY;
use super::header::{draw_header, LegendEntry, LegendGlyph, Marker, COLOR_A, COLOR_B};
use super::scale::padded_range;
use super::{Chart, DrawResult};

/// What one profile plot shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileBars {
    pub title: String,
    pub label_a: String,
    pub label_b: String,
    /// (function, candidate − baseline instructions per run), largest first.
    pub bars: Vec<(String, f64)>,
    /// The point's whole difference, instructions per run.
    pub total: f64,
}

pub(super) struct ProfileChart<'a>(pub &'a ProfileBars);

/// Function names are long; the bars start after them.
const LABEL_AREA: u32 = 330;

/// An axis count as a reader says it: 2.5M, 300k, 40.
fn compact(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = format!("{scaled:.1}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{suffix}")
}

fn short(name: &str) -> String {
    const MAX: usize = 44;
    if name.chars().count() <= MAX {
        name.to_string()
    } else {
        let head: String = name.chars().take(MAX - 1).collect();
        format!("{head}…")
    }
}

impl Chart for ProfileChart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let input = self.0;
        let legend = vec![
            LegendEntry {
                label: format!("more in {}", input.label_b),
                glyph: LegendGlyph::Series(COLOR_B, Marker::Triangle),
            },
            LegendEntry {
                label: format!("fewer in {}", input.label_b),
                glyph: LegendGlyph::Series(COLOR_A, Marker::Circle),
            },
        ];
        let subtitle = format!(
            "instructions per run, {} − {}; whole difference {:+.0}",
            input.label_b, input.label_a, input.total
        );
        let area = draw_header(root, &input.title, &subtitle, &legend)?;
        let n = input.bars.len().max(1) as i32;
        let x_range = padded_range(
            input
                .bars
                .iter()
                .map(|(_, d)| *d)
                .chain([0.0])
                .filter(|d| d.is_finite()),
            0.05,
        );
        let names: Vec<String> = input.bars.iter().map(|(n, _)| short(n)).collect();
        let mut chart = ChartBuilder::on(&area)
            .margin(20)
            .x_label_area_size(40)
            .y_label_area_size(LABEL_AREA)
            // A segmented 0..k has k + 1 segments: one per bar.
            .build_cartesian_2d(x_range, (0..n - 1).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("instructions per run")
            .label_style((FAMILY, 14))
            .x_labels(6)
            .x_label_formatter(&|x| compact(*x))
            .y_labels(n as usize)
            .y_label_formatter(&|y| match y {
                // Bar i is drawn at n-1-i, so the largest is on top.
                SegmentValue::CenterOf(v) => {
                    names.get((n - 1 - v) as usize).cloned().unwrap_or_default()
                }
                _ => String::new(),
            })
            .draw()?;
        for (i, (_, d)) in input.bars.iter().enumerate() {
            if !d.is_finite() {
                continue;
            }
            let y = n - 1 - i as i32;
            let color = if *d >= 0.0 { COLOR_B } else { COLOR_A };
            chart.draw_series(std::iter::once(Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(y)),
                    (*d, SegmentValue::Exact(y + 1)),
                ],
                color.mix(0.85).filled(),
            )))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn axis_counts_are_compact() {
        assert_eq!(super::compact(2_500_000.0), "2.5M");
        assert_eq!(super::compact(-300_000.0), "-300k");
        assert_eq!(super::compact(40.0), "40");
        assert_eq!(super::compact(0.0), "0");
    }
}
