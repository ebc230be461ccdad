//! Each core's branch predictors: a gshare table for conditional
//! branches, a branch target buffer for indirect ones, a return stack
//! buffer for returns, and the kernel entry points that tell an interrupt
//! from a branch's target.

use super::caches::EMPTY;
use super::{BlockEnd, Mode, Model};

/// Kernel entry points learnt at most (interrupts and exceptions enter the
/// kernel at a handful of addresses), and the slots of their table.
pub const ENTRY_POINTS: usize = 128;
pub(super) const ENTRY_SLOTS: usize = 256;

impl Model {
    /// The branch that ended the last block of vCPU `v` (`pending`, not
    /// `BlockEnd::Other`), resolved by where the next block starts (`pc`,
    /// in `next_mode`).
    #[inline(never)]
    pub(super) fn resolve_branch(&mut self, v: usize, pending: BlockEnd, pc: u64, next_mode: Mode) {
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
    ///
    /// [`Config::skip_entries`]: super::Config::skip_entries
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
    pub(super) fn learn_entry(&mut self, pc: u64) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::*;
    use crate::model::{reference, Config, Counts};

    /// Runs blocks `(pc, end)` one after the other on one vCPU, in the
    /// mode their address is in, through the model and the
    /// straightforward one: both models' counts, user and kernel.
    fn both_run(config: Config, stream: &[(u64, BlockEnd)]) -> ([Counts; 2], [Counts; 2]) {
        let mut fast = Model::new(config.clone(), 1).unwrap();
        let mut slow = reference::Model::new(config, 1).unwrap();
        for &(pc, end) in stream {
            let mode = if pc >= crate::model::KERNEL_HALF {
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
}
