//! The report of a fixed set of samples, pinned as a snapshot: any change to
//! the layout, rounding or statistics shows up as a diff to review
//! (`cargo insta review`, or INSTA_UPDATE=always to accept).

mod common;

use markbench::guest::workloads::WorkloadSpec;
use markbench::record::{BootRecord, HostInfo, KernelMeta, RunMeta, Sample};
use markbench::stages::report;

fn meta() -> RunMeta {
    let kernel = |variant: &str, cmdline: &str| KernelMeta {
        variant: variant.into(),
        kernel: "markers-on".into(),
        cmdline: cmdline.into(),
        source: "tarball linux-source-6.1.tar.xz sha256 cacdc383".into(),
        origin: None,
        build_key: "c5b47038b67c0890aaaa".into(),
        config_sha256: "66feb4fb1449ead4bbbb".into(),
        compiler: "gcc 12.2.0".into(),
        fragments: [
            ("base.config", "d1bc0d402918dcf6cccc"),
            ("markers-on.config", "81c08259d2a1c341dddd"),
        ]
        .map(|(f, h)| (f.to_string(), h.into()))
        .into(),
        fragment_sources: [
            ("base.config", "built in"),
            (
                "markers-on.config",
                "/home/dev/bench/vm-images/markers-on.config",
            ),
        ]
        .map(|(f, s)| (f.to_string(), s.to_string()))
        .into(),
        ..Default::default()
    };
    let boot = |unit: usize, variant: &str, boot: u32| BootRecord {
        unit,
        variant: variant.into(),
        cpus: 2,
        boot,
        wall_s: 30.0,
        samples: 6,
        console_log: format!("logs/unit-{unit:03}.log"),
        guest_kernel: "6.1.192".into(),
        guest_cpus: "0-1".into(),
        guest_version: String::new(),
        retryable: false,
        host_load_before: 0.2,
        host_load_after: 1.9,
        guest_seed: None,
        end: markbench::record::BootEnd::Completed,
        retried_after: None,
        hello_s: None,
        host_cpu: None,
    };
    RunMeta {
        suite: "snapshot".into(),
        suite_path: "suites/snapshot.toml".into(),
        suite_sha256: "0123456789abcdef0123".into(),
        git_revision: "abc1234".into(),
        markbench_version: "0.1.0".into(),
        started_at: "2026-11-30T00:00:00Z".into(),
        wall_s: 240.0,
        complete: true,
        host: HostInfo {
            hostname: "host".into(),
            cpu_model: "Test CPU".into(),
            cores: 2,
            memory_gib: 24.0,
            kernel_release: "6.1.0".into(),
            qemu_version: "QEMU emulator version 7.2.22".into(),
            qemu_path: String::new(),
        },
        accel: markbench::stages::vm::Accel::Tcg,
        accel_reason: "asked for".into(),
        // The sentence of a run from before it was derived.
        timing: markbench::record::TimingDecision {
            recorded_sentence: Some("wall".into()),
            ..Default::default()
        },
        seed: 3,
        margin: 0.02,
        boots_per_variant: 4,
        iterations: 3,
        warmup: 1,
        cpus: vec![2],
        memory_mib: 512,
        kernels: vec![
            kernel("dormant", ""),
            kernel("tracing-active", "trace_event=sched:*"),
        ],
        boots: (0..8)
            .map(|u| {
                boot(
                    u,
                    if u % 4 == 0 || u % 4 == 3 {
                        "dormant"
                    } else {
                        "tracing-active"
                    },
                    (u / 2) as u32,
                )
            })
            .collect(),
        workloads: vec![markbench::record::Recorded::Data(snapshot_workload())],
        ..Default::default()
    }
}

/// The workload the samples below come from.
fn snapshot_workload() -> WorkloadSpec {
    toml::from_str("kind = \"hackbench\"\nparams = [2, 4]\nloops = 20\n").unwrap()
}

/// Deterministic samples: the candidate is 10% slower at 2 groups, equal at 4.
fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    for (variant, slow) in [("dormant", 1.0), ("tracing-active", 1.1)] {
        for boot in 0..4u32 {
            for param in [2u64, 4] {
                for iteration in 0..4u32 {
                    let factor = if param == 2 { slow } else { 1.0 };
                    // Small, fixed boot-to-boot and run-to-run wobble.
                    let wobble = 1.0 + 0.004 * ((boot * 7 + iteration * 3) % 5) as f64 - 0.008;
                    out.push(Sample {
                        suite: "snapshot".into(),
                        workload: "hackbench".into(),
                        metric: "time".into(),
                        unit: "s".into(),
                        higher_is_better: false,
                        param,
                        cpus: 2,
                        variant: variant.into(),
                        boot,
                        iteration,
                        warmup: iteration == 0,
                        value: param as f64 * 0.5 * factor * wobble,
                        started_at: String::new(),
                    });
                }
            }
        }
    }
    out
}

#[test]
fn report_of_fixed_samples() {
    let sizes = common::captured_sizes(["dormant", "tracing-active"]);
    let text = report::render(
        &meta(),
        &samples(),
        report::RunFiles {
            diffconfig: Some(" FTRACE n -> y\n+TRACEPOINTS y\n"),
            sizes: Some(&sizes),
            ..Default::default()
        },
    );
    insta::assert_snapshot!(text);
}

/// A run directory written before workloads were recorded as text holds
/// each as JSON: it reads, and so renders, as a new one does.
#[test]
fn a_run_that_recorded_its_workloads_as_json_renders_them_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = meta();
    // Written before the run format was numbered: format 0.
    old.format = markbench::record::RunFormat(0);
    let json = serde_json::to_string(&snapshot_workload()).unwrap();
    assert!(json.starts_with('{'), "{json}");
    old.workloads = vec![json.into()];
    old.write(dir.path()).unwrap();
    let read = RunMeta::read(dir.path()).unwrap();
    assert_eq!(read.workloads, meta().workloads);
    let render = |m: &RunMeta| report::render(m, &samples(), Default::default());
    assert_eq!(render(&read), render(&meta()));
}

#[test]
fn a_busy_host_is_a_warning_under_wall_time_and_a_note_under_icount() {
    let mut busy = meta();
    for b in &mut busy.boots {
        b.host_load_before = 1.5;
    }
    let wall = report::render(&busy, &samples(), Default::default());
    assert!(
        wall.contains("**8 of 8 boots started while the host was busy**")
            && wall.contains("their timings carry the host's noise"),
        "{wall}"
    );
    busy.timing = markbench::record::TimingDecision {
        recorded_sentence: Some(
            "icount (shift=4, sleep=off): guest time counts executed instructions".into(),
        ),
        ..markbench::record::TimingDecision::icount(4, "auto")
    };
    let icount = report::render(&busy, &samples(), Default::default());
    assert!(
        icount.contains("8 of 8 boots started while the host was busy")
            && icount.contains("does not enter the figures")
            && !icount.contains("their timings carry the host's noise"),
        "{icount}"
    );
}

#[test]
fn summary_json_has_the_sizes_or_null() {
    let (meta, samples) = (meta(), samples());
    let analysis = report::analyse(&meta, &samples);
    let sizes = common::captured_sizes(["dormant", "tracing-active"]);
    let doc: serde_json::Value =
        serde_json::from_str(&report::summary_json(&meta, &analysis, Some(&sizes)).unwrap())
            .unwrap();
    let on = &sizes.kernels[1];
    assert_eq!(doc["sizes"]["kernel"][1]["variant"], "tracing-active");
    assert_eq!(
        doc["sizes"]["kernel"][1]["vmlinux"]["text"],
        on.vmlinux.unwrap().text
    );
    let bloat = sizes.comparisons[0].bloat.as_ref().unwrap();
    assert_eq!(
        doc["sizes"]["comparison"][0]["bloat"]["rows"]
            .as_array()
            .unwrap()
            .len(),
        bloat.rows.len()
    );
    let doc: serde_json::Value =
        serde_json::from_str(&report::summary_json(&meta, &analysis, None).unwrap()).unwrap();
    assert!(doc["sizes"].is_null());
}
