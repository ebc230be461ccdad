//! A run's `meta.toml` is data: what a run records is worded only where it
//! is shown, so no string of it is a sentence except the user's own text
//! (the suite's description, command lines, paths) and what the host and
//! the guest say of themselves.

mod common;

use common::{execute, images, load, run_dir, SUITE};
use markbench::record::{Recorded, SmpTrial, META_FILE};
use markbench::stages::suite::{AccelChoice, TimingChoice};
use markbench::stages::vm::accel;
use markbench::stages::vm::fake::FakeRunner;

/// Keys whose strings are the user's own text or a host's or guest's own
/// report of itself, not markbench's words.
const NOT_MARKBENCH_S_WORDS: &[&str] = &[
    "description",
    "suite_path",
    "cmdline",
    "argv",
    "subject",
    "cpu_model",
    "qemu_version",
    "version",
    "guest_version",
];

/// The fewest words that make a sentence.
const SENTENCE_WORDS: usize = 8;

/// Every string of `value` that reads as a sentence, with its key path.
fn sentences(value: &toml::Value, at: &str, found: &mut Vec<String>) {
    match value {
        toml::Value::String(s) => {
            let key = at.rsplit('.').next().unwrap_or(at);
            let key = key.split('[').next().unwrap_or(key);
            let a_path = s.starts_with('/');
            if !NOT_MARKBENCH_S_WORDS.contains(&key)
                && !a_path
                && s.split_whitespace().count() >= SENTENCE_WORDS
            {
                found.push(format!("{at} = {s:?}"));
            }
        }
        toml::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                sentences(item, &format!("{at}[{i}]"), found);
            }
        }
        toml::Value::Table(table) => {
            for (key, item) in table {
                sentences(item, &format!("{at}.{key}"), found);
            }
        }
        _ => {}
    }
}

/// The sentences of the `meta.toml` of a run of the fake guest, its
/// accelerator decided as `accel` asks and its timing as `timing` asks,
/// `smp_trial` the SMP trial's verdict.
fn sentences_of_a_run(
    accel: AccelChoice,
    timing: TimingChoice,
    smp_trial: Option<accel::SmpIcountVerdict>,
) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let suite = load(
        tmp.path(),
        &format!(
            "description = \"the two marker kernels, side by side, on every CPU count\"\n{SUITE}"
        ),
    );
    let images = images(tmp.path());
    let dir = run_dir(tmp.path(), "run");
    let mut machine = common::machine();
    // The decisions as a run makes them, with the reasons they give.
    let mut runner = FakeRunner::default();
    machine.accel = accel::decide(
        accel,
        &mut runner,
        &machine.qemu,
        &images.kernels[0].bzimage,
        &images.base.path,
        &tmp.path().join("trial.log"),
    );
    machine.timing = accel::timing_for(
        timing,
        4,
        machine.accel.accel,
        suite.cpus.iter().copied().max().unwrap_or(1),
        smp_trial.as_ref(),
        &machine.qemu,
    )
    .unwrap();
    execute(&suite, &images, &machine, &mut runner, &dir, None).unwrap();
    let text = std::fs::read_to_string(dir.join(META_FILE)).unwrap();
    let meta: toml::Value = toml::from_str(&text).unwrap();
    // The user's own text is there, and is not counted.
    assert!(!meta["description"].as_str().unwrap().is_empty());
    let mut found = Vec::new();
    sentences(&meta, "meta", &mut found);
    found
}

#[test]
fn a_new_run_s_meta_toml_holds_no_sentence() {
    let found = sentences_of_a_run(AccelChoice::Tcg, TimingChoice::Wall, None);
    assert!(
        found.is_empty(),
        "sentences in meta.toml:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_new_run_counting_instructions_on_several_vcpus_records_no_sentence() {
    let trial = accel::SmpIcountVerdict {
        works: true,
        detail: Recorded::Data(SmpTrial::Reached {
            cpus: 2,
            online: "0-1".into(),
            wall_s: 13.8,
        }),
    };
    let found = sentences_of_a_run(AccelChoice::Tcg, TimingChoice::Auto, Some(trial));
    assert!(
        found.is_empty(),
        "sentences in meta.toml:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_sentence_is_found_wherever_it_is_and_the_user_s_text_is_not() {
    let text = r#"
description = "a suite of my own, described in as many words as I like"
reason = "one guest at a time: timing is on the wall clock"
[[workloads]]
argv = ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do true; done"]
[slots]
why = ["fit", "one guest at a time because the host is small, today"]
"#;
    let value: toml::Value = toml::from_str(text).unwrap();
    let mut found = Vec::new();
    sentences(&value, "meta", &mut found);
    assert_eq!(
        found,
        [
            "meta.reason = \"one guest at a time: timing is on the wall clock\"",
            "meta.slots.why[1] = \"one guest at a time because the host is small, today\"",
        ]
    );
}
