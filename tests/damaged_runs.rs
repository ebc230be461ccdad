//! Run directories damaged the ways disks, crashes and hands damage files,
//! each made from a real run's files (the partial quick run of
//! `tests/fixtures/runs/before-format-number`, marked complete so the
//! history takes it): `report` on each ends with 0 or 2 (1 for an output it
//! cannot write), never a panic or an abort, within seconds; a torn last
//! line is read without it and the report says a sample is missing; and
//! `history` over the good run and every damaged copy keeps the good ones,
//! names the skipped ones on the screen and on the page, and exits 0.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const FIXTURE: &str = "tests/fixtures/runs/before-format-number";

/// Each command on a damaged directory must end: one that reads a FIFO or
/// `/dev/zero` forever is killed after this and fails the test. A hang, not
/// a speed, is what it catches, so it leaves a shared machine's load ample
/// room.
const ENDS_WITHIN: Duration = Duration::from_secs(60);

/// A copy of the real run, complete, under `root/name`.
fn good_copy(root: &Path, name: &str) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(&fixture).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let meta = dir.join("meta.toml");
    let text = std::fs::read_to_string(&meta).unwrap();
    assert!(text.contains("\ncomplete = false\n"), "the fixture changed");
    std::fs::write(
        &meta,
        text.replace("\ncomplete = false\n", "\ncomplete = true\n"),
    )
    .unwrap();
    dir
}

fn samples_text(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("samples.csv")).unwrap()
}

fn write_samples(dir: &Path, text: impl AsRef<[u8]>) {
    std::fs::write(dir.join("samples.csv"), text).unwrap();
}

/// Bytes that look like nothing: a fixed pseudo-random sequence.
fn garbage(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// One damaged copy: its name, how it is damaged, the exit status
/// `report` must end with, and what its message must say.
struct Case {
    name: &'static str,
    damage: fn(&Path),
    status: i32,
    says: &'static str,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "torn-line",
            damage: |d| {
                let text = samples_text(d);
                write_samples(d, &text[..text.len() - 30]);
            },
            status: 0,
            says: "samples.csv:151: the last line is incomplete",
        },
        Case {
            name: "zeros-after-power-loss",
            damage: |d| {
                let mut bytes = samples_text(d).into_bytes();
                bytes.truncate(bytes.len() - 40);
                bytes.extend(std::iter::repeat_n(0u8, 4096));
                write_samples(d, bytes);
            },
            status: 0,
            says: "the last line is incomplete",
        },
        Case {
            name: "binary-garbage",
            damage: |d| {
                let mut bytes = samples_text(d).into_bytes();
                let middle = bytes.len() / 2;
                bytes.splice(middle..middle + 2000, garbage(2000));
                write_samples(d, bytes);
            },
            status: 2,
            says: "samples.csv:",
        },
        Case {
            name: "not-a-number",
            damage: |d| {
                let text = samples_text(d);
                let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                let mut fields: Vec<&str> = lines[4].split(',').collect();
                fields[11] = "2.1x4";
                lines[4] = fields.join(",");
                write_samples(d, lines.join("\n") + "\n");
            },
            status: 2,
            says: "samples.csv:5: malformed sample row",
        },
        Case {
            name: "missing-column",
            damage: |d| {
                let text = samples_text(d);
                let cut = |line: &str| {
                    let mut fields: Vec<&str> = line.split(',').collect();
                    fields.remove(11);
                    fields.join(",")
                };
                write_samples(d, text.lines().map(cut).collect::<Vec<_>>().join("\n") + "\n");
            },
            status: 2,
            says: "samples.csv:2: malformed sample row",
        },
        Case {
            name: "duplicated-rows",
            damage: |d| {
                let text = samples_text(d);
                let rows = text.split_once('\n').unwrap().1;
                write_samples(d, format!("{text}{rows}"));
            },
            status: 2,
            says: "samples.csv:152: malformed sample row: the sample of line 2 recorded twice",
        },
        Case {
            name: "huge-field",
            damage: |d| {
                let text = samples_text(d);
                let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                let mut fields: Vec<String> = lines[4].split(',').map(str::to_string).collect();
                fields[1] = "h".repeat(16 << 20);
                lines[4] = fields.join(",");
                write_samples(d, lines.join("\n") + "\n");
            },
            status: 2,
            says: "samples.csv:5: malformed sample row: field 2 is 16777216 bytes long",
        },
        Case {
            name: "samples-are-dev-zero",
            damage: |d| {
                std::fs::remove_file(d.join("samples.csv")).unwrap();
                std::os::unix::fs::symlink("/dev/zero", d.join("samples.csv")).unwrap();
            },
            status: 2,
            says: "samples.csv: not a regular file (a character device)",
        },
        Case {
            name: "samples-are-a-fifo",
            damage: |d| {
                let path = d.join("samples.csv");
                std::fs::remove_file(&path).unwrap();
                let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            },
            status: 2,
            says: "samples.csv: not a regular file (a FIFO)",
        },
        Case {
            name: "samples-of-2-gib",
            damage: |d| {
                // Sparse: a length, no disk space.
                let file = std::fs::File::create(d.join("samples.csv")).unwrap();
                file.set_len(2 << 30).unwrap();
            },
            status: 2,
            says: "more than the 1073741824 bytes",
        },
        Case {
            name: "meta-missing",
            damage: |d| std::fs::remove_file(d.join("meta.toml")).unwrap(),
            status: 2,
            says: "not a run directory (no meta.toml)",
        },
        Case {
            name: "meta-garbage",
            damage: |d| std::fs::write(d.join("meta.toml"), garbage(3000)).unwrap(),
            status: 2,
            says: "meta.toml:",
        },
        Case {
            name: "meta-wrong-type",
            damage: |d| {
                let path = d.join("meta.toml");
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(text.contains("\niterations = 18\n"), "the fixture changed");
                std::fs::write(&path, text.replace("\niterations = 18\n", "\niterations = \"many\"\n"))
                    .unwrap();
            },
            status: 2,
            says: "meta.toml:21:14: malformed run metadata: invalid type: string \"many\", expected u32",
        },
        Case {
            name: "meta-torn",
            damage: |d| {
                let path = d.join("meta.toml");
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(&path, &text[..text.len() / 2]).unwrap();
            },
            status: 2,
            says: "meta.toml:",
        },
        Case {
            name: "meta-of-a-future-version",
            damage: |d| {
                let path = d.join("meta.toml");
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(&path, format!("format = 999\n{text}")).unwrap();
            },
            status: 2,
            says: "newer markbench",
        },
        Case {
            name: "report-unwritable",
            damage: |d| std::fs::create_dir(d.join("report.md")).unwrap(),
            status: 1,
            says: "report.md",
        },
    ]
}

fn markbench(args: &[&Path]) -> (i32, String) {
    let started = Instant::now();
    let mut command = Command::cargo_bin("markbench").unwrap();
    for a in args {
        command.arg(a);
    }
    let out = command.timeout(ENDS_WITHIN).output().unwrap();
    let took = started.elapsed();
    let mut stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if stderr.len() > 4000 {
        // A message that repeats a huge field: enough of it to tell.
        let cut = (0..=4000)
            .rev()
            .find(|&i| stderr.is_char_boundary(i))
            .unwrap_or(0);
        stderr.truncate(cut);
    }
    // A signal (an abort, the timeout's kill) leaves no code.
    let code = out.status.code().unwrap_or_else(|| {
        panic!(
            "{args:?} died after {took:?} (killed at {ENDS_WITHIN:?} if it had not ended): {out:?}"
        )
    });
    assert!(!stderr.contains("panicked"), "{args:?} panicked:\n{stderr}");
    (code, stderr)
}

#[test]
fn report_on_each_damaged_run_ends_with_its_status_and_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    for case in cases() {
        let dir = good_copy(tmp.path(), case.name);
        (case.damage)(&dir);
        let (code, stderr) = markbench(&[Path::new("report"), &dir]);
        assert_eq!(code, case.status, "{}: {stderr}", case.name);
        assert!(stderr.contains(case.says), "{}: {stderr}", case.name);
        if case.status == 0 {
            let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
            assert!(
                report.contains("> **Missing sample**: line "),
                "{}: {report}",
                case.name
            );
        }
    }
}

#[test]
fn an_undamaged_run_reports_no_missing_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = good_copy(tmp.path(), "good");
    let (code, stderr) = markbench(&[Path::new("report"), &dir]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("WARNING"), "{stderr}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(!report.contains("Missing sample"), "{report}");
}

#[test]
fn diff_against_a_damaged_run_refuses_it_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let good = good_copy(tmp.path(), "good");
    for case in cases().into_iter().filter(|c| c.status == 2) {
        let dir = good_copy(tmp.path(), case.name);
        (case.damage)(&dir);
        let out = tmp.path().join(format!("diff-{}", case.name));
        let (code, stderr) = markbench(&[Path::new("diff"), &good, &dir, Path::new("--out"), &out]);
        assert_eq!(code, 2, "{}: {stderr}", case.name);
        assert!(stderr.contains(case.says), "{}: {stderr}", case.name);
    }
}

#[test]
fn history_keeps_the_good_runs_and_lists_the_skipped_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    // Named as run directories are, by their start: the good run first.
    good_copy(&reports, "20261202-000000-quick");
    let mut unreadable = Vec::new();
    for (i, case) in cases().into_iter().enumerate() {
        let name = format!("20261203-{:06}-{}", i, case.name);
        let dir = good_copy(&reports, &name);
        (case.damage)(&dir);
        if case.status == 2 {
            unreadable.push(name);
        }
    }
    let out = tmp.path().join("history");
    let (code, stderr) = markbench(&[Path::new("history"), &reports, Path::new("--out"), &out]);
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(out.join("history.md")).unwrap();
    assert!(page.contains("20261202-000000-quick"), "{page}");
    let skipped = page
        .split("## Skipped directories")
        .nth(1)
        .unwrap_or_else(|| panic!("{page}"));
    for name in &unreadable {
        assert!(
            skipped.contains(name.as_str()),
            "{name} not listed:\n{skipped}"
        );
        assert!(
            stderr.contains(&format!("skipped {}", reports.join(name).display())),
            "{name} not named on the screen:\n{stderr}"
        );
    }
    // The torn copy and the one whose report cannot be written are runs.
    assert!(!skipped.contains("torn-line"), "{skipped}");
    assert!(!skipped.contains("report-unwritable"), "{skipped}");
    assert!(out.join("history.html").is_file());
}
