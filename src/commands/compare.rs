//! `markbench compare`: build the suite's kernels, boot them in turn,
//! measure and write the report ([`crate::jobs::compare`]).

use super::status::ExitsWith as _;
use crate::base::exit::ExitStatus;
use crate::base::run_dir::RunDir;
use crate::jobs::compare::{Options, Outcome, Shown};
use anyhow::Result;

/// Runs the comparison `options` asks for; the run's exit status.
pub fn run(options: &Options) -> Result<ExitStatus> {
    Ok(run_and_show(options)?.status())
}

/// Runs a compare (a whole suite, a shard, a night's run), printing what it
/// shows as it goes and how it ended.
pub fn run_and_show(options: &Options) -> Result<Outcome> {
    let outcome = crate::jobs::compare::compare(options, &mut show)?;
    if let Some((dir, meta)) = &outcome.run {
        let failed = meta.boots.iter().filter(|b| !b.ok()).count();
        println!(
            "report: {}\n{} boots, {} failed, {:.0} s in all",
            RunDir::new(dir).report().display(),
            meta.boots.len(),
            failed,
            outcome.elapsed.as_secs_f64()
        );
        match meta.status() {
            ExitStatus::Interrupted => crate::base::message::note(format_args!(
                "the run is partial; continue it with: markbench compare --resume {}",
                dir.display()
            )),
            ExitStatus::Incomplete => crate::base::message::note(format_args!(
                "{failed} boot(s) failed; see the Boots table in the report"
            )),
            _ => {}
        }
    }
    Ok(outcome)
}

fn show(shown: Shown<'_>) {
    match shown {
        Shown::Plan(plan) => print!("{}", plan.render()),
        Shown::Starting {
            dir,
            machine,
            max_cpus,
        } => {
            println!("run directory: {}", dir.display());
            println!(
                "QEMU: {} ({})",
                machine.qemu.version,
                machine.qemu.path.display()
            );
            println!(
                "accelerator: {} ({})",
                machine.accel.accel.as_str(),
                machine.accel.reason
            );
            println!("timing: {}", machine.timing.describe(max_cpus));
        }
    }
}
