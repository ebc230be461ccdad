//! What every layer stands on: errors and messages, pure libraries
//! (statistics, plots, the guest protocol, the run directory's paths,
//! progress, prerequisites), the cycle model's settings and the host probes.

pub mod arch;
pub mod calibration;
pub mod cycle_model;
pub mod error;
pub mod exit;
pub mod host;
pub mod input_file;
pub mod message;
pub mod plots;
pub mod prereq;
pub mod progress;
pub mod protocol;
pub mod run_dir;
pub mod sha256;
pub mod stats;
