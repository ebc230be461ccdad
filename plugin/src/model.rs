//! A cache and branch model that turns the guest's instruction, data and
//! branch streams into miss counts and an estimate of cycles.
//!
//! Per vCPU: a split first level (instructions, data) and a unified second
//! level; one last level shared by every vCPU. Every cache is
//! set-associative with true LRU replacement and lines of [`LINE`] bytes. A
//! miss fills the L1 and the L2; the last level is filled either on the way
//! too (no inclusion is enforced) or, as a victim cache, only by the lines
//! the L2s evict. A stream prefetcher per vCPU watches the L2's accesses
//! and brings the next lines of a stream into the L2 before they are asked
//! for. A store
//! invalidates the line in the other vCPUs' L1d and L2; the invalidated tag
//! keeps its place in the set, so that vCPU's next access to the line finds
//! it invalid and counts a *coherence miss*, served by the other core rather
//! than by the next level. Each core predicts its own branches: conditional
//! branches go through its gshare table of 2-bit counters; indirect
//! branches through its branch target buffer, which predicts the last
//! target seen at the branch; returns through its return stack buffer,
//! which calls fill. A `rep movs` or `rep stos` costs a startup and its
//! bytes at a rate rather than one instruction per element.
//!
//! Nothing here depends on host addresses, time or randomness: the same
//! streams give the same counts.

use std::ops::Range;

#[cfg(test)]
mod reference;

/// Bytes per cache line, at every level.
pub const LINE: u64 = 64;
const LINE_BITS: u32 = LINE.trailing_zeros();

/// Marks the line numbers of virtual addresses: the caches hold data by
/// guest physical address and instructions by virtual address, and this
/// bit keeps the two apart where they meet (the L2 and the last level). A
/// line number is an address shifted by [`LINE_BITS`], so no line of a
/// 64-bit address has it, and it leaves the set index (the low bits) as it
/// is.
pub const VIRTUAL: u64 = 1 << 62;

/// A cache's size and associativity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub bytes: u64,
    pub ways: u32,
}

impl Geometry {
    fn sets(&self) -> Result<u64, String> {
        let per_set = LINE * u64::from(self.ways);
        if self.ways == 0 || self.bytes == 0 || !self.bytes.is_multiple_of(per_set) {
            return Err(format!(
                "a cache of {} bytes cannot have {} ways of {LINE}-byte lines",
                self.bytes, self.ways
            ));
        }
        let sets = self.bytes / per_set;
        if !sets.is_power_of_two() {
            return Err(format!(
                "a cache of {} bytes and {} ways has {sets} sets, not a power of two",
                self.bytes, self.ways
            ));
        }
        Ok(sets)
    }
}

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
            || self.issue_width == 0 && name == "base-cycles")
    }
}

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    Miss,
    /// The line's tag is there, invalidated by another vCPU's store.
    Invalidated,
}

/// Marks a tag whose line another vCPU's store invalidated.
const INVALID: u64 = 1 << 63;
/// An empty way (no line address has every bit set after the shift).
const EMPTY: u64 = u64::MAX;

/// A set-associative cache of line numbers with true LRU: each set's ways
/// are kept most recently used first.
#[derive(Debug, Clone)]
pub struct Cache {
    ways: usize,
    set_mask: u64,
    tags: Box<[u64]>,
}

impl Cache {
    pub fn new(g: Geometry) -> Result<Cache, String> {
        let sets = g.sets()?;
        Ok(Cache {
            ways: g.ways as usize,
            set_mask: sets - 1,
            tags: vec![EMPTY; (sets * u64::from(g.ways)) as usize].into_boxed_slice(),
        })
    }

    #[inline(always)]
    fn set(&mut self, line: u64) -> &mut [u64] {
        let start = (line & self.set_mask) as usize * self.ways;
        &mut self.tags[start..start + self.ways]
    }

    /// Looks `line` up and makes it the set's most recent, filling it (in
    /// place of the least recent way) when it was missing or invalid.
    #[inline(always)]
    pub fn access(&mut self, line: u64) -> Lookup {
        let set = self.set(line);
        // Most accesses hit the most recent way: nothing moves.
        if set[0] == line {
            return Lookup::Hit;
        }
        Self::reorder(set, line)
    }

    /// The rest of [`Cache::access`], out of line so that only the test of
    /// the most recent way is inlined into every caller.
    #[inline(never)]
    fn reorder(set: &mut [u64], line: u64) -> Lookup {
        let (found, at) = match set.iter().position(|&t| t & !INVALID == line) {
            Some(i) if set[i] & INVALID == 0 => (Lookup::Hit, i),
            Some(i) => (Lookup::Invalidated, i),
            None => (Lookup::Miss, set.len() - 1),
        };
        set[..=at].rotate_right(1);
        set[0] = line;
        found
    }

    /// [`Cache::access`], which also gives back the valid line it evicted
    /// to make room, if any.
    pub fn access_evicting(&mut self, line: u64) -> (Lookup, Option<u64>) {
        let set = self.set(line);
        if set[0] == line {
            return (Lookup::Hit, None);
        }
        let last = set[set.len() - 1];
        let found = Self::reorder(set, line);
        let evicted =
            (found == Lookup::Miss && last != EMPTY && last & INVALID == 0).then_some(last);
        (found, evicted)
    }

    /// Whether `line` has a tag here, valid or invalidated, without
    /// touching the LRU order.
    pub fn has_tag(&self, line: u64) -> bool {
        let start = (line & self.set_mask) as usize * self.ways;
        self.tags[start..start + self.ways]
            .iter()
            .any(|&t| t & !INVALID == line)
    }

    /// Marks `line` invalid where it is, without moving it; true if it was valid.
    pub fn invalidate(&mut self, line: u64) -> bool {
        let set = self.set(line);
        match set.iter_mut().find(|t| **t == line) {
            Some(t) => {
                *t |= INVALID;
                true
            }
            None => false,
        }
    }

    /// Whether `line` is held valid, without touching the LRU order.
    pub fn holds(&self, line: u64) -> bool {
        let start = (line & self.set_mask) as usize * self.ways;
        self.tags[start..start + self.ways].contains(&line)
    }
}

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
}

impl Counts {
    /// The counts' names, in the order [`Counts::values`] gives them.
    pub const NAMES: [&'static str; 16] = [
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
    ];

    /// The counts of string instructions costed apart
    /// ([`Config::string_bytes_per_cycle`]).
    pub const STRING: [&'static str; 3] =
        ["string-instructions", "string-iterations", "string-bytes"];

    /// The counts that only several vCPUs can make: the plugin leaves them
    /// out of a one-vCPU file, which is thus the same as before they were
    /// counted.
    pub const SEVERAL_VCPUS_ONLY: [&'static str; 1] = ["rfo-misses"];

    pub fn values(&self) -> [u64; 16] {
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
        ]
    }

    /// The counts of [`Counts::values`]' order.
    pub fn from_values(v: [u64; 16]) -> Counts {
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
    /// llc·(L2 − LLC) + mem·LLC + coh_c·(coh + rfo) + bp·mispredicts`.
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
    }
}

/// Which counts an event goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    User = 0,
    Kernel = 1,
}

/// How a block ends, as far as prediction and string instructions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockEnd {
    /// No branch to predict: a direct jump, a block cut short, a system
    /// call or return from one.
    Other,
    /// A conditional branch at `pc` to `target`, falling through to `next`.
    Conditional { pc: u64, target: u64, next: u64 },
    /// An indirect jump at `pc`.
    Indirect { pc: u64 },
    /// A direct call at `pc`, returning to `next`: nothing to predict, but
    /// it pushes `next` on the return stack buffer.
    Call { pc: u64, next: u64 },
    /// An indirect call at `pc`, returning to `next`: predicted by the
    /// BTB, and it pushes `next`.
    IndirectCall { pc: u64, next: u64 },
    /// A return at `pc`.
    Return { pc: u64 },
    /// A `rep movs` or `rep stos` at `pc`.
    String { pc: u64 },
    /// `hlt` or `mwait`: nothing to predict, and the vCPU sleeps until an
    /// interrupt wakes it.
    Halt,
}

/// Entries of each vCPU's table of the lines it owns (see `Core::owned`).
const OWNED_SLOTS: usize = 1024;

/// Lines of a 4 KiB page: the prefetcher's streams stay within one, as
/// physical pages that follow each other need not be neighbours.
const PAGE_LINES_BITS: u32 = 12 - LINE_BITS;

/// Lines a confirmed stream prefetches ahead of each access: Intel's L2
/// streamer "may issue two prefetch requests on every L2 lookup". The
/// model has no time, so a prefetch is there at once and two ahead keep
/// a stream of one access per line ahead of its demand.
const PREFETCH_DEGREE: i64 = 2;

/// The most streams a prefetcher may track (searched one by one).
const MAX_STREAMS: u32 = 256;

/// One stream of a prefetcher: the last line accessed in its page and the
/// stride (in lines, either way) from the access before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stream {
    page: u64,
    last: u64,
    stride: i64,
}

/// A stream prefetcher at the L2, after Intel's L2 streamer (Intel 64 and
/// IA-32 Architectures Optimization Reference Manual, "Data Prefetch to
/// the L2 and Last Level Cache"): it watches the L2's accesses from the
/// L1s' misses, one stream per 4 KiB page, the least recently used stream
/// giving way to a new page, and once a stream has gone the same stride
/// twice in a row it prefetches the next lines of that stride in the page.
#[derive(Debug, Clone)]
struct Prefetcher {
    /// Most recently used first.
    streams: Vec<Stream>,
    capacity: usize,
}

impl Prefetcher {
    fn new(capacity: u32) -> Prefetcher {
        Prefetcher {
            streams: Vec::with_capacity(capacity as usize),
            capacity: capacity as usize,
        }
    }

    /// An L2 access to `line`: the stride to prefetch along from it, if
    /// its stream is confirmed.
    fn observe(&mut self, line: u64) -> Option<i64> {
        let page = line >> PAGE_LINES_BITS;
        let Some(at) = self.streams.iter().position(|s| s.page == page) else {
            if self.streams.len() == self.capacity {
                self.streams.pop();
            }
            self.streams.insert(
                0,
                Stream {
                    page,
                    last: line,
                    stride: 0,
                },
            );
            return None;
        };
        self.streams[..=at].rotate_right(1);
        let stream = &mut self.streams[0];
        let stride = line.wrapping_sub(stream.last) as i64;
        if stride == 0 {
            return None;
        }
        let confirmed = stride == stream.stride;
        stream.stride = stride;
        stream.last = line;
        confirmed.then_some(stride)
    }
}

/// One vCPU's private caches and branch state.
#[derive(Debug, Clone)]
struct Core {
    l1i: Cache,
    l1d: Cache,
    l2: Cache,
    mode: Mode,
    /// The branch that ended the last block, resolved by the next block.
    pending: BlockEnd,
    /// This core's own predictors: a gshare table of 2-bit counters, its
    /// global history, and a branch target buffer. Each core has its own,
    /// so one vCPU's branches never train or disturb another's.
    gshare: Box<[u8]>,
    history: u64,
    btb: Box<[u64]>,
    counts: [Counts; 2],
    /// Parts of a cycle of the blocks' own costs not counted yet.
    parts: u64,
    /// The return stack buffer, circular: `rsb_top` is where the next
    /// call's return address goes, `rsb_held` how many entries below it
    /// are valid (a call beyond the depth overwrites the oldest).
    rsb: Box<[u64]>,
    rsb_top: usize,
    rsb_held: usize,
    /// What the running string instruction did so far.
    string: StringTrail,
    /// Lines this vCPU stored to, invalidating every other vCPU's copy,
    /// that no other vCPU has brought into its L1d or L2 since: another
    /// store to one of them has nothing to invalidate, so it skips the scan
    /// of the other vCPUs' caches (which would change nothing). Direct
    /// mapped by line number; a line that loses its slot is only scanned
    /// for again. `EMPTY` where none.
    owned: Box<[u64]>,
    /// The L2's stream prefetcher, if any.
    prefetcher: Option<Prefetcher>,
}

/// Where a string instruction's last load and last store were (virtual
/// line, the line taken for it), and where a store that goes on forward
/// from its last store starts.
#[derive(Debug, Clone, Copy)]
struct StringTrail {
    load: (u64, u64),
    store: (u64, u64),
    next_store: Option<u64>,
}

const NO_TRAIL: StringTrail = StringTrail {
    load: (EMPTY, EMPTY),
    store: (EMPTY, EMPTY),
    next_store: None,
};

/// Lines per guest page: an access's two lines in one page are
/// consecutive physical lines too.
const PAGE_LINE_BITS: u32 = 12 - LINE_BITS;

/// Kernel entry points learnt at most (interrupts and exceptions enter the
/// kernel at a handful of addresses), and the slots of their table.
pub const ENTRY_POINTS: usize = 128;
const ENTRY_SLOTS: usize = 256;

/// The whole machine's model.
#[derive(Debug, Clone)]
pub struct Model {
    pub config: Config,
    cores: Vec<Core>,
    llc: Cache,
    gshare_mask: u64,
    btb_mask: u64,
    /// Kernel entry points seen: the first kernel block after a user
    /// block, in an open-addressed table (`EMPTY` where none).
    entries: Box<[u64]>,
    entries_held: usize,
    /// The vCPUs' cache events held back to be interleaved, when on
    /// ([`Model::set_weave`]).
    weave: Option<Box<Weave>>,
}

/// How far apart the instructions the vCPUs ran in a round may be for it
/// to close: a quarter of the most, or this many where that is less.
const SLACK: u64 = 1024;

/// Events a round holds at most: a vCPU that runs on alone (the others
/// idle, so no turn changes) has its events replayed in rounds of this
/// many rather than kept without bound.
const ROUND_EVENTS: usize = 1 << 20;

/// What a held-back event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Fetch,
    Load,
    Store,
    /// A string store that claims its line without reading it.
    Claim,
    /// A string store that bypasses the caches.
    Bypass,
}

/// One cache event of a vCPU's turn, held back for the weave.
#[derive(Debug, Clone, Copy)]
struct Event {
    /// The vCPU's instructions in its turn before the block it is of
    /// started: where the event falls in the turn.
    time: u64,
    /// Its line, or a block's first line.
    line: u64,
    /// The block it is of, as [`Model::tag`] set it, for the attribution.
    tag: u32,
    /// A block's lines from `line` on (0 for a data access).
    lines: u16,
    kind: Kind,
    mode: Mode,
}

/// The counts one replayed event made on a vCPU, for the attribution.
#[derive(Debug, Clone, Copy)]
pub struct Replayed {
    pub vcpu: usize,
    pub tag: u32,
    pub counts: [Counts; 2],
}

/// Bound and weave, after ZSim (Sanchez and Kozyrakis, ISCA 2013),
/// adapted to round-robin TCG. Round-robin TCG runs one vCPU's whole turn,
/// then the next one's, so a line two vCPUs write in their turns would
/// change hands once a turn instead of at every write as it does when the
/// cores run at once. So each vCPU's cache events (instruction fetches,
/// loads, stores) are held back, stamped with the vCPU's instructions since
/// the round began, and the round's events of all vCPUs are replayed
/// through the caches merged by that stamp, as if the vCPUs had run side by
/// side. A round closes when a vCPU that ran in it begins another turn and
/// the vCPUs that ran in it have run about as many instructions each
/// ([`SLACK`]): QEMU's turns are not all alike (a long turn of one vCPU
/// often comes with a turn of a few instructions of the other, then the
/// other way round), and closing at every vCPU's second turn would pair a
/// long turn with a short one. Instructions and branch prediction, each
/// vCPU's own, are counted at once.
#[derive(Debug, Clone)]
struct Weave {
    /// The vCPU whose turn it is, `usize::MAX` before the first.
    current: usize,
    /// Per vCPU: whether it had a turn in the round.
    taken: Vec<bool>,
    /// Per vCPU: its instructions so far in the round.
    clock: Vec<u64>,
    /// Per vCPU: whether its last block ended in `hlt` or `mwait`: it
    /// sleeps, and holds no round open.
    asleep: Vec<bool>,
    /// Per vCPU: the stamp of its running block's events.
    now: Vec<u64>,
    /// Per vCPU: the running block's tag.
    tags: Vec<u32>,
    /// Per vCPU: its events of the round, in its order.
    events: Vec<Vec<Event>>,
    held: usize,
    /// Per vCPU: how far the replay has come in its events.
    at: Vec<usize>,
    /// Whether replayed events' counts are kept for [`Model::drain_replayed`].
    record: bool,
    replayed: Vec<Replayed>,
    /// Rounds replayed, turns begun, instructions run while weaving.
    rounds: u64,
    turns: u64,
    instructions: u64,
}

impl Weave {
    fn new(vcpus: usize) -> Weave {
        Weave {
            current: usize::MAX,
            taken: vec![false; vcpus],
            clock: vec![0; vcpus],
            asleep: vec![false; vcpus],
            now: vec![0; vcpus],
            tags: vec![u32::MAX; vcpus],
            events: vec![Vec::new(); vcpus],
            held: 0,
            at: vec![0; vcpus],
            record: false,
            replayed: Vec::new(),
            rounds: 0,
            turns: 0,
            instructions: 0,
        }
    }

    /// `v` begins a turn. One that slept woke during the turn of the vCPU
    /// before it (QEMU skips a sleeping vCPU's turns without a word): its
    /// events follow that vCPU's so far, which may have woken it.
    fn begin(&mut self, v: usize) {
        if self.asleep[v] {
            self.asleep[v] = false;
            if let Some(&before) = self.clock.get(self.current) {
                self.clock[v] = self.clock[v].max(before);
            }
        }
        self.taken[v] = true;
        self.now[v] = self.clock[v];
        self.current = v;
    }

    /// Whether the vCPUs awake that ran in the round ran about as many
    /// instructions each.
    fn balanced(&self) -> bool {
        let ran = || {
            (0..self.clock.len())
                .filter(|&v| self.taken[v] && !self.asleep[v])
                .map(|v| self.clock[v])
        };
        let (most, least) = (ran().max().unwrap_or(0), ran().min().unwrap_or(0));
        most - least <= (most / 4).max(SLACK)
    }

    #[inline(always)]
    fn hold(&mut self, v: usize, line: u64, lines: u16, kind: Kind, mode: Mode) {
        self.events[v].push(Event {
            time: self.now[v],
            line,
            tag: self.tags[v],
            lines,
            kind,
            mode,
        });
        self.held += 1;
    }
}

/// How much the weave did: rounds replayed, turns begun, instructions run
/// while weaving.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WeaveStats {
    pub rounds: u64,
    pub turns: u64,
    pub instructions: u64,
}

impl Model {
    pub fn new(config: Config, vcpus: usize) -> Result<Model, String> {
        config.check()?;
        let core = Core {
            l1i: Cache::new(config.l1i)?,
            l1d: Cache::new(config.l1d)?,
            l2: Cache::new(config.l2)?,
            mode: Mode::Kernel,
            pending: BlockEnd::Other,
            // Weakly not taken: one taken outcome turns a counter.
            gshare: vec![1; 1 << config.gshare_bits].into_boxed_slice(),
            history: 0,
            btb: vec![EMPTY; 1 << config.btb_bits].into_boxed_slice(),
            counts: [Counts::default(); 2],
            parts: 0,
            rsb: vec![EMPTY; config.rsb_depth as usize].into_boxed_slice(),
            rsb_top: 0,
            rsb_held: 0,
            string: NO_TRAIL,
            owned: vec![EMPTY; OWNED_SLOTS].into_boxed_slice(),
            prefetcher: (config.prefetch_streams > 0)
                .then(|| Prefetcher::new(config.prefetch_streams)),
        };
        Ok(Model {
            cores: vec![core; vcpus.max(1)],
            llc: Cache::new(config.llc)?,
            gshare_mask: (1 << config.gshare_bits) - 1,
            btb_mask: (1 << config.btb_bits) - 1,
            entries: vec![EMPTY; ENTRY_SLOTS].into_boxed_slice(),
            entries_held: 0,
            weave: None,
            config,
        })
    }

    /// The core of `vcpu`: a vCPU index beyond those announced (hot-plug)
    /// shares the last core rather than failing the guest.
    #[inline(always)]
    fn index(&self, vcpu: usize) -> usize {
        vcpu.min(self.cores.len() - 1)
    }

    /// The cores modelled.
    pub fn vcpus(&self) -> usize {
        self.cores.len()
    }

    /// The counts of every vCPU, user and kernel.
    pub fn counts(&self) -> [Counts; 2] {
        let mut sum = [Counts::default(); 2];
        for core in &self.cores {
            sum[0].add(&core.counts[0]);
            sum[1].add(&core.counts[1]);
        }
        sum
    }

    /// A block starts on `vcpu` at `pc`, of `instructions` instructions
    /// whose bytes span the lines `lines` (line numbers, as [`lines`] gives
    /// them), ending as `end` says.
    #[inline]
    pub fn block(
        &mut self,
        vcpu: usize,
        pc: u64,
        mode: Mode,
        instructions: u64,
        lines: Range<u64>,
        end: BlockEnd,
    ) {
        let v = self.index(vcpu);
        if self.weave.is_some() {
            self.turn(v);
        }
        let core = &mut self.cores[v];
        let pending = std::mem::replace(&mut core.pending, end);
        if core.mode == Mode::User && mode == Mode::Kernel && self.config.skip_entries == 1 {
            self.learn_entry(pc);
        }
        if pending != BlockEnd::Other {
            self.resolve_branch(v, pending, pc, mode);
        }
        let core = &mut self.cores[v];
        core.mode = mode;
        core.counts[mode as usize].instructions += instructions;
        if let BlockEnd::String { pc: at } = end {
            if self.config.string_bytes_per_cycle > 0 {
                // QEMU under icount runs a string instruction one element
                // per execution, each a block of that one instruction at
                // its address: the instruction goes on while the vCPU's
                // blocks come back to it.
                let c = &mut core.counts[mode as usize];
                c.string_iterations += 1;
                if !(at == pc && pending == end) {
                    c.string_instructions += 1;
                    core.string = NO_TRAIL;
                }
            }
        }
        if let Some(w) = self.weave.as_mut() {
            let time = w.clock[v];
            w.now[v] = time;
            w.clock[v] = time + instructions;
            w.instructions += instructions;
            if !lines.is_empty() {
                // A block spans at most two pages: its lines fit.
                let n = (lines.end - lines.start).min(u64::from(u16::MAX)) as u16;
                w.hold(v, lines.start, n, Kind::Fetch, mode);
            }
            if end == BlockEnd::Halt {
                w.asleep[v] = true;
            }
            return;
        }
        for line in lines {
            if self.cores[v].l1i.access(line) != Lookup::Hit {
                self.fetch_miss(v, line, mode as usize);
            }
        }
    }

    /// Adds the own cost of the block [`Model::block`] just started on
    /// `vcpu` (its throughput on the core, in `throughput::PARTS` of a
    /// cycle), in that block's mode: the whole cycles go to the count, the
    /// rest waits for the next block's.
    #[inline]
    pub fn block_cost(&mut self, vcpu: usize, parts: u64) {
        let v = self.index(vcpu);
        let core = &mut self.cores[v];
        let parts = core.parts + parts;
        core.counts[core.mode as usize].base_cycles += parts / crate::throughput::PARTS;
        core.parts = parts % crate::throughput::PARTS;
    }

    /// An instruction fetch that missed the L1i, counted in `mode`.
    #[inline(never)]
    fn fetch_miss(&mut self, v: usize, line: u64, mode: usize) {
        self.cores[v].counts[mode].l1i_misses += 1;
        let (l2, evicted) = self.l2_access(v, line);
        if l2 != Lookup::Hit {
            self.cores[v].counts[mode].l2_misses += 1;
            if !self.llc_serves(line) {
                self.cores[v].counts[mode].llc_misses += 1;
            }
            // The line is valid in this vCPU's L2 now.
            if self.cores.len() > 1 {
                self.disown(v, line);
            }
        }
        self.llc_takes(evicted);
        self.prefetch(v, line, mode);
    }

    /// An L1 miss's access to vCPU `v`'s L2, which fills it there, and
    /// under `llc-victim` the valid line the L2 evicted for it, which goes
    /// to the last level ([`Model::llc_takes`]) once the access has looked
    /// there.
    #[inline(always)]
    fn l2_access(&mut self, v: usize, line: u64) -> (Lookup, Option<u64>) {
        if self.config.llc_victim {
            self.cores[v].l2.access_evicting(line)
        } else {
            (self.cores[v].l2.access(line), None)
        }
    }

    /// The last level takes a line an L2 evicted, if any.
    #[inline(always)]
    fn llc_takes(&mut self, evicted: Option<u64>) {
        if let Some(evicted) = evicted {
            self.llc.access(evicted);
        }
    }

    /// Whether the last level holds `line` for an L2 miss. Filled on the
    /// way, as every miss fills, unless it is a victim cache: then a miss
    /// leaves it as it is, and a hit leaves the line where it is in the
    /// LRU order (the copy in the L2 is the one in use; the last level's
    /// matters again when the L2 gives the line back).
    #[inline(always)]
    fn llc_serves(&mut self, line: u64) -> bool {
        if self.config.llc_victim {
            self.llc.holds(line)
        } else {
            self.llc.access(line) == Lookup::Hit
        }
    }

    /// The prefetcher of vCPU `v` sees the L2 access to `line` (counted in
    /// `mode`) and, on a confirmed stream, brings the stream's next lines
    /// in the page into the L2: lines with no tag in the L2 (an
    /// invalidated tag is a line another vCPU wrote) and none valid in
    /// another vCPU's L1d or L2. The model keeps no modified state, so a
    /// line another core holds might be one it wrote; leaving those to the
    /// demand access keeps every copy the coherence knows of as it was.
    #[inline(always)]
    fn prefetch(&mut self, v: usize, line: u64, mode: usize) {
        let Some(prefetcher) = self.cores[v].prefetcher.as_mut() else {
            return;
        };
        let Some(stride) = prefetcher.observe(line) else {
            return;
        };
        for k in 1..=PREFETCH_DEGREE {
            let ahead = line.wrapping_add_signed(k * stride);
            if ahead >> PAGE_LINES_BITS != line >> PAGE_LINES_BITS {
                break;
            }
            if self.cores[v].l2.has_tag(ahead) || self.held_by_another(v, ahead) {
                continue;
            }
            let (_, evicted) = self.l2_access(v, ahead);
            if !self.config.llc_victim {
                self.llc.access(ahead);
            }
            self.llc_takes(evicted);
            self.cores[v].counts[mode].l2_prefetches += 1;
            // A vCPU that wrote the line and has since evicted it may
            // still own it: its next store must find this copy.
            if self.cores.len() > 1 {
                self.disown(v, ahead);
            }
        }
    }

    /// Whether a vCPU other than `v` holds `line` valid in its L1d or L2.
    fn held_by_another(&self, v: usize, line: u64) -> bool {
        self.cores.len() > 1
            && self
                .cores
                .iter()
                .enumerate()
                .any(|(other, core)| other != v && (core.l1d.holds(line) || core.l2.holds(line)))
    }

    /// A data access of `size` bytes at (physical) `address` by `vcpu`.
    #[inline]
    pub fn data(&mut self, vcpu: usize, address: u64, size: u64, store: bool) {
        self.data_in(vcpu, address, size, store, 0);
    }

    /// A data access by virtual address, for one whose physical address is
    /// not known: its lines are apart from every physical line.
    pub fn data_virtual(&mut self, vcpu: usize, address: u64, size: u64, store: bool) {
        self.data_in(vcpu, address, size, store, VIRTUAL);
    }

    #[inline(always)]
    fn data_in(&mut self, vcpu: usize, address: u64, size: u64, store: bool, space: u64) {
        let v = self.index(vcpu);
        let first = (address >> LINE_BITS) | space;
        let last = (address.wrapping_add(size.max(1) - 1) >> LINE_BITS) | space;
        if self.weave.is_some() {
            self.hold_data(v, first, last, store);
            return;
        }
        self.data_line(v, first, store);
        if last != first {
            self.data_line(v, last, store);
        }
    }

    fn hold_data(&mut self, v: usize, first: u64, last: u64, store: bool) {
        self.turn(v);
        let mode = self.cores[v].mode;
        let kind = if store { Kind::Store } else { Kind::Load };
        let Some(w) = self.weave.as_mut() else { return };
        w.hold(v, first, 0, kind, mode);
        if last != first {
            w.hold(v, last, 0, kind, mode);
        }
    }

    /// Holds back every vCPU's cache events from now on and replays them
    /// interleaved, round by round (see [`Weave`]), when `on` and there
    /// are several vCPUs; counts every event at once otherwise (what is
    /// held is replayed first).
    pub fn set_weave(&mut self, on: bool) {
        self.flush();
        self.weave = (on && self.cores.len() > 1).then(|| Box::new(Weave::new(self.cores.len())));
    }

    /// Whether events are held back for the weave.
    pub fn weaving(&self) -> bool {
        self.weave.is_some()
    }

    /// Keeps each replayed event's counts, with its vCPU and the tag of its
    /// block, for [`Model::drain_replayed`].
    pub fn record_replayed(&mut self, on: bool) {
        if let Some(w) = self.weave.as_mut() {
            w.record = on;
        }
    }

    /// The events `vcpu` holds back from now on belong to the block `tag`.
    #[inline]
    pub fn tag(&mut self, vcpu: usize, tag: u32) {
        let v = self.index(vcpu);
        if let Some(w) = self.weave.as_mut() {
            w.tags[v] = tag;
        }
    }

    /// Gives `f` every replayed event's counts kept since the last call,
    /// in the order of the replay.
    pub fn drain_replayed(&mut self, mut f: impl FnMut(&Replayed)) {
        if let Some(w) = self.weave.as_mut() {
            for r in w.replayed.drain(..) {
                f(&r);
            }
        }
    }

    /// How much the weave did so far.
    pub fn weave_stats(&self) -> Option<WeaveStats> {
        self.weave.as_ref().map(|w| WeaveStats {
            rounds: w.rounds,
            turns: w.turns,
            instructions: w.instructions,
        })
    }

    /// `vcpu` is about to make an event: a vCPU other than the last one
    /// begins its turn, and the round closes first if that vCPU had a turn
    /// in it already and the vCPUs are even (or the round holds too many
    /// events). Called by
    /// every event; a caller that must see the replayed counts before an
    /// event (the attribution) calls it before.
    #[inline(always)]
    pub fn turn(&mut self, vcpu: usize) {
        let v = self.index(vcpu);
        if let Some(w) = self.weave.as_ref() {
            if w.current != v || w.held >= ROUND_EVENTS {
                self.next_turn(v);
            }
        }
    }

    #[inline(never)]
    fn next_turn(&mut self, v: usize) {
        let Some(w) = self.weave.as_mut() else { return };
        if w.current != v {
            if w.taken[v] && w.balanced() {
                self.replay_round();
            }
            let w = self.weave.as_mut().expect("weaving");
            w.begin(v);
            w.turns += 1;
        } else {
            // A vCPU alone with too many events: its turn goes on in a new
            // round.
            self.replay_round();
            self.weave.as_mut().expect("weaving").begin(v);
        }
    }

    /// Replays every event held back: before counts are read. The vCPU
    /// running goes on as if beginning a turn.
    pub fn flush(&mut self) {
        if self.weave.is_none() {
            return;
        }
        self.replay_round();
        let w = self.weave.as_mut().expect("weaving");
        if w.current < w.taken.len() {
            let v = w.current;
            w.begin(v);
        }
    }

    /// Replays the round's events of every vCPU merged by their stamps
    /// (the lower vCPU first where they are equal), then begins a new round.
    fn replay_round(&mut self) {
        let Some(mut w) = self.weave.take() else {
            return;
        };
        if w.held > 0 {
            w.rounds += 1;
        }
        let n = w.events.len();
        w.at.iter_mut().for_each(|a| *a = 0);
        loop {
            // The vCPU with the earliest next event, and the next earliest
            // of the others: the first one's events are replayed in a run
            // until they pass the second's.
            let mut first: Option<(u64, usize)> = None;
            let mut second: Option<(u64, usize)> = None;
            for v in 0..n {
                let Some(e) = w.events[v].get(w.at[v]) else {
                    continue;
                };
                let key = (e.time, v);
                if first.is_none_or(|f| key < f) {
                    second = first;
                    first = Some(key);
                } else if second.is_none_or(|s| key < s) {
                    second = Some(key);
                }
            }
            let Some((_, v)) = first else { break };
            let events = std::mem::take(&mut w.events[v]);
            let mut i = w.at[v];
            while let Some(&e) = events.get(i) {
                if second.is_some_and(|s| (e.time, v) > s) {
                    break;
                }
                self.replay(v, e, &mut w);
                i += 1;
            }
            w.at[v] = i;
            w.events[v] = events;
        }
        for events in &mut w.events {
            events.clear();
        }
        w.taken.iter_mut().for_each(|t| *t = false);
        w.clock.iter_mut().for_each(|c| *c = 0);
        w.held = 0;
        self.weave = Some(w);
    }

    /// One held-back event of vCPU `v`, through the caches.
    #[inline(always)]
    fn replay(&mut self, v: usize, e: Event, w: &mut Weave) {
        let before = w.record.then(|| self.cores[v].counts);
        let mode = e.mode as usize;
        match e.kind {
            Kind::Fetch => {
                for line in e.line..e.line + u64::from(e.lines) {
                    if self.cores[v].l1i.access(line) != Lookup::Hit {
                        self.fetch_miss(v, line, mode);
                    }
                }
            }
            kind => self.string_line(v, e.line, kind, mode),
        }
        if let Some(before) = before {
            let after = self.cores[v].counts;
            if after != before {
                w.replayed.push(Replayed {
                    vcpu: v,
                    tag: e.tag,
                    counts: [after[0].since(&before[0]), after[1].since(&before[1])],
                });
            }
        }
    }

    #[inline(always)]
    fn data_line(&mut self, v: usize, line: u64, store: bool) {
        let mode = self.cores[v].mode as usize;
        self.data_line_in(v, line, store, mode);
    }

    /// A data access to `line` by vCPU `v`, counted in `mode`.
    #[inline(always)]
    fn data_line_in(&mut self, v: usize, line: u64, store: bool, mode: usize) {
        let l1 = self.cores[v].l1d.access(line);
        let coherence = l1 != Lookup::Hit && self.data_miss(v, line, l1, mode);
        if store && self.cores.len() > 1 {
            self.store_shared(v, line, coherence, mode);
        }
    }

    /// A data access that did not hit the L1d (`l1` says whether the line
    /// was missing or there invalidated), which the L1d has just filled:
    /// whether another core served it (a coherence miss).
    #[inline(never)]
    fn data_miss(&mut self, v: usize, line: u64, l1: Lookup, mode: usize) -> bool {
        self.cores[v].counts[mode].l1d_misses += 1;
        let (l2, evicted) = self.l2_access(v, line);
        let coherence = l1 == Lookup::Invalidated || l2 == Lookup::Invalidated;
        if coherence {
            self.cores[v].counts[mode].coherence_misses += 1;
            // The other core's copy passes through the shared level, which
            // keeps it unless the level only takes the L2s' evictions.
            if !self.config.llc_victim {
                self.llc.access(line);
            }
        } else if l2 == Lookup::Miss {
            self.cores[v].counts[mode].l2_misses += 1;
            if !self.llc_serves(line) {
                self.cores[v].counts[mode].llc_misses += 1;
            }
        }
        self.llc_takes(evicted);
        if self.cores.len() > 1 {
            self.disown(v, line);
        }
        self.prefetch(v, line, mode);
        coherence
    }

    /// `line` has become valid in vCPU `v`'s L1d or L2: no other vCPU owns
    /// it any more.
    fn disown(&mut self, v: usize, line: u64) {
        let slot = line as usize % OWNED_SLOTS;
        for (other, core) in self.cores.iter_mut().enumerate() {
            if other != v && core.owned[slot] == line {
                core.owned[slot] = EMPTY;
            }
        }
    }

    /// A store by vCPU `v` invalidates `line` in every other vCPU's L1d and
    /// L2, unless `v` owns the line (then no other vCPU holds it valid).
    /// Invalidating a valid copy is a read for ownership, which the store
    /// waits for, unless the store's own access was a coherence miss (that
    /// transfer brought the line with its ownership).
    #[inline]
    fn store_shared(&mut self, v: usize, line: u64, coherence: bool, mode: usize) {
        let slot = line as usize % OWNED_SLOTS;
        if self.cores[v].owned[slot] == line {
            return;
        }
        if self.invalidate_others(v, line) && !coherence {
            self.cores[v].counts[mode].rfo_misses += 1;
        }
        self.cores[v].owned[slot] = line;
    }

    /// Whether any other vCPU held `line` valid.
    #[inline(never)]
    fn invalidate_others(&mut self, v: usize, line: u64) -> bool {
        let mut held = false;
        for (other, core) in self.cores.iter_mut().enumerate() {
            if other != v {
                held |= core.l1d.invalidate(line);
                held |= core.l2.invalidate(line);
            }
        }
        held
    }

    /// The branch that ended the last block of vCPU `v` (`pending`, not
    /// `BlockEnd::Other`), resolved by where the next block starts (`pc`,
    /// in `next_mode`).
    #[inline(never)]
    fn resolve_branch(&mut self, v: usize, pending: BlockEnd, pc: u64, next_mode: Mode) {
        let mode = self.cores[v].mode as usize;
        let rsb = self.config.rsb_depth > 0;
        match pending {
            BlockEnd::Other | BlockEnd::Halt | BlockEnd::String { .. } => {}
            BlockEnd::Conditional {
                pc: at,
                target,
                next,
            } => {
                // Taken when the next block starts at the target, not taken
                // when it starts at the fall-through (as QEMU's cflow plugin
                // tells them apart); anything else is an interrupt or a
                // fault between the blocks, which resolves nothing.
                let taken = if pc == next && pc != target {
                    false
                } else if pc == target {
                    true
                } else {
                    return;
                };
                let mask = self.gshare_mask;
                let core = &mut self.cores[v];
                let index = ((at ^ core.history) & mask) as usize;
                let counter = &mut core.gshare[index];
                let predicted = *counter >= 2;
                *counter = if taken {
                    (*counter + 1).min(3)
                } else {
                    counter.saturating_sub(1)
                };
                core.history = ((core.history << 1) | u64::from(taken)) & mask;
                let c = &mut core.counts[mode];
                c.conditional_branches += 1;
                if predicted != taken {
                    c.conditional_mispredicts += 1;
                }
            }
            // A call has run once the next block starts, whatever that
            // block is: interrupts come between blocks.
            BlockEnd::Call { next, .. } => {
                if rsb {
                    self.push_return(v, next);
                }
            }
            BlockEnd::IndirectCall { pc: at, next } => {
                if rsb {
                    self.push_return(v, next);
                }
                self.resolve_indirect(v, at, pc, next_mode);
            }
            BlockEnd::Return { pc: at } if !rsb => self.resolve_indirect(v, at, pc, next_mode),
            BlockEnd::Return { .. } => {
                // It ran, so it pops its entry even when an interrupt
                // comes before its target.
                let predicted = self.pop_return(v);
                if self.entered(v, pc, next_mode) {
                    return;
                }
                let c = &mut self.cores[v].counts[mode];
                c.indirect_branches += 1;
                if predicted != Some(pc) {
                    c.indirect_mispredicts += 1;
                }
            }
            BlockEnd::Indirect { pc: at } => self.resolve_indirect(v, at, pc, next_mode),
        }
    }

    /// An indirect branch at `at`, through the BTB, to `pc` (in `next_mode`).
    #[inline(always)]
    fn resolve_indirect(&mut self, v: usize, at: u64, pc: u64, next_mode: Mode) {
        if self.entered(v, pc, next_mode) {
            return;
        }
        let core = &mut self.cores[v];
        let mode = core.mode as usize;
        let slot = &mut core.btb[(at & self.btb_mask) as usize];
        let hit = *slot == pc;
        *slot = pc;
        let c = &mut core.counts[mode];
        c.indirect_branches += 1;
        if !hit {
            c.indirect_mispredicts += 1;
        }
    }

    /// Whether the block at `pc` (in `next_mode`) that follows vCPU `v`'s
    /// indirect branch or return is a kernel entry (an interrupt or
    /// exception came between), which the branch does not go to: the mode
    /// changed (a `ret` or `jmp *` never changes privilege), or `pc` is a
    /// kernel entry point seen before, when [`Config::skip_entries`] is on.
    #[inline(always)]
    fn entered(&self, v: usize, pc: u64, next_mode: Mode) -> bool {
        self.config.skip_entries == 1 && (self.cores[v].mode != next_mode || self.is_entry(pc))
    }

    #[inline(always)]
    fn entry_slot(pc: u64) -> usize {
        (pc.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize % ENTRY_SLOTS
    }

    fn is_entry(&self, pc: u64) -> bool {
        let mut i = Self::entry_slot(pc);
        loop {
            match self.entries[i] {
                e if e == pc => return true,
                EMPTY => return false,
                _ => i = (i + 1) % ENTRY_SLOTS,
            }
        }
    }

    /// Keeps `pc`, the first kernel block after a user block, among the
    /// kernel entry points, while there are fewer than [`ENTRY_POINTS`].
    #[inline(never)]
    fn learn_entry(&mut self, pc: u64) {
        if self.entries_held >= ENTRY_POINTS {
            return;
        }
        let mut i = Self::entry_slot(pc);
        loop {
            match self.entries[i] {
                e if e == pc => return,
                EMPTY => break,
                _ => i = (i + 1) % ENTRY_SLOTS,
            }
        }
        self.entries[i] = pc;
        self.entries_held += 1;
    }

    fn push_return(&mut self, v: usize, next: u64) {
        let core = &mut self.cores[v];
        let depth = core.rsb.len();
        core.rsb[core.rsb_top] = next;
        core.rsb_top = (core.rsb_top + 1) % depth;
        core.rsb_held = (core.rsb_held + 1).min(depth);
    }

    fn pop_return(&mut self, v: usize) -> Option<u64> {
        let core = &mut self.cores[v];
        if core.rsb_held == 0 {
            return None;
        }
        let depth = core.rsb.len();
        core.rsb_top = (core.rsb_top + depth - 1) % depth;
        core.rsb_held -= 1;
        Some(core.rsb[core.rsb_top])
    }

    /// A data access of `size` bytes at (virtual) `address` by the string
    /// instruction that ends the block `vcpu` runs, when string
    /// instructions are costed apart ([`Config::string_bytes_per_cycle`]
    /// not 0). `translate` gives the guest physical address of a virtual
    /// one, or `None` where there is none (the line is then taken by
    /// virtual address, as [`Model::data_virtual`] takes it). It is asked
    /// only for a line the instruction's last load (or store) was not in:
    /// the mapping stays while one instruction runs, and a string runs
    /// through each line element by element. A store counts its bytes; a
    /// store that goes on forward from the instruction's last one claims
    /// the lines it starts without reading them (no miss), and with
    /// [`Config::string_nontemporal`] every string store bypasses the
    /// caches. Returns the lines taken by virtual address.
    pub fn string_data(
        &mut self,
        vcpu: usize,
        address: u64,
        size: u64,
        store: bool,
        mut translate: impl FnMut(u64) -> Option<u64>,
    ) -> u32 {
        let v = self.index(vcpu);
        if self.weave.is_some() {
            self.turn(v);
        }
        let size = size.max(1);
        let first = address >> LINE_BITS;
        let last = address.wrapping_add(size - 1) >> LINE_BITS;
        let nontemporal = self.config.string_nontemporal == 1;
        let core = &mut self.cores[v];
        let mode = core.mode;
        let forward = store && core.string.next_store == Some(address);
        if store {
            core.counts[mode as usize].string_bytes += size;
            core.string.next_store = Some(address.wrapping_add(size));
        }
        let mut by_virtual = 0;
        let mut taken: Option<(u64, u64)> = None;
        for vline in [first, last] {
            if taken.is_some_and(|(done, _)| done == vline) {
                break;
            }
            let core = &mut self.cores[v];
            let trail = if store {
                &mut core.string.store
            } else {
                &mut core.string.load
            };
            let line = match taken {
                _ if trail.0 == vline => trail.1,
                // The access's second line, in the first one's page.
                Some((before, line)) if before >> PAGE_LINE_BITS == vline >> PAGE_LINE_BITS => {
                    line + 1
                }
                _ => {
                    let at = if vline == first {
                        address
                    } else {
                        vline << LINE_BITS
                    };
                    match translate(at) {
                        Some(physical) => physical >> LINE_BITS,
                        None => vline | VIRTUAL,
                    }
                }
            };
            *trail = (vline, line);
            taken = Some((vline, line));
            if line & VIRTUAL != 0 {
                by_virtual += 1;
            }
            let kind = if !store {
                Kind::Load
            } else if nontemporal {
                Kind::Bypass
            } else if forward && vline << LINE_BITS >= address {
                // The store covers the line's first byte and the string
                // goes on forward: it will write the whole line.
                Kind::Claim
            } else {
                Kind::Store
            };
            match self.weave.as_mut() {
                Some(w) => w.hold(v, line, 0, kind, mode),
                None => self.string_line(v, line, kind, mode as usize),
            }
        }
        by_virtual
    }

    /// A string instruction's access of `kind` to `line` by vCPU `v`,
    /// counted in `mode`.
    #[inline(always)]
    fn string_line(&mut self, v: usize, line: u64, kind: Kind, mode: usize) {
        match kind {
            Kind::Fetch | Kind::Load => self.data_line_in(v, line, false, mode),
            Kind::Store => self.data_line_in(v, line, true, mode),
            Kind::Claim => self.claim_line(v, line, mode),
            Kind::Bypass => {
                if self.cores.len() > 1 {
                    self.invalidate_others(v, line);
                }
            }
        }
    }

    /// A string store that writes `line` whole: the line is filled as
    /// written, without being read, so no miss is counted; other vCPUs'
    /// copies go as for any store.
    fn claim_line(&mut self, v: usize, line: u64, mode: usize) {
        let core = &mut self.cores[v];
        if core.l1d.access(line) != Lookup::Hit {
            if core.l2.access(line) != Lookup::Hit {
                self.llc.access(line);
            }
            if self.cores.len() > 1 {
                self.disown(v, line);
            }
        }
        if self.cores.len() > 1 {
            self.store_shared(v, line, false, mode);
        }
    }
}

/// Read access to one vCPU's counts, for the plugin's profile, which
/// attributes them to the blocks that caused them.
impl Model {
    /// The counts of `vcpu` alone, user then kernel.
    pub fn vcpu_counts(&self, vcpu: usize) -> [Counts; 2] {
        self.cores[vcpu.min(self.cores.len() - 1)].counts
    }
}

/// The lines the `bytes` bytes from (virtual) `address` span, as
/// [`Model::block`] takes them: a block's instructions lie end to end, so
/// its lines are the ones from its first byte's to its last byte's, each
/// marked [`VIRTUAL`].
pub fn lines(address: u64, bytes: u64) -> Range<u64> {
    let first = (address >> LINE_BITS) | VIRTUAL;
    if bytes == 0 {
        return first..first;
    }
    let last = (address.wrapping_add(bytes - 1) >> LINE_BITS) | VIRTUAL;
    first..last + 1
}

/// What a block's last instruction is, from its bytes (x86-64), for the
/// predictor and the string costing: a conditional branch with its target,
/// an indirect jump, a call, an indirect call, a return, `hlt`, a `rep
/// movs` or `rep stos`, or none of them.
pub fn classify(pc: u64, bytes: &[u8]) -> BlockEnd {
    let next = pc + bytes.len() as u64;
    // Skip legacy prefixes (segment overrides double as branch hints) and a REX.
    let mut i = 0;
    let mut rep = false;
    while i < bytes.len()
        && matches!(
            bytes[i],
            0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 | 0x66 | 0x67 | 0xf2 | 0xf3
        )
    {
        rep |= matches!(bytes[i], 0xf2 | 0xf3);
        i += 1;
    }
    if i < bytes.len() && (0x40..=0x4f).contains(&bytes[i]) {
        i += 1;
    }
    let rest = &bytes[i..];
    let rel = |r: &[u8]| -> Option<i64> {
        match r.len() {
            1 => Some(i64::from(r[0] as i8)),
            4 => Some(i64::from(i32::from_le_bytes([r[0], r[1], r[2], r[3]]))),
            _ => None,
        }
    };
    let conditional = |offset: Option<i64>| match offset {
        Some(o) => BlockEnd::Conditional {
            pc,
            target: next.wrapping_add(o as u64),
            next,
        },
        None => BlockEnd::Other,
    };
    match rest {
        // jcc rel8, loop/loopz/loopnz/jrcxz rel8
        [0x70..=0x7f | 0xe0..=0xe3, r @ ..] => conditional(rel(r)),
        // jcc rel32
        [0x0f, 0x80..=0x8f, r @ ..] => conditional(rel(r)),
        // ret, ret imm16
        [0xc3] | [0xc2, _, _] => BlockEnd::Return { pc },
        // hlt, mwait
        [0xf4] | [0x0f, 0x01, 0xc9] => BlockEnd::Halt,
        // call rel32
        [0xe8, _, _, _, _] => BlockEnd::Call { pc, next },
        // call through a register or memory: ff /2, /3
        [0xff, modrm, ..] if matches!((modrm >> 3) & 7, 2 | 3) => {
            BlockEnd::IndirectCall { pc, next }
        }
        // jmp through a register or memory: ff /4, /5
        [0xff, modrm, ..] if matches!((modrm >> 3) & 7, 4 | 5) => BlockEnd::Indirect { pc },
        // rep movs, rep stos (f2 repeats them as f3 does); the element's
        // size (66, REX.W) comes with each memory access.
        [0xa4 | 0xa5 | 0xaa | 0xab] if rep => BlockEnd::String { pc },
        _ => BlockEnd::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Config {
        Config {
            l1i: Geometry {
                bytes: 1 << 10,
                ways: 2,
            },
            l1d: Geometry {
                bytes: 1 << 10,
                ways: 2,
            },
            l2: Geometry {
                bytes: 4 << 10,
                ways: 4,
            },
            llc: Geometry {
                bytes: 16 << 10,
                ways: 4,
            },
            // The model as it was before these parts, which most tests
            // hold it to; the tests of each part turn it on.
            prefetch_streams: 0,
            llc_victim: false,
            issue_width: 0,
            ..Config::default()
        }
    }

    /// Reads every line of a buffer of `bytes` once per pass, as a
    /// sequential sweep does.
    fn sweep(model: &mut Model, vcpu: usize, base: u64, bytes: u64, passes: u32) {
        for _ in 0..passes {
            for offset in (0..bytes).step_by(8) {
                model.data(vcpu, base + offset, 8, false);
            }
        }
    }

    fn user(model: &Model) -> Counts {
        model.counts()[Mode::User as usize]
    }

    fn user_model(config: Config, vcpus: usize) -> Model {
        let mut m = Model::new(config, vcpus).unwrap();
        for v in 0..vcpus {
            m.block(v, 0x1000, Mode::User, 0, 0..0, BlockEnd::Other);
        }
        m
    }

    #[test]
    fn lru_evicts_the_least_recently_used_way() {
        let mut c = Cache::new(Geometry {
            bytes: 2 * LINE,
            ways: 2,
        })
        .unwrap();
        assert_eq!(c.access(1), Lookup::Miss);
        assert_eq!(c.access(2), Lookup::Miss);
        assert_eq!(c.access(1), Lookup::Hit);
        // 2 is now the least recent: 3 replaces it, 1 stays.
        assert_eq!(c.access(3), Lookup::Miss);
        assert!(c.holds(1) && c.holds(3) && !c.holds(2));
        assert_eq!(c.access(2), Lookup::Miss);
        assert!(!c.holds(1));
    }

    #[test]
    fn a_working_set_that_fits_a_level_misses_only_once_per_line_there() {
        // Fits L1d (1 KiB): 16 cold misses, then none.
        let mut m = user_model(small(), 1);
        sweep(&mut m, 0, 0x10000, 1 << 10, 10);
        let c = user(&m);
        assert_eq!(c.l1d_misses, 16);
        assert_eq!(c.l2_misses, 16);
        assert_eq!(c.llc_misses, 16);

        // 2 KiB fits L2 but not L1d: every L1d access of a line misses under
        // LRU, the L2 only the first time.
        let mut m = user_model(small(), 1);
        sweep(&mut m, 0, 0x10000, 2 << 10, 10);
        let c = user(&m);
        assert_eq!(c.l1d_misses, 32 * 10);
        assert_eq!(c.l2_misses, 32);
        assert_eq!(c.llc_misses, 32);

        // 32 KiB is beyond the last level: every pass misses everywhere.
        let mut m = user_model(small(), 1);
        sweep(&mut m, 0, 0x10000, 32 << 10, 3);
        let c = user(&m);
        assert_eq!(c.llc_misses, 512 * 3);
        assert_eq!(c.coherence_misses, 0);
    }

    #[test]
    fn an_access_across_a_line_boundary_touches_both_lines() {
        let mut m = user_model(small(), 1);
        m.data(0, 60, 8, false);
        assert_eq!(user(&m).l1d_misses, 2);
        m.data(0, 64, 8, false);
        assert_eq!(user(&m).l1d_misses, 2);
    }

    #[test]
    fn a_store_by_one_vcpu_makes_the_others_next_access_a_coherence_miss() {
        let mut m = user_model(small(), 2);
        // Both read the line: cold misses, no coherence.
        m.data(0, 0x4000, 8, false);
        m.data(1, 0x4000, 8, false);
        assert_eq!(user(&m).coherence_misses, 0);
        // Ping-pong: each store invalidates the other's copy.
        for _ in 0..10 {
            m.data(0, 0x4000, 8, true);
            m.data(1, 0x4008, 8, true);
        }
        let c = user(&m);
        // vCPU 0's first store hits; every access after it finds its line invalid.
        assert_eq!(c.coherence_misses, 19);
        assert_eq!(c.l1d_misses, 2 + 19);
        // Each vCPU's cold miss reaches its own L2; only the first reaches memory.
        assert_eq!(c.l2_misses, 2);
        assert_eq!(c.llc_misses, 1);
        // A line written by one vCPU only is never a coherence miss.
        let mut m = user_model(small(), 2);
        for _ in 0..10 {
            m.data(0, 0x4000, 8, true);
            m.data(1, 0x8000, 8, true);
        }
        assert_eq!(user(&m).coherence_misses, 0);
        // Nor on one vCPU, whatever it writes.
        let mut m = user_model(small(), 1);
        for _ in 0..10 {
            m.data(0, 0x4000, 8, true);
            m.data(0, 0x4008, 8, true);
        }
        assert_eq!(user(&m).coherence_misses, 0);
    }

    #[test]
    fn a_store_to_a_line_others_hold_is_a_read_for_ownership() {
        let mut m = user_model(small(), 3);
        // vCPUs 1 and 2 read the line; vCPU 0 reads it too and then
        // writes it: a hit of its own, but the other copies must go.
        for v in [1, 2, 0] {
            m.data(v, 0x4000, 8, false);
        }
        let before = user(&m);
        m.data(0, 0x4000, 8, true);
        let store = user(&m).since(&before);
        assert_eq!(store.rfo_misses, 1, "one store, however many copies");
        assert_eq!(store.l1d_misses, 0);
        // A second store finds no other copy.
        m.data(0, 0x4008, 8, true);
        assert_eq!(user(&m).rfo_misses, 1);
        // A store that misses its L1d on a line another vCPU holds: the
        // miss (here from the L2 and beyond) and the read for ownership.
        m.data(1, 0x8000, 8, false);
        m.data(2, 0x8000, 8, true);
        assert_eq!(user(&m).rfo_misses, 2);
        // A store that is a coherence miss brought the line with its
        // ownership: no read for ownership besides.
        let before = user(&m);
        m.data(1, 0x8000, 8, true);
        let store = user(&m).since(&before);
        assert_eq!((store.coherence_misses, store.rfo_misses), (1, 0));
        // Each costs a transfer from another core in the estimate.
        let c = Config::default();
        let with = Counts {
            rfo_misses: 3,
            ..Counts::default()
        };
        assert_eq!(with.estimated_cycles(&c), 3 * c.coherence_cycles);
        // Nothing of it on one vCPU.
        let mut m = user_model(small(), 1);
        m.data(0, 0x4000, 8, false);
        m.data(0, 0x4000, 8, true);
        assert_eq!(user(&m).rfo_misses, 0);
    }

    #[test]
    fn an_invalidated_line_that_was_evicted_is_an_ordinary_miss() {
        let mut m = user_model(small(), 2);
        m.data(1, 0x4000, 8, false);
        m.data(0, 0x4000, 8, true);
        // vCPU 1 sweeps far more than its L2: the invalid tag is evicted.
        sweep(&mut m, 1, 0x100000, 8 << 10, 1);
        let before = user(&m);
        m.data(1, 0x4000, 8, false);
        let after = user(&m).since(&before);
        assert_eq!(after.coherence_misses, 0);
        assert_eq!(after.l1d_misses, 1);
        assert_eq!(after.l2_misses, 1);
    }

    /// Every part added after the caches and the first predictors off:
    /// the model as it was before them.
    fn parts_off(config: Config) -> Config {
        Config {
            rsb_depth: 0,
            skip_entries: 0,
            string_bytes_per_cycle: 0,
            ..config
        }
    }

    /// A guest page mapping for the string accesses: a virtual page's
    /// physical page, or none for one page in eight.
    fn translate(address: u64) -> Option<u64> {
        let page = address >> 12;
        let mixed = page.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
        (!mixed.is_multiple_of(8)).then_some(((mixed % 0x400) << 12) | (address & 0xfff))
    }

    /// A long random stream on 1 to 4 vCPUs (and a vCPU index beyond
    /// them), with caches small enough that lines are evicted, invalidated
    /// by other vCPUs' stores and filled again all the time, lines shared
    /// between vCPUs and between instructions and data, accesses across
    /// line boundaries, branches resolved every way (calls and returns
    /// that mostly pair up, interrupts into a few kernel entry points from
    /// either mode) and string instructions running element by element:
    /// after every event the counts are those of the straightforward
    /// model, which scans every other vCPU's caches on every store and
    /// predicts with maps and a plain stack, with the later parts off, on,
    /// and a shallow return stack with non-temporal string stores.
    #[test]
    fn the_model_counts_what_the_straightforward_one_counts() {
        let memory = |config: Config| Config {
            prefetch_streams: 4,
            llc_victim: true,
            ..config
        };
        let configs = [
            parts_off(small()),
            small(),
            Config {
                rsb_depth: 3,
                string_nontemporal: 1,
                string_bytes_per_cycle: 16,
                ..small()
            },
            Config {
                prefetch_streams: 4,
                ..parts_off(small())
            },
            Config {
                llc_victim: true,
                ..parts_off(small())
            },
            memory(small()),
        ];
        for config in configs {
            for vcpus in 1..=4 {
                random_stream(config.clone(), vcpus);
            }
        }
    }

    fn random_stream(config: Config, vcpus: usize) {
        let kernel = 0xffff_ffff_8100_0000u64;
        let entries = [kernel + 0x80_0000, kernel + 0x80_0100, kernel + 0x80_0200];
        let mut fast = Model::new(config.clone(), vcpus).unwrap();
        let mut slow = reference::Model::new(config.clone(), vcpus).unwrap();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ vcpus as u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut vcpu = 0;
        let mut ends = vec![BlockEnd::Other; vcpus + 1];
        // Per vCPU index: the return addresses of its calls, and where its
        // string instruction's next element goes (source, destination).
        let mut calls: Vec<Vec<u64>> = vec![Vec::new(); vcpus + 1];
        let mut strings = vec![(0u64, 0u64); vcpus + 1];
        // Per vCPU: where its strided run is and its stride in bytes.
        let mut runs = vec![(0u64, 64i64); vcpus + 1];
        for _ in 0..100_000 {
            if next() % 40 == 0 {
                // Now and then an index no vCPU was announced with.
                vcpu = (next() % (vcpus as u64 + 1)) as usize;
            }
            let string = matches!(ends[vcpu], BlockEnd::String { .. });
            if next() % 10 < 3 {
                let region = if next() % 2 == 0 { 0 } else { kernel };
                let pc = match (ends[vcpu], next() % 4) {
                    (BlockEnd::Conditional { target, .. }, 0) => target,
                    (BlockEnd::Conditional { next, .. }, 1) => next,
                    (BlockEnd::Return { .. }, 0..=2) if !calls[vcpu].is_empty() => {
                        calls[vcpu].pop().unwrap()
                    }
                    (BlockEnd::Indirect { .. } | BlockEnd::IndirectCall { .. }, 0..=2) => {
                        region + 0xc000 + 0x40 * (next() % 3)
                    }
                    // The string instruction goes on.
                    (BlockEnd::String { pc }, 0..=2) => pc,
                    // An interrupt or exception.
                    (_, 3) if next() % 3 == 0 => entries[(next() % 3) as usize],
                    _ => region + 0xc000 + next() % 0x8000,
                };
                let mode = if pc >= kernel {
                    Mode::Kernel
                } else {
                    Mode::User
                };
                let bytes = 1 + next() % 200;
                let last = pc + bytes - 2;
                let end = match next() % 16 {
                    0..=5 => BlockEnd::Conditional {
                        pc: last,
                        target: region + 0xc000 + next() % 0x8000,
                        next: pc + bytes,
                    },
                    6 | 7 => BlockEnd::Indirect { pc: last },
                    8 => BlockEnd::Call {
                        pc: last,
                        next: pc + bytes,
                    },
                    9 => BlockEnd::IndirectCall {
                        pc: last,
                        next: pc + bytes,
                    },
                    10 | 11 => BlockEnd::Return { pc: last },
                    12 => BlockEnd::String { pc: last },
                    _ if next() % 4 == 0 => BlockEnd::Halt,
                    _ => BlockEnd::Other,
                };
                // A block at its string instruction is that one instruction.
                let (bytes, end) = match ends[vcpu] {
                    BlockEnd::String { pc: at } if at == pc => (2, ends[vcpu]),
                    _ => (bytes, end),
                };
                if let BlockEnd::Call { next, .. } | BlockEnd::IndirectCall { next, .. } = end {
                    calls[vcpu].push(next);
                }
                if let BlockEnd::String { pc: at } = end {
                    if at != pc || ends[vcpu] != end {
                        strings[vcpu] =
                            (0x10_0000 + next() % 0x4_0000, 0x10_0000 + next() % 0x4_0000);
                    }
                }
                ends[vcpu] = end;
                let range = lines(pc, bytes);
                let list: Vec<u64> = range.clone().collect();
                fast.block(vcpu, pc, mode, bytes / 3, range, end);
                slow.block(vcpu, pc, mode, bytes / 3, &list, end);
            } else if string && config.string_bytes_per_cycle > 0 {
                // An element: mostly forward, now and then backward, of
                // 1, 2, 4 or 8 bytes; a move loads it first.
                let size: u64 = 1 << (next() % 4);
                let step = if next() % 8 == 0 {
                    size.wrapping_neg()
                } else {
                    size
                };
                let (from, to) = strings[vcpu];
                if next() % 2 == 0 {
                    fast.string_data(vcpu, from, size, false, translate);
                    slow.string_data(vcpu, from, size, false, translate);
                }
                fast.string_data(vcpu, to, size, true, translate);
                slow.string_data(vcpu, to, size, true, translate);
                strings[vcpu] = (from.wrapping_add(step), to.wrapping_add(step));
            } else {
                let address = match next() % 14 {
                    // A few hot lines every vCPU reads and writes.
                    0..=5 => 0x1_0000 + next() % 0x200,
                    6..=8 => next() % 0x1_0000,
                    // Wide enough for the ownership table's slots to collide.
                    9 => next() % 0x40_0000,
                    // A run of one stride, forward or back, now and then
                    // starting again elsewhere (near the hot lines too).
                    _ => {
                        let (at, stride) = &mut runs[vcpu];
                        if next() % 64 == 0 {
                            *at = 0x8000 + next() % 0x2_0000;
                            *stride = 64 * (1 + (next() % 3) as i64);
                            if next() % 2 == 0 {
                                *stride = -*stride;
                            }
                        }
                        *at = at.wrapping_add_signed(*stride);
                        *at
                    }
                };
                let size = 1 << (next() % 5);
                let store = next() % 5 < 2;
                // Data by virtual address meets the instructions' lines.
                if next() % 2 == 0 {
                    fast.data(vcpu, address, size, store);
                    slow.data(vcpu, address, size, store, 0);
                } else {
                    fast.data_virtual(vcpu, address, size, store);
                    slow.data(vcpu, address, size, store, VIRTUAL);
                }
            }
            assert_eq!(fast.counts(), slow.counts());
        }
        let [user, kernel] = fast.counts();
        assert!(user.l1i_misses > 0 && kernel.l2_misses > 0 && user.llc_misses > 0);
        assert!(user.conditional_branches > 0 && kernel.indirect_mispredicts > 0);
        assert!(user.indirect_branches > user.indirect_mispredicts);
        assert_eq!(vcpus > 1, kernel.coherence_misses > 0);
        assert_eq!(vcpus > 1, user.rfo_misses > 0);
        assert_eq!(
            config.prefetch_streams > 0,
            user.l2_prefetches + kernel.l2_prefetches > 0
        );
        let strings_apart = config.string_bytes_per_cycle > 0;
        assert_eq!(strings_apart, user.string_bytes > 0);
        assert_eq!(
            strings_apart,
            kernel.string_iterations > kernel.string_instructions
        );
    }

    /// Runs blocks `(pc, end)` one after the other on one vCPU, in the
    /// mode their address is in, through the model and the
    /// straightforward one: both models' counts, user and kernel.
    fn both_run(config: Config, stream: &[(u64, BlockEnd)]) -> ([Counts; 2], [Counts; 2]) {
        let mut fast = Model::new(config.clone(), 1).unwrap();
        let mut slow = reference::Model::new(config, 1).unwrap();
        for &(pc, end) in stream {
            let mode = if pc >= 0xffff_8000_0000_0000 {
                Mode::Kernel
            } else {
                Mode::User
            };
            fast.block(0, pc, mode, 1, 0..0, end);
            slow.block(0, pc, mode, 1, &[], end);
        }
        (fast.counts(), slow.counts())
    }

    /// (branches, mispredicts) of the indirect branches and returns.
    fn indirect(c: &Counts) -> (u64, u64) {
        (c.indirect_branches, c.indirect_mispredicts)
    }

    /// Branch streams with their counts worked out by hand, for both
    /// models.
    #[test]
    fn hand_worked_branch_streams_count_what_was_worked_out() {
        let with = |rsb_depth, skip_entries| Config {
            rsb_depth,
            skip_entries,
            ..Config::default()
        };
        // A ladder of calls six deep, returned from, twice, with a return
        // stack of four: function k at f(k) calls f(k + 1) at f(k) + 0x10
        // and returns at f(k) + 0x20; the return address is f(k) + 0x15.
        let f = |k: u64| 0x10_000 + 0x100 * k;
        let mut ladder = Vec::new();
        for _ in 0..2 {
            for k in 0..6 {
                let call = BlockEnd::Call {
                    pc: f(k) + 0x10,
                    next: f(k) + 0x15,
                };
                ladder.push((f(k), call));
            }
            ladder.push((f(6), BlockEnd::Return { pc: f(6) + 0x20 }));
            for k in (1..6).rev() {
                ladder.push((f(k) + 0x15, BlockEnd::Return { pc: f(k) + 0x20 }));
            }
            ladder.push((f(0) + 0x15, BlockEnd::Other));
        }
        // Each round: the four newest return addresses predict the first
        // four returns, the last two find the stack empty.
        let (fast, slow) = both_run(with(4, 1), &ladder);
        assert_eq!(fast, slow);
        assert_eq!(indirect(&fast[0]), (12, 4));
        // Deep enough: none.
        let (fast, slow) = both_run(with(8, 1), &ladder);
        assert_eq!(fast, slow);
        assert_eq!(indirect(&fast[0]), (12, 0));
        // Through the BTB: six returns at six addresses, each first seen
        // in the first round, the same target in the second.
        let (fast, slow) = both_run(with(0, 1), &ladder);
        assert_eq!(fast, slow);
        assert_eq!(indirect(&fast[0]), (12, 6));

        // One function called from two sites in turn: its return goes back
        // to each site in turn.
        let mut sites = Vec::new();
        for _ in 0..2 {
            for site in [0x30_000, 0x40_000] {
                let call = BlockEnd::Call {
                    pc: site + 0x10,
                    next: site + 0x15,
                };
                sites.push((site, call));
                sites.push((0x20_000, BlockEnd::Return { pc: 0x20_010 }));
                sites.push((site + 0x15, BlockEnd::Other));
            }
        }
        let (fast, slow) = both_run(with(16, 1), &sites);
        assert_eq!(fast, slow);
        assert_eq!(indirect(&fast[0]), (4, 0));
        // The BTB predicts the other site every time.
        let (fast, slow) = both_run(with(0, 1), &sites);
        assert_eq!(fast, slow);
        assert_eq!(indirect(&fast[0]), (4, 4));

        // Interrupts: a user block and the kernel entry e after it (e is
        // learnt); a kernel indirect jump at k(0x10) to k(0x1000), then
        // interrupted before its target (the next block is e, no change of
        // mode), the handler returning to the target, then the jump to
        // its target again. A user indirect jump interrupted (a change of
        // mode). Then a return interrupted before its target (it pops),
        // and the return after it.
        let k = |offset: u64| 0xffff_ffff_8100_0000 + offset;
        let e = 0xffff_ffff_8180_0000;
        let jump = BlockEnd::Indirect { pc: k(0x10) };
        let interrupts = [
            (0x1000, BlockEnd::Other),
            (e, BlockEnd::Other),
            (k(0), jump),
            (k(0x1000), BlockEnd::Other),
            (k(0), jump),
            (e, BlockEnd::Other),
            (k(0x2000), BlockEnd::Other),
            (k(0x1000), BlockEnd::Other),
            (k(0), jump),
            (k(0x1000), BlockEnd::Other),
            (0x2000, BlockEnd::Indirect { pc: 0x2018 }),
            (e, BlockEnd::Other),
            (0x3000, BlockEnd::Other),
            (
                k(0x3000),
                BlockEnd::Call {
                    pc: k(0x3000),
                    next: k(0x3005),
                },
            ),
            (
                k(0x3100),
                BlockEnd::Call {
                    pc: k(0x3100),
                    next: k(0x3105),
                },
            ),
            (k(0x4000), BlockEnd::Return { pc: k(0x4010) }),
            (e, BlockEnd::Other),
            (k(0x3105), BlockEnd::Return { pc: k(0x3110) }),
            (k(0x3005), BlockEnd::Other),
        ];
        // Skipped: the first jump (a miss), the third (a hit: the BTB kept
        // the target), the return after the interrupted one (predicted by
        // the entry the interrupted one left).
        let (fast, slow) = both_run(with(16, 1), &interrupts);
        assert_eq!(fast, slow);
        assert_eq!(indirect(&fast[0]), (0, 0));
        assert_eq!(indirect(&fast[1]), (3, 1));
        // Resolved by the entries: the interrupted jump misses and trains
        // the BTB with e, so the third misses too; the user jump misses;
        // the interrupted return counts a miss, and the return after it
        // pops the outer call's address, its own target (a hit).
        let (fast, slow) = both_run(with(16, 0), &interrupts);
        assert_eq!(fast, slow);
        assert_eq!(indirect(&fast[0]), (1, 1));
        assert_eq!(indirect(&fast[1]), (5, 4));
        // As before these parts: the two returns through the BTB, both
        // first seen.
        let (fast, slow) = both_run(with(0, 0), &interrupts);
        assert_eq!(fast, slow);
        assert_eq!(indirect(&fast[1]), (5, 5));

        // A conditional branch at 0x1010 (its low two bits 0) with a
        // gshare of four counters, all weakly not taken: taken six times,
        // then not taken, then taken. History 0, 1, 3, 3, 3, 3 indexes
        // counters 0, 1, 3 (each missed once, then 3 is learnt), then 3
        // predicts taken for the not taken (a miss, history 2) and counter
        // 2, untouched, not taken for the taken (a miss). An interrupt
        // between resolves nothing.
        let (pc, target, next) = (0x1010, 0x1000, 0x1012);
        let branch = BlockEnd::Conditional { pc, target, next };
        let mut pattern = vec![(0x1000, branch)];
        pattern.extend([target; 6].map(|to| (to, branch)));
        pattern.push((e, BlockEnd::Other));
        pattern.push((0x1000, branch));
        pattern.extend([next, target].map(|to| (to, branch)));
        let gshare = Config {
            gshare_bits: 2,
            ..Config::default()
        };
        let (fast, slow) = both_run(gshare, &pattern);
        assert_eq!(fast, slow);
        let c = fast[0];
        assert_eq!((c.conditional_branches, c.conditional_mispredicts), (8, 5));
    }

    /// A `rep stosq` at 0x1008 of 256 bytes to 0x10000 (physical address
    /// = virtual) as QEMU runs it under icount: the block that ends in it
    /// (3 instructions, the first element), 31 one-instruction blocks of
    /// an element each, one that finds the count exhausted, then the next
    /// block. With `interrupt`, a kernel block comes after the 10th
    /// element. The model's and the straightforward one's counts, and the
    /// look-ups of physical addresses the model made.
    fn stosq(config: Config, interrupt: bool) -> ([Counts; 2], [Counts; 2], usize) {
        let mut fast = Model::new(config.clone(), 1).unwrap();
        let mut slow = reference::Model::new(config.clone(), 1).unwrap();
        let mut lookups = 0;
        let rep = BlockEnd::String { pc: 0x1008 };
        let mut block = |pc: u64, mode, n, end| {
            fast.block(0, pc, mode, n, 0..0, end);
            slow.block(0, pc, mode, n, &[], end);
        };
        block(0x1000, Mode::User, 3, rep);
        let mut store = |fast: &mut Model, slow: &mut reference::Model, i: u64| {
            let address = 0x10000 + 8 * i;
            if config.string_bytes_per_cycle == 0 {
                fast.data(0, address, 8, true);
                slow.data(0, address, 8, true, 0);
            } else {
                fast.string_data(0, address, 8, true, |a| {
                    lookups += 1;
                    Some(a)
                });
                slow.string_data(0, address, 8, true, Some);
            }
        };
        store(&mut fast, &mut slow, 0);
        for i in 1..32 {
            if interrupt && i == 10 {
                let kernel = 0xffff_ffff_8180_0000;
                fast.block(0, kernel, Mode::Kernel, 1, 0..0, BlockEnd::Other);
                slow.block(0, kernel, Mode::Kernel, 1, &[], BlockEnd::Other);
            }
            fast.block(0, 0x1008, Mode::User, 1, 0..0, rep);
            slow.block(0, 0x1008, Mode::User, 1, &[], rep);
            store(&mut fast, &mut slow, i);
        }
        fast.block(0, 0x1008, Mode::User, 1, 0..0, rep);
        slow.block(0, 0x1008, Mode::User, 1, &[], rep);
        fast.block(0, 0x100b, Mode::User, 1, 0..0, BlockEnd::Other);
        slow.block(0, 0x100b, Mode::User, 1, &[], BlockEnd::Other);
        (fast.counts(), slow.counts(), lookups)
    }

    #[test]
    fn a_string_costs_its_startup_and_its_bytes_and_claims_the_lines_it_goes_on_into() {
        let c = small();
        let (fast, slow, lookups) = stosq(c.clone(), false);
        assert_eq!(fast, slow);
        let user = fast[0];
        assert_eq!(user.instructions, 3 + 31 + 1 + 1);
        assert_eq!(user.string_iterations, 33);
        assert_eq!(user.string_instructions, 1);
        assert_eq!(user.string_bytes, 256);
        // Its first line is read (it might be the string's only one);
        // the string goes on forward into the other three: claimed.
        assert_eq!((user.l1d_misses, user.llc_misses), (1, 1));
        // One look-up per line.
        assert_eq!(lookups, 4);
        // The three other instructions, the startup, 256 bytes at 32 a
        // cycle, a line from memory.
        assert_eq!(
            user.estimated_cycles(&c),
            3 + c.string_startup_cycles + 256 / 32 + c.memory_cycles
        );
        // An interrupt in the middle: the instruction starts again.
        let (fast, slow, _) = stosq(c.clone(), true);
        assert_eq!(fast, slow);
        assert_eq!(fast[0].string_instructions, 2);
        assert_eq!(fast[0].string_iterations, 33);
        // As before: one instruction per element, every line read.
        let off = parts_off(c.clone());
        let (fast, slow, _) = stosq(off.clone(), false);
        assert_eq!(fast, slow);
        let user = fast[0];
        assert_eq!(user.instructions, 36);
        assert_eq!((user.string_iterations, user.string_bytes), (0, 0));
        assert_eq!(user.l1d_misses, 4);
        assert_eq!(user.estimated_cycles(&off), 36 + 4 * off.memory_cycles);
        // Non-temporal: nothing is read or filled, so a load after it misses.
        let nontemporal = Config {
            string_nontemporal: 1,
            ..c
        };
        let (fast, slow, _) = stosq(nontemporal.clone(), false);
        assert_eq!(fast, slow);
        assert_eq!(fast[0].l1d_misses, 0);
        let mut m = Model::new(nontemporal, 1).unwrap();
        m.block(
            0,
            0x1000,
            Mode::User,
            1,
            0..0,
            BlockEnd::String { pc: 0x1000 },
        );
        m.string_data(0, 0x10000, 8, true, Some);
        m.data(0, 0x10000, 8, false);
        assert_eq!(user_of(&m).l1d_misses, 1);
    }

    fn user_of(m: &Model) -> Counts {
        m.counts()[Mode::User as usize]
    }

    /// A `rep movsb` copying 4 KiB between two lines of one set, on a
    /// direct-mapped L1d, so that each element's load and store evict each
    /// other: every element counts as it does when each is looked up
    /// anew, though only a new line is looked up.
    #[test]
    fn a_string_looks_up_each_line_once_and_counts_as_if_every_element_were_looked_up() {
        let config = Config {
            l1d: Geometry {
                bytes: 1 << 10,
                ways: 1,
            },
            ..small()
        };
        for vcpus in [1, 2] {
            let mut fast = Model::new(config.clone(), vcpus).unwrap();
            let mut slow = reference::Model::new(config.clone(), vcpus).unwrap();
            let rep = BlockEnd::String { pc: 0x1000 };
            let mut lookups = 0;
            for i in 0..4096u64 {
                // The other vCPU reads the destination now and then.
                if vcpus == 2 && i % 100 == 0 {
                    fast.data(1, 0x20000 + i, 1, false);
                    slow.data(1, 0x20000 + i, 1, false, 0);
                }
                fast.block(0, 0x1000, Mode::User, 1, 0..0, rep);
                slow.block(0, 0x1000, Mode::User, 1, &[], rep);
                for (address, store) in [(0x10000 + i, false), (0x20000 + i, true)] {
                    fast.string_data(0, address, 1, store, |a| {
                        lookups += 1;
                        Some(a)
                    });
                    slow.string_data(0, address, 1, store, Some);
                }
                assert_eq!(fast.counts(), slow.counts());
            }
            assert_eq!(lookups, 2 * 4096 / 64);
            let user = user_of(&fast);
            // Each load misses (the store before it evicted its line).
            assert!(user.l1d_misses >= 4096, "{user:?}");
            assert_eq!(vcpus > 1, user.rfo_misses > 0);
        }
    }

    /// `small` with a prefetcher of `streams` streams and the last level
    /// filled on the way or by the L2s' evictions.
    fn memory_side(streams: u32, llc_victim: bool) -> Config {
        Config {
            prefetch_streams: streams,
            llc_victim,
            ..small()
        }
    }

    /// Accesses a stream takes to be confirmed: its first, then two equal
    /// strides.
    const CONFIRMING: u64 = 3;

    /// Reads 8 bytes at each of `addresses`: the user counts, the lines and
    /// the 4 KiB pages they touched.
    fn reads(m: &mut Model, addresses: impl Iterator<Item = u64>) -> (Counts, u64, u64) {
        let (mut lines, mut pages) = (Vec::new(), Vec::new());
        for a in addresses {
            m.data(0, a, 8, false);
            lines.push(a / LINE);
            pages.push(a >> 12);
        }
        lines.dedup();
        pages.dedup();
        (user(m), lines.len() as u64, pages.len() as u64)
    }

    #[test]
    fn a_sequential_sweep_misses_the_l2_only_until_each_pages_stream_is_confirmed() {
        // Twice the last level: without the prefetcher every line misses
        // every level.
        let bytes = 2 * small().llc.bytes;
        let sweep = || (0..bytes).step_by(8).map(|o| 0x100_0000 + o);
        let (without, lines, pages) = reads(&mut user_model(memory_side(0, false), 1), sweep());
        assert_eq!(without.l2_misses, lines);
        assert_eq!(without.llc_misses, lines);
        assert_eq!(without.l2_prefetches, 0);
        let (with, _, _) = reads(&mut user_model(memory_side(16, false), 1), sweep());
        // The L1d is not prefetched into; each page's first lines train its
        // stream, and every line after them is in the L2 when asked for.
        assert_eq!(with.l1d_misses, lines);
        assert_eq!(with.l2_misses, CONFIRMING * pages);
        assert_eq!(with.l2_prefetches, lines - with.l2_misses);
        assert_eq!(with.llc_misses, with.l2_misses);
        // Prefetching costs nothing: the hits it makes save their misses.
        let c = small();
        assert!(with.estimated_cycles(&c) < without.estimated_cycles(&c));
    }

    #[test]
    fn a_strided_sweep_either_way_is_prefetched_along_its_stride() {
        let bytes = 2 * small().llc.bytes;
        for stride in [3 * LINE as i64, -2 * LINE as i64] {
            // From the first line of the buffer up, or from its last down.
            let base = 0x100_0000;
            let start = if stride > 0 {
                base
            } else {
                base + bytes - stride.unsigned_abs()
            };
            let sweep = (0..bytes / stride.unsigned_abs())
                .map(|i| start.wrapping_add_signed(i as i64 * stride));
            let (c, lines, pages) = reads(&mut user_model(memory_side(16, false), 1), sweep);
            assert_eq!(c.l1d_misses, lines, "stride {stride}");
            assert_eq!(c.l2_misses, CONFIRMING * pages, "stride {stride}");
            // The last accesses prefetch lines past the sweep's end.
            let past = c.l2_prefetches - (lines - c.l2_misses);
            assert!(past <= PREFETCH_DEGREE as u64, "stride {stride}: {c:?}");
        }
    }

    #[test]
    fn random_accesses_are_almost_never_prefetched() {
        let mut x: u64 = 0x853c_49e6_748f_ea9b;
        let random = std::iter::repeat_with(move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % (64 << 20)
        });
        let accesses = 20_000;
        let (c, lines, _) = reads(
            &mut user_model(memory_side(16, false), 1),
            random.take(accesses),
        );
        assert!(lines > accesses as u64 * 9 / 10);
        assert!(c.l2_prefetches * 100 < accesses as u64, "{c:?}");
    }

    #[test]
    fn a_prefetch_takes_no_line_another_vcpu_holds() {
        let mut m = user_model(memory_side(16, false), 2);
        let base = 0x100_0000;
        // vCPU 1 holds the stream's fourth line.
        m.data(1, base + 3 * LINE, 8, false);
        for i in 0..CONFIRMING {
            m.data(0, base + i * LINE, 8, false);
        }
        let l2 = &m.cores[0].l2;
        let line = |i: u64| base / LINE + i;
        assert!(!l2.has_tag(line(CONFIRMING)));
        assert!(l2.holds(line(CONFIRMING + 1)));
        assert_eq!(m.vcpu_counts(0)[Mode::User as usize].l2_prefetches, 1);
        // vCPU 0 reads that line as it would have without a prefetcher.
        let before = m.vcpu_counts(0)[Mode::User as usize];
        m.data(0, base + CONFIRMING * LINE, 8, false);
        let read = m.vcpu_counts(0)[Mode::User as usize].since(&before);
        assert_eq!((read.l2_misses, read.coherence_misses), (1, 0));
    }

    #[test]
    fn a_victim_last_level_holds_what_the_l2_evicted() {
        let l2_lines = small().l2.bytes / LINE;
        for victim in [false, true] {
            let mut m = user_model(memory_side(0, victim), 1);
            let (data, code) = (0x100_0000, 0x40_0000);
            m.data(0, data, 8, false);
            m.block(0, code, Mode::User, 1, lines(code, 1), BlockEnd::Other);
            let (data, code) = (data / LINE, lines(code, 1).start);
            // Filled on the way, or not until the L2 gives the lines back.
            assert_eq!(m.llc.holds(data), !victim);
            assert_eq!(m.llc.holds(code), !victim);
            sweep(&mut m, 0, 0x200_0000, 2 * l2_lines * LINE, 1);
            assert!(!m.cores[0].l2.holds(data) && !m.cores[0].l2.holds(code));
            assert!(m.llc.holds(data) && m.llc.holds(code), "victim {victim}");
            // Served by the last level, which keeps the line.
            let before = user(&m);
            m.data(0, data * LINE, 8, false);
            let read = user(&m).since(&before);
            assert_eq!((read.l2_misses, read.llc_misses), (1, 0));
            assert!(m.llc.holds(data));
        }
    }

    #[test]
    fn a_victim_last_level_adds_the_l2s_capacity_to_its_own() {
        let c = small();
        let passes = 4;
        // Between the L2 and the last level: every pass after the first is
        // served by the last level, however it is filled.
        let between = 3 * c.l2.bytes;
        assert!(c.l2.bytes < between && between < c.llc.bytes);
        // As much as both: it fits only when the last level keeps what the
        // L2 does not (in each set, as each level's sets divide it evenly);
        // filled on the way, LRU loses every line before its turn comes
        // again.
        let both = c.l2.bytes + c.llc.bytes;
        for (bytes, victim, misses_per_pass) in [
            (between, false, 0),
            (between, true, 0),
            (both, false, 1),
            (both, true, 0),
        ] {
            let mut m = user_model(memory_side(0, victim), 1);
            sweep(&mut m, 0, 0x100_0000, bytes, passes);
            let u = user(&m);
            let lines = bytes / LINE;
            assert_eq!(
                u.l2_misses,
                lines * u64::from(passes),
                "{bytes} victim {victim}"
            );
            assert_eq!(
                u.llc_misses,
                lines + misses_per_pass * lines * u64::from(passes - 1),
                "{bytes} victim {victim}"
            );
        }
    }

    /// Two vCPUs each increment a counter (a load and a store) once per
    /// block of 5 instructions, `increments` times in turns of `turn`
    /// blocks, round-robin; the counters at `a` and `b`.
    fn counters(m: &mut Model, a: u64, b: u64, increments: u64, turn: u64) {
        let end = BlockEnd::Conditional {
            pc: 0x1010,
            target: 0x1000,
            next: 0x1012,
        };
        let lines = lines(0x1000, 0x12);
        let mut done = 0;
        while done < increments {
            for (v, address) in [(0, a), (1, b)] {
                for _ in done..(done + turn).min(increments) {
                    m.block(v, 0x1000, Mode::User, 5, lines.clone(), end);
                    m.data(v, address, 8, false);
                    m.data(v, address, 8, true);
                }
            }
            done += turn;
        }
        m.flush();
    }

    #[test]
    fn woven_turns_bounce_a_shared_line_at_every_write_and_apart_lines_never() {
        let woven = |a, b| {
            let mut m = user_model(small(), 2);
            m.set_weave(true);
            counters(&mut m, a, b, 10_000, 1000);
            user(&m)
        };
        let shared = woven(0x4000, 0x4008);
        let apart = woven(0x4000, 0x4040);
        // Side by side every increment finds the line taken by the other
        // vCPU's last store.
        assert!(shared.coherence_misses >= 19_000, "{shared:?}");
        assert!(shared.coherence_misses + shared.rfo_misses >= 2 * 19_000);
        assert_eq!((apart.coherence_misses, apart.rfo_misses), (0, 0));
        // Turn after turn, the line changes hands once a turn.
        let mut m = user_model(small(), 2);
        counters(&mut m, 0x4000, 0x4008, 10_000, 1000);
        let one_by_one = user(&m);
        assert!(one_by_one.coherence_misses <= 40, "{one_by_one:?}");
        // The same instructions and branches either way.
        assert_eq!(shared.instructions, one_by_one.instructions);
        assert_eq!(
            shared.conditional_mispredicts,
            one_by_one.conditional_mispredicts
        );
        let c = Config::default();
        assert!(shared.estimated_cycles(&c) > 10 * apart.estimated_cycles(&c));
    }

    #[test]
    fn a_long_turn_is_woven_with_the_others_long_turn_across_short_ones() {
        // As QEMU's turns often come: vCPU 0 long, vCPU 1 a few blocks,
        // vCPU 0 a few, vCPU 1 long; the long turns run side by side.
        let mut m = user_model(small(), 2);
        m.set_weave(true);
        let end = BlockEnd::Other;
        let (a, b) = (0x4000, 0x4008);
        for _ in 0..10 {
            for (v, address, blocks) in [(0, a, 1000), (1, b, 3), (0, a, 3), (1, b, 1000)] {
                for _ in 0..blocks {
                    m.block(v, 0x1000, Mode::User, 5, lines(0x1000, 0x10), end);
                    m.data(v, address, 8, false);
                    m.data(v, address, 8, true);
                }
            }
        }
        m.flush();
        let c = user(&m);
        assert!(c.coherence_misses > 19_000, "{c:?}");
    }

    #[test]
    fn a_vcpu_that_wakes_follows_what_the_vcpu_before_it_did() {
        let mut m = user_model(small(), 2);
        m.set_weave(true);
        let run = |m: &mut Model, v, end| {
            m.block(v, 0x1000, Mode::User, 5, lines(0x1000, 0x10), end);
        };
        // vCPU 1 reads the line, then sleeps; vCPU 0 goes on.
        run(&mut m, 1, BlockEnd::Other);
        m.data(1, 0x4000, 8, false);
        run(&mut m, 1, BlockEnd::Halt);
        run(&mut m, 0, BlockEnd::Other);
        // A new round, vCPU 0's alone so far (a marker's replay).
        m.flush();
        // A long turn of vCPU 0 that writes the line at its end, then
        // vCPU 1 wakes (say to the interrupt vCPU 0 sent) and reads it.
        for _ in 0..100 {
            run(&mut m, 0, BlockEnd::Other);
        }
        m.data(0, 0x4000, 8, true);
        run(&mut m, 1, BlockEnd::Other);
        m.data(1, 0x4000, 8, false);
        m.flush();
        // The read comes after the write, as it did: a coherence miss
        // (stamped from its turn's start it would have come first, a hit).
        let c = m.vcpu_counts(1)[Mode::User as usize];
        assert_eq!(c.coherence_misses, 1, "{c:?}");
    }

    #[test]
    fn a_weave_on_one_vcpu_or_off_changes_nothing() {
        let mut m = user_model(small(), 1);
        m.set_weave(true);
        assert!(!m.weaving());
        let mut m = user_model(small(), 2);
        m.set_weave(true);
        assert!(m.weaving());
        m.data(0, 0x4000, 8, true);
        assert_eq!(user(&m).l1d_misses, 0, "held back");
        m.set_weave(false);
        assert_eq!(user(&m).l1d_misses, 1, "replayed when the weave stops");
        m.data(1, 0x4000, 8, true);
        assert_eq!(user(&m).coherence_misses, 0);
        assert_eq!(user(&m).rfo_misses, 1);
    }

    /// Random turns of random events on 1 to 4 vCPUs (and a vCPU index
    /// beyond them), now and then a flush in a turn (as a marker makes):
    /// the woven model counts what the model taking every event at once
    /// counts when given each round's events sorted by their vCPU's
    /// instructions in the round, the lower vCPU first where equal.
    #[test]
    fn the_weave_counts_what_the_rounds_merged_by_hand_count() {
        // As the model was, and with the prefetcher and the victim last
        // level, which work at the replay.
        let memory_side = Config {
            prefetch_streams: 4,
            llc_victim: true,
            ..small()
        };
        for (vcpus, config) in (1..=4).flat_map(|v| [(v, small()), (v, memory_side.clone())]) {
            let mut woven = Model::new(config.clone(), vcpus).unwrap();
            woven.set_weave(true);
            let prefetching = config.prefetch_streams > 0;
            let mut by_hand = Model::new(config, vcpus).unwrap();
            let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ vcpus as u64;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            // (stamp, vCPU, order of arrival, event): the round so far.
            #[derive(Clone)]
            enum Op {
                Block(u64, Mode, u64, Range<u64>, BlockEnd),
                Data(u64, u64, bool),
                String(u64, u64, bool),
            }
            let mut round: Vec<(u64, usize, usize, Op)> = Vec::new();
            let mut taken = vec![false; vcpus];
            let mut clock = vec![0u64; vcpus];
            let mut asleep = vec![false; vcpus];
            let mut now = vec![0u64; vcpus];
            let mut ends = vec![BlockEnd::Other; vcpus];
            let mut seq = 0;
            let replay = |round: &mut Vec<(u64, usize, usize, Op)>, m: &mut Model| {
                round.sort_by_key(|(t, v, s, _)| (*t, *v, *s));
                for (_, v, _, op) in round.drain(..) {
                    match op {
                        Op::Block(pc, mode, n, lines, end) => m.block(v, pc, mode, n, lines, end),
                        Op::Data(a, size, store) => m.data(v, a, size, store),
                        Op::String(a, size, store) => {
                            m.string_data(v, a, size, store, translate);
                        }
                    }
                }
            };
            let mut current = usize::MAX;
            for _ in 0..2000 {
                // A turn: a vCPU (now and then one beyond those announced,
                // which shares the last core), sometimes the same again;
                // short and long ones, so that rounds close both even and
                // after uneven turns have evened out.
                let asked = (next() % (vcpus as u64 + 1)) as usize;
                let v = asked.min(vcpus - 1);
                let events = if next() % 4 == 0 {
                    next() % 600
                } else {
                    next() % 60
                };
                for _ in 0..events {
                    // The model sees a turn begin with its first event.
                    if v != current {
                        let ran = || {
                            (0..vcpus)
                                .filter(|&u| taken[u] && !asleep[u])
                                .map(|u| clock[u])
                        };
                        let (most, least) = (ran().max().unwrap_or(0), ran().min().unwrap_or(0));
                        if taken[v] && most - least <= (most / 4).max(SLACK) {
                            replay(&mut round, &mut by_hand);
                            taken.iter_mut().for_each(|t| *t = false);
                            clock.iter_mut().for_each(|c| *c = 0);
                        }
                        // A vCPU that slept woke during the last one's turn.
                        if asleep[v] {
                            asleep[v] = false;
                            if current < vcpus {
                                clock[v] = clock[v].max(clock[current]);
                            }
                        }
                        taken[v] = true;
                        now[v] = clock[v];
                        current = v;
                    }
                    let op = if next() % 10 < 3 {
                        let pc = match (ends[v], next() % 3) {
                            (BlockEnd::Conditional { target, .. }, 0) => target,
                            (BlockEnd::Conditional { next, .. }, 1) => next,
                            _ => 0xc000 + next() % 0x8000,
                        };
                        let bytes = 1 + next() % 200;
                        let end = match next() % 3 {
                            0 => BlockEnd::Conditional {
                                pc: pc + bytes - 2,
                                target: 0xc000 + next() % 0x8000,
                                next: pc + bytes,
                            },
                            1 => BlockEnd::Indirect { pc: pc + bytes - 1 },
                            2 if next() % 2 == 0 => BlockEnd::String { pc: pc + bytes - 1 },
                            // Now and then the vCPU goes to sleep.
                            _ if next() % 3 == 0 => BlockEnd::Halt,
                            _ => BlockEnd::Other,
                        };
                        ends[v] = end;
                        if end == BlockEnd::Halt {
                            asleep[v] = true;
                        }
                        let mode = if next() % 2 == 0 {
                            Mode::User
                        } else {
                            Mode::Kernel
                        };
                        let n = 1 + bytes / 3;
                        now[v] = clock[v];
                        clock[v] += n;
                        woven.block(asked, pc, mode, n, lines(pc, bytes), end);
                        Op::Block(pc, mode, n, lines(pc, bytes), end)
                    } else if matches!(ends[v], BlockEnd::String { .. }) && next() % 2 == 0 {
                        // A string element, at a hot line now and then.
                        let address = 0x1_0000 + next() % 0x400;
                        let size = 1 << (next() % 4);
                        let store = next() % 2 == 0;
                        woven.string_data(asked, address, size, store, translate);
                        Op::String(address, size, store)
                    } else {
                        let address = match next() % 10 {
                            0..=5 => 0x1_0000 + next() % 0x200,
                            6..=8 => next() % 0x1_0000,
                            _ => next() % 0x40_0000,
                        };
                        let size = 1 << (next() % 5);
                        let store = next() % 5 < 2;
                        woven.data(asked, address, size, store);
                        Op::Data(address, size, store)
                    };
                    round.push((now[v], v, seq, op));
                    seq += 1;
                    // A marker: by the vCPU running, after an event of its.
                    if next() % 200 == 0 {
                        woven.flush();
                        replay(&mut round, &mut by_hand);
                        taken.iter_mut().for_each(|t| *t = false);
                        clock.iter_mut().for_each(|c| *c = 0);
                        taken[v] = true;
                        asleep[v] = false;
                        now[v] = 0;
                        assert_eq!(woven.counts(), by_hand.counts());
                    }
                }
            }
            woven.flush();
            replay(&mut round, &mut by_hand);
            assert_eq!(woven.counts(), by_hand.counts());
            let [user, kernel] = woven.counts();
            assert!(user.l1d_misses > 0 && kernel.l1i_misses > 0);
            assert_eq!(
                vcpus > 1,
                user.coherence_misses + kernel.coherence_misses > 0
            );
            assert_eq!(prefetching, user.l2_prefetches + kernel.l2_prefetches > 0);
        }
    }

    /// Runs a loop whose conditional branch at `pc` goes by `outcomes`.
    fn branches(m: &mut Model, outcomes: impl Iterator<Item = bool>) {
        let (pc, target, next) = (0x1010, 0x1000, 0x1012);
        let end = BlockEnd::Conditional { pc, target, next };
        m.block(0, 0x1000, Mode::User, 4, 0..0, end);
        for taken in outcomes {
            let to = if taken { target } else { next };
            m.block(0, to, Mode::User, 4, 0..0, end);
        }
    }

    #[test]
    fn an_always_taken_branch_is_learnt_and_a_random_one_is_not() {
        let mut m = user_model(Config::default(), 1);
        branches(&mut m, std::iter::repeat_n(true, 1000));
        let c = user(&m);
        assert_eq!(c.conditional_branches, 1000);
        // Warm-up only: one counter per history value until the history is all ones.
        assert!(c.conditional_mispredicts <= 20, "{c:?}");

        // A fixed xorshift stream: deterministic, but without a pattern.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let random = std::iter::from_fn(move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Some(x & 1 == 1)
        });
        let mut m = user_model(Config::default(), 1);
        branches(&mut m, random.take(10_000));
        let c = user(&m);
        let rate = c.conditional_mispredicts as f64 / c.conditional_branches as f64;
        assert!((0.4..0.6).contains(&rate), "{rate}");
    }

    #[test]
    fn a_short_period_is_learnt_through_the_global_history() {
        let mut m = user_model(Config::default(), 1);
        let period = [true, true, false, true, false];
        branches(&mut m, period.iter().copied().cycle().take(10_000));
        let c = user(&m);
        assert!(c.conditional_mispredicts < 100, "{c:?}");
    }

    #[test]
    fn each_vcpu_predicts_with_its_own_tables() {
        // One indirect branch address, a different target on each vCPU,
        // the vCPUs alternating: each core's BTB learns its own target, so
        // only the first on each mispredicts.
        let mut m = user_model(Config::default(), 2);
        let end = BlockEnd::Indirect { pc: 0x2000 };
        for _ in 0..50 {
            for (v, to) in [(0, 0x3000), (1, 0x4000)] {
                m.block(v, 0x1ff0, Mode::User, 3, 0..0, end);
                m.block(v, to, Mode::User, 3, 0..0, BlockEnd::Other);
            }
        }
        assert_eq!(user(&m).indirect_branches, 100);
        assert_eq!(user(&m).indirect_mispredicts, 2);

        // vCPU 0's always-taken branch mispredicts as often whether or not
        // vCPU 1 runs a random branch at the same address in between.
        let (pc, target, next) = (0x1010, 0x1000, 0x1012);
        let end = BlockEnd::Conditional { pc, target, next };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut alone = user_model(Config::default(), 2);
        let mut beside = user_model(Config::default(), 2);
        for _ in 0..1000 {
            for m in [&mut alone, &mut beside] {
                m.block(0, target, Mode::User, 4, 0..0, end);
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let to = if x & 1 == 1 { target } else { next };
            beside.block(1, to, Mode::User, 4, 0..0, end);
        }
        let own = |m: &Model| m.vcpu_counts(0)[Mode::User as usize];
        assert_eq!(own(&alone), own(&beside));
        assert!(own(&alone).conditional_mispredicts <= 20);
        assert!(beside.vcpu_counts(1)[Mode::User as usize].conditional_mispredicts > 300);
    }

    #[test]
    fn an_interrupt_between_blocks_resolves_no_branch() {
        let mut m = user_model(Config::default(), 1);
        let end = BlockEnd::Conditional {
            pc: 0x1010,
            target: 0x1000,
            next: 0x1012,
        };
        m.block(0, 0x1000, Mode::User, 4, 0..0, end);
        m.block(
            0,
            0xffff_ffff_8100_0000,
            Mode::Kernel,
            4,
            0..0,
            BlockEnd::Other,
        );
        assert_eq!(m.counts()[0].conditional_branches, 0);
        assert_eq!(m.counts()[1].conditional_branches, 0);
    }

    #[test]
    fn an_indirect_branch_is_predicted_by_its_last_target() {
        let mut m = user_model(Config::default(), 1);
        let end = BlockEnd::Indirect { pc: 0x2000 };
        for to in [0x3000, 0x3000, 0x3000, 0x4000, 0x3000, 0x3000] {
            m.block(0, 0x1ff0, Mode::User, 3, 0..0, end);
            m.block(0, to, Mode::User, 3, 0..0, BlockEnd::Other);
        }
        let c = user(&m);
        assert_eq!(c.indirect_branches, 6);
        // The first, the change to 0x4000 and the change back.
        assert_eq!(c.indirect_mispredicts, 3);
    }

    #[test]
    fn instruction_fetches_miss_per_line_and_counts_go_to_the_blocks_mode() {
        let mut m = Model::new(small(), 1).unwrap();
        let lines = lines(0x1000, 0x100);
        assert_eq!(lines, (0x40 | VIRTUAL)..(0x44 | VIRTUAL));
        assert_eq!(super::lines(0x103f, 2), (0x40 | VIRTUAL)..(0x42 | VIRTUAL));
        assert!(super::lines(0x1000, 0).is_empty());
        m.block(0, 0x1000, Mode::Kernel, 64, lines.clone(), BlockEnd::Other);
        m.block(0, 0x1000, Mode::Kernel, 64, lines, BlockEnd::Other);
        m.data(0, 0x9000, 8, false);
        let [u, k] = m.counts();
        assert_eq!(u, Counts::default());
        assert_eq!(k.instructions, 128);
        assert_eq!(k.l1i_misses, 4);
        assert_eq!(k.l1d_misses, 1);
        assert_eq!(k.l2_misses, 5);
    }

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

    #[test]
    fn branches_are_told_from_their_bytes() {
        // jne rel8 (+0x10), at 0x100, two bytes.
        assert_eq!(
            classify(0x100, &[0x75, 0x10]),
            BlockEnd::Conditional {
                pc: 0x100,
                target: 0x112,
                next: 0x102
            }
        );
        // je rel32 backwards (-0x20), six bytes.
        assert_eq!(
            classify(0x100, &[0x0f, 0x84, 0xe0, 0xff, 0xff, 0xff]),
            BlockEnd::Conditional {
                pc: 0x100,
                target: 0xe6,
                next: 0x106
            }
        );
        assert_eq!(classify(0x100, &[0xc3]), BlockEnd::Return { pc: 0x100 });
        assert_eq!(
            classify(0x100, &[0xc2, 0x08, 0x00]),
            BlockEnd::Return { pc: 0x100 }
        );
        // rep ret
        assert_eq!(
            classify(0x100, &[0xf3, 0xc3]),
            BlockEnd::Return { pc: 0x100 }
        );
        // call *%rax, call *0x10(%rax) (ff /2), lcall *(%rax) (ff /3)
        for bytes in [&[0xff, 0xd0][..], &[0xff, 0x50, 0x10], &[0xff, 0x18]] {
            let next = 0x100 + bytes.len() as u64;
            assert_eq!(
                classify(0x100, bytes),
                BlockEnd::IndirectCall { pc: 0x100, next }
            );
        }
        // call rel32
        assert_eq!(
            classify(0x100, &[0xe8, 0, 0, 0, 0]),
            BlockEnd::Call {
                pc: 0x100,
                next: 0x105
            }
        );
        // jmp *0x8(%rbx), with a REX prefix: notrack jmp *%r11
        assert_eq!(
            classify(0x100, &[0xff, 0x63, 0x08]),
            BlockEnd::Indirect { pc: 0x100 }
        );
        assert_eq!(
            classify(0x100, &[0x3e, 0x41, 0xff, 0xe3]),
            BlockEnd::Indirect { pc: 0x100 }
        );
        // hlt, mwait: the vCPU sleeps.
        assert_eq!(classify(0x100, &[0xf4]), BlockEnd::Halt);
        assert_eq!(classify(0x100, &[0x0f, 0x01, 0xc9]), BlockEnd::Halt);
        // jmp rel32, inc (%rax): nothing to predict.
        assert_eq!(classify(0x100, &[0xe9, 0, 0, 0, 0]), BlockEnd::Other);
        assert_eq!(classify(0x100, &[0xff, 0x00]), BlockEnd::Other);
        // rep movsb, rep movsq, rep stosw, repne stosl: string instructions;
        // movsb and lodsb without a prefix, rep lodsb: not.
        for bytes in [
            &[0xf3, 0xa4][..],
            &[0xf3, 0x48, 0xa5],
            &[0x66, 0xf3, 0xab],
            &[0xf2, 0xab],
        ] {
            assert_eq!(classify(0x100, bytes), BlockEnd::String { pc: 0x100 });
        }
        for bytes in [&[0xa4][..], &[0x48, 0xa5], &[0xf3, 0xac]] {
            assert_eq!(classify(0x100, bytes), BlockEnd::Other);
        }
    }

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
