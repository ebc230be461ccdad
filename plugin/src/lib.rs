//! markbench's QEMU TCG plugin: counts the guest instructions executed at
//! each kernel address, and in user space as one sum, inside regions the
//! guest marks.
//!
//! Counting is inline on a guest of one vCPU: when a translated block
//! starts executing it adds to a 64-bit slot of a scoreboard (a kernel
//! block one to a slot of its own, a user block its instruction count to
//! the one slot all of them share), so the guest runs without a callback
//! per block. On a guest of several vCPUs every block calls back instead
//! (see [`Counting`]). A region starts and ends at a marker instruction, a
//! seven-byte NOP with a magic displacement (`nopl 0x4d425301(%rax)` starts,
//! `…02` ends; architecturally a NOP, so the guest agent runs it under any
//! accelerator). An arm64 guest's markers are `movk xzr, #0x4dNN, lsl #48`
//! with the same codes NN (a write to the zero register, discarded). Only the marker instructions get a callback: the start
//! resets every slot, the end reads the non-zero ones into the region. At
//! exit each region's block counts are spread over the instructions of their
//! blocks and written to `out=FILE` as tab-separated lines:
//!
//! ```text
//! # markbench-profile 1
//! region  kind    address           instructions
//! 0       user    -                 123456
//! 0       kernel  ffffffff81001234  789
//! ```
//!
//! With `model=cycles` (and optionally any setting of [`model::CONFIG_KEYS`]
//! as `key=value`) the plugin also runs every block's instruction fetches,
//! every memory access and every branch through [`model::Model`] and writes
//! version 2 of the file: the same lines, a comment naming the model's
//! settings, and per region one `model` line per count, user and kernel
//! apart (`0  model  kernel:l1d-misses  42`), `estimated-cycles` among them.
//! Inside a region the guest may mark parts, each with a number from 0 to
//! 15 (`nopl 0x4d4253NN(%rax)` with NN = 0x10 + the number starts one,
//! `…03` ends it; the micro workload's kernel code marks each timed loop):
//! the model's counts of each finished part follow the region's, their
//! names prefixed with the part (`0  model  part4/kernel:l1d-misses  3`).
//! Parts are the model's alone: without it their markers are plain NOPs.
//! Without it the file is version 1, byte for byte as before the model.
//! With `profile=off` as well it counts nothing per address and writes
//! only the header, the settings and the `model` lines. With the profile
//! and the model both on, the model's counts are also split over the
//! blocks that caused them ([`attribution`]) and written per kernel block
//! address and for user space (`0  kernel:llc-misses  ffffffff81001234  3`,
//! `0  user:llc-misses  -  9`, each count that is not zero, the estimate
//! among them): version 3 of the file.
//!
//! On several vCPUs the model interleaves the vCPUs' round-robin turns
//! (`model::Model::set_weave`); `weave=off` counts every event as it
//! comes, one turn after the other.
//!
//! The data accesses' physical addresses are asked of QEMU only where
//! [`translation`] cannot know them; `linear=off` turns off its guess of
//! the kernel's linear mappings (checked against QEMU, never changing a
//! count), for measuring what it saves.
//!
//! A block is counted whole when it starts, so an exception in its middle
//! (a page fault) counts the instructions after the fault once too often;
//! the host compares the totals with icount's guest time to bound that.

pub mod attribution;
mod marks;
pub mod model;
pub mod throughput;
pub mod translation;

pub use marks::{Mark, PARTS};

use attribution::{Attribution, Values};
use marks::{WhichVcpuSeen, MARKER_SIZES};
use model::{BlockEnd, Config, Counts, Flush, Mode, Model, KERNEL_HALF};
use qemu_plugin_sys as sys;
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use translation::Translations;

/// The plugin API version this plugin is written against. QEMU refuses a
/// plugin whose version is above its own (10.0 has 4) or below its minimum.
#[no_mangle]
pub static qemu_plugin_version: c_int = 4;

/// Slots per scoreboard: one scoreboard of 4096 counters per vCPU instead
/// of one scoreboard per block.
const CHUNK: usize = 4096;

/// How executed blocks are counted.
///
/// QEMU 10.0's inline operations are unusable with more than one vCPU
/// under round-robin TCG (which `-icount` implies): `gen_cpu_index` in
/// `accel/tcg/plugin-gen.c` returns the translating vCPU's index as a TCG
/// constant whenever translations are not `CF_PARALLEL`, and
/// `gen_plugin_u64_ptr` then multiplies that value by the scoreboard's
/// element size in place, overwriting the interned constant. In a block
/// translated by vCPU 1 every later use of the constant 1 of that block
/// becomes the element size: the block's `can_do_io = 1` stores the low
/// byte (0 for sizes that are multiples of 256, and QEMU exits with "Bad
/// icount read" once vCPU 1 runs), and guest arithmetic with 1 goes wrong
/// (32776-byte elements boot into a kernel oops). vCPU 0's constant 0 times the
/// size stays 0, so one vCPU is safe. A regular callback receives the index
/// as an argument without modifying it, so it is what several vCPUs use.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Counting {
    Inline,
    Callback,
}

struct Block {
    /// Address of each instruction of the block.
    insns: Vec<u64>,
    /// Times the block started, when blocks call back. Boxed so the
    /// callback's pointer to it stays valid as blocks are added.
    hits: Box<AtomicU64>,
}

#[derive(Default)]
struct Region {
    user: u64,
    /// (block index, times the block started) for blocks that ran.
    blocks: Vec<(u32, u64)>,
}

struct State {
    out: String,
    /// Whether instructions are counted per kernel address (`profile=off`
    /// leaves only the markers and the model: a timed boot under the model
    /// needs no profile, and counting one would slow it).
    profile: bool,
    counting: Counting,
    chunks: Vec<*mut sys::qemu_plugin_scoreboard>,
    blocks: Vec<Block>,
    user: sys::qemu_plugin_u64,
    open: bool,
    regions: Vec<Region>,
}

// SAFETY: the raw pointers are scoreboards owned by QEMU for the plugin's
// lifetime; every access goes through the mutex.
unsafe impl Send for State {}

/// Everything the plugin keeps between QEMU's callbacks, which are plain
/// functions with no context of the plugin's own. What translation, the
/// markers and the exit reach is behind a lock; what the callbacks of
/// every block and memory access touch is atomic or the model's own lock,
/// which those callbacks skip once it is safe (see [`ModelLock`]).
struct Plugin {
    /// The profile: its blocks, scoreboards and finished regions.
    state: Mutex<Option<State>>,
    /// The model, when the plugin runs it.
    model: ModelLock,
    /// The threads the vCPUs started on, as far as they have started.
    vcpu_threads: Mutex<VcpuThreads>,
    /// With `check=vcpu`: the vCPU index each execution of the which-vCPU
    /// marker was given, in order. The guest agent runs the marker pinned
    /// to each CPU in turn, one code path for all, so a block translated on
    /// one vCPU runs on the others: where QEMU compiles the translating
    /// vCPU's index into the block, the list says so. The store after each
    /// marker is seen by its memory callback, which feeds the model's
    /// caches: its vCPU index is checked the same way.
    which_vcpu: Mutex<Option<Vec<WhichVcpuSeen>>>,
    /// Instructions executed in user space, when blocks call back.
    user_insns: AtomicU64,
    /// Data accesses QEMU gave no physical address for (the model takes
    /// them by virtual address).
    virtual_accesses: AtomicU64,
}

static PLUGIN: Plugin = Plugin {
    state: Mutex::new(None),
    model: ModelLock {
        locked: AtomicBool::new(false),
        one_thread: AtomicBool::new(false),
        state: UnsafeCell::new(None),
    },
    vcpu_threads: Mutex::new(VcpuThreads {
        announced: 1,
        started: 0,
        first: None,
        apart: false,
    }),
    which_vcpu: Mutex::new(None),
    user_insns: AtomicU64::new(0),
    virtual_accesses: AtomicU64::new(0),
};

/// What the model needs of a translated block each time it runs, in 32
/// bytes, aligned: the callback's first read of it misses the host's caches
/// more often than anything else the model reads, so it costs one line and
/// the blocks translated together (which tend to run together) share lines.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct ModelBlock {
    pc: u64,
    /// The conditional branch's target, when the block ends in one.
    target: u64,
    /// The block's bytes from `pc`, its last instruction's among them.
    bytes: u32,
    instructions: u16,
    /// Its own cycles on the core, in `throughput::PARTS` of a cycle (0
    /// with no issue width).
    cost: u16,
    end: EndKind,
    last_bytes: u8,
    /// What its last instruction flushes of the vCPU's TLBs.
    flush: Flush,
    /// Its index in the attribution, when there is one.
    index: u32,
}

/// How a block ends, as [`ModelBlock`] keeps [`BlockEnd`].
#[derive(Clone, Copy, Default)]
#[repr(u8)]
enum EndKind {
    #[default]
    Other,
    Conditional,
    Indirect,
    Halt,
    Call,
    IndirectCall,
    Return,
    String,
}

impl ModelBlock {
    fn new(pc: u64, instructions: usize, bytes: u64, end: BlockEnd) -> ModelBlock {
        let next = pc.wrapping_add(bytes);
        let (kind, at, target) = match end {
            BlockEnd::Other => (EndKind::Other, next, 0),
            BlockEnd::Conditional { pc, target, .. } => (EndKind::Conditional, pc, target),
            BlockEnd::Indirect { pc } => (EndKind::Indirect, pc, 0),
            BlockEnd::Halt => (EndKind::Halt, next, 0),
            // A call returns to the block's end.
            BlockEnd::Call { pc, .. } => (EndKind::Call, pc, 0),
            BlockEnd::IndirectCall { pc, .. } => (EndKind::IndirectCall, pc, 0),
            BlockEnd::Return { pc } => (EndKind::Return, pc, 0),
            BlockEnd::String { pc } => (EndKind::String, pc, 0),
        };
        ModelBlock {
            pc,
            target,
            // A block is at most two pages, of at most 512 instructions.
            bytes: bytes as u32,
            instructions: instructions as u16,
            cost: 0,
            end: kind,
            last_bytes: next.wrapping_sub(at) as u8,
            flush: Flush::None,
            index: u32::MAX,
        }
    }

    #[inline(always)]
    fn mode(&self) -> Mode {
        if self.pc >= KERNEL_HALF {
            Mode::Kernel
        } else {
            Mode::User
        }
    }

    #[inline(always)]
    fn end(&self) -> BlockEnd {
        // The branch is the last instruction, and falls through to the
        // block's end.
        let next = self.pc.wrapping_add(u64::from(self.bytes));
        let at = next.wrapping_sub(u64::from(self.last_bytes));
        match self.end {
            EndKind::Other => BlockEnd::Other,
            EndKind::Conditional => BlockEnd::Conditional {
                pc: at,
                target: self.target,
                next,
            },
            EndKind::Indirect => BlockEnd::Indirect { pc: at },
            EndKind::Halt => BlockEnd::Halt,
            EndKind::Call => BlockEnd::Call { pc: at, next },
            EndKind::IndirectCall => BlockEnd::IndirectCall { pc: at, next },
            EndKind::Return => BlockEnd::Return { pc: at },
            EndKind::String => BlockEnd::String { pc: at },
        }
    }
}

/// Blocks per chunk of [`ModelState::blocks`].
const BLOCK_CHUNK: usize = 4096;

struct ModelState {
    model: Model,
    /// Every block translated, in order, in chunks that never move (the
    /// callbacks hold pointers into them).
    blocks: Vec<Box<[ModelBlock]>>,
    /// Blocks in the last chunk.
    filled: usize,
    /// The counts when the open region started.
    open: Option<[Counts; 2]>,
    /// The open part's number and the counts when it started.
    open_part: Option<(u8, [Counts; 2])>,
    /// The open region's finished parts.
    parts: Vec<(u8, [Counts; 2])>,
    /// Each finished region's counts.
    regions: Vec<ModelRegion>,
    /// The counts per block, when the profile is on too.
    attribution: Option<Attribution>,
    /// Each finished region's counts by block (block, counts), with the
    /// attribution.
    block_regions: Vec<Vec<(u32, Values)>>,
    /// The data accesses' physical addresses, asked of QEMU as seldom as
    /// exactness allows.
    translations: Translations,
}

/// A finished region's counts, user then kernel, and those of its parts.
struct ModelRegion {
    counts: [Counts; 2],
    parts: Vec<(u8, [Counts; 2])>,
}

/// Counts between two readings of the model's, user then kernel.
fn between(start: &[Counts; 2], now: &[Counts; 2]) -> [Counts; 2] {
    [now[0].since(&start[0]), now[1].since(&start[1])]
}

/// The model's lock. Round-robin TCG (which icount implies) runs every
/// vCPU on one thread, so the lock is never contended and the order of
/// events is the guest's own; once that is known (see [`on_vcpu_init`])
/// the callbacks of every block and memory access skip it altogether.
///
/// Until then it is taken on every memory access and every block the guest
/// runs: uncontended, a compare-and-swap to take and a plain release store
/// to give back, half what `std::sync::Mutex` costs there (its unlock is
/// another atomic exchange). The plugin aborts on a panic (`panic =
/// "abort"`), so there is no poisoning to track.
struct ModelLock {
    locked: AtomicBool,
    /// Whether every vCPU announced has started on one thread (round-robin
    /// TCG), set by that thread and read only by vCPU callbacks.
    one_thread: AtomicBool,
    state: UnsafeCell<Option<ModelState>>,
}

// SAFETY: `state` is only reached through `with`, which holds `locked`, or
// through `with_vcpu` on the one thread every vCPU runs on.
unsafe impl Sync for ModelLock {}

impl ModelLock {
    fn with<R>(&self, f: impl FnOnce(&mut Option<ModelState>) -> R) -> R {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: the flag is ours until the store below.
        let result = f(unsafe { &mut *self.state.get() });
        self.locked.store(false, Ordering::Release);
        result
    }

    /// [`ModelLock::with`] for a vCPU's callback, without the lock once
    /// every vCPU runs on the calling thread. A locked atomic operation
    /// costs more than a few cycles here: it waits for the stores of the
    /// translated code before it to drain.
    #[inline(always)]
    fn with_vcpu<R>(&self, f: impl FnOnce(&mut Option<ModelState>) -> R) -> R {
        if self.one_thread.load(Ordering::Relaxed) {
            // SAFETY: every vCPU's callbacks run on this thread, one after
            // the other, and nothing else reaches the model while vCPUs run
            // (translation runs on this thread too; QEMU pauses the vCPUs
            // before the exit callback).
            f(unsafe { &mut *self.state.get() })
        } else {
            self.with(f)
        }
    }
}

/// The threads the vCPUs started on, as far as they have started.
struct VcpuThreads {
    announced: u32,
    started: u32,
    first: Option<std::thread::ThreadId>,
    apart: bool,
}

/// QEMU runs a vCPU's init callback on the thread that runs that vCPU: one
/// thread for all under round-robin TCG, one per vCPU under multi-threaded
/// TCG (which never sets [`ModelLock::one_thread`]).
unsafe extern "C" fn on_vcpu_init(_id: sys::qemu_plugin_id_t, _vcpu: c_uint) {
    let mut threads = PLUGIN
        .vcpu_threads
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let me = std::thread::current().id();
    match threads.first {
        None => threads.first = Some(me),
        Some(first) if first != me => threads.apart = true,
        Some(_) => {}
    }
    threads.started += 1;
    if !threads.apart && threads.started >= threads.announced {
        PLUGIN.model.one_thread.store(true, Ordering::Relaxed);
    }
}

impl ModelState {
    fn new(model: Model, attribution: Option<Attribution>, linear: bool) -> ModelState {
        ModelState {
            translations: Translations::new(model.vcpus(), linear),
            model,
            blocks: Vec::new(),
            filled: 0,
            open: None,
            open_part: None,
            parts: Vec::new(),
            regions: Vec::new(),
            attribution,
            block_regions: Vec::new(),
        }
    }

    /// Keeps `block` and returns where it is.
    fn add_block(&mut self, block: ModelBlock) -> *const ModelBlock {
        if self.blocks.is_empty() || self.filled == BLOCK_CHUNK {
            self.blocks
                .push(vec![ModelBlock::default(); BLOCK_CHUNK].into_boxed_slice());
            self.filled = 0;
        }
        let chunk = self.blocks.last_mut().expect("a chunk was just added");
        chunk[self.filled] = block;
        self.filled += 1;
        &chunk[self.filled - 1]
    }

    /// Gives the attribution the counts of the events the model replayed
    /// (with the weave, a block's cache counts come after the block).
    /// The TLBs' side of a block that started on `vcpu`: its fetches, its
    /// flush. Its pages are large where its first byte's 2 MiB region is
    /// linearly mapped.
    #[inline(always)]
    fn block_tlb(&mut self, vcpu: usize, b: &ModelBlock) {
        if self.model.config.tlb_walk_cycles == 0 {
            return;
        }
        let last = b.pc.wrapping_add(u64::from(b.bytes.max(1)) - 1);
        let large = self.translations.large(b.pc);
        self.model.tlb_block(vcpu, b.pc, last, large, b.flush);
    }

    /// A data access's TLB look-up, in a large page where its 2 MiB
    /// region is linearly mapped.
    #[inline(always)]
    fn data_tlb(&mut self, vcpu: usize, vaddr: u64) {
        let large = self.translations.large(vaddr);
        self.model.tlb_data(vcpu, vaddr, large);
    }

    fn drain_replayed(&mut self) {
        if let Some(a) = self.attribution.as_mut() {
            self.model.drain_replayed(|r| {
                a.replayed(r.vcpu, r.tag, &attribution::values(&r.counts));
            });
        }
    }

    /// Replays every event the weave holds back, so that the counts a
    /// marker reads hold every event before it.
    fn flush(&mut self) {
        self.model.flush();
        self.drain_replayed();
    }

    fn start_region(&mut self) {
        self.flush();
        self.open = Some(self.model.counts());
        self.open_part = None;
        self.parts.clear();
        if let Some(a) = self.attribution.as_mut() {
            let model = &self.model;
            a.start_region(|vcpu| attribution::values(&model.vcpu_counts(vcpu)));
        }
    }

    fn end_region(&mut self) {
        self.flush();
        if let Some(start) = self.open.take() {
            // A part still open when its region ends belongs to no
            // finished measurement: dropped.
            self.open_part = None;
            self.regions.push(ModelRegion {
                counts: between(&start, &self.model.counts()),
                parts: std::mem::take(&mut self.parts),
            });
            if let Some(a) = self.attribution.as_mut() {
                let model = &self.model;
                let blocks = a.end_region(|vcpu| attribution::values(&model.vcpu_counts(vcpu)));
                self.block_regions.push(blocks);
            }
        }
    }

    /// A part outside a region, or inside an open part, is not counted:
    /// a part is a piece of one timed run, and parts do not nest.
    fn start_part(&mut self, number: u8) {
        if self.open.is_some() && self.open_part.is_none() {
            self.flush();
            self.open_part = Some((number, self.model.counts()));
        }
    }

    fn end_part(&mut self) {
        if let Some((number, start)) = self.open_part.take() {
            self.flush();
            let counts = between(&start, &self.model.counts());
            self.parts.push((number, counts));
        }
    }

    /// A region's counts by kernel block address and in user space, one
    /// line per count that is not zero (`0  kernel:llc-misses
    /// ffffffff81001234  3`, `0  user:llc-misses  -  9`), the estimate
    /// among them; instructions are the profile's own lines.
    fn write_blocks(&self, out: &mut impl Write, number: usize) -> std::io::Result<()> {
        let Some(region) = self.block_regions.get(number) else {
            return Ok(());
        };
        let mut user = [0u64; attribution::VALUES];
        let mut kernel: HashMap<u64, Values> = HashMap::new();
        for (block, values) in region {
            // Blocks and the attribution grow together, one a translation:
            // a block's index is its place among the chunks.
            let at = *block as usize;
            let b = &self.blocks[at / BLOCK_CHUNK][at % BLOCK_CHUNK];
            let into = match b.mode() {
                Mode::User => &mut user,
                Mode::Kernel => kernel.entry(b.pc).or_insert([0; attribution::VALUES]),
            };
            for (sum, v) in into.iter_mut().zip(values) {
                *sum += v;
            }
        }
        let mut rows: Vec<(u64, Values)> = kernel.into_iter().collect();
        rows.sort_unstable_by_key(|(address, _)| *address);
        let user_row = (user.iter().any(|&v| v != 0)).then_some(("user", "-".to_string(), user));
        let kernel_rows = rows
            .into_iter()
            .map(|(address, v)| ("kernel", format!("{address:016x}"), v));
        for (mode, address, values) in user_row.into_iter().chain(kernel_rows) {
            for (name, value) in Counts::NAMES.iter().zip(values) {
                if value != 0 && *name != "instructions" {
                    writeln!(out, "{number}	{mode}:{name}	{address}	{value}")?;
                }
            }
            let cycles = attribution::counts(&values).estimated_cycles(&self.model.config);
            if cycles != 0 {
                writeln!(out, "{number}	{mode}:estimated-cycles	{address}	{cycles}")?;
            }
        }
        Ok(())
    }

    /// The settings comments of the TLBs and the blocks' throughput, each
    /// only when on.
    fn write_core_settings(out: &mut impl Write, c: &Config) -> std::io::Result<()> {
        if c.tlb_walk_cycles > 0 {
            let t = c.tlb;
            writeln!(
                out,
                "# model tlb: dtlb {}/{}w itlb {}/{}w stlb {}/{}w, walk {} cycles, 4 KiB pages \
                 and 2 MiB ones in linearly mapped kernel regions",
                t.dtlb.0, t.dtlb.1, t.itlb.0, t.itlb.1, t.stlb.0, t.stlb.1, c.tlb_walk_cycles
            )?;
        }
        if c.issue_width > 0 {
            writeln!(
                out,
                "# model core: blocks at their throughput, {} instructions a cycle, \
                 loads from the L1d {} cycles",
                c.issue_width, c.load_cycles
            )?;
            if c.special_costs == 1 {
                writeln!(
                    out,
                    "# model core: privileged and serializing instructions at their class, \
                     a serializing one ending the overlap"
                )?;
            }
        }
        Ok(())
    }

    fn write_settings(&self, out: &mut impl Write) -> std::io::Result<()> {
        let c = &self.model.config;
        writeln!(
            out,
            "# model cycles: l1i {}B/{}w l1d {}B/{}w l2 {}B/{}w llc {}B/{}w line {}B \
             gshare {} bits btb {} bits; cycles l2 {} llc {} memory {} coherence {} mispredict {}",
            c.l1i.bytes,
            c.l1i.ways,
            c.l1d.bytes,
            c.l1d.ways,
            c.l2.bytes,
            c.l2.ways,
            c.llc.bytes,
            c.llc.ways,
            model::LINE,
            c.gshare_bits,
            c.btb_bits,
            c.l2_cycles,
            c.llc_cycles,
            c.memory_cycles,
            c.coherence_cycles,
            c.mispredict_cycles
        )?;
        // Each later part is named only when it is on: a file with every
        // one off is as before them.
        if c.rsb_depth > 0 || c.skip_entries == 1 {
            writeln!(
                out,
                "# model branches: rsb {} entries, skip-entries {}",
                c.rsb_depth, c.skip_entries
            )?;
        }
        if c.string_bytes_per_cycle > 0 {
            writeln!(
                out,
                "# model strings: startup {} cycles, {} bytes per cycle, nontemporal {}",
                c.string_startup_cycles, c.string_bytes_per_cycle, c.string_nontemporal
            )?;
        }
        // Each part of the memory side that is on says so; with every part
        // off the file is as it was before they were modelled.
        if c.prefetch_streams > 0 {
            writeln!(
                out,
                "# model prefetcher: L2 streams, {} per vCPU",
                c.prefetch_streams
            )?;
        }
        if c.llc_victim {
            writeln!(out, "# model llc: a victim cache of the L2s")?;
        }
        Self::write_core_settings(out, c)?;
        if c.weave_cycles + c.burst_ownership + c.locked_rfo > 0 || c.weave_span > 0 {
            writeln!(
                out,
                "# model coherence: weave by cycles {}, burst ownership {}, locked \
                 read for ownership {}, round span {}",
                c.weave_cycles, c.burst_ownership, c.locked_rfo, c.weave_span
            )?;
        }
        writeln!(
            out,
            "# model addresses: data by guest physical address ({} accesses without \
             one, by virtual address), instructions by virtual address",
            PLUGIN.virtual_accesses.load(Ordering::Relaxed)
        )?;
        // Said only when it happened: a file without it is as before.
        let contradicted = self.translations.contradicted();
        if contradicted != 0 {
            writeln!(
                out,
                "# model translations: a linear mapping's offset disagreed with QEMU {contradicted} times"
            )?;
        }
        // Only several vCPUs weave: a one-vCPU file is as before.
        match self.model.weave_stats() {
            Some(w) => writeln!(
                out,
                "# model weave: {} rounds, {} turns, {} instructions",
                w.rounds, w.turns, w.instructions
            ),
            None if self.model.vcpus() > 1 => writeln!(out, "# model weave: off"),
            None => Ok(()),
        }
    }

    fn write_region(&self, out: &mut impl Write, number: usize) -> std::io::Result<()> {
        let Some(region) = self.regions.get(number) else {
            return Ok(());
        };
        self.write_counts(out, number, "", &region.counts)?;
        for (part, counts) in &region.parts {
            self.write_counts(out, number, &format!("part{part}/"), counts)?;
        }
        Ok(())
    }

    /// One `model` line per count, user space then kernel, each name after
    /// `prefix`.
    fn write_counts(
        &self,
        out: &mut impl Write,
        number: usize,
        prefix: &str,
        counts: &[Counts; 2],
    ) -> std::io::Result<()> {
        let one_vcpu = self.model.vcpus() == 1;
        for (mode, counts) in ["user", "kernel"].iter().zip(counts) {
            for (name, value) in Counts::NAMES.iter().zip(counts.values()) {
                if one_vcpu && Counts::SEVERAL_VCPUS_ONLY.contains(name)
                    || !self.model.config.makes(name)
                {
                    continue;
                }
                writeln!(out, "{number}\tmodel\t{prefix}{mode}:{name}\t{value}")?;
            }
            let cycles = counts.estimated_cycles(&self.model.config);
            writeln!(
                out,
                "{number}\tmodel\t{prefix}{mode}:estimated-cycles\t{cycles}"
            )?;
        }
        Ok(())
    }
}

impl State {
    fn slot(&self, index: usize) -> sys::qemu_plugin_u64 {
        sys::qemu_plugin_u64 {
            score: self.chunks[index / CHUNK],
            offset: (index % CHUNK) * 8,
        }
    }

    fn new_slot(&mut self) -> usize {
        let index = self.blocks.len();
        if index / CHUNK == self.chunks.len() {
            // SAFETY: a fresh scoreboard; QEMU zeroes its entries and grows
            // it when vCPUs are added.
            let score = unsafe { sys::qemu_plugin_scoreboard_new(CHUNK * 8) };
            self.chunks.push(score);
        }
        index
    }

    fn vcpus() -> c_uint {
        // SAFETY: a plain query.
        unsafe { sys::qemu_plugin_num_vcpus() }.max(1) as c_uint
    }

    fn start_region(&mut self) {
        self.open = true;
        if self.counting == Counting::Callback {
            for block in &self.blocks {
                block.hits.store(0, Ordering::Relaxed);
            }
            PLUGIN.user_insns.store(0, Ordering::Relaxed);
            return;
        }
        let vcpus = Self::vcpus();
        for index in 0..self.blocks.len() {
            let slot = self.slot(index);
            for vcpu in 0..vcpus {
                // SAFETY: the slot lies inside a live scoreboard.
                unsafe { sys::qemu_plugin_u64_set(slot, vcpu, 0) };
            }
        }
        for vcpu in 0..vcpus {
            // SAFETY: as above.
            unsafe { sys::qemu_plugin_u64_set(self.user, vcpu, 0) };
        }
    }

    fn end_region(&mut self) {
        if !self.open {
            return;
        }
        self.open = false;
        let mut region = Region::default();
        if self.counting == Counting::Callback {
            for (index, block) in self.blocks.iter().enumerate() {
                let n = block.hits.load(Ordering::Relaxed);
                if n > 0 {
                    region.blocks.push((index as u32, n));
                }
            }
            region.user = PLUGIN.user_insns.load(Ordering::Relaxed);
            self.regions.push(region);
            return;
        }
        let vcpus = Self::vcpus();
        for index in 0..self.blocks.len() {
            let slot = self.slot(index);
            // SAFETY: the slot lies inside a live scoreboard.
            let n: u64 = (0..vcpus)
                .map(|vcpu| unsafe { sys::qemu_plugin_u64_get(slot, vcpu) })
                .sum();
            if n > 0 {
                region.blocks.push((index as u32, n));
            }
        }
        // SAFETY: as above.
        region.user = (0..vcpus)
            .map(|vcpu| unsafe { sys::qemu_plugin_u64_get(self.user, vcpu) })
            .sum();
        self.regions.push(region);
    }

    fn write(&self, model: Option<&ModelState>) -> std::io::Result<()> {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&self.out)?);
        // Version 3 adds the model's counts per block address to version 2.
        let version = match model {
            Some(m) if m.attribution.is_some() => 3,
            Some(_) => 2,
            None => 1,
        };
        writeln!(out, "# markbench-profile {version}")?;
        if let Some(model) = model {
            model.write_settings(&mut out)?;
        }
        writeln!(out, "region\tkind\taddress\tinstructions")?;
        for (number, region) in self.regions.iter().enumerate() {
            if !self.profile {
                if let Some(model) = model {
                    model.write_region(&mut out, number)?;
                }
                continue;
            }
            writeln!(out, "{number}\tuser\t-\t{}", region.user)?;
            if let Some(model) = model {
                model.write_region(&mut out, number)?;
            }
            let mut by_address: HashMap<u64, u64> = HashMap::new();
            for &(block, n) in &region.blocks {
                for &address in &self.blocks[block as usize].insns {
                    *by_address.entry(address).or_default() += n;
                }
            }
            let mut rows: Vec<(u64, u64)> = by_address.into_iter().collect();
            rows.sort_unstable();
            for (address, n) in rows {
                writeln!(out, "{number}\tkernel\t{address:016x}\t{n}")?;
            }
            if let Some(model) = model {
                model.write_blocks(&mut out, number)?;
            }
        }
        out.flush()
    }
}

/// The file `check=vcpu` writes ([`marks::which_vcpu_text`]).
fn write_which_vcpu(out: &str, seen: &[WhichVcpuSeen]) -> std::io::Result<()> {
    std::fs::write(out, marks::which_vcpu_text(seen))
}

/// Notes a callback of the which-vCPU check, when the check is on.
fn which_vcpu_seen(seen: WhichVcpuSeen) {
    if let Some(list) = PLUGIN
        .which_vcpu
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
    {
        list.push(seen);
    }
}

/// The memory callback of the store the guest puts after the which-vCPU
/// marker.
unsafe extern "C" fn on_which_vcpu_store(
    vcpu: c_uint,
    _info: sys::qemu_plugin_meminfo_t,
    _vaddr: u64,
    _userdata: *mut c_void,
) {
    which_vcpu_seen(WhichVcpuSeen::Store(vcpu));
}

unsafe extern "C" fn on_mark(vcpu: c_uint, userdata: *mut c_void) {
    let Some(mark) = Mark::from_datum(userdata) else {
        return;
    };
    if mark == Mark::WhichVcpu {
        which_vcpu_seen(WhichVcpuSeen::Mark(vcpu));
        return;
    }
    let mut guard = PLUGIN.state.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else { return };
    PLUGIN.model.with(|model| match mark {
        Mark::End => {
            state.end_region();
            if let Some(model) = model.as_mut() {
                model.end_region();
            }
        }
        Mark::Start => {
            // A start without an end (the guest died mid-run) drops the open
            // region: its counts would belong to no finished run.
            state.start_region();
            if let Some(model) = model.as_mut() {
                model.start_region();
            }
        }
        Mark::PartStart(number) => {
            if let Some(model) = model.as_mut() {
                model.start_part(number);
            }
        }
        Mark::PartEnd => {
            if let Some(model) = model.as_mut() {
                model.end_part();
            }
        }
        Mark::WhichVcpu => {}
    });
}

unsafe extern "C" fn on_model_block(vcpu: c_uint, block: *mut c_void) {
    // SAFETY: `block` points into one of the model's chunks of blocks,
    // which live as long as the plugin.
    let b = unsafe { *(block as *const ModelBlock) };
    // QEMU's plugin API gives no physical address for instructions (only a
    // host one): the L1i holds them by virtual address.
    let lines = model::lines(b.pc, u64::from(b.bytes));
    let vcpu = vcpu as usize;
    PLUGIN.model.with_vcpu(|m| {
        let Some(m) = m.as_mut() else { return };
        m.translations.block(vcpu);
        let instructions = u64::from(b.instructions);
        if m.attribution.is_none() {
            m.model
                .block(vcpu, b.pc, b.mode(), instructions, lines, b.end());
            m.model.block_cost(vcpu, u64::from(b.cost));
            m.block_tlb(vcpu, &b);
            return;
        }
        // A turn that closes a round replays it: those counts belong to
        // the blocks that made them, before this block's are read.
        m.model.turn(vcpu);
        m.drain_replayed();
        m.model.tag(vcpu, b.index);
        let before = attribution::values(&m.model.vcpu_counts(vcpu));
        m.model
            .block(vcpu, b.pc, b.mode(), instructions, lines, b.end());
        m.model.block_cost(vcpu, u64::from(b.cost));
        m.block_tlb(vcpu, &b);
        let after = attribution::values(&m.model.vcpu_counts(vcpu));
        if let Some(a) = m.attribution.as_mut() {
            a.enter(vcpu, b.index, &before, &after);
        }
    });
}

/// Bytes per guest page: an access that crosses a page boundary may go on
/// at an unrelated physical address.
const PAGE: u64 = 4096;

/// The guest physical address of the access at `vaddr`, from the TLB entry
/// the access has just used; `None` when QEMU has none.
#[inline(always)]
unsafe fn physical(info: sys::qemu_plugin_meminfo_t, vaddr: u64) -> Option<u64> {
    let hwaddr = sys::qemu_plugin_get_hwaddr(info, vaddr);
    if hwaddr.is_null() {
        return None;
    }
    Some(sys::qemu_plugin_hwaddr_phys_addr(hwaddr))
}

#[inline(always)]
unsafe fn model_access(vcpu: c_uint, info: sys::qemu_plugin_meminfo_t, vaddr: u64, store: bool) {
    let size = 1u64 << sys::qemu_plugin_mem_size_shift(info);
    let in_page = PAGE - (vaddr & (PAGE - 1));
    // The caches are physically tagged: two processes' data at the same
    // virtual address are different lines, one page mapped twice is one.
    PLUGIN.model.with_vcpu(|m| {
        let Some(m) = m.as_mut() else { return };
        let v = vcpu as usize;
        let ask = |address| physical(info, address);
        let first = m.translations.physical(v, vaddr, ask);
        let rest = (size > in_page).then(|| {
            let next = vaddr.wrapping_add(in_page);
            (next, m.translations.physical(v, next, ask))
        });
        if m.attribution.is_some() {
            m.model.turn(v);
            m.drain_replayed();
        }
        if m.model.config.tlb_walk_cycles > 0 {
            m.data_tlb(v, vaddr);
            if let Some((next, _)) = rest {
                m.data_tlb(v, next);
            }
        }
        let (head, tail) = match rest {
            None => (size, 0),
            Some(_) => (in_page, size - in_page),
        };
        match first {
            Some(address) => m.model.data(v, address, head, store),
            None => {
                PLUGIN.virtual_accesses.fetch_add(1, Ordering::Relaxed);
                m.model.data_virtual(v, vaddr, head, store)
            }
        }
        match rest {
            None => {}
            Some((_, Some(address))) => m.model.data(v, address, tail, store),
            Some((next, None)) => {
                PLUGIN.virtual_accesses.fetch_add(1, Ordering::Relaxed);
                m.model.data_virtual(v, next, tail, store)
            }
        }
    });
}

/// Loads and stores call back apart (`STORE`), so that neither asks QEMU
/// which it is; so do a string instruction's elements (`STRING`).
unsafe extern "C" fn on_model_access<const STORE: bool, const STRING: bool>(
    vcpu: c_uint,
    info: sys::qemu_plugin_meminfo_t,
    vaddr: u64,
    _userdata: *mut c_void,
) {
    if STRING {
        model_string_access(vcpu, info, vaddr, STORE);
    } else {
        model_access(vcpu, info, vaddr, STORE);
    }
}

/// An access by a `rep movs` or `rep stos` when the model costs them
/// apart: the model asks for the physical address only of a line the
/// instruction's last access of the kind was not in, so an element in
/// the same line as the one before costs no look-up in QEMU's TLB.
#[inline(always)]
unsafe fn model_string_access(
    vcpu: c_uint,
    info: sys::qemu_plugin_meminfo_t,
    vaddr: u64,
    store: bool,
) {
    let size = 1u64 << sys::qemu_plugin_mem_size_shift(info);
    PLUGIN.model.with_vcpu(|m| {
        let Some(m) = m.as_mut() else { return };
        let v = vcpu as usize;
        if m.attribution.is_some() {
            m.model.turn(v);
            m.drain_replayed();
        }
        if m.model.config.tlb_walk_cycles > 0 {
            m.data_tlb(v, vaddr);
        }
        // SAFETY: `info` is the access QEMU is calling back for.
        let by_virtual = m
            .model
            .string_data(v, vaddr, size, store, |at| unsafe { physical(info, at) });
        if by_virtual > 0 {
            PLUGIN
                .virtual_accesses
                .fetch_add(u64::from(by_virtual), Ordering::Relaxed);
        }
    });
}

type MemCallback = unsafe extern "C" fn(c_uint, sys::qemu_plugin_meminfo_t, u64, *mut c_void);

/// Registers the model's callbacks on a block being translated.
unsafe fn instrument_for_model(tb: *mut sys::qemu_plugin_tb) {
    PLUGIN.model.with(|model| {
        if let Some(m) = model.as_mut() {
            instrument_block(tb, m);
        }
    });
}

unsafe fn instrument_block(tb: *mut sys::qemu_plugin_tb, m: &mut ModelState) {
    let n = sys::qemu_plugin_tb_n_insns(tb);
    let pc = sys::qemu_plugin_tb_vaddr(tb);
    let mut bytes_end = pc;
    let mut end = BlockEnd::Other;
    let mut flush = Flush::None;
    let width = m.model.config.issue_width;
    let mut code = Vec::new();
    for i in 0..n {
        let insn = sys::qemu_plugin_tb_get_insn(tb, i);
        let address = sys::qemu_plugin_insn_vaddr(insn);
        let size = sys::qemu_plugin_insn_size(insn);
        if width > 0 {
            let mut bytes = [0u8; 16];
            let size = size.min(bytes.len());
            sys::qemu_plugin_insn_data(insn, bytes.as_mut_ptr().cast(), size);
            code.extend_from_slice(&bytes[..size]);
        }
        // A block's instructions follow each other without gaps.
        bytes_end = address.wrapping_add(size as u64);
        if i + 1 == n {
            let mut bytes = [0u8; 16];
            let size = size.min(bytes.len());
            sys::qemu_plugin_insn_data(insn, bytes.as_mut_ptr().cast(), size);
            end = model::classify(address, &bytes[..size]);
            flush = model::flush_of(&bytes[..size]);
        }
        // Only a block's last instruction can be a string instruction
        // (QEMU ends the block after one).
        let string =
            matches!(end, BlockEnd::String { .. }) && m.model.config.string_bytes_per_cycle > 0;
        // A locked read-modify-write is one read for ownership: its load
        // is counted as a store, its store not again.
        let locked = m.model.config.locked_rfo == 1 && {
            let mut bytes = [0u8; 16];
            let size = size.min(bytes.len());
            sys::qemu_plugin_insn_data(insn, bytes.as_mut_ptr().cast(), size);
            model::locked(&bytes[..size])
        };
        let (load, store): (MemCallback, Option<MemCallback>) = if string {
            (
                on_model_access::<false, true>,
                Some(on_model_access::<true, true>),
            )
        } else if locked {
            (on_model_access::<true, false>, None)
        } else {
            (
                on_model_access::<false, false>,
                Some(on_model_access::<true, false>),
            )
        };
        for (callback, rw) in [
            (Some(load), sys::qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_R),
            (store, sys::qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_W),
        ] {
            let Some(callback) = callback else { continue };
            sys::qemu_plugin_register_vcpu_mem_cb(
                insn,
                Some(callback),
                sys::qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                rw,
                std::ptr::null_mut(),
            );
        }
    }
    let index = m
        .attribution
        .as_mut()
        .map_or(u32::MAX, Attribution::add_block);
    let mut record = ModelBlock::new(pc, n, bytes_end.wrapping_sub(pc), end);
    record.index = index;
    record.flush = flush;
    if width > 0 {
        let core = throughput::Core {
            width,
            load: m.model.config.load_cycles,
            special: m.model.config.special_costs == 1,
        };
        let cost = throughput::block_cost(&code, pc, core);
        record.cost = u16::try_from(cost).unwrap_or(u16::MAX);
    }
    let pointer = m.add_block(record);
    // Registered before the block's memory callbacks run, so the block's
    // mode is set when its accesses are counted.
    sys::qemu_plugin_register_vcpu_tb_exec_cb(
        tb,
        Some(on_model_block),
        sys::qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
        pointer.cast_mut().cast(),
    );
}

unsafe extern "C" fn on_kernel_block(_vcpu: c_uint, hits: *mut c_void) {
    // SAFETY: `hits` is a block's counter, which lives as long as the plugin.
    unsafe { &*(hits as *const AtomicU64) }.fetch_add(1, Ordering::Relaxed);
}

unsafe extern "C" fn on_user_block(_vcpu: c_uint, insns: *mut c_void) {
    // The pointer-sized user datum is the block's instruction count.
    PLUGIN.user_insns.fetch_add(insns as u64, Ordering::Relaxed);
}

unsafe extern "C" fn on_translate(_id: sys::qemu_plugin_id_t, tb: *mut sys::qemu_plugin_tb) {
    instrument_for_model(tb);
    let n = sys::qemu_plugin_tb_n_insns(tb);
    let mut insns = Vec::with_capacity(n);
    for i in 0..n {
        let insn = sys::qemu_plugin_tb_get_insn(tb, i);
        insns.push(sys::qemu_plugin_insn_vaddr(insn));
        // Seven bytes on x86-64, four on arm64; no four-byte x86-64
        // instruction starts with an arm64 marker's 0x3f (AAS, invalid in
        // 64-bit mode), so one check serves both guests.
        let size = sys::qemu_plugin_insn_size(insn);
        if MARKER_SIZES.contains(&size) {
            let mut bytes = [0u8; 7];
            sys::qemu_plugin_insn_data(insn, bytes.as_mut_ptr().cast(), size);
            // Parts are counted by the model alone: without it their
            // markers get no callback, as before parts existed.
            let mark = Mark::of(&bytes[..size]).filter(|mark| match mark {
                Mark::Start | Mark::End => true,
                Mark::WhichVcpu => PLUGIN
                    .which_vcpu
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .is_some(),
                Mark::PartStart(_) | Mark::PartEnd => PLUGIN.model.with(|m| m.is_some()),
            });
            if let Some(mark) = mark {
                sys::qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    Some(on_mark),
                    sys::qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    mark.datum(),
                );
            }
            // The store right after the which-vCPU marker: a marker last in
            // its block has none here, and the check sees a store missing.
            if mark == Some(Mark::WhichVcpu) && i + 1 < n {
                sys::qemu_plugin_register_vcpu_mem_cb(
                    sys::qemu_plugin_tb_get_insn(tb, i + 1),
                    Some(on_which_vcpu_store),
                    sys::qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    sys::qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_W,
                    std::ptr::null_mut(),
                );
            }
        }
    }
    let mut guard = PLUGIN.state.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else { return };
    if !state.profile {
        return;
    }
    // A kernel block's slot counts its starts, each of which executes every
    // one of its instructions once; the user slot sums instructions.
    let kernel = sys::qemu_plugin_tb_vaddr(tb) >= KERNEL_HALF;
    if state.counting == Counting::Callback {
        const FLAGS: sys::qemu_plugin_cb_flags = sys::qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS;
        if kernel {
            let hits = Box::new(AtomicU64::new(0));
            let pointer = (&*hits as *const AtomicU64).cast_mut().cast();
            state.blocks.push(Block { insns, hits });
            sys::qemu_plugin_register_vcpu_tb_exec_cb(tb, Some(on_kernel_block), FLAGS, pointer);
        } else {
            let count = n as *mut c_void;
            sys::qemu_plugin_register_vcpu_tb_exec_cb(tb, Some(on_user_block), FLAGS, count);
        }
        return;
    }
    let (entry, add) = if kernel {
        let index = state.new_slot();
        state.blocks.push(Block {
            insns,
            hits: Box::default(),
        });
        (state.slot(index), 1)
    } else {
        (state.user, n as u64)
    };
    sys::qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(
        tb,
        sys::qemu_plugin_op::QEMU_PLUGIN_INLINE_ADD_U64,
        entry,
        add,
    );
}

unsafe extern "C" fn on_exit(_id: sys::qemu_plugin_id_t, _userdata: *mut c_void) {
    let guard = PLUGIN.state.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(seen) = PLUGIN
        .which_vcpu
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
    {
        if let Some(state) = guard.as_ref() {
            if let Err(e) = write_which_vcpu(&state.out, seen) {
                let message = format!("markbench profile plugin: writing {}: {e}\n\0", state.out);
                sys::qemu_plugin_outs(message.as_ptr().cast());
            }
        }
        return;
    }
    if let Some(state) = guard.as_ref() {
        if let Err(e) = PLUGIN.model.with(|model| state.write(model.as_ref())) {
            let message = format!("markbench profile plugin: writing {}: {e}\n\0", state.out);
            sys::qemu_plugin_outs(message.as_ptr().cast());
        }
    }
}

/// Called by QEMU when it loads the plugin; arguments are `out=FILE`,
/// `model=cycles` with the model's optional `key=value` settings,
/// `profile=off` to count nothing per address (only the model's lines), and
/// `check=vcpu` to write only the vCPU index of every which-vCPU marker.
///
/// # Safety
/// QEMU passes `argc` valid NUL-terminated strings in `argv`.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(
    id: sys::qemu_plugin_id_t,
    info: *const sys::qemu_info_t,
    argc: c_int,
    argv: *mut *mut c_char,
) -> c_int {
    let mut out = None;
    let mut model = false;
    let mut profile = true;
    let mut weave = true;
    let mut linear = true;
    let mut config = Config::default();
    let mut settings = Vec::new();
    for i in 0..argc.max(0) as usize {
        let arg = CStr::from_ptr(*argv.add(i)).to_string_lossy();
        match arg.split_once('=') {
            Some(("out", path)) if !path.is_empty() => out = Some(path.to_string()),
            Some(("model", "cycles")) => model = true,
            Some(("profile", "off")) => profile = false,
            Some(("check", "vcpu")) => {
                // The check alone: it writes the vCPUs it saw, no profile.
                *PLUGIN.which_vcpu.lock().unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
                profile = false;
            }
            Some(("weave", "off")) => weave = false,
            Some(("weave", "on")) => weave = true,
            Some(("linear", "off")) => linear = false,
            Some(("linear", "on")) => linear = true,
            Some((key, value)) if model::CONFIG_KEYS.contains(&key) => {
                if let Err(e) = config.set(key, value) {
                    let message = format!("markbench profile plugin: {e}\n\0");
                    sys::qemu_plugin_outs(message.as_ptr().cast());
                    return -1;
                }
                settings.push(key.to_string());
            }
            _ => {
                let message = format!("markbench profile plugin: unknown argument {arg:?}\n\0");
                sys::qemu_plugin_outs(message.as_ptr().cast());
                return -1;
            }
        }
    }
    let Some(out) = out else {
        sys::qemu_plugin_outs(c"markbench profile plugin: needs out=FILE\n".as_ptr());
        return -1;
    };
    // SAFETY: QEMU passes its info; `system` is the variant of a system
    // emulator, the only kind that loads this plugin with a kernel.
    let vcpus = if info.is_null() || !(*info).system_emulation {
        1
    } else {
        (*info).__bindgen_anon_1.system.smp_vcpus
    };
    if !model && !settings.is_empty() {
        let message = format!(
            "markbench profile plugin: {} without model=cycles\n\0",
            settings.join(", ")
        );
        sys::qemu_plugin_outs(message.as_ptr().cast());
        return -1;
    }
    if model {
        let built = match Model::new(config, vcpus.max(1) as usize) {
            Ok(mut m) => {
                m.set_weave(weave);
                m.record_replayed(profile);
                m
            }
            Err(e) => {
                let message = format!("markbench profile plugin: {e}\n\0");
                sys::qemu_plugin_outs(message.as_ptr().cast());
                return -1;
            }
        };
        PLUGIN.model.with(|model| {
            *model = Some(ModelState::new(
                built,
                // The profile's buckets get the model's counts too.
                profile.then(|| Attribution::new(vcpus.max(1) as usize)),
                linear,
            ))
        });
    }
    let counting = if vcpus > 1 {
        Counting::Callback
    } else {
        Counting::Inline
    };
    let user_board = sys::qemu_plugin_scoreboard_new(8);
    *PLUGIN.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(State {
        out,
        profile,
        counting,
        chunks: Vec::new(),
        blocks: Vec::new(),
        user: sys::qemu_plugin_u64 {
            score: user_board,
            offset: 0,
        },
        open: false,
        regions: Vec::new(),
    });
    PLUGIN
        .vcpu_threads
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .announced = vcpus.max(1) as u32;
    sys::qemu_plugin_register_vcpu_init_cb(id, Some(on_vcpu_init));
    sys::qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_translate));
    sys::qemu_plugin_register_atexit_cb(id, Some(on_exit), std::ptr::null_mut());
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ModelState {
        ModelState::new(Model::new(Config::default(), 1).unwrap(), None, true)
    }

    /// Runs a kernel block of `n` instructions that ends in no branch.
    fn run(s: &mut ModelState, n: u64) {
        s.model.block(
            0,
            0xffff_ffff_8100_0000,
            Mode::Kernel,
            n,
            1..2,
            BlockEnd::Other,
        );
        // A block of one cycle an instruction.
        s.model.block_cost(0, n * throughput::PARTS);
    }

    fn written(s: &ModelState) -> String {
        let mut out = Vec::new();
        for number in 0..s.regions.len() {
            s.write_region(&mut out, number).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    fn count(text: &str, name: &str) -> Vec<u64> {
        text.lines()
            .filter_map(|l| {
                let fields: Vec<&str> = l.split('\t').collect();
                (fields[2] == name).then(|| fields[3].parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn parts_inside_a_region_get_their_own_counts_after_the_regions() {
        let mut s = state();
        run(&mut s, 100); // before the region: counted nowhere
        s.start_region();
        run(&mut s, 10);
        s.start_part(4);
        run(&mut s, 7);
        s.end_part();
        s.start_part(1);
        run(&mut s, 3);
        s.end_part();
        s.end_part(); // an end without a start: nothing
        s.end_region();
        s.start_part(2); // outside a region: nothing
        run(&mut s, 5);
        s.end_part();
        s.start_region();
        s.start_part(0);
        run(&mut s, 8);
        s.end_region(); // the part never ended: dropped
        let text = written(&s);
        assert_eq!(count(&text, "kernel:instructions"), [20, 8]);
        assert_eq!(count(&text, "part4/kernel:instructions"), [7]);
        assert_eq!(count(&text, "part1/kernel:instructions"), [3]);
        assert_eq!(count(&text, "part1/user:instructions"), [0]);
        assert!(count(&text, "part4/kernel:estimated-cycles")[0] >= 7);
        assert!(
            count(&text, "part2/kernel:instructions").is_empty(),
            "{text}"
        );
        assert!(
            count(&text, "part0/kernel:instructions").is_empty(),
            "{text}"
        );
        // Region 0's part lines follow its own and carry its number.
        let first_part = text.lines().position(|l| l.contains("part4/")).unwrap();
        let last_own = text
            .lines()
            .collect::<Vec<_>>()
            .iter()
            .rposition(|l| l.starts_with("0\tmodel\tkernel:"))
            .unwrap();
        assert!(last_own < first_part, "{text}");
        assert!(text
            .lines()
            .filter(|l| l.contains("part"))
            .all(|l| l.starts_with("0\t")));
    }

    #[test]
    fn a_file_with_every_later_part_off_names_none_of_them() {
        let off = Config {
            rsb_depth: 0,
            skip_entries: 0,
            string_bytes_per_cycle: 0,
            prefetch_streams: 0,
            llc_victim: false,
            issue_width: 0,
            tlb_walk_cycles: 0,
            weave_cycles: 0,
            burst_ownership: 0,
            locked_rfo: 0,
            ..Config::default()
        };
        // The settings comments, then the counts.
        let file = |config: Config| {
            let mut s = ModelState::new(Model::new(config, 1).unwrap(), None, true);
            s.start_region();
            run(&mut s, 10);
            s.end_region();
            let mut settings = Vec::new();
            s.write_settings(&mut settings).unwrap();
            (String::from_utf8(settings).unwrap(), written(&s))
        };
        let (settings, counts) = file(off);
        for name in Counts::STRING.iter().chain(&["base-cycles", "tlb-misses"]) {
            assert!(!counts.contains(name), "{counts}");
        }
        assert_eq!(count(&counts, "kernel:instructions"), [10]);
        assert_eq!(settings.lines().count(), 2, "{settings}");
        let (settings, counts) = file(Config::default());
        assert_eq!(count(&counts, "kernel:string-bytes"), [0]);
        assert_eq!(count(&counts, "kernel:base-cycles"), [10]);
        assert!(
            settings.contains("# model core: blocks at their throughput, 4 instructions a cycle"),
            "{settings}"
        );
        assert!(
            settings.contains("# model branches: rsb 32 entries, skip-entries 1"),
            "{settings}"
        );
        assert!(
            settings.contains("# model strings: startup 35 cycles, 32 bytes per cycle"),
            "{settings}"
        );
    }

    #[test]
    fn a_one_vcpu_file_has_no_count_only_several_vcpus_make() {
        for vcpus in [1, 2] {
            let mut s = ModelState::new(Model::new(Config::default(), vcpus).unwrap(), None, true);
            s.start_region();
            run(&mut s, 10);
            s.end_region();
            let text = written(&s);
            let lines = count(&text, "kernel:rfo-misses");
            assert_eq!(lines.len(), vcpus - 1, "{text}");
            assert_eq!(count(&text, "kernel:coherence-misses"), [0]);
        }
    }

    #[test]
    fn a_file_with_the_memory_sides_parts_off_is_as_before_them() {
        let settings = |s: &ModelState| {
            let mut out = Vec::new();
            s.write_settings(&mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        for on in [false, true] {
            let config = Config {
                prefetch_streams: if on { 16 } else { 0 },
                llc_victim: on,
                ..Config::default()
            };
            let mut s = ModelState::new(Model::new(config, 1).unwrap(), None, true);
            s.start_region();
            run(&mut s, 10);
            s.end_region();
            let text = written(&s);
            let lines = count(&text, "kernel:l2-prefetches");
            assert_eq!(lines.len(), usize::from(on), "{text}");
            // The lines before these parts, in their order.
            let names: Vec<&str> = text
                .lines()
                .map(|l| l.split('\t').nth(2).unwrap())
                .collect();
            let mut before: Vec<String> = Vec::new();
            for mode in ["user", "kernel"] {
                for name in Counts::NAMES {
                    if !Counts::SEVERAL_VCPUS_ONLY.contains(&name) && name != "l2-prefetches" {
                        before.push(format!("{mode}:{name}"));
                    }
                }
                before.push(format!("{mode}:estimated-cycles"));
            }
            if !on {
                assert_eq!(names, before);
            }
            let settings = settings(&s);
            assert_eq!(settings.contains("prefetcher"), on, "{settings}");
            assert_eq!(settings.contains("victim"), on, "{settings}");
        }
    }

    #[test]
    fn a_marker_counts_what_the_weave_held_back_before_it() {
        let mut model = Model::new(Config::default(), 2).unwrap();
        model.set_weave(true);
        let mut s = ModelState::new(model, None, true);
        s.model.data(1, 0x9000, 8, false); // before the region
        s.start_region();
        s.model.data(0, 0x4000, 8, false);
        s.start_part(2);
        s.model.data(0, 0x5000, 8, false);
        s.model.data(0, 0x6000, 8, false);
        s.end_part();
        s.end_region();
        let text = written(&s);
        assert_eq!(count(&text, "kernel:l1d-misses"), [3]);
        assert_eq!(count(&text, "part2/kernel:l1d-misses"), [2]);
        let mut settings = Vec::new();
        s.write_settings(&mut settings).unwrap();
        let settings = String::from_utf8(settings).unwrap();
        assert!(settings.contains("# model weave: "), "{settings}");
    }

    #[test]
    fn parts_do_not_nest() {
        let mut s = state();
        s.start_region();
        s.start_part(3);
        run(&mut s, 4);
        s.start_part(5);
        run(&mut s, 6);
        s.end_part();
        s.end_part();
        s.end_region();
        let text = written(&s);
        assert_eq!(count(&text, "part3/kernel:instructions"), [10]);
        assert!(
            count(&text, "part5/kernel:instructions").is_empty(),
            "{text}"
        );
    }

    #[test]
    fn a_block_record_gives_back_the_block_it_was_made_of() {
        let cases = [
            (0x40_1000, 7, 30, BlockEnd::Other),
            (
                0xffff_ffff_8100_0000,
                3,
                17,
                BlockEnd::Conditional {
                    pc: 0xffff_ffff_8100_000b,
                    target: 0xffff_ffff_80ff_ff00,
                    next: 0xffff_ffff_8100_0011,
                },
            ),
            (0x40_2000, 2, 4, BlockEnd::Indirect { pc: 0x40_2003 }),
            (0xffff_ffff_8100_2000, 2, 2, BlockEnd::Halt),
            (
                0x40_3000,
                4,
                21,
                BlockEnd::Call {
                    pc: 0x40_3010,
                    next: 0x40_3015,
                },
            ),
            (
                0xffff_ffff_8100_3000,
                1,
                2,
                BlockEnd::IndirectCall {
                    pc: 0xffff_ffff_8100_3000,
                    next: 0xffff_ffff_8100_3002,
                },
            ),
            (0x40_4000, 5, 9, BlockEnd::Return { pc: 0x40_4008 }),
            (0x40_5000, 1, 3, BlockEnd::String { pc: 0x40_5000 }),
        ];
        for (pc, instructions, bytes, end) in cases {
            let record = ModelBlock::new(pc, instructions, bytes, end);
            assert_eq!(record.end(), end);
            assert_eq!(u64::from(record.instructions), instructions as u64);
            assert_eq!(u64::from(record.bytes), bytes);
            let kernel = pc >= KERNEL_HALF;
            assert_eq!(record.mode() == Mode::Kernel, kernel);
        }
        assert_eq!(std::mem::size_of::<ModelBlock>(), 32);
    }
}
