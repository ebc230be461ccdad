//! The nightly gate's verdict as a run directory keeps it (`gate.json`), so
//! that later readers (the history) know which nights regressed without
//! parsing the summary. The gate itself is `jobs::gate`.

use crate::base::error::{Context, Result};
use crate::base::run_dir::RunDir;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The gate's verdict kept in the gated run directory (`gate.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredGateRecord")]
pub struct GateRecord {
    /// The baseline run the night was gated against.
    pub baseline: String,
    /// Some point regressed beyond the margin: the night failed.
    pub regression: bool,
    pub regressed: Vec<RegressedPoint>,
}

/// `gate.json` as any version wrote it: `regression`, or in records that
/// kept the gate's exit status instead, `code` (0 no regression, any other
/// value one: 1 or 4, as the status of a regression was numbered).
#[derive(Deserialize)]
struct StoredGateRecord {
    baseline: String,
    #[serde(default)]
    regression: Option<bool>,
    #[serde(default)]
    code: Option<i32>,
    regressed: Vec<RegressedPoint>,
}

impl From<StoredGateRecord> for GateRecord {
    fn from(stored: StoredGateRecord) -> GateRecord {
        GateRecord {
            baseline: stored.baseline,
            regression: stored
                .regression
                .unwrap_or_else(|| stored.code.is_some_and(|code| code != 0)),
            regressed: stored.regressed,
        }
    }
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

impl RegressedPoint {
    /// The point's key.
    pub fn key(&self) -> super::PointKey {
        super::PointKey {
            workload: self.workload.clone(),
            metric: self.metric.clone(),
            cpus: self.cpus,
            param: self.param,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> GateRecord {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(RunDir::new(tmp.path()).gate(), text).unwrap();
        GateRecord::read(tmp.path()).unwrap().unwrap()
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let record = GateRecord {
            baseline: "reports/base".into(),
            regression: true,
            regressed: vec![RegressedPoint {
                variant: "on".into(),
                workload: "hackbench".into(),
                metric: "time".into(),
                cpus: 2,
                param: 4,
            }],
        };
        record.write(tmp.path()).unwrap();
        let text = std::fs::read_to_string(RunDir::new(tmp.path()).gate()).unwrap();
        assert!(
            text.contains("\"regression\": true") && !text.contains("code"),
            "{text}"
        );
        assert_eq!(GateRecord::read(tmp.path()).unwrap(), Some(record));
    }

    #[test]
    fn an_exit_status_kept_by_older_records_reads_as_whether_it_regressed() {
        let old = |code: i32| format!(r#"{{"baseline": "b", "code": {code}, "regressed": []}}"#);
        assert!(!read(&old(0)).regression);
        assert!(read(&old(1)).regression);
        assert!(read(&old(4)).regression);
        let new = r#"{"baseline": "b", "regression": false, "regressed": []}"#;
        assert!(!read(new).regression);
    }
}
