//! What the nightly gate decided, as data: each gated variant's comparison
//! of tonight's run with the baseline run, the points measured in one run
//! only and the points that regressed beyond the suite's margin. The gate
//! (`jobs::gate`) makes it; the report (`stages::report::gate`) words it.
//! It sits here, below both, because it is a judgement of an analysis's
//! results and nothing more.

use crate::base::stats::{AnalysisConfig, PointAnalysis};
use crate::record::RegressedPoint;
use std::path::PathBuf;

/// What the gate found: each gated variant's comparison, and the
/// analysis's settings, whose margin a regression must exceed.
#[derive(Debug, Clone)]
pub struct GateDecision {
    pub baseline: PathBuf,
    pub candidate: PathBuf,
    /// The analysis's settings (the same in every variant's comparison).
    pub config: AnalysisConfig,
    pub variants: Vec<GatedVariant>,
}

/// One variant of tonight's run against the same variant of the baseline.
#[derive(Debug, Clone)]
pub struct GatedVariant {
    /// The variant gated.
    pub variant: String,
    /// What differs between the two runs' conditions (`diff`'s warnings).
    pub warnings: Vec<String>,
    /// Every point of the comparison with its statistics and verdict.
    pub points: Vec<PointAnalysis>,
    /// The comparison's report.
    pub report: PathBuf,
    /// The points measured in one run only.
    pub unmeasured: Vec<Unmeasured>,
    /// The points that regressed beyond the margin.
    pub regressions: Vec<Regression>,
}

/// A point that regressed beyond the margin, with its relative change.
pub type Regression = (RegressedPoint, f64);

/// A point measured in one of the two runs only.
#[derive(Debug, Clone, PartialEq)]
pub struct Unmeasured {
    pub workload: String,
    pub cpus: u32,
    pub param: u64,
    /// Which run has no values there.
    pub missing_in: Side,
}

/// One of the two runs the gate compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Baseline,
    Tonight,
}

impl GateDecision {
    /// The margin a regression must exceed, as a fraction.
    pub fn margin(&self) -> f64 {
        self.config.margin
    }

    /// Whether the run is gated on several variants, each on its own.
    pub fn several(&self) -> bool {
        self.variants.len() > 1
    }

    /// Whether some point regressed beyond the margin: the night fails.
    pub fn regression(&self) -> bool {
        self.variants.iter().any(|v| !v.regressions.is_empty())
    }

    /// Every point that regressed beyond the margin, as a bisection names it.
    pub fn regressed(&self) -> Vec<RegressedPoint> {
        self.variants
            .iter()
            .flat_map(|v| v.regressions.iter().map(|(point, _)| point.clone()))
            .collect()
    }
}
