//! `markbench compare`: build the suite's kernels, boot them in turn,
//! measure and write the report ([`crate::jobs::compare`]).

use super::status::ExitsWith as _;
use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::base::message;
use crate::base::run_dir::RunDir;
use crate::jobs::compare::{CompareProgress, Options, Outcome};
use crate::stages::report::terminal;

/// Runs the comparison `options` asks for; the run's exit status.
pub fn run(options: &Options) -> Result<ExitStatus> {
    Ok(run_and_show(options)?.status())
}

/// Runs a compare (a whole suite, a shard, a night's run), printing what it
/// shows as it goes and how it ended.
pub fn run_and_show(options: &Options) -> Result<Outcome> {
    let outcome = crate::jobs::compare::compare(options, &mut show)?;
    if let Some((dir, meta)) = &outcome.run {
        let report = RunDir::new(dir).report();
        print!(
            "{}",
            terminal::run_ended(&report, meta, outcome.elapsed.as_secs_f64())
        );
        if let Some(note) = terminal::run_not_complete(dir, meta) {
            message::note(note);
        }
    }
    Ok(outcome)
}

fn show(progress: CompareProgress<'_>) {
    match progress {
        CompareProgress::BuiltInSuite { cwd } => message::note(terminal::built_in_suite(cwd)),
        CompareProgress::SkippedRun(skipped) => message::warning(skipped),
        CompareProgress::Plan(plan) => print!("{}", plan.render()),
        CompareProgress::QemuChanged {
            recorded_version,
            recorded_path,
            now,
        } => message::warning(terminal::qemu_changed(recorded_version, recorded_path, now)),
        CompareProgress::Starting {
            dir,
            machine,
            max_cpus,
        } => print!("{}", terminal::run_starting(dir, machine, max_cpus)),
    }
}
