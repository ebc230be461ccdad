//! `markbench history DIR… --out OUT`: every complete run under the
//! directories, point by point ([`crate::jobs::history`]).

use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use std::path::{Path, PathBuf};

/// Writes the history of the runs under `dirs` into `out`, one note per
/// suite, and prints the HTML page's path.
pub fn run(dirs: &[PathBuf], out: &Path, variant: Option<&str>) -> Result<ExitStatus> {
    let histories = crate::jobs::history::history(dirs, out, variant)?;
    for h in &histories {
        let changes: usize = h.points.iter().map(|p| p.changes.len()).sum();
        crate::base::message::note(format_args!(
            "{}: {} runs, {} points, {changes} change point(s)",
            h.suite,
            h.runs.len(),
            h.points.len()
        ));
    }
    println!("{}", out.join(crate::jobs::history::HTML_FILE).display());
    Ok(ExitStatus::Success)
}
