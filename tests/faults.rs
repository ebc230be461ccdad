//! Faults, for real: a guest whose kernel panics (sysrq), one that hangs past
//! its deadline, one whose workload fails, and one whose workload exits
//! leaving processes behind. Each is detected with a clear
//! reason, recorded in the metadata and the report, the other boot of the run
//! still completes, and `compare` exits 3.
//!
//! Both sides boot the same markers-off kernel (cached by the end-to-end
//! test or built here); the candidate's command line tells the guest command
//! to misbehave.

use assert_cmd::Command;
use markbench::record::RunMeta;
use std::path::{Path, PathBuf};

fn suite(dir: &Path, name: &str, script: &str, timeout_s: u64) -> PathBuf {
    let text = format!(
        r#"
name = "{name}"
boots = 1
iterations = 2
warmup = 0
cpus = [1]
memory_mib = 256
boot_timeout_s = {timeout_s}
[[variant]]
name = "healthy"
kernel = "markers-off"
[[variant]]
name = "faulty"
kernel = "markers-off"
cmdline = "markbench_fault"
[[workload]]
kind = "command"
params = [1]
argv = ["/bin/sh", "-c", "{script}"]
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs compare on a suite; returns the run's metadata, report and exit code.
fn compare(suite: &Path, reports: &Path) -> (RunMeta, String, i32) {
    let out = Command::cargo_bin("markbench")
        .unwrap()
        .args(["compare", "--accel", "tcg", "--suite"])
        .arg(suite)
        .arg("--reports")
        .arg(reports)
        .timeout(std::time::Duration::from_secs(60 * 60))
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let dir = std::fs::read_dir(reports)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.ends_with("latest"))
        .max()
        .unwrap_or_else(|| panic!("no run directory; stderr:\n{stderr}"));
    let meta = RunMeta::read(&dir).unwrap();
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    (meta, report, code)
}

const FAULTY: &str = "/bin/busybox grep -q markbench_fault /proc/cmdline";

#[test]
fn panics_hangs_and_failing_workloads_are_detected_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");

    let cases = [
        (
            "panic",
            format!("if {FAULTY}; then echo c > /proc/sysrq-trigger; fi; true"),
            120,
            "kernel panic: ",
        ),
        (
            "hang",
            // A busy loop: under icount (sleep=off) an idle `sleep` would pass instantly.
            format!("if {FAULTY}; then while :; do :; done; fi; true"),
            60,
            "timed out after 60 s",
        ),
        (
            "fail",
            format!("if {FAULTY}; then exit 3; fi; true"),
            120,
            "exited with status 3",
        ),
        (
            // The command exits but leaves a busy child holding its output
            // (as hackbench does when a fork fails): a failed run, at once,
            // not a hang until the deadline.
            "orphans",
            format!("if {FAULTY}; then (while :; do :; done) & fi; true"),
            600,
            "were still running (killed)",
        ),
    ];
    for (name, script, timeout, reason) in cases {
        let (meta, report, code) = compare(&suite(dir.path(), name, &script, timeout), &reports);
        assert_eq!(code, 3, "{name}: exit code");
        assert!(meta.complete, "{name}");
        assert_eq!(meta.boots.len(), 2, "{name}");
        let healthy = meta.boots.iter().find(|b| b.variant == "healthy").unwrap();
        let faulty = meta.boots.iter().find(|b| b.variant == "faulty").unwrap();
        assert!(healthy.ok(), "{name}: {healthy:?}");
        assert_eq!(healthy.samples, 2, "{name}");
        assert!(!faulty.ok(), "{name}: {faulty:?}");
        assert!(
            faulty.status().contains(reason),
            "{name}: {}",
            faulty.status()
        );
        assert!(
            report.contains(&format!("**{}", faulty.status().split(':').next().unwrap())),
            "{name}: {report}"
        );
        if name == "panic" {
            assert!(faulty.status().contains("sysrq"), "{}", faulty.status());
        }
    }
}

/// SIGKILL the orchestrator in the middle of a run, then `--resume`: the
/// finished boots are kept, the interrupted one runs again, and no sample is
/// lost or duplicated.
#[test]
fn a_run_killed_with_sigkill_resumes_without_losing_or_duplicating_samples() {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    let suite = dir.path().join("killed.toml");
    std::fs::write(
        &suite,
        r#"
name = "killed"
boots = 2
iterations = 3
warmup = 0
cpus = [1]
memory_mib = 256
boot_timeout_s = 300
[[variant]]
name = "a"
kernel = "markers-off"
[[variant]]
name = "b"
kernel = "markers-off"
[[workload]]
kind = "command"
params = [1]
argv = ["/bin/sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"]
"#,
    )
    .unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("markbench"))
        .args(["compare", "--accel", "tcg", "--suite"])
        .arg(&suite)
        .arg("--reports")
        .arg(&reports)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first boot is recorded and the second has begun measuring.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1800);
    let run = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never got going"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        let run = std::fs::read_dir(&reports)
            .ok()
            .and_then(|mut d| d.find_map(|e| e.ok().map(|e| e.path()).filter(|p| p.is_dir())));
        if let Some(run) = run {
            let boots = RunMeta::read(&run).map(|m| m.boots.len()).unwrap_or(0);
            let samples = markbench::record::read_samples(&run)
                .map(|s| s.len())
                .unwrap_or(0);
            if (1..4).contains(&boots) && samples > 3 * boots {
                break run;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = RunMeta::read(&run).unwrap();
    assert!(!before.complete);
    let done = before.boots.len();
    assert!((1..4).contains(&done), "{done}");

    let out = Command::cargo_bin("markbench")
        .unwrap()
        .args(["compare", "--resume"])
        .arg(&run)
        .timeout(std::time::Duration::from_secs(60 * 60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("resuming: {done} of 4 boots already done")),
        "{stderr}"
    );
    let meta = RunMeta::read(&run).unwrap();
    assert!(meta.complete);
    assert_eq!(meta.boots.len(), 4);
    // Two boots run side by side, so the first recorded need not be unit 0:
    // each finished boot is found again by its unit.
    for finished in &before.boots {
        let kept = meta.boots.iter().find(|b| b.unit == finished.unit);
        assert_eq!(kept, Some(finished), "the finished boot is kept as it was");
    }
    let samples = markbench::record::read_samples(&run).unwrap();
    assert_eq!(samples.len(), 4 * 3);
    let mut keys: Vec<_> = samples
        .iter()
        .map(|s| (s.variant.clone(), s.boot, s.iteration))
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 12, "no duplicated sample");
}

/// A plugin QEMU cannot load ends the boot as exactly that, before any
/// guest runs (a profiled run stops on it rather than retrying).
#[test]
fn a_plugin_qemu_cannot_load_is_its_own_ending() {
    use markbench::stages::vm::{BootEnd, BootRequest, PluginLoad, Runner};
    let Ok(qemu) = markbench::stages::vm::qemu::QemuBinary::locate(None) else {
        panic!("no qemu-system-x86_64: run `cargo run -- setup`");
    };
    let tmp = tempfile::tempdir().unwrap();
    let kernel = tmp.path().join("bzImage");
    std::fs::write(&kernel, b"not a kernel").unwrap();
    let library = tmp.path().join("missing-plugin.so");
    let request = BootRequest {
        kernel: kernel.clone(),
        initrd: kernel,
        extra_cmdline: String::new(),
        cpus: 1,
        memory_mib: 128,
        accel: markbench::stages::vm::Accel::Tcg,
        icount_shift: Some(4),
        guest_seed: Some(1),
        deadline: std::time::Duration::from_secs(60),
        console_log: tmp.path().join("console.log"),
        plugin: Some(PluginLoad {
            library: library.clone(),
            output: tmp.path().join("raw.tsv"),
            args: Vec::new(),
        }),
        host_cpu: None,
        qemu: None,
        rr_turn: None,
        arch: Default::default(),
    };
    let outcome = markbench::stages::vm::qemu::QemuRunner::new(&qemu).boot(&request, &mut |_| {});
    match &outcome.end {
        BootEnd::PluginFailed { detail } => {
            assert!(detail.contains(&*library.to_string_lossy()), "{detail}")
        }
        other => panic!("expected PluginFailed, got {other:?}"),
    }
}
