//! The command line's contract for bad input: a clear message naming the
//! file and position, exit status 2, no panic, nothing written.

use assert_cmd::Command;
use predicates::prelude::*;

fn markbench() -> Command {
    Command::cargo_bin("markbench").unwrap()
}

#[test]
fn every_command_has_help() {
    for cmd in [
        vec![],
        vec!["compare"],
        vec!["images"],
        vec!["report"],
        vec!["setup"],
    ] {
        let mut args = cmd.clone();
        args.push("--help");
        markbench()
            .args(&args)
            .assert()
            .success()
            .stdout(predicate::str::contains("Usage"));
    }
}

#[test]
fn dry_run_prints_the_plan_of_the_default_suite() {
    markbench()
        .args(["compare", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("suite quick"))
        .stdout(predicate::str::contains("6 boots"))
        .stdout(predicate::str::contains("order (Abba blocks, seed 0)"));
}

#[test]
fn malformed_suite_exits_2_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("bad.toml");
    std::fs::write(&suite, "name = \"x\"\nboots = \"three\"\n").unwrap();
    let reports = dir.path().join("reports");
    markbench()
        .args(["compare", "--suite"])
        .arg(&suite)
        .arg("--reports")
        .arg(&reports)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.toml:2:9:"))
        .stderr(predicate::str::contains("panicked").not());
    assert!(!reports.exists());
}

#[test]
fn unknown_workload_exits_2_and_lists_choices() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("w.toml");
    let text = std::fs::read_to_string("suites/quick.toml")
        .unwrap()
        .replace("kind = \"hackbench\"", "kind = \"dbench\"");
    std::fs::write(&suite, text).unwrap();
    markbench()
        .args(["compare", "--dry-run", "--suite"])
        .arg(&suite)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("w.toml:"))
        .stderr(predicate::str::contains("dbench"))
        .stderr(predicate::str::contains("hackbench"));
}

#[test]
fn missing_kernel_source_exits_2() {
    markbench()
        .args([
            "compare",
            "--dry-run",
            "--kernel-source",
            "/nonexistent/linux",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "/nonexistent/linux does not exist",
        ));
}

#[test]
fn report_of_a_directory_that_is_not_a_run_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    markbench()
        .arg("report")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a run directory"));
}

#[test]
fn an_object_that_is_not_a_relative_object_path_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("o.toml");
    let text = std::fs::read_to_string("suites/quick.toml").unwrap();
    // A top-level key: before the first table.
    let at = text.find("\n[").unwrap() + 1;
    let text = format!(
        "{}objects = [\"kernel/trace/ring_buffer.o\", \"/boot/vmlinux\"]\n{}",
        &text[..at],
        &text[at..]
    );
    let line = text[..at].lines().count() + 1;
    std::fs::write(&suite, text).unwrap();
    let reports = dir.path().join("reports");
    markbench()
        .args(["compare", "--suite"])
        .arg(&suite)
        .arg("--reports")
        .arg(&reports)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("o.toml:{line}:42:")))
        .stderr(predicate::str::contains(
            "\"/boot/vmlinux\" must be a relative path",
        ))
        .stderr(predicate::str::contains("panicked").not());
    assert!(!reports.exists());
}
