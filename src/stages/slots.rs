//! How many guests a run boots at once, and on which host cores.
//!
//! Under icount a guest's time is its instruction count: what runs beside
//! it slows the boot but does not enter its samples, so a host with N
//! cores runs N guests at once and gets the same samples N times sooner.
//! Under wall-clock timing guests beside each other share caches, memory
//! bandwidth and cores, and their times disturb each other's: one at a
//! time, unless the user asks for more (then the report says so).

/// Memory a guest's QEMU takes beyond the guest's own (TCG's translated
/// code, QEMU's own data), in MiB. A quick-suite guest's whole QEMU
/// process, the guest pages it touched included, stayed under 170 MiB of
/// resident memory here (`ps -o rss`); a guest may touch all of its
/// `memory_mib`, so that counts in full, and QEMU's own part is given
/// room to spare.
pub const QEMU_OVERHEAD_MIB: u64 = 256;

/// Memory left to the host and markbench itself, in MiB.
pub const HOST_HEADROOM_MIB: u64 = 1024;

/// What the host offers the boot loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostOffer {
    /// The CPUs markbench may run on (its affinity set).
    pub cpus: Vec<usize>,
    /// Memory available to new processes, MiB (0: unknown).
    pub available_mib: u64,
}

impl HostOffer {
    /// This host, as it is now.
    pub fn here() -> HostOffer {
        let mut cpus = crate::base::host::usable_cpus();
        if cpus.is_empty() {
            cpus = (0..crate::base::host::cores()).collect();
        }
        HostOffer {
            cpus,
            available_mib: crate::base::host::available_mib(),
        }
    }

    /// How many guests of `memory_mib` each fit in the available memory
    /// beside the host's headroom (at least one: a single guest is the
    /// run's own business, as it was before boots ran side by side).
    fn guests_that_fit(&self, memory_mib: u32) -> Option<usize> {
        (self.available_mib > 0).then(|| {
            let per_guest = u64::from(memory_mib) + QEMU_OVERHEAD_MIB;
            (self.available_mib.saturating_sub(HOST_HEADROOM_MIB) / per_guest).max(1) as usize
        })
    }
}

/// Where a request for a number of slots came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// Nobody asked: the default for the timing.
    Default,
    /// `--jobs N`.
    CommandLine(u32),
    /// The suite's `jobs = N`.
    Suite(u32),
}

pub use crate::record::Slots;

/// How many guests at once: under icount (`counts_instructions`) the
/// host's cores unless the memory holds fewer guests of `memory_mib`, or
/// what was asked within what the memory holds; on the wall clock one, or
/// what was asked, with a warning. Guests under icount run on one host
/// thread each (round-robin TCG, SMP guests included), so each gets a core
/// of its own where the host has as many as the slots.
pub fn decide(asked: Asked, counts_instructions: bool, memory_mib: u32, host: &HostOffer) -> Slots {
    use crate::record::{JobsAskedBy, MemoryFit, Recorded, SlotsReason, SlotsWanted, Warning};
    let cores = host.cpus.len().max(1);
    let fit = host.guests_that_fit(memory_mib);
    let asked_n = match asked {
        Asked::Default => None,
        Asked::CommandLine(n) => Some((n.max(1) as usize, JobsAskedBy::CommandLine)),
        Asked::Suite(n) => Some((n.max(1) as usize, JobsAskedBy::Suite)),
    };
    if !counts_instructions {
        return match asked_n {
            None | Some((1, _)) => Slots::one(Recorded::Data(SlotsReason::WallClock)),
            Some((jobs, by)) => Slots {
                jobs,
                host_cpus: Vec::new(),
                reason: Recorded::Data(SlotsReason::WallClockAsked { jobs, by }),
                warning: Some(Warning::WallClockSlots { jobs, by }),
            },
        };
    }
    let (wanted, why) = match asked_n {
        None => (cores, SlotsWanted::HostCores { cores }),
        Some((n, by)) => (n, SlotsWanted::Asked { by }),
    };
    let (jobs, memory) = match fit {
        Some(fit) if fit < wanted => (
            fit,
            Some(MemoryFit {
                fit,
                guest_mib: memory_mib,
                qemu_mib: QEMU_OVERHEAD_MIB,
                available_mib: host.available_mib,
                headroom_mib: HOST_HEADROOM_MIB,
            }),
        ),
        _ => (wanted, None),
    };
    Slots {
        jobs,
        host_cpus: if jobs > 1 && jobs <= host.cpus.len() {
            host.cpus[..jobs].to_vec()
        } else {
            Vec::new()
        },
        reason: Recorded::Data(SlotsReason::Icount {
            wanted,
            why,
            memory,
        }),
        warning: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(cpus: usize, available_mib: u64) -> HostOffer {
        HostOffer {
            cpus: (0..cpus).map(|c| c * 2).collect(),
            available_mib,
        }
    }

    #[test]
    fn under_icount_every_core_gets_a_guest_bound_to_it() {
        let slots = decide(Asked::Default, true, 512, &host(2, 20_000));
        assert_eq!(slots.jobs, 2);
        assert_eq!(slots.host_cpus, [0, 2]);
        assert!(
            slots.reason.to_string().contains("the host's 2 cores"),
            "{}",
            slots.reason
        );
        assert_eq!(slots.warning, None);
        // One core: one guest, and nothing to bind.
        let one = decide(Asked::Default, true, 512, &host(1, 20_000));
        assert_eq!((one.jobs, one.host_cpus.len()), (1, 0));
    }

    #[test]
    fn memory_that_holds_fewer_guests_gives_fewer_slots_and_says_why() {
        // 1024 MiB kept, then 768 MiB a guest: 2 of them in 2600 MiB.
        let slots = decide(Asked::Default, true, 512, &host(8, 2600));
        assert_eq!(slots.jobs, 2);
        assert!(
            slots.reason.to_string().contains("not 8"),
            "{}",
            slots.reason
        );
        assert!(
            slots.reason.to_string().contains("2600 MiB"),
            "{}",
            slots.reason
        );
        // Too little for even one: still one, the run's own business.
        assert_eq!(decide(Asked::Default, true, 512, &host(8, 500)).jobs, 1);
        // Memory unknown: the cores decide.
        assert_eq!(decide(Asked::Default, true, 512, &host(4, 0)).jobs, 4);
    }

    #[test]
    fn on_the_wall_clock_one_guest_unless_asked_and_then_a_warning() {
        let slots = decide(Asked::Default, false, 512, &host(4, 20_000));
        assert_eq!((slots.jobs, slots.warning.as_ref()), (1, None));
        assert!(
            slots.reason.to_string().contains("wall clock"),
            "{}",
            slots.reason
        );
        let asked = decide(Asked::CommandLine(2), false, 512, &host(4, 20_000));
        assert_eq!(asked.jobs, 2);
        assert!(asked.host_cpus.is_empty());
        let warning = asked.warning.unwrap().to_string();
        assert!(warning.contains("--jobs"), "{warning}");
        // Asking for one is no warning.
        assert_eq!(
            decide(Asked::Suite(1), false, 512, &host(4, 20_000)).warning,
            None
        );
    }

    #[test]
    fn what_is_asked_under_icount_is_kept_within_memory_and_bound_when_cores_suffice() {
        let three = decide(Asked::Suite(3), true, 512, &host(2, 20_000));
        assert_eq!(three.jobs, 3);
        assert!(three.host_cpus.is_empty(), "more slots than cores: unbound");
        assert!(
            three.reason.to_string().contains("the suite's jobs"),
            "{}",
            three.reason
        );
        let one = decide(Asked::CommandLine(1), true, 512, &host(2, 20_000));
        assert_eq!((one.jobs, one.host_cpus.len()), (1, 0));
        assert_eq!(
            decide(Asked::CommandLine(6), true, 512, &host(8, 2600)).jobs,
            2
        );
    }
}
