//! The model's settings: every figure it is made of, their names as the
//! plugin's arguments give them, and their checks.

use super::prefetcher::MAX_STREAMS;
use super::tlb::TlbGeometry;
use super::{Counts, Geometry};

/// Everything the model is made of: geometry, predictor sizes, and the cost
/// in cycles of each place an access can be served from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub l1i: Geometry,
    pub l1d: Geometry,
    pub l2: Geometry,
    /// The shared last level, whole (not per core).
    pub llc: Geometry,
    /// log2 of the gshare table's entries, and the bits of global history.
    pub gshare_bits: u32,
    /// log2 of the branch target buffer's entries.
    pub btb_bits: u32,
    /// Cycles an access served by the L2 adds (an L1 miss that hits L2).
    pub l2_cycles: u64,
    /// Cycles an access served by the last level adds.
    pub llc_cycles: u64,
    /// Cycles an access served by memory adds.
    pub memory_cycles: u64,
    /// Cycles an access served by another core's cache adds (a coherence miss).
    pub coherence_cycles: u64,
    /// Cycles a mispredicted branch adds.
    pub mispredict_cycles: u64,
    /// Entries of each core's return stack buffer; 0: returns go through
    /// the BTB like indirect jumps.
    pub rsb_depth: u32,
    /// 1: an indirect branch or return whose next block is a kernel entry
    /// (an interrupt or exception came between) resolves nothing; 0: it
    /// is resolved by that block.
    pub skip_entries: u32,
    /// Cycles a string instruction costs once, whatever its length.
    pub string_startup_cycles: u64,
    /// Bytes a string instruction moves or stores per cycle; 0: string
    /// instructions cost one instruction per element, with no string counts.
    pub string_bytes_per_cycle: u64,
    /// 1: string stores bypass the caches (they only invalidate other
    /// vCPUs' copies).
    pub string_nontemporal: u32,
    /// Streams each vCPU's L2 prefetcher tracks; 0 for no prefetcher.
    pub prefetch_streams: u32,
    /// Whether the last level is filled by the lines the L2s evict (a
    /// victim cache) rather than on every L2 miss.
    pub llc_victim: bool,
    /// Instructions the core issues a cycle: each block then costs its
    /// throughput (`throughput::block_cycles`) rather than one cycle an
    /// instruction; 0 for one cycle an instruction, with no `base-cycles`.
    pub issue_width: u32,
    /// Cycles of a load served by the L1d, within a block's cost (read only
    /// while `issue_width` is above 0).
    pub load_cycles: u32,
    /// 1: privileged and serializing instructions cost their class within
    /// a block's cost, a serializing one ending the overlap
    /// (`throughput::special_cost`); 0: they are instructions like others
    /// (read only while `issue_width` is above 0).
    pub special_costs: u32,
    /// Cycles a page walk adds (an access that missed both levels of the
    /// TLBs); 0 for no TLB, with no `tlb-misses`.
    pub tlb_walk_cycles: u64,
    /// Each vCPU's TLBs: the first level's data and instruction TLBs and
    /// the second level both share, entries and ways.
    pub tlb: TlbGeometry,
    /// 1: the weave orders the vCPUs' events by each vCPU's estimated
    /// cycles (its blocks' own cost, in `throughput::PARTS` of a cycle,
    /// plus the misses charged to it as the round is replayed) rather than
    /// by its instructions.
    pub weave_cycles: u32,
    /// 1: under the weave a line another vCPU holds modified passes to the
    /// vCPU that asks for it only a transfer (`coherence_cycles`) after the
    /// request, the holder's own accesses in between still hitting; and a
    /// load of a line the vCPU stored to within that time is served by its
    /// store buffer.
    pub burst_ownership: u32,
    /// 1: a locked read-modify-write (a `lock` prefix, `xchg` with memory)
    /// is one store, a read for ownership, rather than a load and a store.
    pub locked_rfo: u32,
    /// The most a round of the weave spans of each vCPU's progress, in the
    /// weave's unit (cycles with `weave_cycles`, else instructions); 0: no
    /// bound but the even turns and the events held.
    pub weave_span: u64,
}

impl Default for Config {
    /// A current x86 server core; docs/cycle-model.md says where each
    /// figure comes from.
    fn default() -> Self {
        Config {
            l1i: Geometry {
                bytes: 32 << 10,
                ways: 8,
            },
            l1d: Geometry {
                bytes: 32 << 10,
                ways: 8,
            },
            l2: Geometry {
                bytes: 1 << 20,
                ways: 16,
            },
            llc: Geometry {
                bytes: 4 << 20,
                ways: 16,
            },
            gshare_bits: 14,
            btb_bits: 12,
            l2_cycles: 14,
            llc_cycles: 50,
            memory_cycles: 200,
            coherence_cycles: 70,
            mispredict_cycles: 17,
            rsb_depth: 32,
            skip_entries: 1,
            string_startup_cycles: 35,
            string_bytes_per_cycle: 32,
            string_nontemporal: 0,
            prefetch_streams: 32,
            llc_victim: true,
            issue_width: 4,
            load_cycles: 4,
            special_costs: 1,
            // A walk whose page-table entries the caches serve; the host's
            // own comes from `markbench calibrate`.
            tlb_walk_cycles: 30,
            // Intel's Skylake server core for 4 KiB pages: 64-entry 4-way
            // L1 dTLB, 128-entry 8-way L1 iTLB, 1536-entry 12-way shared
            // STLB (Intel 64 and IA-32 Architectures Optimization Reference
            // Manual, the Skylake chapter's TLB table; Ice Lake and later
            // have a 2048-entry STLB).
            tlb: TlbGeometry {
                dtlb: (64, 4),
                itlb: (128, 8),
                stlb: (1536, 12),
            },
            // Measured against this CPU's own false sharing (docs/cycle-model.md).
            weave_cycles: 1,
            burst_ownership: 1,
            locked_rfo: 1,
            weave_span: 0,
        }
    }
}

/// The names the plugin's arguments give the configuration's fields.
pub const CONFIG_KEYS: &[&str] = &[
    "l1i-bytes",
    "l1i-ways",
    "l1d-bytes",
    "l1d-ways",
    "l2-bytes",
    "l2-ways",
    "llc-bytes",
    "llc-ways",
    "gshare-bits",
    "btb-bits",
    "l2-cycles",
    "llc-cycles",
    "memory-cycles",
    "coherence-cycles",
    "mispredict-cycles",
    "rsb-depth",
    "skip-entries",
    "string-startup-cycles",
    "string-bytes-per-cycle",
    "string-nontemporal",
    "prefetch-streams",
    "llc-victim",
    "issue-width",
    "load-cycles",
    "special-costs",
    "tlb-walk-cycles",
    "dtlb-entries",
    "dtlb-ways",
    "itlb-entries",
    "itlb-ways",
    "stlb-entries",
    "stlb-ways",
    "weave-cycles",
    "burst-ownership",
    "locked-rfo",
    "weave-span",
];

/// Return stack buffer entries at most.
const RSB_MAX: u32 = 1024;

impl Config {
    /// Sets the field named `key` (one of [`CONFIG_KEYS`]).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let n: u64 = value
            .parse()
            .map_err(|_| format!("{key}={value:?} is not a whole number"))?;
        let small = || u32::try_from(n).map_err(|_| format!("{key}={n} is too large"));
        match key {
            "l1i-bytes" => self.l1i.bytes = n,
            "l1i-ways" => self.l1i.ways = small()?,
            "l1d-bytes" => self.l1d.bytes = n,
            "l1d-ways" => self.l1d.ways = small()?,
            "l2-bytes" => self.l2.bytes = n,
            "l2-ways" => self.l2.ways = small()?,
            "llc-bytes" => self.llc.bytes = n,
            "llc-ways" => self.llc.ways = small()?,
            "gshare-bits" => self.gshare_bits = small()?,
            "btb-bits" => self.btb_bits = small()?,
            "l2-cycles" => self.l2_cycles = n,
            "llc-cycles" => self.llc_cycles = n,
            "memory-cycles" => self.memory_cycles = n,
            "coherence-cycles" => self.coherence_cycles = n,
            "mispredict-cycles" => self.mispredict_cycles = n,
            "rsb-depth" => self.rsb_depth = small()?,
            "skip-entries" => self.skip_entries = small()?,
            "string-startup-cycles" => self.string_startup_cycles = n,
            "string-bytes-per-cycle" => self.string_bytes_per_cycle = n,
            "string-nontemporal" => self.string_nontemporal = small()?,
            "prefetch-streams" => self.prefetch_streams = small()?,
            "issue-width" => self.issue_width = small()?,
            "load-cycles" => self.load_cycles = small()?,
            "special-costs" => self.special_costs = small()?,
            "tlb-walk-cycles" => self.tlb_walk_cycles = n,
            "dtlb-entries" => self.tlb.dtlb.0 = small()?,
            "dtlb-ways" => self.tlb.dtlb.1 = small()?,
            "itlb-entries" => self.tlb.itlb.0 = small()?,
            "itlb-ways" => self.tlb.itlb.1 = small()?,
            "stlb-entries" => self.tlb.stlb.0 = small()?,
            "stlb-ways" => self.tlb.stlb.1 = small()?,
            "weave-cycles" => self.weave_cycles = small()?,
            "burst-ownership" => self.burst_ownership = small()?,
            "locked-rfo" => self.locked_rfo = small()?,
            "weave-span" => self.weave_span = n,
            "llc-victim" => {
                self.llc_victim = match n {
                    0 => false,
                    1 => true,
                    _ => return Err(format!("{key}={n} is neither 0 nor 1")),
                }
            }
            _ => return Err(format!("unknown model setting {key:?}")),
        }
        Ok(())
    }

    /// Checks that every cache can be built and the tables have a size.
    pub fn check(&self) -> Result<(), String> {
        for (name, g) in [
            ("l1i", self.l1i),
            ("l1d", self.l1d),
            ("l2", self.l2),
            ("llc", self.llc),
        ] {
            g.sets().map_err(|e| format!("{name}: {e}"))?;
        }
        for (name, bits) in [
            ("gshare-bits", self.gshare_bits),
            ("btb-bits", self.btb_bits),
        ] {
            if !(1..=24).contains(&bits) {
                return Err(format!("{name}={bits} is outside 1..=24"));
            }
        }
        if self.rsb_depth > RSB_MAX {
            return Err(format!("rsb-depth={} is above {RSB_MAX}", self.rsb_depth));
        }
        for (name, flag) in [
            ("skip-entries", self.skip_entries),
            ("string-nontemporal", self.string_nontemporal),
            ("special-costs", self.special_costs),
            ("weave-cycles", self.weave_cycles),
            ("burst-ownership", self.burst_ownership),
            ("locked-rfo", self.locked_rfo),
        ] {
            if flag > 1 {
                return Err(format!("{name}={flag} is neither 0 nor 1"));
            }
        }
        if self.prefetch_streams > MAX_STREAMS {
            return Err(format!(
                "prefetch-streams={} is more than {MAX_STREAMS}",
                self.prefetch_streams
            ));
        }
        if self.tlb_walk_cycles > 0 {
            super::tlb::Tlb::new(self.tlb)?;
        }
        Ok(())
    }

    /// Whether the model makes the count `name` (one of [`Counts::NAMES`])
    /// with these settings: the string counts only when string
    /// instructions are costed apart, the prefetches only with a
    /// prefetcher. A count it does not make is left out of the plugin's
    /// file, so a file with every later part off is what it was before
    /// them.
    pub fn makes(&self, name: &str) -> bool {
        !(self.string_bytes_per_cycle == 0 && Counts::STRING.contains(&name)
            || self.prefetch_streams == 0 && name == "l2-prefetches"
            || self.issue_width == 0 && name == "base-cycles"
            || self.tlb_walk_cycles == 0 && name == "tlb-misses")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        let mut c = Config::default();
        c.set("l2-bytes", "2097152").unwrap();
        assert_eq!(c.l2.bytes, 2 << 20);
        assert!(c
            .set("l2-bytes", "lots")
            .unwrap_err()
            .contains("whole number"));
        assert!(c.set("l9-bytes", "1").unwrap_err().contains("unknown"));
        c.set("l1d-bytes", "3000").unwrap();
        assert!(c.check().unwrap_err().starts_with("l1d: "));
        let mut c = Config::default();
        c.set("llc-bytes", &(3u64 << 20).to_string()).unwrap();
        assert!(c.check().unwrap_err().contains("power of two"));
        for key in CONFIG_KEYS {
            Config::default().set(key, "1").unwrap();
        }
        assert!(c.set("llc-victim", "2").unwrap_err().contains("neither"));
        let mut c = Config::default();
        c.set("prefetch-streams", &(MAX_STREAMS + 1).to_string())
            .unwrap();
        assert!(c.check().unwrap_err().contains("prefetch-streams"));
    }
}
