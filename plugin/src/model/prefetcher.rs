//! What works by guest page beside the caches: the L2's stream
//! prefetcher.

use super::caches::LINE_BITS;
use super::Model;

/// Lines of a 4 KiB page: the prefetcher's streams stay within one, as
/// physical pages that follow each other need not be neighbours.
pub(super) const PAGE_LINES_BITS: u32 = 12 - LINE_BITS;

/// Lines a confirmed stream prefetches ahead of each access: Intel's L2
/// streamer "may issue two prefetch requests on every L2 lookup". The
/// model has no time, so a prefetch is there at once and two ahead keep
/// a stream of one access per line ahead of its demand.
pub(super) const PREFETCH_DEGREE: i64 = 2;

/// The most streams a prefetcher may track (searched one by one).
pub(super) const MAX_STREAMS: u32 = 256;

/// One stream of a prefetcher: the last line accessed in its page and the
/// stride (in lines, either way) from the access before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stream {
    page: u64,
    last: u64,
    stride: i64,
}

/// A stream prefetcher at the L2, after Intel's L2 streamer (Intel 64 and
/// IA-32 Architectures Optimization Reference Manual, "Data Prefetch to
/// the L2 and Last Level Cache"): it watches the L2's accesses from the
/// L1s' misses, one stream per 4 KiB page, the least recently used stream
/// giving way to a new page, and once a stream has gone the same stride
/// twice in a row it prefetches the next lines of that stride in the page.
#[derive(Debug, Clone)]
pub(super) struct Prefetcher {
    /// Most recently used first.
    streams: Vec<Stream>,
    capacity: usize,
}

impl Prefetcher {
    pub(super) fn new(capacity: u32) -> Prefetcher {
        Prefetcher {
            streams: Vec::with_capacity(capacity as usize),
            capacity: capacity as usize,
        }
    }

    /// An L2 access to `line`: the stride to prefetch along from it, if
    /// its stream is confirmed.
    fn observe(&mut self, line: u64) -> Option<i64> {
        let page = line >> PAGE_LINES_BITS;
        let Some(at) = self.streams.iter().position(|s| s.page == page) else {
            if self.streams.len() == self.capacity {
                self.streams.pop();
            }
            self.streams.insert(
                0,
                Stream {
                    page,
                    last: line,
                    stride: 0,
                },
            );
            return None;
        };
        self.streams[..=at].rotate_right(1);
        let stream = &mut self.streams[0];
        let stride = line.wrapping_sub(stream.last) as i64;
        if stride == 0 {
            return None;
        }
        let confirmed = stride == stream.stride;
        stream.stride = stride;
        stream.last = line;
        confirmed.then_some(stride)
    }
}

impl Model {
    /// The prefetcher of vCPU `v` sees the L2 access to `line` (counted in
    /// `mode`) and, on a confirmed stream, brings the stream's next lines
    /// in the page into the L2: lines with no tag in the L2 (an
    /// invalidated tag is a line another vCPU wrote) and none valid in
    /// another vCPU's L1d or L2. The model keeps no modified state, so a
    /// line another core holds might be one it wrote; leaving those to the
    /// demand access keeps every copy the coherence knows of as it was.
    #[inline(always)]
    pub(super) fn prefetch(&mut self, v: usize, line: u64, mode: usize) {
        let Some(prefetcher) = self.cores[v].prefetcher.as_mut() else {
            return;
        };
        let Some(stride) = prefetcher.observe(line) else {
            return;
        };
        for k in 1..=PREFETCH_DEGREE {
            let ahead = line.wrapping_add_signed(k * stride);
            if ahead >> PAGE_LINES_BITS != line >> PAGE_LINES_BITS {
                break;
            }
            if self.cores[v].l2.has_tag(ahead) || self.held_by_another(v, ahead) {
                continue;
            }
            let (_, evicted) = self.l2_access(v, ahead);
            if !self.config.llc_victim {
                self.llc.access(ahead);
            }
            self.llc_takes(evicted);
            self.cores[v].counts[mode].l2_prefetches += 1;
            // A vCPU that wrote the line and has since evicted it may
            // still own it: its next store must find this copy.
            if self.cores.len() > 1 {
                self.disown(v, ahead);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::*;
    use crate::model::{Counts, Mode, LINE};

    /// Accesses a stream takes to be confirmed: its first, then two equal
    /// strides.
    const CONFIRMING: u64 = 3;

    /// Reads 8 bytes at each of `addresses`: the user counts, the lines and
    /// the 4 KiB pages they touched.
    fn reads(m: &mut Model, addresses: impl Iterator<Item = u64>) -> (Counts, u64, u64) {
        let (mut lines, mut pages) = (Vec::new(), Vec::new());
        for a in addresses {
            m.data(0, a, 8, false);
            lines.push(a / LINE);
            pages.push(a >> 12);
        }
        lines.dedup();
        pages.dedup();
        (user(m), lines.len() as u64, pages.len() as u64)
    }

    #[test]
    fn a_sequential_sweep_misses_the_l2_only_until_each_pages_stream_is_confirmed() {
        // Twice the last level: without the prefetcher every line misses
        // every level.
        let bytes = 2 * small().llc.bytes;
        let sweep = || (0..bytes).step_by(8).map(|o| 0x100_0000 + o);
        let (without, lines, pages) = reads(&mut user_model(memory_side(0, false), 1), sweep());
        assert_eq!(without.l2_misses, lines);
        assert_eq!(without.llc_misses, lines);
        assert_eq!(without.l2_prefetches, 0);
        let (with, _, _) = reads(&mut user_model(memory_side(16, false), 1), sweep());
        // The L1d is not prefetched into; each page's first lines train its
        // stream, and every line after them is in the L2 when asked for.
        assert_eq!(with.l1d_misses, lines);
        assert_eq!(with.l2_misses, CONFIRMING * pages);
        assert_eq!(with.l2_prefetches, lines - with.l2_misses);
        assert_eq!(with.llc_misses, with.l2_misses);
        // Prefetching costs nothing: the hits it makes save their misses.
        let c = small();
        assert!(with.estimated_cycles(&c) < without.estimated_cycles(&c));
    }

    #[test]
    fn a_strided_sweep_either_way_is_prefetched_along_its_stride() {
        let bytes = 2 * small().llc.bytes;
        for stride in [3 * LINE as i64, -2 * LINE as i64] {
            // From the first line of the buffer up, or from its last down.
            let base = 0x100_0000;
            let start = if stride > 0 {
                base
            } else {
                base + bytes - stride.unsigned_abs()
            };
            let sweep = (0..bytes / stride.unsigned_abs())
                .map(|i| start.wrapping_add_signed(i as i64 * stride));
            let (c, lines, pages) = reads(&mut user_model(memory_side(16, false), 1), sweep);
            assert_eq!(c.l1d_misses, lines, "stride {stride}");
            assert_eq!(c.l2_misses, CONFIRMING * pages, "stride {stride}");
            // The last accesses prefetch lines past the sweep's end.
            let past = c.l2_prefetches - (lines - c.l2_misses);
            assert!(past <= PREFETCH_DEGREE as u64, "stride {stride}: {c:?}");
        }
    }

    #[test]
    fn random_accesses_are_almost_never_prefetched() {
        let mut x: u64 = 0x853c_49e6_748f_ea9b;
        let random = std::iter::repeat_with(move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % (64 << 20)
        });
        let accesses = 20_000;
        let (c, lines, _) = reads(
            &mut user_model(memory_side(16, false), 1),
            random.take(accesses),
        );
        assert!(lines > accesses as u64 * 9 / 10);
        assert!(c.l2_prefetches * 100 < accesses as u64, "{c:?}");
    }

    #[test]
    fn a_prefetch_takes_no_line_another_vcpu_holds() {
        let mut m = user_model(memory_side(16, false), 2);
        let base = 0x100_0000;
        // vCPU 1 holds the stream's fourth line.
        m.data(1, base + 3 * LINE, 8, false);
        for i in 0..CONFIRMING {
            m.data(0, base + i * LINE, 8, false);
        }
        let l2 = &m.cores[0].l2;
        let line = |i: u64| base / LINE + i;
        assert!(!l2.has_tag(line(CONFIRMING)));
        assert!(l2.holds(line(CONFIRMING + 1)));
        assert_eq!(m.vcpu_counts(0)[Mode::User as usize].l2_prefetches, 1);
        // vCPU 0 reads that line as it would have without a prefetcher.
        let before = m.vcpu_counts(0)[Mode::User as usize];
        m.data(0, base + CONFIRMING * LINE, 8, false);
        let read = m.vcpu_counts(0)[Mode::User as usize].since(&before);
        assert_eq!((read.l2_misses, read.coherence_misses), (1, 0));
    }
}
