//! The nightly gate's ending: `jobs::gate` decides and keeps the verdict,
//! the report words it for the night's summary, and the decision's exit
//! status is a regression (4, `ExitStatus::Regression`) or success.

use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::commands::status::ExitsWith as _;
use crate::record::RegressedPoint;
use std::path::Path;

/// What the gate decided, and the markdown summary for a CI job page.
#[derive(Debug, Clone)]
pub struct Gate {
    /// Success: no regression beyond the margin; `Regression`: at least one.
    pub status: ExitStatus,
    pub summary: String,
    /// Each point that regressed beyond the margin, as a bisection names it.
    pub regressed: Vec<RegressedPoint>,
}

/// Gates `candidate` against `baseline` (`jobs::gate`), keeping the verdict
/// in `candidate` as `gate.json`, and appends it to `summary`.
pub fn gate(
    baseline: &Path,
    candidate: &Path,
    variant: Option<&str>,
    summary: String,
) -> Result<Gate> {
    let decision = crate::jobs::gate::gate(baseline, candidate, variant)?;
    Ok(Gate {
        status: decision.status(),
        summary: decision.render(summary),
        regressed: decision.regressed(),
    })
}
