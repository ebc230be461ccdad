//! The caches: their geometry, a set-associative cache with true LRU,
//! and the way an access goes through a vCPU's levels and the shared one.

use super::Model;

/// Bytes per cache line, at every level.
pub const LINE: u64 = 64;
pub(super) const LINE_BITS: u32 = LINE.trailing_zeros();

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
    pub(super) fn sets(&self) -> Result<u64, String> {
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

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    Miss,
    /// The line's tag is there, invalidated by another vCPU's store.
    Invalidated,
}

/// Marks a tag whose line another vCPU's store invalidated.
pub(super) const INVALID: u64 = 1 << 63;
/// An empty way (no line address has every bit set after the shift).
pub(super) const EMPTY: u64 = u64::MAX;

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

impl Model {
    /// An instruction fetch that missed the L1i, counted in `mode`.
    #[inline(never)]
    pub(super) fn fetch_miss(&mut self, v: usize, line: u64, mode: usize) {
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
    pub(super) fn l2_access(&mut self, v: usize, line: u64) -> (Lookup, Option<u64>) {
        if self.config.llc_victim {
            self.cores[v].l2.access_evicting(line)
        } else {
            (self.cores[v].l2.access(line), None)
        }
    }

    /// The last level takes a line an L2 evicted, if any.
    #[inline(always)]
    pub(super) fn llc_takes(&mut self, evicted: Option<u64>) {
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

    #[inline(always)]
    pub(super) fn data_line(&mut self, v: usize, line: u64, store: bool) {
        let mode = self.cores[v].mode as usize;
        self.data_line_in(v, line, store, mode);
    }

    /// A data access to `line` by vCPU `v`, counted in `mode`.
    #[inline(always)]
    pub(super) fn data_line_in(&mut self, v: usize, line: u64, store: bool, mode: usize) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::*;
    use crate::model::{lines, BlockEnd, Mode};

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
}
