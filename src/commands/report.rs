//! `markbench report DIR`: re-render a run directory's report files, or
//! print one format of it with `--format`.

use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::stages::report::Format;
use std::path::Path;

/// Prints `format` of the run in `dir`; without one, writes every report
/// file and prints report.md's path.
pub fn run(dir: &Path, format: Option<Format>) -> Result<ExitStatus> {
    crate::record::require_run_dir(dir)?;
    match format {
        Some(format) => print!("{}", crate::stages::report::render_dir(dir, format)?),
        None => println!("{}", crate::stages::report::write(dir)?.display()),
    }
    Ok(ExitStatus::Success)
}
