//! What the model's tests share: a small machine, a sweep, the user counts
//! and a guest page mapping.

use super::{BlockEnd, Config, Counts, Geometry, Mode, Model};

pub(super) fn small() -> Config {
    Config {
        l1i: Geometry {
            bytes: 1 << 10,
            ways: 2,
        },
        l1d: Geometry {
            bytes: 1 << 10,
            ways: 2,
        },
        l2: Geometry {
            bytes: 4 << 10,
            ways: 4,
        },
        llc: Geometry {
            bytes: 16 << 10,
            ways: 4,
        },
        // The model as it was before these parts, which most tests
        // hold it to; the tests of each part turn it on.
        prefetch_streams: 0,
        llc_victim: false,
        issue_width: 0,
        weave_cycles: 0,
        burst_ownership: 0,
        locked_rfo: 0,
        ..Config::default()
    }
}

/// Reads every line of a buffer of `bytes` once per pass, as a
/// sequential sweep does.
pub(super) fn sweep(model: &mut Model, vcpu: usize, base: u64, bytes: u64, passes: u32) {
    for _ in 0..passes {
        for offset in (0..bytes).step_by(8) {
            model.data(vcpu, base + offset, 8, false);
        }
    }
}

pub(super) fn user(model: &Model) -> Counts {
    model.counts()[Mode::User as usize]
}

pub(super) fn user_model(config: Config, vcpus: usize) -> Model {
    let mut m = Model::new(config, vcpus).unwrap();
    for v in 0..vcpus {
        m.block(v, 0x1000, Mode::User, 0, 0..0, BlockEnd::Other);
    }
    m
}

/// Every part added after the caches and the first predictors off:
/// the model as it was before them.
pub(super) fn parts_off(config: Config) -> Config {
    Config {
        rsb_depth: 0,
        skip_entries: 0,
        string_bytes_per_cycle: 0,
        tlb_walk_cycles: 0,
        weave_cycles: 0,
        burst_ownership: 0,
        locked_rfo: 0,
        ..config
    }
}

/// `small` with a prefetcher of `streams` streams and the last level
/// filled on the way or by the L2s' evictions.
pub(super) fn memory_side(streams: u32, llc_victim: bool) -> Config {
    Config {
        prefetch_streams: streams,
        llc_victim,
        ..small()
    }
}

/// A guest page mapping for the string accesses: a virtual page's
/// physical page, or none for one page in eight.
pub(super) fn translate(address: u64) -> Option<u64> {
    let page = address >> 12;
    let mixed = page.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    (!mixed.is_multiple_of(8)).then_some(((mixed % 0x400) << 12) | (address & 0xfff))
}
