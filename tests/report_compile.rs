//! A kernel-compile run's report from made-up samples: under icount its
//! tables say what real, user and sys count (the guest's instructions and
//! tick accounting, not a CPU's seconds); under wall time they say nothing
//! of the kind.

use markbench::record::{KernelMeta, RunMeta, Sample};
use markbench::stages::vm::accel::TimingDecision;

const VARIANTS: [&str; 2] = ["markers-off", "markers-on"];

fn meta(icount_shift: Option<u32>) -> RunMeta {
    RunMeta {
        suite: "x86-2006".into(),
        suite_path: "suites/x86-2006.toml".into(),
        complete: true,
        accel: markbench::stages::vm::Accel::Tcg,
        timing: TimingDecision {
            icount_shift,
            reason: "made up".into(),
            recorded_sentence: Some(match icount_shift {
                Some(shift) => format!("icount shift={shift}"),
                None => "wall".into(),
            }),
        },
        boots_per_variant: 2,
        iterations: 1,
        warmup: 0,
        cpus: vec![1],
        kernels: VARIANTS
            .iter()
            .map(|v| KernelMeta {
                variant: v.to_string(),
                kernel: v.to_string(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    for (v, variant) in VARIANTS.iter().enumerate() {
        for boot in 0..2u32 {
            for (metric, value) in [("real", 40.0), ("user", 30.0), ("sys", 8.0)] {
                out.push(Sample {
                    suite: "x86-2006".into(),
                    workload: "kernel-compile".into(),
                    metric: metric.into(),
                    unit: "s".into(),
                    higher_is_better: false,
                    param: 1,
                    cpus: 1,
                    variant: variant.to_string(),
                    boot,
                    iteration: 0,
                    warmup: false,
                    value: value * (1.0 + 0.01 * v as f64) + 0.1 * boot as f64,
                    started_at: String::new(),
                });
            }
        }
    }
    out
}

#[test]
fn under_icount_the_compile_tables_say_what_real_user_and_sys_count() {
    let text = markbench::stages::report::render(&meta(Some(4)), &samples(), Default::default());
    for metric in ["real", "user", "sys"] {
        assert!(
            text.contains(&format!(
                "### kernel-compile: {metric} [s], lower is better"
            )),
            "{text}"
        );
    }
    let note = "`-icount shift=4`: 16 ns an instruction";
    assert_eq!(text.matches(note).count(), 1, "{text}");
    assert!(text.contains("tick accounting"), "{text}");
    // The note comes with the compile's first table, before its rows.
    let first_table = text.find("### kernel-compile:").unwrap();
    let first_row = first_table + text[first_table..].find("\n|").unwrap();
    let at = text.find(note).unwrap();
    assert!(first_table < at && at < first_row, "{text}");
}

#[test]
fn under_wall_time_the_compile_tables_carry_no_icount_note() {
    let text = markbench::stages::report::render(&meta(None), &samples(), Default::default());
    assert!(text.contains("### kernel-compile: real [s]"), "{text}");
    assert!(!text.contains("tick accounting"), "{text}");
}
