//! Profiles for real: an A/A run of tests/fixtures/profile.toml boots the
//! baseline kernel under icount with markbench's plugin, on 1 vCPU (inline
//! counters) and on 2 (callbacks). The counts must agree with icount's
//! guest time, an A/A profile must differ in no function, and a run that
//! does nothing must count next to nothing (so boot and setup are not
//! counted). Needs the markers-off kernel in the cache and a QEMU with
//! plugin support (Debian's 10.0).

mod real;

use markbench::stages::profile::store::{read_counts, PointTotals};
use markbench::stages::profile::Manifest;

fn per_run(t: &PointTotals) -> (f64, f64) {
    (
        t.instructions as f64 / t.runs as f64,
        t.elapsed_ns as f64 / t.runs as f64,
    )
}

#[test]
fn an_aa_profile_counts_exactly_what_the_runs_time_and_differs_nowhere() {
    let (_reports, dir) = real::compare(&["--suite", "tests/fixtures/profile.toml", "--aa"]);
    let manifest = Manifest::read(&dir).unwrap().expect("profiles");
    assert_eq!(manifest.boots.len(), 4, "{manifest:?}");
    assert!(manifest.boots.iter().all(|b| b.ok()), "{manifest:?}");
    let mut cpus: Vec<u32> = manifest.boots.iter().map(|b| b.cpus).collect();
    cpus.sort();
    assert_eq!(cpus, [1, 1, 2, 2]);
    let ns = (1u64 << manifest.icount_shift) as f64;

    for boot in &manifest.boots {
        let point = |w: &str| boot.points.iter().find(|p| p.workload == w).unwrap();
        let (hackbench, hackbench_ns) = per_run(point("hackbench"));
        let (nothing, nothing_ns) = per_run(point("command"));
        assert_eq!(point("hackbench").runs, 2, "warm-ups are left out");
        // One instruction is 2^shift ns of guest time: the counts are the
        // runs' own (here within 0.1%; a fault inside a translated block
        // counts its rest twice, idle guest time counts none).
        let agreement = hackbench * ns / hackbench_ns - 1.0;
        assert!(agreement.abs() < 0.001, "{agreement} ({boot:?})");
        let agreement = nothing * ns / nothing_ns - 1.0;
        assert!(agreement.abs() < 0.02, "{agreement} ({boot:?})");
        // A run that does nothing counts what starting and reaping a
        // process costs, not the boot (about 1.5 s of guest time) before it.
        assert!(nothing > 0.0);
        assert!(nothing < hackbench / 20.0, "{nothing} vs {hackbench}");
        assert!(nothing * ns < 0.05e9, "{nothing} instructions");
    }

    // A/A with the same seed: the same instructions in every function, at
    // each CPU count.
    let pdir = dir.join("profiles");
    for n in [1, 2] {
        let sides: Vec<_> = manifest.boots.iter().filter(|b| b.cpus == n).collect();
        assert_eq!(sides[0].guest_seed, sides[1].guest_seed);
        let counts: Vec<_> = sides
            .iter()
            .map(|b| read_counts(&pdir.join(&b.file)).unwrap())
            .collect();
        assert!(!counts[0].is_empty());
        assert_eq!(counts[0], counts[1], "{n} CPUs");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert_eq!(report.matches("No function differs").count(), 4, "{report}");
    // The timed boots' samples are all there is in samples.csv.
    let samples = markbench::record::read_samples(&dir).unwrap();
    assert_eq!(samples.len(), 2 * 2 * (3 + 3));
}
