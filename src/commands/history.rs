//! `markbench history DIR… --out OUT`: every complete run under the
//! directories, point by point ([`crate::jobs::history`]).

use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use std::path::{Path, PathBuf};

/// Writes the history of the runs under `dirs` into `out`, one note per
/// suite, and prints the HTML page's path.
pub fn run(dirs: &[PathBuf], out: &Path, variant: Option<&str>) -> Result<ExitStatus> {
    let written = crate::jobs::history::history(dirs, out, variant)?;
    for skipped in &written.skipped {
        crate::base::message::warning(skipped);
    }
    for h in &written.histories {
        crate::base::message::note(crate::stages::report::history::suite_note(h));
    }
    println!("{}", out.join(crate::jobs::history::HTML_FILE).display());
    Ok(ExitStatus::Success)
}
