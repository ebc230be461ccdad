//! git, run on the user's tree: a revision resolved to its commit, the
//! commits a revision selection names.

use super::*;

/// A resolved git commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitCommit {
    pub id: String,
    pub subject: String,
}

impl GitCommit {
    /// The abbreviated id kernel developers quote (12 hex digits).
    pub fn short_id(&self) -> &str {
        short_commit(&self.id)
    }
}

/// A git commit id as git abbreviates it in messages: its first 12 hex
/// digits (all of a shorter one).
pub fn short_commit(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Runs git in `repo`; its stdout, or an error with its stderr.
pub fn git(repo: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("starting git")?;
    if !out.status.success() {
        bail!(
            "git -C {} {} failed: {}",
            repo.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A revision's commit id and subject; an input error when `repo` has no
/// such revision.
pub fn resolve_rev(repo: &Path, rev: &str) -> Result<GitCommit> {
    if rev.starts_with('-') || rev.trim().is_empty() {
        return Err(InputError::new(format!("rev {rev:?} is not a git revision")).into());
    }
    let id = git(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .map_err(|_| {
        InputError::new(format!(
            "rev {rev:?}: {} has no such commit (git rev-parse --verify {rev}^{{commit}})",
            repo.display()
        ))
    })?;
    let id = id.trim().to_string();
    let subject = git(repo, &["log", "-1", "--format=%s", &id])?
        .trim()
        .to_string();
    Ok(GitCommit { id, subject })
}

/// Two revisions to compare, or a series. Written (and recorded in a run's
/// `meta.toml`) as on the command line: `A,B` or `BASE..TIP`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum RevSelection {
    /// `A,B`: A the baseline, B the candidate.
    Pair(String, String),
    /// `BASE..TIP`: BASE, then every commit after it up to TIP.
    Range { base: String, tip: String },
}

impl std::fmt::Display for RevSelection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RevSelection::Pair(a, b) => write!(f, "{a},{b}"),
            RevSelection::Range { base, tip } => write!(f, "{base}..{tip}"),
        }
    }
}

/// `--revs`: clap takes the error's words (its own exit status, 2, says
/// the input is to fix).
impl std::str::FromStr for RevSelection {
    type Err = String;
    fn from_str(text: &str) -> Result<RevSelection, String> {
        parse_revs(text).map_err(|e| e.to_string())
    }
}

impl TryFrom<String> for RevSelection {
    type Error = InputError;
    fn try_from(text: String) -> Result<RevSelection, InputError> {
        parse_revs(&text)
    }
}

impl From<RevSelection> for String {
    fn from(selection: RevSelection) -> String {
        selection.to_string()
    }
}

impl RevSelection {
    /// A series (`BASE..TIP`): each kernel is also compared with the one
    /// before it.
    pub fn is_series(&self) -> bool {
        matches!(self, RevSelection::Range { .. })
    }
}

/// Reads `--revs`: `A,B` or `BASE..TIP`.
pub fn parse_revs(text: &str) -> Result<RevSelection, InputError> {
    let bad = || {
        InputError::new(format!(
            "--revs {text:?}: give two revisions as A,B or a series as BASE..TIP"
        ))
    };
    if let Some((base, tip)) = text.split_once("..") {
        if base.is_empty() || tip.is_empty() || tip.starts_with('.') || tip.contains("..") {
            return Err(bad());
        }
        return Ok(RevSelection::Range {
            base: base.into(),
            tip: tip.into(),
        });
    }
    match text.split(',').collect::<Vec<_>>()[..] {
        [a, b] if !a.is_empty() && !b.is_empty() => Ok(RevSelection::Pair(a.into(), b.into())),
        _ => Err(bad()),
    }
}

/// The commits a selection stands for, baseline first: a pair's two, or a
/// range's base followed by `git rev-list --reverse BASE..TIP`.
pub fn commits(repo: &Path, selection: &RevSelection) -> Result<Vec<GitCommit>> {
    match selection {
        RevSelection::Pair(a, b) => Ok(vec![resolve_rev(repo, a)?, resolve_rev(repo, b)?]),
        RevSelection::Range { base, tip } => {
            let base_commit = resolve_rev(repo, base)?;
            let tip_commit = resolve_rev(repo, tip)?;
            let list = git(
                repo,
                &[
                    "rev-list",
                    "--reverse",
                    &format!("{}..{}", base_commit.id, tip_commit.id),
                ],
            )?;
            let mut out = vec![base_commit];
            for id in list.lines().filter(|l| !l.is_empty()) {
                out.push(resolve_rev(repo, id)?);
            }
            if out.len() < 2 {
                return Err(InputError::new(format!(
                    "--revs {base}..{tip}: no commit after {base} leads to {tip}"
                ))
                .into());
            }
            Ok(out)
        }
    }
}
