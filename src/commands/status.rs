//! The one place an outcome becomes an exit status. The jobs say what
//! happened as data (a run's record, a bisection's ending, a noise floor's
//! verdict, a merge, the cache's entries); each handler asks here which
//! status that is, so each code keeps one meaning in every command
//! ([`ExitStatus`] names them).

use crate::base::exit::ExitStatus;
use crate::guest::images::cache::Checked;
use crate::guest::images::seal::SealVerdict;
use crate::jobs::bisect::decide::Ending;
use crate::jobs::noise::TargetVerdict;
use crate::record::RunMeta;

/// What a job found, as the exit status tells it.
pub trait ExitsWith {
    fn status(&self) -> ExitStatus;
}

/// A run that ended with this record: interrupted when it is partial (resume
/// it), incomplete when a boot failed, else success.
impl ExitsWith for RunMeta {
    fn status(&self) -> ExitStatus {
        if !self.complete {
            ExitStatus::Interrupted
        } else if self.boots.iter().any(|b| !b.ok()) {
            ExitStatus::Incomplete
        } else {
            ExitStatus::Success
        }
    }
}

/// A compare: its run's status; a dry run, which runs nothing, succeeds.
impl ExitsWith for crate::jobs::compare::Outcome {
    fn status(&self) -> ExitStatus {
        self.run
            .as_ref()
            .map_or(ExitStatus::Success, |(_, meta)| meta.status())
    }
}

/// A merge: incomplete when a shard did not finish or a boot failed (the
/// merge itself finished), else success.
impl ExitsWith for crate::jobs::merge::Merged {
    fn status(&self) -> ExitStatus {
        if !self.meta.complete || self.meta.boots.iter().any(|b| !b.ok()) {
            ExitStatus::Incomplete
        } else {
            ExitStatus::Success
        }
    }
}

/// A bisection: success with the first bad commit or the narrowest range,
/// or no regression to bisect.
impl ExitsWith for Ending {
    fn status(&self) -> ExitStatus {
        match self {
            Ending::NoRegression => ExitStatus::NoRegression,
            Ending::FirstBad { .. } | Ending::Range { .. } => ExitStatus::Success,
        }
    }
}

/// A noise floor: success when every target is met, else a missed target.
impl ExitsWith for TargetVerdict {
    fn status(&self) -> ExitStatus {
        match self {
            TargetVerdict::Met => ExitStatus::Success,
            TargetVerdict::Missed => ExitStatus::TargetMissed,
        }
    }
}

/// The nightly gate: a regression when a point regressed beyond the margin.
impl ExitsWith for crate::jobs::gate::GateDecision {
    fn status(&self) -> ExitStatus {
        if self.regression() {
            ExitStatus::Regression
        } else {
            ExitStatus::Success
        }
    }
}

/// `cache --verify`: success when every entry is sound (or sealed now), a
/// damaged cache when one is not.
impl ExitsWith for [Checked] {
    fn status(&self) -> ExitStatus {
        if self
            .iter()
            .any(|c| matches!(c.verdict, SealVerdict::Damaged(_)))
        {
            ExitStatus::CacheDamaged
        } else {
            ExitStatus::Success
        }
    }
}

/// The night's exit status: the run's own when it did not measure
/// everything (interrupted, or a boot failed), else the gate's verdict
/// (`None`: a night without a baseline, not gated).
pub fn night_status(run: ExitStatus, gate: Option<ExitStatus>) -> ExitStatus {
    match run {
        ExitStatus::Success => gate.unwrap_or(ExitStatus::Success),
        run => run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::BootRecord;
    use std::path::PathBuf;

    fn run(complete: bool, oks: &[bool]) -> RunMeta {
        RunMeta {
            complete,
            boots: oks.iter().map(|&ok| BootRecord::ending_ok(ok)).collect(),
            ..RunMeta::default()
        }
    }

    #[test]
    fn a_run_ends_as_success_incomplete_or_interrupted() {
        assert_eq!(run(true, &[true, true]).status(), ExitStatus::Success);
        assert_eq!(run(true, &[true, false]).status(), ExitStatus::Incomplete);
        // A partial run is an interruption, whatever its boots did.
        assert_eq!(run(false, &[true, false]).status(), ExitStatus::Interrupted);
        assert_eq!(run(false, &[]).status(), ExitStatus::Interrupted);
        let dry = crate::jobs::compare::Outcome {
            run: None,
            elapsed: Default::default(),
        };
        assert_eq!(dry.status(), ExitStatus::Success);
    }

    #[test]
    fn a_merge_of_an_unfinished_shard_is_incomplete_not_interrupted() {
        let merged = |complete, oks: &[bool]| crate::jobs::merge::Merged {
            meta: run(complete, oks),
            warnings: Vec::new(),
        };
        assert_eq!(merged(true, &[true, true]).status(), ExitStatus::Success);
        assert_eq!(
            merged(true, &[true, false]).status(),
            ExitStatus::Incomplete
        );
        assert_eq!(merged(false, &[true]).status(), ExitStatus::Incomplete);
    }

    #[test]
    fn a_bisection_without_a_regression_is_a_verdict_not_a_failure() {
        assert_eq!(Ending::FirstBad { index: 3 }.status(), ExitStatus::Success);
        assert_eq!(
            Ending::Range { good: 1, bad: 4 }.status(),
            ExitStatus::Success
        );
        let none = Ending::NoRegression.status();
        assert_eq!(none, ExitStatus::NoRegression);
        assert_ne!(none.code(), ExitStatus::Machinery.code());
    }

    #[test]
    fn a_missed_noise_target_and_a_damaged_cache_have_their_codes() {
        assert_eq!(TargetVerdict::Met.status(), ExitStatus::Success);
        assert_eq!(TargetVerdict::Missed.status(), ExitStatus::TargetMissed);
        let entry = |verdict| Checked {
            path: PathBuf::from("k"),
            verdict,
        };
        assert_eq!([].as_slice().status(), ExitStatus::Success);
        assert_eq!(
            [entry(SealVerdict::Sound), entry(SealVerdict::SealedNow)]
                .as_slice()
                .status(),
            ExitStatus::Success
        );
        assert_eq!(
            [entry(SealVerdict::Damaged("size".into()))]
                .as_slice()
                .status(),
            ExitStatus::CacheDamaged
        );
    }

    #[test]
    fn a_night_ends_with_the_gates_verdict_only_when_everything_was_measured() {
        let regressed = Some(ExitStatus::Regression);
        let held = Some(ExitStatus::Success);
        assert_eq!(night_status(ExitStatus::Success, None), ExitStatus::Success);
        assert_eq!(night_status(ExitStatus::Success, held), ExitStatus::Success);
        assert_eq!(
            night_status(ExitStatus::Success, regressed),
            ExitStatus::Regression
        );
        // Not gated: the run's own status, Ctrl-C included.
        for run in [ExitStatus::Incomplete, ExitStatus::Interrupted] {
            assert_eq!(night_status(run, None), run);
            assert_eq!(night_status(run, regressed), run);
        }
    }
}
