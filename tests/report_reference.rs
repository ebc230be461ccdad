//! A reduced run of Aoki 2008's sweep (`suites/ia64-2008.toml` at
//! `--scale 0.02 --cpus 2,4,8 --params 20,50`, and 100 groups on 2 CPUs
//! where markbench's interval lies opposite the mail), written as a run directory
//! and reported: the section that sets each point beside the mail's table,
//! in `report.md` and `report.txt`, pinned as snapshots; the suite's
//! `reference` read back from `meta.toml`.

use markbench::record::{KernelMeta, Recorded, ReferenceTable, RunMeta, Sample, SampleWriter};
use markbench::stages::report;

const VARIANTS: [&str; 2] = ["markers-off-generic", "markers-generic"];

fn meta() -> RunMeta {
    RunMeta {
        suite: "ia64-2008".into(),
        suite_path: "suites/ia64-2008.toml".into(),
        accel: markbench::stages::vm::Accel::Tcg,
        kernels: VARIANTS
            .iter()
            .map(|v| KernelMeta {
                variant: v.to_string(),
                kernel: v.to_string(),
                ..Default::default()
            })
            .collect(),
        cpus: vec![2, 4, 8],
        boots_per_variant: 4,
        iterations: 1,
        margin: 0.02,
        complete: true,
        workloads: vec![Recorded::Data(
            toml::from_str("kind = \"hackbench\"\nparams = [20, 50]\nloops = 2\n").unwrap(),
        )],
        reference: Some(ReferenceTable::Aoki2008),
        overrides: markbench::record::Overrides {
            scale: Some(0.02),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Per CPU count and group count: the markers' factor on the time and the
/// spread between boots, from a clear +3% to a spread no 4 boots resolve.
fn samples() -> Vec<Sample> {
    let points: [(u32, u64, f64, f64); 7] = [
        (2, 20, 1.013, 0.002),
        (2, 50, 1.03, 0.002),
        (2, 100, 0.98, 0.002),
        (4, 20, 1.0, 0.003),
        (4, 50, 0.996, 0.004),
        (8, 20, 1.02, 0.1),
        (8, 50, 1.031, 0.03),
    ];
    let mut out = Vec::new();
    for (cpus, param, factor, spread) in points {
        for (variant, f) in VARIANTS.into_iter().zip([1.0, factor]) {
            for boot in 0..4u32 {
                let wobble = 1.0 + spread * ((boot * 3 % 4) as f64 - 1.5);
                out.push(Sample {
                    suite: "ia64-2008".into(),
                    workload: "hackbench".into(),
                    metric: "time".into(),
                    unit: "s".into(),
                    higher_is_better: false,
                    param,
                    cpus,
                    variant: variant.into(),
                    boot,
                    iteration: 0,
                    warmup: false,
                    value: param as f64 * 0.004 * cpus as f64 * f * wobble,
                    started_at: String::new(),
                });
            }
        }
    }
    out
}

/// The text from `heading` to the next heading of its level.
fn section(text: &str, heading: &str, next: &str) -> String {
    let start = text.find(heading).expect(heading);
    let rest = &text[start..];
    let end = rest[heading.len()..]
        .find(next)
        .map_or(rest.len(), |i| i + heading.len());
    rest[..end].trim_end().to_string()
}

#[test]
fn aoki_2008s_table_beside_a_reduced_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    meta().write(&dir).unwrap();
    let mut writer = SampleWriter::open(&dir).unwrap();
    for s in samples() {
        writer.append(&s).unwrap();
    }
    drop(writer);
    let toml = std::fs::read_to_string(dir.join("meta.toml")).unwrap();
    assert!(toml.contains("reference = \"aoki-2008\""), "{toml}");
    assert_eq!(
        RunMeta::read(&dir).unwrap().reference,
        Some(ReferenceTable::Aoki2008)
    );
    report::write(&dir).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    insta::assert_snapshot!(
        "markdown",
        section(&md, "## Beside Aoki 2008's table", "\n## ")
    );
    let txt = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    let beside = section(&txt, "Beside Aoki 2008's table\n", "\nSize:");
    for line in beside.lines() {
        assert!(line.len() <= report::plain::WIDTH, "{line:?}");
    }
    insta::assert_snapshot!("text", beside);
}
