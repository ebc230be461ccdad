//! Run directories written before the run format was numbered still read
//! and render: one in the shape the first report-writing version wrote
//! (workloads as JSON lines, no timing, no hosts in samples.csv), and a real
//! partial quick run of the last version before the number (icount, timing
//! as a sentence and as data). A run of a newer format is refused plainly.

use assert_cmd::Command;
use markbench::record::{BootEnd, RunFormat, RunMeta, RUN_FORMAT};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name)
}

/// A copy of a fixture run to render into, so the fixtures stay as written.
fn copy_of(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    tmp
}

fn report(dir: &Path) -> String {
    Command::cargo_bin("markbench")
        .unwrap()
        .arg("report")
        .arg(dir)
        .assert()
        .success();
    std::fs::read_to_string(dir.join("report.md")).unwrap()
}

#[test]
fn the_first_format_reads_as_the_current_one_and_renders() {
    let fixture = fixture("first-format");
    let text = std::fs::read_to_string(fixture.join("meta.toml")).unwrap();
    assert!(!text.contains("format"), "the fixture predates the number");

    let meta = RunMeta::read(&fixture).unwrap();
    assert_eq!(meta.format, RunFormat(RUN_FORMAT));
    assert!(!meta.counts_instructions());
    assert_eq!(meta.timing_mode().to_string(), "wall");
    assert_eq!(meta.workloads.len(), 1);
    assert!(
        meta.workload_lines()[0].starts_with("hackbench -g 2 -l 20"),
        "{:?}",
        meta.workloads
    );

    let run = copy_of("first-format");
    let md = report(run.path());
    assert!(
        md.contains("markers-off") && md.contains("markers-on"),
        "{md}"
    );
    assert!(md.contains("hackbench -g 2 -l 20"), "{md}");
    assert!(
        md.contains("around each workload run; wall\n"),
        "the timing line names the one mode of the time:\n{md}"
    );
    assert!(
        !md.contains("{\"kind\""),
        "a JSON line reached the report:\n{md}"
    );
    // 2 boots a side, 3 measured iterations each: the means are in the table.
    assert!(md.contains("0.471"), "{md}");
}

#[test]
fn a_run_of_the_last_unnumbered_version_keeps_its_timing_and_renders() {
    let meta = RunMeta::read(&fixture("before-format-number")).unwrap();
    assert_eq!(meta.format, RunFormat(RUN_FORMAT));
    assert!(meta.counts_instructions());
    assert_eq!(meta.timing_mode().to_string(), "icount shift=4");
    assert!(!meta.complete);

    let run = copy_of("before-format-number");
    let md = report(run.path());
    assert!(md.contains("partial"), "{md}");
    assert!(md.contains("icount"), "{md}");
    assert!(md.contains("hackbench"), "{md}");

    // Its sentences are today's wording of its data: the data alone is kept.
    assert_eq!(meta.timing.recorded_sentence, None);
    assert_eq!(meta.overrides.recorded_words, None);
    assert!(meta.boots.iter().all(|b| b.end == BootEnd::Completed));

    // Rewritten, it carries the current number, none of the sentences
    // derived from its data, and reads the same.
    meta.write(run.path()).unwrap();
    let text = std::fs::read_to_string(run.path().join("meta.toml")).unwrap();
    assert!(
        text.starts_with(&format!("format = {RUN_FORMAT}\n")),
        "{text}"
    );
    for derived in ["\ntiming = ", "\noverrides = ", "\nok = ", "order = [\""] {
        assert!(!text.contains(derived), "{derived:?} in\n{text}");
    }
    assert_eq!(RunMeta::read(run.path()).unwrap(), meta);
    let rewritten = report(run.path());
    assert_eq!(
        rewritten, md,
        "the rewritten run renders as the recorded one"
    );
}

#[test]
fn a_damaged_order_entry_costs_only_itself() {
    let run = copy_of("first-format");
    let whole = report(run.path());
    let path = run.path().join("meta.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged = text.replace("\"2 markers-on 1cpu boot1\"", "\"2 markers-on one-cpu\"");
    assert_ne!(damaged, text, "the fixture changed");
    std::fs::write(&path, damaged).unwrap();

    let meta = RunMeta::read(run.path()).unwrap();
    let indexes: Vec<usize> = meta.order.iter().map(|u| u.index).collect();
    assert_eq!(indexes, [0, 1, 3]);
    assert_eq!(meta.boots.len(), 4, "the boots are all there");

    let out = Command::cargo_bin("markbench")
        .unwrap()
        .arg("report")
        .arg(run.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("meta.toml") && stderr.contains("\"2 markers-on one-cpu\""),
        "the warning names the file and the entry: {stderr}"
    );
    let md = std::fs::read_to_string(run.path().join("report.md")).unwrap();
    assert_eq!(md, whole);
}

#[test]
fn a_run_of_a_newer_format_is_refused_with_exit_2() {
    let run = copy_of("first-format");
    let path = run.path().join("meta.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("format = {}\n{text}", RUN_FORMAT + 1)).unwrap();
    let out = Command::cargo_bin("markbench")
        .unwrap()
        .arg("report")
        .arg(run.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("meta.toml") && stderr.contains("newer markbench"),
        "{stderr}"
    );
    assert!(!run.path().join("report.md").exists());
}

/// A fixture run and its report as the version that wrote it rendered it:
/// read in today's format, it renders the same bytes.
fn renders_as_recorded(name: &str) -> RunMeta {
    let meta = RunMeta::read(&fixture(name)).unwrap();
    assert_eq!(meta.format, RunFormat(RUN_FORMAT));
    let run = copy_of(name);
    let md = report(run.path());
    let recorded = std::fs::read_to_string(fixture(name).join("report.md")).unwrap();
    assert_eq!(md, recorded, "{name}'s report.md changed");
    let txt = std::fs::read_to_string(run.path().join("report.txt")).unwrap();
    let recorded = std::fs::read_to_string(fixture(name).join("report.txt")).unwrap();
    assert_eq!(txt, recorded, "{name}'s report.txt changed");
    meta
}

#[test]
fn a_format_2_merged_run_of_two_hosts_renders_as_it_did() {
    let text = std::fs::read_to_string(fixture("format-2-merged").join("meta.toml")).unwrap();
    assert!(text.starts_with("format = 2\n"), "{text}");
    let meta = renders_as_recorded("format-2-merged");
    assert_eq!(meta.shards.len(), 2);
    // The hosts format 2 joined into one name are data.
    assert_eq!(meta.hostnames(), ["host-a", "host-b"]);
    assert_eq!(meta.host.hostname, "host-a", "the first shard's host");
    assert_eq!(meta.host.cpu_model, "Fake CPU A");
    assert_eq!(meta.cpu_models().len(), 2, "{:?}", meta.cpu_models());
}

#[test]
fn a_format_2_diff_of_two_runs_renders_as_it_did() {
    let text = std::fs::read_to_string(fixture("format-2-diff").join("meta.toml")).unwrap();
    assert!(text.starts_with("format = 2\n"), "{text}");
    let meta = renders_as_recorded("format-2-diff");
    assert_eq!(meta.kernels.len(), 2);
    // The suite is the runs' suite; that it is a diff is data.
    assert_eq!(meta.suite, "fake");
    assert!(meta.diff);
    assert_eq!(meta.suite_title(), "fake (diff of two runs)");
    // Its candidate was the merged run of two hosts.
    assert_eq!(meta.hostnames(), ["host-a", "host-b"]);
    // Written again, it reads the same.
    let run = copy_of("format-2-diff");
    meta.write(run.path()).unwrap();
    let text = std::fs::read_to_string(run.path().join("meta.toml")).unwrap();
    assert!(text.contains("\nsuite = \"fake\"\ndiff = true\n"), "{text}");
    assert!(!text.contains("hostname = \"host-a, host-b\""), "{text}");
    assert_eq!(RunMeta::read(run.path()).unwrap(), meta);
}

/// A suite of a 1-vCPU point and an SMP point, each at a CPU count of its own.
const TWO_POINTS: &str = r#"
name = "two-points"
boots = 1
iterations = 2
warmup = 0
cpus = [1, 2]
memory_mib = 256
[[variant]]
name = "off"
kernel = "markers-off"
[[variant]]
name = "on"
kernel = "markers-on"
[[workload]]
kind = "hackbench"
params = [2]
loops = 5
cpus = [1]
[[workload]]
kind = "hackbench"
params = [4]
loops = 5
cpus = [2]
"#;

/// The plan `compare --resume` gives a run of `format` made with `--cpus 2`.
fn resumed_plan_of_cpus_2(format: u32) -> String {
    use markbench::stages::suite::{FragmentLookup, Suite};
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let copy = run.join(markbench::base::run_dir::SUITE_COPY);
    std::fs::write(&copy, TWO_POINTS).unwrap();
    let lookup = FragmentLookup::BesideSuite {
        cwd: env!("CARGO_MANIFEST_DIR").into(),
    };
    let mut meta = RunMeta {
        format: RunFormat(format),
        suite: "two-points".into(),
        suite_sha256: Suite::load(&copy, &lookup).unwrap().sha256,
        ..RunMeta::default()
    };
    meta.overrides.cpus = Some(vec![2]);
    meta.write(&run).unwrap();
    let out = Command::cargo_bin("markbench")
        .unwrap()
        .args(["compare", "--dry-run", "--timing", "icount", "--resume"])
        .arg(&run)
        .arg("--reports")
        .arg(tmp.path().join("reports"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn a_run_made_when_cpus_replaced_each_workloads_own_resumes_with_the_units_it_started_with() {
    // Then, --cpus 2 ran both points at 2 vCPUs.
    let before = resumed_plan_of_cpus_2(3);
    assert_eq!(
        before.matches("  workload hackbench").count(),
        2,
        "{before}"
    );
    assert!(!before.contains("not run:"), "{before}");
    assert!(
        before.contains("2 boots (1 per variant × 1 CPU count)"),
        "{before}"
    );
    // Now, each workload keeps to its own counts: the 1-vCPU point does not run.
    let now = resumed_plan_of_cpus_2(RUN_FORMAT);
    assert_eq!(now.matches("  workload hackbench").count(), 1, "{now}");
    assert!(
        now.contains("  not run: workload 1, hackbench -g 2")
            && now.contains("(--cpus 2 names none of its CPU counts)"),
        "{now}"
    );
    assert!(
        now.contains("2 boots (1 per variant × 1 CPU count)"),
        "{now}"
    );
}
