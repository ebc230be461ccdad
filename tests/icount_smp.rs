//! SMP guests under instruction counting, for real: a 2-vCPU guest boots
//! under `-icount`, sees both CPUs, and a run repeated with the same seed
//! gives the same samples to the nanosecond, its pair of boots booted one
//! at a time or side by side. The boots of more than one vCPU under icount
//! run on markbench's own QEMU (built into the cache's `qemu-builds/`)
//! with each vCPU's turn capped; the run's `meta.toml` must say so, or the
//! test would pass on the host's QEMU and prove nothing about the cap.

mod real;

#[test]
fn two_vcpu_icount_guests_see_both_cpus_and_repeat_exactly_with_their_seeds() {
    let args = ["--suite", "tests/fixtures/smp-icount.toml", "--aa"];
    let (_first, a) = real::compare(&[&args[..], &["--jobs", "1"]].concat());
    let (_second, b) = real::compare(&[&args[..], &["--jobs", "2"]].concat());
    let dirs = [a, b];
    let mut values = Vec::new();
    for (dir, jobs) in dirs.iter().zip([1, 2]) {
        let meta = markbench::record::RunMeta::read(dir).unwrap();
        assert_eq!(meta.slots.as_ref().map(|s| s.jobs), Some(jobs));
        assert_eq!(
            meta.timing_mode().to_string(),
            "icount shift=4",
            "{}",
            meta.timing_sentence()
        );
        assert!(
            meta.timing_sentence()
                .contains("in turn on one host thread"),
            "{}",
            meta.timing_sentence()
        );
        assert!(!meta.host.qemu_path.is_empty(), "{:?}", meta.host);
        assert_ran_on_markbench_qemu_with_the_turn_cap(&meta, dir);
        assert_eq!(meta.boots.len(), 2);
        for b in &meta.boots {
            assert!(b.ok(), "{b:?}");
            assert_eq!(b.guest_cpus, "0-1", "{b:?}");
            assert!(b.guest_seed.is_some(), "{b:?}");
        }
        let samples = markbench::record::read_samples(dir).unwrap();
        // 2 sides × 1 boot × (1 warm-up + 2 measured).
        assert_eq!(samples.len(), 6, "{samples:?}");
        // In the order of the boots: side by side their rows interleave.
        let mut rows: Vec<_> = samples
            .iter()
            .map(|s| (s.variant.clone(), s.iteration, s.value))
            .collect();
        rows.sort_by(|x, y| (&x.0, x.1).cmp(&(&y.0, y.1)));
        values.push(rows);
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(report.contains("qemu-system-x86_64"), "{report}");
    }
    assert_eq!(
        values[0], values[1],
        "the same seeds gave other samples, one boot at a time and two side by side"
    );
    // The two sides' boots had seeds of their own: not the same draw twice.
    let side = |name: &str| -> Vec<f64> {
        values[0]
            .iter()
            .filter(|(v, _, _)| v == name)
            .map(|(_, _, x)| *x)
            .collect()
    };
    assert_ne!(side("markers-off"), side("markers-off-again"));
}

/// The run's SMP boots ran on markbench's own QEMU, a build in the cache,
/// not the host's, with the suite's turn cap, and the report says so.
fn assert_ran_on_markbench_qemu_with_the_turn_cap(
    meta: &markbench::record::RunMeta,
    dir: &std::path::Path,
) {
    let smp = meta
        .smp_qemu
        .as_ref()
        .expect("2-vCPU icount boots run on markbench's own QEMU");
    assert!(
        std::path::Path::new(&smp.path)
            .components()
            .any(|c| c.as_os_str() == "qemu-builds"),
        "not a build of markbench's: {smp:?}"
    );
    assert_ne!(smp.path, meta.host.qemu_path, "{smp:?}");
    assert!(!smp.patches.is_empty(), "{smp:?}");
    // The fixture leaves the turn at the suite's default.
    assert_eq!(
        smp.turn,
        markbench::stages::suite::DEFAULT_SMP_TURN,
        "{smp:?}"
    );
    assert!(smp.turn > 0);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains(&format!(
            "each vCPU's turn at most {} instructions",
            smp.turn
        )),
        "{report}"
    );
}
