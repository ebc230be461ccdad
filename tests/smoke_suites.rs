//! The smoke script's plan: every shipped suite accepts its smallest-scale
//! options (a dry run of each, no boot), and a suite that is refused fails
//! the script and is named in its summary. The runs themselves take hours
//! and kernels `cargo test` does not build: `scripts/smoke-suites.sh`.

use std::path::Path;
use std::process::Command;

fn smoke(args: &[&str], reports: &Path) -> (bool, String) {
    let out = Command::new("scripts/smoke-suites.sh")
        .args(args)
        .env("MARKBENCH", assert_cmd::cargo::cargo_bin("markbench"))
        .env("SMOKE_REPORTS", reports)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn every_shipped_suite_plans_at_its_smallest_scale() {
    let reports = tempfile::tempdir().unwrap();
    let (ok, text) = smoke(&["--dry-run"], reports.path());
    assert!(ok, "{text}");
    let suites: Vec<String> = std::fs::read_dir("suites")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(suites.len() >= 10, "{suites:?}");
    for name in &suites {
        assert!(
            text.contains(&format!("| {name} | PASS |")),
            "{name}: {text}"
        );
        let plan = std::fs::read_to_string(reports.path().join(format!("{name}.log"))).unwrap();
        assert!(plan.contains("boots=2"), "{name}: {plan}");
    }
    assert!(text.contains(&format!("all {} suite(s) passed", suites.len())));
}

#[test]
fn a_suite_that_is_refused_fails_the_smoke_run_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.toml");
    let text = std::fs::read_to_string("suites/quick.toml")
        .unwrap()
        .replace("kind = \"hackbench\"", "kind = \"dbench\"");
    std::fs::write(&broken, text).unwrap();
    let reports = dir.path().join("reports");
    let quick = std::fs::canonicalize("suites/quick.toml").unwrap();
    let (ok, text) = smoke(
        &[
            "--dry-run",
            quick.to_str().unwrap(),
            broken.to_str().unwrap(),
        ],
        &reports,
    );
    assert!(!ok, "{text}");
    assert!(text.contains("| quick | PASS |"), "{text}");
    assert!(text.contains("| broken | FAIL (exit 2) |"), "{text}");
    assert!(text.contains("1 of 2 suite(s) failed"), "{text}");
}
