//! Boots side by side without QEMU: the fake guest holds each boot for a
//! moment, so the boot loop's slots are under way together, and what a run
//! records is checked against the same run booted one guest at a time.

mod common;

use common::{execute, images, load, machine, resolved_with, run_dir, PRECISE, SUITE};
use markbench::jobs::compare::{Overrides, Resolved};
use markbench::record::{read_samples, BootRecord, RunMeta, Sample};
use markbench::stages::slots::Asked;
use markbench::stages::suite::Suite;
use markbench::stages::vm::fake::FakeRunner;
use markbench::stages::vm::Machine;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn icount() -> Machine {
    let mut m = machine();
    m.timing.icount_shift = Some(4);
    m
}

fn with_jobs(suite: &Suite, jobs: u32) -> Resolved {
    let mut run = resolved_with(suite, Overrides::default());
    run.jobs = Asked::CommandLine(jobs);
    run
}

/// A suite's runs side by side: its directory, the suite and the images.
struct Bench {
    tmp: tempfile::TempDir,
    suite: Suite,
    images: markbench::stages::run_images::Images,
}

impl Bench {
    fn of(text: &str) -> Bench {
        let tmp = tempfile::tempdir().unwrap();
        let suite = load(tmp.path(), text);
        let images = images(tmp.path());
        Bench { tmp, suite, images }
    }

    /// Runs the suite into run directory `name`, `jobs` guests at once,
    /// continuing `resume` when given; its metadata and directory.
    fn run(
        &self,
        name: &str,
        jobs: u32,
        runner: &mut FakeRunner,
        resume: Option<RunMeta>,
    ) -> (RunMeta, PathBuf) {
        let dir = self.tmp.path().join(name);
        if resume.is_none() {
            run_dir(self.tmp.path(), name);
        }
        let run = with_jobs(&self.suite, jobs);
        let meta = execute(&run, &self.images, &icount(), runner, &dir, resume).unwrap();
        (meta, dir)
    }
}

fn held() -> FakeRunner {
    FakeRunner {
        slow_factor: 1.02,
        boot_noise: 0.01,
        hold: Some(Duration::from_millis(150)),
        ..Default::default()
    }
}

/// The samples as samples.csv holds them, each row without the time it was
/// written, in the order of the boots (rows of boots side by side
/// interleave as they arrive).
fn rows(dir: &Path) -> Vec<String> {
    let mut samples = read_samples(dir).unwrap();
    samples.sort_by(|a, b| {
        let key = |s: &Sample| (s.variant.clone(), s.cpus, s.boot);
        key(a).cmp(&key(b))
    });
    let mut out = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    for s in samples {
        out.serialize(Sample {
            started_at: String::new(),
            ..s
        })
        .unwrap();
    }
    String::from_utf8(out.into_inner().unwrap())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A boot record without what the host's clock and cores decide.
fn recorded(b: &BootRecord) -> BootRecord {
    BootRecord {
        wall_s: 0.0,
        hello_s: None,
        host_load_before: 0.0,
        host_load_after: 0.0,
        host_cpu: None,
        ..b.clone()
    }
}

#[test]
fn two_slots_give_the_samples_of_one_byte_for_byte_in_half_the_turns() {
    let bench = Bench::of(SUITE);
    let (one_meta, one_dir) = bench.run("one", 1, &mut held(), None);
    let mut two = held();
    let (two_meta, two_dir) = bench.run("two", 2, &mut two, None);

    assert!(one_meta.complete && two_meta.complete);
    assert_eq!(two.most_at_once(), 2, "two guests were under way together");
    let one_rows = rows(&one_dir);
    assert_eq!(one_rows.len(), 12 * 3 * 3);
    assert_eq!(rows(&two_dir), one_rows);
    // The boots are recorded in the plan's order, whichever ended first,
    // with the same seeds and endings.
    let boots = |m: &RunMeta| m.boots.iter().map(recorded).collect::<Vec<_>>();
    assert_eq!(boots(&two_meta), boots(&one_meta));
    assert!(two_meta.boots.windows(2).all(|w| w[0].unit < w[1].unit));
    assert_eq!(two_meta.slots.as_ref().map(|s| s.jobs), Some(2));
    assert_eq!(one_meta.slots.as_ref().map(|s| s.jobs), Some(1));
}

#[test]
fn every_variant_boots_on_every_slot() {
    let (meta, _) = Bench::of(SUITE).run("run", 2, &mut held(), None);
    let slots = meta.slots.clone().unwrap();
    if slots.host_cpus.len() < 2 {
        // A host of one core binds nothing: there is one kind of slot.
        assert!(meta.boots.iter().all(|b| b.host_cpu.is_none()));
        return;
    }
    for variant in ["off", "on"] {
        let mut cpus: Vec<usize> = meta
            .boots
            .iter()
            .filter(|b| b.variant == variant)
            .filter_map(|b| b.host_cpu)
            .collect();
        cpus.sort_unstable();
        let on_first = cpus.iter().filter(|&&c| c == slots.host_cpus[0]).count();
        cpus.dedup();
        assert_eq!(
            cpus, slots.host_cpus,
            "{variant} booted on every slot's core"
        );
        // Six boots a variant, balanced within one between the two slots.
        assert!(
            (2..=4).contains(&on_first),
            "{variant}: {on_first} of 6 on the first core"
        );
    }
}

#[test]
fn a_hang_in_one_slot_is_retried_there_while_the_other_goes_on() {
    let mut runner = FakeRunner {
        hanging_boots: vec![3],
        ..held()
    };
    let bench = Bench::of(SUITE);
    let (meta, dir) = bench.run("run", 2, &mut runner, None);
    assert!(meta.complete);
    assert_eq!(runner.boots(), 13, "twelve boots and one retry");
    let retried: Vec<_> = meta
        .boots
        .iter()
        .filter(|b| b.retried_after.is_some())
        .collect();
    assert_eq!(retried.len(), 1);
    assert!(meta.boots.iter().all(|b| b.ok()));
    // What the hung attempt measured was dropped; the retry's and every
    // other boot's samples are all there, once.
    let rows = rows(&dir);
    assert_eq!(rows.len(), 12 * 3 * 3);
    let mut unique = rows.clone();
    unique.dedup();
    assert_eq!(unique.len(), rows.len());
}

#[test]
fn a_runner_that_panics_in_one_slot_fails_that_boot_only_and_it_is_retried() {
    let mut runner = FakeRunner {
        panicking_boots: vec![2],
        ..held()
    };
    let bench = Bench::of(SUITE);
    let (meta, dir) = bench.run("run", 2, &mut runner, None);
    assert!(meta.complete);
    let retried: Vec<_> = meta
        .boots
        .iter()
        .filter_map(|b| b.retried_after.as_ref())
        .collect();
    assert_eq!(retried.len(), 1);
    assert!(
        retried[0].describe().contains("panicked"),
        "{}",
        retried[0].describe()
    );
    assert!(meta.boots.iter().all(|b| b.ok()));
    assert_eq!(rows(&dir).len(), 12 * 3 * 3);
}

#[test]
fn a_run_that_died_with_two_slots_resumes_to_the_samples_of_one_uninterrupted_run() {
    let bench = Bench::of(SUITE);
    let (_, whole_dir) = bench.run("whole", 1, &mut held(), None);
    let mut crashing = FakeRunner {
        crash_after_boots: Some(5),
        ..held()
    };
    let (first, dir) = bench.run("resumed", 2, &mut crashing, None);
    assert_eq!(first.boots.iter().filter(|b| b.ok()).count(), 5);
    let meta = RunMeta::read(&dir).unwrap();
    let mut runner = held();
    let (resumed, _) = bench.run("resumed", 2, &mut runner, Some(meta));
    assert_eq!(runner.boots(), 7, "only the unfinished boots run again");
    assert!(resumed.complete);
    assert_eq!(rows(&dir), rows(&whole_dir));
}

#[test]
fn a_precision_run_on_two_slots_reaches_its_target_with_the_same_boots_measured_alike() {
    let bench = Bench::of(PRECISE);
    let (one, one_dir) = bench.run("one", 1, &mut held(), None);
    let (two, two_dir) = bench.run("two", 2, &mut held(), None);
    let stopped = |m: &RunMeta| m.precision.as_ref().and_then(|p| p.stopped);
    assert_eq!(
        stopped(&one),
        Some(markbench::record::PrecisionStop::Resolved)
    );
    assert_eq!(stopped(&two), stopped(&one));
    // Blocks added while others were under way may add a block the one
    // slot did not need, never fewer boots, and never one unbalanced.
    assert!(two.boots.len() >= one.boots.len());
    assert!(
        two.boots.len() <= one.boots.len() + 2 * 2,
        "{} against {}",
        two.boots.len(),
        one.boots.len()
    );
    for cpus in [1, 2] {
        let side = |m: &RunMeta, v: &str| {
            m.boots
                .iter()
                .filter(|b| b.cpus == cpus && b.variant == v)
                .count()
        };
        assert_eq!(side(&two, "off"), side(&two, "on"));
    }
    // Every boot both runs made (the same unit, the same seed) measured alike.
    let one_rows = rows(&one_dir);
    let two_rows = rows(&two_dir);
    let seeds = |m: &RunMeta| {
        m.boots
            .iter()
            .map(|b| ((b.variant.clone(), b.cpus, b.boot), b.guest_seed))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let (one_seeds, two_seeds) = (seeds(&one), seeds(&two));
    let same: Vec<_> = one_seeds
        .iter()
        .filter(|(k, s)| two_seeds.get(*k) == Some(*s))
        .map(|(k, _)| k.clone())
        .collect();
    assert!(same.len() >= 8, "the planned boots at least: {same:?}");
    let of = |rows: &[String], (v, c, b): &(String, u32, u32)| -> Vec<String> {
        let tag = format!(",{c},{v},{b},");
        rows.iter().filter(|r| r.contains(&tag)).cloned().collect()
    };
    for key in &same {
        let mine = of(&one_rows, key);
        assert!(!mine.is_empty(), "{key:?}");
        assert_eq!(of(&two_rows, key), mine, "{key:?}");
    }
}
