//! markbench: what does this kernel change cost?
//!
//! Data flow, one module per stage: suite (the file) → compare (the
//! resolved run) → plan → images → vm → samples → analysis → report, with
//! `stats` the statistics library underneath.
//!
//! The modules form layers, each importing only those below it:
//! docs/architecture.md ("Layers") and `tests/layers.rs`, which checks it.

pub mod analysis;
pub mod bisect;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod cycle_model;
pub mod diff;
pub mod error;
pub mod events;
pub mod exit;
pub mod history;
pub mod host;
pub mod images;
pub mod input_file;
pub mod machine;
pub mod merge;
pub mod message;
pub mod noise;
pub mod plan;
pub mod plots;
pub mod prereq;
pub mod profile;
pub mod progress;
pub mod protocol;
pub mod report;
pub mod run;
pub mod run_dir;
pub mod run_images;
pub mod samples;
pub mod sha256;
pub mod shard;
pub mod stats;
pub mod suite;
pub mod vm;
pub mod workloads;
