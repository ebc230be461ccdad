//! `markbench history` on 24 nights made up here, as a person would look at
//! them: a flat point, a point that steps up 3% after night 7, a point
//! missing on two nights, and another QEMU from night 13 on. The change
//! point must lie between nights 7 and 8 and nowhere else, and the page must
//! render every plot in a real browser (Debian's chromium, headless).

use markbench::record::OriginRecord;
use markbench::record::{GateRecord, RegressedPoint};
use markbench::record::{HostInfo, KernelMeta, RunMeta, Sample, SampleWriter};
use markbench::stages::vm::accel::TimingDecision;
use std::path::{Path, PathBuf};

const NIGHTS: usize = 24;
/// The last night with the first QEMU: the second series begins after it.
const OLD_QEMU_NIGHTS: usize = 12;
/// The last night before the step.
const STEP_AFTER: usize = 7;
const STEP: f64 = 0.03;
const MISSING: [usize; 2] = [4, 9];
const BOOTS: u32 = 4;
const ITERATIONS: u32 = 3;
const VARIANTS: [&str; 2] = ["base", "tip"];

/// The points: (cpus, groups); the flat one, the one that steps, the one
/// missing on two nights.
const FLAT: (u32, u64) = (1, 4);
const STEPPED: (u32, u64) = (2, 4);
const GAPPY: (u32, u64) = (1, 8);

#[path = "common/split_mix.rs"]
mod split_mix;
use split_mix::SplitMix64;

fn commit(night: usize) -> String {
    format!("{night:02}").repeat(20)
}

fn meta(night: usize) -> RunMeta {
    let qemu = if night <= OLD_QEMU_NIGHTS {
        "QEMU emulator version 8.2.2"
    } else {
        "QEMU emulator version 9.2.0"
    };
    RunMeta {
        suite: "quick".into(),
        suite_path: "suites/quick.toml".into(),
        started_at: format!("2026-11-{night:02}T02:00:00+00:00"),
        complete: true,
        accel: markbench::stages::vm::Accel::Tcg,
        timing: TimingDecision {
            recorded_sentence: Some("wall".into()),
            ..TimingDecision::wall("1 vCPU")
        },
        host: HostInfo {
            hostname: "ci".into(),
            qemu_version: qemu.into(),
            ..Default::default()
        },
        boots_per_variant: BOOTS,
        iterations: ITERATIONS,
        cpus: vec![1, 2],
        kernels: VARIANTS
            .iter()
            .map(|v| KernelMeta {
                variant: v.to_string(),
                origin: (*v == "tip").then(|| OriginRecord {
                    source: "/src/linux".into(),
                    commit: Some(commit(night)),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The true value of a point on a night, for the tracked variant.
fn level(night: usize, (cpus, groups): (u32, u64), variant: &str) -> f64 {
    let base = 0.5 * cpus as f64 + 0.1 * groups as f64;
    if variant == "tip" && (cpus, groups) == STEPPED && night > STEP_AFTER {
        base * (1.0 + STEP)
    } else {
        base
    }
}

fn write_night(reports: &Path, night: usize, rng: &mut SplitMix64) -> PathBuf {
    let dir = reports.join(format!("202611{night:02}-020000-quick"));
    std::fs::create_dir_all(&dir).unwrap();
    meta(night).write(&dir).unwrap();
    let mut writer = SampleWriter::open_as(&dir, "ci").unwrap();
    for point in [FLAT, STEPPED, GAPPY] {
        if point == GAPPY && MISSING.contains(&night) {
            continue;
        }
        // 0.3% between boots as measured on the 1-vCPU point, 0.1% within.
        for variant in VARIANTS {
            for boot in 0..BOOTS {
                let boot_effect = 0.003 * rng.standard_normal();
                for iteration in 0..ITERATIONS {
                    let value = level(night, point, variant)
                        * (1.0 + boot_effect + 0.001 * rng.standard_normal());
                    let sample = Sample {
                        suite: "quick".into(),
                        workload: "hackbench".into(),
                        metric: "time".into(),
                        unit: "s".into(),
                        higher_is_better: false,
                        param: point.1,
                        cpus: point.0,
                        variant: variant.into(),
                        boot,
                        iteration,
                        warmup: false,
                        value,
                        started_at: String::new(),
                    };
                    writer.append_from(&sample, "ci").unwrap();
                }
            }
        }
    }
    // The gate's record: the night after the step regressed on it.
    let regressed = if night == STEP_AFTER + 1 {
        vec![RegressedPoint {
            variant: "tip".into(),
            workload: "hackbench".into(),
            metric: "time".into(),
            cpus: STEPPED.0,
            param: STEPPED.1,
        }]
    } else {
        Vec::new()
    };
    if night > 1 {
        GateRecord {
            baseline: String::new(),
            regression: !regressed.is_empty(),
            regressed,
        }
        .write(&dir)
        .unwrap();
    }
    dir
}

fn nights(reports: &Path) {
    let mut rng = SplitMix64(7);
    for night in 1..=NIGHTS {
        write_night(reports, night, &mut rng);
    }
}

#[test]
fn the_step_is_found_between_nights_7_and_8_and_nowhere_else() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    nights(&reports);
    let out = tmp.path().join("history");
    let histories = markbench::jobs::history::history(std::slice::from_ref(&reports), &out, None)
        .unwrap()
        .histories;
    assert_eq!(histories.len(), 1);
    let h = &histories[0];
    assert_eq!((h.runs.len(), h.variant.as_str()), (NIGHTS, "tip"));
    // Another QEMU begins a new series at night 13 (index 12).
    assert_eq!(h.series_starts.len(), 1, "{:?}", h.series_starts);
    assert_eq!(h.series_starts[0].0, OLD_QEMU_NIGHTS);
    assert!(
        matches!(
            h.series_starts[0].1[0],
            markbench::record::ConditionChange::Qemu(_)
        ),
        "{:?}",
        h.series_starts[0].1
    );

    let point = |(cpus, param): (u32, u64)| {
        h.points
            .iter()
            .find(|p| p.key.cpus == cpus && p.key.param == param)
            .unwrap()
    };
    assert!(point(FLAT).changes.is_empty(), "{:?}", point(FLAT).changes);
    assert!(
        point(GAPPY).changes.is_empty(),
        "{:?}",
        point(GAPPY).changes
    );
    let gaps: Vec<usize> = (0..NIGHTS)
        .filter(|&i| point(GAPPY).values[i].is_none())
        .map(|i| i + 1)
        .collect();
    assert_eq!(gaps, MISSING);

    let stepped = point(STEPPED);
    assert_eq!(stepped.changes.len(), 1, "{:?}", stepped.changes);
    let change = &stepped.changes[0];
    // Runs are numbered from 1 on the page, indexed from 0 here.
    assert_eq!(
        (change.before + 1, change.after + 1),
        (STEP_AFTER, STEP_AFTER + 1)
    );
    let interval = change.interval.unwrap();
    assert!(interval.lower < STEP && STEP < interval.upper, "{change:?}");
    assert!(stepped.values[STEP_AFTER].unwrap().regressed);
    let command = change.bisect.as_deref().unwrap();
    assert!(
        command.starts_with("markbench bisect --kernel-source /src/linux")
            && command.contains(&format!("--good {} --bad {}", commit(7), commit(8)))
            && command.contains("--point hackbench/time@2=4"),
        "{command}"
    );

    let md = std::fs::read_to_string(out.join("history.md")).unwrap();
    assert!(md.contains("| point | latest value | change since the last change point | trend |"));
    assert!(md.contains("between runs 7 and 8"), "{md}");
    for p in &h.points {
        assert!(md.contains(&format!(
            "plots/quick-hackbench-time-{}cpu-{}.svg",
            p.key.cpus, p.key.param
        )));
    }
    let html = std::fs::read_to_string(out.join("history.html")).unwrap();
    // Nothing fetched: no script, no link or image elsewhere (the SVG
    // namespace URI names, it is never loaded).
    assert!(!html.contains("<script"));
    for fetch in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(fetch), "{fetch}");
    }
    browser_renders_every_plot(&out.join("history.html"), h.points.len());
}

/// Opens the page in headless Chromium and counts, in the DOM it renders,
/// the trend figures whose SVG holds drawn marks.
fn browser_renders_every_plot(page: &Path, points: usize) {
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        let required = std::env::var_os("CI").is_some()
            || std::env::var_os("MARKBENCH_REQUIRE_CHROMIUM").is_some();
        assert!(!required, "chromium is required (CI or MARKBENCH_REQUIRE_CHROMIUM set) but /usr/bin/chromium is missing: `markbench setup --ci` installs it");
        eprintln!("skipping the browser check: /usr/bin/chromium is not installed");
        return;
    }
    let profile = tempfile::tempdir().unwrap();
    let run = |extra: &[String]| {
        let out = std::process::Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(format!("file://{}", page.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dom = run(&["--dump-dom".to_string()]);
    let figures: Vec<&str> = dom.split("<figure class=\"trend\">").skip(1).collect();
    assert_eq!(figures.len(), points, "one trend figure per point");
    for figure in figures {
        let svg = &figure[..figure.find("</figure>").unwrap()];
        assert!(
            svg.trim_start().starts_with("<svg"),
            "{}",
            &svg[..80.min(svg.len())]
        );
        assert!(
            svg.matches("<circle").count() >= 10,
            "a plot without its values"
        );
    }
    // A screenshot to look at when the page changes (kept when asked for).
    if let Some(shot) = std::env::var_os("MARKBENCH_HISTORY_SCREENSHOT") {
        run(&[
            format!("--screenshot={}", PathBuf::from(shot).display()),
            "--window-size=1200,3000".to_string(),
        ]);
    }
}

#[test]
fn a_directory_without_a_complete_run_is_refused_and_nothing_written() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = tmp.path().join("history");
    let result = assert_cmd::Command::cargo_bin("markbench")
        .unwrap()
        .arg("history")
        .arg(&empty)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("markbench: ") && stderr.contains(&empty.display().to_string()),
        "{stderr}"
    );
    assert!(!out.exists());
}
