//! What the commands do with runs: compare (the orchestrator of the
//! stages) and bisect, which builds on it, above diff, merge, noise and
//! history, which read run directories, and the nightly gate, which diffs
//! two runs.

pub mod bisect;
pub mod compare;
pub mod diff;
pub mod gate;
pub mod history;
pub mod merge;
pub mod noise;
