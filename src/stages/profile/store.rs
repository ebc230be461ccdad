//! A run directory's profiles: `profiles/profiles.toml` lists the profiled
//! boots and their points' totals; `profiles/<variant>-<N>cpu.tsv` holds
//! one boot's instructions by function (tidy: workload, param, symbol,
//! instructions, summed over the point's measured runs); with the cycle
//! model, `profiles/<variant>-<N>cpu-model.tsv` the model's counts by
//! function (workload, param, symbol, metric, value, summed likewise); and
//! `profiles/only-in-<variant>.txt` the functions of that variant's kernel
//! that the other kernel lacks (by [`super::symbols::function_name`]). The report reads nothing else.

use crate::base::error::InputError;
use crate::base::error::{Context, Result};
use crate::record::BootEnd;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

pub const PROFILES_DIR: &str = "profiles";
pub const MANIFEST_FILE: &str = "profiles.toml";

/// Every profiled boot of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The plugin's cache key (a hash of its source).
    pub plugin: crate::base::sha256::Digest,
    /// `-icount shift=N` of the boots: one instruction is 2^N ns of guest time.
    pub icount_shift: u32,
    #[serde(default, rename = "boot")]
    pub boots: Vec<ProfileBoot>,
}

/// One profiled boot. Manifests of earlier versions recorded its ending as a
/// sentence (`status`) and a flag (`ok`), read into `end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RecordedProfileBoot")]
pub struct ProfileBoot {
    pub variant: String,
    /// 0 baseline, 1 candidate.
    pub side: usize,
    pub cpus: u32,
    pub guest_seed: Option<u64>,
    /// How the boot ended: completed only when its profile was kept.
    pub end: BootEnd,
    /// Wall time of the whole boot with the plugin loaded.
    pub wall_s: f64,
    pub console_log: String,
    /// The TSV of its counts, relative to `profiles/`.
    pub file: String,
    /// The TSV of the cycle model's counts by function, relative to
    /// `profiles/`, when the boot ran under the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_file: Option<String>,
    #[serde(default, rename = "point")]
    pub points: Vec<PointTotals>,
}

impl ProfileBoot {
    /// The boot completed and its profile was kept.
    pub fn ok(&self) -> bool {
        self.end.is_ok()
    }

    /// How the boot ended, in words.
    pub fn status(&self) -> String {
        self.end.describe()
    }
}

/// A profiled boot as a manifest of any version holds it.
#[derive(Deserialize)]
struct RecordedProfileBoot {
    variant: String,
    side: usize,
    cpus: u32,
    guest_seed: Option<u64>,
    #[serde(default)]
    end: Option<BootEnd>,
    #[serde(default)]
    ok: Option<bool>,
    #[serde(default)]
    status: Option<String>,
    wall_s: f64,
    console_log: String,
    file: String,
    #[serde(default)]
    model_file: Option<String>,
    #[serde(default, rename = "point")]
    points: Vec<PointTotals>,
}

impl TryFrom<RecordedProfileBoot> for ProfileBoot {
    type Error = String;

    fn try_from(r: RecordedProfileBoot) -> Result<ProfileBoot, String> {
        let end = crate::record::profiled_boot_end(r.end, r.status, r.ok)?;
        Ok(ProfileBoot {
            variant: r.variant,
            side: r.side,
            cpus: r.cpus,
            guest_seed: r.guest_seed,
            end,
            wall_s: r.wall_s,
            console_log: r.console_log,
            file: r.file,
            model_file: r.model_file,
            points: r.points,
        })
    }
}

/// One point's totals over its measured runs in a profiled boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointTotals {
    pub workload: String,
    pub param: u64,
    pub runs: u64,
    /// The runs' guest time, as the agent measured it.
    pub elapsed_ns: u64,
    /// The runs' instructions, as the plugin counted them.
    pub instructions: u64,
}

/// One row of a boot's TSV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub workload: String,
    pub param: u64,
    pub symbol: String,
    pub instructions: u64,
}

/// The counts of one boot: (workload, param) → function → instructions.
pub type Counts = BTreeMap<(String, u64), BTreeMap<String, u64>>;

/// One row of a boot's cycle-model TSV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRow {
    pub workload: String,
    pub param: u64,
    pub symbol: String,
    /// A point of the model (`llc-misses`, `estimated-cycles`, …).
    pub metric: String,
    pub value: u64,
}

/// The cycle model's counts of one boot: (workload, param) → function →
/// metric → count.
pub type ModelCounts = BTreeMap<(String, u64), BTreeMap<String, BTreeMap<String, u64>>>;

pub fn dir(run: &Path) -> PathBuf {
    run.join(PROFILES_DIR)
}

impl Manifest {
    /// The manifest of a run directory, `None` when the run has no profiles.
    pub fn read(run: &Path) -> Result<Option<Manifest>> {
        let path = dir(run).join(MANIFEST_FILE);
        let Some(text) = crate::base::input_file::read_text_if_present(
            &path,
            crate::base::input_file::Bound::Record,
        )?
        else {
            return Ok(None);
        };
        toml::from_str(&text).map(Some).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            InputError::at(&path, &text, at, e.message()).into()
        })
    }

    pub fn write(&self, run: &Path) -> Result<()> {
        let dir = dir(run);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(MANIFEST_FILE);
        let partial = path.with_extension("toml.partial");
        std::fs::write(&partial, toml::to_string(self)?)
            .with_context(|| format!("writing {}", partial.display()))?;
        std::fs::rename(&partial, &path).with_context(|| format!("writing {}", path.display()))
    }
}

/// The TSV file name of a variant's boot at a CPU count.
pub fn counts_file(variant: &str, cpus: u32) -> String {
    format!("{variant}-{cpus}cpu.tsv")
}

/// The cycle model's TSV file name of a variant's boot at a CPU count.
pub fn model_counts_file(variant: &str, cpus: u32) -> String {
    format!("{variant}-{cpus}cpu-model.tsv")
}

/// The file of functions only `variant`'s kernel has, of a run of two.
pub fn only_in_file(variant: &str) -> String {
    format!("only-in-{variant}.txt")
}

/// The files of functions only the baseline's kernel and only candidate
/// `candidate`'s have (`variants[0]` against `variants[candidate]`): for
/// the first candidate the names a run of two has always used, for the
/// others a pair's names.
pub fn only_in_files(variants: &[String], candidate: usize) -> [String; 2] {
    let (base, cand) = (&variants[0], &variants[candidate]);
    if candidate == 1 {
        [only_in_file(base), only_in_file(cand)]
    } else {
        [
            format!("only-in-{base}-not-{cand}.txt"),
            format!("only-in-{cand}-not-{base}.txt"),
        ]
    }
}

fn tsv_writer(path: &Path) -> Result<csv::Writer<std::fs::File>> {
    csv::WriterBuilder::new()
        .delimiter(b'\t')
        .from_path(path)
        .with_context(|| format!("writing {}", path.display()))
}

/// Writes one boot's counts, largest first within each point.
pub fn write_counts(path: &Path, counts: &Counts) -> Result<()> {
    let mut w = tsv_writer(path)?;
    for ((workload, param), functions) in counts {
        let mut rows: Vec<(&String, &u64)> = functions.iter().collect();
        rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (symbol, &instructions) in rows {
            w.serialize(Row {
                workload: workload.clone(),
                param: *param,
                symbol: symbol.clone(),
                instructions,
            })?;
        }
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Reads one boot's counts; errors name the file and line.
pub fn read_counts(path: &Path) -> Result<Counts> {
    let mut counts = Counts::new();
    for_each_row(path, |row: Row| {
        *counts
            .entry((row.workload, row.param))
            .or_default()
            .entry(row.symbol)
            .or_default() += row.instructions;
    })?;
    Ok(counts)
}

/// Every row of a profile's TSV file, in order; errors name the file and
/// line.
fn for_each_row<R: serde::de::DeserializeOwned>(
    path: &Path,
    mut each: impl FnMut(R),
) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| {
        crate::base::input_file::io_failure(e, format_args!("reading {}", path.display()))
    })?;
    let mut reader = csv::ReaderBuilder::new().delimiter(b'\t').from_reader(file);
    for row in reader.deserialize::<R>() {
        each(row.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            if e.is_io_error() {
                // The disk failed mid-read: the machinery's, not the file's.
                crate::base::error::Error::Machinery(
                    anyhow::Error::new(e).context(format!("{}:{line}", path.display())),
                )
            } else {
                crate::base::error::Error::Input(InputError::at_line(path, line, e))
            }
        })?);
    }
    Ok(())
}

/// Writes one boot's cycle-model counts, by point, function and metric.
pub fn write_model_counts(path: &Path, counts: &ModelCounts) -> Result<()> {
    let mut w = tsv_writer(path)?;
    for ((workload, param), functions) in counts {
        for (symbol, metrics) in functions {
            for (metric, &value) in metrics {
                w.serialize(ModelRow {
                    workload: workload.clone(),
                    param: *param,
                    symbol: symbol.clone(),
                    metric: metric.clone(),
                    value,
                })?;
            }
        }
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Reads one boot's cycle-model counts; errors name the file and line.
pub fn read_model_counts(path: &Path) -> Result<ModelCounts> {
    let mut counts = ModelCounts::new();
    for_each_row(path, |row: ModelRow| {
        *counts
            .entry((row.workload, row.param))
            .or_default()
            .entry(row.symbol)
            .or_default()
            .entry(row.metric)
            .or_default() += row.value;
    })?;
    Ok(counts)
}

pub fn write_names(path: &Path, names: &BTreeSet<String>) -> Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?,
    );
    for n in names {
        writeln!(f, "{n}")?;
    }
    f.flush()?;
    Ok(())
}

/// A name list; a missing file is an empty list (a kernel with nothing of its own).
pub fn read_names(path: &Path) -> Result<BTreeSet<String>> {
    let text =
        crate::base::input_file::read_text_if_present(path, crate::base::input_file::Bound::Text)?;
    Ok(text.map_or_else(BTreeSet::new, |t| {
        t.lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_manifest_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut counts = Counts::new();
        counts
            .entry(("hackbench".into(), 2))
            .or_default()
            .extend([("schedule".to_string(), 10u64), ("[user space]".into(), 4)]);
        let path = dir.path().join("x.tsv");
        write_counts(&path, &counts).unwrap();
        assert_eq!(read_counts(&path).unwrap(), counts);

        assert_eq!(Manifest::read(dir.path()).unwrap(), None);
        let manifest = Manifest {
            plugin: "k".into(),
            icount_shift: 4,
            boots: vec![ProfileBoot {
                variant: "off".into(),
                side: 0,
                cpus: 1,
                guest_seed: Some(3),
                end: BootEnd::Completed,
                wall_s: 1.5,
                console_log: "logs/p.log".into(),
                file: "off-1cpu.tsv".into(),
                model_file: None,
                points: vec![PointTotals {
                    workload: "hackbench".into(),
                    param: 2,
                    runs: 2,
                    elapsed_ns: 7,
                    instructions: 14,
                }],
            }],
        };
        manifest.write(dir.path()).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(manifest.clone()));
        // A boot without the model's counts is written as before them.
        let text = std::fs::read_to_string(dir.path().join("profiles/profiles.toml")).unwrap();
        assert!(!text.contains("model_file"), "{text}");

        let mut model = ModelCounts::new();
        model
            .entry(("hackbench".into(), 2))
            .or_default()
            .entry("unix_stream_sendmsg".into())
            .or_default()
            .extend([("llc-misses".to_string(), 7u64), ("l1d-misses".into(), 9)]);
        let path = dir.path().join("x-model.tsv");
        write_model_counts(&path, &model).unwrap();
        assert_eq!(read_model_counts(&path).unwrap(), model);
        let mut with_model = manifest;
        with_model.boots[0].model_file = Some("off-1cpu-model.tsv".into());
        with_model.write(dir.path()).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(with_model));
    }

    #[test]
    fn a_manifest_written_before_the_models_counts_reads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("profiles")).unwrap();
        std::fs::write(
            dir.path().join("profiles/profiles.toml"),
            "plugin = \"k\"\nicount_shift = 4\n\n[[boot]]\nvariant = \"off\"\nside = 0\n\
             cpus = 1\nok = true\nstatus = \"completed\"\nwall_s = 1.5\n\
             console_log = \"logs/p.log\"\nfile = \"off-1cpu.tsv\"\n",
        )
        .unwrap();
        let m = Manifest::read(dir.path()).unwrap().unwrap();
        assert_eq!(m.boots[0].model_file, None);
    }

    #[test]
    fn a_bad_counts_file_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.tsv");
        std::fs::write(
            &path,
            "workload\tparam\tsymbol\tinstructions\nhackbench\t2\tf\t1\nhackbench\tx\tg\t2\n",
        )
        .unwrap();
        let e = read_counts(&path).unwrap_err();
        assert!(e.to_string().contains("x.tsv:3:"), "{}", e.to_string());
    }
}
