//! Reading a run's `meta.toml`: the one reader, which brings a run written
//! in an older format up to [`RUN_FORMAT`], so every reader of a run sees
//! the current shape; this is the one place that knows what earlier
//! versions wrote.
//!
//! Format 0 (runs written before the format was numbered) differs from 1 in:
//! - `workloads`: the first versions wrote each workload as a JSON line;
//! - `timing_decision`: absent before the timing decision was kept as data,
//!   when only the `timing` sentence said which mode ran (and with which
//!   shift), or absent altogether (no `timing`: wall time, the only mode then);
//! - `shards[].timing_mode`: merged runs kept each shard's timing sentence
//!   alone.
//!
//! Formats 0 and 1 differ from 2 in:
//! - `order`: one sentence a unit ("3 markers on 1cpu boot2", in a merged
//!   run "shard 1: 3 markers on 1cpu boot2"), where format 2 writes a
//!   record (index, variant, cpus, boot, shard); the sentences are read into
//!   records as the file is parsed ([`read_order`]).
//!
//! What older runs never recorded (a kernel's fragment sources, the guest's
//! `uname -v`, the bzImage's hash, the QEMU path, sizes, samples' hosts)
//! stays empty: readers show less for it rather than guess.

use super::meta::{RunFormat, RunMeta, TimingDecision, UnitRecord, RUN_FORMAT};
use super::META_FILE;
use anyhow::Result;
use std::path::{Path, PathBuf};

impl RunMeta {
    /// Reads `dir`'s `meta.toml`, in the current format whatever format it
    /// was written in; a run of a newer format is an input error.
    pub fn read(dir: &Path) -> Result<RunMeta> {
        let path = dir.join(META_FILE);
        let meta: RunMeta = crate::base::input_file::read_toml(
            &path,
            crate::base::input_file::Bound::Record,
            "run metadata",
        )?;
        if meta.format.0 > RUN_FORMAT {
            return Err(crate::base::error::InputError::new(format!(
                "{}: written in run format {} by a newer markbench; this one reads formats up to {RUN_FORMAT}",
                path.display(),
                meta.format.0
            ))
            .into());
        }
        Ok(to_current(meta))
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
/// link and directories that are no run at all are passed over.
pub fn scan_runs(reports: &Path) -> (Vec<(PathBuf, RunMeta)>, Vec<SkippedRun>) {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(reports)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.ends_with("latest"))
        .filter(|p| {
            std::fs::symlink_metadata(p.join(META_FILE)).is_ok()
                || std::fs::symlink_metadata(p.join(super::SAMPLES_FILE)).is_ok()
        })
        .collect();
    dirs.sort();
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for dir in dirs.into_iter().rev() {
        let read = if std::fs::symlink_metadata(dir.join(META_FILE)).is_err() {
            Err(anyhow::anyhow!("no {META_FILE}"))
        } else {
            RunMeta::read(&dir)
        };
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

/// `meta` in the current format.
fn to_current(mut meta: RunMeta) -> RunMeta {
    if meta.format.0 == 0 {
        meta.workloads =
            crate::guest::workloads::readable_lines(&meta.workloads, meta.iterations, meta.warmup);
        if meta.timing_decision.is_none() {
            meta.timing_decision = recorded_timing(&meta.timing);
        }
        if meta.timing.is_empty() {
            meta.timing = "wall".into();
        }
        for shard in &mut meta.shards {
            if shard.timing_mode.is_empty() {
                shard.timing_mode = mode_of_sentence(&shard.timing);
            }
        }
    }
    meta.format = RunFormat(RUN_FORMAT);
    meta
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

fn mode_of_sentence(sentence: &str) -> String {
    match recorded_timing(sentence) {
        Some(d) => d.mode(),
        None => "wall".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timing_sentence_gives_its_mode_and_shift() {
        let icount = "icount (shift=6, sleep=off): guest time counts executed instructions";
        assert_eq!(recorded_timing(icount).unwrap().icount_shift, Some(6));
        assert_eq!(mode_of_sentence(icount), "icount shift=6");
        assert_eq!(
            recorded_timing("icount").unwrap().icount_shift,
            Some(DEFAULT_SHIFT_OF_FORMAT_0)
        );
        assert_eq!(recorded_timing("wall: host time"), None);
        assert_eq!(mode_of_sentence(""), "wall");
    }

    #[test]
    fn a_current_run_is_left_as_it_is() {
        let meta = RunMeta {
            timing: "icount: made up".into(),
            ..Default::default()
        };
        assert_eq!(to_current(meta.clone()), meta);
    }

    #[test]
    fn a_format_0_run_gets_its_timing_as_data() {
        let meta = RunMeta {
            format: RunFormat(0),
            timing: "icount (shift=4, sleep=off): …".into(),
            ..Default::default()
        };
        let current = to_current(meta);
        assert_eq!(current.format, RunFormat(RUN_FORMAT));
        assert!(current.counts_instructions());
        assert_eq!(current.timing_mode(), "icount shift=4");
        let wall = to_current(RunMeta {
            format: RunFormat(0),
            ..Default::default()
        });
        assert_eq!(
            (wall.timing.as_str(), wall.timing_mode()),
            ("wall", "wall".into())
        );
    }
}

/// One entry of `order` as a file of any format holds it.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum RecordedUnit {
    Record(UnitRecord),
    /// Formats 0 and 1.
    Sentence(String),
}

/// Reads `order`: format 2's records, or formats 0 and 1's sentences as
/// records; a sentence that names no unit is an error naming it.
pub(super) fn read_order<'de, D>(deserializer: D) -> Result<Vec<UnitRecord>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let entries: Vec<RecordedUnit> = serde::Deserialize::deserialize(deserializer)?;
    entries
        .into_iter()
        .map(|entry| match entry {
            RecordedUnit::Record(unit) => Ok(unit),
            RecordedUnit::Sentence(line) => unit_of_sentence(&line).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "order entry {line:?} is no unit (\"INDEX VARIANT Ncpu bootB\")"
                ))
            }),
        })
        .collect()
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
