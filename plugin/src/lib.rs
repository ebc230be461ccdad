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
//! accelerator). Only the marker instructions get a callback: the start
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
//! A block is counted whole when it starts, so an exception in its middle
//! (a page fault) counts the instructions after the fault once too often;
//! the host compares the totals with icount's guest time to bound that.

use qemu_plugin_sys as sys;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The plugin API version this plugin is written against. QEMU refuses a
/// plugin whose version is above its own (10.0 has 4) or below its minimum.
#[no_mangle]
pub static qemu_plugin_version: c_int = 4;

/// The marker instructions: `0f 1f 80` + a 32-bit displacement.
const MARK_START: [u8; 7] = [0x0f, 0x1f, 0x80, 0x01, 0x53, 0x42, 0x4d];
const MARK_END: [u8; 7] = [0x0f, 0x1f, 0x80, 0x02, 0x53, 0x42, 0x4d];

/// The lowest address of the kernel half of the x86_64 address space.
const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

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

/// Instructions executed in user space, when blocks call back.
static USER_INSNS: AtomicU64 = AtomicU64::new(0);

#[derive(Default)]
struct Region {
    user: u64,
    /// (block index, times the block started) for blocks that ran.
    blocks: Vec<(u32, u64)>,
}

struct State {
    out: String,
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

static STATE: Mutex<Option<State>> = Mutex::new(None);

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
            USER_INSNS.store(0, Ordering::Relaxed);
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
            region.user = USER_INSNS.load(Ordering::Relaxed);
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

    fn write(&self) -> std::io::Result<()> {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&self.out)?);
        writeln!(out, "# markbench-profile 1")?;
        writeln!(out, "region\tkind\taddress\tinstructions")?;
        for (number, region) in self.regions.iter().enumerate() {
            writeln!(out, "{number}\tuser\t-\t{}", region.user)?;
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
        }
        out.flush()
    }
}

unsafe extern "C" fn on_mark(_vcpu: c_uint, userdata: *mut c_void) {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else { return };
    if userdata.is_null() {
        state.end_region();
    } else {
        // A start without an end (the guest died mid-run) drops the open
        // region: its counts would belong to no finished run.
        state.start_region();
    }
}

unsafe extern "C" fn on_kernel_block(_vcpu: c_uint, hits: *mut c_void) {
    // SAFETY: `hits` is a block's counter, which lives as long as the plugin.
    unsafe { &*(hits as *const AtomicU64) }.fetch_add(1, Ordering::Relaxed);
}

unsafe extern "C" fn on_user_block(_vcpu: c_uint, insns: *mut c_void) {
    // The pointer-sized user datum is the block's instruction count.
    USER_INSNS.fetch_add(insns as u64, Ordering::Relaxed);
}

unsafe extern "C" fn on_translate(_id: sys::qemu_plugin_id_t, tb: *mut sys::qemu_plugin_tb) {
    let n = sys::qemu_plugin_tb_n_insns(tb);
    let mut insns = Vec::with_capacity(n);
    for i in 0..n {
        let insn = sys::qemu_plugin_tb_get_insn(tb, i);
        insns.push(sys::qemu_plugin_insn_vaddr(insn));
        if sys::qemu_plugin_insn_size(insn) == MARK_START.len() {
            let mut bytes = [0u8; 7];
            sys::qemu_plugin_insn_data(insn, bytes.as_mut_ptr().cast(), bytes.len());
            // The start marker passes a non-null tag, the end a null one.
            let tag = if bytes == MARK_START {
                Some(std::ptr::dangling_mut::<c_void>())
            } else if bytes == MARK_END {
                Some(std::ptr::null_mut())
            } else {
                None
            };
            if let Some(tag) = tag {
                sys::qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    Some(on_mark),
                    sys::qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    tag,
                );
            }
        }
    }
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else { return };
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
    let guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(state) = guard.as_ref() {
        if let Err(e) = state.write() {
            let message = format!("markbench profile plugin: writing {}: {e}\n\0", state.out);
            sys::qemu_plugin_outs(message.as_ptr().cast());
        }
    }
}

/// Called by QEMU when it loads the plugin; arguments are `out=FILE`.
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
    for i in 0..argc.max(0) as usize {
        let arg = CStr::from_ptr(*argv.add(i)).to_string_lossy();
        match arg.split_once('=') {
            Some(("out", path)) if !path.is_empty() => out = Some(path.to_string()),
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
    let counting = if vcpus > 1 {
        Counting::Callback
    } else {
        Counting::Inline
    };
    let user_board = sys::qemu_plugin_scoreboard_new(8);
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(State {
        out,
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
    sys::qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_translate));
    sys::qemu_plugin_register_atexit_cb(id, Some(on_exit), std::ptr::null_mut());
    0
}
