//! Comparing two result sets run separately (last night's against
//! tonight's): one variant's samples from a baseline run directory against
//! the same variant's from a candidate run directory, rendered with the same
//! tables, statistics and plots as a single run.
//!
//! The two runs become one synthetic run directory whose two "variants" are
//! `baseline:<name>` and `candidate:<name>`, so the report code is reused as
//! it is. Differences that make such a comparison doubtful (host, accelerator,
//! timing mode, suite, kernels) are listed as warnings at the top.

use crate::base::error::InputError;
use crate::base::error::Result;
use crate::guest::images::size::{KernelSizes, SizeComparison, SizeRecord};
use crate::record::{
    read_samples_with_hosts, Both, ConditionChange, KernelMeta, RunMeta, SampleWriter, Warning,
};
use std::path::Path;

/// What differs between the two runs' conditions, one line each.
pub fn condition_warnings(baseline: &RunMeta, candidate: &RunMeta) -> Vec<String> {
    ConditionChange::between(baseline, candidate)
        .iter()
        .map(ConditionChange::warning)
        .collect()
}

fn read_run(dir: &Path) -> Result<RunMeta> {
    crate::record::require_run_dir(dir)?;
    RunMeta::read(dir)
}

/// The variant compared by default: the candidate ("with") side of the baseline run.
pub fn default_variant(meta: &RunMeta) -> Option<String> {
    meta.kernels.get(1).map(|k| k.variant.clone())
}

/// Writes the synthetic run of `variant` (baseline run vs candidate run)
/// into `out` and renders its report. Returns the condition warnings.
pub fn diff(
    baseline_dir: &Path,
    candidate_dir: &Path,
    variant: Option<&str>,
    out: &Path,
) -> Result<Vec<String>> {
    let baseline = read_run(baseline_dir)?;
    let candidate = read_run(candidate_dir)?;
    if let Some(why) = crate::record::guest_mismatch(&baseline, &candidate) {
        return Err(InputError::in_file(candidate_dir, why).into());
    }
    let variant = chosen_variant(&candidate, candidate_dir, variant)?;
    let (mut kb, mut kc) = (
        kernel_of(&baseline, baseline_dir, &variant)?,
        kernel_of(&candidate, candidate_dir, &variant)?,
    );
    let mut warnings = doubts(&baseline, &candidate, &kb, &kc, &variant);
    warnings.extend(model_doubt(baseline_dir, candidate_dir)?);
    let names = [
        format!("baseline:{variant}"),
        format!("candidate:{variant}"),
    ];
    kb.variant = names[0].clone();
    kc.variant = names[1].clone();

    std::fs::create_dir_all(out.join("logs"))?;
    let sides = [(&baseline, baseline_dir), (&candidate, candidate_dir)];
    let mut meta = candidate.clone();
    meta.diff = true;
    meta.description = format!(
        "{variant} in {} (baseline) against {variant} in {} (candidate)",
        baseline_dir.display(),
        candidate_dir.display()
    );
    meta.kernels = vec![kb, kc];
    meta.complete = baseline.complete && candidate.complete;
    meta.boots = Vec::new();
    for (side, (run, dir)) in sides.into_iter().enumerate() {
        for b in run.boots.iter().filter(|b| b.variant == variant) {
            let mut b = b.clone();
            b.variant = names[side].clone();
            b.console_log = dir.join(&b.console_log).display().to_string();
            meta.boots.push(b);
        }
    }
    meta.warnings = warnings.clone();
    meta.shard = None;
    meta.shards = Vec::new();
    write_samples(&sides, &variant, &names, out)?;
    meta.write(out)?;
    let _ = std::fs::remove_file(out.join(crate::guest::images::size::SIZES_FILE));
    if let Some(sizes) = diff_sizes(baseline_dir, candidate_dir, &variant, &names)? {
        sizes.write(out)?;
    }
    crate::stages::report::write(out)?;
    Ok(warnings.iter().map(Warning::describe).collect())
}

/// The variant to compare: the one asked for, else the candidate run's one
/// candidate; a run of several candidates must be told which.
fn chosen_variant(
    candidate: &RunMeta,
    candidate_dir: &Path,
    variant: Option<&str>,
) -> Result<String> {
    match variant {
        Some(v) => Ok(v.to_string()),
        None if candidate.kernels.len() > 2 => {
            let names: Vec<&str> = candidate.kernels[1..]
                .iter()
                .map(|k| k.variant.as_str())
                .collect();
            Err(InputError::in_file(
                candidate_dir,
                format!(
                    "the run has {} candidates ({}): name the one to compare with --variant",
                    names.len(),
                    names.join(", ")
                ),
            )
            .into())
        }
        None => Ok(default_variant(candidate)
            .ok_or_else(|| InputError::in_file(candidate_dir, "the run records no variants"))?),
    }
}

/// The kernel of `variant` in the run `meta` (read from `dir`).
fn kernel_of(meta: &RunMeta, dir: &Path, variant: &str) -> Result<KernelMeta> {
    meta.kernels
        .iter()
        .find(|k| k.variant == variant)
        .cloned()
        .ok_or_else(|| {
            let names: Vec<&str> = meta.kernels.iter().map(|k| k.variant.as_str()).collect();
            InputError::in_file(
                dir,
                format!(
                    "no variant {variant:?} in this run (it has: {})",
                    names.join(", ")
                ),
            )
            .into()
        })
}

/// The settings of the cycle model that differ between two runs, when
/// both ran under it.
fn model_doubt(baseline: &Path, candidate: &Path) -> Result<Option<Warning>> {
    use crate::base::cycle_model::CycleModel;
    let (Some(a), Some(b)) = (CycleModel::read(baseline)?, CycleModel::read(candidate)?) else {
        return Ok(None);
    };
    let differing = |from: &CycleModel, other: &CycleModel| -> Vec<String> {
        from.settings
            .iter()
            .filter(|(k, v)| other.settings.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    };
    let (baseline, candidate) = (differing(&a, &b), differing(&b, &a));
    Ok(
        (!baseline.is_empty() || !candidate.is_empty()).then_some(Warning::ModelSettings {
            settings: Both {
                baseline,
                candidate,
            },
        }),
    )
}

/// What makes comparing the two runs' `variant` doubtful: the conditions
/// that differ, and the kernels' final `.config`s (`kb`, `kc`) if they do.
fn doubts(
    baseline: &RunMeta,
    candidate: &RunMeta,
    kb: &KernelMeta,
    kc: &KernelMeta,
    variant: &str,
) -> Vec<Warning> {
    let mut warnings: Vec<Warning> = ConditionChange::between(baseline, candidate)
        .into_iter()
        .map(|change| Warning::Condition { change })
        .collect();
    if kb.config_sha256 != kc.config_sha256 {
        warnings.push(Warning::KernelConfig {
            variant: variant.to_string(),
            config_sha256: Both {
                baseline: kb.config_sha256.clone(),
                candidate: kc.config_sha256.clone(),
            },
        });
    }
    warnings
}

/// Writes `variant`'s samples of each side (baseline, candidate) into
/// `out`'s `samples.csv` as the diff's two variants (`names`).
fn write_samples(
    sides: &[(&RunMeta, &Path); 2],
    variant: &str,
    names: &[String; 2],
    out: &Path,
) -> Result<()> {
    let _ = std::fs::remove_file(out.join(crate::record::SAMPLES_FILE));
    let mut writer = SampleWriter::open(out)?;
    for (side, (run, dir)) in sides.iter().enumerate() {
        // Each sample keeps the host that measured it: runs made on one host
        // each, two different ones, are compared across hosts (and warned
        // about); merged runs that share hosts are compared within them.
        let (samples, hosts) =
            crate::record::hosts_or(read_samples_with_hosts(dir)?, &run.host.hostname);
        for (mut s, host) in samples.into_iter().zip(hosts) {
            if s.variant == variant {
                s.variant = names[side].clone();
                writer.append_from(&s, &host)?;
            }
        }
    }
    Ok(())
}

/// The variant's recorded sizes in each run, as the diff's two kernels
/// (`names`), when both runs recorded them. Their bloat-o-meter needs both
/// vmlinux files, which run directories do not keep, so it is not run.
fn diff_sizes(
    baseline_dir: &Path,
    candidate_dir: &Path,
    variant: &str,
    names: &[String; 2],
) -> Result<Option<SizeRecord>> {
    let (Some(a), Some(b)) = (
        SizeRecord::read(baseline_dir)?,
        SizeRecord::read(candidate_dir)?,
    ) else {
        return Ok(None);
    };
    let (Some(ka), Some(kb)) = (a.kernel(variant), b.kernel(variant)) else {
        return Ok(None);
    };
    let mut objects = a.objects.clone();
    objects.extend(b.objects.iter().filter(|o| !a.objects.contains(o)).cloned());
    let relabel = |k: &KernelSizes, name: &str| KernelSizes {
        variant: name.to_string(),
        ..k.clone()
    };
    Ok(Some(SizeRecord {
        objects,
        kernels: vec![relabel(ka, &names[0]), relabel(kb, &names[1])],
        comparisons: vec![SizeComparison {
            baseline: names[0].clone(),
            candidate: names[1].clone(),
            bloat: None,
            bloat_error: None,
        }],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ImageFile, ImageRecord};

    #[test]
    fn runs_of_other_model_settings_are_a_doubt_naming_each_setting() {
        use crate::base::cycle_model::CycleModel;
        let (a, b, plain) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        CycleModel::default().write(a.path()).unwrap();
        CycleModel::default().write(b.path()).unwrap();
        assert_eq!(model_doubt(a.path(), b.path()).unwrap(), None);
        // A run without the model has nothing to compare.
        assert_eq!(model_doubt(a.path(), plain.path()).unwrap(), None);
        let mut before = CycleModel::default();
        before.set("issue-width", 0).unwrap();
        before.write(b.path()).unwrap();
        let doubt = model_doubt(b.path(), a.path()).unwrap().unwrap();
        assert_eq!(
            doubt,
            Warning::ModelSettings {
                settings: Both {
                    baseline: vec!["issue-width=0".into()],
                    candidate: vec!["issue-width=4".into()],
                }
            }
        );
        assert!(doubt.describe().contains("issue-width=0 in the baseline"));
    }

    #[test]
    fn runs_of_other_architectures_are_not_diffed() {
        let dir = tempfile::tempdir().unwrap();
        let x86 = RunMeta::default();
        let arm64 = RunMeta {
            arch: crate::base::arch::Arch::Arm64,
            guest_cpu: Some("neoverse-n1".into()),
            ..Default::default()
        };
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        x86.write(&a).unwrap();
        arm64.write(&b).unwrap();
        let e = diff(&a, &b, None, &dir.path().join("out")).unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains("x86-64 against arm64 (-cpu neoverse-n1)"),
            "{text}"
        );
        assert!(text.starts_with(&b.display().to_string()), "{text}");
        assert!(!dir.path().join("out").exists());
    }

    #[test]
    fn conditions_that_differ_are_named() {
        let a = RunMeta {
            accel: crate::record::Accel::Tcg,
            suite: "quick".into(),
            ..Default::default()
        };
        let mut b = a.clone();
        assert!(condition_warnings(&a, &b).is_empty());
        b.accel = crate::record::Accel::Kvm;
        b.host.hostname = "other".into();
        let w = condition_warnings(&a, &b);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w.iter().any(|l| l.starts_with("accelerator differs")));
        assert!(w.iter().any(|l| l.starts_with("host differs")));
    }

    #[test]
    fn another_guest_image_is_named_by_what_differs_in_it() {
        let file = |path: &str, package: &str, version: &str, sha: &str| ImageFile {
            path: path.into(),
            kind: "library".into(),
            package: package.into(),
            version: version.into(),
            sha256: sha.repeat(16).into(),
        };
        let image = |sha: &str, libc: ImageFile| ImageRecord {
            sha256: sha.repeat(16).into(),
            files: vec![file("/usr/bin/hackbench", "rt-tests", "2.5-1", "a"), libc],
        };
        let a = RunMeta {
            guest_image: Some(image(
                "1",
                file("/lib/libc.so.6", "libc6", "2.36-9+deb12u10", "b"),
            )),
            ..Default::default()
        };
        let mut b = a.clone();
        assert!(condition_warnings(&a, &b).is_empty());
        b.guest_image = Some(image(
            "2",
            file("/lib/libc.so.6", "libc6", "2.36-9+deb12u13", "c"),
        ));
        let w = condition_warnings(&a, &b);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("guest image differs: baseline sha256 1111111111111111, candidate 2222222222222222; /lib/libc.so.6: libc6 2.36-9+deb12u10"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("against libc6 2.36-9+deb12u13") && !w[0].contains("hackbench"));
        // A run from before images were recorded: nothing to compare.
        b.guest_image = None;
        assert!(condition_warnings(&a, &b).is_empty());
    }

    #[test]
    fn under_icount_another_host_is_no_warning_but_another_qemu_is() {
        let a = RunMeta {
            accel: crate::record::Accel::Tcg,
            suite: "quick".into(),
            timing: crate::record::TimingDecision::icount(4, "auto"),
            ..Default::default()
        };
        let mut b = a.clone();
        b.host.hostname = "other".into();
        b.host.cpu_model = "another CPU".into();
        assert!(condition_warnings(&a, &b).is_empty());
        b.host.qemu_version = "QEMU emulator version 10.0.2".into();
        let w = condition_warnings(&a, &b);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("QEMU differs"), "{w:?}");
        b.timing = crate::record::TimingDecision::wall("auto");
        let w = condition_warnings(&a, &b);
        assert!(w.iter().any(|l| l.starts_with("host differs")), "{w:?}");
        assert!(
            w.iter().any(|l| l.starts_with("timing mode differs")),
            "{w:?}"
        );
    }
}
