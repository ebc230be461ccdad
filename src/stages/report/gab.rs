//! github-action-benchmark's custom format: an array of `{name, unit,
//! value, range, extra}`, read by the action with `tool:
//! customSmallerIsBetter` or `customBiggerIsBetter`. A file holds one
//! direction, so the points where smaller is better (times) and those where
//! bigger is better (rates) go to two files. Names are the ones `bmf.json`
//! uses.

use super::bmf::series;
use super::format::{decimals, value};
use super::{Export, RunReport, GAB_BIGGER_FILE, GAB_FILE};
use crate::base::error::Result;
use serde::Serialize;

pub(super) struct Gab {
    bigger_is_better: bool,
}

impl Gab {
    pub const SMALLER: Gab = Gab {
        bigger_is_better: false,
    };
    pub const BIGGER: Gab = Gab {
        bigger_is_better: true,
    };
}

/// One entry, as the action's `BenchmarkResult`.
#[derive(Serialize)]
struct Entry {
    name: String,
    unit: String,
    value: f64,
    /// The half-width of the 95% interval of the mean, "± x".
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<String>,
    extra: String,
}

impl Export for Gab {
    fn file(&self) -> &'static str {
        if self.bigger_is_better {
            GAB_BIGGER_FILE
        } else {
            GAB_FILE
        }
    }

    fn render(&self, run: &RunReport) -> Result<String> {
        let entries: Vec<Entry> = series(run.meta, run.analysis)
            .into_iter()
            .filter(|s| s.higher_is_better == self.bigger_is_better)
            .map(|s| {
                let d = decimals(&s.unit, s.value);
                let mut extra = format!("{}: {} boots, {} values", s.measure, s.boots, s.values);
                if let Some((lower, upper)) = s.interval {
                    extra.push_str(&format!(
                        "; 95% CI {} .. {}",
                        value(lower, d),
                        value(upper, d)
                    ));
                }
                if let Some(against) = &s.against_baseline {
                    extra.push_str(&format!("; {against}"));
                }
                Entry {
                    range: s
                        .interval
                        .map(|(lower, upper)| format!("± {}", value((upper - lower) / 2.0, d))),
                    name: s.name,
                    unit: s.unit,
                    value: s.value,
                    extra,
                }
            })
            .collect();
        Ok(serde_json::to_string_pretty(&entries)? + "\n")
    }
}
