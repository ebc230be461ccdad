//! Shards and merge without QEMU: a fake guest answers every boot, so a
//! suite split over shards (and "hosts") can be merged and compared with the
//! same suite run on one machine exactly.

mod common;

use common::execute;
use common::{images, machine, SUITE};
use markbench::jobs::compare::{Overrides, Resolved};
use markbench::record::{read_samples_with_hosts, RunMeta, SampleWriter, SAMPLES_FILE};
use markbench::stages::shard::ShardSel;
use markbench::stages::suite::{FragmentLookup, Suite};
use markbench::stages::vm::fake::FakeRunner;
use std::path::{Path, PathBuf};

fn suite(dir: &Path, text: &str, shard: Option<ShardSel>) -> Resolved {
    let path = dir.join("fake.toml");
    std::fs::write(&path, text).unwrap();
    let suite = Suite::load(
        &path,
        &FragmentLookup::BesideSuite {
            cwd: env!("CARGO_MANIFEST_DIR").into(),
        },
    )
    .unwrap();
    common::resolved_with(
        &suite,
        Overrides {
            shard,
            ..Default::default()
        },
    )
}

/// Runs the whole suite (`shard` None) or one shard into `root/name`.
fn run(root: &Path, name: &str, shard: Option<ShardSel>) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let suite = suite(root, SUITE, shard);
    let mut runner = FakeRunner {
        slow_factor: 1.2,
        ..Default::default()
    };
    execute(&suite, &images(root), &machine(), &mut runner, &dir, None).unwrap();
    dir
}

/// Every shard of a `count`-way split, each in `root/shard-K`.
fn run_shards(root: &Path, count: u32) -> Vec<PathBuf> {
    (0..count)
        .map(|index| {
            run(
                root,
                &format!("shard-{index}"),
                Some(ShardSel { index, count }),
            )
        })
        .collect()
}

/// Pretends a shard ran on `host`, a machine `speed` times as slow as the
/// fake guest: both variants' times scale, as a slower host's would.
fn move_to_host(dir: &Path, host: &str, speed: f64) {
    let samples = read_samples_with_hosts(dir).unwrap();
    std::fs::remove_file(dir.join(SAMPLES_FILE)).unwrap();
    let mut w = SampleWriter::open_as(dir, host).unwrap();
    for (mut s, _) in samples {
        s.value = if s.higher_is_better {
            s.value / speed
        } else {
            s.value * speed
        };
        w.append(&s).unwrap();
    }
    let mut meta = RunMeta::read(dir).unwrap();
    meta.host.hostname = host.into();
    meta.write(dir).unwrap();
}

/// The report's structure: headings and table header rows.
fn skeleton(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| l.starts_with('#') || l.starts_with("| groups") || l.starts_with("| packets"))
        .map(str::to_string)
        .collect()
}

fn verdict_cells(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(" … "))
        .map(|l| l.split('|').nth(8).unwrap_or_default().trim().to_string())
        .collect()
}

#[test]
fn merged_shards_report_like_one_machine_and_find_the_same_regressions() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = run(tmp.path(), "whole", None);
    let count = 3;
    let shards = run_shards(tmp.path(), count);
    let shard_meta = RunMeta::read(&shards[1]).unwrap();
    let shard = shard_meta.shard.as_ref().unwrap();
    assert_eq!((shard.index, shard.count), (1, 3));
    assert!(!shard.pieces.is_empty());

    let out = tmp.path().join("merged");
    let merged = markbench::jobs::merge::merge(&shards, &out).unwrap();
    assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
    assert!(merged.meta.complete);
    assert_eq!(merged.meta.shards.len(), 3);
    assert!(merged.meta.shard.is_none());

    let mut a = markbench::record::read_samples(&whole).unwrap();
    let mut b = markbench::record::read_samples(&out).unwrap();
    let key = markbench::record::Sample::key;
    a.sort_by_key(key);
    b.sort_by_key(key);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((key(x), x.value), (key(y), y.value));
    }

    assert!(
        out.join("sizes.toml").is_file(),
        "the kernels' sizes came along"
    );
    let single = std::fs::read_to_string(whole.join("report.md")).unwrap();
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert_eq!(skeleton(&single), skeleton(&report));
    assert_eq!(verdict_cells(&single), verdict_cells(&report));
    assert!(verdict_cells(&report).iter().all(|v| v == "**regression**"));
    assert!(report.contains("merged from 3 shards"), "{report}");
    assert!(report.contains("| shard | host | points |"), "{report}");
    // Every boot's console log came along.
    for b in &merged.meta.boots {
        assert!(out.join(&b.console_log).is_file(), "{}", b.console_log);
    }
    // Re-rendering from the directory gives the same report.
    markbench::stages::report::write(&out).unwrap();
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        report
    );
}

#[test]
fn boots_split_over_hosts_are_compared_within_each_host() {
    let tmp = tempfile::tempdir().unwrap();
    // 6 (CPU count, point) groups × 3 boots; 12 shards split every group's boots.
    let count = 12;
    let shards = run_shards(tmp.path(), count);
    for (index, dir) in shards.iter().enumerate() {
        // Hosts of very different speeds: 1×, 1.5×, 2×.
        move_to_host(
            dir,
            &format!("host-{}", index % 3),
            1.0 + 0.5 * (index % 3) as f64,
        );
    }
    let out = tmp.path().join("merged");
    let merged = markbench::jobs::merge::merge(&shards, &out).unwrap();
    let hosts: std::collections::BTreeSet<String> = read_samples_with_hosts(&out)
        .unwrap()
        .into_iter()
        .map(|(_, h)| h)
        .collect();
    assert_eq!(hosts.len(), 3, "{hosts:?}");
    assert_eq!(merged.meta.hostnames(), ["host-0", "host-1", "host-2"]);
    assert_eq!(merged.meta.host.hostname, "host-0", "the first shard's");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("**Host blocking**"), "{report}");
    // The candidate is 20% slower on every host; the hosts' 50-100% speed
    // differences do not hide it.
    let verdicts = verdict_cells(&report);
    assert_eq!(verdicts.len(), 6, "{report}");
    assert!(verdicts.iter().all(|v| v == "**regression**"), "{report}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for p in summary["points"].as_array().unwrap() {
        let rel = p["analysis"]["relative_difference"].as_f64().unwrap();
        let rel = if p["higher_is_better"].as_bool().unwrap() {
            1.0 / (1.0 + rel) - 1.0
        } else {
            rel
        };
        assert!((rel - 0.2).abs() < 0.01, "{p}");
        assert_eq!(p["analysis"]["host_blocking"]["applied"], true);
    }
}

#[test]
fn merge_refuses_missing_duplicate_and_foreign_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let count = 3;
    let shards = run_shards(tmp.path(), count);
    let err = |dirs: &[PathBuf], out: &str| {
        let e = markbench::jobs::merge::merge(dirs, &tmp.path().join(out)).unwrap_err();
        assert!(
            matches!(e, markbench::base::error::Error::Input(_)),
            "{e:#} is not an input error (exit 2)"
        );
        assert!(!tmp.path().join(out).exists(), "nothing written for {out}");
        format!("{e:#}")
    };

    let e = err(&shards[..2], "m1");
    assert!(e.contains("shard 2 of 3 missing"), "{e}");

    let e = err(
        &[shards[0].clone(), shards[1].clone(), shards[1].clone()],
        "m2",
    );
    assert!(e.contains("are both shard 1"), "{e}");

    // A shard of another suite (another file: another hash).
    let other = tmp.path().join("other");
    std::fs::create_dir_all(other.join("logs")).unwrap();
    let foreign = suite(
        tmp.path(),
        &SUITE.replace("iterations = 2", "iterations = 3"),
        Some(ShardSel { index: 2, count }),
    );
    execute(
        &foreign,
        &images(tmp.path()),
        &machine(),
        &mut FakeRunner::default(),
        &other,
        None,
    )
    .unwrap();
    let e = err(&[shards[0].clone(), shards[1].clone(), other.clone()], "m3");
    assert!(
        e.contains(&other.display().to_string()) && e.contains("suite file"),
        "{e}"
    );

    // A run of the whole suite (its metadata names no shard) is not a shard.
    let whole = tmp.path().join("whole");
    std::fs::create_dir_all(&whole).unwrap();
    let mut meta = RunMeta::read(&shards[0]).unwrap();
    meta.shard = None;
    meta.write(&whole).unwrap();
    let e = err(std::slice::from_ref(&whole), "m4");
    assert!(e.contains("not a shard's run"), "{e}");

    // A shard whose kernel was built from another fragment is refused.
    let mut meta = RunMeta::read(&shards[1]).unwrap();
    let original = meta.clone();
    meta.kernels[1]
        .fragments
        .insert("markers-on.config".into(), "0123456789abcdef0123".into());
    meta.write(&shards[1]).unwrap();
    let e = err(&shards, "m7");
    assert!(
        e.starts_with(&shards[1].display().to_string())
            && e.contains("kernel \"on\" was built from other fragments")
            && e.contains("markers-on.config 0123456789abcdef here, none there"),
        "{e}"
    );
    original.write(&shards[1]).unwrap();

    // Timing modes that differ are refused; accelerators, warned about.
    let mut meta = RunMeta::read(&shards[2]).unwrap();
    let original = meta.clone();
    meta.timing = markbench::stages::vm::accel::TimingDecision::icount(4, "asked for");
    meta.write(&shards[2]).unwrap();
    let e = err(&shards, "m5");
    assert!(e.contains("timing mode"), "{e}");
    meta = original;
    meta.accel = markbench::stages::vm::Accel::Kvm;
    // And a shard whose guest image held another hackbench.
    let image = meta.guest_image.as_mut().expect("the image is recorded");
    image.sha256 = "0ther".repeat(13).into();
    image.files[0].version = "2.5-1".into();
    image.files[0].sha256 = "b".repeat(64).into();
    meta.write(&shards[2]).unwrap();
    let merged = markbench::jobs::merge::merge(&shards, &tmp.path().join("m6")).unwrap();
    let warnings: Vec<String> = merged.warnings.iter().map(|w| w.describe()).collect();
    assert!(
        warnings.iter().any(|w| w.contains("accelerator differs")),
        "{:?}",
        merged.warnings
    );
    assert!(
        warnings.iter().any(|w| w
            .starts_with("guest image differs between shards: sha256 5eed5eed5eed5eed in ")
            && w.contains("/usr/bin/hackbench: rt-tests 2.4-1 (sha256 4ac64ac64ac64ac6) against rt-tests 2.5-1 (sha256 bbbbbbbbbbbbbbbb)")),
        "{:?}",
        merged.warnings
    );
    let report = std::fs::read_to_string(tmp.path().join("m6/report.md")).unwrap();
    assert!(
        report.contains("> **Warning**: accelerator differs"),
        "{report}"
    );

    // Merging twice into one directory is refused.
    let e = markbench::jobs::merge::merge(&shards, &tmp.path().join("m6")).unwrap_err();
    assert!(e.to_string().contains("already holds a run"), "{e}");
}

#[test]
fn a_shard_resumes_as_a_shard() {
    let tmp = tempfile::tempdir().unwrap();
    let sel = ShardSel { index: 1, count: 4 };
    let dir = tmp.path().join("shard");
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let s = suite(tmp.path(), SUITE, Some(sel));
    let mut crashing = FakeRunner {
        crash_after_boots: Some(1),
        ..Default::default()
    };
    let first = execute(
        &s,
        &images(tmp.path()),
        &machine(),
        &mut crashing,
        &dir,
        None,
    )
    .unwrap();
    let planned = s.units.len();
    assert_eq!(first.boots.len(), planned);
    // The resumed run rebuilds the shard from the recorded overrides.
    let meta = RunMeta::read(&dir).unwrap();
    assert_eq!(meta.overrides.shard, Some(sel));
    let again = common::resolved_with(
        &suite(tmp.path(), SUITE, None).suite,
        meta.overrides.clone(),
    );
    let mut runner = FakeRunner::default();
    let resumed = execute(
        &again,
        &images(tmp.path()),
        &machine(),
        &mut runner,
        &dir,
        Some(meta),
    )
    .unwrap();
    assert_eq!(runner.boots(), planned - 1);
    assert!(resumed.complete && resumed.boots.iter().all(|b| b.ok()));
}
