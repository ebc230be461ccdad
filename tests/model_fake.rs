//! Runs under the cycle model without QEMU: the fake guest writes the
//! model's counts as the plugin would, so the points they become, the
//! report's method and what stays unchanged are checked exactly.

mod common;

use common::execute;
use common::{images, machine, SUITE};
use markbench::record::read_samples;
use markbench::stages::suite::{FragmentLookup, Suite};
use markbench::stages::vm::fake::FakeRunner;
use markbench::stages::vm::Machine;
use std::path::{Path, PathBuf};

fn setup(dir: &Path, model: &str) -> (Suite, markbench::stages::run_images::Images, PathBuf) {
    // One CPU count: half the boots and plots of the shared suite.
    let suite = SUITE.replace("cpus = [1, 2]", "cpus = [1]");
    load_into(dir, "fake.toml", &format!("{model}\n{suite}"))
}

/// The suite `text`, written as `name` in `dir`, the images there and a run
/// directory.
fn load_into(
    dir: &Path,
    name: &str,
    text: &str,
) -> (Suite, markbench::stages::run_images::Images, PathBuf) {
    let suite_path = dir.join(name);
    std::fs::write(&suite_path, text).unwrap();
    let suite = Suite::load(
        &suite_path,
        &FragmentLookup::BesideSuite {
            cwd: env!("CARGO_MANIFEST_DIR").into(),
        },
    )
    .unwrap();
    let images = images(dir);
    let run = dir.join("run");
    std::fs::create_dir_all(run.join("logs")).unwrap();
    (suite, images, run)
}

fn icount() -> Machine {
    let mut m = machine();
    m.timing.icount_shift = Some(4);
    m
}

#[test]
fn every_timed_run_gets_the_models_counts_as_points_beside_its_time() {
    let tmp = tempfile::tempdir().unwrap();
    let (suite, images, dir) = setup(tmp.path(), "model = \"cycles\"");
    let mut runner = FakeRunner {
        slow_factor: 1.2,
        ..Default::default()
    };
    let meta = execute(&suite, &images, &icount(), &mut runner, &dir, None).unwrap();
    assert!(meta.complete, "{:?}", meta.boots);
    assert!(meta.boots.iter().all(|b| b.ok()), "{:?}", meta.boots);
    // Every timed boot loads the plugin with the model on.
    assert_eq!(runner.requests().len(), 6);
    for r in &runner.requests() {
        let plugin = r.plugin.as_ref().expect("every boot loads the plugin");
        assert_eq!(plugin.args[0], "model=cycles");
        assert!(plugin.args.contains(&"memory-cycles=200".to_string()));
    }
    let samples = read_samples(&dir).unwrap();
    let models = markbench::base::cycle_model::METRICS.len();
    // 6 boots × 3 points × 3 runs, each its own metric and the model's.
    assert_eq!(samples.len(), 6 * 3 * 3 * (1 + models));
    let time = samples
        .iter()
        .find(|s| s.workload == "hackbench" && s.metric == "time" && !s.warmup)
        .unwrap();
    let cycles = samples
        .iter()
        .find(|s| {
            s.key().boot == time.key().boot
                && s.iteration == time.iteration
                && s.param == time.param
                && s.metric == "estimated-cycles"
        })
        .unwrap();
    // The fake model: twice the instructions that icount's 16 ns give.
    assert_eq!(cycles.value, 2.0 * (time.value * 1e9 / 16.0).floor());
    assert_eq!(cycles.unit, "cycles");
    assert!(!cycles.higher_is_better);
    assert!(!dir.join("logs/unit-000-model.tsv").exists());

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("Cycle model: every boot ran under"),
        "{report}"
    );
    // The default model prices each block at its throughput and string
    // instructions by the bytes they move.
    assert!(
        report.contains(
            "estimated-cycles = base cycles − string iterations + 35·string instructions + \
             ceil(string bytes / 32) + 14·(L1 misses"
        ),
        "{report}"
    );
    // The slow candidate is a regression in estimated cycles as in time.
    let at = report
        .find("### hackbench: estimated-cycles [cycles], lower is better, 1 CPU")
        .expect(&report);
    let table: String = report[at..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .collect();
    assert!(table.contains("regression"), "{table}");
    let text = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    // The text report wraps its lines: compare with the words joined.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("string instructions + "), "{text}");
    assert!(words.contains("+ 14*(L1 misses"), "{text}");
    // The report comes from the run directory alone.
    markbench::stages::report::write(&dir).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("report.md")).unwrap(),
        report
    );
}

#[test]
fn without_the_model_nothing_of_it_appears_and_the_times_are_the_same() {
    let with = tempfile::tempdir().unwrap();
    let (suite, images, dir) = setup(with.path(), "model = \"cycles\"");
    execute(
        &suite,
        &images,
        &icount(),
        &mut FakeRunner::default(),
        &dir,
        None,
    )
    .unwrap();
    let without = tempfile::tempdir().unwrap();
    let (plain, images, plain_dir) = setup(without.path(), "");
    let mut runner = FakeRunner::default();
    execute(&plain, &images, &icount(), &mut runner, &plain_dir, None).unwrap();
    assert!(runner.requests().iter().all(|r| r.plugin.is_none()));
    assert!(!plain_dir
        .join(markbench::base::cycle_model::SETTINGS_FILE)
        .exists());
    let report = std::fs::read_to_string(plain_dir.join("report.md")).unwrap();
    assert!(!report.contains("Cycle model"));
    assert!(!report.contains("estimated-cycles"));
    // Boots side by side write their rows as they come: compare them in
    // the order of the boots.
    let values = |dir: &Path| -> Vec<(String, u32, String, u32, f64)> {
        let mut rows: Vec<_> = read_samples(dir)
            .unwrap()
            .into_iter()
            .filter(|s| !markbench::base::cycle_model::is_model_metric(&s.metric))
            .map(|s| (s.variant, s.boot, s.metric, s.iteration, s.value))
            .collect();
        rows.sort_by(|a, b| (&a.0, a.1, &a.2, a.3).cmp(&(&b.0, b.1, &b.2, b.3)));
        rows
    };
    assert_eq!(values(&dir), values(&plain_dir));
}

#[test]
fn the_model_needs_icount() {
    let tmp = tempfile::tempdir().unwrap();
    let (suite, images, dir) = setup(tmp.path(), "model = \"cycles\"");
    let mut runner = FakeRunner::default();
    let e = execute(&suite, &images, &machine(), &mut runner, &dir, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the cycle model needs instruction-count timing"),
        "{e}"
    );
    assert_eq!(runner.boots(), 0);
}

#[test]
fn a_profile_under_the_model_says_where_its_counts_differ_function_by_function() {
    let tmp = tempfile::tempdir().unwrap();
    let (suite, images, dir) = setup(tmp.path(), "model = \"cycles\"\nprofile = true");
    // Both stand-in kernels live in `tmp`: one System.map for both.
    std::fs::create_dir_all(tmp.path().join("build")).unwrap();
    let text = markbench::stages::vm::fake::FAKE_TEXT;
    std::fs::write(
        tmp.path().join("build/System.map"),
        format!(
            "{text:016x} T _stext\n{text:016x} T schedule\n{:016x} T memcpy\n{:016x} T _etext\n",
            text + 0x40,
            text + 0x100
        ),
    )
    .unwrap();
    let mut runner = FakeRunner {
        slow_factor: 1.2,
        ..Default::default()
    };
    let meta = execute(&suite, &images, &icount(), &mut runner, &dir, None).unwrap();
    assert!(meta.complete, "{:?}", meta.boots);
    // The profiled boots run the model beside the per-address profile.
    let profiled: Vec<_> = runner.requests()[6..].to_vec();
    assert_eq!(profiled.len(), 2);
    for r in &profiled {
        let args = &r.plugin.as_ref().unwrap().args;
        assert_eq!(args[0], "model=cycles");
        assert!(!args.iter().any(|a| a == "profile=off"), "{args:?}");
    }
    let manifest = markbench::stages::profile::Manifest::read(&dir)
        .unwrap()
        .unwrap();
    for boot in &manifest.boots {
        let file = boot
            .model_file
            .as_ref()
            .expect("the model's counts are kept");
        assert!(dir.join("profiles").join(file).is_file());
    }

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let at = report.find("## Where the difference goes").expect(&report);
    let section = &report[at..report.find("## Boots").unwrap()];
    let point = &section[section.find("### hackbench, groups 2, 1 CPU").unwrap()..];
    let point = &point[..point[4..].find("### ").map_or(point.len(), |e| e + 4)];
    assert!(
        point.contains("The cycle model's counts, per run"),
        "{point}"
    );
    let row = |metric: &str| -> String {
        point
            .lines()
            .find(|l| l.starts_with(&format!("| {metric} |")))
            .unwrap_or_else(|| panic!("no {metric} row in {point}"))
            .to_string()
    };
    // The fake kernel: an LLC miss per 5000 kernel instructions, all in
    // the first function; the slow candidate runs 20% more of them.
    let cells = |metric: &str| -> Vec<String> {
        row(metric)
            .split('|')
            .map(|c| c.trim().replace('\u{2009}', ""))
            .collect()
    };
    let llc = cells("llc-misses");
    let (base, cand): (f64, f64) = (llc[2].parse().unwrap(), llc[3].parse().unwrap());
    assert!(cand > base * 1.15 && cand < base * 1.25, "{llc:?}");
    assert!(llc[6].starts_with("`schedule` "), "{llc:?}");
    assert!(!llc[6].contains("memcpy"), "{llc:?}");
    // User space's counts are the same on both sides.
    assert!(!row("estimated-cycles").contains("[user space]"), "{point}");
    assert_eq!(cells("coherence-misses")[6], "none differs");
    assert!(!point.contains("| instructions | 0"), "{point}");
    assert!(section.contains("`profiles/*-model.tsv`"), "{section}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let first = &summary["profile"]["points"][0];
    assert_eq!(
        first["model"]["llc-misses"]["functions"][0]["function"],
        "schedule"
    );
    // From the run directory alone, the same report.
    std::fs::remove_file(tmp.path().join("build/System.map")).unwrap();
    markbench::stages::report::write(&dir).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("report.md")).unwrap(),
        report
    );

    // A profile without the model shows nothing of it.
    let plain = tempfile::tempdir().unwrap();
    let (suite, images, dir) = setup(plain.path(), "profile = true");
    std::fs::create_dir_all(plain.path().join("build")).unwrap();
    std::fs::write(
        plain.path().join("build/System.map"),
        format!("{text:016x} T schedule\n{:016x} T _etext\n", text + 0x100),
    )
    .unwrap();
    let mut runner = FakeRunner::default();
    execute(&suite, &images, &icount(), &mut runner, &dir, None).unwrap();
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## Where the difference goes"));
    assert!(!report.contains("The cycle model's counts"), "{report}");
    assert!(!report.contains("-model.tsv"), "{report}");
    let manifest = std::fs::read_to_string(dir.join("profiles/profiles.toml")).unwrap();
    assert!(!manifest.contains("model_file"), "{manifest}");
}

/// The micro workload on the fake guest, which prints the kernel code's
/// lines and, under the model, counts each loop as the part the kernel code
/// marks (3, 4 and 20 instructions per empty loop without, with a dormant
/// and with an enabled marker, 520, 521 and 537 per memcpy loop, one L1d
/// miss per copy).
const MICRO_SUITE: &str = r#"
name = "micro-fake"
boots = 1
iterations = 2
warmup = 1
cpus = [1]
seed = 6
[[variant]]
name = "optimized"
kernel = "markers-off"
[[variant]]
name = "generic"
kernel = "markers-on"
[[workload]]
kind = "micro"
params = [1000]
memcpy_iterations = 10
"#;

fn micro_run(root: &Path, model: &str) -> PathBuf {
    let (suite, images, dir) = load_into(root, "micro.toml", &format!("{model}\n{MICRO_SUITE}"));
    let meta = execute(
        &suite,
        &images,
        &icount(),
        &mut FakeRunner::default(),
        &dir,
        None,
    )
    .unwrap();
    assert!(meta.boots.iter().all(|b| b.ok()), "{:?}", meta.boots);
    dir
}

#[test]
fn each_micro_loop_gets_the_models_counts_per_iteration_and_the_report_its_cycles() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = micro_run(tmp.path(), "model = \"cycles\"");
    let samples = read_samples(&dir).unwrap();
    let value = |metric: &str| {
        let found: Vec<f64> = samples
            .iter()
            .filter(|s| s.metric == metric && s.variant == "generic" && !s.warmup)
            .map(|s| s.value)
            .collect();
        assert_eq!(found.len(), 2, "{metric}: {found:?}");
        found[0]
    };
    assert_eq!(value("empty/dormant/instructions"), 4.0);
    assert_eq!(value("memcpy/none/l1d-misses"), 1.0);
    assert_eq!(value("memcpy/enabled/estimated-cycles"), 537.0 + 14.0);
    assert_eq!(value("empty/enabled/branch-mispredicts"), 0.0);
    // Beside the loop's own TSC figure and the whole run's model points.
    assert_eq!(value("empty/dormant"), 16.0 * 4.0);
    let per_run = samples
        .iter()
        .filter(|s| s.iteration == 1 && s.variant == "generic")
        .count();
    let models = markbench::base::cycle_model::METRICS.len();
    assert_eq!(per_run, 10 + models + 6 * models);

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains(
            "| empty loop | 3.00 | 3.00 | 4.00 | 4.00 | +1.000 | +1.000 | 4.00 | 4.00 | +1.000 | +1.000 |"
        ),
        "{report}"
    );
    assert!(
        report.contains("| memcpy loop (4096 bytes) | dormant | optimized | 521.000 | 0 | 1.000 |"),
        "{report}"
    );
}

#[test]
fn without_the_model_the_micro_run_has_its_own_samples_alone() {
    let with = tempfile::tempdir().unwrap();
    let model_dir = micro_run(with.path(), "model = \"cycles\"");
    let without = tempfile::tempdir().unwrap();
    let plain_dir = micro_run(without.path(), "");
    let report = std::fs::read_to_string(plain_dir.join("report.md")).unwrap();
    assert!(!report.contains("estimated cycles"), "{report}");
    assert!(
        report.contains("| empty loop | 3.00 | 4.00 | +1.000 | 4.00 | +1.000 |"),
        "{report}"
    );
    // In the order of the boots, whichever of them ran side by side.
    let own = |dir: &Path| -> Vec<(String, String, u32, f64)> {
        let mut own: Vec<_> = read_samples(dir)
            .unwrap()
            .into_iter()
            .filter(|s| s.metric.matches('/').count() == 1)
            .map(|s| (s.variant, s.metric, s.iteration, s.value))
            .collect();
        own.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
        own
    };
    let plain = own(&plain_dir);
    // 2 kernels × (1 warm-up + 2 runs) × the 10 metrics of a run.
    assert_eq!(plain.len(), 2 * 3 * 10);
    assert_eq!(own(&model_dir), plain);
    assert_eq!(read_samples(&plain_dir).unwrap().len(), plain.len());
}

/// The report of the shared suite under the model, the candidate running
/// `slow_factor` times the baseline's instructions and one access to
/// memory per 500 kernel instructions beside them.
fn report_with_memory_accesses(root: &Path, slow_factor: f64) -> String {
    let (suite, images, dir) = setup(root, "model = \"cycles\"");
    let mut runner = FakeRunner {
        slow_factor,
        slow_memory_accesses: Some(0.002),
        ..Default::default()
    };
    let meta = execute(&suite, &images, &icount(), &mut runner, &dir, None).unwrap();
    assert!(meta.boots.iter().all(|b| b.ok()), "{:?}", meta.boots);
    std::fs::read_to_string(dir.join("report.md")).unwrap()
}

/// The table of the hackbench estimate at 1 CPU and the lines after it.
fn estimate_table(report: &str) -> &str {
    let at = report
        .find("### hackbench: estimated-cycles [cycles], lower is better, 1 CPU")
        .expect(report);
    let table = &report[at..];
    &table[..table[4..].find("### ").map_or(table.len(), |e| e + 4)]
}

#[test]
fn a_verdict_on_the_estimate_that_the_second_weights_turn_is_marked_weight_sensitive() {
    let tmp = tempfile::tempdir().unwrap();
    // 10% fewer instructions, but accesses to memory: dearer at the
    // model's 200 cycles an access, cheaper at the second weights' 35.
    let report = report_with_memory_accesses(tmp.path(), 0.9);
    let table = estimate_table(&report);
    let row = table.lines().find(|l| l.starts_with("| 2 |")).expect(table);
    assert!(row.contains("**regression** (weight-sensitive)"), "{row}");
    assert!(
        table.contains(
            "*weight-sensitive* (groups 2): *regression* with the model's weights, \
             *improvement* with the second (an access served by the L2 or the LLC 5, by memory \
             35, by another core 35, a branch mispredict 10, a page walk 20 cycles)."
        ),
        "{table}"
    );
    // The counts themselves are no estimate: nothing of theirs is marked.
    let at = report.find("### hackbench: time").expect(&report);
    let time = &report[at..];
    let time = &time[..time[4..].find("### ").unwrap() + 4];
    assert!(!time.contains("weight-sensitive"), "{time}");
    assert!(time.contains("**improvement**"), "{time}");
    assert!(
        report.contains(
            "Second weights: every estimate is recomputed from the same run's counts with other \
             costs in cycles (an access served by the L2 or the LLC 5"
        ),
        "{report}"
    );
    assert!(
        report.contains("3 of the 3 verdicts on an estimate change, each marked"),
        "{report}"
    );
}

#[test]
fn a_verdict_on_the_estimate_that_any_weights_give_is_not_marked() {
    let tmp = tempfile::tempdir().unwrap();
    // More instructions and more accesses to memory: dearer at any price.
    let report = report_with_memory_accesses(tmp.path(), 1.2);
    let table = estimate_table(&report);
    assert!(table.contains("**regression**"), "{table}");
    assert!(!table.contains("weight-sensitive"), "{table}");
    assert!(
        report.contains("none of the 3 verdicts on an estimate changes"),
        "{report}"
    );
    assert_eq!(report.matches("weight-sensitive").count(), 0, "{report}");
}
