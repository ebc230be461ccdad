//! `markbench bisect`: find the commit that made a regression
//! ([`crate::jobs::bisect`]); exit 0 with an answer, 5 when there is no
//! regression to bisect.

use super::status::Outcome;
use crate::base::exit::ExitStatus;
use crate::base::message;
use crate::jobs::bisect::{BisectProgress, Request};
use crate::stages::report::bisect::{self, step_line, summary};
use crate::stages::report::terminal;
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
pub fn show(shown: BisectProgress<'_>) {
    match shown {
        BisectProgress::Started { dir, plan } => print!(
            "{}",
            bisect::started(
                dir,
                plan.commits.len() - 1,
                (
                    plan.commits[0].short_id(),
                    plan.commits.last().map_or("", |c| c.short_id()),
                ),
                &plan.tree,
                &plan.point,
                plan.threshold,
            )
        ),
        BisectProgress::Machine { machine, max_cpus } => {
            println!("{}", terminal::machine_line(machine, max_cpus))
        }
        BisectProgress::Step { step, unit } => println!("{}", step_line(step, unit)),
        BisectProgress::Answered {
            answer,
            written,
            elapsed,
        } => {
            println!("{}", summary(answer));
            print!("{}", bisect::answered(written, elapsed.as_secs_f64()));
        }
        BisectProgress::BuiltInSuite { cwd } => message::note(terminal::built_in_suite(cwd)),
        BisectProgress::RoundStarted { what, boots, dir } => {
            message::note(bisect::round_started(what, boots, dir))
        }
        BisectProgress::Untestable { commit } => message::note(bisect::untestable(commit)),
        BisectProgress::AnswerNotWritten { error } => {
            message::warning(bisect::answer_not_written(error))
        }
        BisectProgress::NotRemoved { dir, error } => {
            message::warning(bisect::not_removed(dir, error))
        }
    }
}
