//! A change of a run's conditions between two runs (`record::ConditionChange`,
//! data), worded where it is shown: `diff`'s warnings, the history's new
//! series.

use crate::record::ConditionChange;

/// One condition change as a warning line: both values as recorded.
pub fn condition_warning(change: &ConditionChange) -> String {
    let what = change.condition();
    let line = |a: &str, b: &str| format!("{what} differs: baseline {a:?}, candidate {b:?}");
    match change {
        ConditionChange::Hostname(v)
        | ConditionChange::HostCpu(v)
        | ConditionChange::Qemu(v)
        | ConditionChange::TimingMode(v)
        | ConditionChange::Suite(v) => line(&v.baseline, &v.candidate),
        ConditionChange::SuiteFile(v) => format!(
            "suite file (sha256) differs: baseline {:?}, candidate {:?}",
            v.baseline, v.candidate
        ),
        ConditionChange::Accelerator(v) => line(v.baseline.as_str(), v.candidate.as_str()),
        ConditionChange::Overrides(v) => line(
            &v.baseline.describe().join(", "),
            &v.candidate.describe().join(", "),
        ),
        ConditionChange::GuestImage(v) => format!(
            "guest image differs: baseline sha256 {}, candidate {}{}",
            v.baseline.short_sha(),
            v.candidate.short_sha(),
            v.baseline.differing_files(&v.candidate)
        ),
    }
}
