//! Reading a run's `meta.toml`: the one reader, which brings a run written
//! in an older format up to [`RUN_FORMAT`], so every reader of a run sees
//! the current shape; this is the one place that knows what earlier
//! versions wrote.
//!
//! The file is read twice: once into the current shape ([`RunMeta`]), and
//! once for the keys older formats wrote that the current shape no longer
//! holds ([`OlderKeys`]); each format's step then fills the current shape
//! from them.
//!
//! Format 0 (runs written before the format was numbered) differs from 1 in:
//! - `workloads`: the first versions wrote each workload as a JSON line;
//! - `timing_decision`: absent before the timing decision was kept as data,
//!   when only the `timing` sentence said which mode ran (and with which
//!   shift), or absent altogether (no `timing`: wall time, the only mode then);
//! - `shards[].timing_mode`: merged runs kept each shard's timing sentence
//!   alone.
//!
//! Formats 0 and 1 differ from 2 in that they also wrote, beside the data,
//! the sentences derived from it, which format 2 derives where it shows them:
//! - `timing`, the timing decision's sentence;
//! - `overrides`, the override settings as `key=value` words;
//! - `boots[].status` and `boots[].ok`, a boot's ending as a sentence and a
//!   flag beside `boots[].end` (format 0: the sentence and the flag alone),
//!   read into `end` as each boot is parsed ([`RecordedBoot`]);
//! - `order`: one sentence a unit ("3 markers on 1cpu boot2", in a merged
//!   run "shard 1: 3 markers on 1cpu boot2"), where format 2 writes a
//!   record (index, variant, cpus, boot, shard); the sentences are read into
//!   records as the file is parsed ([`read_order`]).
//!
//! Format 2 differs from 3 in that it wrote into strings what format 3
//! keeps as data:
//! - `suite` of a diff of two runs ended in " (diff of two runs)", where
//!   format 3 keeps the runs' suite and `diff = true`;
//! - `host.hostname` of a merged run of several hosts was their names
//!   joined ("h1, h2"), and `host.cpu_model` the first shard's CPU followed
//!   by " (and others: see the Hosts table)" when the shards' CPUs differed,
//!   where format 3 keeps the first shard's host in `host` and every host
//!   in `hosts` (a diff of such a run copied both strings);
//! - `warnings` were sentences, where format 3 writes each as data (its
//!   kind and values); format 2's sentences are kept as written
//!   (`Warning::Text`), read as each warning is parsed ([`read_warnings`]).
//!
//! Format 3 differs from 4 in what `override_settings.cpus` (`--cpus`)
//! means: format 3 ran every workload at every count it named, replacing
//! each workload's own CPU counts, where format 4 keeps each workload to
//! its own (those of them named); a format-3 run reads with
//! `cpus_replace_own`, so it is resumed with the units it started with.
//!
//! Format 4 differs from 5 in that it wrote into sentences what format 5
//! keeps as data, each worded where it is shown (`stages::report::words`):
//! - `accel_reason`, `timing_decision.reason` and `slots.reason` were
//!   sentences, where format 5 writes the case and its values (its `kind`:
//!   `asked`, `kvm-trial-completed` and `wall_s`, …);
//! - `slots.warning` and the warning it added to `warnings` were a
//!   sentence (`Warning::Text`), where format 5 writes `wall-clock-slots`
//!   with the number of guests and who asked for them;
//! - `workloads` were each workload as a person reads it, where format 5
//!   writes the workload's settings as the suite gives them (`kind`,
//!   `params`, …);
//! - `smp_qemu.patches` were `name short-hash`, where format 5 writes each
//!   patch's name and whole hash, and `smp_qemu.which_vcpu` what the
//!   which-vCPU trial saw in words, where format 5 writes the vCPUs the
//!   plugin was told and those that ran;
//! - `kernels[].config_base` was the base's words (`tinyconfig`, or a
//!   path with its short hash), where format 5 writes its kind and values;
//! - `shards[].timing` was the shard's timing sentence, where format 5
//!   writes its timing decision;
//! - `kernels[].source` was the source's identity in words (`tarball FILE
//!   sha256 HEX`, `tree PATH HEAD COMMIT changes KEY`), where format 5
//!   writes its kind and values; the text report cuts the hashes of the
//!   words to 16 digits as it always did, and those of the data by field.
//!
//! Format 5 differs from 6 in that it knew one guest architecture: a
//! format-5 run (and every earlier one) is an x86-64 run, booted with
//! `-cpu max`; format 6 writes `arch` and `guest_cpu` for the others
//! (arm64, `-cpu neoverse-n1`) and nothing for x86-64, so an x86-64 run
//! reads the same in both ([`from_format_5`]).
//!
//! Each of those sentences is read as the value's `Recorded::Legacy`, as
//! the value is parsed: no data can be read back out of it, and it renders
//! as it did. The first versions' workloads, JSON lines, are read as data
//! ([`from_format_0`]).
//!
//! A sentence today's wording of its data does not reproduce is kept in the
//! typed value as the run recorded it (`TimingDecision::recorded_sentence`,
//! `Overrides::recorded_words`, `BootEnd::Recorded`), so an older run renders
//! as it did. Whether formats 0 and 1's timing sentence is what they wrote
//! for the data is decided here, with their wording of it
//! ([`timing_sentence_of_format_1`]): the words for current data are the
//! report's, which the record does not reach.
//!
//! What older runs never recorded (a kernel's fragment sources, the guest's
//! `uname -v`, the bzImage's hash, the QEMU path, sizes, samples' hosts)
//! stays empty: readers show less for it rather than guess.

use super::meta::{
    BootEnd, BootRecord, RunFormat, RunHost, RunMeta, TimingDecision, TimingMode, UnitRecord,
    ICOUNT_RTC_BASE, RUN_FORMAT,
};
use super::Recorded;
use super::META_FILE;
use crate::base::error::Result;
use crate::base::input_file;
use std::path::{Path, PathBuf};

impl RunMeta {
    /// Reads `dir`'s `meta.toml`, in the current format whatever format it
    /// was written in; a run of a newer format is an input error. An entry
    /// of the run order that names no unit is left out with a warning
    /// naming it.
    pub fn read(dir: &Path) -> Result<RunMeta> {
        let path = dir.join(META_FILE);
        let text =
            crate::base::input_file::read_text(&path, crate::base::input_file::Bound::Record)?;
        let meta: RunMeta = crate::base::input_file::parse_toml(&path, &text, "run metadata")?;
        if meta.format.0 > RUN_FORMAT {
            return Err(crate::base::error::InputError::in_file(
                &path,
                format!(
                    "written in run format {} by a newer markbench; this one reads formats \
                     up to {RUN_FORMAT}",
                    meta.format.0
                ),
            )
            .into());
        }
        let older: OlderKeys = crate::base::input_file::parse_toml(&path, &text, "run metadata")?;
        for entry in older.order.iter().filter(|e| unit_of_entry(e).is_none()) {
            crate::base::message::warning(format_args!(
                "{}: order entry {entry} is no unit (\"INDEX VARIANT Ncpu bootB\" or a table \
                 of index, variant, cpus, boot); left out of the run's order",
                path.display()
            ));
        }
        Ok(to_current(meta, &older))
    }
}

/// A directory that looked like a run and could not be read, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedRun {
    pub dir: PathBuf,
    pub why: String,
}

impl std::fmt::Display for SkippedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped {}: {}", self.dir.display(), self.why)
    }
}

/// The runs under `reports` with their metadata, newest first (a run
/// directory's name begins with its start time), and the directories that
/// look like runs (they hold a `meta.toml` or a `samples.csv`) but cannot
/// be read, each with why: one damaged run costs only itself. The `latest`
/// link and directories that are no run at all are passed over; an entry
/// whose stat fails otherwise than "not found" may be a run, so it is
/// listed with the error rather than passed over. A `reports` not found
/// holds no run yet; one that cannot be listed is itself listed as
/// skipped with the error, so the runs it may hold are not silently none.
pub fn scan_runs(reports: &Path) -> (Vec<(PathBuf, RunMeta)>, Vec<SkippedRun>) {
    let mut skipped = Vec::new();
    let unlisted = |e: std::io::Error| SkippedRun {
        dir: reports.to_path_buf(),
        why: format!("cannot be listed: {e}"),
    };
    let entries = match std::fs::read_dir(reports) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), skipped),
        Err(e) => return (Vec::new(), vec![unlisted(e)]),
    };
    let mut dirs: Vec<(PathBuf, Result<()>)> = Vec::new();
    for entry in entries {
        let path = match entry {
            Ok(entry) => entry.path(),
            Err(e) => {
                // What is left of the listing is unknown: one line for it.
                skipped.push(unlisted(e));
                break;
            }
        };
        if path.ends_with("latest") {
            continue;
        }
        match looks_like_run(&path) {
            Ok(false) => {}
            Ok(true) => dirs.push((path, Ok(()))),
            Err(e) => dirs.push((path, Err(e))),
        }
    }
    dirs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut runs = Vec::new();
    for (dir, looked) in dirs.into_iter().rev() {
        let read = looked.and_then(|()| match input_file::present(&dir.join(META_FILE))? {
            true => RunMeta::read(&dir),
            false => Err(anyhow::anyhow!("no {META_FILE}").into()),
        });
        match read {
            Ok(meta) => runs.push((dir, meta)),
            Err(e) => skipped.push(SkippedRun {
                why: format!("{e:#}"),
                dir,
            }),
        }
    }
    (runs, skipped)
}

/// Whether `path`, an entry of a directory of runs, looks like a run: a
/// directory (a link to one counts) holding a `meta.toml` or a
/// `samples.csv`. A link to nothing is no run; a stat that fails otherwise
/// is an error (with the path of a file in it; the entry's own is the
/// skipped directory's).
fn looks_like_run(path: &Path) -> Result<bool> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => return Ok(false),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(input_file::io_failure(e, "cannot be looked at")),
    }
    Ok(input_file::present(&path.join(META_FILE))?
        || input_file::present(&path.join(super::SAMPLES_FILE))?)
}

/// What a `meta.toml` of an older format holds that the current shape does
/// not: the sentences formats 0 and 1 wrote beside the data, whether the
/// timing decision was there at all, and the order's entries as written.
#[derive(Debug, Default, serde::Deserialize)]
struct OlderKeys {
    #[serde(default)]
    timing: Option<String>,
    #[serde(default)]
    timing_decision: Option<toml::Value>,
    #[serde(default)]
    overrides: Option<Vec<String>>,
    #[serde(default)]
    order: Vec<toml::Value>,
}

/// `meta` in the current format, with what `older` holds of the keys older
/// formats wrote.
fn to_current(mut meta: RunMeta, older: &OlderKeys) -> RunMeta {
    if meta.format.0 == 0 {
        from_format_0(&mut meta, older);
    }
    // Format 1, and format 2 as the first versions of it wrote it, kept the
    // sentences beside the data.
    if older.timing.is_some() || older.overrides.is_some() || meta.format.0 == 0 {
        from_format_1(&mut meta, older);
    }
    if meta.format.0 < 3 {
        from_format_2(&mut meta);
    }
    if meta.format.0 < 4 {
        from_format_3(&mut meta);
    }
    if meta.format.0 < 6 {
        from_format_5(&mut meta);
    }
    // Format 4's sentences were read as `Recorded::Legacy` as it was
    // parsed: nothing is left to do for them.
    meta.format = RunFormat(RUN_FORMAT);
    meta
}

/// Format 5 to 6: a run of one architecture, x86-64, on `-cpu max`,
/// whatever keys of a later format a hand might have added to it.
fn from_format_5(meta: &mut RunMeta) {
    meta.arch = crate::base::arch::Arch::X86_64;
    meta.guest_cpu = None;
}

/// Format 3 to 4: `--cpus` as it was then, replacing every workload's own
/// CPU counts.
fn from_format_3(meta: &mut RunMeta) {
    meta.overrides.cpus_replace_own = meta.overrides.cpus.is_some();
}

/// What format 2 appended to a diff's suite.
const DIFF_OF_TWO_RUNS: &str = " (diff of two runs)";

/// What format 2 appended to a merged run's CPU when its shards' differed.
const AND_OTHER_CPUS: &str = " (and others: see the Hosts table)";

/// The CPU model of a host a format-2 run said differed from the first
/// shard's without naming it.
const OTHER_CPU_NOT_RECORDED: &str = "another CPU (not recorded)";

/// Format 2 to 3: a diff's suite and a merged run's hosts as data, out of
/// the strings format 2 wrote them into.
fn from_format_2(meta: &mut RunMeta) {
    if let Some(suite) = meta.suite.strip_suffix(DIFF_OF_TWO_RUNS) {
        meta.suite = suite.to_string();
        meta.diff = true;
    }
    let other_cpus = match meta.host.cpu_model.strip_suffix(AND_OTHER_CPUS) {
        Some(first) => {
            meta.host.cpu_model = first.to_string();
            true
        }
        None => false,
    };
    // A host's name holds no comma: a comma is format 2's join.
    if !meta.hosts.is_empty() || !meta.host.hostname.contains(", ") {
        return;
    }
    let names: Vec<String> = meta.host.hostname.split(", ").map(str::to_string).collect();
    let first = meta
        .shards
        .first()
        .map(|s| s.host.clone())
        .filter(|h| names.contains(h))
        .unwrap_or_else(|| names[0].clone());
    let cpu = meta.host.cpu_model.clone();
    meta.hosts = names
        .into_iter()
        .map(|hostname| RunHost {
            cpu_model: if hostname == first || !other_cpus {
                cpu.clone()
            } else {
                OTHER_CPU_NOT_RECORDED.into()
            },
            hostname,
        })
        .collect();
    meta.host.hostname = first;
}

/// Format 0 to 1: workloads as data, the timing decision from its
/// sentence, each shard's timing mode.
fn from_format_0(meta: &mut RunMeta, older: &OlderKeys) {
    for w in &mut meta.workloads {
        if let Recorded::Legacy(line) = w {
            if !line.trim_start().starts_with('{') {
                continue;
            }
            if let Ok(spec) = serde_json::from_str(line) {
                *w = Recorded::Data(spec);
            }
        }
    }
    if older.timing_decision.is_none() {
        meta.timing =
            recorded_timing(older.timing.as_deref().unwrap_or_default()).unwrap_or_else(|| {
                TimingDecision {
                    icount_shift: None,
                    reason: "as the run started".into(),
                    recorded_sentence: None,
                }
            });
    }
    for shard in &mut meta.shards {
        if let Recorded::Legacy(sentence) = &shard.timing {
            shard.timing_mode = mode_of_sentence(sentence);
        }
    }
}

/// Format 1 to 2: the timing's sentence and the overrides' words dropped
/// where they are what formats 0 and 1 wrote for the data, kept as recorded
/// where they are not. (A format-0 run without a `timing` ran on wall time,
/// which its report called "wall".)
fn from_format_1(meta: &mut RunMeta, older: &OlderKeys) {
    let sentence = match older.timing.as_deref() {
        None | Some("") => "wall",
        Some(sentence) => sentence,
    };
    if timing_sentence_of_format_1(&meta.timing, meta.max_cpus()).as_deref() != Some(sentence) {
        meta.timing.recorded_sentence = Some(sentence.to_string());
    }
    let words = older.overrides.clone().unwrap_or_default();
    if meta.overrides.describe() != words {
        meta.overrides.recorded_words = Some(words);
    }
}

/// The `timing` sentence formats 0 and 1 wrote for a decision whose reason
/// they recorded in words, for a run whose largest guest had `max_cpus`
/// vCPUs. The report words the decision alike (`stages::report::words`),
/// so a run whose sentence this is renders the same without it.
fn timing_sentence_of_format_1(timing: &TimingDecision, max_cpus: u32) -> Option<String> {
    let Recorded::Legacy(reason) = &timing.reason else {
        return None;
    };
    Some(match timing.icount_shift {
        None => format!("wall: the guest's CLOCK_MONOTONIC runs on host time ({reason})"),
        Some(shift) => {
            let smp = if max_cpus > 1 {
                " With several vCPUs QEMU runs them in turn on one host thread and guest time \
                 advances with the instructions of all of them, so a figure on N CPUs is the \
                 deterministic work of all N (spinning on locks and IPIs included); it cannot \
                 show parallel speed-up, and host cores do not limit the vCPU count."
            } else {
                ""
            };
            format!(
                "icount (shift={shift}, sleep=off, RTC from {ICOUNT_RTC_BASE} on guest time, a \
                 -seed per boot): guest time counts executed instructions (2^{shift} ns each), \
                 so timings measure code-path length and do not move with host load; each boot \
                 repeats exactly with its seed (in the Boots records of meta.toml); they cannot \
                 show cache, memory or timing effects.{smp} ({reason})"
            )
        }
    })
}

/// The timing decision a format-0 run's `timing` sentence records (`icount
/// (shift=4, …): …` or `wall: …`); `None` for wall time.
fn recorded_timing(sentence: &str) -> Option<TimingDecision> {
    if !sentence.starts_with("icount") {
        return None;
    }
    Some(TimingDecision {
        icount_shift: Some(shift_of(sentence).unwrap_or(DEFAULT_SHIFT_OF_FORMAT_0)),
        reason: "as recorded by the run (before the decision was kept as data)".into(),
        recorded_sentence: None,
    })
}

/// Every icount run of format 0 that did not name its shift used the
/// first default, 4.
const DEFAULT_SHIFT_OF_FORMAT_0: u32 = 4;

fn shift_of(sentence: &str) -> Option<u32> {
    sentence
        .split("shift=")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn mode_of_sentence(sentence: &str) -> TimingMode {
    match recorded_timing(sentence) {
        Some(d) => d.mode(),
        None => TimingMode::Wall,
    }
}

/// A boot record as a file of any format holds it: format 2's `end`, or
/// formats 0 and 1's `status` sentence and `ok` flag (beside `end` in
/// format 1).
#[derive(serde::Deserialize)]
pub(super) struct RecordedBoot {
    unit: usize,
    variant: String,
    cpus: u32,
    boot: u32,
    wall_s: f64,
    samples: usize,
    console_log: String,
    guest_kernel: String,
    guest_cpus: String,
    #[serde(default)]
    guest_version: String,
    #[serde(default)]
    retryable: bool,
    #[serde(default)]
    host_load_before: f64,
    #[serde(default)]
    host_load_after: f64,
    #[serde(default)]
    guest_seed: Option<u64>,
    #[serde(default)]
    end: Option<BootEnd>,
    #[serde(default)]
    retried_after: Option<BootEnd>,
    #[serde(default)]
    hello_s: Option<f64>,
    #[serde(default)]
    host_cpu: Option<usize>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    ok: Option<bool>,
}

impl TryFrom<RecordedBoot> for BootRecord {
    type Error = String;

    fn try_from(r: RecordedBoot) -> Result<BootRecord, String> {
        let (end, retried_after) = match (r.end, r.status) {
            (Some(end), None) => (end, r.retried_after),
            (end, Some(sentence)) => ending_of_sentence(end, r.retried_after, sentence, r.ok),
            (None, None) => return Err("a boot records neither `end` nor `status`".into()),
        };
        Ok(BootRecord {
            unit: r.unit,
            variant: r.variant,
            cpus: r.cpus,
            boot: r.boot,
            wall_s: r.wall_s,
            samples: r.samples,
            console_log: r.console_log,
            guest_kernel: r.guest_kernel,
            guest_cpus: r.guest_cpus,
            guest_version: r.guest_version,
            retryable: r.retryable,
            host_load_before: r.host_load_before,
            host_load_after: r.host_load_after,
            guest_seed: r.guest_seed,
            end,
            retried_after,
            hello_s: r.hello_s,
            host_cpu: r.host_cpu,
        })
    }
}

/// A profiled boot's ending as a profile manifest of any version holds it:
/// the ending as data, or, in manifests of earlier versions, its sentence
/// and flag ([`ending_of_sentence`]).
pub fn profiled_boot_end(
    end: Option<BootEnd>,
    status: Option<String>,
    ok: Option<bool>,
) -> Result<BootEnd, String> {
    match (end, status) {
        (Some(end), None) => Ok(end),
        (end, Some(sentence)) => Ok(ending_of_sentence(end, None, sentence, ok).0),
        (None, None) => Err("a profiled boot records neither `end` nor `status`".into()),
    }
}

/// A boot's ending (and its first attempt's) from what an older run
/// recorded: the ending as data when it recorded that too, else read from
/// its sentence; kept as [`BootEnd::Recorded`] when today's wording of that
/// ending is not the sentence, or the ending disagrees with the recorded
/// `ok`. Profiled boots' records of older versions are read the same way.
fn ending_of_sentence(
    end: Option<BootEnd>,
    retried_after: Option<BootEnd>,
    sentence: String,
    ok: Option<bool>,
) -> (BootEnd, Option<BootEnd>) {
    let read = match end {
        Some(end) => Some((end, retried_after.clone())),
        None => ending_in_words(&sentence)
            .map(|(end, first)| (end, first.or_else(|| retried_after.clone()))),
    };
    match read {
        Some((end, first))
            if BootRecord::describe(&end, first.as_ref()) == sentence
                && ok.is_none_or(|ok| ok == end.is_ok()) =>
        {
            (end, first)
        }
        _ => (
            BootEnd::Recorded {
                ok: ok.unwrap_or(false),
                sentence,
            },
            retried_after,
        ),
    }
}

/// The ending (and the first attempt's, for a retried boot) a sentence of
/// [`BootRecord::describe`] says.
fn ending_in_words(sentence: &str) -> Option<(BootEnd, Option<BootEnd>)> {
    match sentence.split_once(" (retried after: ") {
        Some((end, first)) => Some((
            ending_of_words(end)?,
            Some(ending_of_words(first.strip_suffix(')')?)?),
        )),
        None => Some((ending_of_words(sentence)?, None)),
    }
}

/// The ending a sentence of [`BootEnd::describe`] says.
fn ending_of_words(words: &str) -> Option<BootEnd> {
    let detail = |prefix: &str| words.strip_prefix(prefix).map(str::to_string);
    match words {
        "completed" => return Some(BootEnd::Completed),
        "interrupted (Ctrl-C); stopped" => return Some(BootEnd::Interrupted),
        _ => {}
    }
    if let Some(after) = words
        .strip_prefix("timed out after ")
        .and_then(|w| w.strip_suffix(" s; killed"))
    {
        return Some(BootEnd::TimedOut {
            after_s: after.parse().ok()?,
        });
    }
    None.or_else(|| detail("agent error: ").map(|message| BootEnd::AgentError { message }))
        .or_else(|| detail("kernel panic: ").map(|detail| BootEnd::KernelPanic { detail }))
        .or_else(|| detail("QEMU failed: ").map(|detail| BootEnd::QemuFailed { detail }))
        .or_else(|| {
            detail("QEMU could not load the plugin: ")
                .map(|detail| BootEnd::PluginFailed { detail })
        })
        .or_else(|| {
            detail("guest ended without finishing: ").map(|detail| BootEnd::Vanished { detail })
        })
        .or_else(|| {
            detail("no profile from the plugin: ").map(|detail| BootEnd::NoProfile { detail })
        })
}

/// One warning as a file of any format holds it: format 3's data, or the
/// sentence earlier formats wrote.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum RecordedWarning {
    Data(super::Warning),
    Sentence(String),
}

/// Reads `warnings`: format 3's data, earlier formats' sentences as
/// [`super::Warning::Text`].
pub(super) fn read_warnings<'de, D>(deserializer: D) -> Result<Vec<super::Warning>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let entries: Vec<RecordedWarning> = serde::Deserialize::deserialize(deserializer)?;
    Ok(entries
        .into_iter()
        .map(|w| match w {
            RecordedWarning::Data(w) => w,
            RecordedWarning::Sentence(text) => super::Warning::Text { text },
        })
        .collect())
}

/// Reads `slots.warning`: format 5's data, earlier formats' sentence as
/// [`super::Warning::Text`].
pub(super) fn read_warning<'de, D>(deserializer: D) -> Result<Option<super::Warning>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let entry: Option<RecordedWarning> = serde::Deserialize::deserialize(deserializer)?;
    Ok(entry.map(|w| match w {
        RecordedWarning::Data(w) => w,
        RecordedWarning::Sentence(text) => super::Warning::Text { text },
    }))
}

/// One entry of `order` as a file of any format holds it.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum RecordedUnit {
    Record(UnitRecord),
    /// Formats 0 and 1.
    Sentence(String),
    /// Neither: a damaged entry, which costs only itself.
    Unreadable(serde::de::IgnoredAny),
}

/// Reads `order`: format 2's records, or formats 0 and 1's sentences as
/// records. An entry that names no unit is left out ([`RunMeta::read`]
/// warns of it), so a damaged entry costs only its unit.
pub(super) fn read_order<'de, D>(deserializer: D) -> Result<Vec<UnitRecord>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let entries: Vec<RecordedUnit> = serde::Deserialize::deserialize(deserializer)?;
    Ok(entries.into_iter().filter_map(unit_of).collect())
}

fn unit_of(entry: RecordedUnit) -> Option<UnitRecord> {
    match entry {
        RecordedUnit::Record(unit) => Some(unit),
        RecordedUnit::Sentence(line) => unit_of_sentence(&line),
        RecordedUnit::Unreadable(_) => None,
    }
}

/// The unit an order entry, as any format wrote it, names.
fn unit_of_entry(entry: &toml::Value) -> Option<UnitRecord> {
    unit_of(entry.clone().try_into().ok()?)
}

/// A format 0 or 1 order sentence as a record: the variant's name sits
/// between the index and the last two words, and may itself hold spaces.
fn unit_of_sentence(line: &str) -> Option<UnitRecord> {
    let (shard, line) = match line.strip_prefix("shard ") {
        Some(rest) => {
            let (shard, unit) = rest.split_once(": ")?;
            (Some(shard.parse().ok()?), unit)
        }
        None => (None, line),
    };
    let (index, rest) = line.split_once(' ')?;
    let mut from_the_end = rest.rsplitn(3, ' ');
    let boot = from_the_end.next()?.strip_prefix("boot")?.parse().ok()?;
    let cpus = from_the_end.next()?.strip_suffix("cpu")?.parse().ok()?;
    let variant = from_the_end.next()?.to_string();
    Some(UnitRecord {
        index: index.parse().ok()?,
        variant,
        cpus,
        boot,
        shard,
    })
}

#[cfg(test)]
mod order_tests {
    use super::*;

    #[test]
    fn old_order_sentences_are_read_as_records() {
        let unit = unit_of_sentence("3 markers  on 1cpu boot2").unwrap();
        assert_eq!(
            unit,
            UnitRecord {
                index: 3,
                variant: "markers  on".into(),
                cpus: 1,
                boot: 2,
                shard: None
            }
        );
        let merged = unit_of_sentence("shard 1: 0 off 2cpu boot0").unwrap();
        assert_eq!((merged.shard, merged.variant.as_str()), (Some(1), "off"));
        assert_eq!(unit_of_sentence("3 off"), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_whose_files_cannot_be_looked_at_is_listed_as_skipped_with_why() {
        let root = tempfile::tempdir().unwrap();
        let run = input_file::dir_whose_files_cannot_be_named(root.path());
        let reports = run.parent().unwrap();
        let (runs, skipped) = scan_runs(reports);
        assert!(runs.is_empty());
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].dir, run);
        assert!(
            skipped[0]
                .why
                .ends_with("/meta.toml: cannot be read: File name too long (os error 36)"),
            "{}",
            skipped[0].why
        );
    }

    #[test]
    fn a_directory_of_runs_that_cannot_be_listed_is_named_not_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            scan_runs(&dir.path().join("absent")),
            (Vec::new(), Vec::new())
        );
        let file = dir.path().join("reports");
        std::fs::write(&file, "").unwrap();
        let (runs, skipped) = scan_runs(&file);
        assert!(runs.is_empty());
        assert_eq!(
            skipped,
            [SkippedRun {
                dir: file,
                why: "cannot be listed: Not a directory (os error 20)".into(),
            }]
        );
    }

    #[test]
    fn a_timing_sentence_gives_its_mode_and_shift() {
        let icount = "icount (shift=6, sleep=off): guest time counts executed instructions";
        assert_eq!(recorded_timing(icount).unwrap().icount_shift, Some(6));
        assert_eq!(mode_of_sentence(icount), TimingMode::Icount { shift: 6 });
        assert_eq!(
            recorded_timing("icount").unwrap().icount_shift,
            Some(DEFAULT_SHIFT_OF_FORMAT_0)
        );
        assert_eq!(recorded_timing("wall: host time"), None);
        assert_eq!(mode_of_sentence(""), TimingMode::Wall);
    }

    #[test]
    fn format_0_s_json_workloads_are_read_as_data_and_sentences_kept() {
        // The JSON a run wrote before, field order as serde_json gave it then.
        let old = r#"{"kind":"hackbench","params":[2],"loops":20,"fds":20,"mode":"process","transport":"socket","datasize":100,"cpus":[1]}"#;
        let meta = RunMeta {
            format: RunFormat(0),
            iterations: 18,
            warmup: 1,
            workloads: vec![old.into(), "already text".into()],
            ..Default::default()
        };
        let current = to_current(meta, &OlderKeys::default());
        let spec: crate::guest::workloads::WorkloadSpec =
            toml::from_str("kind = \"hackbench\"\nparams = [2]\nloops = 20\ncpus = [1]\n").unwrap();
        assert_eq!(
            current.workloads,
            [
                Recorded::Data(spec),
                Recorded::Legacy("already text".into())
            ]
        );
    }

    #[test]
    fn a_format_5_run_is_an_x86_run_and_format_6_keeps_an_arm64_one() {
        use crate::base::arch::Arch;
        let arm64 = RunMeta {
            arch: Arch::Arm64,
            guest_cpu: Some("neoverse-n1".into()),
            ..Default::default()
        };
        let text = toml::to_string(&arm64).unwrap();
        assert!(text.contains("arch = \"arm64\""), "{text}");
        assert!(text.contains("guest_cpu = \"neoverse-n1\""), "{text}");
        let read: RunMeta = toml::from_str(&text).unwrap();
        assert_eq!(to_current(read, &OlderKeys::default()), arm64);
        // An x86-64 run writes neither key, as format 5 did.
        let x86 = toml::to_string(&RunMeta::default()).unwrap();
        assert!(!x86.contains("arch") && !x86.contains("guest_cpu"), "{x86}");
        assert!(x86.contains(&format!("format = {RUN_FORMAT}")), "{x86}");
        assert_eq!(RUN_FORMAT, 6);
        // Format 5 knew no other architecture.
        let five = RunMeta {
            format: RunFormat(5),
            ..arm64
        };
        let current = to_current(five, &OlderKeys::default());
        assert_eq!((current.arch, current.guest_cpu), (Arch::X86_64, None));
        assert_eq!(current.format, RunFormat(RUN_FORMAT));
    }

    #[test]
    fn a_current_run_is_left_as_it_is() {
        let meta = RunMeta {
            timing: TimingDecision {
                icount_shift: Some(4),
                reason: "made up".into(),
                recorded_sentence: None,
            },
            ..Default::default()
        };
        assert_eq!(to_current(meta.clone(), &OlderKeys::default()), meta);
    }

    #[test]
    fn a_format_0_run_gets_its_timing_as_data_and_keeps_its_sentence() {
        let sentence = "icount (shift=4, sleep=off): …";
        let older = OlderKeys {
            timing: Some(sentence.into()),
            ..Default::default()
        };
        let meta = RunMeta {
            format: RunFormat(0),
            ..Default::default()
        };
        let current = to_current(meta, &older);
        assert_eq!(current.format, RunFormat(RUN_FORMAT));
        assert!(current.counts_instructions());
        assert_eq!(current.timing_mode(), TimingMode::Icount { shift: 4 });
        assert_eq!(current.timing_sentence(), sentence);
        let wall = to_current(
            RunMeta {
                format: RunFormat(0),
                ..Default::default()
            },
            &OlderKeys::default(),
        );
        assert_eq!(
            (wall.timing.recorded_sentence.as_deref(), wall.timing_mode()),
            (Some("wall"), TimingMode::Wall)
        );
    }

    #[test]
    fn format_1_s_timing_sentence_is_the_report_s_wording_of_its_data() {
        for timing in [
            TimingDecision::wall("asked"),
            TimingDecision::icount(6, "auto"),
        ] {
            for cpus in [1, 4] {
                assert_eq!(
                    timing_sentence_of_format_1(&timing, cpus),
                    Some(timing.describe(cpus))
                );
            }
        }
        let data =
            TimingDecision::icount(4, Recorded::Data(crate::record::TimingReason::AutoIcount));
        assert_eq!(timing_sentence_of_format_1(&data, 1), None);
    }

    #[test]
    fn sentences_that_today_s_wording_gives_are_not_kept() {
        let timing = TimingDecision {
            icount_shift: None,
            reason: "asked".into(),
            recorded_sentence: None,
        };
        let meta = RunMeta {
            format: RunFormat(1),
            timing: timing.clone(),
            overrides: crate::record::Overrides {
                boots: Some(3),
                ..Default::default()
            },
            ..Default::default()
        };
        let older = OlderKeys {
            timing: Some(timing.describe(1)),
            overrides: Some(vec!["boots=3".into()]),
            ..Default::default()
        };
        let current = to_current(meta.clone(), &older);
        assert_eq!(current.timing.recorded_sentence, None);
        assert_eq!(current.overrides.recorded_words, None);
        // Words the settings no longer give (a run from before the settings
        // were kept) are shown as recorded.
        let older = OlderKeys {
            overrides: Some(vec!["scale=0.5".into()]),
            ..older
        };
        let current = to_current(meta, &older);
        assert_eq!(current.overrides.describe(), ["scale=0.5"]);
    }

    #[test]
    fn a_boot_s_sentence_is_read_as_its_ending() {
        let hang = BootEnd::TimedOut { after_s: 60 };
        let retried = BootRecord::describe(&BootEnd::Completed, Some(&hang));
        assert_eq!(
            ending_of_sentence(None, None, retried, Some(true)),
            (BootEnd::Completed, Some(hang.clone()))
        );
        for end in [
            BootEnd::AgentError {
                message: "exited with status 3 (stderr: x)".into(),
            },
            BootEnd::KernelPanic {
                detail: "Attempted to kill init!".into(),
            },
            BootEnd::QemuFailed { detail: "x".into() },
            BootEnd::Vanished { detail: "y".into() },
            BootEnd::Interrupted,
            hang,
        ] {
            let sentence = end.describe();
            assert_eq!(
                ending_of_sentence(None, None, sentence, Some(false)),
                (end, None)
            );
        }
    }

    #[test]
    fn a_sentence_of_no_known_ending_is_kept_as_recorded() {
        let (end, first) = ending_of_sentence(None, None, "ok".into(), Some(true));
        assert_eq!(first, None);
        assert!(end.is_ok());
        assert_eq!(BootRecord::describe(&end, None), "ok");
        // A sentence that disagrees with the recorded flag keeps both.
        let (end, _) = ending_of_sentence(
            Some(BootEnd::Completed),
            None,
            "completed".into(),
            Some(false),
        );
        assert_eq!(
            end,
            BootEnd::Recorded {
                sentence: "completed".into(),
                ok: false
            }
        );
    }

    #[test]
    fn format_2_s_joined_hosts_and_diff_suite_are_read_as_data() {
        let mut meta = RunMeta {
            format: RunFormat(2),
            suite: "quick (diff of two runs)".into(),
            shards: vec![crate::record::ShardRecord {
                host: "b".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        meta.host.hostname = "a, b".into();
        meta.host.cpu_model = "Xeon (and others: see the Hosts table)".into();
        let current = to_current(meta, &OlderKeys::default());
        assert_eq!((current.suite.as_str(), current.diff), ("quick", true));
        assert_eq!(current.host.hostname, "b", "the first shard's");
        assert_eq!(current.hostnames(), ["a", "b"]);
        assert_eq!(current.host.cpu_model, "Xeon");
        assert_eq!(
            current.cpu_model_words(),
            "Xeon (and others: see the Hosts table)"
        );
        // One host, one CPU: nothing to read.
        let mut one = RunMeta {
            format: RunFormat(2),
            ..Default::default()
        };
        one.host.hostname = "a".into();
        one.host.cpu_model = "Xeon".into();
        let current = to_current(one, &OlderKeys::default());
        assert!(current.hosts.is_empty() && !current.diff);
        assert_eq!(current.cpu_model_words(), "Xeon");
    }

    #[test]
    fn a_format_3_run_keeps_cpus_replacing_the_workloads_own() {
        let dir = tempfile::tempdir().unwrap();
        let mut meta = RunMeta {
            format: RunFormat(3),
            ..Default::default()
        };
        meta.overrides.cpus = Some(vec![2]);
        meta.write(dir.path()).unwrap();
        let path = dir.path().join(META_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("format = 3\n") && !text.contains("cpus_replace_own"),
            "{text}"
        );
        let read = RunMeta::read(dir.path()).unwrap();
        assert!(read.overrides.cpus_replace_own);
        assert_eq!(read.overrides.describe(), ["cpus=[2]"], "shown as recorded");
        // Written again (a resumed run), it says so in the current format.
        read.write(dir.path()).unwrap();
        let again = RunMeta::read(dir.path()).unwrap();
        assert_eq!(
            (again.format, again.overrides),
            (read.format, read.overrides)
        );
        // Without --cpus, and in runs made now, there is nothing to keep.
        meta.overrides.cpus = None;
        assert!(
            !to_current(meta, &OlderKeys::default())
                .overrides
                .cpus_replace_own
        );
        let now = RunMeta {
            overrides: crate::record::Overrides {
                cpus: Some(vec![2]),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(
            !to_current(now, &OlderKeys::default())
                .overrides
                .cpus_replace_own
        );
    }

    #[test]
    fn a_damaged_order_entry_costs_only_its_unit() {
        let dir = tempfile::tempdir().unwrap();
        let meta = RunMeta {
            format: RunFormat(1),
            ..Default::default()
        };
        meta.write(dir.path()).unwrap();
        let path = dir.path().join(META_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text.replace(
            "order = []",
            "order = [\"0 markers on 1cpu boot0\", \"1 garbage\", 7, \"2 off 1cpu boot0\"]",
        );
        assert!(text.contains("garbage"), "{text}");
        std::fs::write(&path, text).unwrap();
        let read = RunMeta::read(dir.path()).unwrap();
        let units: Vec<(usize, &str)> = read
            .order
            .iter()
            .map(|u| (u.index, u.variant.as_str()))
            .collect();
        assert_eq!(units, [(0, "markers on"), (2, "off")]);
        let older: OlderKeys = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let unread: Vec<String> = older
            .order
            .iter()
            .filter(|e| unit_of_entry(e).is_none())
            .map(|e| e.to_string())
            .collect();
        assert_eq!(unread, ["\"1 garbage\"", "7"]);
    }
}
