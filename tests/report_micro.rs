//! A micro run from samples and metadata made up here, as the workload
//! writes them under icount: every run of a kernel gives the same figures.
//! The report's first table is the Desnoyers 2006 micro-benchmarks', and the statistics of samples
//! without any variance render as figures, not NaN.

use markbench::guest::workloads::micro::{self, Loop, Marker};
use markbench::record::{BootRecord, KernelMeta, RunMeta, Sample, SampleWriter};
use markbench::stages::vm::accel::TimingDecision;
use std::path::{Path, PathBuf};

const VARIANTS: [&str; 2] = ["optimized", "generic"];
const SHIFT: u32 = 4;

/// Instructions per loop of (none, dormant, enabled), for the empty and the
/// memcpy loop, of each kernel. The no-marker loops are the same code in
/// both kernels; the generic marker's load, test and branch is two
/// instructions more than the optimized marker's NOP.
fn instructions(variant: &str) -> [[u64; 3]; 2] {
    match variant {
        "optimized" => [[3, 4, 20], [520, 521, 537]],
        _ => [[3, 6, 22], [520, 523, 539]],
    }
}

fn meta() -> RunMeta {
    let boots: Vec<BootRecord> = (0..2u32)
        .flat_map(|boot| VARIANTS.iter().map(move |v| (boot, *v)))
        .enumerate()
        .map(|(unit, (boot, variant))| BootRecord {
            unit,
            variant: variant.into(),
            cpus: 1,
            boot,
            wall_s: 40.0,
            samples: 30,
            console_log: format!("logs/unit-{unit:03}.log"),
            guest_kernel: "6.1.192".into(),
            guest_cpus: "0".into(),
            guest_version: String::new(),
            retryable: false,
            host_load_before: 0.5,
            host_load_after: 1.0,
            guest_seed: None,
            end: markbench::record::BootEnd::Completed,
            retried_after: None,
            hello_s: None,
            host_cpu: None,
        })
        .collect();
    RunMeta {
        suite: "micro-2006".into(),
        suite_path: "suites/micro-2006.toml".into(),
        complete: true,
        accel: markbench::stages::vm::Accel::Tcg,
        timing: TimingDecision {
            recorded_sentence: Some(format!("icount shift={SHIFT}")),
            ..TimingDecision::icount(SHIFT, "1 vCPU")
        },
        boots_per_variant: 2,
        iterations: 3,
        warmup: 1,
        cpus: vec![1],
        kernels: VARIANTS
            .iter()
            .map(|v| KernelMeta {
                variant: v.to_string(),
                kernel: format!("micro-{v}"),
                ..Default::default()
            })
            .collect(),
        boots,
        ..Default::default()
    }
}

/// The samples the workload gives: TSC figures (2^SHIFT per instruction),
/// a warm-up and three runs a boot, identical.
fn samples() -> Vec<Sample> {
    let tsc = |instructions: u64| (instructions << SHIFT) as f64;
    let mut out = Vec::new();
    for variant in VARIANTS {
        for boot in 0..2u32 {
            for iteration in 0..4u32 {
                for (l, [none, dormant, enabled]) in
                    Loop::ALL.into_iter().zip(instructions(variant))
                {
                    for (metric, value) in [
                        (micro::metric(l, Marker::None), tsc(none)),
                        (micro::metric(l, Marker::Dormant), tsc(dormant)),
                        (micro::metric(l, Marker::Enabled), tsc(enabled)),
                        (micro::marker_cost_metric(l), tsc(dormant) - tsc(none)),
                        (micro::probe_cost_metric(l), tsc(enabled) - tsc(dormant)),
                    ] {
                        out.push(Sample {
                            suite: "micro-2006".into(),
                            workload: "micro".into(),
                            metric,
                            unit: micro::UNIT.into(),
                            higher_is_better: false,
                            param: 10_000_000,
                            cpus: 1,
                            variant: variant.into(),
                            boot,
                            iteration,
                            warmup: iteration == 0,
                            value,
                            started_at: String::new(),
                        });
                    }
                }
            }
        }
    }
    out
}

fn run_dir(root: &Path) -> PathBuf {
    let dir = root.join("run");
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    meta().write(&dir).unwrap();
    let mut writer = SampleWriter::open(&dir).unwrap();
    for s in samples() {
        writer.append(&s).unwrap();
    }
    dir
}

/// The cells of the table row starting with `label`.
fn row<'a>(text: &'a str, label: &str) -> Vec<&'a str> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("| {label} |")))
        .unwrap_or_else(|| panic!("no row {label:?} in\n{text}"));
    line.split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn the_first_table_is_desnoyers_2006s_in_instructions() {
    let text = markbench::stages::report::render(&meta(), &samples(), Default::default());

    let first_table = text.lines().find(|l| l.starts_with('|')).unwrap();
    assert_eq!(
        first_table,
        "| loop | no marker [instructions/loop] | optimized [instructions/loop] | optimized: marker [instructions] | generic [instructions/loop] | generic: marker [instructions] |"
    );
    let fmt = |v: u64| format!("{v}.00");
    let cost = |v: u64| format!("+{v}.000");
    let [opt, gen] = [instructions("optimized"), instructions("generic")];
    for (i, label) in ["empty loop", "memcpy loop (4096 bytes)"]
        .iter()
        .enumerate()
    {
        assert_eq!(
            row(&text, label)[1..],
            [
                fmt(opt[i][0]),
                fmt(opt[i][1]),
                cost(opt[i][1] - opt[i][0]),
                fmt(gen[i][1]),
                cost(gen[i][1] - gen[i][0]),
            ],
            "{label}"
        );
        let enabled = format!("{label}, marker enabled, empty probe");
        assert_eq!(
            row(&text, &enabled)[1..],
            [
                "–".to_string(),
                fmt(opt[i][2]),
                cost(opt[i][2] - opt[i][1]),
                fmt(gen[i][2]),
                cost(gen[i][2] - gen[i][1]),
            ],
            "{enabled}"
        );
    }
    assert!(
        text.contains("the guest's TSC does not count cycles here"),
        "{text}"
    );
    assert!(text.contains("Under KVM the same suite gives the host CPU's TSC cycles"));
    assert!(
        text.contains("every run of a kernel gave the same figures"),
        "{text}"
    );
}

#[test]
fn a_run_directory_without_variance_renders_figures_and_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run_dir(tmp.path());
    let text = std::fs::read_to_string(markbench::stages::report::write(&dir).unwrap()).unwrap();
    assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    assert!(!text.contains("could not be computed"), "{text}");
    // Means that differ with no spread on either side: the p-value says so.
    assert!(!text.contains("0.0e0"), "{text}");
    assert!(
        text.contains("| 0 (no spread) | **regression** |"),
        "{text}"
    );
    let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert!(
        doc["comparisons"].as_array().is_some_and(|c| !c.is_empty()),
        "{summary}"
    );
}
