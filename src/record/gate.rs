//! The nightly gate's verdict as a run directory keeps it (`gate.json`), so
//! that later readers (the history) know which nights regressed without
//! parsing the summary. The gate itself is `commands::nightly::gate`.

use crate::base::error::{Context, Result};
use crate::base::run_dir::RunDir;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The gate's verdict kept in the gated run directory (`gate.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateRecord {
    /// The baseline run the night was gated against.
    pub baseline: String,
    /// The gate's exit status: 0 no regression beyond the margin, else one
    /// or more (4 since each exit status has one meaning; records written
    /// before say 1). Readers take any other value than 0 as a regression.
    pub code: i32,
    pub regressed: Vec<RegressedPoint>,
}

impl GateRecord {
    /// The record of a gated run; `None` for a run that was never gated
    /// (or gated before the record was kept).
    pub fn read(dir: &Path) -> Result<Option<GateRecord>> {
        let path = RunDir::new(dir).gate();
        let Some(text) = crate::base::input_file::read_text_if_present(
            &path,
            crate::base::input_file::Bound::Record,
        )?
        else {
            return Ok(None);
        };
        let record = serde_json::from_str(&text).map_err(|e| {
            crate::base::error::InputError::at_line_col(
                &path,
                (e.line(), e.column()),
                format_args!("malformed gate record: {e}"),
            )
        })?;
        Ok(Some(record))
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = RunDir::new(dir).gate();
        std::fs::write(&path, serde_json::to_string_pretty(self)? + "\n")
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// A point that regressed beyond the margin: the variant and the point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegressedPoint {
    pub variant: String,
    pub workload: String,
    pub metric: String,
    pub cpus: u32,
    pub param: u64,
}
