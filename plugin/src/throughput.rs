//! What a translated block costs a core that runs it again and again, in
//! cycles, before any miss: computed once, when QEMU translates the block,
//! from its decoded instructions.
//!
//! A current core issues several instructions a cycle where they do not
//! depend on each other, so charging one cycle an instruction makes loops
//! of independent work several times too slow and a chain of dependent
//! loads too fast. In the steady state of a block that runs back to back
//! (a loop's body, or each block of a longer loop in turn), two things
//! bound its time, as llvm-mca's and OSACA's throughput estimates of a
//! basic block take them:
//! - the issue width: `instructions / width` cycles;
//! - the loop-carried chains: a register whose value at the block's end
//!   depends, through instructions of known latencies, on its own value at
//!   the block's start cannot be ready sooner than the sum of those
//!   latencies after it was. A chain that runs through several blocks is
//!   the sum of its parts in each, so summing the blocks' costs keeps it.
//!   A place in memory the block stores to and loads from (the same
//!   address registers, unchanged in the block, and displacement) carries
//!   a chain as a register does, each load of a stored value a load's
//!   latency (a counter incremented in memory).
//!
//! The block costs the larger, in sixteenths of a cycle so that short
//! blocks add up as a core runs them (two blocks of two instructions on a
//! core of four a cycle take one cycle, not two); a block that ends in a
//! branch taken when it is reached (a jump, call or return, or a
//! conditional branch backwards, as a loop's is) costs at least a cycle,
//! as a core takes one such branch a cycle, and so does an execution of a
//! string instruction. Misses add their penalties beyond this, as before.
//!
//! The privileged and serializing instructions a system call is made of
//! (`swapgs`, `sysret`, `iret`, `wrmsr`, `rdmsr`, CR3 writes, `lfence`,
//! `mfence`, `cpuid`, `rdtsc(p)`, `syscall`, `invlpg`) cost their class
//! ([`special_cost`]) on top; a serializing one waits for every
//! instruction before it and holds back every one after it, so the
//! block's cost is then the sum of its parts before and after, not their
//! overlap. What is not modelled: ports (every instruction may go
//! anywhere), the front end, and chains through memory (a store then a
//! load of the same address).

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess,
    OpKind, Register,
};

/// A block's cost is kept in these parts of a cycle.
pub const PARTS: u64 = 16;

/// The latencies a block's cost is made of, in cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Core {
    /// Instructions the core issues a cycle.
    pub width: u32,
    /// A load served by the L1d, from its address to its value (the
    /// misses' penalties come on top of it).
    pub load: u32,
    /// Whether privileged and serializing instructions cost their class
    /// ([`special_cost`]); without, they are instructions like others.
    pub special: bool,
}

/// Registers are followed by their full register (EAX and AL are RAX),
/// plus the flags as one more.
const FLAGS: usize = 256;
const KEYS: usize = 257;
/// Places in memory followed, after the registers' keys.
const PLACES: usize = 16;

/// Where a register's value came from, as far as the block knows: for each
/// register's value at the block's start that it depends on, the longest
/// chain of latencies from that value to this one.
type Chain = Vec<(u16, u32)>;

/// The cycles a block of the instructions `code` (starting at `pc`) costs
/// on `core` each time it runs, in [`PARTS`] of a cycle: at least one
/// part, and a whole cycle when it ends in a branch taken when reached or
/// holds a string instruction. Bytes that do not decode count as an
/// instruction. Its privileged and serializing instructions add their
/// class, and a serializing one splits the block into parts that do not
/// overlap.
pub fn block_cost(code: &[u8], pc: u64, core: Core) -> u64 {
    if !core.special {
        return overlapped_cost(code, pc, core);
    }
    let mut decoder = Decoder::with_ip(64, code, pc, DecoderOptions::NONE);
    let mut instruction = Instruction::default();
    let (mut start, mut special, mut total) = (0usize, false, 0u64);
    while decoder.can_decode() {
        let offset = decoder.position();
        decoder.decode_out(&mut instruction);
        let Some((cycles, serializing)) = special_cost(&instruction) else {
            continue;
        };
        special = true;
        total += u64::from(cycles) * PARTS;
        if serializing {
            if offset > start {
                total += overlapped_cost(&code[start..offset], pc + start as u64, core);
            }
            start = decoder.position();
        }
    }
    if !special {
        return overlapped_cost(code, pc, core);
    }
    if start < code.len() {
        total += overlapped_cost(&code[start..], pc + start as u64, core);
    }
    total.max(1)
}

/// What a privileged or serializing instruction costs, in cycles, and
/// whether it serializes (the Intel SDM's serializing instructions, 9.3
/// of volume 3A: `cpuid`, `iret`, `wrmsr`, a write to a control register,
/// `invlpg`; and the fences and `rdtscp`, which wait for the instructions
/// before them). User-mode figures are Agner Fog's instruction tables
/// (Skylake; reciprocal throughputs): `cpuid` 100–250 (100 taken),
/// `rdtsc` 25, `rdtscp` 32, `lfence` 4, `mfence` 33. The privileged ones
/// fault in user mode, where those tables and uops.info measure, and have
/// no published figure of their own: the serializing ones are given
/// `cpuid`'s 100 (the same drain and microcode), the others (`swapgs`,
/// `rdmsr`, `syscall`, `sysenter`, `sysret`) `rdtsc`'s 25, a microcoded
/// instruction of some tens of micro-operations. `None` for every other
/// instruction.
pub fn special_cost(i: &Instruction) -> Option<(u32, bool)> {
    use Mnemonic::*;
    match i.mnemonic() {
        Cpuid => Some((100, true)),
        Rdtsc => Some((25, false)),
        Rdtscp => Some((32, true)),
        Lfence => Some((4, true)),
        Mfence => Some((33, true)),
        Iret | Iretd | Iretq | Wrmsr | Invlpg => Some((100, true)),
        Mov if i.op0_kind() == OpKind::Register
            && matches!(
                i.op0_register(),
                Register::CR0 | Register::CR3 | Register::CR4
            ) =>
        {
            Some((100, true))
        }
        Swapgs | Rdmsr | Syscall | Sysenter | Sysret | Sysretq => Some((25, false)),
        _ => None,
    }
}

/// [`block_cost`] of instructions that overlap as a core runs them.
fn overlapped_cost(code: &[u8], pc: u64, core: Core) -> u64 {
    let mut decoder = Decoder::with_ip(64, code, pc, DecoderOptions::NONE);
    let mut info = InstructionInfoFactory::new();
    // `None`: the register still holds its value from the block's start.
    let mut chains: Vec<Option<Chain>> = vec![None; KEYS + PLACES];
    let written = written_registers(code, pc);
    let mut places: Vec<(Register, Register, u32, u64)> = Vec::new();
    let mut instructions = 0u64;
    let mut instruction = Instruction::default();
    let mut whole = false;
    while decoder.can_decode() {
        decoder.decode_out(&mut instruction);
        instructions += 1;
        whole = match instruction.flow_control() {
            FlowControl::UnconditionalBranch
            | FlowControl::IndirectBranch
            | FlowControl::Call
            | FlowControl::IndirectCall
            | FlowControl::Return => true,
            FlowControl::ConditionalBranch => instruction.near_branch_target() <= instruction.ip(),
            _ => false,
        };
        // A rep-prefixed string instruction runs one element an execution
        // under icount, each a block of its own, costed apart by the
        // model's strings: it is an instruction here, no chain.
        // The model's strings subtract a cycle an execution.
        if instruction.has_rep_prefix()
            || instruction.has_repe_prefix()
            || instruction.has_repne_prefix()
        {
            whole = true;
            continue;
        }
        if instruction.is_invalid() {
            continue;
        }
        let latency = latency(&instruction);
        let info = info.info(&instruction);
        let loads = info
            .used_memory()
            .iter()
            .filter(|m| reads(m.access()))
            .flat_map(|m| [m.base(), m.index()])
            .filter(|r| *r != Register::None)
            .map(key)
            .collect::<Vec<_>>();
        let zeroing = is_zero_idiom(&instruction);
        let mut sources: Vec<(usize, u32)> = Vec::new();
        let mut writes: Vec<usize> = Vec::new();
        places_used(
            info.used_memory(),
            &written,
            &mut places,
            latency + core.load,
            &mut sources,
            &mut writes,
        );
        for used in info.used_registers() {
            let register = used.register();
            let k = key(register);
            if ignored(register) {
                continue;
            }
            if reads(used.access()) && !zeroing {
                sources.push((k, latency));
            }
            if writes_to(used.access()) {
                writes.push(k);
                // An 8- or 16-bit write merges into the rest of the register.
                if register.is_gpr8() || register.is_gpr16() {
                    sources.push((k, latency));
                }
            }
        }
        for k in loads {
            if !ignored_key(k) {
                sources.push((k, latency + core.load));
            }
        }
        if instruction.rflags_read() != 0 {
            sources.push((FLAGS, latency));
        }
        if instruction.rflags_modified() != 0 {
            writes.push(FLAGS);
        }
        if writes.is_empty() {
            continue;
        }
        let chain = joined(&chains, sources);
        for k in writes {
            chains[k] = Some(chain.clone());
        }
    }
    let carried = longest_carried(&chains);
    let issue = (instructions * PARTS).div_ceil(u64::from(core.width.max(1)));
    let least = if whole { PARTS } else { 1 };
    issue.max(carried * PARTS).max(least)
}

/// The places in memory among `used` (an address no register of the
/// block moves) as chain keys: a read is a source of `load` cycles, a
/// write a write.
fn places_used(
    used: &[iced_x86::UsedMemory],
    written: &[usize],
    places: &mut Vec<(Register, Register, u32, u64)>,
    load: u32,
    sources: &mut Vec<(usize, u32)>,
    writes: &mut Vec<usize>,
) {
    for m in used {
        let (base, index) = (m.base(), m.index());
        // Only an address the same on every run of the block names
        // one place: no address register changes in it.
        let fixed = [base, index]
            .iter()
            .all(|r| *r == Register::None || !written.contains(&key(*r)))
            && base != Register::RIP;
        if !fixed {
            continue;
        }
        let place = (base, index, m.scale(), m.displacement());
        let at = match places.iter().position(|p| *p == place) {
            Some(at) => at,
            None if places.len() < PLACES => {
                places.push(place);
                places.len() - 1
            }
            None => continue,
        };
        if reads(m.access()) {
            sources.push((KEYS + at, load));
        }
        if writes_to(m.access()) {
            writes.push(KEYS + at);
        }
    }
}

/// The chain of a value made from `sources` (keys and their latencies).
fn joined(chains: &[Option<Chain>], sources: Vec<(usize, u32)>) -> Chain {
    let mut chain: Chain = Vec::new();
    for (k, cycles) in sources {
        let from: Chain = chains[k].clone().unwrap_or_else(|| vec![(k as u16, 0)]);
        for (start, d) in from {
            let d = d + cycles;
            match chain.iter_mut().find(|(s, _)| *s == start) {
                Some((_, longest)) => *longest = (*longest).max(d),
                None => chain.push((start, d)),
            }
        }
    }
    chain
}

/// The longest chain from a key's value at the block's start to its own
/// value at the end, in cycles.
fn longest_carried(chains: &[Option<Chain>]) -> u64 {
    chains
        .iter()
        .enumerate()
        .filter_map(|(k, chain)| {
            let chain = chain.as_ref()?;
            chain
                .iter()
                .find(|(start, _)| usize::from(*start) == k)
                .map(|(_, d)| u64::from(*d))
        })
        .max()
        .unwrap_or(0)
}

/// The keys of the registers the block's instructions write.
fn written_registers(code: &[u8], pc: u64) -> Vec<usize> {
    let mut decoder = Decoder::with_ip(64, code, pc, DecoderOptions::NONE);
    let mut info = InstructionInfoFactory::new();
    let mut written = Vec::new();
    for instruction in &mut decoder {
        for used in info.info(&instruction).used_registers() {
            if writes_to(used.access()) {
                written.push(key(used.register()));
            }
        }
    }
    written
}

fn key(register: Register) -> usize {
    register.full_register() as usize
}

/// The stack pointer is kept by the core's stack engine and the
/// instruction pointer is no data: neither makes a chain.
fn ignored(register: Register) -> bool {
    ignored_key(key(register)) || register.is_segment_register()
}

fn ignored_key(k: usize) -> bool {
    k == Register::RSP as usize || k == Register::RIP as usize || k == Register::EIP as usize
}

fn reads(access: OpAccess) -> bool {
    matches!(
        access,
        OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite
    )
}

fn writes_to(access: OpAccess) -> bool {
    matches!(
        access,
        OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
    )
}

/// `xor r, r` and its kin: the core knows the result is zero without
/// waiting for `r`.
fn is_zero_idiom(i: &Instruction) -> bool {
    matches!(
        i.mnemonic(),
        Mnemonic::Xor
            | Mnemonic::Sub
            | Mnemonic::Pxor
            | Mnemonic::Xorps
            | Mnemonic::Xorpd
            | Mnemonic::Vpxor
            | Mnemonic::Vxorps
            | Mnemonic::Vxorpd
    ) && i.op_count() >= 2
        && i.op0_kind() == OpKind::Register
        && i.op1_kind() == OpKind::Register
        && i.op0_register() == i.op1_register()
}

/// Cycles from an instruction's register sources to its results, by
/// class (a current x86 server core's figures, as uops.info measures
/// them, rounded): moves between registers are renamed away and a load's
/// move is the load's latency alone (`Core::load`); integer
/// multiplies 3, divides 14; floating-point adds and multiplies 3, divides
/// 13, square roots 20; everything else 1.
fn latency(i: &Instruction) -> u32 {
    use Mnemonic::*;
    let register_move =
        i.op_count() == 2 && i.op0_kind() == OpKind::Register && i.op1_kind() == OpKind::Register;
    let loads = (0..i.op_count()).any(|n| i.op_kind(n) == OpKind::Memory) && i.mnemonic() != Lea;
    match i.mnemonic() {
        // A load's time is the load's; a move between registers is
        // renamed away.
        Mov | Movzx | Movsx | Movsxd | Movd | Movq | Movaps | Movapd | Movdqa | Movdqu | Movups
        | Movupd | Vmovaps | Vmovdqa | Vmovdqu | Vmovups
            if loads =>
        {
            0
        }
        Mov | Movaps | Movapd | Movdqa | Movdqu | Movups | Vmovaps | Vmovdqa | Vmovdqu
            if register_move =>
        {
            0
        }
        Imul | Mul | Mulx | Crc32 | Pdep | Pext => 3,
        Div | Idiv => 14,
        Addss | Addsd | Addps | Addpd | Subss | Subsd | Subps | Subpd | Mulss | Mulsd | Mulps
        | Mulpd | Vaddss | Vaddsd | Vaddps | Vaddpd | Vsubss | Vsubsd | Vsubps | Vsubpd
        | Vmulss | Vmulsd | Vmulps | Vmulpd => 3,
        Divss | Divsd | Divps | Divpd | Vdivss | Vdivsd | Vdivps | Vdivpd => 13,
        Sqrtss | Sqrtsd | Sqrtps | Sqrtpd | Vsqrtss | Vsqrtsd | Vsqrtps | Vsqrtpd => 20,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE: Core = Core {
        width: 4,
        load: 4,
        special: true,
    };

    /// The block's cost in cycles.
    fn block_cycles(code: &[u8], pc: u64, core: Core) -> f64 {
        block_cost(code, pc, core) as f64 / PARTS as f64
    }

    #[test]
    fn a_chain_of_dependent_adds_costs_a_cycle_an_add() {
        // add rax, rdi ×8; add rdi, 1; cmp rdi, r8; jne
        let mut code = Vec::new();
        for _ in 0..8 {
            code.extend([0x48, 0x01, 0xf8]);
        }
        code.extend([0x48, 0x83, 0xc7, 0x01, 0x4c, 0x39, 0xc7, 0x75, 0xe0]);
        assert_eq!(block_cycles(&code, 0x1000, CORE), 8.0);
    }

    #[test]
    fn independent_adds_run_at_the_issue_width() {
        // add rax,rdi; add rsi,rdi; add rcx,rdi; add rdx,rdi, twice; then
        // the loop's add, cmp and jne: 11 instructions, no chain above 2.
        let mut code = Vec::new();
        for _ in 0..2 {
            code.extend([0x48, 0x01, 0xf8, 0x48, 0x01, 0xfe, 0x48, 0x01, 0xf9]);
            code.extend([0x48, 0x01, 0xfa]);
        }
        code.extend([0x48, 0x83, 0xc7, 0x01, 0x4c, 0x39, 0xc7, 0x75, 0xe0]);
        assert_eq!(block_cycles(&code, 0x1000, CORE), 2.75);
        let narrow = Core { width: 1, ..CORE };
        assert_eq!(block_cycles(&code, 0x1000, narrow), 11.0);
    }

    #[test]
    fn a_pointer_chase_costs_a_load_an_iteration() {
        // mov rax, [rax]; sub rdx, 1; jne
        let code = [0x48, 0x8b, 0x00, 0x48, 0x83, 0xea, 0x01, 0x75, 0xf7];
        assert_eq!(block_cycles(&code, 0x1000, CORE), 4.0);
        let slow = Core { load: 5, ..CORE };
        assert_eq!(block_cycles(&code, 0x1000, slow), 5.0);
    }

    #[test]
    fn a_sum_of_loads_is_no_chain_through_the_loads() {
        // add rax, [rdx]; add rdx, 8; cmp rdx, rcx; jne: the loads' address
        // moves by one add an iteration, the sum by one add.
        let code = [
            0x48, 0x03, 0x02, 0x48, 0x83, 0xc2, 0x08, 0x48, 0x39, 0xca, 0x75, 0xf4,
        ];
        assert_eq!(block_cycles(&code, 0x1000, CORE), 1.0);
    }

    #[test]
    fn zeroing_and_register_moves_break_or_pass_a_chain_for_free() {
        // xor eax, eax; add rax, rbx: rax starts anew each time.
        let code = [0x31, 0xc0, 0x48, 0x01, 0xd8];
        assert_eq!(block_cycles(&code, 0x1000, CORE), 0.5);
        // imul rax, rax; mov rbx, rax; mov rax, rbx: 3 through the moves.
        let code = [0x48, 0x0f, 0xaf, 0xc0, 0x48, 0x89, 0xc3, 0x48, 0x89, 0xd8];
        assert_eq!(block_cycles(&code, 0x1000, CORE), 3.0);
    }

    #[test]
    fn pushes_and_calls_make_no_chain_through_the_stack_pointer() {
        // push rbx ×6; sub rsp, 0x98
        let code = [
            0x53, 0x53, 0x53, 0x53, 0x53, 0x53, 0x48, 0x81, 0xec, 0x98, 0, 0, 0,
        ];
        assert_eq!(block_cycles(&code, 0x1000, CORE), 1.75);
    }

    #[test]
    fn an_execution_of_a_string_instruction_is_one_cycle() {
        // rep movsb; rep stosq
        assert_eq!(block_cycles(&[0xf3, 0xa4], 0x1000, CORE), 1.0);
        assert_eq!(block_cycles(&[0xf3, 0x48, 0xab], 0x1000, CORE), 1.0);
    }

    #[test]
    fn a_block_ending_in_a_branch_taken_when_reached_is_a_cycle_at_least() {
        // test eax, eax; then a jne backwards (a loop), forwards, a jmp,
        // a ret.
        let test = [0x85, 0xc0];
        for (branch, least) in [
            (&[0x75, 0xf0][..], 1.0),
            (&[0x75, 0x10][..], 0.5),
            (&[0xeb, 0x10][..], 1.0),
            (&[0xc3][..], 1.0),
        ] {
            let code: Vec<u8> = test.iter().chain(branch).copied().collect();
            assert_eq!(block_cycles(&code, 0x1000, CORE), least, "{branch:x?}");
        }
    }

    #[test]
    fn a_counter_in_memory_is_a_chain_through_the_store_and_the_load() {
        // mov rax, [rdx]; add rax, 1; mov [rdx], rax; sub rcx, 1; jne
        let code = [
            0x48, 0x8b, 0x02, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x89, 0x02, 0x48, 0x83, 0xe9, 0x01,
            0x75, 0xf0,
        ];
        assert_eq!(block_cycles(&code, 0x1000, CORE), 5.0);
        // add qword [rdx], 1 the same.
        let code = [0x48, 0x83, 0x02, 0x01, 0x48, 0x83, 0xe9, 0x01, 0x75, 0xf6];
        assert_eq!(block_cycles(&code, 0x1000, CORE), 5.0);
        // A store through a pointer that moves (add rdx, 8) is no chain.
        let code = [
            0x48, 0x8b, 0x02, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x89, 0x02, 0x48, 0x83, 0xc2, 0x08,
            0x75, 0xf0,
        ];
        assert_eq!(block_cycles(&code, 0x1000, CORE), 1.25);
    }

    #[test]
    fn a_serializing_instruction_ends_the_overlap_and_costs_its_class() {
        // add rax, rdi ×4 (a chain of 4) and xor ecx, ecx; then cpuid;
        // then the same: the two halves do not overlap.
        let half: Vec<u8> = [0x48, 0x01, 0xf8]
            .repeat(4)
            .into_iter()
            .chain([0x31, 0xc9])
            .collect();
        let cpuid = [0x0f, 0xa2];
        let code: Vec<u8> = half.iter().chain(&cpuid).chain(&half).copied().collect();
        let alone = block_cycles(&half, 0x1000, CORE);
        assert_eq!(alone, 4.0);
        // The halves' chains through rax would overlap into 8 at most,
        // the issue width into 11/4: apart they are 4 + 100 + 4.
        assert_eq!(block_cycles(&code, 0x1000, CORE), 108.0);
        // lfence between them: 4 + 4 + 4; mov cr3, rax: 4 + 100 + 4.
        let fenced: Vec<u8> = half
            .iter()
            .chain(&[0x0f, 0xae, 0xe8])
            .chain(&half)
            .copied()
            .collect();
        assert_eq!(block_cycles(&fenced, 0x1000, CORE), 12.0);
        let plain = Core {
            special: false,
            ..CORE
        };
        // Without the classes cpuid is one more link of rax's chain.
        assert_eq!(block_cycles(&code, 0x1000, plain), 9.0);
        let cr3: Vec<u8> = half
            .iter()
            .chain(&[0x0f, 0x22, 0xd8])
            .chain(&half)
            .copied()
            .collect();
        assert_eq!(block_cycles(&cr3, 0x1000, CORE), 108.0);
    }

    #[test]
    fn a_system_calls_instructions_cost_their_class() {
        // swapgs; then 4 independent movs of immediates: 25 + 1.
        let code = [
            0x0f, 0x01, 0xf8, 0xb8, 1, 0, 0, 0, 0xb9, 1, 0, 0, 0, 0xba, 1, 0, 0, 0, 0xbe, 1, 0, 0,
            0,
        ];
        assert_eq!(block_cycles(&code, 0x1000, CORE), 26.25);
        // sysretq, iretq, wrmsr, rdmsr, rdtsc, rdtscp, mfence, syscall,
        // invlpg (rax) alone: their class, and those that do not serialize
        // their issue slot too (a whole cycle where they branch).
        for (bytes, cycles) in [
            (&[0x48, 0x0f, 0x07][..], 26.0),
            (&[0x48, 0xcf], 100.0),
            (&[0x0f, 0x30], 100.0),
            (&[0x0f, 0x32], 25.25),
            (&[0x0f, 0x31], 25.25),
            (&[0x0f, 0x01, 0xf9], 32.0),
            (&[0x0f, 0xae, 0xf0], 33.0),
            (&[0x0f, 0x05], 26.0),
            (&[0x0f, 0x01, 0x38], 100.0),
        ] {
            assert_eq!(block_cycles(bytes, 0x1000, CORE), cycles, "{bytes:x?}");
        }
    }

    #[test]
    fn bytes_that_do_not_decode_still_cost() {
        assert_eq!(block_cycles(&[0x0f, 0x0b], 0x1000, CORE), 0.25);
        assert_eq!(block_cost(&[], 0x1000, CORE), 1);
    }
}
