//! `junit.xml`: the run as test results, for the test reporters of CI
//! systems (GitLab, Jenkins, Buildkite, GitHub's). One test suite for the
//! run; one test case per point and candidate, failed by the nightly
//! gate's rule ([`crate::base::stats::PointAnalysis::regressed_beyond`]: a
//! significant regression beyond the suite's margin), skipped when its
//! verdict is inconclusive or a boot of its CPU count failed, passed
//! otherwise; one test case in error per failed boot.

use super::format::{relative, signed, value};
use super::{Export, RunReport, JUNIT_FILE};
use crate::base::error::Result;
use crate::base::stats::{PointAnalysis, Verdict};
use crate::record::{BootRecord, RunMeta};
use crate::stages::analysis::{param_label, Analysis, Comparison, Point, TableKey};
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;

pub(super) struct Junit;

impl Export for Junit {
    fn file(&self) -> &'static str {
        JUNIT_FILE
    }

    fn render(&self, run: &RunReport) -> Result<String> {
        let cases = cases(run.meta, run.analysis);
        write_xml(run.meta, run.analysis.config.margin, &cases)
    }
}

/// How a test case ended.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Passed,
    /// A regression beyond the margin: `message`.
    Failed(String),
    /// Inconclusive or measured with failed boots: `message`.
    Skipped(String),
    /// A boot that failed: `message`.
    Error(String),
}

#[derive(Debug, Clone)]
struct Case {
    name: String,
    classname: String,
    outcome: Outcome,
    /// The figures: both sides, the difference and its interval.
    out: String,
    /// Seconds: a boot's wall time; 0 for a point.
    time: f64,
}

/// The stable name of a point: `suite/workload/metric@cpus=N,label=P`,
/// the same in every format and every night.
pub(super) fn point_name(meta: &RunMeta, key: &TableKey, param: u64) -> String {
    format!(
        "{}/{}/{}@cpus={},{}={param}",
        meta.suite_title(),
        key.workload,
        key.metric,
        key.cpus,
        param_label(&key.workload)
    )
}

fn side_line(label: &str, name: &str, p: &Point, side: usize, d: usize) -> String {
    format!(
        "{label} {name}: mean {} {} (sd {}), {} values",
        value(p.mean(side), d),
        p.unit,
        value(p.sd(side), d),
        p.n(side)
    )
}

/// The figures of a point: what a reader of the CI page needs to judge it.
fn figures(
    analysis: &Analysis,
    c: &Comparison,
    p: &Point,
    a: Option<&PointAnalysis>,
    margin: f64,
) -> String {
    let d = super::markdown::decimals_of(std::slice::from_ref(p));
    let [base, cand] = analysis.names(c);
    let (ma, mb) = (p.mean(c.baseline), p.mean(c.candidate));
    let mut out = vec![
        side_line("without", base, p, c.baseline, d),
        side_line("with", cand, p, c.candidate, d),
        format!(
            "diff: {} {} ({}%), 95% CI {}",
            signed(mb - ma, d),
            p.unit,
            relative((mb - ma) / ma),
            interval(a)
        ),
    ];
    if let Some(a) = a {
        out.push(format!(
            "verdict: {} (adjusted p {}; boots {} and {}; margin {}%, {})",
            a.verdict.as_str(),
            a.adjusted_p_value
                .map_or("-".to_string(), |p| format!("{p:.3e}")),
            a.a.n_boots,
            a.b.n_boots,
            margin * 100.0,
            if p.higher_is_better {
                "higher is better"
            } else {
                "lower is better"
            }
        ));
    }
    out.join("\n") + "\n"
}

fn interval(a: Option<&PointAnalysis>) -> String {
    a.and_then(|a| a.relative_difference_ci.as_ref())
        .map_or("none".into(), |ci| {
            format!("{}% .. {}%", relative(ci.lower), relative(ci.upper))
        })
}

/// The boots of `variant` on `cpus` CPUs that failed.
fn failed_boots<'a>(meta: &'a RunMeta, variant: &str, cpus: u32) -> Vec<&'a BootRecord> {
    meta.boots
        .iter()
        .filter(|b| !b.ok() && b.variant == variant && b.cpus == cpus)
        .collect()
}

fn cases(meta: &RunMeta, analysis: &Analysis) -> Vec<Case> {
    let margin = analysis.config.margin;
    let mut cases = Vec::new();
    for (i, c) in analysis.comparisons.iter().enumerate() {
        let [base, cand] = analysis.names(c);
        for (key, points) in &analysis.tables {
            let analyses = analysis.results_of(i, key);
            for (j, p) in points.iter().enumerate() {
                let a = analyses.and_then(|a| a.get(j));
                let summary = format!(
                    "{cand} against {base}: {}% (95% CI {}), {}",
                    relative((p.mean(c.candidate) - p.mean(c.baseline)) / p.mean(c.baseline)),
                    interval(a),
                    a.map_or("not analysed", |a| a.verdict.as_str())
                );
                let failed = failed_boots(meta, base, key.cpus).len()
                    + failed_boots(meta, cand, key.cpus).len();
                let outcome = match a {
                    Some(a) if a.regressed_beyond(margin) => Outcome::Failed(format!(
                        "{summary}: a significant regression beyond the {}% margin",
                        margin * 100.0
                    )),
                    _ if failed > 0 => Outcome::Skipped(format!(
                        "{summary}; {failed} boot(s) on {} CPU(s) failed",
                        key.cpus
                    )),
                    Some(a)
                        if matches!(
                            a.verdict,
                            Verdict::NoSignificantDifference | Verdict::InsufficientData
                        ) =>
                    {
                        Outcome::Skipped(format!("{summary}: inconclusive"))
                    }
                    None => Outcome::Skipped(format!("{summary}: inconclusive")),
                    Some(_) => Outcome::Passed,
                };
                cases.push(Case {
                    name: format!("{} [{cand}]", point_name(meta, key, p.param)),
                    classname: format!("{}.{}", meta.suite_title(), key.workload),
                    outcome,
                    out: figures(analysis, c, p, a, margin),
                    time: 0.0,
                });
            }
        }
    }
    for b in meta.boots.iter().filter(|b| !b.ok()) {
        cases.push(Case {
            name: format!(
                "{}/boot {} of {} on {} CPU(s)",
                meta.suite_title(),
                b.boot,
                b.variant,
                b.cpus
            ),
            classname: format!("{}.boots", meta.suite_title()),
            outcome: Outcome::Error(format!("boot failed: {}", b.status())),
            out: format!(
                "status: {}\nwall time: {:.1} s\nsamples: {}\nconsole log: {}\n",
                b.status(),
                b.wall_s,
                b.samples,
                b.console_log
            ),
            time: b.wall_s,
        });
    }
    cases
}

/// XML 1.0 cannot carry most control characters, even escaped.
fn xml_text(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
        .collect()
}

fn write_xml(meta: &RunMeta, margin: f64, cases: &[Case]) -> Result<String> {
    let count = |f: fn(&Outcome) -> bool| cases.iter().filter(|c| f(&c.outcome)).count();
    let failures = count(|o| matches!(o, Outcome::Failed(_))).to_string();
    let errors = count(|o| matches!(o, Outcome::Error(_))).to_string();
    let skipped = count(|o| matches!(o, Outcome::Skipped(_))).to_string();
    let tests = cases.len().to_string();
    let time = format!("{:.3}", meta.wall_s);
    let suite_name = xml_text(&format!("markbench {}", meta.suite_title()));
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let counts = [
        ("tests", tests.as_str()),
        ("failures", failures.as_str()),
        ("errors", errors.as_str()),
        ("skipped", skipped.as_str()),
        ("time", time.as_str()),
    ];
    // The JUnit schema's timestamp is ISO 8601 without a zone; markbench
    // records UTC with a `Z`.
    let timestamp = xml_text(meta.started_at.trim_end_matches('Z'));
    let hostname = xml_text(&meta.hostnames_words());
    let properties: Vec<(&str, String)> = vec![
        ("suite", meta.suite_title()),
        ("accelerator", meta.accel.as_str().to_string()),
        ("timing", meta.timing_mode().to_string()),
        ("margin", format!("{}%", margin * 100.0)),
        ("correction", meta.correction.as_str().to_string()),
        ("complete", meta.complete.to_string()),
        ("markbench", meta.markbench_version.clone()),
        ("git revision", meta.git_revision.clone()),
    ];
    w.create_element("testsuites")
        .with_attribute(("name", suite_name.as_str()))
        .with_attributes(counts)
        .write_inner_content(|w| {
            let mut suite = w
                .create_element("testsuite")
                .with_attribute(("name", suite_name.as_str()))
                .with_attributes(counts);
            if !timestamp.is_empty() {
                suite = suite.with_attribute(("timestamp", timestamp.as_str()));
            }
            suite
                .with_attribute(("hostname", hostname.as_str()))
                .write_inner_content(|w| {
                    w.create_element("properties").write_inner_content(|w| {
                        for (name, value) in &properties {
                            w.create_element("property")
                                .with_attribute(("name", *name))
                                .with_attribute(("value", xml_text(value).as_str()))
                                .write_empty()?;
                        }
                        Ok(())
                    })?;
                    for case in cases {
                        write_case(w, case)?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
    let mut text = String::from_utf8(w.into_inner())?;
    text.push('\n');
    Ok(text)
}

fn write_case(w: &mut Writer<Vec<u8>>, case: &Case) -> std::io::Result<()> {
    let time = format!("{:.3}", case.time);
    let name = xml_text(&case.name);
    let classname = xml_text(&case.classname);
    let out = xml_text(&case.out);
    w.create_element("testcase")
        .with_attribute(("name", name.as_str()))
        .with_attribute(("classname", classname.as_str()))
        .with_attribute(("time", time.as_str()))
        .write_inner_content(|w| {
            let (element, kind, message) = match &case.outcome {
                Outcome::Passed => ("", "", None),
                Outcome::Failed(m) => ("failure", "regression", Some(m)),
                Outcome::Skipped(m) => ("skipped", "", Some(m)),
                Outcome::Error(m) => ("error", "boot", Some(m)),
            };
            if let Some(message) = message {
                let message = xml_text(message);
                let mut e = w
                    .create_element(element)
                    .with_attribute(("message", message.as_str()));
                if !kind.is_empty() {
                    e = e.with_attribute(("type", kind));
                }
                if element == "skipped" {
                    e.write_empty()?;
                } else {
                    e.write_text_content(BytesText::new(&out))?;
                }
            }
            w.create_element("system-out")
                .write_text_content(BytesText::new(&out))?;
            Ok(())
        })?;
    Ok(())
}
