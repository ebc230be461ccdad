//! This host's CPU measured natively, as a profile of the cycle model's
//! settings: its caches' sizes from sysfs, and its latencies in cycles
//! from small loops timed on the wall clock.
//!
//! There may be no PMU (a VM rarely has one), so cycles come from the
//! clock a chain of dependent adds shows: every current x86 core runs one
//! such add a cycle, so the chain's time per add is the length of a cycle,
//! and any loop's wall time over it is that loop's cycles. Each loop is
//! timed several times and the least time kept: other work on the host
//! only ever makes a loop slower.
//!
//! What the profile holds: the clock; the issue width (independent adds a
//! cycle); a load served by the L1d, the L2, the last level and memory
//! (pointer chases over buffers sized to sit in each, lines in a random
//! order so no prefetcher helps); the TLB's reach and a page walk's cost
//! (chases of one line a page over growing counts of pages, each against a
//! chase of as many lines packed in few pages; memory without the walks
//! from a chase over large pages where the host gives them, so that the
//! model's walks are not paid twice); a
//! mispredicted branch (a branch on random bits against one always
//! taken); a line passed between two cores (two threads pinned apart,
//! taking turns on one counter). What it does not measure keeps the
//! model's default.

use crate::base::cycle_model::CycleModel;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The folder of markbench's cache that holds a profile per CPU.
pub const PROFILE_DIR: &str = "model-profiles";

/// A CPU's profile: the figures measured and the model settings they give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Profile {
    /// The CPU's model name (`/proc/cpuinfo`).
    pub cpu: String,
    /// The host it was measured on, and when (RFC 3339, UTC).
    pub host: String,
    pub measured: String,
    /// The clock the add chain showed, in GHz.
    pub clock_ghz: f64,
    /// Each figure measured, in cycles (`issue-width` in instructions a
    /// cycle), by the setting it gives.
    pub figures: BTreeMap<String, f64>,
    /// The model settings, by name, that differ from the defaults or were
    /// measured.
    pub settings: BTreeMap<String, u64>,
    /// The profile's check against this CPU, once one has been recorded
    /// (`[check]`; a profile is written without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<crate::base::cycle_model::ProfileCheck>,
}

impl Profile {
    /// The defaults with this profile's settings over them; a setting the
    /// model does not know (a profile of a later markbench) is an error.
    pub fn model(&self) -> Result<CycleModel, String> {
        let mut model = CycleModel::default();
        self.apply(&mut model, std::path::Path::new(""))?;
        Ok(model)
    }

    /// Sets this profile's settings on `model`, and notes it came from
    /// `file`.
    pub fn apply(&self, model: &mut CycleModel, file: &std::path::Path) -> Result<(), String> {
        for (key, value) in &self.settings {
            model.set(key, *value)?;
        }
        model.check()?;
        model.profile = Some(crate::base::cycle_model::ProfileNote {
            cpu: self.cpu.clone(),
            host: self.host.clone(),
            measured: self.measured.clone(),
            file: file.display().to_string(),
            check: self.check.clone(),
        });
        Ok(())
    }
}

/// The profile in `path`, a TOML file `markbench calibrate` wrote; what is
/// wrong with it is an input error naming the file.
pub fn read(path: &std::path::Path) -> crate::base::error::Result<Profile> {
    crate::base::input_file::read_toml(
        path,
        crate::base::input_file::Bound::Text,
        "cycle-model profile",
    )
}

/// The file name of `cpu`'s profile: its model name in lower case, with
/// runs of other characters than letters and digits as one `-`.
pub fn file_name(cpu: &str) -> String {
    let mut name = String::new();
    for c in cpu.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    format!("{}.toml", name.trim_matches('-'))
}

/// One cache level as sysfs describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLevel {
    pub bytes: u64,
    pub ways: u64,
}

/// The caches of CPU 0 from `/sys/devices/system/cpu/cpu0/cache` under
/// `root`: (setting prefix, level) for the L1i, L1d, L2 and last level.
pub fn caches_at(root: &std::path::Path) -> Vec<(&'static str, CacheLevel)> {
    let dir = root.join("sys/devices/system/cpu/cpu0/cache");
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return found;
    };
    let mut levels: Vec<(u32, String, CacheLevel)> = Vec::new();
    for entry in entries.flatten() {
        let read = |name: &str| {
            std::fs::read_to_string(entry.path().join(name))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let (Some(level), Some(kind), Some(size), Some(ways)) = (
            read("level").and_then(|l| l.parse::<u32>().ok()),
            read("type"),
            read("size").and_then(|s| parse_size(&s)),
            read("ways_of_associativity").and_then(|w| w.parse::<u64>().ok()),
        ) else {
            continue;
        };
        levels.push((level, kind, CacheLevel { bytes: size, ways }));
    }
    let last = levels.iter().map(|(l, _, _)| *l).max().unwrap_or(0);
    for (level, kind, cache) in levels {
        let prefix = match (level, kind.as_str()) {
            (1, "Instruction") => "l1i",
            (1, "Data") => "l1d",
            (2, _) if last > 2 => "l2",
            (l, "Unified") if l == last && l > 2 => "llc",
            _ => continue,
        };
        found.push((prefix, cache));
    }
    found.sort_by_key(|(p, _)| *p);
    found
}

/// `32K`, `1024K`, `32768K` or a plain count of bytes.
fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.strip_suffix(['K', 'M']) {
        Some(d) => (
            d,
            if text.ends_with('K') {
                1 << 10
            } else {
                1 << 20
            },
        ),
        None => (text, 1),
    };
    digits.parse::<u64>().ok().map(|n| n * unit)
}

/// What the loops measured, before it becomes settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub clock_ghz: f64,
    /// Independent adds a cycle.
    pub adds_per_cycle: f64,
    /// Cycles a load takes, served by each level.
    pub l1: f64,
    pub l2: f64,
    pub llc: f64,
    pub memory: f64,
    /// The largest buffer the last level held (a power of two times the
    /// L2), in bytes: the model's last level is this large.
    pub llc_holds: u64,
    /// Cycles a mispredicted branch costs.
    pub mispredict: f64,
    /// Cycles a line takes to pass from one core to another, when there
    /// are two cores to measure it on.
    pub transfer: Option<f64>,
    /// A `rep movsb`'s cycles to start, and the bytes it moves a cycle
    /// once under way (from copies of two lengths).
    pub string_startup: f64,
    pub string_bytes_per_cycle: f64,
    /// The TLB's figures, where they were measured; `memory` is then
    /// without the walks.
    pub tlb: Option<TlbFigures>,
}

/// What the chases across pages measured.
#[derive(Debug, Clone, PartialEq)]
pub struct TlbFigures {
    /// Cycles a page walk adds to a load served by memory (memory's
    /// chase over small pages against one over large pages), or where the
    /// host gave no large pages, to a load the caches serve.
    pub walk: f64,
    /// Cycles a walk adds to a load the caches serve, its page-table
    /// entries in the caches too.
    pub walk_cached: f64,
    /// The most pages a chase of one line a page went over without
    /// walking (at half a walk's cost at most).
    pub reach: u64,
    /// A load served by memory, walks included (the chase over small
    /// pages).
    pub memory_walked: f64,
}

/// Ways of a second-level TLB of `entries` entries, as near a current
/// core's 12 or 16 as makes a power-of-two number of sets.
fn stlb_ways(entries: u64) -> Option<u64> {
    [12, 16, 8, 6, 24, 4, 32]
        .into_iter()
        .find(|&w| entries.is_multiple_of(w) && (entries / w).is_power_of_two())
}

impl Figures {
    /// Each figure measured, by the setting it gives, and whether the
    /// setting is the figure beyond a load the L1d serves (a level's cost:
    /// the block's own cost holds that load) or the figure itself.
    fn measured(&self) -> Vec<(&'static str, f64, bool)> {
        let mut m = vec![
            ("issue-width", self.adds_per_cycle, false),
            ("load-cycles", self.l1, false),
            ("l2-cycles", self.l2, true),
            ("llc-cycles", self.llc, true),
            ("memory-cycles", self.memory, true),
            ("mispredict-cycles", self.mispredict, false),
            ("string-startup-cycles", self.string_startup, false),
            ("string-bytes-per-cycle", self.string_bytes_per_cycle, false),
        ];
        if let Some(transfer) = self.transfer {
            m.push(("coherence-cycles", transfer, true));
        }
        if let Some(tlb) = &self.tlb {
            m.push(("tlb-walk-cycles", tlb.walk, false));
        }
        m
    }

    /// The model settings these figures give, over `caches` (from
    /// [`caches_at`]), each a whole number of at least 1.
    pub fn settings(&self, caches: &[(&str, CacheLevel)]) -> BTreeMap<String, u64> {
        let mut s: BTreeMap<String, u64> = self
            .measured()
            .into_iter()
            .map(|(key, figure, beyond_l1)| {
                let cycles = if beyond_l1 { figure - self.l1 } else { figure };
                (key.to_string(), cycles.round().max(1.0) as u64)
            })
            .collect();
        for (prefix, cache) in caches {
            let bytes = match *prefix {
                "llc" => cache.bytes.min(self.llc_holds),
                _ => cache.bytes,
            };
            s.insert(format!("{prefix}-bytes"), bytes);
            s.insert(format!("{prefix}-ways"), cache.ways);
        }
        if let Some(ways) = self.tlb.as_ref().and_then(|t| stlb_ways(t.reach)) {
            s.insert(
                "stlb-entries".into(),
                self.tlb.as_ref().map_or(0, |t| t.reach),
            );
            s.insert("stlb-ways".into(), ways);
        }
        // A geometry the model cannot build (sets not a power of two)
        // keeps the default's.
        let mut model = CycleModel::default();
        for (prefix, _) in caches {
            let (bytes, ways) = (format!("{prefix}-bytes"), format!("{prefix}-ways"));
            let mut trial = model.clone();
            let fits = trial.set(&bytes, s[&bytes]).is_ok()
                && trial.set(&ways, s[&ways]).is_ok()
                && trial.check().is_ok();
            if fits {
                model = trial;
            } else {
                s.remove(&bytes);
                s.remove(&ways);
            }
        }
        s
    }

    /// Each figure by the setting it gives, to a hundredth, and the last
    /// level's usable size in bytes, for the profile.
    pub fn by_setting(&self) -> BTreeMap<String, f64> {
        let mut f: BTreeMap<String, f64> = self
            .measured()
            .into_iter()
            .map(|(key, figure, _)| (key.to_string(), (figure * 100.0).round() / 100.0))
            .collect();
        f.insert("llc-bytes".into(), self.llc_holds as f64);
        if let Some(tlb) = &self.tlb {
            let hundredths = |x: f64| (x * 100.0).round() / 100.0;
            f.insert("stlb-entries".into(), tlb.reach as f64);
            f.insert("tlb-walk-cached-cycles".into(), hundredths(tlb.walk_cached));
            f.insert(
                "memory-cycles-with-walks".into(),
                hundredths(tlb.memory_walked),
            );
        }
        f
    }
}

/// The least time of `repeats` runs of `f`.
fn least(repeats: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..repeats).map(|_| f()).min().unwrap_or_default()
}

/// Loops the measurements time, on this host.
#[cfg(target_arch = "x86_64")]
mod loops {
    use std::arch::asm;
    use std::time::{Duration, Instant};

    // Each loop runs whole inside its assembly, counter and all, so that
    // what the compiler makes of the code around it (an unoptimized test
    // build keeps its counters in memory) is not timed.

    /// `n` iterations of 32 dependent adds.
    pub fn add_chain(n: u64) -> Duration {
        let mut x: u64 = 0;
        let start = Instant::now();
        // The step is a register, not an immediate: Intel's cores since
        // Golden Cove fold an immediate add into the register's name, so a
        // chain of `add reg, 1` runs at several adds a cycle there (a
        // 10 GHz clock on a Xeon of that family).
        // SAFETY: register arithmetic and a local loop only.
        unsafe {
            asm!(
                "2:",
                ".rept 32", "add {x}, {one}", ".endr",
                "dec {n}", "jnz 2b",
                x = inout(reg) x, one = in(reg) 1u64, n = inout(reg) n.max(1) => _,
                options(nomem, nostack)
            );
        }
        std::hint::black_box(x);
        start.elapsed()
    }

    /// `n` iterations of 8 independent chains of 4 adds each.
    pub fn independent_adds(n: u64) -> Duration {
        let (mut a, mut b, mut c, mut d) = (0u64, 0u64, 0u64, 0u64);
        let (mut e, mut f, mut g, mut h) = (0u64, 0u64, 0u64, 0u64);
        let start = Instant::now();
        // SAFETY: register arithmetic and a local loop only.
        unsafe {
            asm!(
                "2:",
                ".rept 4",
                "add {a}, {one}", "add {b}, {one}", "add {c}, {one}", "add {d}, {one}",
                "add {e}, {one}", "add {f}, {one}", "add {g}, {one}", "add {h}, {one}",
                ".endr",
                "dec {n}", "jnz 2b",
                a = inout(reg) a, b = inout(reg) b, c = inout(reg) c, d = inout(reg) d,
                e = inout(reg) e, f = inout(reg) f, g = inout(reg) g, h = inout(reg) h,
                one = in(reg) 1u64, n = inout(reg) n.max(1) => _,
                options(nomem, nostack)
            );
        }
        std::hint::black_box((a, b, c, d, e, f, g, h));
        start.elapsed()
    }

    /// `n` dependent loads through `next`, each the index of the next,
    /// from `at`; where the chase ended.
    pub fn chase(next: &[usize], at: usize, n: usize) -> (Duration, usize) {
        let mut at = at;
        let start = Instant::now();
        // SAFETY: every entry of `next` the chase reaches is an index of
        // `next` (the caller's cycle), so every load is within it.
        unsafe {
            asm!(
                "2:",
                "mov {at}, qword ptr [{base} + 8*{at}]",
                "dec {n}", "jnz 2b",
                at = inout(reg) at, base = in(reg) next.as_ptr(), n = inout(reg) n.max(1) => _,
                options(readonly, nostack)
            );
        }
        (start.elapsed(), at)
    }

    /// `n` copies of `bytes` bytes with `rep movsb`, between two buffers
    /// that stay in the L1d, each aligned to a line (as a kernel's pages
    /// are: a copy between buffers misaligned to each other runs many
    /// times slower on some cores).
    pub fn rep_movsb(bytes: usize, n: usize) -> Duration {
        #[derive(Clone, Copy)]
        #[repr(C, align(64))]
        struct Line([u8; 64]);
        let lines = bytes.div_ceil(64);
        let from = vec![Line([1; 64]); lines];
        let mut to = vec![Line([0; 64]); lines];
        let start = Instant::now();
        for _ in 0..n {
            // SAFETY: both buffers hold `bytes` bytes; the direction flag is
            // clear in Rust code.
            unsafe {
                asm!(
                    "rep movsb",
                    inout("rcx") bytes => _,
                    inout("rsi") from.as_ptr().cast::<u8>() => _,
                    inout("rdi") to.as_mut_ptr().cast::<u8>() => _,
                    options(nostack, preserves_flags)
                );
            }
        }
        std::hint::black_box(&to);
        start.elapsed()
    }

    /// `n` iterations of a branch on bit `i` of `bits` (taken or not).
    pub fn branches(bits: &[u8], n: usize) -> Duration {
        assert!(bits.len().is_power_of_two());
        let mut sum: u64 = 0;
        let start = Instant::now();
        // SAFETY: the index stays below `bits.len()` (masked by it less
        // one, a power of two), so every load is within `bits`.
        unsafe {
            asm!(
                "xor {i}, {i}",
                "2:",
                "movzx {bit:e}, byte ptr [{bits} + {i}]",
                "test {bit:e}, {bit:e}",
                "jz 3f",
                "add {sum}, 1",
                "3:",
                "inc {i}",
                "and {i}, {mask}",
                "dec {n}",
                "jnz 2b",
                bits = in(reg) bits.as_ptr(),
                mask = in(reg) bits.len() - 1,
                i = out(reg) _,
                bit = out(reg) _,
                sum = inout(reg) sum,
                n = inout(reg) n.max(1) => _,
                options(readonly, nostack)
            );
        }
        std::hint::black_box(sum);
        start.elapsed()
    }
}

/// `loads` dependent loads chasing a random cycle through `bytes` of
/// 64-byte lines, one load a line.
#[cfg(target_arch = "x86_64")]
fn chase(bytes: usize, loads: usize) -> Duration {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    const LINE_WORDS: usize = 8;
    let lines = (bytes / 64).max(2);
    let mut order: Vec<usize> = (0..lines).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
    let mut next = vec![0usize; lines * LINE_WORDS];
    for (i, &line) in order.iter().enumerate() {
        next[line * LINE_WORDS] = order[(i + 1) % lines] * LINE_WORDS;
    }
    // Once round before the clock starts: the buffer is in the caches it
    // fits in, and its pages are mapped.
    let mut at = order[0] * LINE_WORDS;
    for _ in 0..lines {
        at = next[at];
    }
    let (elapsed, at) = loops::chase(&next, at, loads);
    std::hint::black_box(at);
    elapsed
}

/// Bytes of a small page, and of a large one.
const SMALL_PAGE: usize = 4 << 10;
const LARGE_PAGE: usize = 2 << 20;

/// An anonymous mapping aligned to a large page, advised to be in large
/// pages or not to be; unmapped on drop.
#[cfg(target_arch = "x86_64")]
struct Pages {
    raw: *mut libc::c_void,
    raw_bytes: usize,
    start: *mut usize,
    bytes: usize,
}

#[cfg(target_arch = "x86_64")]
impl Pages {
    fn new(bytes: usize, large: bool) -> Option<Pages> {
        let bytes = bytes.div_ceil(LARGE_PAGE) * LARGE_PAGE;
        let raw_bytes = bytes + LARGE_PAGE;
        // SAFETY: a fresh private anonymous mapping, no file.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                raw_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let offset = (raw as usize).next_multiple_of(LARGE_PAGE) - raw as usize;
        // SAFETY: `offset + bytes` is within the mapping.
        let start = unsafe { raw.cast::<u8>().add(offset) }.cast::<usize>();
        let advice = if large {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: advice on our own mapping; refused advice only leaves
        // the kernel's default.
        unsafe { libc::madvise(start.cast(), bytes, advice) };
        Some(Pages {
            raw,
            raw_bytes,
            start,
            bytes,
        })
    }

    fn words(&mut self) -> &mut [usize] {
        // SAFETY: the mapping holds `bytes` bytes from `start`, zeroed,
        // and lives as long as `self`.
        unsafe { std::slice::from_raw_parts_mut(self.start, self.bytes / 8) }
    }

    /// Whether the kernel gave most of it large pages (its mapping's
    /// `AnonHugePages` in `/proc/self/smaps`).
    fn in_large_pages(&self) -> bool {
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
            return false;
        };
        let at = self.start as usize;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((from, to)) = range.split_once('-') {
                    if let (Ok(from), Ok(to)) = (
                        usize::from_str_radix(from, 16),
                        usize::from_str_radix(to, 16),
                    ) {
                        inside = from <= at && at < to;
                        continue;
                    }
                }
            }
            if let Some(kb) = line.strip_prefix("AnonHugePages:").filter(|_| inside) {
                let kb: usize = kb.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                return kb * 1024 >= self.bytes / 2;
            }
        }
        false
    }
}

#[cfg(target_arch = "x86_64")]
impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, unmapped once.
        unsafe { libc::munmap(self.raw, self.raw_bytes) };
    }
}

/// The least time of `repeats` chases of `loads` loads through `words`
/// along `slots` (word indices, the cycle's order), after a round to fill
/// the caches and map the pages.
#[cfg(target_arch = "x86_64")]
fn chase_slots(words: &mut [usize], slots: &[usize], loads: usize, repeats: usize) -> Duration {
    for (i, &slot) in slots.iter().enumerate() {
        words[slot] = slots[(i + 1) % slots.len()];
    }
    let mut at = slots[0];
    for _ in 0..slots.len() {
        at = words[at];
    }
    least(repeats, || {
        let (elapsed, end) = loops::chase(words, at, loads);
        at = end;
        elapsed
    })
}

/// `0..n` in a random order (the same every time).
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    order
}

/// The TLB's reach and walk cost, and memory's latency with and without
/// walks over `memory_bytes`: `cycles` turns a time of some loads into
/// cycles a load. `None` where the host would not map the buffers.
#[cfg(target_arch = "x86_64")]
fn measure_tlb(
    cycles: impl Fn(Duration, f64) -> f64,
    loads: usize,
    repeats: usize,
    memory_bytes: usize,
) -> Option<TlbFigures> {
    // One line a page, each page's at another offset so that the lines
    // spread over the caches' sets, against a chase of as many lines packed
    // in few pages: the difference is what the pages cost.
    let mut extra = Vec::new();
    for pages in [256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192, 16384] {
        let mut buffer = Pages::new(pages * SMALL_PAGE, false)?;
        let slots: Vec<usize> = shuffled(pages, 3)
            .into_iter()
            .map(|p| (p * SMALL_PAGE + (p % 64) * 64) / 8)
            .collect();
        let spread = cycles(
            chase_slots(buffer.words(), &slots, loads, repeats),
            loads as f64,
        );
        let packed = cycles(least(repeats, || chase(pages * 64, loads)), loads as f64);
        extra.push((pages as u64, spread - packed));
    }
    let walk_cached = extra.last().map_or(0.0, |(_, e)| *e).max(1.0);
    let reach = extra
        .iter()
        .take_while(|(_, e)| *e < walk_cached / 2.0)
        .last()
        .map_or(0, |(pages, _)| *pages);
    // Memory in small pages, and where the host gives them in large ones.
    let lines = memory_bytes / 64;
    let slots: Vec<usize> = shuffled(lines, 4).into_iter().map(|l| l * 8).collect();
    let memory_loads = (loads / 8).max(1000);
    let mut small = Pages::new(memory_bytes, false)?;
    let memory_walked = cycles(
        chase_slots(small.words(), &slots, memory_loads, repeats),
        memory_loads as f64,
    );
    drop(small);
    let mut large = Pages::new(memory_bytes, true)?;
    let large_time = chase_slots(large.words(), &slots, memory_loads, repeats);
    let walk = if large.in_large_pages() {
        memory_walked - cycles(large_time, memory_loads as f64)
    } else {
        walk_cached
    };
    Some(TlbFigures {
        walk: walk.max(1.0),
        walk_cached,
        reach,
        memory_walked,
    })
}

/// Nanoseconds a line takes to pass between CPUs 0 and 1: two threads
/// pinned apart take turns adding to one counter, each waiting for the
/// other's value; `None` with fewer than two CPUs or where pinning fails.
fn transfer_ns(turns: u64) -> Option<f64> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return None;
    }
    let counter = AtomicU64::new(0);
    let pinned = [AtomicBool::new(false), AtomicBool::new(false)];
    let barrier = std::sync::Barrier::new(2);
    // Each player on a thread of its own, so that no thread of the caller
    // stays pinned.
    let player = |cpu: usize| {
        // SAFETY: a zeroed cpu_set_t is empty; the set outlives the call.
        let ok = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        };
        pinned[cpu].store(ok, Ordering::SeqCst);
        barrier.wait();
        if !pinned.iter().all(|p| p.load(Ordering::SeqCst)) {
            return None;
        }
        let start = Instant::now();
        for turn in 0..turns {
            let mine = 2 * turn + cpu as u64;
            let mut spins = 0u32;
            while counter.load(Ordering::Acquire) != mine {
                std::hint::spin_loop();
                // The other player is not running (the host's CPUs are
                // busy): give way rather than spin out its time slice.
                spins += 1;
                if spins.is_multiple_of(100_000) {
                    std::thread::yield_now();
                }
            }
            counter.store(mine + 1, Ordering::Release);
        }
        Some(start.elapsed())
    };
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(|| player(0));
        let second = scope.spawn(|| player(1));
        (first.join().ok().flatten(), second.join().ok().flatten())
    });
    let elapsed = first?.max(second?);
    Some(elapsed.as_nanos() as f64 / (2 * turns) as f64)
}

/// Measures this host's CPU with its caches `caches` (from [`caches_at`];
/// the model's default sizes where sysfs gives none). `quick` shortens
/// every loop (for tests: the figures are then rougher). Takes about ten
/// seconds, most of it the chases through memory.
#[cfg(target_arch = "x86_64")]
pub fn measure(caches: &[(&str, CacheLevel)], quick: bool) -> Figures {
    let size = |prefix: &str| {
        caches.iter().find(|(p, _)| *p == prefix).map_or(
            CycleModel::default().get(&format!("{prefix}-bytes")),
            |(_, c)| c.bytes,
        ) as usize
    };
    let scale = if quick { 10 } else { 1 };
    let repeats = if quick { 3 } else { 7 };
    let n = 2_000_000 / scale;
    let chain = least(repeats, || loops::add_chain(n));
    let ns_per_cycle = chain.as_nanos() as f64 / (n * 32) as f64;
    let cycles = |d: Duration, ops: f64| d.as_nanos() as f64 / ns_per_cycle / ops;
    let wide = least(repeats, || loops::independent_adds(n));
    let adds_per_cycle = 1.0 / cycles(wide, (n * 32) as f64);
    let loads = 1_000_000 / scale as usize;
    let chase_cycles = |bytes: usize, loads: usize, repeats: usize| {
        cycles(least(repeats, || chase(bytes, loads)), loads as f64)
    };
    // A quarter of each private level: it stays there whatever else runs.
    let l1 = chase_cycles(size("l1d") / 4, loads, repeats);
    let l2 = chase_cycles(size("l2") / 4, loads, repeats);
    // Past the L2, the last level as far as this host lets it hold a
    // buffer (a VM's share of a shared LLC may be far less than sysfs
    // says): doubling sizes up to its whole, and memory past it.
    let llc = chase_cycles(2 * size("l2"), loads / 2, repeats.min(3));
    let memory_bytes = (2 * size("llc")).max(64 << 20);
    let memory = chase_cycles(memory_bytes, loads / 8, repeats.min(3));
    let mut holds = 2 * size("l2");
    let mut probe = 2 * holds;
    while probe <= size("llc") {
        if chase_cycles(probe, loads / 4, repeats.min(3)) > (llc + memory) / 2.0 {
            break;
        }
        holds = probe;
        probe *= 2;
    }
    let branches = 1_000_000 / scale as usize;
    let random: Vec<u8> = {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        (0..1 << 16).map(|_| rng.random_range(0..2)).collect()
    };
    let taken = vec![1u8; 1 << 16];
    let unpredictable = cycles(least(repeats, || loops::branches(&random, branches)), 1.0);
    let predictable = cycles(least(repeats, || loops::branches(&taken, branches)), 1.0);
    // Half the random branches are mispredicted.
    let mispredict = (unpredictable - predictable) * 2.0 / branches as f64;
    // Few turns when quick: with the CPUs busy each turn may wait for the
    // other player to be scheduled.
    let turns = if quick { 200 } else { 200_000 };
    let transfer = transfer_ns(turns).map(|ns| ns / ns_per_cycle);
    // A copy's cycles are its start plus its bytes at a rate: two lengths
    // give both.
    let copies = 200_000 / scale as usize;
    let (short, long) = (256usize, 8192usize);
    let copy = |bytes| {
        cycles(
            least(repeats, || loops::rep_movsb(bytes, copies)),
            copies as f64,
        )
    };
    let (short_cycles, long_cycles) = (copy(short), copy(long));
    let string_bytes_per_cycle = (long - short) as f64 / (long_cycles - short_cycles).max(1.0);
    let string_startup = (short_cycles - short as f64 / string_bytes_per_cycle).max(1.0);
    let tlb = measure_tlb(cycles, loads, repeats.min(3), memory_bytes);
    // The model charges the walks apart: memory's own cost is without them.
    let memory = tlb
        .as_ref()
        .map_or(memory, |t| (t.memory_walked - t.walk).max(llc));
    Figures {
        clock_ghz: 1.0 / ns_per_cycle,
        adds_per_cycle,
        l1,
        l2,
        llc,
        memory,
        llc_holds: holds as u64,
        mispredict,
        transfer,
        string_startup,
        string_bytes_per_cycle,
        tlb,
    }
}

/// The profile of this host's CPU from `figures`.
pub fn profile(figures: &Figures, caches: &[(&'static str, CacheLevel)]) -> Profile {
    Profile {
        cpu: crate::base::host::cpu_model(),
        host: crate::base::host::name(),
        measured: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        clock_ghz: (figures.clock_ghz * 1000.0).round() / 1000.0,
        figures: figures.by_setting(),
        settings: figures.settings(caches),
        check: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures() -> Figures {
        Figures {
            clock_ghz: 3.0,
            adds_per_cycle: 3.9,
            l1: 4.2,
            l2: 14.4,
            llc: 48.0,
            memory: 420.6,
            llc_holds: 8 << 20,
            mispredict: 16.6,
            transfer: Some(80.0),
            string_startup: 30.4,
            string_bytes_per_cycle: 31.6,
            tlb: None,
        }
    }

    #[test]
    fn the_settings_are_each_level_beyond_the_l1d_and_the_host_caches() {
        let caches = [
            (
                "l1d",
                CacheLevel {
                    bytes: 32 << 10,
                    ways: 8,
                },
            ),
            (
                "llc",
                CacheLevel {
                    bytes: 32 << 20,
                    ways: 16,
                },
            ),
            // 12 ways of 1 MiB: sets not a power of two, the default kept.
            (
                "l2",
                CacheLevel {
                    bytes: 1 << 20,
                    ways: 12,
                },
            ),
        ];
        let s = figures().settings(&caches);
        assert_eq!(s["issue-width"], 4);
        assert_eq!(s["load-cycles"], 4);
        assert_eq!(s["l2-cycles"], 10);
        assert_eq!(s["llc-cycles"], 44);
        assert_eq!(s["memory-cycles"], 416);
        assert_eq!(s["mispredict-cycles"], 17);
        assert_eq!(s["coherence-cycles"], 76);
        assert_eq!(s["string-startup-cycles"], 30);
        assert_eq!(s["string-bytes-per-cycle"], 32);
        // The last level as large as it held a buffer here.
        assert_eq!(s["llc-bytes"], 8 << 20);
        assert!(!s.contains_key("l2-bytes") && !s.contains_key("l2-ways"));
        let profile = Profile {
            cpu: "AMD EPYC".into(),
            host: "h".into(),
            measured: "2026-12-07T14:00:00Z".into(),
            clock_ghz: 3.0,
            figures: figures().by_setting(),
            settings: s,
            check: None,
        };
        let model = profile.model().unwrap();
        assert_eq!(model.get("memory-cycles"), 416);
        assert_eq!(model.get("l2-bytes"), CycleModel::default().get("l2-bytes"));
        let text = toml::to_string(&profile).unwrap();
        assert_eq!(toml::from_str::<Profile>(&text).unwrap(), profile);
    }

    #[test]
    fn a_profile_of_a_setting_the_model_does_not_know_is_refused() {
        let mut settings = BTreeMap::new();
        settings.insert("tlb-entries".to_string(), 64);
        let profile = Profile {
            cpu: "x".into(),
            host: "h".into(),
            measured: "m".into(),
            clock_ghz: 1.0,
            figures: BTreeMap::new(),
            settings,
            check: None,
        };
        assert!(profile.model().unwrap_err().contains("tlb-entries"));
    }

    /// A profile as `markbench calibrate` writes it, then with the
    /// `[check]` table `check.py --native --record` appends.
    const WRITTEN: &str = "cpu = \"Intel(R) Xeon(R) Processor\"\nhost = \"vm\"\n\
        measured = \"2026-12-07T19:00:00Z\"\nclock-ghz = 3.6\n\n[figures]\n\
        memory-cycles = 420.6\n\n[settings]\nmemory-cycles = 421\n";
    const CHECK: &str = "\n[check]\nerror = 0.4123\npatterns = 13\n\
        worst-pattern = \"chase 32768\"\nworst-ratio = 0.3100\nerror-with-sharing = 0.5000\n\
        patterns-with-sharing = 15\nsharing-cpu = 1.1400\nsharing-model = 3.2000\n\
        checked = \"2026-12-07T20:40:00Z\"\n\
        command = \"scripts/cycle-model-check/check.py --native --profile p.toml --record\"\n\
        commit = \"0123456789ab\"\n";

    #[test]
    fn a_profile_reads_with_its_check_or_without_and_a_run_keeps_the_check() {
        let plain: Profile = toml::from_str(WRITTEN).unwrap();
        assert_eq!(plain.check, None);
        let mut model = CycleModel::default();
        plain
            .apply(&mut model, std::path::Path::new("p.toml"))
            .unwrap();
        assert_eq!(model.profile.as_ref().unwrap().check, None);
        let checked: Profile = toml::from_str(&format!("{WRITTEN}{CHECK}")).unwrap();
        let check = checked.check.clone().unwrap();
        assert_eq!((check.error, check.patterns), (0.4123, 13));
        assert_eq!(check.worst_pattern, "chase 32768");
        assert_eq!(check.error_with_sharing, Some(0.5));
        assert_eq!(check.commit, "0123456789ab");
        // The settings are the same with the check as without.
        assert_eq!(
            checked.model().unwrap().settings,
            plain.model().unwrap().settings
        );
        let mut model = CycleModel::default();
        checked
            .apply(&mut model, std::path::Path::new("p.toml"))
            .unwrap();
        assert_eq!(model.profile.as_ref().unwrap().check, Some(check));
        // A check without the sharing pair leaves its figures out.
        let one_vcpu = CHECK
            .lines()
            .filter(|l| !l.contains("sharing"))
            .collect::<Vec<_>>()
            .join("\n");
        let partial: Profile = toml::from_str(&format!("{WRITTEN}{one_vcpu}")).unwrap();
        let partial = partial.check.unwrap();
        assert_eq!(
            (partial.error_with_sharing, partial.sharing_cpu),
            (None, None)
        );
    }

    #[test]
    fn sysfs_gives_each_level_and_the_last_is_the_llc() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("sys/devices/system/cpu/cpu0/cache");
        for (index, level, kind, size, ways) in [
            (0, "1", "Data", "32K", "8"),
            (1, "1", "Instruction", "32K", "8"),
            (2, "2", "Unified", "1024K", "8"),
            (3, "3", "Unified", "32768K", "16"),
        ] {
            let d = dir.join(format!("index{index}"));
            std::fs::create_dir_all(&d).unwrap();
            for (file, text) in [
                ("level", level),
                ("type", kind),
                ("size", size),
                ("ways_of_associativity", ways),
            ] {
                std::fs::write(d.join(file), format!("{text}\n")).unwrap();
            }
        }
        let caches = caches_at(root.path());
        let names: Vec<&str> = caches.iter().map(|(p, _)| *p).collect();
        assert_eq!(names, ["l1d", "l1i", "l2", "llc"]);
        assert_eq!(caches[3].1.bytes, 32 << 20);
        assert_eq!(caches[2].1.ways, 8);
        assert!(caches_at(&root.path().join("none")).is_empty());
    }

    #[test]
    fn a_profile_is_named_after_its_cpu() {
        assert_eq!(
            file_name("AMD EPYC 7763 64-Core Processor"),
            "amd-epyc-7763-64-core-processor.toml"
        );
        assert_eq!(file_name("  Intel(R) Xeon(R)  "), "intel-r-xeon-r.toml");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_loops_measure_a_plausible_cpu() {
        let f = measure(&caches_at(std::path::Path::new("/")), true);
        // Loose bounds a loaded host keeps: the clock of any current
        // machine, and each level no faster than the one before it.
        assert!((0.5..8.0).contains(&f.clock_ghz), "{f:?}");
        assert!(f.adds_per_cycle > 1.5, "{f:?}");
        assert!((2.0..12.0).contains(&f.l1), "{f:?}");
        assert!(f.l2 > f.l1 && f.memory > f.l2, "{f:?}");
        assert!(f.mispredict > 3.0, "{f:?}");
        // Every current x86 core walks past a few thousand pages, and a
        // walk costs.
        let tlb = f.tlb.as_ref().expect("the chases across pages ran");
        assert!(tlb.reach < 16384 && tlb.walk >= 1.0, "{f:?}");
        assert!(tlb.memory_walked > f.l2, "{f:?}");
    }

    #[test]
    fn the_tlbs_figures_give_its_settings_and_memory_without_the_walks() {
        let f = Figures {
            memory: 300.0,
            tlb: Some(TlbFigures {
                walk: 120.6,
                walk_cached: 25.0,
                reach: 1536,
                memory_walked: 420.6,
            }),
            ..figures()
        };
        let s = f.settings(&[]);
        assert_eq!(s["tlb-walk-cycles"], 121);
        assert_eq!(s["memory-cycles"], 296);
        assert_eq!((s["stlb-entries"], s["stlb-ways"]), (1536, 12));
        let model = Profile {
            cpu: "x".into(),
            host: "h".into(),
            measured: "m".into(),
            clock_ghz: 3.0,
            figures: f.by_setting(),
            settings: s,
            check: None,
        }
        .model()
        .unwrap();
        assert!(model.models_tlb());
        assert_eq!(f.by_setting()["memory-cycles-with-walks"], 420.6);
        // A reach no power-of-two number of sets makes keeps the default.
        let odd = Figures {
            tlb: Some(TlbFigures {
                reach: 1000,
                ..f.tlb.clone().unwrap()
            }),
            ..f
        };
        assert!(!odd.settings(&[]).contains_key("stlb-entries"));
    }
}
