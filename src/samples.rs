//! The run directory's data: `samples.csv` (one row per measured iteration,
//! appended and flushed as each arrives, so an interrupted run keeps what it
//! measured) and `meta.toml` beside it (what ran, where, how).

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

pub const SAMPLES_FILE: &str = "samples.csv";
pub const META_FILE: &str = "meta.toml";

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

/// Appends samples to `samples.csv`, flushing after each row.
pub struct SampleWriter {
    writer: csv::Writer<File>,
}

impl SampleWriter {
    pub fn open(dir: &Path) -> Result<SampleWriter> {
        let path = dir.join(SAMPLES_FILE);
        let exists = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        let writer = csv::WriterBuilder::new()
            .has_headers(!exists)
            .from_writer(file);
        Ok(SampleWriter { writer })
    }

    pub fn append(&mut self, sample: &Sample) -> Result<()> {
        self.writer.serialize(sample)?;
        self.writer.flush()?;
        self.writer.get_ref().sync_data()?;
        Ok(())
    }
}

/// Keeps only the samples `keep` accepts, rewriting `samples.csv` atomically
/// (used by `--resume` to drop the partial samples of unfinished boots).
pub fn retain_samples(dir: &Path, keep: impl Fn(&Sample) -> bool) -> Result<usize> {
    let samples = read_samples(dir)?;
    let tmp = dir.join(format!("{SAMPLES_FILE}.tmp"));
    let mut writer = csv::Writer::from_path(&tmp)?;
    let mut dropped = 0;
    for s in &samples {
        if keep(s) {
            writer.serialize(s)?;
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
    let path = dir.join(SAMPLES_FILE);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let mut reader =
        csv::Reader::from_path(&path).with_context(|| format!("opening {}", path.display()))?;
    let mut out = Vec::new();
    for (i, row) in reader.deserialize().enumerate() {
        out.push(
            row.with_context(|| format!("{}:{}: malformed sample row", path.display(), i + 2))?,
        );
    }
    Ok(out)
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
}

pub fn host_cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

impl HostInfo {
    pub fn probe() -> HostInfo {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let mem_kib: f64 = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        HostInfo {
            hostname: read("/proc/sys/kernel/hostname"),
            cpu_model: host_cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_gib: (mem_kib / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            kernel_release: read("/proc/sys/kernel/osrelease"),
            qemu_version: crate::images::tool_version(crate::vm::qemu::QEMU),
        }
    }
}

/// A kernel as the metadata records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelMeta {
    pub variant: String,
    pub kernel: String,
    pub cmdline: String,
    pub source: String,
    pub build_key: String,
    pub config_sha256: String,
    pub compiler: String,
    pub fragments: std::collections::BTreeMap<String, String>,
    pub bzimage: PathBuf,
}

/// One boot as it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// A boot taken while the host was busy with something else: before it
    /// started (no guest of ours running), half the cores or more were busy.
    pub fn under_load(&self, host_cores: usize) -> bool {
        self.host_load_before >= 0.5 * host_cores.max(1) as f64
    }
}

fn default_margin() -> f64 {
    0.02
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
    pub override_settings: crate::suite::Overrides,
    pub description: String,
    pub git_revision: String,
    pub markbench_version: String,
    pub started_at: String,
    pub finished_at: String,
    pub wall_s: f64,
    pub complete: bool,
    pub host: HostInfo,
    pub accel: String,
    pub accel_reason: String,
    /// Timing mode and what it measures.
    #[serde(default)]
    pub timing: String,
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
    /// Workload settings as the suite gave them, one line per workload.
    pub workloads: Vec<String>,
    /// Doubts about the comparison itself (e.g. a diff of two runs on different hosts).
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl RunMeta {
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
        toml::from_str(&text).with_context(|| format!("{}: malformed run metadata", path.display()))
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
            "suite,workload,metric,unit,higher_is_better,param,cpus,variant,boot,iteration,warmup,value,started_at\n"
        ));
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
            retryable: false,
            host_load_before: 0.0,
            host_load_after: 0.0,
            guest_seed: Some(crate::vm::boot_seed(u64::MAX, 3, 1)),
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
