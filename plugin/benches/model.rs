//! How fast the cycle model takes the guest's events: the work the plugin
//! does inside each block and memory callback, without QEMU around it.
//!
//!     cd plugin && nice -n 19 cargo bench --bench model
//!
//! Each scenario replays one fixed synthetic stream of events (built once,
//! outside the timing, from a seeded xorshift: no host addresses, no time)
//! shaped like a kernel-heavy workload such as hackbench: blocks of a few
//! instructions from 256 KiB of code, most of them hot, each ending in a
//! conditional branch, an indirect one or neither; about two data accesses
//! per block, a third of them stores, to a small stack per vCPU, a hot
//! shared working set of 128 KiB and a cold 16 MiB. With two vCPUs they
//! take turns every 4096 events, as round-robin TCG runs them, taken as
//! they come and woven (`Model::set_weave`). Criterion
//! reports the time per pass and events per second (one event is a block
//! or a data access, which is also one callback in the plugin).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use markbench_profile_plugin::model::{lines, BlockEnd, Config, Mode, Model};
use std::hint::black_box;

/// One callback's worth of work.
enum Event {
    Block {
        vcpu: usize,
        block: usize,
    },
    Data {
        vcpu: usize,
        address: u64,
        size: u64,
        store: bool,
    },
}

struct Block {
    pc: u64,
    mode: Mode,
    instructions: u64,
    lines: std::ops::Range<u64>,
    end: BlockEnd,
}

struct Trace {
    blocks: Vec<Block>,
    events: Vec<Event>,
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`, skewed toward 0 (the minimum of two draws):
    /// a few hot items and a long tail.
    fn skewed(&mut self, n: u64) -> u64 {
        (self.next() % n).min(self.next() % n)
    }

    /// A number below `n`, skewed more strongly: a small hot set.
    fn hot(&mut self, n: u64) -> u64 {
        let below = self.skewed(n) + 1;
        self.skewed(below)
    }
}

const KERNEL_TEXT: u64 = 0xffff_ffff_8100_0000;
const KERNEL_DATA: u64 = 0xffff_8880_0100_0000;
const STACKS: u64 = 0xffff_c900_0000_0000;
/// Blocks per function; a function's branches stay inside it.
const FUNCTION: usize = 8;

fn trace(vcpus: usize, events: usize) -> Trace {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    // 8192 blocks of 8 to 48 bytes laid end to end (about 230 KiB of
    // text), in functions of 8 blocks; each block's conditional branch has
    // a bias of its own. Half the blocks end in a conditional branch, 15%
    // in an indirect one (a call through a pointer or a return), 15% in a
    // direct call.
    let count = 8192;
    let mut pcs = Vec::with_capacity(count + 1);
    let mut pc = KERNEL_TEXT;
    for _ in 0..=count {
        pcs.push(pc);
        pc += 8 + rng.next() % 41;
    }
    let mut bias = Vec::with_capacity(count);
    // Blocks that end in a direct call (nothing to predict).
    let mut calls = Vec::new();
    let blocks: Vec<Block> = (0..count)
        .map(|i| {
            let (pc, next) = (pcs[i], pcs[i + 1]);
            let lines = lines(pc, next - pc);
            let last = next - 2;
            // Mostly forward within the function, one in eight a loop back.
            let function = i / FUNCTION * FUNCTION;
            let target = if rng.next().is_multiple_of(8) {
                function + i % FUNCTION / 2
            } else {
                i + 1 + (rng.next() as usize) % 3
            };
            let end = match rng.next() % 20 {
                0..=9 => BlockEnd::Conditional {
                    pc: last,
                    target: pcs[target.min(count - 1)],
                    next,
                },
                10..=12 => BlockEnd::Indirect { pc: last },
                13..=15 => {
                    calls.push(i);
                    BlockEnd::Other
                }
                _ => BlockEnd::Other,
            };
            bias.push([2, 50, 98][(rng.next() % 3) as usize]);
            Block {
                pc,
                mode: Mode::Kernel,
                instructions: 2 + (next - pc) / 4,
                lines,
                end,
            }
        })
        .collect();
    let functions = (count / FUNCTION) as u64;
    let mut out = Vec::with_capacity(events);
    let mut vcpu = 0;
    let mut at = 0;
    let mut turn_ends = 4096;
    while out.len() < events {
        if out.len() >= turn_ends {
            vcpu = (vcpu + 1) % vcpus;
            turn_ends += 4096;
        }
        out.push(Event::Block { vcpu, block: at });
        for _ in 0..rng.next() % 5 {
            let kind = rng.next() % 100;
            let address = if kind < 55 {
                STACKS + vcpu as u64 * 0x4000 + rng.skewed(1024) / 8 * 8
            } else if kind < 97 {
                KERNEL_DATA + rng.hot(64 << 10) / 8 * 8
            } else {
                KERNEL_DATA + (1 << 24) + rng.next() % (16 << 20) / 8 * 8
            };
            let size = 1 << (rng.next() % 4);
            let store = rng.next().is_multiple_of(3);
            out.push(Event::Data {
                vcpu,
                address,
                size,
                store,
            });
        }
        // Where the next block starts: the branch's outcome, a call or
        // return to some function (most often a hot one), or the next block.
        let taken = rng.next() % 100 < bias[at];
        let callee = rng.hot(functions) as usize * FUNCTION;
        at = match blocks[at].end {
            BlockEnd::Conditional { target, .. } if taken => pcs.binary_search(&target).unwrap(),
            BlockEnd::Indirect { .. } => callee,
            BlockEnd::Other if calls.binary_search(&at).is_ok() => callee,
            _ if at + 1 == count => 0,
            _ => at + 1,
        };
    }
    Trace {
        blocks,
        events: out,
    }
}

/// Replays `trace` through `model`, each block with its own cost as the
/// plugin adds it (here its instructions at the issue width) when `costed`.
#[inline(never)]
fn replay(model: &mut Model, trace: &Trace, costed: bool) {
    for event in &trace.events {
        match *event {
            Event::Block { vcpu, block } => {
                let b = &trace.blocks[block];
                model.block(vcpu, b.pc, b.mode, b.instructions, b.lines.clone(), b.end);
                if costed {
                    model.block_cost(vcpu, b.instructions * 16 / 4);
                }
            }
            Event::Data {
                vcpu,
                address,
                size,
                store,
            } => model.data(vcpu, address, size, store),
        }
    }
}

fn bench(c: &mut Criterion) {
    const EVENTS: usize = 1 << 20;
    let mut group = c.benchmark_group("model");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(20);
    // The 2-vCPU scenario as events come, turn after turn, and woven (its
    // turns interleaved before the caches, as the plugin does), and woven
    // by cycles with lines kept for a burst and rounds bounded in span.
    let timed = Config {
        weave_cycles: 1,
        burst_ownership: 1,
        weave_span: 20_000,
        ..Config::default()
    };
    for (vcpus, weave, config) in [
        (1, false, Config::default()),
        (2, false, Config::default()),
        (2, true, Config::default()),
        (2, true, timed),
    ] {
        let trace = trace(vcpus, EVENTS);
        let costed = config.weave_cycles == 1;
        let mut model = Model::new(config, vcpus).unwrap();
        model.set_weave(weave);
        let name = format!(
            "{vcpus}-vcpu{}{}",
            if weave { "-woven" } else { "" },
            if costed { "-timed" } else { "" }
        );
        // One pass from cold, whose counts are printed (they must not move
        // when the model is made faster), then the timed passes from the
        // warm state it leaves, each the same steady state.
        replay(&mut model, &trace, costed);
        model.flush();
        let counts = model.counts()[Mode::Kernel as usize];
        println!("model/{name} one pass from cold: {counts:?}");
        group.bench_function(name, |b| {
            b.iter(|| replay(black_box(&mut model), &trace, costed))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
