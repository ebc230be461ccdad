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

/// The lowest address of the kernel half of the x86_64 address space.
pub const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

mod caches;
mod coherence;
mod config;
mod counts;
mod predictors;
mod prefetcher;
#[cfg(test)]
mod reference;
mod strings;
#[cfg(test)]
mod testing;
mod tlb;
mod weave;

pub use caches::{Cache, Geometry, Lookup, LINE, VIRTUAL};
pub use config::{Config, CONFIG_KEYS};
pub use counts::Counts;
pub use predictors::ENTRY_POINTS;
pub use tlb::{flush_of, Flush, TlbGeometry};
pub use weave::{Replayed, WeaveStats};

use caches::{EMPTY, LINE_BITS};
use coherence::OWNED_SLOTS;
use predictors::ENTRY_SLOTS;
use prefetcher::Prefetcher;
use std::ops::Range;
use strings::{StringTrail, NO_TRAIL};
use tlb::Tlb;
use weave::{Kind, Weave};

// The straightforward model (`reference`) is written against these.
#[cfg(test)]
use caches::INVALID;
#[cfg(test)]
use prefetcher::{PAGE_LINES_BITS, PREFETCH_DEGREE};

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
    /// Its TLBs, when the model has them (`tlb-walk-cycles` above 0).
    tlb: Option<Tlb>,
}

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
            tlb: match config.tlb_walk_cycles {
                0 => None,
                _ => Some(Tlb::new(config.tlb)?),
            },
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
            // In cycles, the block's cost moves the clock on
            // (`block_cost`), or without one its instructions at a cycle
            // each.
            w.clock[v] = time
                + match (w.cycles, w.costed) {
                    (false, _) => instructions,
                    (true, true) => 0,
                    (true, false) => instructions * crate::throughput::PARTS,
                };
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
        let all = core.parts + parts;
        core.counts[core.mode as usize].base_cycles += all / crate::throughput::PARTS;
        core.parts = all % crate::throughput::PARTS;
        if let Some(w) = self.weave.as_mut().filter(|w| w.cycles) {
            w.clock[v] += parts;
        }
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
}

/// The TLBs: the plugin gives them the accesses' virtual addresses, apart
/// from the caches' physical ones, and the flushes its blocks end with.
impl Model {
    /// A data access by `vcpu` at (virtual) `vaddr`, in a large page or
    /// not, counted in the mode of its block.
    #[inline(always)]
    pub fn tlb_data(&mut self, vcpu: usize, vaddr: u64, large: bool) {
        let v = self.index(vcpu);
        let core = &mut self.cores[v];
        if let Some(tlb) = core.tlb.as_mut() {
            if tlb.data(vaddr, large) {
                core.counts[core.mode as usize].tlb_misses += 1;
            }
        }
    }

    /// The block [`Model::block`] just started on `vcpu` fetches from the
    /// pages of `first` and `last` (its first and last bytes; `large`
    /// says whether they are in large pages), and ends in `flush`; the
    /// flush the block before ended in is done first.
    pub fn tlb_block(&mut self, vcpu: usize, first: u64, last: u64, large: bool, flush: Flush) {
        let v = self.index(vcpu);
        let core = &mut self.cores[v];
        let Some(tlb) = core.tlb.as_mut() else {
            return;
        };
        let mut walks = tlb.block(flush);
        walks += u64::from(tlb.fetch(first, large));
        if (last ^ first) >> 12 != 0 {
            walks += u64::from(tlb.fetch(last, large));
        }
        core.counts[core.mode as usize].tlb_misses += walks;
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

/// Whether an instruction, from its bytes (x86-64), is a locked
/// read-modify-write: one with a `lock` prefix, or `xchg` with memory,
/// which locks without one.
pub fn locked(bytes: &[u8]) -> bool {
    let mut i = 0;
    let mut lock = false;
    while i < bytes.len()
        && matches!(
            bytes[i],
            0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 | 0x66 | 0x67 | 0xf0 | 0xf2 | 0xf3
        )
    {
        lock |= bytes[i] == 0xf0;
        i += 1;
    }
    if i < bytes.len() && (0x40..=0x4f).contains(&bytes[i]) {
        i += 1;
    }
    lock || matches!(&bytes[i..], [0x86 | 0x87, modrm, ..] if modrm >> 6 != 3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::*;

    #[test]
    fn locked_read_modify_writes_are_told_from_their_bytes() {
        // lock addq $1,(%rax); lock xadd %eax,(%rdx); lock cmpxchg %rcx,(%rdi)
        for bytes in [
            &[0xf0, 0x48, 0x83, 0x00, 0x01][..],
            &[0xf0, 0x0f, 0xc1, 0x02],
            &[0xf0, 0x48, 0x0f, 0xb1, 0x0f],
            // xchg %eax,(%rdx); xchg %r8,0x8(%rbx)
            &[0x87, 0x02],
            &[0x4c, 0x87, 0x43, 0x08],
            // xchg %al,(%rcx) with a segment override
            &[0x65, 0x86, 0x01],
        ] {
            assert!(locked(bytes), "{bytes:x?}");
        }
        // addq $1,(%rax); xchg %eax,%edx (registers); mov (%rax),%eax; none
        for bytes in [
            &[0x48, 0x83, 0x00, 0x01][..],
            &[0x87, 0xc2],
            &[0x8b, 0x00],
            &[],
        ] {
            assert!(!locked(bytes), "{bytes:x?}");
        }
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
                // The TLBs see the block and now and then a flush; they
                // change no other count.
                let flush =
                    [Flush::None, Flush::AddressSpace, Flush::Page][(next() % 24).min(2) as usize];
                fast.tlb_block(vcpu, pc, pc + bytes - 1, false, flush);
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
                fast.tlb_data(vcpu, address << 6, address >= 0x1_0000 && next() % 2 == 0);
                if next() % 2 == 0 {
                    fast.data(vcpu, address, size, store);
                    slow.data(vcpu, address, size, store, 0);
                } else {
                    fast.data_virtual(vcpu, address, size, store);
                    slow.data(vcpu, address, size, store, VIRTUAL);
                }
            }
            let mut counts = fast.counts();
            for c in &mut counts {
                c.tlb_misses = 0;
            }
            assert_eq!(counts, slow.counts());
        }
        let walks: u64 = fast.counts().iter().map(|c| c.tlb_misses).sum();
        assert_eq!(walks > 0, config.tlb_walk_cycles > 0);
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
}
