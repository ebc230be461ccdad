//! End to end, for real: builds (or reuses from the cache) both kernels,
//! boots each under QEMU, runs hackbench inside, and checks that samples and
//! a report come out. Installs missing prerequisites first, as `compare` does.

use assert_cmd::Command;
use markbench::guest::images::size::{KernelSizes, SizeRecord};
use std::path::Path;

fn markbench() -> Command {
    Command::cargo_bin("markbench").unwrap()
}

#[test]
fn compare_builds_boots_measures_and_reports() {
    let reports = tempfile::tempdir().unwrap();
    let out = markbench()
        .args(["compare", "--suite", "tests/fixtures/e2e.toml", "--reports"])
        .arg(reports.path())
        .timeout(std::time::Duration::from_secs(60 * 60))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "compare failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let runs: Vec<_> = std::fs::read_dir(reports.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.ends_with("latest"))
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let dir = &runs[0];
    assert!(dir.file_name().unwrap().to_string_lossy().ends_with("-e2e"));

    let samples = markbench::record::read_samples(dir).unwrap();
    // 2 variants × 2 boots × 1 point × (1 warm-up + 2 measured).
    assert_eq!(samples.len(), 12, "{samples:?}");
    for variant in ["markers-off", "markers-on"] {
        let measured: Vec<f64> = samples
            .iter()
            .filter(|s| s.variant == variant && !s.warmup)
            .map(|s| s.value)
            .collect();
        assert_eq!(measured.len(), 4);
        assert!(
            measured.iter().all(|v| *v > 0.0 && *v < 60.0),
            "{measured:?}"
        );
    }

    let meta = markbench::record::RunMeta::read(dir).unwrap();
    assert!(meta.complete);
    assert_eq!(meta.boots.len(), 4);
    assert!(meta.boots.iter().all(|b| b.ok()), "{:?}", meta.boots);
    // ABBA with seed 1: B A A B.
    let order: Vec<&str> = meta.boots.iter().map(|b| b.variant.as_str()).collect();
    assert_eq!(
        order,
        ["markers-on", "markers-off", "markers-off", "markers-on"]
    );
    assert!(["kvm", "tcg"].contains(&meta.accel.as_str()));
    assert!(
        meta.accel_reason.data().is_some(),
        "{:?}",
        meta.accel_reason
    );
    for b in &meta.boots {
        assert!(b.guest_kernel.starts_with("6.1"), "{b:?}");
        let log = std::fs::read_to_string(dir.join(&b.console_log)).unwrap();
        assert!(log.contains("Linux version"), "console log of {b:?}");
    }

    let diffconfig = std::fs::read_to_string(dir.join("diffconfig.txt")).unwrap();
    assert!(diffconfig.contains("+TRACEPOINTS y"), "{diffconfig}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("### hackbench: time [s], lower is better, 2 CPUs"),
        "{report}"
    );
    assert!(report.contains("| 2 | "), "{report}");
    assert!(
        report.contains(&format!("Accelerator: **{}**", meta.accel)),
        "{report}"
    );

    // The sizes, read from the real builds: tracing adds symbols, static-key
    // sites (the jump table, which only the linker tables show) and
    // kernel/trace/ring_buffer.o, which markers-off does not build.
    let sizes = SizeRecord::read(dir).unwrap().expect("sizes.toml");
    for k in &sizes.kernels {
        assert!(k.errors.is_empty(), "{:?}", k.errors);
        assert!(k.vmlinux.is_some_and(|v| v.text > 0), "{k:?}");
    }
    let (off, on) = (&sizes.kernels[0], &sizes.kernels[1]);
    assert_eq!(
        (off.variant.as_str(), on.variant.as_str()),
        ("markers-off", "markers-on")
    );
    let comparison = &sizes.comparisons[0];
    let bloat = comparison
        .bloat
        .as_ref()
        .unwrap_or_else(|| panic!("{:?}", comparison.bloat_error));
    assert!(bloat.add > 0 && bloat.net > 0, "{}", bloat.summary_line());
    let jump_table = |k: &KernelSizes| {
        k.tables
            .iter()
            .find(|t| t.name == "__jump_table")
            .map(|t| t.size)
    };
    assert!(jump_table(on) > jump_table(off), "{:?}", on.tables);
    assert_eq!(off.objects[0].size, None);
    assert!(on.objects[0].size.is_some_and(|b| b.text > 0));
    assert!(report.contains(&bloat.summary_line()), "{report}");
    assert!(report.contains("| `__jump_table` |"), "{report}");
    assert!(
        report.contains("| `kernel/trace/ring_buffer.o` | markers-off | *absent* |"),
        "{report}"
    );

    // Re-rendering from the directory gives the same report.
    markbench().arg("report").arg(dir).assert().success();
    assert_eq!(
        std::fs::read_to_string(dir.join("report.md")).unwrap(),
        report
    );
    assert!(Path::new(&dir.join("samples.csv")).is_file());
}

/// The kernel compile for real, under the default timing (icount under
/// TCG): the compile tree is prepared on the host (or found in the cache),
/// shipped in the initramfs with fixed file times, and Kbuild's recorded
/// commands for kernel/locking/ compile in each guest with the host's gcc,
/// twice, the reset between them bringing back the prepared state.
#[test]
fn kernel_compile_runs_gcc_in_the_guest_and_reports_real_user_and_sys() {
    let reports = tempfile::tempdir().unwrap();
    let out = markbench()
        .args([
            "compare",
            "--suite",
            "tests/fixtures/compile.toml",
            "--reports",
        ])
        .arg(reports.path())
        .timeout(std::time::Duration::from_secs(60 * 60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "compare failed\nstdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    let dir = std::fs::read_dir(reports.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && !p.ends_with("latest"))
        .unwrap();
    let meta = markbench::record::RunMeta::read(&dir).unwrap();
    assert!(meta.boots.iter().all(|b| b.ok()), "{:?}", meta.boots);
    if meta.accel == markbench::stages::vm::Accel::Tcg {
        assert!(meta.counts_instructions(), "{:?}", meta.timing);
    }
    let samples = markbench::record::read_samples(&dir).unwrap();
    // 2 variants × 1 boot × 2 compiles × (real, user, sys).
    assert_eq!(samples.len(), 12, "{samples:?}");
    for variant in ["markers-off", "markers-on"] {
        let value = |metric: &str, iteration: u32| {
            samples
                .iter()
                .find(|s| s.variant == variant && s.metric == metric && s.iteration == iteration)
                .unwrap_or_else(|| panic!("no {metric} sample of {variant}: {samples:?}"))
                .value
        };
        for iteration in [0, 1] {
            let (real, user, sys) = (
                value("real", iteration),
                value("user", iteration),
                value("sys", iteration),
            );
            // Nine objects cannot compile in under a second, even on KVM; user
            // time is CPU time of gcc and its children, so it is there too.
            assert!(real > 1.0 && user > 1.0 && sys > 0.0, "{real} {user} {sys}");
        }
        // The second compile starts from the state the first did: the same
        // objects, so about the same time (not a partial or empty compile).
        let ratio = value("real", 1) / value("real", 0);
        assert!((0.8..1.25).contains(&ratio), "{variant}: {samples:?}");
        assert!(samples
            .iter()
            .all(|s| s.workload == "kernel-compile" && s.unit == "s" && !s.higher_is_better));
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert_eq!(
        report.contains("tick accounting"),
        meta.counts_instructions(),
        "{report}"
    );
    for metric in ["real", "user", "sys"] {
        assert!(
            report.contains(&format!(
                "### kernel-compile: {metric} [s], lower is better"
            )),
            "{report}"
        );
    }
}
