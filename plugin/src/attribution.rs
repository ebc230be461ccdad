//! The cycle model's counts per translated block, for the profile: which
//! block's instruction fetches, memory accesses and ending branch made the
//! misses and mispredictions.
//!
//! Every count the model makes on a vCPU between two block starts belongs
//! to the block that was running, with one exception: the model resolves
//! the branch that ended a block only when the next block starts (the start
//! tells taken from not taken), inside the call that also fetches the new
//! block's lines. Such a call's branch counts therefore go to the block
//! before it, and its cache counts to the new block. What the vCPUs count
//! between a region's start and its end is thus split over blocks without
//! remainder: the blocks' counts add up to the region's.
//!
//! When the model weaves several vCPUs' events, their cache counts come
//! later than the block that made them, when the model replays the round;
//! each replayed event names its block ([`Attribution::replayed`]), and
//! the plugin replays the round before a region's markers act, so the
//! counts of a block stay in the region it ran in.

use crate::model::Counts;

/// Values per block, in the order of [`Counts::NAMES`].
pub const VALUES: usize = Counts::NAMES.len();

/// One vCPU's counts, user and kernel summed, in the order of [`Counts::NAMES`].
pub type Values = [u64; VALUES];

/// Whether the count at this place of [`Counts::NAMES`] is a branch's,
/// which the start of the next block resolves.
fn is_branch_count(index: usize) -> bool {
    let name = Counts::NAMES[index];
    name.ends_with("branches") || name.ends_with("mispredicts")
}

/// The counts of both modes, summed.
pub fn values(counts: &[Counts; 2]) -> Values {
    let (user, kernel) = (counts[0].values(), counts[1].values());
    std::array::from_fn(|i| user[i] + kernel[i])
}

/// The counts a block caused, as the model's own type (for its estimate).
pub fn counts(v: &Values) -> Counts {
    Counts::from_values(*v)
}

#[derive(Debug, Clone, Default)]
struct Vcpu {
    /// The block running on it, once one started in the region.
    block: Option<u32>,
    /// Its counts when they last went to a block.
    since: Values,
}

/// The open region's counts per block.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    vcpus: Vec<Vcpu>,
    /// Per translated block (by index), its counts in the open region.
    blocks: Vec<Values>,
    /// The blocks given counts in the open region, each once.
    touched: Vec<u32>,
    open: bool,
}

impl Attribution {
    pub fn new(vcpus: usize) -> Attribution {
        Attribution {
            vcpus: vec![Vcpu::default(); vcpus.max(1)],
            ..Attribution::default()
        }
    }

    /// A new translated block: its index.
    pub fn add_block(&mut self) -> u32 {
        self.blocks.push([0; VALUES]);
        (self.blocks.len() - 1) as u32
    }

    fn vcpu(&mut self, vcpu: usize) -> &mut Vcpu {
        let last = self.vcpus.len() - 1;
        &mut self.vcpus[vcpu.min(last)]
    }

    /// Gives `block` what its vCPU counted from `since` to `now`.
    fn give(&mut self, block: Option<u32>, since: &Values, now: &Values) {
        let Some(block) = block.filter(|_| self.open) else {
            return;
        };
        let into = &mut self.blocks[block as usize];
        let mut any = false;
        let was_empty = into.iter().all(|&v| v == 0);
        for i in 0..VALUES {
            let d = now[i] - since[i];
            into[i] += d;
            any |= d != 0;
        }
        if any && was_empty {
            self.touched.push(block);
        }
    }

    /// Block `block` starts on `vcpu`: `before` are the vCPU's counts just
    /// before the model saw the start, `after` just after (the previous
    /// block's branch resolved, the new block's lines fetched).
    pub fn enter(&mut self, vcpu: usize, block: u32, before: &Values, after: &Values) {
        let mut until: Values = *before;
        for i in 0..VALUES {
            if is_branch_count(i) {
                until[i] = after[i];
            }
        }
        let v = self.vcpu(vcpu);
        let (previous, since) = (v.block.replace(block), v.since);
        v.since = until;
        self.give(previous, &since, &until);
    }

    /// The model replayed an event of `vcpu` that `block` made (the weave
    /// holds cache events back and counts them later): its counts `delta`
    /// go to that block, and not to the block `vcpu` runs when they are
    /// counted.
    pub fn replayed(&mut self, vcpu: usize, block: u32, delta: &Values) {
        let v = self.vcpu(vcpu);
        for (since, d) in v.since.iter_mut().zip(delta) {
            *since += d;
        }
        if block != u32::MAX {
            self.give(Some(block), &[0; VALUES], delta);
        }
    }

    /// A region starts; `now(vcpu)` gives each vCPU's counts at this point,
    /// from which the region's counts are taken.
    pub fn start_region(&mut self, now: impl Fn(usize) -> Values) {
        for block in self.touched.drain(..) {
            self.blocks[block as usize] = [0; VALUES];
        }
        for (index, v) in self.vcpus.iter_mut().enumerate() {
            v.since = now(index);
        }
        self.open = true;
    }

    /// The region ends: each vCPU's counts up to `now(vcpu)` go to the block
    /// it runs, and the region's blocks with their counts are returned, in
    /// the order they were first given counts.
    pub fn end_region(&mut self, now: impl Fn(usize) -> Values) -> Vec<(u32, Values)> {
        if !self.open {
            return Vec::new();
        }
        for index in 0..self.vcpus.len() {
            let (block, since) = (self.vcpus[index].block, self.vcpus[index].since);
            let until = now(index);
            self.vcpus[index].since = until;
            self.give(block, &since, &until);
        }
        self.open = false;
        let mut out = Vec::with_capacity(self.touched.len());
        for block in self.touched.drain(..) {
            let values = std::mem::replace(&mut self.blocks[block as usize], [0; VALUES]);
            out.push((block, values));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BlockEnd, Config, Geometry, Mode, Model};

    fn small() -> Config {
        let g = |bytes, ways| Geometry { bytes, ways };
        Config {
            l1i: g(1 << 10, 2),
            l1d: g(1 << 10, 2),
            l2: g(4 << 10, 4),
            llc: g(16 << 10, 4),
            // Lines that change hands at every write the other vCPU makes
            // between, which the tests count on.
            weave_cycles: 0,
            burst_ownership: 0,
            locked_rfo: 0,
            ..Config::default()
        }
    }

    /// Drives a model and the attribution together, as the plugin does.
    struct Machine {
        model: Model,
        attribution: Attribution,
    }

    impl Machine {
        fn new(vcpus: usize) -> Machine {
            Machine {
                model: Model::new(small(), vcpus).unwrap(),
                attribution: Attribution::new(vcpus),
            }
        }

        /// A machine whose model weaves its vCPUs' turns.
        fn woven(vcpus: usize) -> Machine {
            let mut m = Machine::new(vcpus);
            m.model.set_weave(true);
            m.model.record_replayed(true);
            m
        }

        fn now(&self) -> impl Fn(usize) -> Values + '_ {
            |v| values(&self.model.vcpu_counts(v))
        }

        fn drain(&mut self) {
            let a = &mut self.attribution;
            self.model
                .drain_replayed(|r| a.replayed(r.vcpu, r.tag, &values(&r.counts)));
        }

        fn block(&mut self, vcpu: usize, block: u32, pc: u64, lines: &[u64], end: BlockEnd) {
            // The model takes a block's lines as a range: these are
            // consecutive.
            let range = lines[0]..lines[lines.len() - 1] + 1;
            assert_eq!(range.clone().count(), lines.len());
            self.model.turn(vcpu);
            self.drain();
            self.model.tag(vcpu, block);
            let before = values(&self.model.vcpu_counts(vcpu));
            self.model.block(vcpu, pc, Mode::Kernel, 4, range, end);
            let after = values(&self.model.vcpu_counts(vcpu));
            self.attribution.enter(vcpu, block, &before, &after);
        }

        fn data(&mut self, vcpu: usize, address: u64, store: bool) {
            self.model.turn(vcpu);
            self.drain();
            self.model.data(vcpu, address, 8, store);
        }

        fn start(&mut self) {
            self.model.flush();
            self.drain();
            let now: Vec<Values> = (0..2).map(self.now()).collect();
            self.attribution.start_region(|v| now[v.min(now.len() - 1)]);
        }

        fn end(&mut self) -> Vec<(u32, Values)> {
            self.model.flush();
            self.drain();
            let now: Vec<Values> = (0..2).map(self.now()).collect();
            self.attribution.end_region(|v| now[v.min(now.len() - 1)])
        }
    }

    fn named(v: &Values, name: &str) -> u64 {
        v[Counts::NAMES.iter().position(|n| *n == name).unwrap()]
    }

    fn of(region: &[(u32, Values)], block: u32) -> Values {
        region
            .iter()
            .find(|(b, _)| *b == block)
            .map_or([0; VALUES], |(_, v)| *v)
    }

    #[test]
    fn a_blocks_misses_go_to_it_and_its_branch_to_it_when_the_next_block_resolves_it() {
        let mut m = Machine::new(1);
        let (a, b) = (m.attribution.add_block(), m.attribution.add_block());
        m.start();
        // Block a fetches two lines and reads a cold line; it ends in a
        // conditional branch, taken to b (a cold gshare counter predicts
        // not taken: a misprediction).
        let end = BlockEnd::Conditional {
            pc: 0x1010,
            target: 0x2000,
            next: 0x1012,
        };
        m.block(0, a, 0x1000, &[0x40, 0x41], end);
        m.data(0, 0x9000, false);
        // Block b fetches one line and reads two.
        m.block(0, b, 0x2000, &[0x80], BlockEnd::Other);
        m.data(0, 0xa000, false);
        m.data(0, 0xb000, true);
        let region = m.end();
        let (va, vb) = (of(&region, a), of(&region, b));
        assert_eq!(named(&va, "l1i-misses"), 2);
        assert_eq!(named(&va, "l1d-misses"), 1);
        assert_eq!(named(&va, "conditional-branches"), 1);
        assert_eq!(named(&va, "conditional-mispredicts"), 1);
        assert_eq!(named(&va, "instructions"), 4);
        assert_eq!(named(&vb, "l1i-misses"), 1);
        assert_eq!(named(&vb, "l1d-misses"), 2);
        assert_eq!(named(&vb, "llc-misses"), 3);
        assert_eq!(named(&vb, "conditional-branches"), 0);
    }

    #[test]
    fn the_blocks_add_up_to_the_region_and_nothing_outside_it_counts() {
        // Turns of one block each: the weave replays them in the order
        // they came, and counts as the model without it does.
        for mut m in [Machine::new(2), Machine::woven(2)] {
            let blocks: Vec<u32> = (0..4).map(|_| m.attribution.add_block()).collect();
            // Before the region: counts that must not appear.
            m.block(
                0,
                blocks[0],
                0x1000,
                &[0x40],
                BlockEnd::Indirect { pc: 0x1010 },
            );
            m.data(0, 0x4000, true);
            m.model.flush();
            m.drain();
            let start = m.model.counts();
            m.start();
            // Both vCPUs write one line in turn: coherence misses, each to the
            // block that made the access.
            for round in 0..5u64 {
                m.block(
                    0,
                    blocks[1],
                    0x3000 + round,
                    &[0xc0],
                    BlockEnd::Indirect { pc: 0x3010 },
                );
                m.data(0, 0x4000, true);
                m.block(1, blocks[2], 0x5000, &[0x140], BlockEnd::Other);
                m.data(1, 0x4008, true);
            }
            m.block(1, blocks[3], 0x6000, &[0x180], BlockEnd::Other);
            m.data(1, 0x7000, false);
            m.model.flush();
            m.drain();
            let end = m.model.counts();
            let region = m.end();
            let mut sum = [0u64; VALUES];
            for (_, v) in &region {
                for i in 0..VALUES {
                    sum[i] += v[i];
                }
            }
            let total = values(&[end[0].since(&start[0]), end[1].since(&start[1])]);
            assert_eq!(sum, total);
            // vCPU 0's first write hits its own line and vCPU 1's first finds
            // it cold; every later write finds it invalidated by the other's.
            assert_eq!(named(&of(&region, blocks[1]), "coherence-misses"), 4);
            assert_eq!(named(&of(&region, blocks[2]), "coherence-misses"), 4);
            assert_eq!(named(&of(&region, blocks[3]), "coherence-misses"), 0);
            assert_eq!(named(&of(&region, blocks[3]), "l1d-misses"), 1);
            // The indirect branch that ended block 0 before the region is
            // resolved inside it, by block 1's first start: it is the region's,
            // and block 0's, which made it.
            let zero = of(&region, blocks[0]);
            assert_eq!(named(&zero, "indirect-branches"), 1);
            assert_eq!(
                zero.iter().sum::<u64>(),
                2,
                "a branch and its misprediction"
            );
            // A second region starts from zero.
            m.start();
            m.block(0, blocks[0], 0x1000, &[0x40], BlockEnd::Other);
            let second = m.end();
            assert_eq!(second.len(), 2, "{second:?}");
        }
    }

    #[test]
    fn woven_turns_give_each_replayed_miss_to_the_block_that_made_it() {
        let mut m = Machine::woven(2);
        let (a, b, c) = (
            m.attribution.add_block(),
            m.attribution.add_block(),
            m.attribution.add_block(),
        );
        m.start();
        // Turns of 5 blocks, each writing one line (8 bytes apart).
        for _ in 0..4 {
            for (v, block, pc, address) in [(0, a, 0x1000, 0x4000), (1, b, 0x2000, 0x4008)] {
                for _ in 0..5 {
                    m.block(v, block, pc, &[pc >> 6], BlockEnd::Other);
                    m.data(v, address, true);
                }
            }
        }
        // A block of vCPU 0 that runs on in the next round.
        m.block(0, c, 0x3000, &[0xc0], BlockEnd::Other);
        let region = m.end();
        let total: u64 = region
            .iter()
            .map(|(_, v)| named(v, "coherence-misses"))
            .sum();
        let (ca, cb) = (
            named(&of(&region, a), "coherence-misses"),
            named(&of(&region, b), "coherence-misses"),
        );
        // Side by side the line changes hands at nearly every write.
        assert!(ca >= 15 && cb >= 15, "{ca} {cb}");
        assert_eq!(ca + cb, total);
        assert_eq!(named(&of(&region, c), "coherence-misses"), 0);
        assert_eq!(named(&of(&region, c), "l1i-misses"), 1);
        assert_eq!(named(&of(&region, a), "instructions"), 4 * 5 * 4);
    }

    #[test]
    fn counts_outside_a_region_go_nowhere() {
        let mut m = Machine::new(1);
        let a = m.attribution.add_block();
        m.block(0, a, 0x1000, &[0x40], BlockEnd::Other);
        m.data(0, 0x4000, true);
        assert!(m.end().is_empty());
        m.start();
        assert!(m.end().is_empty(), "no block ran in the region");
    }

    #[test]
    fn a_blocks_values_become_the_models_counts_field_by_field() {
        let mut v = [0u64; VALUES];
        for (i, x) in v.iter_mut().enumerate() {
            *x = 100 - i as u64 * 9;
        }
        let c = counts(&v);
        assert_eq!(c.values(), v);
    }
}
