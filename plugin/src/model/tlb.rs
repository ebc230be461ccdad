//! Each vCPU's translation lookaside buffers: a first level for data and
//! one for instructions, and a second level both share, set-associative
//! with LRU replacement, keyed by the guest's virtual page. An access that
//! misses both levels is a page walk, counted (`tlb-misses`) and charged
//! `tlb-walk-cycles`.
//!
//! Pages are 4 KiB, but for the 2 MiB regions of the kernel's half that
//! the plugin's translations have found linearly mapped (the direct map,
//! the kernel image: Linux maps them with large pages): QEMU's plugin API
//! (v4) gives no page size, so that is inferred, and a large page takes
//! one entry as a small one does.
//!
//! The guest's flushes act when their instruction has run: a write to CR3
//! drops every entry of the user half (the kernel's pages are global,
//! which a CR3 write keeps); a write to CR4 (how Linux flushes global
//! pages too) drops every entry. An `invlpg` names a page the plugin cannot
//! see (its address is in registers, and the instruction makes no memory
//! access), so it drops no entry and counts the one walk the page's next
//! use makes. A CR3 write's no-flush bit (with PCIDs) is not read either.

use super::caches::EMPTY;
use super::KERNEL_HALF;

/// Bits of a small page.
const PAGE_BITS: u32 = 12;
/// Bits of a large page.
const LARGE_BITS: u32 = 21;
/// A key's mark of a large page (no page number reaches it).
const LARGE: u64 = 1 << 62;
/// A key's mark of a global page (the kernel's half).
const GLOBAL: u64 = 1 << 63;

/// A flush the guest's instruction asks for, decoded at translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Flush {
    #[default]
    None,
    /// `mov cr3, r`: the entries of pages that are not global.
    AddressSpace,
    /// `mov cr4, r`: every entry.
    All,
    /// `invlpg m`: one page, which the plugin does not know.
    Page,
}

/// One level: `sets × ways` keys, most recently used first in each set.
#[derive(Debug, Clone)]
struct Level {
    ways: usize,
    set_mask: u64,
    keys: Box<[u64]>,
}

impl Level {
    fn new(entries: u32, ways: u32) -> Result<Level, String> {
        if ways == 0 || !entries.is_multiple_of(ways) || !(entries / ways).is_power_of_two() {
            return Err(format!(
                "{entries} entries in {ways} ways is not a power-of-two number of sets"
            ));
        }
        Ok(Level {
            ways: ways as usize,
            set_mask: u64::from(entries / ways) - 1,
            keys: vec![EMPTY; entries as usize].into_boxed_slice(),
        })
    }

    /// Looks `key` up and makes it its set's most recent, filling it in
    /// place of the least recent when it is missing; true on a hit.
    fn access(&mut self, key: u64) -> bool {
        let start = (key & self.set_mask) as usize * self.ways;
        let set = &mut self.keys[start..start + self.ways];
        let (hit, at) = match set.iter().position(|&k| k == key) {
            Some(i) => (true, i),
            None => (false, set.len() - 1),
        };
        set[..=at].rotate_right(1);
        set[0] = key;
        hit
    }

    /// Drops the entries `keep` refuses, the rest keeping their order.
    fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        for set in self.keys.chunks_mut(self.ways) {
            let mut kept = 0;
            for i in 0..set.len() {
                if set[i] != EMPTY && keep(set[i]) {
                    set[kept] = set[i];
                    kept += 1;
                }
            }
            set[kept..].fill(EMPTY);
        }
    }
}

/// The sizes of one vCPU's TLBs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbGeometry {
    pub dtlb: (u32, u32),
    pub itlb: (u32, u32),
    pub stlb: (u32, u32),
}

/// One vCPU's TLBs.
#[derive(Debug, Clone)]
pub struct Tlb {
    dtlb: Level,
    itlb: Level,
    stlb: Level,
    /// The key of the last data access, which is its set's most recent in
    /// the first level: the same page again changes nothing. `EMPTY` after
    /// a flush.
    last_data: u64,
    /// The flush the running block ends with, done when the next starts.
    pending: Flush,
}

/// The key of the page `vaddr` is in.
fn key(vaddr: u64, large: bool) -> u64 {
    let global = if vaddr >= KERNEL_HALF { GLOBAL } else { 0 };
    // The page number without the address's sign extension, so that it
    // stays clear of the marks.
    let canonical = vaddr & ((1 << 57) - 1);
    if large {
        (canonical >> LARGE_BITS) | LARGE | global
    } else {
        (canonical >> PAGE_BITS) | global
    }
}

impl Tlb {
    pub fn new(g: TlbGeometry) -> Result<Tlb, String> {
        let level = |name: &str, (entries, ways): (u32, u32)| {
            Level::new(entries, ways).map_err(|e| format!("{name}: {e}"))
        };
        Ok(Tlb {
            dtlb: level("dtlb", g.dtlb)?,
            itlb: level("itlb", g.itlb)?,
            stlb: level("stlb", g.stlb)?,
            last_data: EMPTY,
            pending: Flush::None,
        })
    }

    /// A data access at `vaddr`, in a large page or not: true when it
    /// walks the page tables.
    #[inline(always)]
    pub fn data(&mut self, vaddr: u64, large: bool) -> bool {
        let key = key(vaddr, large);
        if key == self.last_data {
            return false;
        }
        self.last_data = key;
        !self.dtlb.access(key) && !self.stlb.access(key)
    }

    /// An instruction fetch from `vaddr`: true when it walks.
    pub fn fetch(&mut self, vaddr: u64, large: bool) -> bool {
        let key = key(vaddr, large);
        !self.itlb.access(key) && !self.stlb.access(key)
    }

    /// A block starts that ends in `flush`: the flush the block before
    /// ended in is done now, and gives the walks it is counted as.
    pub fn block(&mut self, flush: Flush) -> u64 {
        let done = std::mem::replace(&mut self.pending, flush);
        let keep: fn(u64) -> bool = match done {
            Flush::None => return 0,
            Flush::Page => return 1,
            Flush::AddressSpace => |k| k & GLOBAL != 0,
            Flush::All => |_| false,
        };
        for level in [&mut self.dtlb, &mut self.itlb, &mut self.stlb] {
            level.retain(keep);
        }
        self.last_data = EMPTY;
        0
    }
}

/// What a block's last instruction flushes, from its bytes: `mov cr3, r`,
/// `mov cr4, r` or `invlpg m`.
pub fn flush_of(bytes: &[u8]) -> Flush {
    let mut i = 0;
    while i < bytes.len() && matches!(bytes[i], 0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 | 0x66) {
        i += 1;
    }
    // REX.R would make the register CR8 and up.
    let rex_r = i < bytes.len() && (0x40..=0x4f).contains(&bytes[i]) && bytes[i] & 4 != 0;
    if i < bytes.len() && (0x40..=0x4f).contains(&bytes[i]) {
        i += 1;
    }
    match &bytes[i..] {
        [0x0f, 0x22, modrm, ..] if !rex_r && (modrm >> 3) & 7 == 3 => Flush::AddressSpace,
        [0x0f, 0x22, modrm, ..] if !rex_r && (modrm >> 3) & 7 == 4 => Flush::All,
        [0x0f, 0x01, modrm, ..] if modrm >> 6 != 3 && (modrm >> 3) & 7 == 7 => Flush::Page,
        _ => Flush::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: TlbGeometry = TlbGeometry {
        dtlb: (8, 2),
        itlb: (4, 4),
        stlb: (32, 4),
    };

    /// The straightforward TLB: each set a list, most recent first.
    struct Lists {
        levels: Vec<(u64, usize, Vec<Vec<u64>>)>,
    }

    impl Lists {
        fn new(g: TlbGeometry) -> Lists {
            let level = |(e, w): (u32, u32)| {
                let sets = u64::from(e / w);
                (sets, w as usize, vec![Vec::new(); sets as usize])
            };
            Lists {
                levels: vec![level(g.dtlb), level(g.itlb), level(g.stlb)],
            }
        }

        fn access(&mut self, level: usize, key: u64) -> bool {
            let (sets, ways, lists) = &mut self.levels[level];
            let set = &mut lists[(key % *sets) as usize];
            let hit = set.contains(&key);
            set.retain(|&k| k != key);
            set.insert(0, key);
            set.truncate(*ways);
            hit
        }

        fn walks(&mut self, first: usize, key: u64) -> bool {
            !self.access(first, key) && !self.access(2, key)
        }

        fn flush(&mut self, keep_global: bool) {
            for (_, _, lists) in &mut self.levels {
                for set in lists {
                    set.retain(|&k| keep_global && k & GLOBAL != 0);
                }
            }
        }
    }

    #[test]
    fn the_tlb_walks_where_the_straightforward_one_does() {
        let mut tlb = Tlb::new(SMALL).unwrap();
        let mut lists = Lists::new(SMALL);
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut walks = 0;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let half = if x & 1 == 0 { 0 } else { KERNEL_HALF };
            let vaddr = half + (x >> 8) % (40 << PAGE_BITS);
            let large = half != 0 && (x >> 3).is_multiple_of(4);
            let expected = match (x >> 4) % 64 {
                0 => {
                    assert_eq!(tlb.block(Flush::AddressSpace), 0);
                    assert_eq!(tlb.block(Flush::None), 0);
                    lists.flush(true);
                    continue;
                }
                1 => {
                    tlb.block(Flush::All);
                    tlb.block(Flush::None);
                    lists.flush(false);
                    continue;
                }
                2..=12 => {
                    let walked = tlb.fetch(vaddr, large);
                    assert_eq!(walked, lists.walks(1, key(vaddr, large)));
                    walked
                }
                _ => {
                    let walked = tlb.data(vaddr, large);
                    assert_eq!(walked, lists.walks(0, key(vaddr, large)));
                    walked
                }
            };
            walks += u64::from(expected);
        }
        assert!(walks > 1000 && walks < 150_000, "{walks}");
    }

    #[test]
    fn a_cr3_write_keeps_the_kernels_pages_and_invlpg_counts_a_walk() {
        let mut tlb = Tlb::new(SMALL).unwrap();
        assert!(tlb.data(0x1000, false));
        assert!(tlb.data(KERNEL_HALF + 0x1000, false));
        assert!(!tlb.data(0x1008, false));
        // The flush waits for the block after the one it ends.
        tlb.block(Flush::AddressSpace);
        assert!(!tlb.data(0x1000, false));
        assert_eq!(tlb.block(Flush::None), 0);
        assert!(tlb.data(0x1000, false));
        assert!(!tlb.data(KERNEL_HALF + 0x1000, false));
        tlb.block(Flush::Page);
        assert_eq!(tlb.block(Flush::All), 1);
        assert_eq!(tlb.block(Flush::None), 0);
        assert!(tlb.data(KERNEL_HALF + 0x1000, false));
        // A large page is one entry for 2 MiB.
        assert!(tlb.data(KERNEL_HALF + (4 << 20), true));
        assert!(!tlb.data(KERNEL_HALF + (5 << 20) + 0x3000, true));
        assert!(Tlb::new(TlbGeometry {
            dtlb: (12, 4),
            ..SMALL
        })
        .unwrap_err()
        .starts_with("dtlb"));
    }

    #[test]
    fn flushes_are_told_from_their_bytes() {
        // mov cr3, rax; mov cr3, rdi; mov cr4, rax; mov cr0, rax; mov cr8, rax
        assert_eq!(flush_of(&[0x0f, 0x22, 0xd8]), Flush::AddressSpace);
        assert_eq!(flush_of(&[0x0f, 0x22, 0xdf]), Flush::AddressSpace);
        assert_eq!(flush_of(&[0x0f, 0x22, 0xe0]), Flush::All);
        assert_eq!(flush_of(&[0x0f, 0x22, 0xc0]), Flush::None);
        assert_eq!(flush_of(&[0x44, 0x0f, 0x22, 0xc0]), Flush::None);
        // mov cr3, r8 (REX.B)
        assert_eq!(flush_of(&[0x41, 0x0f, 0x22, 0xd8]), Flush::AddressSpace);
        // invlpg (rax), invlpg 0x10(rdi); swapgs (0f 01 f8) is not one.
        assert_eq!(flush_of(&[0x0f, 0x01, 0x38]), Flush::Page);
        assert_eq!(flush_of(&[0x0f, 0x01, 0x7f, 0x10]), Flush::Page);
        assert_eq!(flush_of(&[0x0f, 0x01, 0xf8]), Flush::None);
        assert_eq!(flush_of(&[0x0f, 0x20, 0xd8]), Flush::None);
    }
}
