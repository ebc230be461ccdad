//! `markbench compare`: build the suite's kernels, boot them in turn,
//! measure and write the report ([`crate::jobs::compare`]).

use crate::base::exit::ExitStatus;
use crate::jobs::compare::Options;
use anyhow::Result;

/// Runs the comparison `options` asks for; the run's exit status.
pub fn run(options: &Options) -> Result<ExitStatus> {
    Ok(crate::jobs::compare::compare(options)?.status)
}
