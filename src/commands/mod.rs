//! One handler per subcommand: what each command does with the typed values
//! the command line ([`crate::cli`]) parsed, what it prints and the exit
//! status it ends with. The stages below do the work (`compare`, `bisect`,
//! `diff`, `merge`, `history`, `report` …); a handler calls them in order
//! and shows their results. The jobs return what happened as data and pass
//! what a person should see as it happens to the handler, which prints it;
//! [`status`] alone turns an outcome into an exit status.
//! `nightly` lives here whole (the night, its gate and the bisection after
//! a regression), since it is only a command.

pub mod bisect;
pub mod cache;
pub mod calibrate;
pub mod compare;
pub mod diff;
pub mod history;
pub mod images;
pub mod merge;
pub mod nightly;
pub mod noise_floor;
pub mod plan;
pub mod report;
pub mod run_shard;
pub mod setup;
pub mod status;

use crate::base::error::{Context, Result};
use crate::guest::images::kernel::KernelSource;
use crate::guest::images::source::RevSelection;
use crate::record::Overrides;
use crate::stages::suite::Suite;
use std::path::PathBuf;

/// The suite and kernel source a command was given (`--suite`,
/// `--kernel-source`, `--patch`, `--revs`).
#[derive(Debug, Clone, Default)]
pub struct SuiteChoice {
    pub suite: Option<PathBuf>,
    pub kernel_source: Option<PathBuf>,
    pub patches: Vec<PathBuf>,
    pub revs: Option<RevSelection>,
}

impl SuiteChoice {
    /// The suite and kernel source named (see `compare::read_suite`), its
    /// kernels made from the source when `--patch` or `--revs` ask.
    pub fn load(&self) -> Result<(Suite, KernelSource)> {
        let file = crate::jobs::compare::read_suite(self.suite.as_deref())?;
        if file.built_in {
            let cwd = std::env::current_dir().context("reading the current directory")?;
            crate::base::message::note(crate::stages::report::terminal::built_in_suite(&cwd));
        }
        let source = crate::jobs::compare::kernel_source(self.kernel_source.as_deref(), &file)?;
        let from_source = Overrides {
            patches: self.patches.clone(),
            revs: self.revs.clone().map(Into::into),
            ..Overrides::default()
        };
        let suite = crate::jobs::compare::source_variants::apply(&file, &from_source, &source)?;
        Ok((suite, source))
    }
}
