//! What the model counts, per privilege level, and the estimate of cycles
//! made from the counts.

use super::Config;

/// Counts of one privilege level (user or kernel).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub instructions: u64,
    pub l1i_misses: u64,
    pub l1d_misses: u64,
    /// L1 misses (either side) that the L2 did not serve; coherence misses
    /// are not among them.
    pub l2_misses: u64,
    /// L2 misses that the last level did not serve (served by memory).
    pub llc_misses: u64,
    /// L1d misses served by another vCPU's cache after its store.
    pub coherence_misses: u64,
    pub conditional_branches: u64,
    pub conditional_mispredicts: u64,
    pub indirect_branches: u64,
    pub indirect_mispredicts: u64,
    /// Stores that had to invalidate a copy of their line another vCPU
    /// held valid (a read for ownership), beyond any miss of their own: a
    /// store that is a coherence miss already paid for the transfer. Not
    /// among the L1d misses.
    pub rfo_misses: u64,
    /// `rep movs`/`rep stos` instructions begun (not their elements).
    pub string_instructions: u64,
    /// Executions of a string instruction: QEMU under icount runs one
    /// element per execution and counts each as an instruction, and the
    /// last one finds the count exhausted. Among the instructions.
    pub string_iterations: u64,
    /// Bytes string instructions stored.
    pub string_bytes: u64,
    /// Lines the L2 prefetcher brought into the L2 (that were not there).
    pub l2_prefetches: u64,
    /// The blocks' own cycles, each block's throughput on the core
    /// (`Config::issue_width`) before any miss: what replaces one cycle
    /// an instruction in the estimate.
    pub base_cycles: u64,
    /// Accesses (data or instruction fetches) that missed both levels of
    /// the vCPU's TLBs and walked the page tables, and the `invlpg`s run
    /// (each the walk its page's next use makes).
    pub tlb_misses: u64,
}

impl Counts {
    /// The counts' names, in the order [`Counts::values`] gives them.
    pub const NAMES: [&'static str; 17] = [
        "instructions",
        "l1i-misses",
        "l1d-misses",
        "l2-misses",
        "llc-misses",
        "coherence-misses",
        "conditional-branches",
        "conditional-mispredicts",
        "indirect-branches",
        "indirect-mispredicts",
        "rfo-misses",
        "string-instructions",
        "string-iterations",
        "string-bytes",
        "l2-prefetches",
        "base-cycles",
        "tlb-misses",
    ];

    /// The counts of string instructions costed apart
    /// ([`Config::string_bytes_per_cycle`]).
    pub const STRING: [&'static str; 3] =
        ["string-instructions", "string-iterations", "string-bytes"];

    /// The counts that only several vCPUs can make: the plugin leaves them
    /// out of a one-vCPU file, which is thus the same as before they were
    /// counted.
    pub const SEVERAL_VCPUS_ONLY: [&'static str; 1] = ["rfo-misses"];

    pub fn values(&self) -> [u64; 17] {
        [
            self.instructions,
            self.l1i_misses,
            self.l1d_misses,
            self.l2_misses,
            self.llc_misses,
            self.coherence_misses,
            self.conditional_branches,
            self.conditional_mispredicts,
            self.indirect_branches,
            self.indirect_mispredicts,
            self.rfo_misses,
            self.string_instructions,
            self.string_iterations,
            self.string_bytes,
            self.l2_prefetches,
            self.base_cycles,
            self.tlb_misses,
        ]
    }

    /// The counts of [`Counts::values`]' order.
    pub fn from_values(v: [u64; 17]) -> Counts {
        Counts {
            instructions: v[0],
            l1i_misses: v[1],
            l1d_misses: v[2],
            l2_misses: v[3],
            llc_misses: v[4],
            coherence_misses: v[5],
            conditional_branches: v[6],
            conditional_mispredicts: v[7],
            indirect_branches: v[8],
            indirect_mispredicts: v[9],
            rfo_misses: v[10],
            string_instructions: v[11],
            string_iterations: v[12],
            string_bytes: v[13],
            l2_prefetches: v[14],
            base_cycles: v[15],
            tlb_misses: v[16],
        }
    }

    /// The counts from `earlier` to `self`.
    pub fn since(&self, earlier: &Counts) -> Counts {
        let (a, b) = (self.values(), earlier.values());
        Counts::from_values(std::array::from_fn(|i| a[i] - b[i]))
    }

    pub fn add(&mut self, other: &Counts) {
        let (a, b) = (self.values(), other.values());
        *self = Counts::from_values(std::array::from_fn(|i| a[i] + b[i]));
    }

    /// Instructions, or with an issue width the blocks' own cycles (a
    /// string instruction's executions replaced by its startup and its
    /// bytes at a rate), plus each access's cost by where
    /// it was served, plus each read for ownership at the cost of a
    /// transfer from another core (the store waits for the other copies'
    /// invalidation), plus the mispredictions' cost:
    /// `B − string_iterations + string_startup·string_instructions +
    /// ceil(string_bytes / string_bytes_per_cycle) + l2·(L1 − coh − L2) +
    /// llc·(L2 − LLC) + mem·LLC + coh_c·(coh + rfo) + bp·mispredicts +
    /// walk·tlb_misses`.
    pub fn estimated_cycles(&self, c: &Config) -> u64 {
        let l1 = self.l1i_misses + self.l1d_misses;
        let from_l2 = l1 - self.coherence_misses - self.l2_misses;
        let from_llc = self.l2_misses - self.llc_misses;
        let string_bytes = match c.string_bytes_per_cycle {
            0 => 0,
            rate => self.string_bytes.div_ceil(rate),
        };
        // A string instruction's execution is a block of one instruction,
        // which costs one cycle either way.
        let base = if c.issue_width > 0 {
            self.base_cycles
        } else {
            self.instructions
        };
        base - self.string_iterations
            + c.string_startup_cycles * self.string_instructions
            + string_bytes
            + c.l2_cycles * from_l2
            + c.llc_cycles * from_llc
            + c.memory_cycles * self.llc_misses
            + c.coherence_cycles * (self.coherence_misses + self.rfo_misses)
            + c.mispredict_cycles * (self.conditional_mispredicts + self.indirect_mispredicts)
            + c.tlb_walk_cycles * self.tlb_misses
    }

    /// The part of [`Counts::estimated_cycles`] the caches' misses and the
    /// reads for ownership make, in wrapping arithmetic: the difference of
    /// two is that of the counts between them, all the same.
    pub fn miss_cycles(&self, c: &Config) -> u64 {
        let l1 = self.l1i_misses.wrapping_add(self.l1d_misses);
        let from_l2 = l1
            .wrapping_sub(self.coherence_misses)
            .wrapping_sub(self.l2_misses);
        let from_llc = self.l2_misses.wrapping_sub(self.llc_misses);
        c.l2_cycles
            .wrapping_mul(from_l2)
            .wrapping_add(c.llc_cycles.wrapping_mul(from_llc))
            .wrapping_add(c.memory_cycles.wrapping_mul(self.llc_misses))
            .wrapping_add(
                c.coherence_cycles
                    .wrapping_mul(self.coherence_misses.wrapping_add(self.rfo_misses)),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_charges_each_access_where_it_was_served() {
        let mut c = Config {
            issue_width: 0,
            ..Config::default()
        };
        let counts = Counts {
            instructions: 1000,
            l1i_misses: 10,
            l1d_misses: 30,
            l2_misses: 8,
            llc_misses: 3,
            coherence_misses: 2,
            conditional_mispredicts: 4,
            indirect_mispredicts: 1,
            ..Counts::default()
        };
        let expected = 1000
            + c.l2_cycles * (40 - 2 - 8)
            + c.llc_cycles * (8 - 3)
            + c.memory_cycles * 3
            + c.coherence_cycles * 2
            + c.mispredict_cycles * 5;
        assert_eq!(counts.estimated_cycles(&c), expected);
        // With an issue width, the blocks' own cycles stand for the
        // instructions, and the misses are charged the same.
        c.issue_width = 4;
        let counts = Counts {
            base_cycles: 400,
            ..counts
        };
        assert_eq!(counts.estimated_cycles(&c), expected - 600);
    }
}
