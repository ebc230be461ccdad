//! A bisection resumed from a directory whose `bisect.toml` is damaged:
//! `bisect --resume` ends with 2 and names the file when the plan is input
//! to fix (no commits, one commit, not TOML), with 1 when the disk fails to
//! read it, and never with a panic. Nothing is built or booted: the plan is
//! refused before anything else is read.

use assert_cmd::Command;
use std::path::Path;
use std::time::Duration;

/// A plan as `bisect` writes it, with `commits` as given.
fn plan(commits: &str) -> String {
    format!(
        "tree = \"/src/linux\"\n\
         good = \"{good}\"\n\
         bad = \"{bad}\"\n\
         suite_sha256 = \"{sha}\"\n\
         point = \"hackbench/time@1=2\"\n\
         variant = \"\"\n\
         threshold = 0.01\n\
         boots = 4\n\
         max_rounds = 3\n\
         profile = false\n\
         {commits}",
        good = "a".repeat(40),
        bad = "b".repeat(40),
        sha = "0".repeat(64),
    )
}

fn commit(id: char) -> String {
    format!(
        "\n[[commits]]\nid = \"{}\"\nsubject = \"a change\"\nauthor = \"A. Developer <a@example.org>\"\nmerge = false\n",
        id.to_string().repeat(40)
    )
}

/// `bisect --resume dir`'s exit code and what it printed on stderr.
fn resume(dir: &Path) -> (i32, String) {
    let out = Command::cargo_bin("markbench")
        .unwrap()
        .arg("bisect")
        .arg("--resume")
        .arg(dir)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{}: {stderr}", dir.display());
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("{} died of a signal: {out:?}", dir.display()));
    (code, stderr)
}

#[test]
fn a_damaged_plan_is_input_to_fix_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("no-commits", plan("commits = []\n"), "holds no commit"),
        ("one-commit", plan(&commit('a')), "holds one commit"),
        (
            "not-toml",
            plan("commits = [\n"),
            "malformed bisection plan",
        ),
    ];
    for (name, text, says) in cases {
        let dir = tmp.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("bisect.toml"), text).unwrap();
        let (code, stderr) = resume(&dir);
        assert_eq!(code, 2, "{name}: {stderr}");
        let file = dir.join("bisect.toml");
        assert!(
            stderr.contains(&format!("{}", file.display())),
            "{name}: {stderr}"
        );
        assert!(stderr.contains(says), "{name}: {stderr}");
    }
}

#[test]
fn a_plan_the_disk_fails_to_read_is_the_machinery() {
    let tmp = tempfile::tempdir().unwrap();
    // Reading its own memory from offset 0, where nothing is mapped, fails
    // with EIO in any process, as root too.
    std::os::unix::fs::symlink("/proc/self/mem", tmp.path().join("bisect.toml")).unwrap();
    let (code, stderr) = resume(tmp.path());
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("bisect.toml: cannot be read: Input/output error"),
        "{stderr}"
    );
}
