//! `markbench setup`: install the prerequisites, or with `--check` only say
//! what is missing ([`crate::prereq`]).

use crate::exit::ExitStatus;
use anyhow::Result;

pub fn run(check: bool, ci: bool) -> Result<ExitStatus> {
    crate::prereq::setup(check, ci)?;
    println!(
        "{}",
        crate::message::line("all prerequisites are installed")
    );
    Ok(ExitStatus::Success)
}
