//! String instructions (`rep movs`, `rep stos`) costed apart: a startup
//! and their bytes at a rate, each line looked up once, the lines a store
//! goes on into claimed without being read.

use super::caches::{Lookup, EMPTY, LINE_BITS, VIRTUAL};
use super::weave::Kind;
use super::Model;

/// Where a string instruction's last load and last store were (virtual
/// line, the line taken for it), and where a store that goes on forward
/// from its last store starts.
#[derive(Debug, Clone, Copy)]
pub(super) struct StringTrail {
    load: (u64, u64),
    store: (u64, u64),
    next_store: Option<u64>,
}

pub(super) const NO_TRAIL: StringTrail = StringTrail {
    load: (EMPTY, EMPTY),
    store: (EMPTY, EMPTY),
    next_store: None,
};

/// Lines per guest page: an access's two lines in one page are
/// consecutive physical lines too.
const PAGE_LINE_BITS: u32 = 12 - LINE_BITS;

impl Model {
    /// A data access of `size` bytes at (virtual) `address` by the string
    /// instruction that ends the block `vcpu` runs, when string
    /// instructions are costed apart ([`Config::string_bytes_per_cycle`]
    /// not 0). `translate` gives the guest physical address of a virtual
    /// one, or `None` where there is none (the line is then taken by
    /// virtual address, as [`Model::data_virtual`] takes it). It is asked
    /// only for a line the instruction's last load (or store) was not in:
    /// the mapping stays while one instruction runs, and a string runs
    /// through each line element by element. A store counts its bytes; a
    /// store that goes on forward from the instruction's last one claims
    /// the lines it starts without reading them (no miss), and with
    /// [`Config::string_nontemporal`] every string store bypasses the
    /// caches. Returns the lines taken by virtual address.
    ///
    /// [`Config::string_bytes_per_cycle`]: super::Config::string_bytes_per_cycle
    /// [`Config::string_nontemporal`]: super::Config::string_nontemporal
    pub fn string_data(
        &mut self,
        vcpu: usize,
        address: u64,
        size: u64,
        store: bool,
        mut translate: impl FnMut(u64) -> Option<u64>,
    ) -> u32 {
        let v = self.index(vcpu);
        if self.weave.is_some() {
            self.turn(v);
        }
        let size = size.max(1);
        let first = address >> LINE_BITS;
        let last = address.wrapping_add(size - 1) >> LINE_BITS;
        let nontemporal = self.config.string_nontemporal == 1;
        let core = &mut self.cores[v];
        let mode = core.mode;
        let forward = store && core.string.next_store == Some(address);
        if store {
            core.counts[mode as usize].string_bytes += size;
            core.string.next_store = Some(address.wrapping_add(size));
        }
        let mut by_virtual = 0;
        let mut taken: Option<(u64, u64)> = None;
        for vline in [first, last] {
            if taken.is_some_and(|(done, _)| done == vline) {
                break;
            }
            let core = &mut self.cores[v];
            let trail = if store {
                &mut core.string.store
            } else {
                &mut core.string.load
            };
            let line = match taken {
                _ if trail.0 == vline => trail.1,
                // The access's second line, in the first one's page.
                Some((before, line)) if before >> PAGE_LINE_BITS == vline >> PAGE_LINE_BITS => {
                    line + 1
                }
                _ => {
                    let at = if vline == first {
                        address
                    } else {
                        vline << LINE_BITS
                    };
                    match translate(at) {
                        Some(physical) => physical >> LINE_BITS,
                        None => vline | VIRTUAL,
                    }
                }
            };
            *trail = (vline, line);
            taken = Some((vline, line));
            if line & VIRTUAL != 0 {
                by_virtual += 1;
            }
            let kind = if !store {
                Kind::Load
            } else if nontemporal {
                Kind::Bypass
            } else if forward && vline << LINE_BITS >= address {
                // The store covers the line's first byte and the string
                // goes on forward: it will write the whole line.
                Kind::Claim
            } else {
                Kind::Store
            };
            match self.weave.as_mut() {
                Some(w) => w.hold(v, line, 0, kind, mode),
                None => self.string_line(v, line, kind, mode as usize),
            }
        }
        by_virtual
    }

    /// A string instruction's access of `kind` to `line` by vCPU `v`,
    /// counted in `mode`.
    #[inline(always)]
    pub(super) fn string_line(&mut self, v: usize, line: u64, kind: Kind, mode: usize) {
        match kind {
            Kind::Fetch | Kind::Load => self.data_line_in(v, line, false, mode),
            Kind::Store => self.data_line_in(v, line, true, mode),
            Kind::Claim => self.claim_line(v, line, mode),
            Kind::Bypass => {
                if self.cores.len() > 1 {
                    self.invalidate_others(v, line);
                }
            }
        }
    }

    /// A string store that writes `line` whole: the line is filled as
    /// written, without being read, so no miss is counted; other vCPUs'
    /// copies go as for any store.
    fn claim_line(&mut self, v: usize, line: u64, mode: usize) {
        let core = &mut self.cores[v];
        if core.l1d.access(line) != Lookup::Hit {
            if core.l2.access(line) != Lookup::Hit {
                self.llc.access(line);
            }
            if self.cores.len() > 1 {
                self.disown(v, line);
            }
        }
        if self.cores.len() > 1 {
            self.store_shared(v, line, false, mode);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::*;
    use crate::model::{reference, BlockEnd, Config, Counts, Geometry, Mode};

    /// A `rep stosq` at 0x1008 of 256 bytes to 0x10000 (physical address
    /// = virtual) as QEMU runs it under icount: the block that ends in it
    /// (3 instructions, the first element), 31 one-instruction blocks of
    /// an element each, one that finds the count exhausted, then the next
    /// block. With `interrupt`, a kernel block comes after the 10th
    /// element. The model's and the straightforward one's counts, and the
    /// look-ups of physical addresses the model made.
    fn stosq(config: Config, interrupt: bool) -> ([Counts; 2], [Counts; 2], usize) {
        let mut fast = Model::new(config.clone(), 1).unwrap();
        let mut slow = reference::Model::new(config.clone(), 1).unwrap();
        let mut lookups = 0;
        let rep = BlockEnd::String { pc: 0x1008 };
        let mut block = |pc: u64, mode, n, end| {
            fast.block(0, pc, mode, n, 0..0, end);
            slow.block(0, pc, mode, n, &[], end);
        };
        block(0x1000, Mode::User, 3, rep);
        let mut store = |fast: &mut Model, slow: &mut reference::Model, i: u64| {
            let address = 0x10000 + 8 * i;
            if config.string_bytes_per_cycle == 0 {
                fast.data(0, address, 8, true);
                slow.data(0, address, 8, true, 0);
            } else {
                fast.string_data(0, address, 8, true, |a| {
                    lookups += 1;
                    Some(a)
                });
                slow.string_data(0, address, 8, true, Some);
            }
        };
        store(&mut fast, &mut slow, 0);
        for i in 1..32 {
            if interrupt && i == 10 {
                let kernel = 0xffff_ffff_8180_0000;
                fast.block(0, kernel, Mode::Kernel, 1, 0..0, BlockEnd::Other);
                slow.block(0, kernel, Mode::Kernel, 1, &[], BlockEnd::Other);
            }
            fast.block(0, 0x1008, Mode::User, 1, 0..0, rep);
            slow.block(0, 0x1008, Mode::User, 1, &[], rep);
            store(&mut fast, &mut slow, i);
        }
        fast.block(0, 0x1008, Mode::User, 1, 0..0, rep);
        slow.block(0, 0x1008, Mode::User, 1, &[], rep);
        fast.block(0, 0x100b, Mode::User, 1, 0..0, BlockEnd::Other);
        slow.block(0, 0x100b, Mode::User, 1, &[], BlockEnd::Other);
        (fast.counts(), slow.counts(), lookups)
    }

    #[test]
    fn a_string_costs_its_startup_and_its_bytes_and_claims_the_lines_it_goes_on_into() {
        let c = small();
        let (fast, slow, lookups) = stosq(c.clone(), false);
        assert_eq!(fast, slow);
        let user = fast[0];
        assert_eq!(user.instructions, 3 + 31 + 1 + 1);
        assert_eq!(user.string_iterations, 33);
        assert_eq!(user.string_instructions, 1);
        assert_eq!(user.string_bytes, 256);
        // Its first line is read (it might be the string's only one);
        // the string goes on forward into the other three: claimed.
        assert_eq!((user.l1d_misses, user.llc_misses), (1, 1));
        // One look-up per line.
        assert_eq!(lookups, 4);
        // The three other instructions, the startup, 256 bytes at 32 a
        // cycle, a line from memory.
        assert_eq!(
            user.estimated_cycles(&c),
            3 + c.string_startup_cycles + 256 / 32 + c.memory_cycles
        );
        // An interrupt in the middle: the instruction starts again.
        let (fast, slow, _) = stosq(c.clone(), true);
        assert_eq!(fast, slow);
        assert_eq!(fast[0].string_instructions, 2);
        assert_eq!(fast[0].string_iterations, 33);
        // As before: one instruction per element, every line read.
        let off = parts_off(c.clone());
        let (fast, slow, _) = stosq(off.clone(), false);
        assert_eq!(fast, slow);
        let user = fast[0];
        assert_eq!(user.instructions, 36);
        assert_eq!((user.string_iterations, user.string_bytes), (0, 0));
        assert_eq!(user.l1d_misses, 4);
        assert_eq!(user.estimated_cycles(&off), 36 + 4 * off.memory_cycles);
        // Non-temporal: nothing is read or filled, so a load after it misses.
        let nontemporal = Config {
            string_nontemporal: 1,
            ..c
        };
        let (fast, slow, _) = stosq(nontemporal.clone(), false);
        assert_eq!(fast, slow);
        assert_eq!(fast[0].l1d_misses, 0);
        let mut m = Model::new(nontemporal, 1).unwrap();
        m.block(
            0,
            0x1000,
            Mode::User,
            1,
            0..0,
            BlockEnd::String { pc: 0x1000 },
        );
        m.string_data(0, 0x10000, 8, true, Some);
        m.data(0, 0x10000, 8, false);
        assert_eq!(user_of(&m).l1d_misses, 1);
    }

    fn user_of(m: &Model) -> Counts {
        m.counts()[Mode::User as usize]
    }

    /// A `rep movsb` copying 4 KiB between two lines of one set, on a
    /// direct-mapped L1d, so that each element's load and store evict each
    /// other: every element counts as it does when each is looked up
    /// anew, though only a new line is looked up.
    #[test]
    fn a_string_looks_up_each_line_once_and_counts_as_if_every_element_were_looked_up() {
        let config = Config {
            l1d: Geometry {
                bytes: 1 << 10,
                ways: 1,
            },
            ..small()
        };
        for vcpus in [1, 2] {
            let mut fast = Model::new(config.clone(), vcpus).unwrap();
            let mut slow = reference::Model::new(config.clone(), vcpus).unwrap();
            let rep = BlockEnd::String { pc: 0x1000 };
            let mut lookups = 0;
            for i in 0..4096u64 {
                // The other vCPU reads the destination now and then.
                if vcpus == 2 && i % 100 == 0 {
                    fast.data(1, 0x20000 + i, 1, false);
                    slow.data(1, 0x20000 + i, 1, false, 0);
                }
                fast.block(0, 0x1000, Mode::User, 1, 0..0, rep);
                slow.block(0, 0x1000, Mode::User, 1, &[], rep);
                for (address, store) in [(0x10000 + i, false), (0x20000 + i, true)] {
                    fast.string_data(0, address, 1, store, |a| {
                        lookups += 1;
                        Some(a)
                    });
                    slow.string_data(0, address, 1, store, Some);
                }
                assert_eq!(fast.counts(), slow.counts());
            }
            assert_eq!(lookups, 2 * 4096 / 64);
            let user = user_of(&fast);
            // Each load misses (the store before it evicted its line).
            assert!(user.l1d_misses >= 4096, "{user:?}");
            assert_eq!(vcpus > 1, user.rfo_misses > 0);
        }
    }
}
