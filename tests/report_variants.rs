//! A baseline and two candidates, from samples and metadata made up here:
//! the report sets each candidate against the baseline, summary.json lists
//! both comparisons, and diff, nightly, merge and noise-floor read such runs.

use markbench::record::{
    read_samples, BootRecord, HostInfo, KernelMeta, RunMeta, Sample, SampleWriter, ShardMeta,
};
use std::path::{Path, PathBuf};

const VARIANTS: [&str; 3] = ["markers-off", "markers-on", "markers-generic"];

fn kernel(variant: &str, build_key: &str) -> KernelMeta {
    KernelMeta {
        variant: variant.into(),
        kernel: variant.into(),
        source: "tarball linux-source-6.1.tar.xz sha256 cacdc383".into(),
        build_key: build_key.into(),
        config_sha256: format!("{build_key}-config").into(),
        compiler: "gcc 12.2.0".into(),
        ..Default::default()
    }
}

/// A run of `variants` at 2 CPUs, 4 boots each, interleaved in blocks.
fn meta(variants: &[&str]) -> RunMeta {
    let boots = (0..4u32)
        .flat_map(|boot| variants.iter().map(move |v| (boot, *v)))
        .enumerate()
        .map(|(unit, (boot, variant))| BootRecord {
            unit,
            variant: variant.into(),
            cpus: 2,
            boot,
            wall_s: 30.0,
            samples: 8,
            console_log: format!("logs/unit-{unit:03}.log"),
            guest_kernel: "6.1.192".into(),
            guest_cpus: "0-1".into(),
            guest_version: String::new(),
            retryable: false,
            host_load_before: 0.2,
            host_load_after: 1.9,
            guest_seed: None,
            end: markbench::record::BootEnd::Completed,
            retried_after: None,
            hello_s: None,
            host_cpu: None,
        })
        .collect();
    RunMeta {
        suite: "variants".into(),
        suite_path: "suites/variants.toml".into(),
        suite_sha256: "0123456789abcdef0123".into(),
        git_revision: "abc1234".into(),
        markbench_version: "0.1.0".into(),
        started_at: "2026-11-30T00:00:00Z".into(),
        wall_s: 360.0,
        complete: true,
        host: HostInfo {
            hostname: "host".into(),
            cpu_model: "Test CPU".into(),
            cores: 2,
            memory_gib: 24.0,
            kernel_release: "6.1.0".into(),
            qemu_version: "QEMU emulator version 10.0.2".into(),
            qemu_path: String::new(),
        },
        accel: markbench::stages::vm::Accel::Tcg,
        accel_reason: "asked for".into(),
        // The sentence of a run from before it was derived.
        timing: markbench::record::TimingDecision {
            recorded_sentence: Some("wall".into()),
            ..Default::default()
        },
        seed: 3,
        margin: 0.02,
        boots_per_variant: 4,
        iterations: 3,
        warmup: 1,
        cpus: vec![2],
        memory_mib: 512,
        kernels: variants
            .iter()
            .map(|v| kernel(v, &format!("{v}-key")))
            .collect(),
        boots,
        ..Default::default()
    }
}

/// Deterministic samples: at 2 groups markers-on takes `slow` times as long
/// as the baseline and markers-generic 0.99 times; at 4 groups all are equal.
fn samples(variants: &[&str], slow: f64) -> Vec<Sample> {
    let mut out = Vec::new();
    for variant in variants {
        let factor = match *variant {
            "markers-on" => slow,
            "markers-generic" => 0.99,
            _ => 1.0,
        };
        for boot in 0..4u32 {
            for param in [2u64, 4] {
                for iteration in 0..4u32 {
                    let factor = if param == 2 { factor } else { 1.0 };
                    let wobble = 1.0 + 0.004 * ((boot * 7 + iteration * 3) % 5) as f64 - 0.008;
                    out.push(Sample {
                        suite: "variants".into(),
                        workload: "hackbench".into(),
                        metric: "time".into(),
                        unit: "s".into(),
                        higher_is_better: false,
                        param,
                        cpus: 2,
                        variant: variant.to_string(),
                        boot,
                        iteration,
                        warmup: iteration == 0,
                        value: param as f64 * 0.5 * factor * wobble,
                        started_at: String::new(),
                    });
                }
            }
        }
    }
    out
}

/// Writes a run directory of `meta` and `samples` under `root/name`.
fn run_dir(root: &Path, name: &str, meta: &RunMeta, samples: &[Sample]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    meta.write(&dir).unwrap();
    let mut writer = SampleWriter::open(&dir).unwrap();
    for s in samples {
        writer.append(s).unwrap();
    }
    dir
}

#[test]
fn report_of_three_variants() {
    let text = markbench::stages::report::render(
        &meta(&VARIANTS),
        &samples(&VARIANTS, 1.1),
        Default::default(),
    );
    insta::assert_snapshot!(text);
}

#[test]
fn each_candidate_has_its_column_group_and_verdict() {
    let text = markbench::stages::report::render(
        &meta(&VARIANTS),
        &samples(&VARIANTS, 1.1),
        Default::default(),
    );
    assert!(
        text.contains("# markbench: markers-off vs markers-on, markers-generic"),
        "{text}"
    );
    assert!(
        text.contains("- markers-on against markers-off: "),
        "{text}"
    );
    assert!(
        text.contains("- markers-generic against markers-off: "),
        "{text}"
    );
    let header = text
        .lines()
        .find(|l| l.starts_with("| groups |"))
        .expect("a results table");
    assert!(
        header.contains("| markers-off [s] | markers-on [s] | diff [%] | 95% CI of diff [%] | verdict | markers-generic [s] | diff [%] |"),
        "{header}"
    );
    let row = text.lines().find(|l| l.starts_with("| 2 |")).unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // markers-on: +10% and a regression; markers-generic: -1%.
    assert_eq!(cells[4], "+10", "{row}");
    assert_eq!(cells[6], "**regression**", "{row}");
    assert_eq!(cells[8], "-1", "{row}");
    // The family is both candidates at both points.
    assert!(
        text.contains(
            "adjusted over all 4 comparisons of this report (2 candidates × 2 points, Holm)"
        ),
        "{text}"
    );
}

#[test]
fn summary_json_lists_every_comparison() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = run_dir(
        tmp.path(),
        "run",
        &meta(&VARIANTS),
        &samples(&VARIANTS, 1.1),
    );
    markbench::stages::report::write(&dir).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let comparisons = doc["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 2);
    for (c, candidate) in comparisons.iter().zip(&VARIANTS[1..]) {
        assert_eq!(c["baseline"], "markers-off");
        assert_eq!(c["candidate"], *candidate);
        assert_eq!(c["against"], "baseline");
    }
    assert_eq!(comparisons[0]["verdicts"]["regression"], 1);
    assert_eq!(comparisons[1]["verdicts"]["regression"], 0);
    // One entry per comparison and point.
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    let with: Vec<&str> = points.iter().map(|p| p["with"].as_str().unwrap()).collect();
    assert_eq!(
        with,
        [
            "markers-on",
            "markers-on",
            "markers-generic",
            "markers-generic"
        ]
    );
    // Each comparison has its plots, and the report links them.
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for candidate in &VARIANTS[1..] {
        let stem = format!("hackbench-time-2cpu-{candidate}");
        assert!(
            dir.join(format!("plots/{stem}-metric.svg")).is_file(),
            "{stem}"
        );
        assert!(
            dir.join(format!("plots/{stem}-diff.png")).is_file(),
            "{stem}"
        );
        assert!(
            report.contains(&format!("(plots/{stem}-diff.png)")),
            "{stem}"
        );
    }
}

#[test]
fn a_variant_without_values_at_a_point_leaves_the_other_points_analysed() {
    // markers-generic's workload failed at 4 groups on every boot.
    let samples: Vec<Sample> = samples(&VARIANTS, 1.1)
        .into_iter()
        .filter(|s| !(s.variant == "markers-generic" && s.param == 4))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let dir = run_dir(tmp.path(), "run", &meta(&VARIANTS), &samples);
    markbench::stages::report::write(&dir).unwrap();
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(!report.contains("could not be computed"), "{report}");
    let row = |param: &str| {
        let line = report
            .lines()
            .find(|l| l.starts_with(&format!("| {param} |")))
            .unwrap_or_else(|| panic!("no row {param} in\n{report}"));
        line.split('|')
            .map(str::trim)
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let (two, four) = (row("2"), row("4"));
    assert_eq!(two[6], "**regression**", "{two:?}");
    assert_eq!(four[6], "equivalent", "{four:?}");
    assert!(four.iter().any(|c| c == "insufficient data"), "{four:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let comparisons = doc["comparisons"].as_array().unwrap();
    assert_eq!(comparisons[0]["verdicts"]["regression"], 1);
    assert_eq!(comparisons[0]["verdicts"]["equivalent"], 1);
    assert_eq!(comparisons[1]["verdicts"]["insufficient_data"], 1);
    assert_eq!(comparisons[1]["verdicts"]["improvement"], 1);
}

#[test]
fn diff_compares_any_variant_of_two_runs_of_three() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(&VARIANTS);
    let baseline = run_dir(tmp.path(), "base", &m, &samples(&VARIANTS, 1.0));
    let candidate = run_dir(tmp.path(), "cand", &m, &samples(&VARIANTS, 1.1));
    let out = tmp.path().join("diff");
    // Which of two candidates is not guessed.
    let err = markbench::jobs::diff::diff(&baseline, &candidate, None, &out).unwrap_err();
    assert!(
        err.to_string()
            .contains("the run has 2 candidates (markers-on, markers-generic): name the one"),
        "{err}"
    );
    assert!(!out.exists(), "nothing is written");
    markbench::jobs::diff::diff(&baseline, &candidate, Some("markers-generic"), &out).unwrap();
    let diffed = read_samples(&out).unwrap();
    assert!(diffed
        .iter()
        .all(|s| s.variant.ends_with(":markers-generic")));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("# markbench: baseline:markers-generic vs candidate:markers-generic"),
        "{report}"
    );
}

#[test]
fn nightly_gates_every_candidate_of_a_run_of_three() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(&VARIANTS);
    let baseline = run_dir(tmp.path(), "base", &m, &samples(&VARIANTS, 1.0));
    // Tonight markers-generic's workload failed at 4 groups.
    let tonight: Vec<Sample> = samples(&VARIANTS, 1.3)
        .into_iter()
        .filter(|s| !(s.variant == "markers-generic" && s.param == 4))
        .collect();
    let candidate = run_dir(tmp.path(), "cand", &m, &tonight);
    let gate = markbench::commands::nightly::gate::gate(&baseline, &candidate, None, String::new())
        .unwrap();
    // The summary a CI job page shows, every line of it.
    insta::assert_snapshot!(
        "gate_summary_of_three_variants",
        gate.summary
            .replace(&tmp.path().display().to_string(), "TMP")
    );
    // Only markers-on got slower, at 2 groups.
    assert_eq!(
        (gate.status, gate.regressed.len()),
        (markbench::base::exit::ExitStatus::Regression, 1),
        "{}",
        gate.summary
    );
    assert!(
        gate.summary.contains(
            "**Not compared** (1 point(s) measured in one run only): markers-generic: \
             hackbench on 2 CPU(s), groups 4 (no values in this run)."
        ),
        "{}",
        gate.summary
    );
    assert!(
        gate.summary
            .contains("| markers-on | hackbench | 2 | groups 2 |"),
        "{}",
        gate.summary
    );
    for candidate_variant in &VARIANTS[1..] {
        let dir = candidate.join(format!("diff-baseline-{candidate_variant}"));
        assert!(dir.join("report.md").is_file(), "{}", dir.display());
        assert!(gate
            .summary
            .contains(&format!(", variant {candidate_variant}:")));
    }
}

#[test]
fn shards_of_a_run_of_three_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let all = samples(&VARIANTS, 1.1);
    let shard = |index: u32, param: u64| {
        let mut m = meta(&VARIANTS);
        m.shard = Some(ShardMeta {
            index,
            count: 2,
            pieces: vec![format!("hackbench {param}")],
        });
        let part: Vec<Sample> = all.iter().filter(|s| s.param == param).cloned().collect();
        run_dir(tmp.path(), &format!("shard-{index}"), &m, &part)
    };
    let dirs = vec![shard(0, 2), shard(1, 4)];
    let out = tmp.path().join("merged");
    markbench::jobs::merge::merge(&dirs, &out).unwrap();
    let merged = std::fs::read_to_string(out.join("report.md")).unwrap();
    let whole = markbench::stages::report::render(&meta(&VARIANTS), &all, Default::default());
    // The merged run's tables are the unsharded run's.
    let table_rows = |text: &str| -> Vec<String> {
        let start = text.find("## Results").unwrap();
        let end = text.find("## Significance").unwrap();
        text[start..end]
            .lines()
            .filter(|l| l.starts_with('|'))
            .map(String::from)
            .collect()
    };
    assert_eq!(table_rows(&merged), table_rows(&whole), "{merged}");
    assert_eq!(table_rows(&merged).len(), 4, "{merged}");

    // A shard of other variants is not part of the sweep.
    let mut other = meta(&VARIANTS[..2]);
    other.shard = Some(ShardMeta {
        index: 1,
        count: 2,
        pieces: Vec::new(),
    });
    let odd = run_dir(tmp.path(), "odd", &other, &[]);
    let e =
        markbench::jobs::merge::merge(&[dirs[0].clone(), odd], &tmp.path().join("m2")).unwrap_err();
    assert!(e.to_string().contains("variants"), "{e}");
}

#[test]
fn noise_floor_reads_ab_runs_with_several_candidates() {
    let tmp = tempfile::tempdir().unwrap();
    let aa_names = ["markers-off", "markers-off-again", "markers-off-third"];
    let mut aa = meta(&aa_names);
    for k in &mut aa.kernels {
        k.build_key = "same-key".into();
    }
    let aa_samples: Vec<Sample> = samples(&["markers-off"; 1], 1.0)
        .into_iter()
        .flat_map(|s| {
            aa_names.map(|v| Sample {
                variant: v.into(),
                ..s.clone()
            })
        })
        .collect();
    let aa_dir = run_dir(tmp.path(), "aa", &aa, &aa_samples);
    let ab_dir = run_dir(tmp.path(), "ab", &meta(&VARIANTS), &samples(&VARIANTS, 1.1));

    let load = |dir: &Path| {
        let meta = RunMeta::read(dir).unwrap();
        markbench::stages::analysis::analyse(&meta, &read_samples(dir).unwrap())
    };
    let aa_points = markbench::jobs::noise::aa_points(&load(&aa_dir)).unwrap();
    assert_eq!(aa_points.len(), 2);
    assert_eq!(aa_points[0].between_boot_cov.len(), 3);
    let ab_points = markbench::jobs::noise::ab_points(&load(&ab_dir)).unwrap();
    assert_eq!(ab_points.len(), 4);
    let rows = markbench::jobs::noise::evaluate(&aa_points, &ab_points, &Default::default());
    // One row per candidate and point.
    assert_eq!(rows.len(), 4);
    let text = markbench::stages::report::noise::render(&rows, &Default::default());
    assert!(text.contains("| markers-on: +10.00% ["), "{text}");
    assert!(text.contains("| markers-generic: -1.00% ["), "{text}");
    // The report calibrates each copy against the baseline.
    let report = markbench::stages::report::render(&aa, &aa_samples, Default::default());
    for copy in &aa_names[1..] {
        let line = format!("**A/A calibration** ({copy} against markers-off: the same kernel");
        assert!(report.contains(&line), "{report}");
    }
    // The command takes the pair of runs as they are.
    markbench::commands::noise_floor::run(&aa_dir, Some(&ab_dir), &Default::default()).unwrap();
}

#[test]
fn a_series_shows_each_kernel_against_the_baseline_and_the_one_before() {
    let mut m = meta(&VARIANTS);
    m.series = true;
    for (k, subject) in m.kernels.iter_mut().zip(["base", "slow path", "fast path"]) {
        k.origin = Some(markbench::record::OriginRecord {
            source: "git tree".into(),
            subject: Some(subject.into()),
            ..Default::default()
        });
    }
    let text = markbench::stages::report::render(&m, &samples(&VARIANTS, 1.1), Default::default());
    let series = &text[text.find("## Series").expect("no Series section")..];
    let first = &series[series.find("\n### ").unwrap() + 1..];
    let table = &first[..first.find("\n### ").unwrap_or(first.len())];
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| markers-"))
        .collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(rows[0].starts_with("| markers-off | base |") && rows[0].contains("baseline"));
    // markers-on: 10% slower than the baseline, and so than the kernel before it.
    assert!(
        rows[1].contains("| slow path |") && rows[1].matches("**regression**").count() == 2,
        "{}",
        rows[1]
    );
    // markers-generic: 1% faster than the baseline, 10% faster than markers-on.
    assert!(
        rows[2].contains("| fast path |") && rows[2].ends_with("**improvement** |"),
        "{}",
        rows[2]
    );
    assert!(
        text.contains("2 kernels against the baseline and 1 against the kernel before them"),
        "{text}"
    );
    let summary: serde_json::Value = serde_json::from_str(
        &markbench::stages::report::summary_json(
            &m,
            &markbench::stages::report::analyse(&m, &samples(&VARIANTS, 1.1)),
            None,
        )
        .unwrap(),
    )
    .unwrap();
    let against: Vec<&str> = summary["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["against"].as_str().unwrap())
        .collect();
    assert_eq!(against, ["baseline", "baseline", "previous"]);
    let with_diff = markbench::stages::report::render(
        &m,
        &samples(&VARIANTS, 1.1),
        markbench::stages::report::RunFiles {
            source_diff: Some("# markers-on against markers-off\ncommits a..b:\nb slow path\n"),
            ..Default::default()
        },
    );
    let compared = &with_diff[with_diff.find("## What was compared").unwrap()..];
    let compared = &compared[..compared.find("\n## Size").unwrap_or(compared.len())];
    assert!(
        compared.contains("Source difference") && compared.contains("b slow path"),
        "{compared}"
    );
    // Two kernels of a series are a pair: no step beyond the comparison.
    let mut pair = meta(&VARIANTS[..2]);
    pair.series = true;
    let text =
        markbench::stages::report::render(&pair, &samples(&VARIANTS[..2], 1.1), Default::default());
    assert!(
        text.contains("## Series") && !text.contains("kernel before them"),
        "{text}"
    );
}
