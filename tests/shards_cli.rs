//! The shard commands' contract for bad input: exit status 2, a message
//! naming what is wrong, no panic, nothing written.

use assert_cmd::Command;
use predicates::prelude::*;

fn markbench() -> Command {
    Command::cargo_bin("markbench").unwrap()
}

const SUITE: &str = "tests/fixtures/shards.toml";

#[test]
fn plan_prints_every_shard_with_both_variants_and_writes_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("split.json");
    markbench()
        .args(["plan", "--suite", SUITE, "--shards", "3", "--out"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("shard 0: 2 boots"))
        .stdout(predicate::str::contains("shard 2: 4 boots"))
        .stdout(predicate::str::contains("blocking factor"));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(plan["count"], 3);
    assert_eq!(plan["shards"].as_array().unwrap().len(), 3);
}

#[test]
fn impossible_shard_counts_exit_2() {
    markbench()
        .args(["plan", "--suite", SUITE, "--shards", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--shards must be at least 1"));
    markbench()
        .args(["plan", "--suite", SUITE, "--shards", "5"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("shards.toml: 5 shards"))
        .stderr(predicate::str::contains("--shards 4 or fewer"))
        .stderr(predicate::str::contains("panicked").not());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shard");
    markbench()
        .args(["run-shard", "2", "--shards", "2", "--suite", SUITE, "--out"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("numbered 0 to 1"));
    assert!(!out.exists());
}

#[test]
fn merging_what_is_not_a_shard_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged");
    markbench()
        .arg("merge")
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a run directory"));
    assert!(!out.exists());
}

#[test]
fn shard_commands_have_help() {
    for cmd in ["plan", "run-shard", "merge"] {
        markbench()
            .args([cmd, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Usage"));
    }
}
