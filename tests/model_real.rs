//! The cycle model for real: tests/fixtures/cycle-model.toml, A/A, booted
//! under icount once with `--model cycles` and once without. Guest time
//! must be the same sample for sample (the plugin does not change what the
//! guest measures), every timed run must have the model's counts, and
//! coherence misses need a second vCPU. Needs the markers-off kernel in the
//! cache and a QEMU with plugin support (Debian's 10.0).

mod real;

use markbench::base::cycle_model::{is_model_metric, METRICS, PART_METRICS, SMP_METRICS};
use markbench::record::{read_samples, Sample};

fn value(samples: &[Sample], of: &Sample, metric: &str) -> f64 {
    samples
        .iter()
        .find(|s| {
            s.boot_key() == of.boot_key() && s.iteration == of.iteration && s.metric == metric
        })
        .unwrap_or_else(|| panic!("no {metric} beside {of:?}"))
        .value
}

#[test]
fn the_model_counts_every_run_and_leaves_guest_time_alone() {
    let args = ["--suite", "tests/fixtures/cycle-model.toml", "--aa"];
    let (_with_reports, with) = real::compare(&[&args[..], &["--model", "cycles"]].concat());
    let (_plain_reports, plain) = real::compare(&args);

    let model = read_samples(&with).unwrap();
    // In the order of the boots: the rows of boots side by side interleave.
    let times = |samples: &[Sample]| -> Vec<(String, u32, u32, u32, f64)> {
        let mut times: Vec<_> = samples
            .iter()
            .filter(|s| !is_model_metric(&s.metric))
            .map(|s| (s.variant.clone(), s.cpus, s.boot, s.iteration, s.value))
            .collect();
        times.sort_by(|a, b| (&a.0, a.1, a.2, a.3).cmp(&(&b.0, b.1, b.2, b.3)));
        times
    };
    let plain_samples = read_samples(&plain).unwrap();
    assert!(!times(&plain_samples).is_empty());
    assert_eq!(times(&model), times(&plain_samples), "guest time moved");
    assert!(plain_samples.iter().all(|s| !is_model_metric(&s.metric)));

    let runs: Vec<&Sample> = model.iter().filter(|s| s.metric == "time").collect();
    // Several vCPUs add the reads for ownership; the parts on by default
    // (string moves, the prefetcher) add their counts to every run.
    let smp_runs = runs.iter().filter(|r| r.cpus > 1).count();
    assert!(smp_runs > 0);
    assert_eq!(
        model.len(),
        runs.len() * (1 + METRICS.len() + PART_METRICS.len()) + smp_runs * SMP_METRICS.len()
    );
    // Its 2-vCPU boots ran on markbench's own QEMU, which the which-vCPU
    // trial found right.
    let meta = markbench::record::RunMeta::read(&with).unwrap();
    let smp = meta.smp_qemu.as_ref().expect("the SMP boots' QEMU");
    assert!(
        smp.which_vcpu
            .as_ref()
            .is_some_and(|d| d.to_string().contains("the running vCPU")),
        "{smp:?}"
    );
    for run in runs {
        let v = |m: &str| value(&model, run, m);
        let instructions = v("instructions");
        // icount: one instruction per 2^4 ns of guest time, blocks counted
        // whole (a fault mid-block counts its rest twice).
        let agreement = instructions * 16.0 / (run.value * 1e9) - 1.0;
        assert!(agreement.abs() < 0.01, "{agreement} {run:?}");
        // Each block costs at least a cycle and at most one an
        // instruction (four issued a cycle, chains longer than the
        // block's width are rare); the misses come on top.
        let base = v("base-cycles");
        assert!(
            base >= instructions / 4.0 && base < instructions,
            "base cycles {base}, instructions {instructions}"
        );
        assert!(v("estimated-cycles") > base);
        assert!(v("l1d-misses") > 0.0 && v("l1i-misses") > 0.0);
        assert!(v("l2-misses") <= v("l1d-misses") + v("l1i-misses"));
        assert!(v("llc-misses") <= v("l2-misses"));
        assert!(v("branch-mispredicts") > 0.0);
        // The kernel copies to and from user space and clears pages with
        // rep movs/stos (-cpu max has fast strings), each element an
        // iteration; and walks pages the prefetcher follows.
        assert!(v("string-iterations") > v("string-instructions"));
        assert!(v("string-instructions") > 0.0 && v("string-bytes") > 0.0);
        assert!(v("l2-prefetches") > 0.0);
        if run.cpus == 1 {
            assert_eq!(
                v("coherence-misses"),
                0.0,
                "one vCPU has no one to share with"
            );
        } else {
            assert!(
                v("coherence-misses") > 0.0,
                "hackbench on 2 vCPUs shares lines"
            );
            assert!(v("rfo-misses") > 0.0, "and writes lines the other holds");
        }
    }
    let report = std::fs::read_to_string(with.join("report.md")).unwrap();
    assert!(report.contains("Cycle model: every boot ran under"));
    assert!(report.contains("### hackbench: estimated-cycles [cycles]"));
}
