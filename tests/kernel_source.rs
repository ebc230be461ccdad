//! Kernels from git revisions and patches, without building one: a
//! revision comes from a snapshot of its commit and leaves the user's tree
//! alone, and a patch that does not apply is an input error (exit 2, the
//! patch, the file and the hunk named) before anything is built. The
//! "kernel source" here is a tiny git repository with a Makefile, a Kconfig
//! and one C file: enough for everything that runs before a build.

use assert_cmd::Command;
use markbench::guest::images::source::{KernelOrigin, KernelSource, ResolvedOrigin};
use std::path::{Path, PathBuf};

fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.org")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.org")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const FORK_C: &str = "int a;\nint b;\nint c;\nint d;\nint e;\nint f;\nint g;\nint h;\n\
                      int i;\nint j;\nint k;\nint l;\n";

/// A repository whose `main` has two commits: "base" and "use long for b"
/// (the second changes line 2 of kernel/fork.c).
fn tiny_tree(dir: &Path) -> PathBuf {
    let repo = dir.join("linux");
    std::fs::create_dir_all(repo.join("kernel")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("Makefile"), "all:\n").unwrap();
    std::fs::write(repo.join("Kconfig"), "").unwrap();
    std::fs::write(repo.join("kernel/fork.c"), FORK_C).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    std::fs::write(
        repo.join("kernel/fork.c"),
        FORK_C.replace("int b;", "long b;"),
    )
    .unwrap();
    git(&repo, &["commit", "-q", "-am", "use long for b"]);
    repo
}

/// A unified diff of kernel/fork.c with two hunks, the second expecting
/// `int k;` at line 11; `second_hunk_context` replaces that line so the
/// hunk no longer matches.
fn patch(dir: &Path, name: &str, second_hunk_context: &str) -> PathBuf {
    let text = format!(
        "From: t <t@example.org>\nSubject: [PATCH] two changes\n\n---\n\
         diff --git a/kernel/fork.c b/kernel/fork.c\n--- a/kernel/fork.c\n+++ b/kernel/fork.c\n\
         @@ -1,3 +1,3 @@\n-int a;\n+int a2;\n long b;\n int c;\n\
         @@ -10,3 +10,3 @@\n int j;\n-{second_hunk_context}\n+int k2;\n int l;\n"
    );
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn markbench(cache: &Path) -> Command {
    let mut c = Command::cargo_bin("markbench").unwrap();
    c.env("MARKBENCH_CACHE", cache);
    c
}

/// Runs `compare ARGS` in a fresh cache and reports directory: exit 2, no
/// panic, no run directory, no kernel built. Returns stderr.
fn refused(args: &[&std::ffi::OsStr]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let reports = dir.path().join("reports");
    let out = markbench(&cache)
        .arg("compare")
        .args(args)
        .arg("--reports")
        .arg(&reports)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!reports.exists(), "a run directory was written: {stderr}");
    assert!(
        !cache.join("kernels").exists(),
        "a kernel build started: {stderr}"
    );
    stderr
}

#[test]
fn a_patch_that_does_not_apply_fails_before_any_build_naming_the_hunk() {
    let dir = tempfile::tempdir().unwrap();
    let repo = tiny_tree(dir.path());
    let bad = patch(dir.path(), "0001-two-changes.patch", "int K;");
    for dry_run in [false, true] {
        let mut args = vec![
            "--kernel-source".as_ref(),
            repo.as_os_str(),
            "--patch".as_ref(),
            bad.as_os_str(),
        ];
        if dry_run {
            args.push("--dry-run".as_ref());
        }
        let stderr = refused(&args);
        // The second hunk's header is line 13 of the patch file.
        assert!(
            stderr.contains(&format!(
                "{}:13: patch does not apply: kernel/fork.c: hunk #2 (@@ -10,3 +10,3 @@)",
                bad.display()
            )),
            "{stderr}"
        );
        assert!(stderr.contains("use long for b") || stderr.contains("as it is"));
    }
}

#[test]
fn a_patch_that_applies_passes_the_dry_run_and_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let repo = tiny_tree(dir.path());
    let good = patch(dir.path(), "0001-two-changes.patch", "int k;");
    let out = markbench(&dir.path().join("cache"))
        .args(["compare", "--dry-run", "--kernel-source"])
        .arg(&repo)
        .arg("--patch")
        .arg(&good)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("kernel of patched:") && stdout.contains("+ 0001-two-changes.patch"),
        "{stdout}"
    );
    assert!(stdout.contains("kernel of unpatched:"), "{stdout}");
}

#[test]
fn a_suite_variant_names_its_patches_and_a_missing_one_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let repo = tiny_tree(dir.path());
    let bad = patch(dir.path(), "bad.patch", "int K;");
    let quick = std::fs::read_to_string("suites/quick.toml").unwrap();
    let with_patch = |patch_line: &str| {
        // The second [[variant]] gets the patch; both use the baseline's fragment.
        let mut text = quick.replace("kernel = \"markers-on\"", "kernel = \"markers-off\"");
        let at = text.rfind("[[variant]]").unwrap();
        let end = text[at..].find("\n\n").map_or(text.len(), |e| at + e);
        text.insert_str(end, &format!("\n{patch_line}"));
        text
    };
    let suite = dir.path().join("patched.toml");
    std::fs::write(&suite, with_patch("patches = [\"bad.patch\"]")).unwrap();
    let stderr = refused(&[
        "--suite".as_ref(),
        suite.as_os_str(),
        "--kernel-source".as_ref(),
        repo.as_os_str(),
    ]);
    assert!(
        stderr.contains(&format!(
            "{}:13: patch does not apply: kernel/fork.c: hunk #2",
            bad.display()
        )),
        "{stderr}"
    );

    std::fs::write(&suite, with_patch("patches = [\"missing.patch\"]")).unwrap();
    let text = std::fs::read_to_string(&suite).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("missing.patch"))
        .unwrap()
        + 1;
    let stderr = refused(&["--suite".as_ref(), suite.as_os_str()]);
    assert!(
        stderr.contains(&format!("patched.toml:{line}:12: patch ")),
        "{stderr}"
    );
    assert!(stderr.contains("missing.patch does not exist"), "{stderr}");
}

#[test]
fn revs_name_the_kernels_by_commit_and_a_series_makes_one_kernel_per_commit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = tiny_tree(dir.path());
    let out = markbench(&dir.path().join("cache"))
        .args([
            "compare",
            "--dry-run",
            "--revs",
            "main~1,main",
            "--kernel-source",
        ])
        .arg(&repo)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let head = git(&repo, &["rev-parse", "main"]);
    let base = git(&repo, &["rev-parse", "main~1"]);
    assert!(
        stdout.contains(&format!("kernel of {}: ", &head[..12]))
            && stdout.contains("\"use long for b\""),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("kernel of {}: ", &base[..12])),
        "{stdout}"
    );

    std::fs::write(
        repo.join("kernel/fork.c"),
        FORK_C.replace("int c;", "long c;"),
    )
    .unwrap();
    git(&repo, &["commit", "-q", "-am", "use long for c"]);
    // A series: its base, then one kernel per commit, in order.
    let out = markbench(&dir.path().join("cache"))
        .args([
            "compare",
            "--dry-run",
            "--revs",
            "main~2..main",
            "--kernel-source",
        ])
        .arg(&repo)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let ids: Vec<String> = ["main~2", "main~1", "main"]
        .iter()
        .map(|r| git(&repo, &["rev-parse", r])[..12].to_string())
        .collect();
    let at = |id: &str| {
        stdout
            .find(&format!("kernel of {id}: "))
            .unwrap_or(usize::MAX)
    };
    assert!(
        at(&ids[0]) < at(&ids[1]) && at(&ids[1]) < at(&ids[2]) && at(&ids[2]) < usize::MAX,
        "{stdout}"
    );
    assert!(
        stdout.contains("\"use long for c\"") && stdout.contains("candidate 2:"),
        "{stdout}"
    );
    assert!(
        !dir.path().join("cache/kernels").exists(),
        "a dry run built a kernel"
    );
}

#[test]
fn a_revision_is_built_from_a_snapshot_and_the_working_tree_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // This test alone in this file uses the library in-process; the
    // others run markbench with their own caches.
    std::env::set_var("MARKBENCH_CACHE", dir.path().join("cache"));
    let repo = tiny_tree(dir.path());
    // The user is on another branch, with a staged and an unstaged change.
    git(&repo, &["checkout", "-q", "-b", "work"]);
    std::fs::write(repo.join("Kconfig"), "# staged\n").unwrap();
    git(&repo, &["add", "Kconfig"]);
    std::fs::write(repo.join("kernel/fork.c"), "int unstaged;\n").unwrap();
    let state = |repo: &Path| {
        (
            git(repo, &["status", "--porcelain=v2", "--branch"]),
            git(repo, &["diff", "--cached"]),
            git(repo, &["diff"]),
            git(repo, &["stash", "list"]),
        )
    };
    let before = state(&repo);

    let good = patch(dir.path(), "good.patch", "int k;");
    let origin = KernelOrigin {
        source: KernelSource::Tree(repo.clone()),
        rev: Some("main".into()),
        patches: vec![good],
    };
    let resolved = ResolvedOrigin::resolve(&origin).unwrap();
    let tree = resolved.tree().unwrap();
    assert!(tree.path.starts_with(dir.path().join("cache")), "{tree:?}");
    let built_from = std::fs::read_to_string(tree.path.join("kernel/fork.c")).unwrap();
    assert_eq!(
        built_from,
        FORK_C
            .replace("int b;", "long b;")
            .replace("int a;", "int a2;")
            .replace("int k;", "int k2;")
    );
    assert_eq!(
        std::fs::read_to_string(tree.path.join("Kconfig")).unwrap(),
        "",
        "the staged change reached the snapshot"
    );
    // What a build writes into its workspace is the same tree.
    assert_eq!(resolved.existing_tree().unwrap(), None);
    let written = dir.path().join("incoming");
    std::fs::create_dir(&written).unwrap();
    resolved.write_tree(&written).unwrap();
    assert_eq!(
        std::fs::read_to_string(written.join("kernel/fork.c")).unwrap(),
        built_from
    );
    assert_eq!(state(&repo), before, "the user's tree changed");
    assert_eq!(
        std::fs::read_to_string(repo.join("kernel/fork.c")).unwrap(),
        "int unstaged;\n"
    );

    // Asking for the tree as it is takes the uncommitted changes, and they
    // are part of its identity.
    let as_is =
        ResolvedOrigin::resolve(&KernelOrigin::of(KernelSource::Tree(repo.clone()))).unwrap();
    let tree = as_is.tree().unwrap();
    assert_eq!(tree.path, repo);
    assert_eq!(as_is.existing_tree().unwrap(), Some(repo.clone()));

    std::fs::write(repo.join("kernel/fork.c"), "int other;\n").unwrap();
    let changed =
        ResolvedOrigin::resolve(&KernelOrigin::of(KernelSource::Tree(repo.clone()))).unwrap();
    assert_ne!(as_is.identity, changed.identity);
}

#[test]
fn the_source_difference_lists_commits_the_diffstat_and_patches() {
    let dir = tempfile::tempdir().unwrap();
    let repo = tiny_tree(dir.path());
    let at = |rev: &str, patches: Vec<PathBuf>| {
        ResolvedOrigin::resolve(&KernelOrigin {
            source: KernelSource::Tree(repo.clone()),
            rev: Some(rev.into()),
            patches,
        })
        .unwrap()
    };
    let (base, tip) = (at("main~1", vec![]), at("main", vec![]));
    let text = markbench::guest::images::source::source_difference(&base, &tip)
        .unwrap()
        .expect("two commits differ");
    assert!(text.contains("use long for b"), "{text}");
    assert!(text.contains("kernel/fork.c | 2 +-"), "{text}");
    assert!(text.contains("1 file changed"), "{text}");
    let good = patch(dir.path(), "good.patch", "int k;");
    let patched = at("main~1", vec![good]);
    let text = markbench::guest::images::source::source_difference(&base, &patched)
        .unwrap()
        .expect("a patch differs");
    assert!(
        text.contains("patches applied on top:\n  good.patch (sha256 "),
        "{text}"
    );
    assert!(!text.contains("commits"), "{text}");
    assert_eq!(
        markbench::guest::images::source::source_difference(&base, &at("main~1", vec![])).unwrap(),
        None
    );
}
