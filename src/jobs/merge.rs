//! Joining the run directories of a suite's shards (`markbench merge`) into
//! one run directory whose report has the form of a single-machine run's.
//!
//! Before anything is written the shards are checked to be one sweep: the
//! same suite file (hash) and overrides, kernels built from the same
//! fragments (hashes), the same shard count, every shard once. Different timing modes are refused (wall time and instruction-count
//! time are different measurements); a different accelerator, kernel build
//! or an unfinished shard is merged but warned about at the top of the
//! report. Every sample keeps the host that measured it, which the
//! statistics use as a blocking factor (`stats::blocked`).

use crate::base::error::InputError;
use crate::base::error::{Context, Result};
use crate::base::sha256::Digest;
use crate::record::{
    hosts_or, read_samples_with_hosts, Both, ConditionChange, RunHost, RunMeta, SampleWriter,
    ShardRecord, Warning, META_FILE,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a merge produced.
#[derive(Debug)]
pub struct Merged {
    pub meta: RunMeta,
    /// Doubts about the merge, also at the top of the report.
    pub warnings: Vec<Warning>,
}

/// One shard's run directory and its metadata.
struct ShardRun {
    dir: PathBuf,
    meta: RunMeta,
    index: u32,
    count: u32,
}

fn read_shard(dir: &Path) -> Result<ShardRun> {
    crate::record::require_run_dir(dir)?;
    // A shard that is not there or is malformed is input to fix; one the
    // disk fails to read is the machinery's: the reader tells them apart.
    let meta = RunMeta::read(dir)?;
    let Some(shard) = &meta.shard else {
        return Err(InputError::in_file(
            dir,
            format!(
                "not a shard's run (its {META_FILE} records no shard; \
                 `markbench run-shard` makes them)"
            ),
        )
        .into());
    };
    Ok(ShardRun {
        dir: dir.to_path_buf(),
        index: shard.index,
        count: shard.count,
        meta,
    })
}

/// Checks that `runs` are every shard of one sweep, once; returns the
/// warnings for differences that do not forbid merging.
fn check(runs: &[ShardRun]) -> Result<Vec<Warning>> {
    let first = &runs[0];
    let mut warnings = Vec::new();
    for r in &runs[1..] {
        same_sweep(first, r)?;
        warnings.extend(differences(first, r));
    }
    warnings.extend(each_shard_once(runs)?);
    Ok(warnings)
}

/// An input error unless `r` is a shard of `first`'s sweep: the same
/// suite, overrides, shard count, timing mode, variants and fragments.
fn same_sweep(first: &ShardRun, r: &ShardRun) -> Result<()> {
    let differs = |what: &str, a: &str, b: &str| -> Result<()> {
        if a != b {
            return Err(InputError::in_file(
                &r.dir,
                format!(
                    "{what} {b:?} differs from {:?} in {}: not shards of one sweep",
                    a,
                    first.dir.display()
                ),
            )
            .into());
        }
        Ok(())
    };
    if let Some(why) = crate::record::guest_mismatch(&first.meta, &r.meta) {
        return Err(InputError::in_file(
            &r.dir,
            format!(
                "{why} (against {}): not shards of one sweep",
                first.dir.display()
            ),
        )
        .into());
    }
    let changes = ConditionChange::between(&first.meta, &r.meta);
    let refuse = |change: &ConditionChange| -> Result<()> {
        match change {
            ConditionChange::Suite(v) => differs("suite", &v.baseline, &v.candidate),
            ConditionChange::SuiteFile(v) => differs(
                "suite file (sha256)",
                v.baseline.as_str(),
                v.candidate.as_str(),
            ),
            ConditionChange::Overrides(v) => differs(
                "overrides",
                &v.baseline.describe().join(", "),
                &v.candidate.describe().join(", "),
            ),
            ConditionChange::TimingMode(v) => differs(
                "timing mode",
                &v.baseline.to_string(),
                &v.candidate.to_string(),
            ),
            _ => Ok(()),
        }
    };
    // The suite and its overrides are named before the shard count, the
    // timing after it.
    for change in &changes {
        if !matches!(change, ConditionChange::TimingMode(_)) {
            refuse(change)?;
        }
    }
    differs(
        "shard count",
        &first.count.to_string(),
        &r.count.to_string(),
    )?;
    for change in &changes {
        refuse(change)?;
    }
    let variants = |m: &RunMeta| -> String {
        m.kernels
            .iter()
            .map(|k| k.variant.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    differs("variants", &variants(&first.meta), &variants(&r.meta))?;
    for (a, b) in first.meta.kernels.iter().zip(&r.meta.kernels) {
        if a.fragments != b.fragments {
            return Err(InputError::in_file(
                &r.dir,
                format!(
                    "kernel {:?} was built from other fragments than in {} ({}): not \
                 shards of one sweep",
                    b.variant,
                    first.dir.display(),
                    fragment_differences(&b.fragments, &a.fragments)
                ),
            )
            .into());
        }
    }
    Ok(())
}

/// What differs between `first` and `r`, shards of one sweep, that does
/// not forbid merging them: the accelerator, the guest image, a kernel's
/// build.
fn differences(first: &ShardRun, r: &ShardRun) -> Vec<Warning> {
    let dirs = || Both {
        baseline: first.dir.display().to_string(),
        candidate: r.dir.display().to_string(),
    };
    let mut warnings = Vec::new();
    for change in ConditionChange::between(&first.meta, &r.meta) {
        match change {
            ConditionChange::Accelerator(accel) => warnings.push(Warning::ShardAccelerator {
                accel,
                dirs: dirs(),
            }),
            ConditionChange::GuestImage(image) => warnings.push(Warning::ShardGuestImage {
                image: Box::new(image),
                dirs: dirs(),
            }),
            _ => {}
        }
    }
    for (a, b) in first.meta.kernels.iter().zip(&r.meta.kernels) {
        if a.config_sha256 != b.config_sha256 || a.build_key != b.build_key {
            warnings.push(Warning::ShardBuild {
                variant: a.variant.clone(),
                build_key: Both {
                    baseline: a.build_key.clone(),
                    candidate: b.build_key.clone(),
                },
                dirs: dirs(),
            });
        }
    }
    warnings
}

/// An input error unless `runs` hold every shard of their count, each
/// once; a warning for each shard that did not finish.
fn each_shard_once(runs: &[ShardRun]) -> Result<Vec<Warning>> {
    let mut warnings = Vec::new();
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for r in runs {
        if r.index >= r.count {
            return Err(InputError::in_file(
                &r.dir,
                format!("shard {} of {} does not exist", r.index, r.count),
            )
            .into());
        }
        if let Some(other) = seen.insert(r.index, &r.dir) {
            return Err(InputError::new(format!(
                "{} and {} are both shard {}: each shard once",
                other.display(),
                r.dir.display(),
                r.index
            ))
            .into());
        }
        if !r.meta.complete {
            warnings.push(Warning::ShardUnfinished {
                index: r.index,
                dir: r.dir.display().to_string(),
            });
        }
    }
    let count = runs[0].count;
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(InputError::new(format!(
            "shard{} {} of {} missing (given: {})",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            count,
            runs.iter()
                .map(|r| format!("{} = shard {}", r.dir.display(), r.index))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    Ok(warnings)
}

/// Each fragment whose hash differs between `here` and `there`, for a message.
fn fragment_differences(
    here: &BTreeMap<String, Digest>,
    there: &BTreeMap<String, Digest>,
) -> String {
    let short = |hash: Option<&Digest>| hash.map_or("none".to_string(), |h| h.short().into());
    let files: BTreeSet<&String> = here.keys().chain(there.keys()).collect();
    files
        .into_iter()
        .filter(|f| here.get(*f) != there.get(*f))
        .map(|f| {
            format!(
                "{f} {} here, {} there",
                short(here.get(f)),
                short(there.get(f))
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Copies a shard's console logs under `out/logs/shard-K/`; returns the new
/// relative path of each old one.
fn copy_logs(run: &ShardRun, out: &Path) -> Result<BTreeMap<String, String>> {
    let mut moved = BTreeMap::new();
    let target = out.join(format!("logs/shard-{}", run.index));
    std::fs::create_dir_all(&target)?;
    for b in &run.meta.boots {
        let from = run.dir.join(&b.console_log);
        let name = Path::new(&b.console_log)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let rel = format!("logs/shard-{}/{name}", run.index);
        // A shard may have no log of a boot; a log the disk fails to show
        // is an error naming it, not a log left behind.
        if crate::base::input_file::present(&from)? {
            std::fs::copy(&from, out.join(&rel))
                .with_context(|| format!("copying {}", from.display()))?;
        }
        moved.insert(b.console_log.clone(), rel);
    }
    Ok(moved)
}

/// Merges the shards' run directories `dirs` into `out` and renders its report.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged> {
    if dirs.is_empty() {
        return Err(InputError::new("merge needs the shards' run directories").into());
    }
    let mut runs = dirs
        .iter()
        .map(|d| read_shard(d))
        .collect::<Result<Vec<_>>>()?;
    let warnings = check(&runs)?;
    runs.sort_by_key(|r| r.index);
    let first = &runs[0];
    prepare_out(first, out)?;
    let mut hosts = join_samples(&runs, out)?;
    let mut meta = first.meta.clone();
    meta.shard = None;
    // The merged run is the whole suite: nothing to resume as a shard.
    meta.overrides.shard = None;
    meta.boots = Vec::new();
    meta.order = Vec::new();
    for run in &runs {
        add_shard(&mut meta, run, out)?;
        hosts.insert(run.meta.host.hostname.clone());
    }
    if hosts.len() > 1 {
        meta.hosts = hosts_of(&runs, hosts);
    }
    meta.warnings.extend(warnings.iter().cloned());
    meta.write(out)?;
    crate::stages::report::write(out)?;
    Ok(Merged { meta, warnings })
}

/// Makes `out` a new run directory holding the files the report reads
/// that every shard has alike (taken from `first`).
fn prepare_out(first: &ShardRun, out: &Path) -> Result<()> {
    // A run there whose record cannot be looked at is not overwritten.
    if crate::base::input_file::present(&out.join(META_FILE))? {
        return Err(
            InputError::in_file(out, "already holds a run; merge into a new directory").into(),
        );
    }
    std::fs::create_dir_all(out.join("logs"))
        .with_context(|| format!("creating {}", out.display()))?;
    for file in [
        crate::stages::report::DIFFCONFIG_FILE,
        crate::guest::images::size::SIZES_FILE,
        crate::base::run_dir::SUITE_COPY,
    ] {
        let from = first.dir.join(file);
        if crate::base::input_file::present(&from)? {
            std::fs::copy(&from, out.join(file))
                .with_context(|| format!("copying {}", from.display()))?;
        }
    }
    Ok(())
}

/// Writes every shard's samples into `out`'s `samples.csv`, each with the
/// host that measured it; returns those hosts. Two shards holding the same
/// measurement (variant, CPUs, boot, workload, param, metric, iteration)
/// would be a split gone wrong: an input error.
fn join_samples(runs: &[ShardRun], out: &Path) -> Result<BTreeSet<String>> {
    let _ = std::fs::remove_file(out.join(crate::record::SAMPLES_FILE));
    let mut writer = SampleWriter::open(out)?;
    let mut measured: BTreeMap<crate::record::SampleKey, u32> = BTreeMap::new();
    let mut hosts = BTreeSet::new();
    for run in runs {
        let (samples, sample_hosts) =
            hosts_or(read_samples_with_hosts(&run.dir)?, &run.meta.host.hostname);
        for (s, host) in samples.iter().zip(&sample_hosts) {
            if let Some(other) = measured.insert(s.key(), run.index) {
                return Err(InputError::in_file(
                    &run.dir,
                    format!(
                        "{} {} {} on {} CPUs, {} boot {} iteration {} is also in shard {other}",
                        s.workload, s.param, s.metric, s.cpus, s.variant, s.boot, s.iteration
                    ),
                )
                .into());
            }
            writer.append_from(s, host)?;
            hosts.insert(host.clone());
        }
    }
    Ok(hosts)
}

/// Adds `run`'s boots (their logs copied into `out`), its order and its
/// shard record to the merged `meta`, and its times and completeness.
fn add_shard(meta: &mut RunMeta, run: &ShardRun, out: &Path) -> Result<()> {
    let logs = copy_logs(run, out)?;
    for b in &run.meta.boots {
        let mut b = b.clone();
        b.unit = meta.boots.len();
        b.console_log = logs.get(&b.console_log).cloned().unwrap_or(b.console_log);
        meta.boots.push(b);
    }
    meta.order
        .extend(run.meta.order.iter().map(|o| crate::record::UnitRecord {
            shard: Some(run.index),
            ..o.clone()
        }));
    let pieces = run
        .meta
        .shard
        .as_ref()
        .map(|s| s.pieces.clone())
        .unwrap_or_default();
    meta.shards.push(ShardRecord {
        index: run.index,
        host: run.meta.host.hostname.clone(),
        dir: run.dir.display().to_string(),
        pieces,
        boots: run.meta.boots.len(),
        failed_boots: run.meta.boots.iter().filter(|b| !b.ok()).count(),
        wall_s: run.meta.wall_s,
        accel: run.meta.accel.as_str().into(),
        timing: crate::record::Recorded::Data(run.meta.timing.clone()),
        timing_mode: run.meta.timing_mode(),
        complete: run.meta.complete,
    });
    meta.started_at = meta.started_at.clone().min(run.meta.started_at.clone());
    meta.finished_at = meta.finished_at.clone().max(run.meta.finished_at.clone());
    // The shards ran side by side: the sweep took as long as the slowest.
    meta.wall_s = meta.wall_s.max(run.meta.wall_s);
    meta.complete &= run.meta.complete;
    Ok(())
}

/// The merged run's hosts by name, each with its shard's CPU model (a host
/// known only from the samples it measured has none here).
fn hosts_of(runs: &[ShardRun], hosts: BTreeSet<String>) -> Vec<RunHost> {
    hosts
        .into_iter()
        .map(|hostname| RunHost {
            cpu_model: runs
                .iter()
                .find(|r| r.meta.host.hostname == hostname)
                .map(|r| r.meta.host.cpu_model.clone())
                .unwrap_or_default(),
            hostname,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::Error;

    #[test]
    fn a_shard_the_disk_fails_to_read_is_the_machinerys_a_missing_or_malformed_one_input() {
        let failing = tempfile::tempdir().unwrap();
        crate::base::input_file::link_to_failing_read(&failing.path().join(META_FILE));
        match read_shard(failing.path()) {
            Err(e @ Error::Machinery(_)) => {
                assert!(format!("{e:#}").contains("Input/output error"), "{e:#}")
            }
            Err(e) => panic!("not the machinery's: {e:#}"),
            Ok(_) => panic!("read"),
        }
        let shard = tempfile::tempdir().unwrap();
        match read_shard(shard.path()) {
            Err(Error::Input(e)) => assert!(e.message.contains("not a run directory"), "{e}"),
            Err(e) => panic!("not input: {e:#}"),
            Ok(_) => panic!("read"),
        }
        std::fs::write(shard.path().join(META_FILE), "complete = [\n").unwrap();
        match read_shard(shard.path()) {
            Err(Error::Input(e)) => {
                assert_eq!(e.file, Some(shard.path().join(META_FILE)), "{e}");
                assert!(e.line.is_some(), "{e}");
            }
            Err(e) => panic!("not input: {e:#}"),
            Ok(_) => panic!("read"),
        }
    }

    fn shard_in(dir: &Path) -> ShardRun {
        ShardRun {
            dir: dir.to_path_buf(),
            meta: RunMeta::default(),
            index: 0,
            count: 1,
        }
    }

    #[test]
    fn shards_of_other_architectures_are_not_one_sweep() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let first = shard_in(a.path());
        let mut other = shard_in(b.path());
        assert!(same_sweep(&first, &other).is_ok());
        other.meta.arch = crate::base::arch::Arch::Arm64;
        other.meta.guest_cpu = Some("neoverse-n1".into());
        let e = format!("{:#}", same_sweep(&first, &other).unwrap_err());
        assert!(e.starts_with(&b.path().display().to_string()), "{e}");
        assert!(
            e.contains("x86-64 against arm64 (-cpu neoverse-n1)")
                && e.contains("not shards of one sweep"),
            "{e}"
        );
    }

    #[test]
    fn an_out_whose_record_cannot_be_looked_at_is_not_merged_into() {
        let root = tempfile::tempdir().unwrap();
        let first = tempfile::tempdir().unwrap();
        let out = crate::base::input_file::dir_whose_files_cannot_be_named(root.path());
        let error = prepare_out(&shard_in(first.path()), &out).unwrap_err();
        assert!(format!("{error:#}").contains("meta.toml"), "{error:#}");
        assert!(!out.join("logs").exists(), "nothing is written");
    }

    #[test]
    fn a_shard_file_the_disk_fails_to_show_is_an_error_not_left_behind() {
        let out = tempfile::tempdir().unwrap();
        let first = tempfile::tempdir().unwrap();
        let diffconfig = first.path().join(crate::stages::report::DIFFCONFIG_FILE);
        crate::base::input_file::link_to_failing_read(&diffconfig);
        let error = prepare_out(&shard_in(first.path()), &out.path().join("merged")).unwrap_err();
        assert!(
            format!("{error:#}").contains(crate::stages::report::DIFFCONFIG_FILE),
            "{error:#}"
        );
        // Absent is not an error: a shard without sizes merges as before.
        let plain = tempfile::tempdir().unwrap();
        prepare_out(&shard_in(plain.path()), &out.path().join("merged-plain")).unwrap();
    }
}
