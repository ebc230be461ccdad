//! Exit statuses from the command line, without QEMU: run directories made
//! by the fake guest, then the command a script would run on them. Each
//! verdict has a code of its own, apart from a failure of the machinery (1).

mod common;

use assert_cmd::Command;
use common::{execute, images, machine, SUITE};
use markbench::base::exit::ExitStatus;
use markbench::jobs::compare::Overrides;
use markbench::record::RunMeta;
use markbench::stages::shard::ShardSel;
use markbench::stages::suite::{FragmentLookup, Suite};
use markbench::stages::vm::fake::FakeRunner;
use std::path::{Path, PathBuf};

fn markbench() -> Command {
    Command::cargo_bin("markbench").unwrap()
}

/// The fake suite run with `overrides` into `root/name`, each boot's timings
/// spread by `noise`.
fn run(root: &Path, name: &str, overrides: Overrides, noise: f64) -> PathBuf {
    let path = root.join("fake.toml");
    std::fs::write(&path, SUITE).unwrap();
    let suite = Suite::load(
        &path,
        &FragmentLookup::BesideSuite {
            cwd: env!("CARGO_MANIFEST_DIR").into(),
        },
    )
    .unwrap();
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let mut runner = FakeRunner {
        slow_factor: 1.2,
        boot_noise: noise,
        ..Default::default()
    };
    execute(
        &common::resolved_with(&suite, overrides),
        &images(root),
        &machine(),
        &mut runner,
        &dir,
        None,
    )
    .unwrap();
    dir
}

/// The exit code of `markbench ARGS`, and what it printed.
fn status(args: &[&str]) -> (i32, String) {
    let out = markbench().args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().expect("markbench died of a signal"), text)
}

#[test]
fn noise_floor_exits_6_on_a_missed_target_and_0_when_every_one_is_met() {
    let tmp = tempfile::tempdir().unwrap();
    let aa = Overrides {
        aa: true,
        ..Overrides::default()
    };
    let dir = run(tmp.path(), "aa", aa, 0.02);
    // The stand-in images give each variant a kernel of its own; an A/A
    // run boots the baseline's on both sides, and its record says so.
    let mut meta = RunMeta::read(&dir).unwrap();
    let baseline = meta.kernels[0].clone();
    for k in &mut meta.kernels[1..] {
        k.build_key = baseline.build_key.clone();
        k.cmdline = baseline.cmdline.clone();
    }
    meta.write(&dir).unwrap();
    let dir = dir.to_str().unwrap();

    let (code, text) = status(&["noise-floor", dir, "--target-pct", "0.001"]);
    assert_eq!(code, ExitStatus::TargetMissed.code(), "{text}");
    assert_eq!(code, 6, "{text}");
    assert!(text.contains("FAIL"), "{text}");

    let (code, text) = status(&["noise-floor", dir, "--target-pct", "50"]);
    assert_eq!(code, ExitStatus::Success.code(), "{text}");
    assert!(text.contains("PASS"), "{text}");
}

#[test]
fn merge_exits_3_when_a_shard_did_not_finish_and_0_when_every_one_did() {
    let tmp = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = (0..2)
        .map(|index| {
            let overrides = Overrides {
                shard: Some(ShardSel { index, count: 2 }),
                ..Overrides::default()
            };
            run(tmp.path(), &format!("shard-{index}"), overrides, 0.0)
        })
        .collect();
    let merge = |shards: &[PathBuf], out: &str| {
        let out = tmp.path().join(out);
        let mut args = vec!["merge".to_string()];
        args.extend(shards.iter().map(|d| d.display().to_string()));
        args.extend(["--out".to_string(), out.display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        status(&args)
    };

    let (code, text) = merge(&shards, "whole");
    assert_eq!(code, ExitStatus::Success.code(), "{text}");

    // Shard 1 was interrupted: the merge finishes, and says the run is partial.
    let mut meta = RunMeta::read(&shards[1]).unwrap();
    meta.complete = false;
    meta.write(&shards[1]).unwrap();
    let (code, text) = merge(&shards, "partial");
    assert_eq!(code, ExitStatus::Incomplete.code(), "{text}");
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("did not finish"), "{text}");
}

#[test]
fn a_machinery_failure_exits_1_apart_from_every_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = (0..1)
        .map(|index| {
            let overrides = Overrides {
                shard: Some(ShardSel { index, count: 1 }),
                ..Overrides::default()
            };
            run(tmp.path(), "shard-0", overrides, 0.0)
        })
        .collect();
    // The shard's samples cannot be read: the disk fails (reading a
    // process's own memory from offset 0, where nothing is mapped, fails
    // with EIO in any process, as root or not), which no fix of the
    // command line changes. A path through a file would be the user's to
    // fix (exit 2), so it is not the case here.
    let samples = shards[0].join("samples.csv");
    std::fs::remove_file(&samples).unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", &samples).unwrap();
    let out = tmp.path().join("merged");
    let (code, text) = status(&[
        "merge",
        shards[0].to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitStatus::Machinery.code(), "{text}");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("error:"), "{text}");
    assert!(
        text.contains("samples.csv") && text.contains("Input/output error"),
        "{text}"
    );
}
