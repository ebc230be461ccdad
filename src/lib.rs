//! markbench: what does this kernel change cost?
//!
//! Data flow, one module per stage: suite (the file) → compare (the
//! resolved run) → plan → images → vm → the record (`samples.csv`,
//! `meta.toml`) → analysis → report, with `base::stats` the statistics
//! library underneath.
//!
//! The folders below are the layers, lowest first, and each module imports
//! only modules below its own: docs/architecture.md ("Layers") and
//! `tests/layers.rs`, which checks it.

pub mod base;

pub mod guest;

pub mod record;

pub mod stages;

pub mod jobs;

pub mod commands;

pub mod cli;
