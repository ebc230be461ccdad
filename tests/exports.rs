//! The report's files for the places people already read results, read as
//! their readers read them: `report.txt` by width and against the
//! markdown's figures, from a real run's files; `junit.xml` parsed as XML,
//! case by case, and failing exactly what the nightly gate fails;
//! `bmf.json` against Bencher's published JSON schema; the
//! github-action-benchmark files as that action reads them.

use markbench::record::{BootRecord, HostInfo, KernelMeta, RunMeta, Sample, SampleWriter};
use markbench::stages::report::{self, plain::WIDTH, Format};
use quick_xml::events::Event;
use quick_xml::Reader;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A copy of a recorded run directory, to render into.
fn copy_of_run(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture("runs").join(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    tmp
}

/// The real partial quick run (icount, hackbench on 1 and 2 vCPUs and a
/// ping flood) with every report file written.
fn real_run() -> tempfile::TempDir {
    let run = copy_of_run("before-format-number");
    report::write(run.path()).unwrap();
    run
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn markbench(args: &[&std::ffi::OsStr]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("markbench")
        .unwrap()
        .args(args)
        .output()
        .unwrap()
}

// ---------------------------------------------------------------- report.txt

#[test]
fn report_txt_of_a_real_run() {
    let run = real_run();
    let text = read(run.path(), "report.txt");
    for (i, line) in text.lines().enumerate() {
        assert!(
            line.len() <= WIDTH,
            "line {} is {} columns: {line:?}",
            i + 1,
            line.len()
        );
        assert!(line.is_ascii(), "line {}: {line:?}", i + 1);
        assert!(
            !line.contains('|') && !line.contains("**"),
            "markdown: {line:?}"
        );
    }
    insta::assert_snapshot!(text);
}

#[test]
fn report_format_text_prints_the_file_and_writes_nothing() {
    let run = real_run();
    let written = read(run.path(), "report.txt");
    std::fs::remove_file(run.path().join("report.txt")).unwrap();
    let out = markbench(&[
        "report".as_ref(),
        run.path().as_os_str(),
        "--format".as_ref(),
        "text".as_ref(),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), written);
    assert!(!run.path().join("report.txt").exists());
}

/// The cells of the results rows of `report.md`, by their first cell.
fn markdown_rows(md: &str) -> Vec<Vec<String>> {
    md.lines()
        .filter(|l| {
            l.starts_with("| ")
                && l.split('|')
                    .nth(1)
                    .is_some_and(|c| c.trim().parse::<u64>().is_ok())
        })
        .filter(|l| l.contains(" | ") && l.matches('|').count() >= 12)
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
        .collect()
}

#[test]
fn report_txt_tables_hold_the_figures_of_report_md() {
    let run = real_run();
    let (md, text) = (
        read(run.path(), "report.md"),
        read(run.path(), "report.txt"),
    );
    let md_rows = markdown_rows(&md);
    let text_rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("  ") && l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(md_rows.len(), 3, "{md}");
    assert_eq!(text_rows.len(), md_rows.len(), "{text}");
    for (m, t) in md_rows.iter().zip(&text_rows) {
        // param, without, with, diff, diff %: the seeds' five columns.
        assert_eq!(&m[1..6], &t[..5], "\n{m:?}\n{t:?}");
        let ci = m[6].replace(" … ", "..");
        assert_eq!(ci, t[5]);
        let verdict = m[8].trim_matches('*');
        let short = match verdict {
            "no significant difference" => "n.s.",
            "insufficient data" => "too few",
            v => v,
        };
        assert_eq!(short.to_lowercase(), t[6].to_lowercase(), "{t:?}");
    }
}

// ----------------------------------------------------------------- junit.xml

#[derive(Debug, Default, Clone)]
struct TestCase {
    name: String,
    classname: String,
    /// "failure", "skipped", "error", or "" for a pass.
    outcome: String,
    message: String,
    system_out: String,
}

#[derive(Debug, Default)]
struct TestSuite {
    attributes: BTreeMap<String, String>,
    cases: Vec<TestCase>,
}

fn attributes(e: &quick_xml::events::BytesStart) -> BTreeMap<String, String> {
    e.attributes()
        .map(|a| {
            let a = a.unwrap();
            (
                String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                a.unescape_value().unwrap().into_owned(),
            )
        })
        .collect()
}

/// The document parsed as a CI's reporter reads it: `testsuites`, each
/// `testsuite` with its `testcase`s, a case's outcome element and its
/// `system-out`. Panics on XML that is not well formed.
fn parse_junit(xml: &str) -> (BTreeMap<String, String>, Vec<TestSuite>) {
    let mut reader = Reader::from_str(xml);
    reader.config_mut().trim_text(true);
    let (mut root, mut suites) = (BTreeMap::new(), Vec::<TestSuite>::new());
    let mut case: Option<TestCase> = None;
    let mut in_out = false;
    let mut stack: Vec<String> = Vec::new();
    loop {
        match reader.read_event().unwrap() {
            Event::Start(e) => {
                stack.push(open(&e, &mut root, &mut suites, &mut case, &mut in_out));
            }
            // An empty element ends where it starts.
            Event::Empty(e) => {
                stack.push(open(&e, &mut root, &mut suites, &mut case, &mut in_out));
                close(&mut stack, &mut case, &mut suites, &mut in_out);
            }
            Event::End(_) => close(&mut stack, &mut case, &mut suites, &mut in_out),
            Event::Text(t) if in_out => {
                let c = case.as_mut().unwrap();
                c.system_out.push_str(&t.unescape().unwrap());
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    (root, suites)
}

/// Takes in an element's start; returns its name.
fn open(
    e: &quick_xml::events::BytesStart,
    root: &mut BTreeMap<String, String>,
    suites: &mut Vec<TestSuite>,
    case: &mut Option<TestCase>,
    in_out: &mut bool,
) -> String {
    let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
    let attrs = attributes(e);
    // The elements and attributes of the JUnit schema that Jenkins,
    // GitLab and the GitHub reporters read; anything else is ignored by
    // some of them.
    let allowed: &[&str] = match name.as_str() {
        "testsuites" => &["name", "tests", "failures", "errors", "skipped", "time"],
        "testsuite" => &[
            "name",
            "tests",
            "failures",
            "errors",
            "skipped",
            "time",
            "timestamp",
            "hostname",
        ],
        "properties" | "system-out" => &[],
        "property" => &["name", "value"],
        "testcase" => &["name", "classname", "time"],
        "failure" | "error" => &["message", "type"],
        "skipped" => &["message"],
        other => panic!("<{other}> is not a JUnit element"),
    };
    for key in attrs.keys() {
        assert!(allowed.contains(&key.as_str()), "<{name} {key}>");
    }
    if let Some(t) = attrs.get("timestamp") {
        let pattern = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$").unwrap();
        assert!(pattern.is_match(t), "timestamp {t}");
    }
    for key in ["tests", "failures", "errors", "skipped"] {
        if let Some(n) = attrs.get(key) {
            n.parse::<usize>().unwrap();
        }
    }
    if let Some(t) = attrs.get("time") {
        assert!(t.parse::<f64>().unwrap() >= 0.0, "time {t}");
    }
    match name.as_str() {
        "testsuites" => *root = attrs,
        "testsuite" => suites.push(TestSuite {
            attributes: attrs,
            cases: Vec::new(),
        }),
        "testcase" => {
            *case = Some(TestCase {
                name: attrs["name"].clone(),
                classname: attrs["classname"].clone(),
                ..TestCase::default()
            })
        }
        "failure" | "skipped" | "error" => {
            let c = case.as_mut().expect("an outcome outside a testcase");
            assert!(c.outcome.is_empty(), "two outcomes in {}", c.name);
            c.outcome = name.clone();
            c.message = attrs.get("message").cloned().unwrap_or_default();
        }
        "system-out" => *in_out = true,
        _ => {}
    }
    name
}

fn close(
    stack: &mut Vec<String>,
    case: &mut Option<TestCase>,
    suites: &mut [TestSuite],
    in_out: &mut bool,
) {
    match stack.pop().as_deref() {
        Some("testcase") => suites
            .last_mut()
            .expect("a testcase outside a testsuite")
            .cases
            .push(case.take().unwrap()),
        Some("system-out") => *in_out = false,
        _ => {}
    }
}

fn count(suite: &TestSuite, outcome: &str) -> usize {
    suite.cases.iter().filter(|c| c.outcome == outcome).count()
}

/// The counts a reporter shows must be the cases' own.
fn check_counts(attrs: &BTreeMap<String, String>, suite: &TestSuite) {
    for (attr, n) in [
        ("tests", suite.cases.len()),
        ("failures", count(suite, "failure")),
        ("errors", count(suite, "error")),
        ("skipped", count(suite, "skipped")),
    ] {
        assert_eq!(attrs[attr], n.to_string(), "{attr}");
    }
}

#[test]
fn junit_of_a_real_run_has_a_case_per_point_with_its_figures() {
    let run = real_run();
    let (root, suites) = parse_junit(&read(run.path(), "junit.xml"));
    assert_eq!(suites.len(), 1, "one test suite per run");
    let suite = &suites[0];
    check_counts(&root, suite);
    check_counts(&suite.attributes, suite);
    let summary: Value = serde_json::from_str(&read(run.path(), "summary.json")).unwrap();
    let points = summary["points"].as_array().unwrap();
    assert_eq!(
        suite.cases.len(),
        points.len(),
        "one case per point and candidate"
    );
    for (case, point) in suite.cases.iter().zip(points) {
        let (workload, metric, cpus, param) = (
            point["workload"].as_str().unwrap(),
            point["metric"].as_str().unwrap(),
            point["cpus"].as_u64().unwrap(),
            point["param"].as_u64().unwrap(),
        );
        assert!(
            case.name
                .starts_with(&format!("quick/{workload}/{metric}@cpus={cpus},"))
                && case.name.contains(&format!("={param} [markers-on]")),
            "{case:?}"
        );
        assert_eq!(case.classname, format!("quick.{workload}"));
        let analysis = &point["analysis"];
        let verdict = analysis["verdict"].as_str().unwrap();
        // No boot failed, no point regressed: inconclusive points are skipped.
        let expected = match verdict {
            "no_significant_difference" | "insufficient_data" => "skipped",
            "regression" => panic!("the recorded run has no regression"),
            _ => "",
        };
        assert_eq!(case.outcome, expected, "{case:?}");
        // The figures and the interval, as the report prints them.
        let ci = &analysis["relative_difference_ci"];
        let pct = |f: f64| {
            let s = format!("{:+.2}", f * 100.0);
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        };
        let interval = format!(
            "95% CI {}% .. {}%",
            pct(ci["lower"].as_f64().unwrap()),
            pct(ci["upper"].as_f64().unwrap())
        );
        assert!(case.message.contains(&interval), "{interval} in {case:?}");
        assert!(case.system_out.contains(&interval), "{case:?}");
        assert!(
            case.system_out.contains("without markers-off: mean "),
            "{case:?}"
        );
        assert!(
            case.system_out.contains("with markers-on: mean "),
            "{case:?}"
        );
    }
}

/// A run at 2 CPUs, 4 boots a variant, for the gate: made up here as
/// tests/report_variants.rs makes its runs.
fn synthetic_meta(variants: &[&str]) -> RunMeta {
    let boots = (0..4u32)
        .flat_map(|boot| variants.iter().map(move |v| (boot, *v)))
        .enumerate()
        .map(|(unit, (boot, variant))| BootRecord {
            unit,
            variant: variant.into(),
            cpus: 2,
            boot,
            wall_s: 30.0,
            samples: 8,
            console_log: format!("logs/unit-{unit:03}.log"),
            ..Default::default()
        })
        .collect();
    RunMeta {
        suite: "gated".into(),
        started_at: "2026-11-30T00:00:00Z".into(),
        wall_s: 360.0,
        complete: true,
        host: HostInfo {
            hostname: "host".into(),
            ..Default::default()
        },
        accel: markbench::stages::vm::Accel::Tcg,
        // The sentence of a run from before it was derived.
        timing: markbench::record::TimingDecision {
            recorded_sentence: Some("wall".into()),
            ..Default::default()
        },
        seed: 3,
        margin: 0.02,
        boots_per_variant: 4,
        iterations: 3,
        warmup: 1,
        cpus: vec![2],
        kernels: variants
            .iter()
            .map(|v| KernelMeta {
                variant: v.to_string(),
                kernel: v.to_string(),
                build_key: format!("{v}-key").into(),
                config_sha256: format!("{v}-config").into(),
                ..Default::default()
            })
            .collect(),
        boots,
        ..Default::default()
    }
}

/// `variant`'s values at each of the params, times `factor[param]`.
fn synthetic_samples(variants: &[&str], factor: impl Fn(&str, u64) -> f64) -> Vec<Sample> {
    let mut out = Vec::new();
    for variant in variants {
        for boot in 0..4u32 {
            for param in [1u64, 2, 4, 8] {
                for iteration in 0..4u32 {
                    let wobble = 1.0 + 0.004 * ((boot * 7 + iteration * 3) % 5) as f64 - 0.008;
                    out.push(Sample {
                        suite: "gated".into(),
                        workload: "hackbench".into(),
                        metric: "time".into(),
                        unit: "s".into(),
                        higher_is_better: false,
                        param,
                        cpus: 2,
                        variant: variant.to_string(),
                        boot,
                        iteration,
                        warmup: iteration == 0,
                        value: param as f64 * 0.5 * factor(variant, param) * wobble,
                        started_at: String::new(),
                    });
                }
            }
        }
    }
    out
}

fn run_dir(root: &Path, name: &str, meta: &RunMeta, samples: &[Sample]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    meta.write(&dir).unwrap();
    let mut writer = SampleWriter::open(&dir).unwrap();
    for s in samples {
        writer.append(s).unwrap();
    }
    dir
}

#[test]
fn a_nightly_junit_fails_exactly_the_points_its_gate_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let variants = ["off", "on"];
    let m = synthetic_meta(&variants);
    let baseline = run_dir(
        tmp.path(),
        "base",
        &m,
        &synthetic_samples(&variants, |_, _| 1.0),
    );
    // Tonight "on" is 30% slower at 1 group, 10% slower at 2, 0.5% slower
    // at 4 (inside the margin) and unchanged at 8.
    let tonight = synthetic_samples(&variants, |v, param| match (v, param) {
        ("on", 1) => 1.3,
        ("on", 2) => 1.1,
        ("on", 4) => 1.005,
        _ => 1.0,
    });
    let candidate = run_dir(tmp.path(), "tonight", &m, &tonight);
    let gate = markbench::commands::nightly::gate::gate(&baseline, &candidate, None, String::new())
        .unwrap();
    // The summary a CI job page shows, every line of it.
    insta::assert_snapshot!(
        "gate_summary_of_two_regressions",
        gate.summary
            .replace(&tmp.path().display().to_string(), "TMP")
    );
    assert_eq!(
        gate.status,
        markbench::base::exit::ExitStatus::Regression,
        "{}",
        gate.summary
    );
    let gated: BTreeSet<String> = gate
        .regressed
        .iter()
        .map(|p| {
            format!(
                "{}/{}@cpus={},groups={}",
                p.workload, p.metric, p.cpus, p.param
            )
        })
        .collect();
    assert_eq!(gated.len(), 2, "{}", gate.summary);

    let (_, suites) = parse_junit(&read(&candidate.join("diff-baseline"), "junit.xml"));
    assert_eq!(suites.len(), 1);
    let cases = &suites[0].cases;
    assert_eq!(cases.len(), 4, "one case per point");
    let failed: BTreeSet<String> = cases
        .iter()
        .filter(|c| c.outcome == "failure")
        .map(|c| {
            // The diff's suite is named after both runs: the point follows it.
            let point = c.name.split(" [").next().unwrap();
            point.split_once('/').unwrap().1.to_string()
        })
        .collect();
    assert_eq!(failed, gated);
    for case in cases.iter().filter(|c| c.outcome == "failure") {
        assert!(case.message.contains("beyond the 2% margin"), "{case:?}");
        assert!(case.system_out.contains("verdict: regression"), "{case:?}");
    }
    // The unchanged point passes or is inconclusive; it never fails.
    let unchanged = cases.iter().find(|c| c.name.contains("groups=8")).unwrap();
    assert_ne!(unchanged.outcome, "failure", "{unchanged:?}");
}

#[test]
fn failed_boots_are_errors_and_their_points_are_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let variants = ["off", "on"];
    let mut m = synthetic_meta(&variants);
    // The last boot of "on" failed: its values are missing.
    let last = m.boots.len() - 1;
    m.boots[last].end = markbench::record::BootEnd::KernelPanic {
        detail: "Attempted to kill init!".into(),
    };
    let samples: Vec<Sample> = synthetic_samples(&variants, |_, _| 1.0)
        .into_iter()
        .filter(|s| !(s.variant == "on" && s.boot == 3))
        .collect();
    let dir = run_dir(tmp.path(), "run", &m, &samples);
    let xml = report::render_dir(&dir, Format::Junit).unwrap();
    let (root, suites) = parse_junit(&xml);
    let suite = &suites[0];
    check_counts(&root, suite);
    assert_eq!(count(suite, "error"), 1, "{xml}");
    let error = suite.cases.iter().find(|c| c.outcome == "error").unwrap();
    assert!(error.message.contains("kernel panic"), "{error:?}");
    assert!(error.name.contains("boot 3 of on on 2 CPU(s)"), "{error:?}");
    let points: Vec<&TestCase> = suite
        .cases
        .iter()
        .filter(|c| c.outcome != "error")
        .collect();
    assert_eq!(points.len(), 4);
    for p in points {
        assert_eq!(p.outcome, "skipped", "{p:?}");
        assert!(p.message.contains("1 boot(s) on 2 CPU(s) failed"), "{p:?}");
    }
}

// ------------------------------------------------------------------ bmf.json

fn bmf_validator() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("schemas/bmf.json")).unwrap())
            .unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn bmf_json_of_a_real_run_is_valid_against_benchers_schema() {
    let run = real_run();
    let doc: Value = serde_json::from_str(&read(run.path(), "bmf.json")).unwrap();
    let validator = bmf_validator();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // The schema is not a formality: a value that is not a number fails it.
    let mut broken = doc.clone();
    let (name, _) = doc.as_object().unwrap().iter().next().unwrap();
    broken[name]["time (s)"]["value"] = Value::String("2.1".into());
    assert!(!validator.is_valid(&broken));

    // Every point of both variants, named stably, with the report's means.
    let summary: Value = serde_json::from_str(&read(run.path(), "summary.json")).unwrap();
    let benchmarks = doc.as_object().unwrap();
    let points = summary["points"].as_array().unwrap();
    assert_eq!(benchmarks.len(), 2 * points.len());
    for point in points {
        let a = &point["analysis"];
        let name = |variant: &str| {
            format!(
                "quick/{}/{}@cpus={},{}={} [{variant}]",
                point["workload"].as_str().unwrap(),
                point["metric"].as_str().unwrap(),
                point["cpus"],
                if point["workload"] == "hackbench" {
                    "groups"
                } else {
                    "packets"
                },
                point["param"]
            )
        };
        let measure = format!(
            "{} ({})",
            point["metric"].as_str().unwrap(),
            point["unit"].as_str().unwrap()
        );
        for (variant, side) in [("markers-off", &a["a"]), ("markers-on", &a["b"])] {
            let m = &benchmarks[&name(variant)][&measure];
            let close = |x: &Value, y: &Value| {
                (x.as_f64().unwrap() - y.as_f64().unwrap()).abs()
                    <= 1e-9 * y.as_f64().unwrap().abs()
            };
            assert!(close(&m["value"], &side["mean"]), "{m} vs {side}");
            let ci = &side["mean_ci"]["interval"];
            assert!(close(&m["lower_value"], &ci["lower"]), "{m}");
            assert!(close(&m["upper_value"], &ci["upper"]), "{m}");
        }
    }
}

// ------------------------------------------------- github-action-benchmark

/// The file as the action's custom tools read it: a JSON array of
/// `BenchmarkResult`s, each with a string `name` and `unit` and a numeric
/// `value`, `range` and `extra` strings when present.
fn read_gab(text: &str) -> Vec<(String, String, f64)> {
    let doc: Value = serde_json::from_str(text).unwrap();
    let entries = doc.as_array().expect("an array of entries");
    entries
        .iter()
        .map(|e| {
            let e = e.as_object().expect("an object");
            for key in e.keys() {
                assert!(
                    ["name", "unit", "value", "range", "extra"].contains(&key.as_str()),
                    "{key}"
                );
            }
            for key in ["range", "extra"] {
                if let Some(v) = e.get(key) {
                    assert!(v.is_string(), "{key}: {v}");
                }
            }
            let value = e["value"].as_f64().expect("a numeric value");
            assert!(value.is_finite());
            (
                e["name"].as_str().expect("a name").to_string(),
                e["unit"].as_str().expect("a unit").to_string(),
                value,
            )
        })
        .collect()
}

#[test]
fn github_action_benchmark_files_split_by_direction_and_name_every_point() {
    let run = real_run();
    let smaller = read_gab(&read(run.path(), "github-action-benchmark.json"));
    let bigger = read_gab(&read(run.path(), "github-action-benchmark-bigger.json"));
    // hackbench times on 1 and 2 CPUs, both variants; the ping flood's rate.
    assert_eq!(smaller.len(), 4);
    assert!(smaller
        .iter()
        .all(|(n, u, _)| n.contains("/hackbench/time@") && u == "s"));
    assert_eq!(bigger.len(), 2);
    assert!(bigger
        .iter()
        .all(|(n, u, _)| n.contains("/ping-flood/rate@") && u == "packets/s"));
    let bmf: Value = serde_json::from_str(&read(run.path(), "bmf.json")).unwrap();
    let names: BTreeSet<&str> = bmf
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let gab: BTreeSet<&str> = smaller
        .iter()
        .chain(&bigger)
        .map(|(n, _, _)| n.as_str())
        .collect();
    assert_eq!(gab, names, "the same names in both formats");
    for (name, _, value) in smaller.iter().chain(&bigger) {
        let measure = bmf[name].as_object().unwrap().values().next().unwrap();
        assert_eq!(measure["value"].as_f64().unwrap(), *value, "{name}");
    }
}

#[test]
fn every_format_prints_what_report_writes() {
    let run = real_run();
    for (format, file) in [
        ("junit", "junit.xml"),
        ("bmf", "bmf.json"),
        ("gab", "github-action-benchmark.json"),
        ("gab-bigger", "github-action-benchmark-bigger.json"),
        ("json", "summary.json"),
        ("markdown", "report.md"),
    ] {
        let out = markbench(&[
            "report".as_ref(),
            run.path().as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ]);
        assert!(out.status.success(), "{format}: {out:?}");
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            read(run.path(), file),
            "{format}"
        );
    }
    let out = markbench(&[
        "report".as_ref(),
        run.path().as_os_str(),
        "--format".as_ref(),
        "yaml".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn a_plots_directory_the_disk_fails_to_stat_is_an_error_not_no_plots() {
    let tmp = tempfile::tempdir().unwrap();
    let variants = ["off", "on"];
    let m = synthetic_meta(&variants);
    let samples = synthetic_samples(&variants, |_, _| 1.0);
    let dir = run_dir(tmp.path(), "run", &m, &samples);
    // A link to itself: stat fails with ELOOP, as root or not.
    std::os::unix::fs::symlink("plots", dir.join("plots")).unwrap();
    let e = match report::render_dir(&dir, Format::Markdown) {
        Ok(_) => panic!("rendered past a plots directory it could not look at"),
        Err(e) => format!("{e:#}"),
    };
    assert!(e.contains("plots"), "{e}");
    assert!(e.contains("symbolic links"), "{e}");
    std::fs::remove_file(dir.join("plots")).unwrap();
    assert!(report::render_dir(&dir, Format::Markdown).is_ok());
}
