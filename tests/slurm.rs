//! A real Slurm array job: a one-node cluster on this machine
//! (scripts/slurm/local-cluster.sh), the shards of a tiny suite as an array
//! job (scripts/slurm/submit.sh), the merge as a job depending on it, and the
//! merged report checked against the form of a single-machine run's. Boots
//! real guests (8 boots of about 15-20 s; kernels from ~/.cache/markbench).
//!
//! Without Slurm installed the test says so and does nothing, except in CI
//! (`CI` or `MARKBENCH_REQUIRE_SLURM` set), where a missing Slurm fails it:
//! `.ci/run` installs it (slurmctld slurmd slurm-client munge), so a CI run
//! that skipped it would pass without having run it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

/// `scontrol show job ID`'s JobState, or None once Slurm forgot the job.
fn job_state(id: &str) -> Option<String> {
    let out = Command::new("scontrol")
        .args(["show", "job", id])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace()
        .find_map(|f| f.strip_prefix("JobState="))
        .map(str::to_string)
}

/// Headings and table header rows: the report's form.
fn skeleton(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| l.starts_with('#') || l.starts_with("| groups") || l.starts_with("| # |"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_slurm_array_job_of_shards_merges_into_one_report() {
    if !on_path("sbatch") {
        let required = std::env::var_os("CI").is_some()
            || std::env::var_os("MARKBENCH_REQUIRE_SLURM").is_some();
        assert!(
            !required,
            "Slurm is required (CI or MARKBENCH_REQUIRE_SLURM set) but sbatch is not on PATH: \
             `markbench setup --ci` installs it"
        );
        eprintln!(
            "\n*** tests/slurm.rs: SKIPPED: Slurm is not installed (no sbatch on PATH). \
             Install slurmctld slurmd slurm-client munge (.ci/run does) to run it. ***\n"
        );
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    run(&mut Command::new(
        root.join("scripts/slurm/local-cluster.sh"),
    ));

    let results = tempfile::tempdir().unwrap();
    let submitted = run(Command::new(root.join("scripts/slurm/submit.sh"))
        .args(["2"])
        .arg(results.path())
        .args(["--suite", "tests/fixtures/shards.toml"])
        .env("MARKBENCH", env!("CARGO_BIN_EXE_markbench"))
        .current_dir(root));
    // "array job 12 (shards 0-1), merge job 13"
    let ids: Vec<&str> = submitted
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .collect();
    let (array, merge) = (ids[0], ids[ids.len() - 1]);

    let started = Instant::now();
    let state = loop {
        let state = job_state(merge).unwrap_or_else(|| "FORGOTTEN".into());
        if !["PENDING", "RUNNING", "CONFIGURING", "COMPLETING"].contains(&state.as_str()) {
            break state;
        }
        assert!(
            started.elapsed() < Duration::from_secs(45 * 60),
            "merge job {merge} still {state} after 45 minutes"
        );
        std::thread::sleep(Duration::from_secs(5));
    };
    let outputs: String = std::fs::read_dir(results.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".out"))
        .map(|e| {
            format!(
                "--- {}\n{}",
                e.path().display(),
                std::fs::read_to_string(e.path()).unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        state, "COMPLETED",
        "array job {array}, merge job {merge}:\n{outputs}"
    );

    let merged = results.path().join("merged");
    let report = std::fs::read_to_string(merged.join("report.md")).unwrap();
    let meta = markbench::record::RunMeta::read(&merged).unwrap();
    assert!(meta.complete);
    assert_eq!(meta.shards.len(), 2);
    assert_eq!(meta.boots.len(), 8, "{:?}", meta.boots);
    assert!(meta.boots.iter().all(|b| b.ok()), "{:?}", meta.boots);

    // The same form as a single-machine run: each shard's own report is one
    // (run-shard is compare on part of the suite), and the merged report
    // has the same sections and tables, plus the Hosts table.
    let shard_report = std::fs::read_to_string(results.path().join("shard-0/report.md")).unwrap();
    assert_eq!(skeleton(&shard_report), skeleton(&report), "{report}");
    assert!(report.contains("| shard | host | points |"), "{report}");
    for section in [
        "## What was compared",
        "## Where and how",
        "## Results",
        "## Significance",
        "## Boots",
    ] {
        assert!(report.contains(section), "{section}\n{report}");
    }
    // Both points, each with a verdict.
    let verdicts = [
        "regression",
        "improvement",
        "equivalent",
        "no significant difference",
    ];
    for groups in ["2", "4"] {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {groups} | ")))
            .unwrap_or_else(|| panic!("no row for {groups} groups:\n{report}"));
        assert!(verdicts.iter().any(|v| row.contains(v)), "{row}");
    }
    let samples = markbench::record::read_samples(&merged).unwrap();
    assert_eq!(samples.len(), 8);
}
