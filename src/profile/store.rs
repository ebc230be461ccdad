//! A run directory's profiles: `profiles/profiles.toml` lists the profiled
//! boots and their points' totals; `profiles/<variant>-<N>cpu.tsv` holds
//! one boot's instructions by function (tidy: workload, param, symbol,
//! instructions, summed over the point's measured runs); and
//! `profiles/only-in-<variant>.txt` the functions of that variant's kernel
//! that the other kernel lacks (by [`super::symbols::function_name`]). The report reads nothing else.

use crate::error::InputError;
use crate::samples::BootEnd;
use anyhow::{Context, Result};
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
    pub plugin: String,
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
    #[serde(default, rename = "point")]
    points: Vec<PointTotals>,
}

impl TryFrom<RecordedProfileBoot> for ProfileBoot {
    type Error = String;

    fn try_from(r: RecordedProfileBoot) -> Result<ProfileBoot, String> {
        let end = match (r.end, r.status) {
            (Some(end), None) => end,
            (end, Some(sentence)) => {
                crate::samples::ending_of_sentence(end, None, sentence, r.ok).0
            }
            (None, None) => return Err("a profiled boot records neither `end` nor `status`".into()),
        };
        Ok(ProfileBoot {
            variant: r.variant,
            side: r.side,
            cpus: r.cpus,
            guest_seed: r.guest_seed,
            end,
            wall_s: r.wall_s,
            console_log: r.console_log,
            file: r.file,
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

pub fn dir(run: &Path) -> PathBuf {
    run.join(PROFILES_DIR)
}

impl Manifest {
    /// The manifest of a run directory, `None` when the run has no profiles.
    pub fn read(run: &Path) -> Result<Option<Manifest>, InputError> {
        let path = dir(run).join(MANIFEST_FILE);
        let Some(text) =
            crate::input_file::read_text_if_present(&path, crate::input_file::Bound::Record)?
        else {
            return Ok(None);
        };
        toml::from_str(&text).map(Some).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            InputError::at(&path, &text, at, e.message())
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
pub fn read_counts(path: &Path) -> Result<Counts, InputError> {
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(b'\t')
        .from_path(path)
        .map_err(|e| InputError::new(format!("reading {}: {e}", path.display())))?;
    let mut counts = Counts::new();
    for row in reader.deserialize::<Row>() {
        let row = row.map_err(|e| {
            InputError::new(format!(
                "{}:{}: {e}",
                path.display(),
                e.position().map_or(0, |p| p.line())
            ))
        })?;
        *counts
            .entry((row.workload, row.param))
            .or_default()
            .entry(row.symbol)
            .or_default() += row.instructions;
    }
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
pub fn read_names(path: &Path) -> Result<BTreeSet<String>, InputError> {
    match crate::input_file::read_text_if_present(path, crate::input_file::Bound::Text) {
        Ok(Some(t)) => Ok(t
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()),
        Ok(None) => Ok(BTreeSet::new()),
        Err(e) => Err(e),
    }
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
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(manifest));
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
        assert!(e.message.contains("x.tsv:3:"), "{}", e.message);
    }
}
