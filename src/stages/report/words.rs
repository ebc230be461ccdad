//! The words for what a run records as data: why its accelerator, how guest
//! time ran and why, how many guests at once and why, its workloads and the
//! patches of its QEMU. A value an older run recorded in words is shown as
//! it recorded it.

use crate::guest::workloads::WorkloadSpec;
use crate::record::{
    Accel, AccelReason, ConfigBase, KernelMeta, PatchRecord, Recorded, RunMeta, SlotsReason,
    SlotsWanted, SmpTrial, SourceRecord, TimingDecision, TimingReason, WhichVcpuTrial,
    ICOUNT_RTC_BASE,
};
use std::fmt::{self, Display, Formatter};

impl<T: Display> Display for Recorded<T> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Recorded::Data(data) => data.fmt(f),
            Recorded::Legacy(words) => f.write_str(words),
        }
    }
}

/// The guest architecture as a report's head names it, for a run not on
/// x86-64 (`None` for x86-64, which every report before arm64 left unsaid,
/// so theirs read as they did).
pub fn architecture(meta: &crate::record::RunMeta) -> Option<String> {
    if meta.arch.is_default() {
        return None;
    }
    let cpu = meta
        .guest_cpu
        .as_deref()
        .map_or(String::new(), |cpu| format!(", -cpu {cpu}"));
    Some(format!(
        "{} guests ({}{cpu}), kernels cross-built with {}",
        meta.arch,
        meta.arch.qemu_binary(),
        meta.arch.cross_compile().unwrap_or("the host's compiler")
    ))
}

impl Display for AccelReason {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            AccelReason::Asked { accel: Accel::Tcg } => {
                f.write_str("the suite or command line asked for TCG")
            }
            AccelReason::Asked { accel: Accel::Kvm } => {
                f.write_str("the suite or command line asked for KVM (not checked)")
            }
            AccelReason::NoDevKvm => {
                f.write_str("auto: /dev/kvm does not exist, so software emulation (TCG)")
            }
            AccelReason::KvmTrialCompleted { wall_s } => {
                write!(f, "auto: a KVM trial boot completed in {wall_s:.1} s")
            }
            AccelReason::KvmTrialFailed { end } => write!(
                f,
                "auto: /dev/kvm exists but a KVM trial boot failed ({}), so software emulation \
                 (TCG)",
                end.describe()
            ),
            AccelReason::Remembered { verdict, path } => {
                write!(f, "{verdict} (remembered in {path})")
            }
            AccelReason::OtherArch { arch } => write!(
                f,
                "{arch} guests on an x86-64 host: KVM runs only the host's architecture, so \
                 software emulation (TCG)"
            ),
        }
    }
}

impl Display for TimingReason {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        const ASKED: &str = "the suite or command line asked for";
        match self {
            TimingReason::AskedWall => write!(f, "{ASKED} wall time"),
            TimingReason::AskedIcount { smp_trial: None } => write!(f, "{ASKED} icount"),
            TimingReason::AskedIcount {
                smp_trial: Some(trial),
            } => write!(f, "{ASKED} icount; {trial}"),
            TimingReason::AutoKvm => f.write_str("auto: under KVM the guest's clock is the host's"),
            TimingReason::AutoSmpIcountFails {
                qemu_version,
                qemu_path,
                smp_trial,
            } => write!(
                f,
                "auto: wall time, since this QEMU ({qemu_version}, {qemu_path}) cannot run SMP \
                 guests under icount: {smp_trial}. A QEMU of 8.1 or later can; {}",
                crate::base::prereq::smp_icount_qemu_hint()
            ),
            TimingReason::AutoIcount => f.write_str("auto: instruction counting under TCG"),
            TimingReason::AutoIcountSmp {
                max_cpus,
                smp_trial,
            } => write!(
                f,
                "auto: instruction counting under TCG, with up to {max_cpus} vCPUs: {}",
                smp_trial
                    .as_ref()
                    .map_or_else(|| "not tried".to_string(), ToString::to_string)
            ),
        }
    }
}

impl Display for SmpTrial {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SmpTrial::Reached {
                cpus,
                online,
                wall_s,
            } => write!(
                f,
                "a {cpus}-vCPU icount trial boot reached the guest agent with CPUs {online} online \
                 in {wall_s:.1} s"
            ),
            SmpTrial::OtherCpus {
                cpus,
                online,
                expected,
            } => write!(
                f,
                "a {cpus}-vCPU icount trial boot came up with CPUs {online:?} online, not \
                 {expected}"
            ),
            SmpTrial::NoAgent {
                cpus,
                end,
                console_log,
            } => write!(
                f,
                "a {cpus}-vCPU icount trial boot did not reach the guest agent ({}; console in \
                 {console_log})",
                end.describe()
            ),
            SmpTrial::Remembered { trial, path } => write!(f, "{trial} (remembered in {path})"),
        }
    }
}

impl Display for WhichVcpuTrial {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (seen, expected) = (&self.seen, &self.expected);
        if seen == expected {
            write!(
                f,
                "the plugin was told the running vCPU at all {} executions of the marker ({})",
                seen.len(),
                vcpu_list(seen)
            )?;
        } else {
            write!(
                f,
                "the plugin was told vCPUs {} where the marker ran on {} ({})",
                vcpu_list(seen),
                vcpu_list(expected),
                wrong_of(seen, expected, "executions")
            )?;
        }
        match &self.stores {
            None => Ok(()),
            Some(stores) if stores == expected && seen == expected => {
                f.write_str(" and at the store after each")
            }
            Some(stores) if stores == expected => {
                f.write_str("; its memory callbacks were told the running vCPU at every store")
            }
            Some(stores) => write!(
                f,
                "{} its memory callbacks were told vCPUs {} at the stores after them ({})",
                if seen == expected { ", but" } else { ";" },
                vcpu_list(stores),
                wrong_of(stores, expected, "stores")
            ),
        }
    }
}

/// vCPU indexes as a list: "0 1 0 1".
fn vcpu_list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
}

/// "4 of 8 wrong", with how many were seen when not as many as expected.
fn wrong_of(seen: &[u32], expected: &[u32], what: &str) -> String {
    let wrong = seen.iter().zip(expected).filter(|(s, e)| s != e).count();
    let mut r = format!("{wrong} of {} wrong", expected.len());
    if seen.len() != expected.len() {
        r.push_str(&format!(", {} {what} seen", seen.len()));
    }
    r
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl Display for SlotsReason {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SlotsReason::WallClock => f.write_str(
                "one guest at a time: timing is on the wall clock, where guests beside each other \
                 disturb each other's time",
            ),
            SlotsReason::WallClockAsked { jobs, by } => {
                write!(f, "{jobs} guests at once, as {} asks", by.option())
            }
            SlotsReason::Icount {
                wanted,
                why,
                memory,
            } => {
                let why = match why {
                    SlotsWanted::HostCores { cores } => format!(
                        "the host's {cores} core{} (icount: a guest's samples do not depend on \
                         what runs beside it)",
                        plural(*cores)
                    ),
                    SlotsWanted::Asked { by } => format!("as {} asks", by.option()),
                };
                match memory {
                    Some(m) => write!(
                        f,
                        "{fit} guest{} at once, not {wanted} ({why}): only {fit} guest{} of {} \
                         MiB (+{} MiB of QEMU each) fit in the host's {} MiB available beside {} \
                         MiB kept for the host",
                        plural(m.fit),
                        plural(m.fit),
                        m.guest_mib,
                        m.qemu_mib,
                        m.available_mib,
                        m.headroom_mib,
                        fit = m.fit,
                    ),
                    None => write!(f, "{wanted} guest{} at once: {why}", plural(*wanted)),
                }
            }
        }
    }
}

impl Display for PatchRecord {
    /// Its name and the first 16 digits of its hash.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.sha256.short())
    }
}

impl Display for ConfigBase {
    /// `tinyconfig`, `defconfig`, or a `.config`'s path and short hash.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            ConfigBase::Tinyconfig => f.write_str("tinyconfig"),
            ConfigBase::Defconfig => f.write_str("defconfig"),
            ConfigBase::File { path, sha256 } => write!(f, "{path} (sha256 {})", sha256.short()),
        }
    }
}

impl KernelMeta {
    /// The configuration the kernel started from, as the report names it:
    /// tinyconfig when the run recorded none (there was no other then).
    pub fn config_base_words(&self) -> String {
        if self.config_base.is_unrecorded() {
            "tinyconfig".into()
        } else {
            self.config_base.to_string()
        }
    }
}

impl Display for SourceRecord {
    /// As the build identified it, every hash whole.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SourceRecord::Tarball { file, sha256 } => write!(f, "tarball {file} sha256 {sha256}"),
            SourceRecord::Tree {
                path,
                head,
                changes,
            } => write!(f, "tree {path} HEAD {head} changes {changes}"),
        }
    }
}

impl SourceRecord {
    /// As the build identified it, every hash cut to its first 16 digits.
    pub fn short(&self) -> String {
        match self {
            SourceRecord::Tarball { file, sha256 } => {
                format!("tarball {file} sha256 {}", sha256.short())
            }
            SourceRecord::Tree {
                path,
                head,
                changes,
            } => format!(
                "tree {path} HEAD {} changes {}",
                crate::base::sha256::short(head),
                changes.short()
            ),
        }
    }
}

impl TimingDecision {
    /// The timing mode and what it measures, as the report words it, for a
    /// run whose largest guest has `max_cpus` vCPUs.
    pub fn describe(&self, max_cpus: u32) -> String {
        if let Some(sentence) = &self.recorded_sentence {
            return sentence.clone();
        }
        match self.icount_shift {
            None => format!(
                "wall: the guest's CLOCK_MONOTONIC runs on host time ({})",
                self.reason
            ),
            Some(shift) => {
                let smp = if max_cpus > 1 {
                    " With several vCPUs QEMU runs them in turn on one host thread and guest time \
                     advances with the instructions of all of them, so a figure on N CPUs is the \
                     deterministic work of all N (spinning on locks and IPIs included); it cannot \
                     show parallel speed-up, and host cores do not limit the vCPU count."
                } else {
                    ""
                };
                format!(
                    "icount (shift={shift}, sleep=off, RTC from {ICOUNT_RTC_BASE} on guest time, \
                     a -seed per boot): guest time counts executed instructions (2^{shift} ns \
                     each), so timings measure code-path length and do not move with host load; \
                     each boot repeats exactly with its seed (in the Boots records of meta.toml); \
                     they cannot show cache, memory or timing effects.{smp} ({})",
                    self.reason
                )
            }
        }
    }
}

impl RunMeta {
    /// The timing mode and what it measures, as the report words it.
    pub fn timing_sentence(&self) -> String {
        self.timing.describe(self.max_cpus())
    }

    /// Each workload as a person reads it: its command line, how many runs
    /// a boot and at which CPU counts.
    pub fn workload_lines(&self) -> Vec<String> {
        self.workloads
            .iter()
            .map(|w| workload_line(w, self.iterations, self.warmup))
            .collect()
    }
}

/// A recorded workload as a person reads it, given the suite's runs a boot.
pub fn workload_line(w: &Recorded<WorkloadSpec>, iterations: u32, warmup: u32) -> String {
    match w {
        Recorded::Data(spec) => spec.describe(iterations, warmup),
        Recorded::Legacy(words) => words.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{JobsAskedBy, MemoryFit, Warning};

    #[test]
    fn reasons_are_worded_as_runs_before_format_5_recorded_them() {
        let cases: Vec<(String, &str)> = vec![
            (
                AccelReason::Asked { accel: Accel::Kvm }.to_string(),
                "the suite or command line asked for KVM (not checked)",
            ),
            (
                AccelReason::Remembered {
                    verdict: Box::new(Recorded::Data(AccelReason::KvmTrialCompleted {
                        wall_s: 1.25,
                    })),
                    path: "/c/v.toml".into(),
                }
                .to_string(),
                "auto: a KVM trial boot completed in 1.2 s (remembered in /c/v.toml)",
            ),
            (
                TimingReason::AutoIcountSmp {
                    max_cpus: 4,
                    smp_trial: None,
                }
                .to_string(),
                "auto: instruction counting under TCG, with up to 4 vCPUs: not tried",
            ),
            (
                SlotsReason::Icount {
                    wanted: 8,
                    why: SlotsWanted::HostCores { cores: 8 },
                    memory: Some(MemoryFit {
                        fit: 2,
                        guest_mib: 512,
                        qemu_mib: 256,
                        available_mib: 2600,
                        headroom_mib: 1024,
                    }),
                }
                .to_string(),
                "2 guests at once, not 8 (the host's 8 cores (icount: a guest's samples do not \
                 depend on what runs beside it)): only 2 guests of 512 MiB (+256 MiB of QEMU \
                 each) fit in the host's 2600 MiB available beside 1024 MiB kept for the host",
            ),
            (
                SlotsReason::Icount {
                    wanted: 1,
                    why: SlotsWanted::Asked {
                        by: JobsAskedBy::Suite,
                    },
                    memory: None,
                }
                .to_string(),
                "1 guest at once: as the suite's jobs asks",
            ),
            (
                Warning::WallClockSlots {
                    jobs: 2,
                    by: JobsAskedBy::CommandLine,
                }
                .to_string(),
                "2 guests ran at once under wall-clock timing (--jobs): guests beside each other \
                 share the host's cores, caches and memory bandwidth, so each one's times carry \
                 the others' load",
            ),
        ];
        for (words, expected) in cases {
            assert_eq!(words, expected);
        }
        let base = crate::guest::images::kernel::KernelBase::File {
            path: "/my/.config".into(),
            text: "CONFIG_X=y\n".into(),
        };
        assert_eq!(
            crate::record::ConfigBase::from(&base).to_string(),
            base.describe(),
            "a suite's base is shown as the dry run names it"
        );
        let legacy: Recorded<SlotsReason> = "as recorded".into();
        assert_eq!(legacy.to_string(), "as recorded");
    }

    #[test]
    fn a_source_is_worded_as_its_build_identified_it_and_shortened_for_a_line() {
        let head = "0123456789abcdef0123456789abcdef01234567";
        let tree = SourceRecord::Tree {
            path: "/src/my linux".into(),
            head: head.into(),
            changes: "5eed5eed5eed5eed".into(),
        };
        assert_eq!(
            tree.to_string(),
            format!("tree /src/my linux HEAD {head} changes 5eed5eed5eed5eed")
        );
        assert_eq!(
            tree.short(),
            "tree /src/my linux HEAD 0123456789abcdef changes 5eed5eed5eed5eed"
        );
        assert_eq!(SourceRecord::of_identity(&tree.to_string()), Some(tree));
    }

    #[test]
    fn smp_icount_description_says_what_an_n_cpu_figure_means() {
        let t = TimingDecision::icount(4, Recorded::Data(TimingReason::AutoIcount));
        let d = t.describe(8);
        assert!(d.starts_with("icount (shift=4"), "{d}");
        assert!(d.contains("in turn on one host thread"), "{d}");
        assert!(d.ends_with("(auto: instruction counting under TCG)"), "{d}");
        assert!(!t.describe(1).contains("in turn"));
    }
}
