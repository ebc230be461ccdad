//! `markbench compare`: build the suite's kernels, boot them in turn,
//! measure and write the report ([`crate::compare`]).

use crate::compare::Options;
use crate::exit::ExitStatus;
use anyhow::Result;

/// Runs the comparison `options` asks for; the run's exit status.
pub fn run(options: &Options) -> Result<ExitStatus> {
    Ok(crate::compare::compare(options)?.status)
}
