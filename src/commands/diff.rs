//! `markbench diff BASELINE_DIR CANDIDATE_DIR`: one variant of two runs made
//! separately, compared ([`crate::jobs::diff`]); the conditions that differ
//! between them are warned of.

use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::base::run_dir::RunDir;
use std::path::{Path, PathBuf};

/// Compares `variant` of `candidate_dir` with `baseline_dir` into `out`
/// (default: `CANDIDATE_DIR/diff-<baseline name>`) and prints its report's
/// path.
pub fn run(
    baseline_dir: &Path,
    candidate_dir: &Path,
    variant: Option<&str>,
    out: Option<PathBuf>,
) -> Result<ExitStatus> {
    let out = out.unwrap_or_else(|| {
        candidate_dir.join(format!(
            "diff-{}",
            baseline_dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
        ))
    });
    let warnings = crate::jobs::diff::diff(baseline_dir, candidate_dir, variant, &out)?;
    for w in &warnings {
        crate::base::message::warning(format_args!("{w}"));
    }
    println!("{}", RunDir::new(&out).report().display());
    Ok(ExitStatus::Success)
}
