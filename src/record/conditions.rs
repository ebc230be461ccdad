//! What differs between the conditions two runs were measured under, as
//! data: computed once from two [`RunMeta`]s, then worded by each reader
//! (`diff`'s warnings, `merge`'s refusals, the history's series labels).

use super::meta::{Accel, Overrides, RunMeta};
use super::schema::ImageRecord;

/// One condition's value in the earlier run (`baseline`) and the later one
/// (`candidate`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Both<T> {
    pub baseline: T,
    pub candidate: T,
}

/// One condition that differs between two runs, with both values.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "condition", rename_all = "kebab-case")]
pub enum ConditionChange {
    /// The hosts' names (several in a merged run).
    Hostname(Both<Vec<String>>),
    /// The hosts' CPU models ([`RunMeta::cpu_models`]).
    HostCpu(Both<Vec<String>>),
    Qemu(Both<String>),
    Accelerator(Both<Accel>),
    /// The timing mode alone (`wall`, `icount shift=4` in the file).
    TimingMode(Both<super::meta::TimingMode>),
    Suite(Both<String>),
    /// The suite file's sha256.
    SuiteFile(Both<crate::base::sha256::Digest>),
    /// The suite overrides (without the shard, which differs between the
    /// shards of one sweep); boxed, as the settings are many.
    Overrides(Box<Both<Overrides>>),
    GuestImage(Both<ImageRecord>),
}

impl ConditionChange {
    /// What differs between `baseline`'s conditions and `candidate`'s, in a
    /// fixed order (host, QEMU, accelerator, timing, suite, overrides, guest
    /// image).
    ///
    /// Under icount guest time counts instructions, which the host's speed
    /// and load do not change: another host is no change when both runs count
    /// instructions, but another QEMU (its translation) still is. A run that
    /// recorded no guest image has nothing to compare.
    pub fn between(baseline: &RunMeta, candidate: &RunMeta) -> Vec<ConditionChange> {
        let mut changes = Vec::new();
        fn both<T: Clone + PartialEq>(a: &T, b: &T) -> Option<Both<T>> {
            (a != b).then(|| Both {
                baseline: a.clone(),
                candidate: b.clone(),
            })
        }
        let both_count_instructions =
            baseline.counts_instructions() && baseline.timing_mode() == candidate.timing_mode();
        if !both_count_instructions {
            // The same hosts in another order (another shard first) are
            // the same hosts.
            let sorted = |mut v: Vec<String>| {
                v.sort();
                v
            };
            let (a, b) = (baseline.hostnames(), candidate.hostnames());
            if sorted(a.clone()) != sorted(b.clone()) {
                changes.push(ConditionChange::Hostname(Both {
                    baseline: a,
                    candidate: b,
                }));
            }
            let (a, b) = (baseline.cpu_models(), candidate.cpu_models());
            if sorted(a.clone()) != sorted(b.clone()) {
                changes.push(ConditionChange::HostCpu(Both {
                    baseline: a,
                    candidate: b,
                }));
            }
        }
        changes.extend(
            both(&baseline.host.qemu_version, &candidate.host.qemu_version)
                .map(ConditionChange::Qemu),
        );
        changes.extend(both(&baseline.accel, &candidate.accel).map(ConditionChange::Accelerator));
        changes.extend(
            both(&baseline.timing_mode(), &candidate.timing_mode())
                .map(ConditionChange::TimingMode),
        );
        changes.extend(both(&baseline.suite, &candidate.suite).map(ConditionChange::Suite));
        changes.extend(
            both(&baseline.suite_sha256, &candidate.suite_sha256).map(ConditionChange::SuiteFile),
        );
        changes.extend(
            both(
                &baseline.overrides.suite_changes(),
                &candidate.overrides.suite_changes(),
            )
            .map(|both| ConditionChange::Overrides(Box::new(both))),
        );
        if let (Some(a), Some(b)) = (&baseline.guest_image, &candidate.guest_image) {
            if a.sha256 != b.sha256 {
                changes.push(ConditionChange::GuestImage(Both {
                    baseline: a.clone(),
                    candidate: b.clone(),
                }));
            }
        }
        changes
    }

    /// The change as a warning line: both values as recorded.
    pub fn warning(&self) -> String {
        let what = self.condition();
        let line = |a: &str, b: &str| format!("{what} differs: baseline {a:?}, candidate {b:?}");
        match self {
            ConditionChange::Hostname(v) => line(&v.baseline.join(", "), &v.candidate.join(", ")),
            ConditionChange::HostCpu(v) => line(
                &super::meta::cpu_models_words(&v.baseline),
                &super::meta::cpu_models_words(&v.candidate),
            ),
            ConditionChange::Qemu(v) | ConditionChange::Suite(v) => line(&v.baseline, &v.candidate),
            ConditionChange::TimingMode(v) => {
                line(&v.baseline.to_string(), &v.candidate.to_string())
            }
            ConditionChange::SuiteFile(v) => format!(
                "suite file (sha256) differs: baseline {:?}, candidate {:?}",
                v.baseline.as_str(),
                v.candidate.as_str()
            ),
            ConditionChange::Accelerator(v) => line(v.baseline.as_str(), v.candidate.as_str()),
            ConditionChange::Overrides(v) => line(
                &v.baseline.describe().join(", "),
                &v.candidate.describe().join(", "),
            ),
            ConditionChange::GuestImage(v) => format!(
                "guest image differs: baseline sha256 {}, candidate {}{}",
                v.baseline.short_sha(),
                v.candidate.short_sha(),
                v.baseline.differing_files(&v.candidate)
            ),
        }
    }

    /// The condition's name, as a label or the head of a sentence.
    pub fn condition(&self) -> &'static str {
        match self {
            ConditionChange::Hostname(_) => "host",
            ConditionChange::HostCpu(_) => "host CPU",
            ConditionChange::Qemu(_) => "QEMU",
            ConditionChange::Accelerator(_) => "accelerator",
            ConditionChange::TimingMode(_) => "timing mode",
            ConditionChange::Suite(_) => "suite",
            ConditionChange::SuiteFile(_) => "suite file",
            ConditionChange::Overrides(_) => "suite overrides",
            ConditionChange::GuestImage(_) => "guest image",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_differs_is_a_change() {
        let a = RunMeta {
            suite: "quick".into(),
            overrides: Overrides {
                scale: Some(2.0),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut b = a.clone();
        assert!(ConditionChange::between(&a, &b).is_empty());
        b.overrides.boots = Some(3);
        b.accel = Accel::Kvm;
        let changes = ConditionChange::between(&a, &b);
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert_eq!(
            changes[0],
            ConditionChange::Accelerator(Both {
                baseline: Accel::Tcg,
                candidate: Accel::Kvm
            })
        );
        assert!(
            matches!(&changes[1], ConditionChange::Overrides(o) if o.candidate.describe().len() == 2)
        );
        // Another shard of the same sweep is no change.
        let mut shard = a.clone();
        shard.overrides.shard = Some(crate::record::ShardSel { index: 1, count: 2 });
        assert!(ConditionChange::between(&a, &shard).is_empty());
    }

    #[test]
    fn a_merged_run_s_hosts_are_compared_as_hosts_not_as_words() {
        let host = |name: &str, cpu: &str| crate::record::RunHost {
            hostname: name.into(),
            cpu_model: cpu.into(),
        };
        let mut a = RunMeta::default();
        a.host.hostname = "h1".into();
        a.host.cpu_model = "A".into();
        a.hosts = vec![host("h1", "A"), host("h2", "B")];
        // The same hosts, another shard first.
        let mut b = a.clone();
        b.host.hostname = "h2".into();
        b.host.cpu_model = "B".into();
        assert!(ConditionChange::between(&a, &b).is_empty());
        // One host of the two, alone, is a change of hosts and CPUs.
        let mut single = a.clone();
        single.hosts.clear();
        let changes = ConditionChange::between(&a, &single);
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert_eq!(
            changes[0],
            ConditionChange::Hostname(Both {
                baseline: vec!["h1".into(), "h2".into()],
                candidate: vec!["h1".into()],
            })
        );
    }
}
