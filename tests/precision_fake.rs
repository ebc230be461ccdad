//! Runs to a stated precision without QEMU: a fake guest whose boots vary
//! (one factor a boot, drawn from the unit's console log name) answers every
//! boot, so which blocks are added, why the run stops, what the report says
//! of the points that missed, and how resume and shards number the added
//! boots are checked exactly.

mod common;

use common::{execute, images, load, machine, resolved_with, run_dir, PRECISE};
use markbench::jobs::compare::{Overrides, Resolved};
use markbench::record::{read_samples, PrecisionStop, RunMeta};
use markbench::stages::shard::ShardSel;
use markbench::stages::vm::fake::FakeRunner;
use std::collections::BTreeMap;
use std::path::Path;

fn noisy() -> FakeRunner {
    FakeRunner {
        slow_factor: 1.02,
        boot_noise: 0.01,
        ..Default::default()
    }
}

/// Boots a side at each (variant, CPU count), and every boot number once.
fn boots_by_side(meta: &RunMeta) -> BTreeMap<(String, u32), Vec<u32>> {
    let mut sides: BTreeMap<(String, u32), Vec<u32>> = BTreeMap::new();
    for b in &meta.boots {
        sides
            .entry((b.variant.clone(), b.cpus))
            .or_default()
            .push(b.boot);
    }
    for boots in sides.values_mut() {
        boots.sort_unstable();
        let count = boots.len();
        boots.dedup();
        assert_eq!(boots.len(), count, "a boot number repeats: {sides:?}");
    }
    sides
}

fn precision_rows(report: &str) -> Vec<&str> {
    let start = report
        .find("## Precision\n")
        .unwrap_or_else(|| panic!("no Precision section:\n{report}"));
    report[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| point |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect()
}

#[test]
fn a_run_adds_balanced_blocks_until_every_point_is_within_the_target() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = load(tmp.path(), PRECISE);
    let dir = run_dir(tmp.path(), "run");
    let mut runner = noisy();
    let meta = execute(
        &suite,
        &images(tmp.path()),
        &machine(),
        &mut runner,
        &dir,
        None,
    )
    .unwrap();
    assert!(meta.complete);
    let precision = meta.precision.as_ref().expect("a precision record");
    assert_eq!(
        precision.stopped,
        Some(PrecisionStop::Resolved),
        "{precision:?}"
    );
    assert!(precision.added_boots > 0, "{precision:?}");
    assert_eq!(meta.boots.len(), 8 + precision.added_boots);
    assert_eq!(meta.order.len(), meta.boots.len());

    let sides = boots_by_side(&meta);
    for cpus in [1, 2] {
        let off = &sides[&("off".to_string(), cpus)];
        let on = &sides[&("on".to_string(), cpus)];
        // Blocks are balanced: the same boots on both sides, the added ones
        // numbered after the planned two, and never fewer than the minimum
        // the stopping rule waits for.
        assert_eq!(off, on, "{sides:?}");
        assert_eq!(*off, (0..off.len() as u32).collect::<Vec<_>>());
        assert!(off.len() >= precision.min_boots, "{sides:?}");
    }
    // The points are not equally lucky: a CPU count that resolved first got
    // no more blocks after it did, so the sides need not match in length.
    let mut measured: Vec<(String, u32, u32)> = read_samples(&dir)
        .unwrap()
        .into_iter()
        .filter(|s| !s.warmup)
        .map(|s| (s.variant, s.cpus, s.boot))
        .collect();
    measured.sort();
    measured.dedup();
    assert_eq!(measured.len(), meta.boots.len(), "every boot measured");

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let rows = precision_rows(&report);
    assert_eq!(rows.len(), 2, "{report}");
    for row in rows {
        assert!(row.contains("| within |"), "{row}");
    }
    assert!(report.contains("stopped at"), "{report}");
}

#[test]
fn a_run_stopped_by_its_cap_says_which_points_missed_and_what_they_need() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = load(
        tmp.path(),
        &PRECISE.replace("precision = 1.0", "precision = 0.2"),
    );
    let run = resolved_with(
        &suite,
        Overrides {
            max_boots: Some(12),
            ..Default::default()
        },
    );
    let dir = run_dir(tmp.path(), "run");
    let mut runner = noisy();
    let meta = execute(
        &run,
        &images(tmp.path()),
        &machine(),
        &mut runner,
        &dir,
        None,
    )
    .unwrap();
    let precision = meta.precision.as_ref().unwrap();
    assert_eq!(
        precision.stopped,
        Some(PrecisionStop::MaxBoots),
        "{precision:?}"
    );
    assert_eq!(meta.boots.len(), 12);
    assert_eq!(precision.added_boots, 4);

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("the cap"), "{report}");
    for row in precision_rows(&report) {
        assert!(row.contains("**missed** by "), "{row}");
        let cells: Vec<&str> = row
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        // The next to last cell: boots a side the model says the point
        // needs, more than it got; the last: what its spread is made of.
        let needed: usize = cells[cells.len() - 2]
            .parse()
            .unwrap_or_else(|e| panic!("{row}: {e}"));
        let spread = cells[cells.len() - 1];
        assert!(
            spread.starts_with("mostly ") || spread.starts_with("one run a boot"),
            "{row}"
        );
        assert!(needed > 4, "{row}");
    }
}

#[test]
fn a_run_whose_budget_is_spent_adds_nothing_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = load(
        tmp.path(),
        &PRECISE.replace("precision = 1.0", "precision = 1.0\nbudget = \"1m\""),
    );
    let run: Resolved = resolved_with(&suite, Overrides::default());
    let dir = run_dir(tmp.path(), "run");
    // Eight planned boots of 10 s: 80 s, past the minute of the budget.
    let mut runner = FakeRunner {
        boot_wall: Some(std::time::Duration::from_secs(10)),
        ..noisy()
    };
    let meta = execute(
        &run,
        &images(tmp.path()),
        &machine(),
        &mut runner,
        &dir,
        None,
    )
    .unwrap();
    let precision = meta.precision.as_ref().unwrap();
    assert_eq!(
        precision.stopped,
        Some(PrecisionStop::Budget),
        "{precision:?}"
    );
    assert_eq!(precision.added_boots, 0);
    assert_eq!(meta.boots.len(), 8);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("the budget"), "{report}");
    assert!(report.contains("from the first boot"), "{report}");
    assert!(report.contains("**missed**"), "{report}");
}

#[test]
fn only_the_boots_spend_the_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = load(
        tmp.path(),
        &PRECISE.replace("precision = 1.0", "precision = 1.0\nbudget = \"2m\""),
    );
    let run: Resolved = resolved_with(&suite, Overrides::default());
    let dir = run_dir(tmp.path(), "run");
    // Boots of 10 s: the eight planned take 80 s, and two blocks of two
    // boots fit in the 40 s left; the time before the first boot (a cold
    // cache's kernel builds) is not counted.
    let mut runner = FakeRunner {
        boot_wall: Some(std::time::Duration::from_secs(10)),
        ..noisy()
    };
    let meta = execute(
        &run,
        &images(tmp.path()),
        &machine(),
        &mut runner,
        &dir,
        None,
    )
    .unwrap();
    let precision = meta.precision.as_ref().unwrap();
    assert_eq!(
        precision.stopped,
        Some(PrecisionStop::Budget),
        "{precision:?}"
    );
    assert_eq!(precision.added_boots, 4, "{precision:?}");
    assert_eq!(
        precision.budget_scope,
        markbench::record::BudgetScope::Boots
    );
    let spent: f64 = meta.boots.iter().map(|b| b.wall_s).sum();
    assert!(spent <= 120.0, "{spent}");
}

#[test]
fn a_resumed_run_adds_the_blocks_it_would_have_added_uninterrupted() {
    resumes_as_if_uninterrupted(PRECISE);
}

#[test]
fn a_resumed_run_of_a_variant_whose_name_has_spaces_loses_no_boot() {
    resumes_as_if_uninterrupted(&PRECISE.replace("name = \"on\"", "name = \"markers on\""));
}

/// Runs `suite_text` whole, then again with the host dying two boots into
/// the added blocks and a resume: the resumed run has the same boots and
/// the same samples as the whole one.
fn resumes_as_if_uninterrupted(suite_text: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let suite = load(tmp.path(), suite_text);
    let whole_dir = run_dir(tmp.path(), "whole");
    let whole = execute(
        &suite,
        &images(tmp.path()),
        &machine(),
        &mut noisy(),
        &whole_dir,
        None,
    )
    .unwrap();
    assert!(whole.precision.as_ref().unwrap().added_boots >= 4);

    // The host dies two boots into the added blocks.
    let dir = run_dir(tmp.path(), "resumed");
    let mut crashing = FakeRunner {
        crash_after_boots: Some(10),
        ..noisy()
    };
    let crashed = execute(
        &suite,
        &images(tmp.path()),
        &machine(),
        &mut crashing,
        &dir,
        None,
    )
    .unwrap();
    // The failed boots of the first block added after the crash stop the
    // additions: a guest that fails is not resolved by booting it again.
    assert_eq!(
        crashed.precision.as_ref().unwrap().stopped,
        Some(PrecisionStop::FailedBoots)
    );
    assert_eq!(crashed.boots.iter().filter(|b| b.ok()).count(), 10);
    assert_eq!(crashed.boots.len(), 12, "one failed block, then no more");
    let interrupted = RunMeta::read(&dir).unwrap();
    let resumed = execute(
        &suite,
        &images(tmp.path()),
        &machine(),
        &mut noisy(),
        &dir,
        Some(interrupted),
    )
    .unwrap();
    assert!(resumed.complete);
    let key = |m: &RunMeta| -> Vec<(String, u32, u32)> {
        let mut k: Vec<_> = m
            .boots
            .iter()
            .filter(|b| b.ok())
            .map(|b| (b.variant.clone(), b.cpus, b.boot))
            .collect();
        k.sort();
        k
    };
    assert_eq!(key(&resumed), key(&whole));
    assert_eq!(
        resumed.precision.as_ref().unwrap().stopped,
        Some(PrecisionStop::Resolved)
    );
    let values = |dir: &Path| -> Vec<(String, u32, u32, u64)> {
        let mut v: Vec<_> = read_samples(dir)
            .unwrap()
            .into_iter()
            .map(|s| (s.variant, s.cpus, s.boot, s.value.to_bits()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(values(&dir), values(&whole_dir));
}

#[test]
fn shards_add_blocks_to_their_own_groups_with_boot_numbers_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = load(tmp.path(), PRECISE);
    let mut all: Vec<(String, u32, u32)> = Vec::new();
    for index in 0..2 {
        let run = resolved_with(
            &suite,
            Overrides {
                shard: Some(ShardSel { index, count: 2 }),
                ..Default::default()
            },
        );
        let planned: Vec<u32> = run.units.iter().map(|u| u.cpus).collect();
        let dir = run_dir(tmp.path(), &format!("shard-{index}"));
        let meta = execute(
            &run,
            &images(tmp.path()),
            &machine(),
            &mut noisy(),
            &dir,
            None,
        )
        .unwrap();
        let precision = meta.precision.as_ref().unwrap();
        assert!(precision.added_boots > 0, "shard {index}: {precision:?}");
        for b in &meta.boots {
            assert!(
                planned.contains(&b.cpus),
                "shard {index} added a boot at {} CPUs, outside its groups",
                b.cpus
            );
            if b.boot >= 2 {
                assert_eq!((b.boot - 2) % 2, index, "shard {index}: boot {}", b.boot);
            }
            all.push((b.variant.clone(), b.cpus, b.boot));
        }
    }
    let count = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), count, "two shards booted the same unit");
}

/// Under the cycle model every point gains the model's counts, and some of
/// them are the same in every sample (the fake guest's coherence misses are
/// always 0, as on one vCPU): such a point's difference is exact, so it
/// stops nothing, and the run still stops at the target, not at the cap.
#[test]
fn a_point_the_same_in_every_sample_does_not_keep_the_run_going() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = load(
        tmp.path(),
        &PRECISE.replace("cpus = [1, 2]", "cpus = [1]\nmodel = \"cycles\""),
    );
    let dir = run_dir(tmp.path(), "run");
    let mut icount = machine();
    icount.timing.icount_shift = Some(4);
    let meta = execute(
        &suite,
        &images(tmp.path()),
        &icount,
        &mut noisy(),
        &dir,
        None,
    )
    .unwrap();
    let coherence: Vec<f64> = read_samples(&dir)
        .unwrap()
        .into_iter()
        .filter(|s| s.metric == "coherence-misses" && !s.warmup)
        .map(|s| s.value)
        .collect();
    assert!(!coherence.is_empty() && coherence.iter().all(|&v| v == 0.0));
    let precision = meta.precision.as_ref().expect("a precision record");
    assert_eq!(
        precision.stopped,
        Some(PrecisionStop::Resolved),
        "{precision:?}"
    );
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(!report.contains("no interval yet"), "{report}");
}
