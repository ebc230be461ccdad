//! `markbench bisect`: find the commit that made a regression
//! ([`crate::jobs::bisect`]); exit 0 with an answer, 5 when there is no
//! regression to bisect.

use super::status::Outcome;
use crate::base::exit::ExitStatus;
use crate::jobs::bisect::Request;
use anyhow::{Context, Result};

/// Runs the bisection `request` asks for; its exit status. A failure is the
/// caller's to map, as for every command: input to fix, the machinery (a
/// build that was not a compile error, a missing QEMU), or interrupted.
pub fn run(request: &Request) -> Result<ExitStatus> {
    let (_, answer) = crate::jobs::bisect::run(request)?;
    let search = answer.search.as_ref().context("the search has no ending")?;
    Ok(search.ending.status())
}
