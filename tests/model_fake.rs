//! Runs under the cycle model without QEMU: the fake guest writes the
//! model's counts as the plugin would, so the points they become, the
//! report's method and what stays unchanged are checked exactly.

mod common;

use common::execute;
use common::{images, machine, SUITE};
use markbench::samples::read_samples;
use markbench::suite::{FragmentLookup, Suite};
use markbench::vm::fake::FakeRunner;
use markbench::vm::Machine;
use std::path::{Path, PathBuf};

fn setup(dir: &Path, model: &str) -> (Suite, markbench::run::Images, PathBuf) {
    let suite_path = dir.join("fake.toml");
    // One CPU count: half the boots and plots of the shared suite.
    let suite = SUITE.replace("cpus = [1, 2]", "cpus = [1]");
    std::fs::write(&suite_path, format!("{model}\n{suite}")).unwrap();
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
    assert_eq!(runner.requests.len(), 6);
    for r in &runner.requests {
        let plugin = r.plugin.as_ref().expect("every boot loads the plugin");
        assert_eq!(plugin.args[0], "model=cycles");
        assert!(plugin.args.contains(&"memory-cycles=200".to_string()));
    }
    let samples = read_samples(&dir).unwrap();
    let models = markbench::cycle_model::METRICS.len();
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
    assert!(
        report.contains("estimated-cycles = instructions + 14·"),
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
    assert!(
        words.contains("estimated-cycles = instructions + 14*"),
        "{text}"
    );
    // The report comes from the run directory alone.
    markbench::report::write(&dir).unwrap();
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
    assert!(runner.requests.iter().all(|r| r.plugin.is_none()));
    assert!(!plain_dir
        .join(markbench::cycle_model::SETTINGS_FILE)
        .exists());
    let report = std::fs::read_to_string(plain_dir.join("report.md")).unwrap();
    assert!(!report.contains("Cycle model"));
    assert!(!report.contains("estimated-cycles"));
    let values = |dir: &Path| -> Vec<(String, u32, f64)> {
        read_samples(dir)
            .unwrap()
            .into_iter()
            .filter(|s| !markbench::cycle_model::is_model_metric(&s.metric))
            .map(|s| (s.metric, s.iteration, s.value))
            .collect()
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
    assert_eq!(runner.boots, 0);
}
