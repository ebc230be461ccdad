//! The command line's contract for bad input: a clear message naming the
//! file and position, exit status 2, no panic, nothing written.

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn markbench() -> Command {
    Command::cargo_bin("markbench").unwrap()
}

/// Runs `command` with `--reports` in `dir`: it must exit 2 without a
/// panic and write nothing. Returns its stderr.
fn refused(mut command: Command, dir: &Path) -> String {
    let reports = dir.join("reports");
    let out = command.arg("--reports").arg(&reports).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!reports.exists(), "something was written for: {stderr}");
    stderr
}

/// Runs `compare ARGS` with a fresh `--reports` directory: it must exit 2
/// without a panic and write nothing. Returns its stderr.
fn refused_compare<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let dir = tempfile::tempdir().unwrap();
    let mut compare = markbench();
    compare.arg("compare").args(args);
    refused(compare, dir.path())
}

#[test]
fn every_command_has_help() {
    for cmd in [
        vec![],
        vec!["compare"],
        vec!["images"],
        vec!["report"],
        vec!["setup"],
        vec!["bisect"],
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
fn a_dry_run_with_the_cycle_model_says_so_and_a_bad_model_is_refused() {
    markbench()
        .args(["compare", "--dry-run", "--model", "cycles"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "cycle model: every boot under the plugin's cache and branch model",
        ))
        .stdout(predicate::str::contains("estimated-cycles"));
    markbench()
        .args(["compare", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("cycle model").not());
    markbench()
        .args(["compare", "--dry-run", "--model", "caches"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("cycles"));
}

#[test]
fn dry_run_prints_the_plan_of_the_default_suite() {
    markbench()
        .args(["compare", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("suite quick"))
        .stdout(predicate::str::contains(
            "8 boots (2 per variant × 2 CPU counts)",
        ))
        .stdout(predicate::str::contains(
            "order of the planned boots (Abba blocks, seed 0)",
        ))
        .stdout(predicate::str::contains(
            "no block starts that would end after 5m of wall time from the first boot",
        ));
}

#[test]
fn cpus_keep_the_default_suite_to_its_points_at_those_counts() {
    markbench()
        .args(["compare", "--dry-run", "--cpus", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "4 boots (2 per variant × 1 CPU count)",
        ))
        .stdout(predicate::str::contains(
            "  not run: workload 3, hackbench -g 2 -l 5",
        ))
        .stdout(predicate::str::contains(
            "(--cpus 1 names none of its CPU counts)",
        ));
    let stderr = refused_compare(["--dry-run", "--cpus", "4"]);
    assert!(
        stderr.contains("--cpus 4 leaves nothing to run") && stderr.contains("workload 3 at [2]"),
        "{stderr}"
    );
}

#[test]
fn a_dry_run_of_three_variants_names_the_baseline_and_each_candidate() {
    markbench()
        .args(["compare", "--dry-run", "--suite", "suites/markers-three.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("baseline:    markers-off: kernel markers-off"))
        .stdout(predicate::str::contains("candidate 1: markers-on: kernel markers-on"))
        .stdout(predicate::str::contains(
            "candidate 2: markers-on-full: kernel markers-on-full",
        ))
        .stdout(predicate::str::contains("9 boots (3 per variant × 1 CPU count)"))
        .stdout(predicate::str::contains(
            "    0  markers-off          1 CPU   boot 0\n    1  markers-on           1 CPU   boot 0\n    2  markers-on-full      1 CPU   boot 0\n    3  markers-on-full      1 CPU   boot 1",
        ));
}

#[test]
fn malformed_suite_exits_2_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("bad.toml");
    std::fs::write(&suite, "name = \"x\"\nboots = \"three\"\n").unwrap();
    let stderr = refused_compare(["--suite".as_ref(), suite.as_os_str()]);
    assert!(stderr.contains("bad.toml:2:9:"), "{stderr}");
}

#[test]
fn a_night_refused_at_its_suite_says_why_on_the_ci_job_page() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("bad.toml");
    std::fs::write(&suite, "name = \"x\"\nboots = \"three\"\n").unwrap();
    let page = dir.path().join("step-summary.md");
    let mut nightly = markbench();
    nightly
        .env("GITHUB_STEP_SUMMARY", &page)
        .arg("nightly")
        .arg("--suite")
        .arg(&suite);
    let stderr = refused(nightly, dir.path());
    assert!(stderr.contains("bad.toml:2:9:"), "{stderr}");
    let summary = std::fs::read_to_string(&page).unwrap();
    assert!(
        summary
            .starts_with("## markbench nightly\n\n**Error**, not gated (exit 2 (input to fix)): ")
            && summary.contains("bad.toml:2:9:"),
        "{summary}"
    );
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

/// The fragment hash the dry run prints (16 hex digits) for this text.
fn fragment_hash(text: &str) -> String {
    markbench::guest::images::fragments::Fragment {
        file_name: "x.config".into(),
        origin: markbench::guest::images::fragments::Origin::BuiltIn,
        text: text.into(),
    }
    .sha256()
    .short()
    .to_string()
}

#[test]
fn without_a_suites_directory_the_default_suite_and_its_fragments_are_built_in() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::fs::read_to_string("vm-images/markers-on.config").unwrap();
    markbench()
        .current_dir(dir.path())
        .args(["compare", "--dry-run"])
        .assert()
        .success()
        .stderr(predicate::str::contains("no suites/quick.toml in"))
        .stderr(predicate::str::contains("built-in copy"))
        .stdout(predicate::str::contains(
            "suite quick (built-in suites/quick.toml)",
        ))
        .stdout(predicate::str::contains(format!(
            "markers-on.config        built in (sha256 {})",
            fragment_hash(&shipped)
        )));
}

#[test]
fn the_current_checkouts_edited_fragment_is_the_one_used() {
    // Another checkout: the shipped suite and fragments, markers-on edited.
    let checkout = tempfile::tempdir().unwrap();
    let root = checkout.path();
    std::fs::create_dir_all(root.join("suites")).unwrap();
    std::fs::create_dir_all(root.join("vm-images")).unwrap();
    std::fs::copy("suites/quick.toml", root.join("suites/quick.toml")).unwrap();
    for f in ["base.config", "markers-off.config", "markers-on.config"] {
        std::fs::copy(
            Path::new("vm-images").join(f),
            root.join("vm-images").join(f),
        )
        .unwrap();
    }
    let shipped = std::fs::read_to_string("vm-images/markers-on.config").unwrap();
    let edited = format!("{shipped}CONFIG_PRINTK_TIME=y\n");
    std::fs::write(root.join("vm-images/markers-on.config"), &edited).unwrap();
    let out = markbench()
        .current_dir(root)
        .args(["compare", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let path = std::fs::canonicalize(root)
        .unwrap()
        .join("vm-images/markers-on.config");
    assert!(
        stdout.contains(&format!(
            "markers-on.config        {} (sha256 {})",
            path.display(),
            fragment_hash(&edited)
        )),
        "{stdout}"
    );
    assert!(!stdout.contains(&fragment_hash(&shipped)), "{stdout}");
}

#[test]
fn a_relative_suite_path_is_taken_from_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    markbench()
        .current_dir(dir.path())
        .args(["compare", "--dry-run", "--suite", "suites/quick.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "suites/quick.toml: cannot read suite",
        ));
}

#[test]
fn a_qemu_binary_that_does_not_exist_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-qemu");
    let stderr = refused_compare([
        "--suite".as_ref(),
        "tests/fixtures/e2e.toml".as_ref(),
        "--qemu".as_ref(),
        missing.as_os_str(),
    ]);
    assert!(stderr.contains("no-such-qemu does not exist"), "{stderr}");
}

#[test]
fn more_vcpus_than_cores_under_wall_time_exits_2_before_anything_is_built() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores >= 8 {
        return;
    }
    let stderr = refused_compare([
        "--suite",
        "tests/fixtures/e2e.toml",
        "--timing",
        "wall",
        "--cpus",
        "8",
    ]);
    assert!(
        stderr.contains("the run times on the wall clock"),
        "{stderr}"
    );
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
    let stderr = refused_compare(["--suite".as_ref(), suite.as_os_str()]);
    assert!(stderr.contains(&format!("o.toml:{line}:42:")), "{stderr}");
    assert!(
        stderr.contains("\"/boot/vmlinux\" must be a relative path"),
        "{stderr}"
    );
}

/// The shipped quick suite with `from` replaced by `to` (once), written to
/// a fresh directory; returns the directory, the file and its text.
fn quick_with(from: &str, to: &str) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("q.toml");
    let text = std::fs::read_to_string("suites/quick.toml").unwrap();
    assert!(text.contains(from), "{from:?} is not in suites/quick.toml");
    let text = text.replacen(from, to, 1);
    std::fs::write(&suite, &text).unwrap();
    (dir, suite, text)
}

/// 1-based line and column of the first `needle` in `text`.
fn position(text: &str, needle: &str) -> (usize, usize) {
    let at = text.find(needle).unwrap();
    let line = text[..at].lines().count() + usize::from(text[..at].ends_with('\n'));
    let col = at - text[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
    (line.max(1), col)
}

#[test]
fn an_endless_suite_file_is_refused_without_reading_it_all() {
    let stderr = refused_compare(["--suite", "/dev/zero"]);
    assert!(
        stderr.contains("/dev/zero: not a regular file (a character device)"),
        "{stderr}"
    );
}

#[test]
fn a_workload_listing_a_param_twice_exits_2_at_the_workload() {
    let (_dir, suite, text) = quick_with("params = [2]\nloops = 5", "params = [2, 2]\nloops = 5");
    let stderr = refused_compare(["--suite".as_ref(), suite.as_os_str()]);
    let (line, col) = position(&text, "[[workload]]");
    assert!(
        stderr.contains(&format!("q.toml:{line}:{col}:")),
        "{stderr}"
    );
    assert!(
        stderr.contains("hackbench: params lists 2 twice"),
        "{stderr}"
    );
}

#[test]
fn more_guest_memory_than_the_host_has_exits_2_even_under_icount() {
    let (_dir, suite, text) = quick_with("memory_mib = 512", "memory_mib = 4000000000");
    let stderr = refused_compare([
        "--suite".as_ref(),
        suite.as_os_str(),
        "--timing".as_ref(),
        "icount".as_ref(),
    ]);
    let (line, _) = position(&text, "memory_mib");
    assert!(stderr.contains(&format!("q.toml:{line}:14:")), "{stderr}");
    assert!(
        stderr.contains("memory_mib = 4000000000 is more than this host's")
            && stderr.contains("--allow-oversubscribe"),
        "{stderr}"
    );
}

#[test]
fn the_dry_run_refuses_more_guest_memory_than_the_host_has_as_the_run_does() {
    let (_dir, suite, _) = quick_with("memory_mib = 512", "memory_mib = 999999999");
    markbench()
        .args(["compare", "--dry-run", "--suite"])
        .arg(&suite)
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(
            "memory_mib = 999999999 is more than this host's",
        ));
}

#[test]
fn a_cmdline_setting_markbenchs_own_arguments_or_holding_a_newline_exits_2() {
    let kernel = "kernel = \"markers-on\"\n";
    for (cmdline, needle) in [
        ("\"quiet console=ttyS1\"", "cmdline sets console="),
        ("\"rdinit=/bin/sh\"", "cmdline sets rdinit="),
        ("\"panic=10\"", "cmdline sets panic="),
        ("\"quiet\\nloglevel=8\"", "cmdline must be one line"),
    ] {
        let (_dir, suite, text) = quick_with(kernel, &format!("{kernel}cmdline = {cmdline}\n"));
        let stderr = refused_compare(["--suite".as_ref(), suite.as_os_str()]);
        let (line, _) = position(&text, "cmdline = ");
        assert!(
            stderr.contains(&format!("q.toml:{line}:11:")),
            "{cmdline}: {stderr}"
        );
        assert!(stderr.contains(needle), "{cmdline}: {stderr}");
    }
}

/// A PATH whose only cargo leaves a mark if anything runs it, and whether
/// `just` is found on it anyway (installed system-wide).
fn path_with_marking_cargo(bin: &Path) -> (String, PathBuf, bool) {
    let cargo = bin.join("cargo");
    let mark = bin.join("cargo-ran");
    std::fs::write(&cargo, format!("#!/bin/sh\ntouch {}\n", mark.display())).unwrap();
    let mut perms = std::fs::metadata(&cargo).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&cargo, perms).unwrap();
    let path = format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", bin.display());
    let has_just = std::env::split_paths(&path).any(|d| d.join("just").is_file());
    (path, mark, has_just)
}

/// `setup --check --ci` is about what CI runs: it neither names nor installs
/// `just`, which no test uses.
#[test]
fn setup_for_ci_leaves_just_alone() {
    let bin = tempfile::tempdir().unwrap();
    let (path, mark, has_just) = path_with_marking_cargo(bin.path());
    if has_just {
        return; // just is installed system-wide here: nothing to leave out.
    }
    let out = markbench()
        .args(["setup", "--check", "--ci"])
        .env("PATH", &path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("just"), "{stderr}");
    assert!(!mark.exists(), "setup --check --ci ran cargo");
}

/// `setup --check` names `cargo install just` when just is missing and
/// cargo is there, and installs nothing.
#[test]
fn setup_check_names_the_command_that_installs_just() {
    let bin = tempfile::tempdir().unwrap();
    let (path, mark, has_just) = path_with_marking_cargo(bin.path());
    if has_just {
        return; // just is installed system-wide here: nothing to name.
    }
    let out = markbench()
        .args(["setup", "--check"])
        .env("PATH", &path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("missing: just") && stderr.contains("    cargo install just"),
        "{stderr}"
    );
    assert!(!mark.exists(), "setup --check ran cargo");
}

#[test]
fn the_dry_run_names_a_kernel_base_and_a_base_that_is_no_config_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string("suites/quick.toml").unwrap();
    let with_base = |base: &str| {
        let suite = dir.path().join("based.toml");
        let text = text.replacen(
            "[[variant]]",
            &format!("[kernel]\nbase = \"{base}\"\n\n[[variant]]"),
            1,
        );
        std::fs::write(&suite, &text).unwrap();
        let line = text.lines().position(|l| l.starts_with("base = ")).unwrap() + 1;
        (suite, line)
    };
    let (suite, _) = with_base("defconfig");
    markbench()
        .args(["compare", "--dry-run", "--suite"])
        .arg(&suite)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "kernel configuration: defconfig + base.config + the variant's fragment",
        ));
    std::fs::write(dir.path().join("distro.config"), "# not a config\n").unwrap();
    let (suite, line) = with_base("distro.config");
    let stderr = refused_compare([Path::new("--suite"), &suite]);
    assert!(
        stderr.contains(&format!("{}:{line}:", suite.display()))
            && stderr.contains("holds no CONFIG_ line"),
        "{stderr}"
    );
    let (suite, line) = with_base("missing.config");
    let stderr = refused_compare([Path::new("--suite"), &suite]);
    assert!(
        stderr.contains(&format!("{}:{line}:", suite.display()))
            && stderr.contains("cannot be read"),
        "{stderr}"
    );
}

/// Runs `bisect ARGS` with a fresh `--reports` directory: it must exit 2
/// before building anything, without a panic, and write nothing.
fn refused_bisect(args: &[&str], tree: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut bisect = markbench();
    bisect
        .arg("bisect")
        .arg("--kernel-source")
        .arg(tree)
        .args(args)
        .env("MARKBENCH_CACHE", dir.path().join("cache"));
    let stderr = refused(bisect, dir.path());
    assert!(
        !dir.path().join("cache").exists(),
        "something was built for: {stderr}"
    );
    stderr
}

#[test]
fn bisect_refuses_what_it_cannot_bisect_before_building() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("tree");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    // Not a git repository yet.
    let e = refused_bisect(&["--good", "HEAD~1", "--bad", "HEAD"], &repo);
    assert!(e.contains("not a git repository"), "{e}");
    git(&["init", "-q", "-b", "main"]);
    for n in 0..3 {
        std::fs::write(repo.join("Makefile"), format!("# {n}\n")).unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", &format!("commit {n}")]);
    }
    let e = refused_bisect(&["--good", "HEAD~1", "--bad", "nosuchrev"], &repo);
    assert!(e.contains("--bad") && e.contains("no such commit"), "{e}");
    let e = refused_bisect(&["--good", "HEAD", "--bad", "HEAD~2"], &repo);
    assert!(e.contains("is not an ancestor"), "{e}");
    let e = refused_bisect(&["--good", "HEAD", "--bad", "main"], &repo);
    assert!(e.contains("the same commit"), "{e}");
    let e = refused_bisect(
        &["--good", "HEAD~2", "--bad", "HEAD", "--point", "hackbench"],
        &repo,
    );
    assert!(
        e.contains("2 points match") && e.contains("hackbench@1=2"),
        "{e}"
    );
    let e = refused_bisect(
        &["--good", "HEAD~2", "--bad", "HEAD", "--point", "ping@1"],
        &repo,
    );
    assert!(e.contains("no point matches"), "{e}");
    let e = refused_bisect(
        &["--good", "HEAD~2", "--bad", "HEAD", "--boots", "1"],
        &repo,
    );
    assert!(e.contains("at least two boots"), "{e}");
    let e = refused_bisect(
        &["--good", "HEAD~2", "--bad", "HEAD", "--threshold", "0"],
        &repo,
    );
    assert!(e.contains("--threshold"), "{e}");
}

#[test]
fn images_list_shows_a_cached_kernel_whose_key_is_short() {
    let dir = tempfile::tempdir().unwrap();
    let entry = dir.path().join("cache/kernels/short");
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::write(
        entry.join("kernel.toml"),
        "name = \"tiny\"\nkey = \"abc\"\ndir = \"/k\"\nbzimage = \"/k/bzImage\"\n\
         config = \"/k/config\"\nbuild_log = \"/k/build.log\"\nsource_identity = \"\"\n\
         compiler = \"\"\nconfig_sha256 = \"\"\nbuild_seconds = 1.0\n\
         [fragment_sha256]\n",
    )
    .unwrap();
    let out = markbench()
        .args(["images", "--list"])
        .env("MARKBENCH_CACHE", dir.path().join("cache"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("kernel tiny") && l.contains(" abc ")),
        "{stdout}"
    );
}
