//! Profiles: where a kernel's instructions go during the timed runs, counted
//! exactly under TCG by markbench's plugin, and where the difference between
//! two kernels goes.
//!
//! A profiled run boots each variant once per CPU count more, after the
//! timed boots and apart from them (their samples never enter
//! `samples.csv`), with the plugin loaded (`images::plugin`). The guest
//! agent runs a marker instruction before and after every timed command;
//! the plugin counts the instructions between them per kernel address and
//! in user space, one region per timed run. [`boot`] turns each region into
//! counts per function with the kernel's System.map and keeps them in the
//! run directory ([`store`]); the report compares the two sides point by
//! point ([`breakdown`]). The dry run lists the profiled boots and what
//! they cost ([`dry_run`]).

pub mod boot;
pub mod breakdown;
pub mod dry_run;
pub mod raw;
pub mod store;
pub mod symbols;

pub use boot::{prepare, Profiler};
pub use breakdown::{compare, Breakdown, FunctionDiff};
pub use store::Manifest;
pub use symbols::SymbolMap;
