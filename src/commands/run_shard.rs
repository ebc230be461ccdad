//! `markbench run-shard K --shards N`: one shard of a suite, run as compare
//! runs a whole suite, into one run directory (`merge` joins them).

use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::jobs::compare::Options;

/// Runs the shard that `options.overrides.shard` selects; the run's exit
/// status.
pub fn run(options: &Options) -> Result<ExitStatus> {
    super::compare::run(options)
}
