//! markbench's exit statuses, named once: scripts and CI jobs branch on them.

use crate::error::InputError;

/// Everything ran and, for a gate, nothing regressed.
pub const SUCCESS: i32 = 0;
/// A gate failed: a significant regression (`nightly`), a missed noise
/// target (`noise-floor`); also any failure of the machinery itself.
pub const FAILED: i32 = 1;
/// Input the user must fix: a bad suite, option, patch or directory.
pub const INPUT: i32 = 2;
/// The run could not measure everything: a boot failed, a shard is missing.
pub const INFRASTRUCTURE: i32 = 3;
/// Interrupted (Ctrl-C): the run is partial and can be resumed.
pub const INTERRUPTED: i32 = 130;

/// The status an error ends markbench with.
pub fn of_error(e: &anyhow::Error) -> i32 {
    if is_input(e) {
        INPUT
    } else {
        FAILED
    }
}

/// Whether an error is the user's to fix.
pub fn is_input(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<InputError>().is_some())
}
