//! The analysis stage: samples and run metadata in, tables of points and
//! their statistics out. Everything that renders a run (the report, `diff`,
//! `nightly`, `noise-floor`) reads its figures from here, so they agree.
//!
//! A run has a baseline (its first kernel) and one or more candidates. The
//! analysis makes one [`Comparison`] per candidate and runs the statistics of
//! [`crate::base::stats`] on every comparison at every point; the multiple-testing
//! correction (Holm or Benjamini–Hochberg) covers all of those comparisons
//! and points as one family, so adding a candidate makes every test stricter
//! rather than letting the number of claims grow unchecked.
//!
//! - [`table`]: what a table is ([`TableKey`]) and how samples group into them;
//! - [`point`]: one point of a table, the values of every variant by boot;
//! - [`comparison`]: which variant is compared with which;
//! - [`sweep`]: the statistics of every comparison and point ([`Analysis`]);
//! - [`precision`]: where each point stands against a run's precision target;
//! - [`reference`]: the run's points beside the published table its suite names;
//! - [`weights`]: whether a verdict on the cycle model's estimate rests on its weights;
//! - [`gate`]: what the nightly gate decided of two runs' comparison.
//!
//! Nothing here renders text or knows about the report.

pub mod comparison;
pub mod gate;
pub mod point;
pub mod precision;
pub mod reference;
pub mod sweep;
pub mod table;
pub mod weights;

pub use comparison::{variant_names, Against, Comparison};
pub use point::Point;
pub use sweep::{
    analyse, analyse_unbootstrapped, analyse_with_hosts, config, Analysis, ComparisonResults,
};
pub use table::{param_label, tables, TableKey};
