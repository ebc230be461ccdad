//! What the tests that boot real guests share: one `markbench compare` into
//! a fresh reports directory, which must succeed.

#![allow(dead_code)]

use assert_cmd::Command;
use std::path::PathBuf;

/// Runs `markbench compare ARGS --reports TMP` and returns the temporary
/// reports directory (kept alive by the caller) and the run directory in it.
pub fn compare(args: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let reports = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("markbench")
        .unwrap()
        .arg("compare")
        .args(args)
        .arg("--reports")
        .arg(reports.path())
        .timeout(std::time::Duration::from_secs(60 * 60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "compare {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = std::fs::read_dir(reports.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && !p.ends_with("latest"))
        .expect("a run directory");
    (reports, dir)
}
