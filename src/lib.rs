//! markbench: what does this kernel change cost?
//!
//! Data flow, one module per stage (see DESIGN.md):
//! suite → plan → images → vm → samples → stats → report.
pub mod stats;
