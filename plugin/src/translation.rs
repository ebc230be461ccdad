//! Guest physical addresses of data accesses, asking QEMU as seldom as the
//! answer allows.
//!
//! Asking QEMU for an access's physical address costs two calls into it
//! and a lookup of its TLB, about a tenth of a boot's host time under the
//! model. Two answers can be known without asking:
//!
//! - **The page of the vCPU's last access, within one block.** QEMU ends a
//!   translated block after every instruction that changes the guest's
//!   mappings (`invlpg`, a write to CR3 or a control register, `wrmsr`),
//!   and another vCPU's TLB flush reaches a vCPU only between blocks; a
//!   fault abandons the block, and the handler starts another. So while a
//!   block runs, a virtual page keeps its physical page, and a block's
//!   callback forgets the page.
//! - **The kernel's linear mappings** (the direct map of all memory and
//!   the kernel image) map a virtual address to a physical one by a fixed
//!   offset, a multiple of 2 MiB. A 2 MiB region of the kernel's half
//!   whose distinct pages have agreed on one such offset [`LEARN`] times
//!   is translated by it, and QEMU is still asked at every [`CHECK`]th
//!   access there: one disagreement makes the region irregular for good
//!   and is counted ([`Translations::contradicted`]), so a wrong guess
//!   cannot pass unseen. A region the kernel maps page by page (vmalloc,
//!   kernel stacks) rarely gives [`LEARN`] pages one offset, and never a
//!   2 MiB-aligned one but by chance.
//!
//! Neither changes a count: the addresses are QEMU's own.

use crate::model::KERNEL_HALF;

const PAGE_BITS: u32 = 12;
/// A linear mapping's offset is a multiple of this, and regions are this
/// big.
const REGION_BITS: u32 = 21;
/// Regions remembered, direct mapped by region number.
const REGION_SLOTS: usize = 1024;
/// Distinct pages of a region that must agree on an offset before it is
/// trusted.
pub const LEARN: u32 = 8;
/// A trusted region still asks QEMU at every this many accesses.
pub const CHECK: u32 = 32;

const NONE: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trust {
    /// `agreed` distinct pages have given `offset`; `last` is the page that
    /// gave it last.
    Learning { agreed: u32, last: u64 },
    /// Translated by `offset`; QEMU is asked when `until_check` reaches 0.
    Linear { until_check: u32 },
    /// Pages that disagreed: always asked.
    Irregular,
}

#[derive(Debug, Clone, Copy)]
struct Region {
    /// The region's number (address >> [`REGION_BITS`]), [`NONE`] when the
    /// slot is empty.
    number: u64,
    /// Physical minus virtual address, wrapping.
    offset: u64,
    trust: Trust,
}

const EMPTY_REGION: Region = Region {
    number: NONE,
    offset: 0,
    trust: Trust::Irregular,
};

/// The translations of every vCPU.
pub struct Translations {
    /// Per vCPU, the virtual page of its last access in the running block
    /// and its physical page ([`NONE`] when none).
    pages: Vec<(u64, u64)>,
    regions: Box<[Region]>,
    linear: bool,
    /// Times a trusted region's offset gave another address than QEMU.
    contradicted: u64,
}

impl Translations {
    /// For `vcpus` vCPUs; `linear` turns the linear mappings' offsets on.
    pub fn new(vcpus: usize, linear: bool) -> Translations {
        Translations {
            pages: vec![(NONE, NONE); vcpus.max(1)],
            regions: vec![EMPTY_REGION; REGION_SLOTS].into_boxed_slice(),
            linear,
            contradicted: 0,
        }
    }

    /// A block starts on `vcpu`: its pages may map elsewhere now.
    #[inline(always)]
    pub fn block(&mut self, vcpu: usize) {
        if let Some(p) = self.pages.get_mut(vcpu) {
            p.0 = NONE;
        }
    }

    /// How often a trusted offset disagreed with QEMU.
    pub fn contradicted(&self) -> u64 {
        self.contradicted
    }

    /// The physical address of `vaddr` accessed by `vcpu`; `ask` asks QEMU
    /// (`None` where it has none).
    #[inline(always)]
    pub fn physical(
        &mut self,
        vcpu: usize,
        vaddr: u64,
        ask: impl FnOnce(u64) -> Option<u64>,
    ) -> Option<u64> {
        let v = vcpu.min(self.pages.len() - 1);
        let page = vaddr >> PAGE_BITS;
        let (last, frame) = self.pages[v];
        if last == page {
            return Some((frame << PAGE_BITS) | (vaddr & ((1 << PAGE_BITS) - 1)));
        }
        let physical = if self.linear && vaddr >= KERNEL_HALF {
            self.linear_physical(vaddr, ask)?
        } else {
            ask(vaddr)?
        };
        self.pages[v] = (page, physical >> PAGE_BITS);
        Some(physical)
    }

    /// Whether `vaddr` is in a 2 MiB region of the kernel's half found
    /// linearly mapped, which the guest maps with large pages (QEMU's
    /// plugin API gives no page size: this is inferred).
    #[inline(always)]
    pub fn large(&self, vaddr: u64) -> bool {
        if !self.linear || vaddr < KERNEL_HALF {
            return false;
        }
        let number = vaddr >> REGION_BITS;
        let slot = &self.regions[number as usize % REGION_SLOTS];
        slot.number == number && matches!(slot.trust, Trust::Linear { .. })
    }

    #[inline(never)]
    fn linear_physical(&mut self, vaddr: u64, ask: impl FnOnce(u64) -> Option<u64>) -> Option<u64> {
        let number = vaddr >> REGION_BITS;
        let slot = &mut self.regions[number as usize % REGION_SLOTS];
        if slot.number == number {
            if let Trust::Linear { until_check } = &mut slot.trust {
                if *until_check > 0 {
                    *until_check -= 1;
                    return Some(vaddr.wrapping_add(slot.offset));
                }
            }
        }
        let physical = ask(vaddr)?;
        let offset = physical.wrapping_sub(vaddr);
        let aligned = offset.trailing_zeros() >= REGION_BITS;
        let page = vaddr >> PAGE_BITS;
        if slot.number != number {
            *slot = Region {
                number,
                offset,
                trust: if aligned {
                    Trust::Learning {
                        agreed: 1,
                        last: page,
                    }
                } else {
                    Trust::Irregular
                },
            };
            return Some(physical);
        }
        slot.trust = match slot.trust {
            Trust::Irregular => Trust::Irregular,
            _ if offset != slot.offset => {
                if matches!(slot.trust, Trust::Linear { .. }) {
                    self.contradicted += 1;
                }
                Trust::Irregular
            }
            Trust::Linear { .. } => Trust::Linear { until_check: CHECK },
            Trust::Learning { agreed, last } if last == page => Trust::Learning { agreed, last },
            Trust::Learning { agreed, .. } if agreed + 1 >= LEARN => {
                Trust::Linear { until_check: CHECK }
            }
            Trust::Learning { agreed, .. } => Trust::Learning {
                agreed: agreed + 1,
                last: page,
            },
        };
        Some(physical)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::collections::HashMap;

    const DIRECT_MAP: u64 = 0xffff_8880_0000_0000;

    /// Asks a page table, counting the questions.
    fn asker<'a>(
        table: &'a HashMap<u64, u64>,
        asked: &'a Cell<u32>,
    ) -> impl Fn(u64) -> Option<u64> + 'a {
        move |vaddr| {
            asked.set(asked.get() + 1);
            table
                .get(&(vaddr >> PAGE_BITS))
                .map(|frame| (frame << PAGE_BITS) | (vaddr & 0xfff))
        }
    }

    #[test]
    fn a_page_within_a_block_is_asked_once_and_again_after_the_block() {
        let table = HashMap::from([(0x1234, 0x77)]);
        let asked = Cell::new(0);
        let mut t = Translations::new(2, false);
        let ask = asker(&table, &asked);
        assert_eq!(t.physical(0, 0x0123_4010, &ask), Some(0x0007_7010));
        assert_eq!(t.physical(0, 0x0123_4ff8, &ask), Some(0x0007_7ff8));
        assert_eq!(asked.get(), 1);
        // Another vCPU has its own page.
        t.physical(1, 0x0123_4000, &ask);
        assert_eq!(asked.get(), 2);
        t.block(0);
        t.physical(0, 0x0123_4010, &ask);
        assert_eq!(asked.get(), 3);
        // No answer is not remembered.
        assert_eq!(t.physical(0, 0x0999_9000, &ask), None);
        assert_eq!(t.physical(0, 0x0999_9000, &ask), None);
        assert_eq!(asked.get(), 5);
    }

    #[test]
    fn a_linear_region_is_learnt_then_checked_and_a_contradiction_is_counted() {
        // A direct map of 4 MiB at physical 0.
        let mut table: HashMap<u64, u64> = (0..1024)
            .map(|i| ((DIRECT_MAP >> PAGE_BITS) + i, i))
            .collect();
        let asked = Cell::new(0);
        let mut t = Translations::new(1, true);
        let access = |t: &mut Translations, table: &HashMap<u64, u64>, page: u64| {
            t.block(0);
            let vaddr = DIRECT_MAP + (page << PAGE_BITS) + 8;
            let got = t.physical(0, vaddr, asker(table, &asked));
            assert_eq!(got, Some((page << PAGE_BITS) + 8));
        };
        for page in 0..LEARN as u64 {
            access(&mut t, &table, page);
        }
        assert_eq!(asked.get(), LEARN);
        // Trusted: CHECK accesses unasked, then one asked.
        for page in 0..=u64::from(CHECK) {
            access(&mut t, &table, 100 + page);
        }
        assert_eq!(asked.get(), LEARN + 1);
        // A page remapped elsewhere is caught at the next check, counted,
        // and the region is asked every time after.
        table.insert((DIRECT_MAP >> PAGE_BITS) + 300, 0x5_0000);
        for _ in 0..CHECK {
            t.block(0);
            t.physical(0, DIRECT_MAP + 200 * 4096, asker(&table, &asked));
        }
        t.block(0);
        assert_eq!(
            t.physical(0, DIRECT_MAP + 300 * 4096, asker(&table, &asked)),
            Some(0x5_0000 << PAGE_BITS)
        );
        assert_eq!(t.contradicted(), 1);
        let before = asked.get();
        access(&mut t, &table, 5);
        access(&mut t, &table, 6);
        assert_eq!(asked.get(), before + 2);
    }

    #[test]
    fn pages_that_disagree_or_user_addresses_are_never_guessed() {
        // Pages scattered as vmalloc maps them, and a user mapping.
        let vmalloc = 0xffff_c900_0000_0000u64 >> PAGE_BITS;
        let mut table: HashMap<u64, u64> = (0..64).map(|i| (vmalloc + i, 1000 + 7 * i)).collect();
        table.extend((0..64).map(|i| (0x400 + i, i)));
        let asked = Cell::new(0);
        let mut t = Translations::new(1, true);
        for round in 0..3 {
            for i in 0..64 {
                for base in [vmalloc, 0x400] {
                    t.block(0);
                    let got = t.physical(0, (base + i) << PAGE_BITS, asker(&table, &asked));
                    assert_eq!(got, table.get(&(base + i)).map(|f| f << PAGE_BITS));
                }
            }
            assert_eq!(asked.get(), (round + 1) * 128);
        }
        assert_eq!(t.contradicted(), 0);
    }

    #[test]
    fn an_offset_off_the_region_grain_is_not_learnt() {
        // Consecutive pages at an offset that is not a multiple of 2 MiB
        // (one allocation of physically consecutive pages).
        let base = DIRECT_MAP >> PAGE_BITS;
        let table: HashMap<u64, u64> = (0..64).map(|i| (base + i, 3 + i)).collect();
        let asked = Cell::new(0);
        let mut t = Translations::new(1, true);
        for i in 0..64 {
            t.block(0);
            t.physical(0, (base + i) << PAGE_BITS, asker(&table, &asked));
        }
        assert_eq!(asked.get(), 64);
    }
}
