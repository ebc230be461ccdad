//! `bmf.json`: every point of every variant in Bencher Metric Format,
//! `{benchmark: {measure: {value, lower_value, upper_value}}}`, for
//! `bencher run --adapter json --file bmf.json`. The benchmark is the
//! point's stable name and the variant, so a point is one series there
//! night after night; the measure is the metric and its unit; the value is
//! the mean of all the variant's runs at the point, the bounds its 95%
//! interval.

use super::{Export, RunReport, BMF_FILE};
use crate::base::error::Result;
use crate::record::RunMeta;
use crate::stages::analysis::{Analysis, TableKey};
use serde_json::{json, Map, Value};

pub(super) struct Bmf;

impl Export for Bmf {
    fn file(&self) -> &'static str {
        BMF_FILE
    }

    fn render(&self, run: &RunReport) -> Result<String> {
        let mut doc = Map::new();
        for s in series(run.meta, run.analysis) {
            let mut metric = Map::new();
            metric.insert("value".into(), json!(s.value));
            if let Some((lower, upper)) = s.interval {
                metric.insert("lower_value".into(), json!(lower));
                metric.insert("upper_value".into(), json!(upper));
            }
            let mut measures = Map::new();
            measures.insert(s.measure.clone(), Value::Object(metric));
            doc.insert(s.name.clone(), Value::Object(measures));
        }
        Ok(serde_json::to_string_pretty(&Value::Object(doc))? + "\n")
    }
}

/// One variant at one point, as the continuous-benchmarking formats carry it.
#[derive(Debug, Clone)]
pub(super) struct Series {
    /// `suite/workload/metric@cpus=N,label=P [variant]`.
    pub name: String,
    /// `metric (unit)`: Bencher's measure.
    pub measure: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// The mean of all the variant's measured runs at the point.
    pub value: f64,
    /// The 95% interval of that mean, when there are values enough.
    pub interval: Option<(f64, f64)>,
    pub boots: usize,
    pub values: usize,
    /// For a candidate: against the baseline, the relative difference, its
    /// 95% interval and the verdict.
    pub against_baseline: Option<String>,
}

/// Every point of every variant with a finite mean, baseline first, table
/// by table.
pub(super) fn series(meta: &RunMeta, analysis: &Analysis) -> Vec<Series> {
    let mut out = Vec::new();
    for (key, points) in &analysis.tables {
        for (j, p) in points.iter().enumerate() {
            for (side, variant) in analysis.variants.iter().enumerate() {
                let value = p.mean(side);
                if !value.is_finite() {
                    continue;
                }
                let summary = analysis.variant_summary(key, j, side).map(|(s, _)| s);
                let interval = summary
                    .and_then(|s| s.mean_ci.as_ref())
                    .map(|ci| (ci.interval.lower, ci.interval.upper))
                    .filter(|(l, u)| l.is_finite() && u.is_finite());
                out.push(Series {
                    name: format!(
                        "{} [{variant}]",
                        super::junit::point_name(meta, key, p.param)
                    ),
                    measure: measure(key, &p.unit),
                    unit: p.unit.clone(),
                    higher_is_better: p.higher_is_better,
                    value,
                    interval,
                    boots: p
                        .sides
                        .get(side)
                        .map_or(0, |b| b.iter().filter(|v| !v.is_empty()).count()),
                    values: p.n(side),
                    against_baseline: against_baseline(analysis, key, j, side),
                });
            }
        }
    }
    out
}

fn measure(key: &TableKey, unit: &str) -> String {
    format!("{} ({unit})", key.metric)
}

fn against_baseline(analysis: &Analysis, key: &TableKey, j: usize, side: usize) -> Option<String> {
    let i = analysis
        .comparisons
        .iter()
        .position(|c| c.candidate == side)?;
    let a = analysis.results_of(i, key)?.get(j)?;
    let rel = a.relative_difference?;
    let base = &analysis.variants[analysis.comparisons[i].baseline];
    Some(format!(
        "{}% against {base}{}, {}",
        super::format::relative(rel),
        a.relative_difference_ci
            .as_ref()
            .map_or(String::new(), |ci| format!(
                " (95% CI {}% .. {}%)",
                super::format::relative(ci.lower),
                super::format::relative(ci.upper)
            )),
        a.verdict.as_str()
    ))
}
