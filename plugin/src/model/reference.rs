//! The model as it was first written, straightforwardly: a store scans
//! every other vCPU's caches, a block's lines come as a list, the
//! prefetcher's streams are a list stamped with their last use. The tests
//! hold the model against it event by event, so that making the model
//! faster cannot change a count.
//!
//! The branch predictors and string instructions are written apart from
//! the model's, from their description rather than from its code, slowly
//! and plainly: tables are maps with explicit modular indices, the return
//! stack buffer a `Vec` whose oldest entry is removed when a call finds it
//! full, and every string access asks for its physical address.

use super::{
    BlockEnd, Config, Counts, Geometry, Lookup, Mode, EMPTY, ENTRY_POINTS, INVALID, LINE,
    LINE_BITS, PAGE_LINES_BITS, PREFETCH_DEGREE, VIRTUAL,
};
use std::collections::{HashMap, HashSet};

/// A set-associative cache of line numbers with true LRU: each set's ways
/// are kept most recently used first.
#[derive(Debug, Clone)]
pub struct Cache {
    ways: usize,
    set_mask: u64,
    tags: Vec<u64>,
}

impl Cache {
    pub fn new(g: Geometry) -> Result<Cache, String> {
        let sets = g.sets()?;
        Ok(Cache {
            ways: g.ways as usize,
            set_mask: sets - 1,
            tags: vec![EMPTY; (sets * u64::from(g.ways)) as usize],
        })
    }

    fn set(&mut self, line: u64) -> &mut [u64] {
        let start = (line & self.set_mask) as usize * self.ways;
        &mut self.tags[start..start + self.ways]
    }

    /// Looks `line` up and makes it the set's most recent, filling it (in
    /// place of the least recent way) when it was missing or invalid.
    pub fn access(&mut self, line: u64) -> Lookup {
        self.access_evicting(line).0
    }

    /// [`Cache::access`], and the valid line it evicted, if any.
    pub fn access_evicting(&mut self, line: u64) -> (Lookup, Option<u64>) {
        let set = self.set(line);
        let (found, at) = match set.iter().position(|&t| t & !INVALID == line) {
            Some(i) if set[i] & INVALID == 0 => (Lookup::Hit, i),
            Some(i) => (Lookup::Invalidated, i),
            None => (Lookup::Miss, set.len() - 1),
        };
        let gone = set[at];
        set[..=at].rotate_right(1);
        set[0] = line;
        let evicted = found == Lookup::Miss && gone != EMPTY && gone & INVALID == 0;
        (found, evicted.then_some(gone))
    }

    /// Whether `line` is held valid.
    pub fn holds(&self, line: u64) -> bool {
        let start = (line & self.set_mask) as usize * self.ways;
        self.tags[start..start + self.ways].contains(&line)
    }

    /// Whether `line` has a tag, valid or invalidated.
    pub fn has_tag(&self, line: u64) -> bool {
        self.holds(line) || self.holds(line | INVALID)
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
    /// Each core's own predictors: a 2-bit counter per gshare index (1,
    /// weakly not taken, where none yet), the global history of
    /// outcomes, the last target per BTB index, and the return addresses
    /// of the calls not yet returned from, most recent last.
    gshare: HashMap<u64, u8>,
    history: u64,
    btb: HashMap<u64, u64>,
    return_stack: Vec<u64>,
    /// The running string instruction's last store's end.
    string_next_store: Option<u64>,
    counts: [Counts; 2],
    /// The prefetcher's streams: (page, last line, stride, last use).
    streams: Vec<(u64, u64, i64, u64)>,
    uses: u64,
}

/// The whole machine's model.
#[derive(Debug, Clone)]
pub struct Model {
    pub config: Config,
    cores: Vec<Core>,
    llc: Cache,
    /// The first kernel block after a user block, of any vCPU.
    kernel_entries: HashSet<u64>,
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
            gshare: HashMap::new(),
            history: 0,
            btb: HashMap::new(),
            return_stack: Vec::new(),
            string_next_store: None,
            counts: [Counts::default(); 2],
            streams: Vec::new(),
            uses: 0,
        };
        Ok(Model {
            cores: vec![core; vcpus.max(1)],
            llc: Cache::new(config.llc)?,
            kernel_entries: HashSet::new(),
            config,
        })
    }

    fn core(&mut self, vcpu: usize) -> &mut Core {
        // A vCPU index beyond those announced (hot-plug) shares the last
        // core rather than failing the guest.
        let last = self.cores.len() - 1;
        &mut self.cores[vcpu.min(last)]
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
    /// whose bytes span the lines `lines` (line numbers, in order), ending
    /// as `end` says.
    pub fn block(
        &mut self,
        vcpu: usize,
        pc: u64,
        mode: Mode,
        instructions: u64,
        lines: &[u64],
        end: BlockEnd,
    ) {
        let core = self.core(vcpu);
        let (branch_mode, branch) = (core.mode, core.pending);
        if self.config.skip_entries == 1
            && branch_mode == Mode::User
            && mode == Mode::Kernel
            && self.kernel_entries.len() < ENTRY_POINTS
        {
            self.kernel_entries.insert(pc);
        }
        self.resolve_branch(vcpu, branch, branch_mode, pc, mode);
        let strings_apart = self.config.string_bytes_per_cycle > 0;
        let core = self.core(vcpu);
        core.mode = mode;
        core.pending = end;
        core.counts[mode as usize].instructions += instructions;
        if let (BlockEnd::String { pc: at }, true) = (end, strings_apart) {
            // Every execution is one element (or the last, which finds
            // the count exhausted); the same instruction goes on when the
            // block before was this same one-instruction block.
            core.counts[mode as usize].string_iterations += 1;
            let goes_on = at == pc && branch == BlockEnd::String { pc };
            if !goes_on {
                core.counts[mode as usize].string_instructions += 1;
                core.string_next_store = None;
            }
        }
        for &line in lines {
            self.fetch(vcpu, line);
        }
    }

    fn fetch(&mut self, vcpu: usize, line: u64) {
        let core = self.core(vcpu);
        let mode = core.mode as usize;
        if core.l1i.access(line) == Lookup::Hit {
            return;
        }
        core.counts[mode].l1i_misses += 1;
        let (l2, evicted) = self.core(vcpu).l2.access_evicting(line);
        if l2 != Lookup::Hit {
            self.core(vcpu).counts[mode].l2_misses += 1;
            if !self.llc_hit(line) {
                self.core(vcpu).counts[mode].llc_misses += 1;
            }
        }
        self.victim(evicted);
        self.prefetch(vcpu, line);
    }

    /// A victim last level takes what an L2 evicted, after the access
    /// that evicted it looked there.
    fn victim(&mut self, evicted: Option<u64>) {
        if let (true, Some(evicted)) = (self.config.llc_victim, evicted) {
            self.llc.access(evicted);
        }
    }

    /// An L2 miss's look at the last level: a victim last level is not
    /// filled by it, nor does a hit move the line.
    fn llc_hit(&mut self, line: u64) -> bool {
        if self.config.llc_victim {
            self.llc.holds(line)
        } else {
            self.llc.access(line) == Lookup::Hit
        }
    }

    /// The prefetcher of `vcpu` sees an L2 access to `line`.
    fn prefetch(&mut self, vcpu: usize, line: u64) {
        if self.config.prefetch_streams == 0 {
            return;
        }
        let capacity = self.config.prefetch_streams as usize;
        let core = self.core(vcpu);
        let mode = core.mode as usize;
        core.uses += 1;
        let now = core.uses;
        let page = line >> PAGE_LINES_BITS;
        let stride = match core.streams.iter_mut().find(|s| s.0 == page) {
            Some(stream) => {
                stream.3 = now;
                let stride = line.wrapping_sub(stream.1) as i64;
                if stride == 0 {
                    return;
                }
                let confirmed = stride == stream.2;
                stream.1 = line;
                stream.2 = stride;
                if !confirmed {
                    return;
                }
                stride
            }
            None => {
                if core.streams.len() == capacity {
                    let oldest = (0..capacity).min_by_key(|&i| core.streams[i].3).unwrap();
                    core.streams.remove(oldest);
                }
                core.streams.push((page, line, 0, now));
                return;
            }
        };
        let me = vcpu.min(self.cores.len() - 1);
        for k in 1..=PREFETCH_DEGREE {
            let ahead = line.wrapping_add_signed(k * stride);
            if ahead >> PAGE_LINES_BITS != page || self.cores[me].l2.has_tag(ahead) {
                continue;
            }
            let elsewhere = self.cores.iter().enumerate().any(|(other, core)| {
                other != me && (core.l1d.holds(ahead) || core.l2.holds(ahead))
            });
            if elsewhere {
                continue;
            }
            let (_, evicted) = self.core(vcpu).l2.access_evicting(ahead);
            if !self.config.llc_victim {
                self.llc.access(ahead);
            }
            self.victim(evicted);
            self.core(vcpu).counts[mode].l2_prefetches += 1;
        }
    }

    /// A data access of `size` bytes at `address` by `vcpu`.
    /// `space` is ORed into the line numbers, as [`super::VIRTUAL`] is.
    pub fn data(&mut self, vcpu: usize, address: u64, size: u64, store: bool, space: u64) {
        let first = (address >> LINE_BITS) | space;
        let last = (address.wrapping_add(size.max(1) - 1) >> LINE_BITS) | space;
        self.data_line(vcpu, first, store);
        if last != first {
            self.data_line(vcpu, last, store);
        }
    }

    fn data_line(&mut self, vcpu: usize, line: u64, store: bool) {
        let core = self.core(vcpu);
        let mode = core.mode as usize;
        let l1 = core.l1d.access(line);
        let mut coherence = false;
        if l1 != Lookup::Hit {
            core.counts[mode].l1d_misses += 1;
            let (l2, evicted) = core.l2.access_evicting(line);
            if l1 == Lookup::Invalidated || l2 == Lookup::Invalidated {
                coherence = true;
                self.core(vcpu).counts[mode].coherence_misses += 1;
                // The other core's copy passes through the shared level,
                // unless it takes only the L2s' evictions.
                if !self.config.llc_victim {
                    self.llc.access(line);
                }
            } else if l2 == Lookup::Miss {
                self.core(vcpu).counts[mode].l2_misses += 1;
                if !self.llc_hit(line) {
                    self.core(vcpu).counts[mode].llc_misses += 1;
                }
            }
            self.victim(evicted);
            self.prefetch(vcpu, line);
        }
        if store {
            // Invalidating another's valid copy is a read for ownership,
            // unless the store's own miss brought the line from that core.
            if self.invalidate_others(vcpu, line) && !coherence {
                self.core(vcpu).counts[mode].rfo_misses += 1;
            }
        }
    }

    /// Invalidates `line` in every vCPU's L1d and L2 but `vcpu`'s: whether
    /// one held it valid.
    fn invalidate_others(&mut self, vcpu: usize, line: u64) -> bool {
        let me = vcpu.min(self.cores.len() - 1);
        let mut held = false;
        for (other, core) in self.cores.iter_mut().enumerate() {
            if other != me {
                held |= core.l1d.invalidate(line);
                held |= core.l2.invalidate(line);
            }
        }
        held
    }

    /// An access of `size` bytes at virtual `address` by the string
    /// instruction of `vcpu`'s block; `translate` gives a virtual
    /// address's physical one, asked for every line of every access.
    pub fn string_data(
        &mut self,
        vcpu: usize,
        address: u64,
        size: u64,
        store: bool,
        translate: impl Fn(u64) -> Option<u64>,
    ) {
        let size = size.max(1);
        let core = self.core(vcpu);
        let mode = core.mode as usize;
        // A store goes on forward when it starts where the last one ended.
        let mut forward = false;
        if store {
            core.counts[mode].string_bytes += size;
            forward = core.string_next_store == Some(address);
            core.string_next_store = Some(address + size);
        }
        let first = address / LINE;
        let last = (address + size - 1) / LINE;
        for virtual_line in first..=last {
            let start = if virtual_line == first {
                address
            } else {
                virtual_line * LINE
            };
            let line = match translate(start) {
                Some(physical) => physical / LINE,
                None => virtual_line | VIRTUAL,
            };
            if !store {
                self.data_line(vcpu, line, false);
            } else if self.config.string_nontemporal == 1 {
                // Around the caches: only the other copies go.
                self.invalidate_others(vcpu, line);
            } else if forward && virtual_line * LINE >= address {
                // Writes the line from its first byte on, and the string
                // goes on: taken without being read, no miss.
                let core = self.core(vcpu);
                if core.l1d.access(line) != Lookup::Hit && core.l2.access(line) != Lookup::Hit {
                    self.llc.access(line);
                }
                if self.invalidate_others(vcpu, line) {
                    self.core(vcpu).counts[mode].rfo_misses += 1;
                }
            } else {
                self.data_line(vcpu, line, true);
            }
        }
    }

    /// Whether the block at `pc` in `mode` that follows an indirect branch
    /// or return in `branch_mode` is where an interrupt or exception
    /// entered the kernel: the mode changed, or `pc` is an entry seen.
    fn kernel_entry(&self, branch_mode: Mode, pc: u64, mode: Mode) -> bool {
        self.config.skip_entries == 1 && (branch_mode != mode || self.kernel_entries.contains(&pc))
    }

    /// The branch `branch` that ended `vcpu`'s last block (in
    /// `branch_mode`), now that its next block starts at `pc` in `mode`.
    fn resolve_branch(
        &mut self,
        vcpu: usize,
        branch: BlockEnd,
        branch_mode: Mode,
        pc: u64,
        mode: Mode,
    ) {
        let entered = self.kernel_entry(branch_mode, pc, mode);
        let counted = branch_mode as usize;
        let depth = self.config.rsb_depth as usize;
        let gshare_size = 1u64 << self.config.gshare_bits;
        let btb_size = 1u64 << self.config.btb_bits;
        let core = self.core(vcpu);
        core.pending = BlockEnd::Other;
        let push = |core: &mut Core, address: u64| {
            if depth > 0 {
                if core.return_stack.len() == depth {
                    core.return_stack.remove(0);
                }
                core.return_stack.push(address);
            }
        };
        let through_btb = |core: &mut Core, at: u64| {
            if entered {
                return;
            }
            let index = at % btb_size;
            let predicted = core.btb.insert(index, pc);
            core.counts[counted].indirect_branches += 1;
            if predicted != Some(pc) {
                core.counts[counted].indirect_mispredicts += 1;
            }
        };
        match branch {
            BlockEnd::Other | BlockEnd::Halt | BlockEnd::String { .. } => {}
            BlockEnd::Conditional {
                pc: at,
                target,
                next,
            } => {
                let taken = if pc == target {
                    true
                } else if pc == next {
                    false
                } else {
                    return;
                };
                let index = (at ^ core.history) % gshare_size;
                let counter = core.gshare.get(&index).copied().unwrap_or(1);
                let predicted_taken = counter >= 2;
                let counter = match (taken, counter) {
                    (true, 3) => 3,
                    (true, c) => c + 1,
                    (false, 0) => 0,
                    (false, c) => c - 1,
                };
                core.gshare.insert(index, counter);
                core.history = (core.history * 2 + u64::from(taken)) % gshare_size;
                core.counts[counted].conditional_branches += 1;
                if predicted_taken != taken {
                    core.counts[counted].conditional_mispredicts += 1;
                }
            }
            BlockEnd::Call { next, .. } => push(core, next),
            BlockEnd::IndirectCall { pc: at, next } => {
                push(core, next);
                through_btb(core, at);
            }
            BlockEnd::Indirect { pc: at } => through_btb(core, at),
            BlockEnd::Return { pc: at } if depth == 0 => through_btb(core, at),
            BlockEnd::Return { .. } => {
                let predicted = core.return_stack.pop();
                if !entered {
                    core.counts[counted].indirect_branches += 1;
                    if predicted != Some(pc) {
                        core.counts[counted].indirect_mispredicts += 1;
                    }
                }
            }
        }
    }
}
