//! `markbench noise-floor AA_DIR [AB_DIR]`: the noise floor of an A/A run
//! and the resolution of an A/B run against the targets ([`crate::jobs::noise`]);
//! exit 6 when one is missed.

use super::status::Outcome;
use crate::base::error::InputError;
use crate::base::exit::ExitStatus;
use crate::jobs::noise::{
    aa_points, ab_points, evaluate, is_aa, load, require_aa, verdict, Targets,
};
use crate::stages::report::noise::{describe, render};
use anyhow::Result;
use std::path::Path;

/// `markbench noise-floor AA_DIR [AB_DIR]`: prints the figures and returns
/// the exit status ([`super::status`]).
pub fn run(aa_dir: &Path, ab_dir: Option<&Path>, targets: &Targets) -> Result<ExitStatus> {
    let (aa_meta, aa_analysis) = load(aa_dir)?;
    require_aa(aa_dir, &aa_meta)?;
    let aa = aa_points(&aa_analysis).map_err(|e| InputError::in_file(aa_dir, e))?;
    println!("{}", describe("A/A", aa_dir, &aa_meta));
    let ab = match ab_dir {
        Some(dir) => {
            let (meta, analysis) = load(dir)?;
            if is_aa(&meta) {
                crate::base::message::warning(format_args!(
                    "{} is an A/A run: its interval is the noise, not a difference",
                    dir.display()
                ));
            }
            if meta.suite_title() != aa_meta.suite || meta.timing_mode() != aa_meta.timing_mode() {
                crate::base::message::warning(format_args!(
                    "the two runs differ in suite or timing mode ({} / {} against {} / {})",
                    aa_meta.suite,
                    aa_meta.timing_mode(),
                    meta.suite_title(),
                    meta.timing_mode()
                ));
            }
            println!("{}", describe("A/B", dir, &meta));
            ab_points(&analysis).map_err(|e| InputError::in_file(dir, e))?
        }
        None => Vec::new(),
    };
    println!();
    let rows = evaluate(&aa, &ab, targets);
    print!("{}", render(&rows, targets));
    Ok(verdict(&rows).status())
}
