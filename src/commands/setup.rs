//! `markbench setup`: install the prerequisites, or with `--check` only say
//! what is missing ([`crate::base::prereq`]).

use crate::base::error::Result;
use crate::base::exit::ExitStatus;

pub fn run(check: bool, ci: bool) -> Result<ExitStatus> {
    crate::base::prereq::setup(check, ci)?;
    println!(
        "{}",
        crate::base::message::line("all prerequisites are installed")
    );
    Ok(ExitStatus::Success)
}
