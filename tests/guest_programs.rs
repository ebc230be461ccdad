//! A user's own program, file and metrics, and perf bench, in real guests:
//! a C program compiled here with gcc is carried into the image with its
//! libraries, reads a carried file, and prints two figures that regular
//! expressions of the suite read; perf bench sched pipe and syscall basic
//! run beside it and their own output is parsed. One boot of each of the
//! quick pair's kernels (no other kernel is built). And the bad inputs of
//! such a suite, refused before anything is built.

use assert_cmd::Command;
use std::path::Path;

fn markbench() -> Command {
    Command::cargo_bin("markbench").unwrap()
}

/// Reads the carried file's lines, then times `{param}` getppid() calls.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    FILE *f = fopen("/data/input.txt", "r");
    if (!f) { perror("/data/input.txt"); return 1; }
    int lines = 0, c;
    while ((c = fgetc(f)) != EOF) lines += c == '\n';
    long calls = argc > 1 ? atol(argv[1]) : 1000;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < calls; i++) getppid();
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    printf("lines read: %d\nns per call: %.3f\n", lines, ns / calls);
    return 0;
}
"#;

/// A suite running `program` (its input file beside the suite), then `extra`.
fn suite(program: &Path, extra: &str) -> String {
    format!(
        r#"name = "guest-programs"
description = "a user's program and perf bench, 1 boot per variant"
boots = 1
iterations = 2
warmup = 0
cpus = [1]
memory_mib = 512
boot_timeout_s = 900
seed = 1

[[variant]]
name = "markers-off"
kernel = "markers-off"

[[variant]]
name = "markers-on"
kernel = "markers-on"

[[workload]]
kind = "command"
name = "mine"
argv = ["{program}", "{{param}}"]
params = [20000]
programs = ["{program}"]
files = [{{ from = "input.txt", to = "/data/input.txt" }}]

[[workload.metric]]
name = "lines"
pattern = 'lines read: (\d+)'
unit = "lines"
higher_is_better = true

[[workload.metric]]
name = "ns-per-call"
pattern = 'ns per call: ([0-9.]+)'
unit = "ns"
higher_is_better = false
{extra}"#,
        program = program.display()
    )
}

/// Compiles the program into `dir` with the host's gcc and writes its input.
fn program_in(dir: &Path) -> std::path::PathBuf {
    std::fs::write(dir.join("prog.c"), PROGRAM).unwrap();
    std::fs::write(dir.join("input.txt"), "one\ntwo\nthree\n").unwrap();
    let program = dir.join("prog");
    let status = std::process::Command::new("gcc")
        .arg("-O2")
        .arg("-o")
        .arg(&program)
        .arg(dir.join("prog.c"))
        .status()
        .expect("gcc");
    assert!(status.success());
    program
}

#[test]
fn a_users_program_and_perf_bench_run_in_the_guest_and_each_metric_is_a_point() {
    let dir = tempfile::tempdir().unwrap();
    let program = program_in(dir.path());
    let perf = r#"
[[workload]]
kind = "perf-bench"
name = "sched-pipe"
bench = "sched pipe"
params = [2000]

[[workload]]
kind = "perf-bench"
name = "syscall-basic"
bench = "syscall basic"
params = [20000]
"#;
    let suite_path = dir.path().join("suite.toml");
    std::fs::write(&suite_path, suite(&program, perf)).unwrap();
    let reports = dir.path().join("reports");
    let out = markbench()
        .args(["compare", "--suite"])
        .arg(&suite_path)
        .arg("--reports")
        .arg(&reports)
        .timeout(std::time::Duration::from_secs(60 * 60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "compare failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = std::fs::read_dir(&reports)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && !p.ends_with("latest"))
        .unwrap();
    let meta = markbench::record::RunMeta::read(&run).unwrap();
    assert!(meta.boots.iter().all(|b| b.ok()), "{:?}", meta.boots);

    let samples = markbench::record::read_samples(&run).unwrap();
    let of = |workload: &str, metric: &str| -> Vec<f64> {
        samples
            .iter()
            .filter(|s| s.workload == workload && s.metric == metric)
            .map(|s| s.value)
            .collect()
    };
    // 2 variants × 1 boot × 2 runs of each point.
    assert_eq!(of("command:mine", "lines"), [3.0; 4], "{samples:?}");
    let per_call = of("command:mine", "ns-per-call");
    assert_eq!(per_call.len(), 4, "{samples:?}");
    assert!(per_call.iter().all(|v| *v > 0.0), "{per_call:?}");
    for bench in ["perf-bench:sched-pipe", "perf-bench:syscall-basic"] {
        let usecs = of(bench, "usecs-per-op");
        assert_eq!(usecs.len(), 4, "{bench}: {samples:?}");
        assert!(usecs.iter().all(|v| *v > 0.0), "{bench}: {usecs:?}");
    }
    assert!(!samples.iter().any(|s| s.metric == "time"), "{samples:?}");

    // Each metric is a point of its own in the report, with the unit the
    // suite gave it.
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    for heading in [
        "### command:mine: lines [lines], higher is better",
        "### command:mine: ns-per-call [ns], lower is better",
        "### perf-bench:sched-pipe: usecs-per-op [µs], lower is better",
        "### perf-bench:syscall-basic: usecs-per-op [µs], lower is better",
    ] {
        assert!(report.contains(heading), "no {heading:?} in\n{report}");
    }
    assert!(report.contains("perf bench sched pipe -l 2000"), "{report}");

    // The image as recorded: perf from its package, the user's program by
    // its hash alone, the carried file.
    let image = meta.guest_image.expect("guest_image in meta.toml");
    let entry = |path: &str| {
        image
            .files
            .iter()
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("no {path} in {:?}", image.files))
    };
    let perf = entry("/usr/bin/perf");
    assert_eq!(perf.package, "linux-perf", "{perf:?}");
    assert!(!perf.version.is_empty(), "{perf:?}");
    assert_eq!(entry("/usr/bin/hackbench").package, "rt-tests");
    let mine = entry(&program.display().to_string());
    assert_eq!((mine.kind.as_str(), mine.package.as_str()), ("program", ""));
    assert_eq!(
        entry(&dir.path().join("input.txt").display().to_string()).kind,
        "file"
    );
    assert!(image.files.iter().any(|f| f.kind == "library"
        && f.path.contains("libc.so")
        && f.package.starts_with("libc6")));
    assert!(
        report.contains(&format!("Guest image: sha256 {}", image.sha256.short())),
        "{report}"
    );
}

/// The bad inputs of such a suite stop the run at their line, exit 2,
/// before anything is built.
#[test]
fn a_missing_program_or_file_and_a_pattern_without_its_group_are_refused_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let program = program_in(dir.path());
    let refused = |text: String, line: usize, says: &str| {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let out = markbench()
            .args(["compare", "--dry-run", "--suite"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let at = format!("{}:{line}:", path.display());
        assert!(
            stderr.contains(&at) && stderr.contains(says),
            "{at} {says}: {stderr}"
        );
    };
    let good = suite(&program, "");
    let line_of =
        |text: &str, needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    // The program is named in argv too: the error points at `programs`.
    let missing = good.replace(&program.display().to_string(), "/usr/bin/no-such-benchmark");
    refused(
        missing.clone(),
        line_of(&missing, "programs = "),
        "/usr/bin/no-such-benchmark does not exist",
    );
    let no_file = good.replace("from = \"input.txt\"", "from = \"absent.bin\"");
    refused(
        no_file.clone(),
        line_of(&no_file, "absent.bin"),
        "is not a file",
    );
    let no_group = good.replace(r"'lines read: (\d+)'", r"'lines read: \d+'");
    refused(
        no_group.clone(),
        line_of(&no_group, r"lines read: \d+"),
        "has 0 capture groups",
    );
    let outside = good.replace("to = \"/data/input.txt\"", "to = \"/proc/input.txt\"");
    refused(
        outside.clone(),
        line_of(&outside, "/proc/input.txt"),
        "outside the image",
    );
}
