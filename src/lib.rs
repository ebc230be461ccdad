//! markbench: what does this kernel change cost?
//!
//! Data flow, one module per stage (see DESIGN.md):
//! suite → plan → images → vm → samples → analysis (on `stats`) → report.

pub mod analysis;
pub mod cli;
pub mod diff;
pub mod error;
pub mod images;
pub mod merge;
pub mod nightly;
pub mod noise;
pub mod plan;
pub mod plots;
pub mod prereq;
pub mod profile;
pub mod progress;
pub mod protocol;
pub mod report;
pub mod run;
pub mod samples;
pub mod shard;
pub mod stats;
pub mod suite;
pub mod vm;
pub mod workloads;
