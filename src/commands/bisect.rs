//! `markbench bisect`: find the commit that made a regression
//! ([`crate::jobs::bisect`]); exit 0 with an answer, 5 when there is no
//! regression to bisect.

use super::status::ExitsWith;
use crate::base::exit::ExitStatus;
use crate::jobs::bisect::{Request, Shown};
use crate::stages::report::bisect::{step_line, summary};
use anyhow::{Context, Result};

/// Runs the bisection `request` asks for; its exit status. A failure is the
/// caller's to map, as for every command: input to fix, the machinery (a
/// build that was not a compile error, a missing QEMU), or interrupted.
pub fn run(request: &Request) -> Result<ExitStatus> {
    let (_, answer) = crate::jobs::bisect::run(request, &show)?;
    let search = answer.search.as_ref().context("the search has no ending")?;
    Ok(search.ending.status())
}

/// Prints what a bisection shows as it goes.
pub fn show(shown: Shown<'_>) {
    match shown {
        Shown::Started { dir, plan } => {
            println!("bisection directory: {}", dir.display());
            println!(
                "range: {} commits after {} up to {} ({}); point {}; threshold {:.2}%",
                plan.commits.len() - 1,
                plan.commits[0].short_id(),
                plan.commits.last().map_or("", |c| c.short_id()),
                plan.tree.display(),
                plan.point,
                100.0 * plan.threshold
            );
        }
        Shown::Machine { machine, max_cpus } => println!(
            "QEMU: {}; accelerator: {} ({}); timing: {}",
            machine.qemu.version,
            machine.accel.accel.as_str(),
            machine.accel.reason,
            machine.timing.describe(max_cpus)
        ),
        Shown::Step { step, unit } => println!("{}", step_line(step, unit)),
        Shown::Answered {
            answer,
            written,
            elapsed,
        } => {
            println!("{}", summary(answer));
            println!(
                "answer: {}\n{:.0} s in all",
                written.display(),
                elapsed.as_secs_f64()
            );
        }
    }
}
