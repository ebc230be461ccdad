//! Coherence between the vCPUs' private caches: a store invalidates the
//! other vCPUs' copies, and the table of the lines each vCPU owns spares
//! the scan of their caches.

use super::caches::EMPTY;
use super::Model;

/// Entries of each vCPU's table of the lines it owns (see `Core::owned`).
pub(super) const OWNED_SLOTS: usize = 1024;

impl Model {
    /// Whether a vCPU other than `v` holds `line` valid in its L1d or L2.
    pub(super) fn held_by_another(&self, v: usize, line: u64) -> bool {
        self.cores.len() > 1
            && self
                .cores
                .iter()
                .enumerate()
                .any(|(other, core)| other != v && (core.l1d.holds(line) || core.l2.holds(line)))
    }

    /// `line` has become valid in vCPU `v`'s L1d or L2: no other vCPU owns
    /// it any more.
    pub(super) fn disown(&mut self, v: usize, line: u64) {
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
    pub(super) fn store_shared(&mut self, v: usize, line: u64, coherence: bool, mode: usize) {
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
    pub(super) fn invalidate_others(&mut self, v: usize, line: u64) -> bool {
        let mut held = false;
        for (other, core) in self.cores.iter_mut().enumerate() {
            if other != v {
                held |= core.l1d.invalidate(line);
                held |= core.l2.invalidate(line);
            }
        }
        held
    }
}

#[cfg(test)]
mod tests {
    use crate::model::testing::*;
    use crate::model::{Config, Counts};

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
}
