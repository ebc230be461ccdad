//! The night's summary for a CI job page and the run directory, worded
//! from what the night found: its header, why a night was not gated, and
//! the link to the history. The gate's own part is `report::gate`'s.

use crate::base::exit::ExitStatus;
use crate::record::RunMeta;
use std::path::Path;

/// The summary's first lines, naming the suite when it is known.
pub fn header(title: Option<&str>) -> String {
    match title {
        Some(title) => format!("## markbench nightly: {title}\n\n"),
        None => "## markbench nightly\n\n".to_string(),
    }
}

/// The summary of a night that ended in `error` (exit `status`), for the
/// suite titled `title` when its run had started.
pub fn erred(title: Option<&str>, status: ExitStatus, error: &anyhow::Error) -> String {
    format!(
        "{}**Error**, not gated (exit {status}): {error:#}\n",
        header(title)
    )
}

/// Why a run that did not measure everything (`status`: interrupted, or a
/// boot failed) is not gated, and where its report is.
pub fn not_gated(status: ExitStatus, dir: &Path, meta: &RunMeta, report: &Path) -> String {
    let failed = meta.boots.iter().filter(|b| !b.ok()).count();
    match status {
        ExitStatus::Interrupted => format!(
            "**Interrupted**: the run is partial ({} boots, {failed} failed), not gated; \
             continue it with markbench nightly --resume {}; see {}.\n",
            meta.boots.len(),
            dir.display(),
            report.display()
        ),
        _ => format!(
            "**Infrastructure failure**: {failed} of {} boots failed, not gated; see {}.\n",
            meta.boots.len(),
            report.display()
        ),
    }
}

/// The night of a suite that has no baseline run yet.
pub const NO_BASELINE: &str = "No baseline run of this suite yet: this run becomes the baseline.\n";

/// The link to the history of every night, its page and its markdown.
pub fn history_link(html: &Path, markdown: &Path) -> String {
    format!(
        "\nHistory of every night, point by point, with its change points: {} ({})\n",
        html.display(),
        markdown.display()
    )
}

/// The night's note that its first regressed point is bisected between
/// the baseline's commit and tonight's, in `tree`.
pub fn bisecting(point: &str, good: &str, bad: &str, tree: &Path) -> String {
    format!(
        "bisecting {point} from {good} to {bad} in {}",
        tree.display()
    )
}

/// How the night's bisection of `point` ended, for its summary.
pub enum Bisected<'a> {
    /// Not tried, and why (the two runs are not two commits of one tree).
    NotTried {
        why: &'a str,
    },
    /// Answered (`headline`), with the answer's page.
    Answered {
        headline: &'a str,
        page: &'a Path,
    },
    Interrupted {
        error: &'a anyhow::Error,
    },
    Failed {
        error: &'a anyhow::Error,
    },
}

/// The summary's paragraph on the night's bisection of `point`.
pub fn bisected(point: &str, how: Bisected<'_>) -> String {
    match how {
        Bisected::NotTried { why } => format!("\n**Not bisected**: {why}.\n"),
        Bisected::Answered { headline, page } => format!(
            "\n**Bisected** {point} between the baseline's commit and tonight's: {headline}. \
             Answer: {}\n",
            page.display()
        ),
        Bisected::Interrupted { error } => format!("\n**Bisection interrupted**: {error:#}\n"),
        Bisected::Failed { error } => format!("\n**Bisection failed**: {error:#}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BootEnd, BootRecord};

    #[test]
    fn a_night_not_gated_says_why_and_how_many_boots_failed() {
        let meta = RunMeta {
            boots: vec![
                BootRecord::default(),
                BootRecord {
                    end: BootEnd::Completed,
                    ..BootRecord::default()
                },
            ],
            ..RunMeta::default()
        };
        let failed = meta.boots.iter().filter(|b| !b.ok()).count();
        let (dir, report) = (Path::new("r/n"), Path::new("r/n/report.md"));
        assert_eq!(
            not_gated(ExitStatus::Incomplete, dir, &meta, report),
            format!("**Infrastructure failure**: {failed} of 2 boots failed, not gated; see r/n/report.md.\n")
        );
        assert!(not_gated(ExitStatus::Interrupted, dir, &meta, report).starts_with(
            &format!("**Interrupted**: the run is partial (2 boots, {failed} failed), not gated; continue it with markbench nightly --resume r/n;")
        ));
    }
}
