//! Doubts about a run's comparison, recorded as data and worded only when
//! shown ([`Warning::describe`]).

use super::conditions::{Both, ConditionChange};
use super::meta::Accel;
use super::schema::ImageRecord;
use crate::base::sha256::Digest;
use serde::{Deserialize, Serialize};

/// One doubt about a run's comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Warning {
    /// A diff of two runs measured under other conditions.
    Condition { change: ConditionChange },
    /// A diff of two runs whose kernels of `variant` have other final
    /// `.config`s.
    KernelConfig {
        variant: String,
        config_sha256: Both<Digest>,
    },
    /// Shards of a merged run that ran under other accelerators; `dirs` are
    /// the first shard's run directory and the other's.
    ShardAccelerator {
        accel: Both<Accel>,
        dirs: Both<String>,
    },
    /// Shards of a merged run whose guest images differ.
    ShardGuestImage {
        image: Box<Both<ImageRecord>>,
        dirs: Both<String>,
    },
    /// Shards of a merged run whose hosts built the kernel of `variant`
    /// differently.
    ShardBuild {
        variant: String,
        build_key: Both<Digest>,
        dirs: Both<String>,
    },
    /// A shard of a merged run that did not finish.
    ShardUnfinished { index: u32, dir: String },
    /// Boots of one vCPU ran on the host's QEMU of another release than
    /// the one markbench's own QEMU, which ran those of more than one, is
    /// built from and patched for.
    QemuRelease { host: String, own: String },
    /// A diff of two runs whose cycle models had other settings: each
    /// setting that differs as `name=value`, in the baseline and in the
    /// candidate, so their estimated cycles are priced differently.
    ModelSettings { settings: Both<Vec<String>> },
    /// Guests booted `jobs` at once under wall-clock timing, as `by` asked.
    WallClockSlots { jobs: usize, by: super::JobsAskedBy },
    /// A warning in words, as a run before format 3 (or, of boots side by
    /// side on the wall clock, before format 5) recorded it.
    Text { text: String },
}

impl Warning {
    /// The warning as the report and the terminal say it.
    pub fn describe(&self) -> String {
        match self {
            Warning::Condition { change } => change.warning(),
            Warning::KernelConfig {
                variant,
                config_sha256: v,
            } => format!(
                "kernel {variant:?} differs: final .config {} in the baseline, {} in the candidate",
                v.baseline.short(),
                v.candidate.short()
            ),
            Warning::ShardAccelerator { accel, dirs } => format!(
                "accelerator differs between shards: {} in {}, {} in {}",
                accel.baseline, dirs.baseline, accel.candidate, dirs.candidate
            ),
            Warning::ShardGuestImage { image, dirs } => format!(
                "guest image differs between shards: sha256 {} in {}, {} in {}{}",
                image.baseline.short_sha(),
                dirs.baseline,
                image.candidate.short_sha(),
                dirs.candidate,
                image.baseline.differing_files(&image.candidate)
            ),
            Warning::ShardBuild {
                variant,
                build_key,
                dirs,
            } => format!(
                "kernel {variant:?} differs between shards (build key {} in {}, {} in {}): the \
                 hosts built it differently",
                build_key.baseline.short(),
                dirs.baseline,
                build_key.candidate.short(),
                dirs.candidate
            ),
            Warning::ShardUnfinished { index, dir } => {
                format!("shard {index} ({dir}) did not finish: the merged run is partial")
            }
            Warning::QemuRelease { host, own } => format!(
                "the host's QEMU is {host:?}, not the {own} that markbench's own QEMU (the boots \
                 of more than one vCPU) is built from and patched for: the 1-vCPU boots ran on \
                 another QEMU release than those the patches were made beside; compare them with \
                 runs made before the host's QEMU changed with care"
            ),
            Warning::ModelSettings { settings } => format!(
                "the cycle model differs: {} in the baseline, {} in the candidate; their \
                 estimated cycles and the counts the settings make are not alike",
                settings.baseline.join(" "),
                settings.candidate.join(" ")
            ),
            Warning::WallClockSlots { jobs, by } => format!(
                "{jobs} guests ran at once under wall-clock timing ({}): guests beside each \
                 other share the host's cores, caches and memory bandwidth, so each one's times \
                 carry the others' load",
                by.option()
            ),
            Warning::Text { text } => text.clone(),
        }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_is_written_as_data_and_read_back() {
        let warnings = vec![
            Warning::ShardUnfinished {
                index: 1,
                dir: "/runs/shard-1".into(),
            },
            Warning::Condition {
                change: ConditionChange::Accelerator(Both {
                    baseline: Accel::Tcg,
                    candidate: Accel::Kvm,
                }),
            },
            Warning::Text {
                text: "boots side by side".into(),
            },
        ];
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct File {
            warnings: Vec<Warning>,
        }
        let text = toml::to_string(&File {
            warnings: warnings.clone(),
        })
        .unwrap();
        assert!(text.contains("kind = \"shard-unfinished\""), "{text}");
        let read: File = toml::from_str(&text).unwrap();
        assert_eq!(read.warnings, warnings);
        assert_eq!(
            warnings[0].describe(),
            "shard 1 (/runs/shard-1) did not finish: the merged run is partial"
        );
        assert_eq!(
            warnings[1].to_string(),
            "accelerator differs: baseline \"tcg\", candidate \"kvm\""
        );
    }
}
