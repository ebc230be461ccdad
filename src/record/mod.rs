//! The run directory's data: `samples.csv` (one row per measured iteration,
//! appended and flushed as each arrives, so an interrupted run keeps what it
//! measured) and `meta.toml` beside it (what ran, where, how: [`meta`]).

mod conditions;
mod gate;
mod meta;
mod point;
mod reasons;
mod reference;
mod schema;
mod upgrade;
mod warning;

pub use conditions::{Both, ConditionChange};
pub use gate::{GateRecord, RegressedPoint};
pub use point::{MalformedPointKey, PointKey};
pub use reasons::{
    AccelReason, JobsAskedBy, MemoryFit, Recorded, SlotsReason, SlotsWanted, SmpTrial,
    TimingReason, WhichVcpuTrial,
};
pub use reference::{ReferenceRow, ReferenceTable};
pub use schema::{
    CompileScope, ConfigBase, ImageFile, ImageRecord, OriginRecord, PatchRecord, RevSelection,
    SourceRecord,
};
pub use upgrade::{profiled_boot_end, scan_runs, SkippedRun};
pub use warning::Warning;

pub use meta::*;

use crate::base::error::{Context, Result};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::path::Path;

pub use crate::base::run_dir::META_FILE;
pub use crate::base::run_dir::SAMPLES_FILE;

/// Input error unless `dir` holds a run's meta.toml: commands that read a run
/// say so plainly instead of failing on a missing file. Only a meta.toml not
/// found (or a `dir` that is no directory, which holds none) makes `dir` no
/// run: a meta.toml that is there but cannot be read as one is named with
/// why, as the reader would name it, so a failing disk is the machinery's
/// error (exit 1) and not "not a run directory".
pub fn require_run_dir(dir: &Path) -> Result<()> {
    use crate::base::input_file::{self, Bound};
    let meta = dir.join(META_FILE);
    match std::fs::symlink_metadata(&meta) {
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            Err(crate::base::error::InputError::in_file(
                dir,
                format!("not a run directory (no {META_FILE})"),
            )
            .into())
        }
        _ => input_file::check(&meta, Bound::Record).map(drop),
    }
}

/// One measured iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub suite: String,
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub param: u64,
    pub cpus: u32,
    pub variant: String,
    pub boot: u32,
    pub iteration: u32,
    pub warmup: bool,
    pub value: f64,
    /// RFC 3339 time the host received the sample.
    pub started_at: String,
}

/// One boot of a run: a variant at a CPU count, by its boot number. A unit
/// of the plan, its boot record and its samples share it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BootKey {
    pub variant: String,
    pub cpus: u32,
    pub boot: u32,
}

/// What names one sample within a run: its boot, its point and its
/// iteration. Two samples with the same key are the same measurement
/// (recorded twice if both are present).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SampleKey {
    pub boot: BootKey,
    pub point: PointKey,
    pub iteration: u32,
}

impl Sample {
    pub fn key(&self) -> SampleKey {
        SampleKey {
            boot: self.boot_key(),
            point: self.point_key(),
            iteration: self.iteration,
        }
    }

    pub fn boot_key(&self) -> BootKey {
        BootKey {
            variant: self.variant.clone(),
            cpus: self.cpus,
            boot: self.boot,
        }
    }

    pub fn point_key(&self) -> PointKey {
        PointKey {
            workload: self.workload.clone(),
            metric: self.metric.clone(),
            cpus: self.cpus,
            param: self.param,
        }
    }
}

/// A row of `samples.csv`: a sample and the host that measured it. The
/// host is a column of the file rather than a field of [`Sample`] because it
/// belongs to the file's provenance (merged shards come from several hosts);
/// files written before the column existed read with an empty host, which
/// [`read_samples_with_hosts`]' callers fill from `meta.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SampleRow {
    suite: String,
    workload: String,
    metric: String,
    unit: String,
    higher_is_better: bool,
    param: u64,
    cpus: u32,
    variant: String,
    boot: u32,
    iteration: u32,
    warmup: bool,
    value: f64,
    started_at: String,
    #[serde(default)]
    host: String,
}

impl SampleRow {
    fn new(s: &Sample, host: &str) -> SampleRow {
        let s = s.clone();
        SampleRow {
            suite: s.suite,
            workload: s.workload,
            metric: s.metric,
            unit: s.unit,
            higher_is_better: s.higher_is_better,
            param: s.param,
            cpus: s.cpus,
            variant: s.variant,
            boot: s.boot,
            iteration: s.iteration,
            warmup: s.warmup,
            value: s.value,
            started_at: s.started_at,
            host: host.to_string(),
        }
    }

    fn split(self) -> (Sample, String) {
        (
            Sample {
                suite: self.suite,
                workload: self.workload,
                metric: self.metric,
                unit: self.unit,
                higher_is_better: self.higher_is_better,
                param: self.param,
                cpus: self.cpus,
                variant: self.variant,
                boot: self.boot,
                iteration: self.iteration,
                warmup: self.warmup,
                value: self.value,
                started_at: self.started_at,
            },
            self.host,
        )
    }
}

/// Appends samples to `samples.csv`, flushing after each row.
pub struct SampleWriter {
    writer: csv::Writer<File>,
    host: String,
}

impl SampleWriter {
    /// A writer of samples measured on this machine.
    pub fn open(dir: &Path) -> Result<SampleWriter> {
        SampleWriter::open_as(dir, &crate::base::host::name())
    }

    /// A writer of samples measured on `host` (merge and diff copy samples
    /// measured elsewhere).
    pub fn open_as(dir: &Path, host: &str) -> Result<SampleWriter> {
        let path = dir.join(SAMPLES_FILE);
        let exists = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        if exists {
            crate::base::input_file::check(&path, crate::base::input_file::Bound::Samples)?;
        }
        if exists && (!has_host_column(&path)? || !ends_in_newline(&path)?) {
            // A run begun before samples named their host (resumed now):
            // give its rows the column, empty, so new rows line up with the
            // header. A torn last line is left out, so the next row does
            // not continue it.
            retain_samples(dir, |_| true)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        let writer = csv::WriterBuilder::new()
            .has_headers(!exists)
            .from_writer(file);
        Ok(SampleWriter {
            writer,
            host: host.to_string(),
        })
    }

    pub fn append(&mut self, sample: &Sample) -> Result<()> {
        let host = std::mem::take(&mut self.host);
        let result = self.append_from(sample, &host);
        self.host = host;
        result
    }

    /// Appends a sample measured on `host`.
    pub fn append_from(&mut self, sample: &Sample, host: &str) -> Result<()> {
        self.writer.serialize(SampleRow::new(sample, host))?;
        self.writer.flush()?;
        self.writer.get_ref().sync_data()?;
        Ok(())
    }
}

/// What is wrong with a row that does not read as a sample, by the
/// column's number (from 1) and name.
fn field_error(e: &csv::Error, headers: &csv::StringRecord) -> String {
    match e.kind() {
        csv::ErrorKind::Deserialize { err, .. } => match err.field() {
            Some(i) => format!(
                "field {} ({}): {}",
                i + 1,
                headers.get(i as usize).unwrap_or("?"),
                err.kind()
            ),
            None => err.kind().to_string(),
        },
        _ => e.to_string(),
    }
}

fn ends_in_newline(path: &Path) -> Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

fn has_host_column(path: &Path) -> Result<bool> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("opening {}", path.display()))?;
    Ok(reader.headers()?.iter().any(|h| h == "host"))
}

/// Keeps only the samples `keep` accepts, rewriting `samples.csv` atomically
/// (used by `--resume` to drop the partial samples of unfinished boots).
pub fn retain_samples(dir: &Path, keep: impl Fn(&Sample) -> bool) -> Result<usize> {
    let samples = read_samples_with_hosts(dir)?;
    let tmp = dir.join(format!("{SAMPLES_FILE}.tmp"));
    let mut writer = csv::Writer::from_path(&tmp)?;
    let mut dropped = 0;
    for (s, host) in &samples {
        if keep(s) {
            writer.serialize(SampleRow::new(s, host))?;
        } else {
            dropped += 1;
        }
    }
    writer.flush()?;
    drop(writer);
    std::fs::rename(&tmp, dir.join(SAMPLES_FILE))?;
    Ok(dropped)
}

/// Reads every sample of a run directory.
pub fn read_samples(dir: &Path) -> Result<Vec<Sample>> {
    Ok(read_samples_with_hosts(dir)?
        .into_iter()
        .map(|(s, _)| s)
        .collect())
}

/// Reads every sample of a run directory with the host that measured it
/// (empty for files written before samples named their host); a torn last
/// line is left out with a warning ([`read_sample_file`]).
pub fn read_samples_with_hosts(dir: &Path) -> Result<Vec<(Sample, String)>> {
    Ok(read_sample_file(dir)?.rows)
}

/// A last line of `samples.csv` that was left out: the file ends without a
/// newline in a row too short or unreadable, what a write cut short (a
/// power loss, a killed run, a full disk) leaves behind.
#[derive(Debug, Clone, PartialEq)]
pub struct TornLine {
    /// Its line number in the file.
    pub line: u64,
    /// Why it cannot be a sample.
    pub why: String,
}

/// What `samples.csv` holds: its rows, and the torn last line left out.
#[derive(Debug, Clone, Default)]
pub struct SampleFile {
    pub rows: Vec<(Sample, String)>,
    pub torn: Option<TornLine>,
}

/// The longest field a row of `samples.csv` may have: names, numbers, a
/// time and a host name are all far shorter. A longer one is damage (and
/// would end up in file names of plots, and in every table).
const MAX_FIELD_BYTES: usize = 4096;

/// Reads `samples.csv` (none: no samples). A last line without its newline
/// that has too few fields or does not read as a sample is the tail of a
/// write cut short: it is left out, with a warning naming it, and the rest
/// is the run. Any other malformed line is an input error naming the file
/// and the line. A complete last line without its newline is kept: the
/// host is the last field and every field before it is whole.
pub fn read_sample_file(dir: &Path) -> Result<SampleFile> {
    let path = dir.join(SAMPLES_FILE);
    let Some(bytes) =
        crate::base::input_file::read_if_present(&path, crate::base::input_file::Bound::Samples)?
    else {
        return Ok(SampleFile::default());
    };
    let unterminated = bytes.last().is_some_and(|&b| b != b'\n');
    let malformed = |line: u64, why: &dyn std::fmt::Display| {
        crate::base::error::InputError::at_line(
            &path,
            line as usize,
            format_args!("malformed sample row: {why}"),
        )
    };
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(bytes.as_slice());
    let headers = match reader.headers() {
        Ok(h) => h.clone(),
        Err(e) => return Err(malformed(1, &e).into()),
    };
    let mut out = SampleFile::default();
    // Where each sample was first read: one measurement is one row.
    let mut first_line: std::collections::HashMap<SampleKey, u64> =
        std::collections::HashMap::new();
    let mut records = reader.into_byte_records().peekable();
    while let Some(record) = records.next() {
        let last = records.peek().is_none();
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            malformed(line, &e)
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let long_field = record
            .iter()
            .enumerate()
            .find(|(_, f)| f.len() > MAX_FIELD_BYTES);
        let row = if let Some((i, field)) = long_field {
            Err(format!(
                "field {} is {} bytes long, more than the {MAX_FIELD_BYTES} a sample's field may be",
                i + 1,
                field.len()
            ))
        } else if record.len() < headers.len() {
            Err(format!(
                "{} fields where the header names {}",
                record.len(),
                headers.len()
            ))
        } else if record.len() > headers.len() {
            Err(format!(
                "{} fields where the header names only {}",
                record.len(),
                headers.len()
            ))
        } else {
            csv::StringRecord::from_byte_record(record)
                .map_err(|e| e.to_string())
                .and_then(|r| {
                    r.deserialize::<SampleRow>(Some(&headers))
                        .map_err(|e| field_error(&e, &headers))
                })
        };
        match row {
            Ok(row) => {
                let (sample, host) = row.split();
                if let Some(first) = first_line.insert(sample.key(), line) {
                    return Err(malformed(
                        line,
                        &format_args!(
                            "the sample of line {first} recorded twice (boot {} of {} at {} \
                             CPUs, {} {} param {}, iteration {})",
                            sample.boot,
                            sample.variant,
                            sample.cpus,
                            sample.workload,
                            sample.metric,
                            sample.param,
                            sample.iteration
                        ),
                    )
                    .into());
                }
                out.rows.push((sample, host));
            }
            Err(why) if last && unterminated => {
                crate::base::message::warning(format_args!(
                    "{}:{line}: the last line is incomplete ({why}, no newline): \
                     read without it, a write cut short",
                    path.display()
                ));
                out.torn = Some(TornLine { line, why });
            }
            Err(why) => return Err(malformed(line, &why).into()),
        }
    }
    Ok(out)
}

/// The host of every sample, those without one (older files) taken to be
/// the run's host from `meta.toml`.
pub fn hosts_or(samples: Vec<(Sample, String)>, default: &str) -> (Vec<Sample>, Vec<String>) {
    samples
        .into_iter()
        .map(|(s, h)| (s, if h.is_empty() { default.to_string() } else { h }))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: u32) -> Sample {
        Sample {
            suite: "quick".into(),
            workload: "hackbench".into(),
            metric: "time".into(),
            unit: "s".into(),
            higher_is_better: false,
            param: 4,
            cpus: 2,
            variant: "markers-on".into(),
            boot: 1,
            iteration: i,
            warmup: i == 0,
            value: 0.5 + i as f64,
            started_at: "2026-11-30T00:00:00Z".into(),
        }
    }

    #[test]
    fn samples_survive_reopening_without_a_second_header() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SampleWriter::open(dir.path()).unwrap();
        w.append(&sample(0)).unwrap();
        drop(w);
        let mut w = SampleWriter::open(dir.path()).unwrap();
        w.append(&sample(1)).unwrap();
        // Read while the writer is still open: rows are on disk already.
        let read = read_samples(dir.path()).unwrap();
        assert_eq!(read, vec![sample(0), sample(1)]);
        let text = std::fs::read_to_string(dir.path().join(SAMPLES_FILE)).unwrap();
        assert!(text.starts_with(
            "suite,workload,metric,unit,higher_is_better,param,cpus,variant,boot,iteration,warmup,value,started_at,host\n"
        ));
    }

    #[test]
    fn files_without_a_host_column_still_read_and_take_the_run_host() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(SAMPLES_FILE),
            "suite,workload,metric,unit,higher_is_better,param,cpus,variant,boot,iteration,warmup,value,started_at\n\
             quick,hackbench,time,s,false,4,2,markers-on,1,0,true,0.5,2026-11-30T00:00:00Z\n",
        )
        .unwrap();
        let (samples, hosts) = hosts_or(read_samples_with_hosts(dir.path()).unwrap(), "h1");
        assert_eq!(samples, vec![sample(0)]);
        assert_eq!(hosts, vec!["h1"]);
        // A rewrite keeps each sample's host.
        let mut w = SampleWriter::open_as(dir.path(), "h2").unwrap();
        w.append(&sample(1)).unwrap();
        drop(w);
        retain_samples(dir.path(), |_| true).unwrap();
        let (_, hosts) = hosts_or(read_samples_with_hosts(dir.path()).unwrap(), "h1");
        assert_eq!(hosts, vec!["h1", "h2"]);
    }

    #[test]
    fn a_malformed_row_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SampleWriter::open(dir.path()).unwrap();
        w.append(&sample(0)).unwrap();
        drop(w);
        let path = dir.path().join(SAMPLES_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("quick,hackbench,time,s,false,notanumber,2,x,0,0,false,1.0,t\n");
        std::fs::write(&path, text).unwrap();
        let e = format!("{:#}", read_samples(dir.path()).unwrap_err());
        assert!(e.contains("samples.csv:3: malformed"), "{e}");
    }

    #[test]
    fn a_torn_last_line_is_left_out_and_the_next_row_starts_clean() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SampleWriter::open(dir.path()).unwrap();
        w.append(&sample(0)).unwrap();
        w.append(&sample(1)).unwrap();
        drop(w);
        let path = dir.path().join(SAMPLES_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        // The write of the second row cut short in its value.
        let torn = &text[..text.len() - 40];
        std::fs::write(&path, torn).unwrap();
        let file = read_sample_file(dir.path()).unwrap();
        assert_eq!(file.rows.len(), 1);
        assert_eq!(file.torn.as_ref().map(|t| t.line), Some(3));
        // A resumed run appends after the rows that are whole.
        let mut w = SampleWriter::open(dir.path()).unwrap();
        w.append(&sample(2)).unwrap();
        drop(w);
        let file = read_sample_file(dir.path()).unwrap();
        assert_eq!(file.torn, None);
        let read: Vec<Sample> = file.rows.into_iter().map(|(s, _)| s).collect();
        assert_eq!(read, vec![sample(0), sample(2)]);
    }

    #[test]
    fn a_short_line_that_is_not_the_last_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SampleWriter::open(dir.path()).unwrap();
        w.append(&sample(0)).unwrap();
        drop(w);
        let path = dir.path().join(SAMPLES_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("quick,hackbench,time\n");
        std::fs::write(&path, &text).unwrap();
        let e = read_sample_file(dir.path()).unwrap_err();
        assert_eq!(
            crate::base::exit::ExitStatus::of_error(&e, false),
            crate::base::exit::ExitStatus::Input
        );
        assert!(format!("{e:#}").contains("samples.csv:3: malformed sample row: 3 fields"));
        // Without its newline it is a torn tail.
        std::fs::write(&path, text.trim_end()).unwrap();
        assert_eq!(read_sample_file(dir.path()).unwrap().rows.len(), 1);
    }

    #[test]
    fn a_meta_toml_that_cannot_be_looked_at_is_named_not_a_missing_run() {
        use crate::base::exit::ExitStatus;
        let dir = tempfile::tempdir().unwrap();
        let e = require_run_dir(dir.path()).unwrap_err();
        assert!(e
            .to_string()
            .ends_with("not a run directory (no meta.toml)"));
        let file = dir.path().join("run");
        std::fs::write(&file, "").unwrap();
        let e = require_run_dir(&file).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: not a run directory (no meta.toml)", file.display())
        );
        // A link to itself: its stat fails with ELOOP, no absence.
        let meta = dir.path().join(META_FILE);
        std::os::unix::fs::symlink(&meta, &meta).unwrap();
        let e = require_run_dir(dir.path()).unwrap_err();
        assert_eq!(ExitStatus::of_error(&e, false), ExitStatus::Input);
        assert!(
            e.to_string()
                .contains("meta.toml: cannot be read: Too many levels of symbolic links"),
            "{e}"
        );
        std::fs::remove_file(&meta).unwrap();
        std::fs::create_dir(&meta).unwrap();
        let e = require_run_dir(dir.path()).unwrap_err();
        assert!(
            e.to_string()
                .contains("meta.toml: not a regular file (a directory)"),
            "{e}"
        );
        // The real error too when the directory's entries cannot be named.
        let run = crate::base::input_file::dir_whose_files_cannot_be_named(dir.path());
        let e = require_run_dir(&run).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("meta.toml: cannot be read: File name too long (os error 36)"),
            "{e}"
        );
    }

    #[test]
    fn samples_that_cannot_be_read_are_an_error_not_a_run_without_samples() {
        use crate::base::exit::ExitStatus;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SAMPLES_FILE);
        assert!(read_sample_file(dir.path()).unwrap().rows.is_empty());
        crate::base::input_file::link_to_failing_read(&path);
        let e = read_sample_file(dir.path()).unwrap_err();
        assert_eq!(ExitStatus::of_error(&e, false), ExitStatus::Machinery);
        assert!(
            format!("{e:#}").contains("samples.csv: cannot be read: Input/output error"),
            "{e:#}"
        );
        // A stat that fails otherwise than "not found" (here ENOTDIR: the
        // run's directory is a file) is no absence either.
        let file = dir.path().join("run");
        std::fs::write(&file, "").unwrap();
        let e = read_sample_file(&file).unwrap_err();
        assert!(
            format!("{e:#}").contains("run/samples.csv: cannot be read: Not a directory"),
            "{e:#}"
        );
    }
}
