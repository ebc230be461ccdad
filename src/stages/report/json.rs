//! `summary.json`: every statistic of every comparison at every point, and
//! the kernels' sizes, for dashboards and scripts.

use super::{Export, RunReport, SUMMARY_FILE};
use crate::base::error::Result;
use crate::base::stats::{AnalysisConfig, PointAnalysis, Verdict};
use crate::guest::images::size::SizeRecord;
use crate::record::RunMeta;
use crate::stages::analysis::{Against, Analysis};
use serde::Serialize;

pub(super) struct Json;

impl Export for Json {
    fn file(&self) -> &'static str {
        SUMMARY_FILE
    }

    fn render(&self, run: &RunReport) -> Result<String> {
        // A run of two keeps the one object it always had; several
        // candidates give one per candidate.
        let profile = match run.profiles {
            [] => None,
            [view] => Some(super::profile::json(view)),
            views => Some(serde_json::Value::Array(
                views.iter().map(super::profile::json).collect(),
            )),
        };
        Summary::new(run.meta, run.analysis, run.files.sizes, profile).to_json()
    }
}

/// The document. Fields are in alphabetical order, as the keys are written.
#[derive(Serialize)]
struct Summary<'a> {
    accel: &'a str,
    comparisons: Vec<ComparisonSummary<'a>>,
    complete: bool,
    config: &'a AnalysisConfig,
    error: Option<String>,
    /// One entry per comparison and point, comparison after comparison.
    points: Vec<PointSummary<'a>>,
    /// "Where the difference goes", for a run with profiles.
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<serde_json::Value>,
    /// `null` when the run recorded none.
    sizes: Option<&'a SizeRecord>,
    suite: String,
}

/// One candidate against its baseline over the whole run.
#[derive(Serialize)]
struct ComparisonSummary<'a> {
    against: Against,
    baseline: &'a str,
    candidate: &'a str,
    /// The report's verdict line for this comparison.
    summary: String,
    /// How many points got each verdict.
    verdicts: VerdictCounts,
}

#[derive(Serialize, Default)]
struct VerdictCounts {
    equivalent: usize,
    improvement: usize,
    insufficient_data: usize,
    no_significant_difference: usize,
    regression: usize,
}

/// One comparison at one point.
#[derive(Serialize)]
struct PointSummary<'a> {
    analysis: Option<&'a PointAnalysis>,
    cpus: u32,
    higher_is_better: bool,
    metric: &'a str,
    param: u64,
    unit: &'a str,
    /// The candidate.
    with: &'a str,
    /// The baseline.
    without: &'a str,
    workload: &'a str,
}

impl<'a> Summary<'a> {
    fn new(
        meta: &'a RunMeta,
        analysis: &'a Analysis,
        sizes: Option<&'a SizeRecord>,
        profile: Option<serde_json::Value>,
    ) -> Summary<'a> {
        let mut points = Vec::new();
        let mut comparisons = Vec::new();
        // A series' steps follow the comparisons with the baseline, as in
        // the analysis' results.
        for (i, c) in analysis
            .comparisons
            .iter()
            .chain(&analysis.steps)
            .enumerate()
        {
            let [without, with] = analysis.names(c);
            for (key, list) in &analysis.tables {
                let analyses = analysis.results_of(i, key);
                for (j, p) in list.iter().enumerate() {
                    points.push(PointSummary {
                        analysis: analyses.and_then(|a| a.get(j)),
                        cpus: key.cpus,
                        higher_is_better: p.higher_is_better,
                        metric: &key.metric,
                        param: p.param,
                        unit: &p.unit,
                        with,
                        without,
                        workload: &key.workload,
                    });
                }
            }
            let results = analysis.comparison_points(i);
            let mut verdicts = VerdictCounts::default();
            for r in &results {
                *match r.verdict {
                    Verdict::Equivalent => &mut verdicts.equivalent,
                    Verdict::Improvement => &mut verdicts.improvement,
                    Verdict::InsufficientData => &mut verdicts.insufficient_data,
                    Verdict::NoSignificantDifference => &mut verdicts.no_significant_difference,
                    Verdict::Regression => &mut verdicts.regression,
                } += 1;
            }
            comparisons.push(ComparisonSummary {
                against: if i < analysis.comparisons.len() {
                    analysis.against
                } else {
                    Against::Previous
                },
                baseline: without,
                candidate: with,
                summary: super::markdown::verdict_text(analysis, i),
                verdicts,
            });
        }
        Summary {
            accel: meta.accel.as_str(),
            comparisons,
            complete: meta.complete,
            config: &analysis.config,
            error: analysis.results.as_ref().err().map(ToString::to_string),
            points,
            profile,
            sizes,
            suite: meta.suite_title(),
        }
    }

    fn to_json(&self) -> Result<String> {
        // Through a `Value`, whose maps are ordered by key: every object,
        // nested statistics included, is written with its keys sorted, so
        // the file does not change when a struct's fields are reordered.
        let doc = serde_json::to_value(self)?;
        Ok(serde_json::to_string_pretty(&doc)? + "\n")
    }
}

/// `summary.json` of a run without profiles.
pub fn summary_json(
    meta: &RunMeta,
    analysis: &Analysis,
    sizes: Option<&SizeRecord>,
) -> Result<String> {
    Summary::new(meta, analysis, sizes, None).to_json()
}
