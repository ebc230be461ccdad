//! `markbench noise-floor AA_DIR [AB_DIR]`: the noise floor of an A/A run
//! and the resolution of an A/B run against the targets ([`crate::jobs::noise`]);
//! exit 6 when one is missed.

use super::status::ExitsWith;
use crate::base::error::InputError;
use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::jobs::noise::{
    aa_points, ab_points, evaluate, is_aa, load, require_aa, verdict, Targets,
};
use crate::stages::report::noise::{describe, render};
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
            if measured_otherwise(&aa_meta, &meta) {
                crate::base::message::warning(format_args!(
                    "the two runs differ in suite or timing mode ({} / {} against {} / {})",
                    aa_meta.suite,
                    aa_meta.timing_mode(),
                    meta.suite,
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

/// Whether two runs measured another suite or under another timing mode:
/// a diff of two runs keeps its suite's name (its title only adds that it
/// is a diff), so a diff of the same suite is not another suite.
fn measured_otherwise(aa: &crate::record::RunMeta, ab: &crate::record::RunMeta) -> bool {
    aa.suite != ab.suite || aa.timing_mode() != ab.timing_mode()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_of_the_same_suite_is_not_another_suite() {
        let aa = crate::record::RunMeta {
            suite: "noise-icount".into(),
            ..Default::default()
        };
        let diff = crate::record::RunMeta {
            diff: true,
            ..aa.clone()
        };
        assert!(!measured_otherwise(&aa, &diff));
        let other = crate::record::RunMeta {
            suite: "quick".into(),
            ..aa.clone()
        };
        assert!(measured_otherwise(&aa, &other));
    }
}
