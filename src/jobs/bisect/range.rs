//! The commits a bisection runs over: GOOD and BAD checked before anything
//! is built, and the first-parent line from GOOD to BAD.

use crate::base::error::InputError;
use crate::base::error::Result;
use crate::guest::images::source::{self, GitCommit};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One commit of the range, as the answer names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeCommit {
    pub id: String,
    pub subject: String,
    pub author: String,
    /// Parents beyond the first: a merge brings a branch in as one step.
    pub merge: bool,
}

impl RangeCommit {
    pub fn short_id(&self) -> &str {
        source::short_commit(&self.id)
    }
}

/// The range: GOOD first, BAD last, the first-parent commits between them
/// in the order they were made.
pub fn commits(repo: &Path, good: &str, bad: &str) -> Result<Vec<RangeCommit>> {
    let is_git = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "--git-dir"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !is_git {
        return Err(InputError::new(format!(
            "--kernel-source {}: not a git repository; bisection walks a git tree's commits",
            repo.display()
        ))
        .into());
    }
    let good_commit = source::resolve_rev(repo, good).map_err(|e| named("--good", e))?;
    let bad_commit = source::resolve_rev(repo, bad).map_err(|e| named("--bad", e))?;
    if good_commit.id == bad_commit.id {
        return Err(InputError::new(format!(
            "--good {good} and --bad {bad} are the same commit {}",
            good_commit.short_id()
        ))
        .into());
    }
    let ancestor = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "merge-base",
            "--is-ancestor",
            &good_commit.id,
            &bad_commit.id,
        ])
        .status()?;
    if !ancestor.success() {
        return Err(InputError::new(format!(
            "--good {good} ({}) is not an ancestor of --bad {bad} ({}): a bisection runs from \
             an older commit to a newer one that contains it",
            good_commit.short_id(),
            bad_commit.short_id()
        ))
        .into());
    }
    let listed = source::git(
        repo,
        &[
            "rev-list",
            "--reverse",
            "--first-parent",
            "--ancestry-path",
            &format!("{}..{}", good_commit.id, bad_commit.id),
        ],
    )?;
    let mut out = vec![describe(repo, &good_commit)?];
    for id in listed.lines().filter(|l| !l.is_empty()) {
        out.push(describe(
            repo,
            &GitCommit {
                id: id.to_string(),
                subject: String::new(),
            },
        )?);
    }
    if out.last().map(|c| c.id.as_str()) != Some(bad_commit.id.as_str()) {
        return Err(InputError::new(format!(
            "--bad {bad}: its first-parent line does not lead from --good {good}"
        ))
        .into());
    }
    Ok(out)
}

/// `e`, met resolving the revision `flag` gave, with the flag in front:
/// a revision the tree lacks is input to fix, a git that fails is not.
fn named(flag: &str, e: crate::base::error::Error) -> crate::base::error::Error {
    match e {
        crate::base::error::Error::Input(e) => InputError::new(format!("{flag}: {e}")).into(),
        e => e.context(flag.to_string()),
    }
}

/// A commit's subject, author and whether it is a merge.
fn describe(repo: &Path, commit: &GitCommit) -> Result<RangeCommit> {
    let text = source::git(
        repo,
        &["log", "-1", "--format=%s%n%an <%ae>%n%P", &commit.id],
    )?;
    let mut lines = text.lines();
    let subject = lines.next().unwrap_or_default().to_string();
    let author = lines.next().unwrap_or_default().to_string();
    let parents = lines.next().unwrap_or_default().split_whitespace().count();
    Ok(RangeCommit {
        id: commit.id.clone(),
        subject,
        author,
        merge: parents > 1,
    })
}

/// `git show --stat` of a commit, for the answer.
pub fn stat(repo: &Path, id: &str) -> Result<String> {
    source::git(
        repo,
        &[
            "show",
            "--stat",
            "--format=commit %H%nAuthor: %an <%ae>%nDate:   %ad%n%n    %s%n",
            id,
        ],
    )
}
