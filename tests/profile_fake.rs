//! Profiled runs without QEMU: the fake guest answers the profiled boots as
//! the plugin would, so what the run keeps, what the report shows and that
//! the timed figures stay untouched are checked exactly.

mod common;

use common::execute;
use common::{images, machine, SUITE};
use markbench::record::read_samples;
use markbench::stages::profile::Manifest;
use markbench::stages::run_images::Images;
use markbench::stages::suite::{FragmentLookup, Suite};
use markbench::stages::vm::fake::{FakeRunner, FAKE_TEXT};
use markbench::stages::vm::Machine;
use std::path::{Path, PathBuf};

fn setup(dir: &Path, profile: bool) -> (Suite, Images, PathBuf) {
    let suite_path = dir.join("fake.toml");
    let text = if profile {
        format!("profile = true\n{SUITE}")
    } else {
        SUITE.to_string()
    };
    std::fs::write(&suite_path, text).unwrap();
    let suite = Suite::load(
        &suite_path,
        &FragmentLookup::BesideSuite {
            cwd: env!("CARGO_MANIFEST_DIR").into(),
        },
    )
    .unwrap();
    let images = images(dir);
    // Both stand-in kernels live in `dir`: one System.map for both.
    std::fs::create_dir_all(dir.join("build")).unwrap();
    std::fs::write(
        dir.join("build/System.map"),
        format!(
            "{:016x} T _stext\n{:016x} T schedule\n{:016x} T memcpy\n{:016x} T _etext\n",
            FAKE_TEXT,
            FAKE_TEXT,
            FAKE_TEXT + 0x40,
            FAKE_TEXT + 0x100
        ),
    )
    .unwrap();
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
fn profiled_boots_are_kept_apart_and_explain_the_difference() {
    let tmp = tempfile::tempdir().unwrap();
    let (suite, images, dir) = setup(tmp.path(), true);
    let mut runner = FakeRunner {
        slow_factor: 1.2,
        ..Default::default()
    };
    let meta = execute(&suite, &images, &icount(), &mut runner, &dir, None).unwrap();
    assert!(meta.complete);
    // 12 timed boots, then one profiled boot per variant per CPU count.
    assert_eq!(meta.boots.len(), 12);
    assert_eq!(runner.boots(), 16);
    let requests = runner.requests();
    let profiled: Vec<_> = requests.iter().filter(|r| r.plugin.is_some()).collect();
    assert_eq!(profiled.len(), 4);
    assert!(runner.requests()[..12].iter().all(|r| r.plugin.is_none()));
    for cpus in [1, 2] {
        let seeds: Vec<_> = profiled
            .iter()
            .filter(|r| r.cpus == cpus)
            .map(|r| r.guest_seed)
            .collect();
        assert_eq!(seeds.len(), 2);
        assert_eq!(seeds[0], seeds[1], "both sides run the same guest");
    }
    // The profiled boots' runs are not samples.
    assert_eq!(read_samples(&dir).unwrap().len(), 12 * 3 * 3);

    let manifest = Manifest::read(&dir).unwrap().unwrap();
    assert_eq!(manifest.boots.len(), 4);
    assert!(manifest.boots.iter().all(|b| b.ok()), "{manifest:?}");
    let hb = manifest.boots[0]
        .points
        .iter()
        .find(|p| p.workload == "hackbench" && p.param == 2)
        .unwrap();
    // Warm-ups left out: 2 measured runs.
    assert_eq!(hb.runs, 2);
    assert!(!dir.join("profiles/raw-off-1cpu.tsv").exists());

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let at = report.find("## Where the difference goes").expect(&report);
    assert!(at < report.find("## Boots").unwrap());
    let section = &report[at..report.find("## Boots").unwrap()];
    assert!(
        section.contains("### hackbench, groups 2, 1 CPU"),
        "{section}"
    );
    // The slow side's extra instructions are all in `schedule`.
    assert!(section.contains("| `schedule` |"), "{section}");
    assert!(section.contains("| +100% |"), "{section}");
    // The fake guest's counts are its times at 16 ns an instruction.
    assert!(
        section.contains("Counted against measured: +0% and +0%"),
        "{section}"
    );
    assert!(!section.contains("| `memcpy` |"), "{section}");
    assert!(section.contains("User space: 1\u{2009}000 and 1\u{2009}000 per run, 0"));
    assert!(dir
        .join("plots/profile-hackbench-2-1cpu-bars.png")
        .is_file());
    assert!(dir
        .join("plots/profile-hackbench-2-1cpu-bars.svg")
        .is_file());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let points = summary["profile"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2 * 3);
    assert_eq!(points[0]["functions"][0]["function"], "schedule");

    // The section comes from the run directory alone: without the kernels'
    // System.map the report renders byte for byte the same.
    std::fs::remove_file(tmp.path().join("build/System.map")).unwrap();
    markbench::stages::report::write(&dir).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("report.md")).unwrap(),
        report
    );
}

#[test]
fn an_aa_profile_differs_in_no_function() {
    let tmp = tempfile::tempdir().unwrap();
    let (suite, images, dir) = setup(tmp.path(), true);
    let suite = common::resolved_with(
        &suite,
        markbench::jobs::compare::Overrides {
            aa: true,
            ..Default::default()
        },
    );
    let mut runner = FakeRunner::default();
    execute(&suite, &images, &icount(), &mut runner, &dir, None).unwrap();
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert_eq!(
        report.matches("No function differs").count(),
        2 * 3,
        "{report}"
    );
}

#[test]
fn a_run_without_profiles_has_no_such_section_and_wall_time_cannot_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let (suite, images, dir) = setup(tmp.path(), false);
    let mut runner = FakeRunner::default();
    execute(&suite, &images, &icount(), &mut runner, &dir, None).unwrap();
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(!report.contains("Where the difference goes"));
    assert!(!dir.join("profiles").exists());
    assert!(runner.requests().iter().all(|r| r.plugin.is_none()));

    let tmp = tempfile::tempdir().unwrap();
    let (suite, images, dir) = setup(tmp.path(), true);
    let e = execute(&suite, &images, &machine(), &mut runner, &dir, None).unwrap_err();
    assert!(
        matches!(e, markbench::base::error::Error::Input(_)),
        "{e:#}"
    );
    assert!(format!("{e:#}").contains("profiles need instruction-count timing"));
}

#[test]
fn the_dry_run_lists_the_profiled_boots_and_builds_and_boots_nothing() {
    let reports = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("markbench")
        .unwrap()
        .args([
            "compare",
            "--dry-run",
            "--profile",
            "--suite",
            "suites/quick.toml",
        ])
        .arg("--reports")
        .arg(reports.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("4 profiled boots after the timed ones"),
        "{text}"
    );
    assert!(
        text.contains("  markers-on on 2 CPUs: hackbench 2 (12 measured + 1 warm-up)"),
        "{text}"
    );
    assert!(
        text.contains("estimated time of the profiled boots: about ×1.2 a timed boot each"),
        "{text}"
    );
    assert_eq!(std::fs::read_dir(reports.path()).unwrap().count(), 0);
}

#[test]
fn each_candidate_of_several_has_its_own_profile_against_the_baseline() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, mut images, dir) = setup(tmp.path(), true);
    let suite_path = tmp.path().join("three.toml");
    let third = "[[variant]]\nname = \"other\"\nkernel = \"markers-off\"\n[[workload]]";
    std::fs::write(
        &suite_path,
        format!(
            "profile = true\n{}",
            common::SUITE.replacen("[[workload]]", third, 1)
        ),
    )
    .unwrap();
    let suite = Suite::load(
        &suite_path,
        &FragmentLookup::BesideSuite {
            cwd: env!("CARGO_MANIFEST_DIR").into(),
        },
    )
    .unwrap();
    assert_eq!(suite.variants.len(), 3);
    images.kernels.push(images.kernels[0].clone());
    images.fragments.push(Vec::new());
    let mut runner = FakeRunner {
        slow_factor: 1.2,
        ..Default::default()
    };
    execute(&suite, &images, &icount(), &mut runner, &dir, None).unwrap();
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let on = report
        .find("## Where the difference goes: on against off")
        .expect(&report);
    let other = report
        .find("## Where the difference goes: other against off")
        .expect(&report);
    assert!(on < other && other < report.find("## Boots").unwrap());
    // The slow candidate's extra instructions are in `schedule`; the other
    // runs the baseline's guest.
    assert!(report[on..other].contains("| `schedule` |"), "{report}");
    assert_eq!(
        report[other..].matches("No function differs").count(),
        2 * 3,
        "{report}"
    );
    for candidate in ["on", "other"] {
        assert!(dir
            .join(format!(
                "plots/profile-hackbench-2-1cpu-{candidate}-bars.svg"
            ))
            .is_file());
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let views = summary["profile"].as_array().unwrap();
    assert_eq!(views.len(), 2);
    assert_eq!(views[1]["points"][0]["with"], "other");
}
