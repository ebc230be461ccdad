//! The run directory's data: `samples.csv` (one row per measured iteration,
//! appended and flushed as each arrives, so an interrupted run keeps what it
//! measured) and `meta.toml` beside it (what ran, where, how).

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

pub use crate::run_dir::META_FILE;
pub use crate::run_dir::SAMPLES_FILE;

/// Input error unless `dir` holds a run's meta.toml: commands that read a run
/// say so plainly instead of failing on a missing file.
pub fn require_run_dir(dir: &Path) -> Result<(), crate::error::InputError> {
    if dir.join(META_FILE).is_file() {
        Ok(())
    } else {
        Err(crate::error::InputError::new(format!(
            "{}: not a run directory (no {META_FILE})",
            dir.display()
        )))
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

/// One point of a sweep: a workload's metric at a CPU count and parameter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PointKey {
    pub workload: String,
    pub metric: String,
    pub cpus: u32,
    pub param: u64,
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
        SampleWriter::open_as(dir, &crate::host::name())
    }

    /// A writer of samples measured on `host` (merge and diff copy samples
    /// measured elsewhere).
    pub fn open_as(dir: &Path, host: &str) -> Result<SampleWriter> {
        let path = dir.join(SAMPLES_FILE);
        let exists = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        if exists && !has_host_column(&path)? {
            // A run begun before samples named their host (resumed now):
            // give its rows the column, empty, so new rows line up with the header.
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
/// (empty for files written before samples named their host).
pub fn read_samples_with_hosts(dir: &Path) -> Result<Vec<(Sample, String)>> {
    let path = dir.join(SAMPLES_FILE);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let mut reader =
        csv::Reader::from_path(&path).with_context(|| format!("opening {}", path.display()))?;
    let mut out = Vec::new();
    for (i, row) in reader.deserialize::<SampleRow>().enumerate() {
        out.push(
            row.with_context(|| format!("{}:{}: malformed sample row", path.display(), i + 2))?
                .split(),
        );
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

/// What the report needs to know about the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub kernel_release: String,
    pub qemu_version: String,
    /// The QEMU binary's path (runs before it was recorded: empty).
    #[serde(default)]
    pub qemu_path: String,
}

/// A kernel as the metadata records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelMeta {
    pub variant: String,
    pub kernel: String,
    pub cmdline: String,
    pub source: String,
    /// The source path, revision, resolved commit and subject, and patch
    /// names and hashes (absent in runs made before they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::images::source::OriginRecord>,
    pub build_key: String,
    pub config_sha256: String,
    pub compiler: String,
    /// Each fragment's hash, by file name.
    pub fragments: std::collections::BTreeMap<String, String>,
    /// Where each fragment was found, by file name: its path, or `built in`
    /// (empty in runs made before this was recorded).
    #[serde(default)]
    pub fragment_sources: std::collections::BTreeMap<String, String>,
    pub bzimage: PathBuf,
    /// The booted bzImage's sha256 (empty in runs made before it was
    /// recorded): two variants with the same one booted the same kernel.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bzimage_sha256: String,
}

/// One boot as it went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BootRecord {
    pub unit: usize,
    pub variant: String,
    pub cpus: u32,
    pub boot: u32,
    pub status: String,
    pub ok: bool,
    pub wall_s: f64,
    pub samples: usize,
    pub console_log: String,
    /// Kernel release and online CPUs the guest reported.
    pub guest_kernel: String,
    pub guest_cpus: String,
    /// `uname -v` as the guest reported it (empty in runs from before it
    /// was reported).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub guest_version: String,
    /// Whether the failure may be the host's (hang, QEMU failure) and worth a retry.
    #[serde(default)]
    pub retryable: bool,
    /// Busy host cores over half a second before and after the boot.
    #[serde(default)]
    pub host_load_before: f64,
    #[serde(default)]
    pub host_load_after: f64,
    /// QEMU's `-seed` of the boot (icount mode): with the same kernel, image
    /// and QEMU, booting with it again repeats the boot's figures exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_seed: Option<u64>,
}

impl BootRecord {
    pub fn key(&self) -> BootKey {
        BootKey {
            variant: self.variant.clone(),
            cpus: self.cpus,
            boot: self.boot,
        }
    }

    /// A boot taken while the host was busy with something else: before it
    /// started (no guest of ours running), half the cores or more were busy.
    pub fn under_load(&self, host_cores: usize) -> bool {
        self.host_load_before >= 0.5 * host_cores.max(1) as f64
    }
}

fn default_margin() -> f64 {
    0.02
}

/// The timing mode and its setting from a timing description (`icount
/// (shift=4, …): …` or `wall: …`): how runs recorded before the decision was
/// kept as data (and shards' records) say it.
pub fn timing_mode_of(timing: &str) -> String {
    if !timing.starts_with("icount") {
        return "wall".into();
    }
    timing
        .split("shift=")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .map_or_else(|| "icount".to_string(), |s| format!("icount shift={s}"))
}

// The values below are decided by the stages above this one (the machine,
// the command line, the shard) and recorded in `meta.toml` as they are:
// they live here, with the rest of the run directory's schema, so that
// reading a run needs nothing of the code that decided them.

/// The accelerator a boot runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    #[default]
    Tcg,
}

impl std::fmt::Display for Accel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// How guest time runs in a run, decided once: `icount_shift` is `None` for
/// wall time and `Some(shift)` for instruction counting; `reason` says why,
/// for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingDecision {
    pub icount_shift: Option<u32>,
    pub reason: String,
}

impl TimingDecision {
    pub fn is_icount(&self) -> bool {
        self.icount_shift.is_some()
    }

    /// The mode and its setting alone (`icount shift=4`, `wall`): what two
    /// runs must share to be compared or merged.
    pub fn mode(&self) -> String {
        match self.icount_shift {
            Some(shift) => format!("icount shift={shift}"),
            None => "wall".into(),
        }
    }
}

/// Which shard of how many a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSel {
    /// From 0.
    pub index: u32,
    pub count: u32,
}

/// Command-line changes to a suite, as `meta.toml` records them so a
/// resumed run applies them again (applied and checked in
/// `compare::overrides`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Overrides {
    /// Multiplies the work of every run: hackbench loops, ping packet counts.
    pub scale: Option<f64>,
    pub boots: Option<u32>,
    pub iterations: Option<u32>,
    pub cpus: Option<Vec<u32>>,
    /// Replaces every workload's parameter list.
    pub params: Option<Vec<u64>>,
    /// Sets every kernel compile's scope: a seed-scale suite compiles the
    /// whole kernel, which takes hours under TCG; `subset` makes it minutes.
    #[serde(default)]
    pub compile_scope: Option<crate::workloads::kernel_compile::CompileScope>,
    /// The seed of the run order (and of the report's bootstrap).
    #[serde(default)]
    pub seed: Option<u64>,
    /// A/A calibration: both sides boot the baseline variant, so every
    /// difference found is noise (or a false positive).
    #[serde(default)]
    pub aa: bool,
    /// Run only this shard of the suite (`run-shard K --shards N`). Not
    /// listed with the overrides: every shard of one sweep has the same
    /// overrides, and merge checks that they do. Kept here so a resumed
    /// shard's run selects the same part again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardSel>,
    /// `--patch`: the kernel source against the source with these patches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<std::path::PathBuf>,
    /// `--revs`: two revisions (`A,B`) or a series (`BASE..TIP`) of the
    /// kernel source, one kernel each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revs: Option<String>,
}

/// `meta.toml`: everything about a run except its samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub suite: String,
    pub suite_path: String,
    pub suite_sha256: String,
    /// Command-line overrides of the suite, `key=value`.
    #[serde(default)]
    pub overrides: Vec<String>,
    /// The same overrides as settings, so `--resume` rebuilds the same plan.
    #[serde(default)]
    pub override_settings: Overrides,
    pub description: String,
    pub git_revision: String,
    pub markbench_version: String,
    pub started_at: String,
    pub finished_at: String,
    pub wall_s: f64,
    pub complete: bool,
    pub host: HostInfo,
    /// The accelerator every boot ran under (`kvm` or `tcg` in the file).
    pub accel: Accel,
    pub accel_reason: String,
    /// The timing mode and what it measures, as the report words it.
    #[serde(default)]
    pub timing: String,
    /// The timing decision as data (runs before it was recorded: only `timing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_decision: Option<TimingDecision>,
    pub seed: u64,
    /// Equivalence margin as a fraction (0.02 = ±2%).
    #[serde(default = "default_margin")]
    pub margin: f64,
    #[serde(default)]
    pub correction: crate::stats::Correction,
    pub boots_per_variant: u32,
    pub iterations: u32,
    pub warmup: u32,
    pub cpus: Vec<u32>,
    pub memory_mib: u32,
    /// Baseline first, candidate second.
    pub kernels: Vec<KernelMeta>,
    /// Run order: one entry per unit, "index variant cpus boot".
    pub order: Vec<String>,
    pub boots: Vec<BootRecord>,
    /// Each workload as a person reads it (its command line, runs a boot,
    /// CPU counts), one line per workload; runs before wrote JSON lines,
    /// which [`RunMeta::read`] turns into the same text.
    pub workloads: Vec<String>,
    /// The kernels are a patch series (`--revs BASE..TIP`): besides each
    /// against the baseline, each is compared with the one before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub series: bool,
    /// Doubts about the comparison itself (e.g. a diff of two runs on different hosts).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// For a shard's run (`run-shard`): which shard and what it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardMeta>,
    /// For a merged run (`merge`): the shards it was made of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardRecord>,
}

/// A shard's run: which of how many, and its pieces of the suite.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardMeta {
    pub index: u32,
    pub count: u32,
    /// The pieces, as `shard::Piece::describe` words them.
    pub pieces: Vec<String>,
}

/// One shard of a merged run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    pub index: u32,
    pub host: String,
    /// The shard's run directory as given to merge.
    pub dir: String,
    pub pieces: Vec<String>,
    pub boots: usize,
    pub failed_boots: usize,
    pub wall_s: f64,
    pub accel: String,
    pub timing: String,
    pub complete: bool,
}

impl RunMeta {
    /// The icount shift the run was timed with (`None`: wall time, or a
    /// run recorded before the shift was kept).
    pub fn icount_shift(&self) -> Option<u32> {
        self.timing_decision.as_ref().and_then(|d| d.icount_shift)
    }

    /// Guest time counted executed instructions (`-icount`), so host load
    /// did not reach the figures.
    pub fn counts_instructions(&self) -> bool {
        match &self.timing_decision {
            Some(d) => d.is_icount(),
            None => self.timing.starts_with("icount"),
        }
    }

    /// The timing mode and its setting alone (`icount shift=4`, `wall`),
    /// without the reason or the explanation: what two runs must share to be
    /// compared or merged.
    pub fn timing_mode(&self) -> String {
        match &self.timing_decision {
            Some(d) => d.mode(),
            None => timing_mode_of(&self.timing),
        }
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(META_FILE);
        let tmp = dir.join(format!("{META_FILE}.tmp"));
        std::fs::write(&tmp, toml::to_string(self)?)?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    pub fn read(dir: &Path) -> Result<RunMeta> {
        let path = dir.join(META_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let mut meta: RunMeta = toml::from_str(&text)
            .with_context(|| format!("{}: malformed run metadata", path.display()))?;
        meta.workloads =
            crate::workloads::readable_lines(&meta.workloads, meta.iterations, meta.warmup);
        Ok(meta)
    }
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
    fn a_kernel_recorded_before_fragment_sources_still_reads() {
        let old = r#"
variant = "markers-on"
kernel = "markers-on"
cmdline = ""
source = "tarball"
build_key = "k"
config_sha256 = "c"
compiler = "gcc"
bzimage = "/cache/bzImage"
[fragments]
"base.config" = "d1bc"
"#;
        let k: KernelMeta = toml::from_str(old).unwrap();
        assert_eq!(k.fragments["base.config"], "d1bc");
        assert!(k.fragment_sources.is_empty());
    }

    #[test]
    fn meta_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let boot = BootRecord {
            unit: 0,
            variant: "a".into(),
            cpus: 1,
            boot: 0,
            status: "completed".into(),
            ok: true,
            wall_s: 20.0,
            samples: 3,
            console_log: "logs/unit-000.log".into(),
            guest_kernel: "6.1".into(),
            guest_cpus: "0".into(),
            guest_version: String::new(),
            retryable: false,
            host_load_before: 0.0,
            host_load_after: 0.0,
            // `vm::boot_seed(u64::MAX, 3, 1)`: a 63-bit seed, as a boot draws one.
            guest_seed: Some(2_754_225_531_024_541_113),
        };
        let meta = RunMeta {
            suite: "quick".into(),
            seed: 7,
            order: vec!["0 a 2 0".into()],
            boots: vec![boot],
            ..Default::default()
        };
        meta.write(dir.path()).unwrap();
        assert_eq!(RunMeta::read(dir.path()).unwrap(), meta);
    }
}
