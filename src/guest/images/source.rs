//! Where a variant's kernel comes from: a source (a kernel tree or a
//! release tarball), optionally a git revision of that tree, and patches
//! applied on top of it in order.
//!
//! A revision is built from a snapshot of its commit (`git archive` into a
//! directory of the cache named by the commit id), and patches are applied
//! to a copy of the base in a directory named by the base and the patches'
//! contents: the user's working tree, index and checked-out branch are
//! never read for a revision and never written. Only a tree without `rev`
//! is built as it is, uncommitted changes included.
//!
//! Patches are checked before anything is built, on a scratch copy of only
//! the files they touch, so a patch that does not apply is an input error
//! (naming the patch, the file and the hunk) in seconds, also in a dry run.

use super::seal::SealVerdict;
use super::{key_of, Cache};
use crate::base::error::bail;
use crate::base::error::InputError;
use crate::base::error::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A kernel source as the user names it.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelSource {
    /// A release tarball such as Debian's `/usr/src/linux-source-6.1.tar.xz`,
    /// unpacked once into the cache.
    Tarball(PathBuf),
    /// A kernel tree of the user's (usually a git checkout); built with
    /// `O=`, never written into.
    Tree(PathBuf),
}

impl KernelSource {
    pub fn from_path(path: &Path) -> Result<KernelSource, InputError> {
        if path.is_dir() {
            if !path.join("Makefile").is_file() || !path.join("Kconfig").is_file() {
                return Err(InputError::in_file(
                    path,
                    "not a kernel source tree (no Makefile and Kconfig)",
                ));
            }
            Ok(KernelSource::Tree(path.to_path_buf()))
        } else if path.is_file() {
            Ok(KernelSource::Tarball(path.to_path_buf()))
        } else {
            Err(InputError::new(format!(
                "kernel source {} does not exist (give a kernel tree or a tarball such as {})",
                path.display(),
                crate::base::prereq::DEFAULT_KERNEL_SOURCE
            )))
        }
    }

    /// The path the user gave.
    pub fn path(&self) -> &Path {
        match self {
            KernelSource::Tarball(p) | KernelSource::Tree(p) => p,
        }
    }

    /// A string that changes whenever the source does: the tarball's SHA-256,
    /// or a tree's git HEAD plus a hash of its uncommitted changes.
    pub fn identity(&self) -> Result<String> {
        match self {
            KernelSource::Tarball(path) => {
                let mut file = std::fs::File::open(path)
                    .with_context(|| format!("opening {}", path.display()))?;
                let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
                std::io::copy(&mut file, &mut hasher)?;
                Ok(format!(
                    "tarball {} sha256 {}",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    hex::encode(sha2::Digest::finalize(hasher))
                ))
            }
            KernelSource::Tree(path) => {
                let run = |args: &[&str]| -> Result<String> {
                    git(path, args).map_err(|_| {
                        anyhow::anyhow!(
                            "{}: cannot identify the tree (`git {}` failed); markbench caches builds \
                             by git revision, so give it a git checkout or a tarball",
                            path.display(),
                            args.join(" ")
                        )
                        .into()
                    })
                };
                let head = run(&["rev-parse", "HEAD"])?;
                let diff = run(&["diff", "HEAD"])?;
                Ok(format!(
                    "tree {} HEAD {} changes {}",
                    path.display(),
                    head.trim(),
                    key_of(&[("diff", diff.as_bytes())]).short()
                ))
            }
        }
    }

    /// The kernel tree itself: a tarball's unpacked copy in the cache
    /// (unpacked first if needed), or the user's tree.
    pub fn tree(&self, identity: &str) -> Result<PathBuf> {
        match self {
            KernelSource::Tarball(t) => unpacked_tree(t, identity),
            KernelSource::Tree(t) => Ok(t.clone()),
        }
    }
}

/// What a variant asks its kernel to be built from.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelOrigin {
    pub source: KernelSource,
    /// A git revision of the source tree (commit, tag, branch, `HEAD~2`).
    pub rev: Option<String>,
    /// Patch files, applied in this order (absolute, or relative to the
    /// current directory).
    pub patches: Vec<PathBuf>,
}

impl KernelOrigin {
    /// The source as it is, no revision, no patches.
    pub fn of(source: KernelSource) -> KernelOrigin {
        KernelOrigin {
            source,
            rev: None,
            patches: Vec::new(),
        }
    }
}

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

/// A patch file and its content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchRecord {
    /// The file's name, as it appears in messages and the report.
    pub name: String,
    pub sha256: crate::base::sha256::Sha256,
}

/// What a kernel was built from, as its cache entry records it (a run
/// records its own copy, `record::OriginRecord`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OriginRecord {
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PatchRecord>,
}

/// A kernel origin with its revision resolved to a commit and its patches
/// read and hashed: everything the build key needs, nothing built yet.
#[derive(Debug, Clone)]
pub struct ResolvedOrigin {
    pub source: KernelSource,
    pub rev: Option<String>,
    pub commit: Option<GitCommit>,
    pub patches: Vec<(PathBuf, PatchRecord)>,
    /// What the build key is made of: the commit id (not the revision's
    /// name) or the source's identity, then every patch's hash.
    pub identity: String,
    /// The source's own identity (tarball hash or tree state), for what is
    /// shared by all kernels of the source (diffconfig, the compile tree).
    pub source_identity: String,
}

/// The directory a kernel is built from.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildTree {
    /// Read only: kernels are built in a workspace that mirrors it
    /// (`images::workspace`), so the user's own tree is never written into.
    pub path: PathBuf,
}

impl ResolvedOrigin {
    /// Resolves the revision and hashes the patches; an unknown revision, a
    /// revision of a tarball or a missing patch is an input error.
    pub fn resolve(origin: &KernelOrigin) -> Result<ResolvedOrigin> {
        let source_identity = origin.source.identity()?;
        let commit = match (&origin.rev, &origin.source) {
            (None, _) => None,
            (Some(rev), KernelSource::Tree(repo)) => Some(resolve_rev(repo, rev)?),
            (Some(rev), KernelSource::Tarball(t)) => {
                return Err(InputError::new(format!(
                    "rev {rev:?}: {} is a tarball, not a git tree; a revision needs a git \
                     checkout as the source",
                    t.display()
                ))
                .into())
            }
        };
        let mut patches = Vec::new();
        for path in &origin.patches {
            let bytes = std::fs::read(path).map_err(|e| {
                crate::base::input_file::io_failure(
                    e,
                    format_args!("patch {}: cannot read it", path.display()),
                )
            })?;
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            patches.push((
                path.clone(),
                PatchRecord {
                    name,
                    sha256: key_of(&[("file", &bytes)]),
                },
            ));
        }
        let mut identity = match &commit {
            Some(c) => format!("git commit {}", c.id),
            None => source_identity.clone(),
        };
        for (_, p) in &patches {
            identity.push_str(&format!(" + patch sha256 {}", p.sha256));
        }
        Ok(ResolvedOrigin {
            source: origin.source.clone(),
            rev: origin.rev.clone(),
            commit,
            patches,
            identity,
            source_identity,
        })
    }

    pub fn record(&self) -> OriginRecord {
        OriginRecord {
            source: self.source.path().display().to_string(),
            rev: self.rev.clone(),
            commit: self.commit.as_ref().map(|c| c.id.clone()),
            subject: self.commit.as_ref().map(|c| c.subject.clone()),
            patches: self.patches.iter().map(|(_, p)| p.clone()).collect(),
        }
    }

    /// One line for the dry run and messages: commit, subject and patches.
    pub fn describe(&self) -> String {
        let mut out = match &self.commit {
            Some(c) => format!(
                "{} at {} {:?}",
                self.source.path().display(),
                c.short_id(),
                c.subject
            ),
            None => format!("{} as it is", self.source.path().display()),
        };
        for (_, p) in &self.patches {
            out.push_str(&format!(" + {} (sha256 {})", p.name, p.sha256.short()));
        }
        out
    }

    /// The base tree the patches go on: the commit's snapshot, the unpacked
    /// tarball, or the user's tree as it is.
    fn base_tree(&self) -> Result<BuildTree> {
        match (&self.commit, &self.source) {
            (Some(commit), KernelSource::Tree(repo)) => Ok(BuildTree {
                path: snapshot(repo, &commit.id)?,
            }),
            (_, KernelSource::Tarball(_)) => Ok(BuildTree {
                path: self.source.tree(&self.source_identity)?,
            }),
            (None, KernelSource::Tree(tree)) => Ok(BuildTree { path: tree.clone() }),
        }
    }

    /// The tree to build, made in the cache first if needed: the base, or
    /// a copy of it with the patches applied.
    pub fn tree(&self) -> Result<BuildTree> {
        let base = self.base_tree()?;
        if self.patches.is_empty() {
            return Ok(base);
        }
        self.check_patches()?;
        let dir = Cache::here()
            .patched(key_of(&[("origin", self.identity.as_bytes())]).as_str())
            .join("linux");
        if dir.join(DONE).is_file() {
            return Ok(BuildTree { path: dir });
        }
        let partial = dir.with_extension(format!("partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial)?;
        crate::base::message::note(format_args!(
            "copying {} and applying {} patch(es) …",
            base.path.display(),
            self.patches.len()
        ));
        copy_tree(&base.path, &partial)?;
        for (path, _) in &self.patches {
            apply(&partial, path).map_err(|m| anyhow::anyhow!("{m}"))?;
        }
        std::fs::write(partial.join(DONE), &self.identity)?;
        if std::fs::rename(&partial, &dir).is_err() {
            // Another process made it first; use theirs.
            let _ = std::fs::remove_dir_all(&partial);
        }
        Ok(BuildTree { path: dir })
    }

    /// The tree a build can read as it is: the unpacked tarball or the
    /// user's tree, without patches. `None` when the tree must be made
    /// ([`ResolvedOrigin::write_tree`]).
    pub fn existing_tree(&self) -> Result<Option<PathBuf>> {
        if self.commit.is_some() || !self.patches.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.base_tree()?.path))
    }

    /// Writes the tree to build into `dest` (an empty directory): the
    /// commit's files from git, or a copy of the base, then the patches in
    /// order. A build makes it in its workspace and removes it once
    /// mirrored, so a series leaves no snapshot per commit behind.
    pub fn write_tree(&self, dest: &Path) -> Result<()> {
        match (&self.commit, &self.source) {
            (Some(commit), KernelSource::Tree(repo)) => {
                crate::base::message::note(format_args!(
                    "the files of {} at {} …",
                    repo.display(),
                    commit.short_id()
                ));
                archive_into(repo, &commit.id, &[], dest)?
            }
            _ => copy_tree(&self.base_tree()?.path, dest)?,
        }
        if !self.patches.is_empty() {
            self.check_patches()?;
            crate::base::message::note(format_args!("applying {} patch(es) …", self.patches.len()));
        }
        for (path, _) in &self.patches {
            apply(dest, path).map_err(|m| anyhow::anyhow!("{m}"))?;
        }
        Ok(())
    }

    /// Applies the patches in order to a scratch copy of the files they
    /// touch, taken from the base; the first that does not apply is an
    /// input error naming it, the file and the hunk.
    pub fn check_patches(&self) -> Result<()> {
        if self.patches.is_empty() {
            return Ok(());
        }
        let mut touched = Vec::new();
        for (path, _) in &self.patches {
            for file in touched_files(path)? {
                if !touched.contains(&file) {
                    touched.push(file);
                }
            }
        }
        let scratch = tempfile::tempdir().context("creating a scratch directory")?;
        match (&self.commit, &self.source) {
            (Some(commit), KernelSource::Tree(repo)) => {
                copy_from_commit(repo, &commit.id, &touched, scratch.path())?
            }
            _ => {
                let base = self.base_tree()?;
                for file in &touched {
                    let from = base.path.join(file);
                    if from.is_file() {
                        let to = scratch.path().join(file);
                        if let Some(parent) = to.parent() {
                            std::fs::create_dir_all(parent)?;
                        }
                        std::fs::copy(&from, &to)
                            .with_context(|| format!("copying {}", from.display()))?;
                    }
                }
            }
        }
        for (path, _) in &self.patches {
            apply(scratch.path(), path)
                .map_err(|m| InputError::new(format!("{m} (on {})", self.describe_base())))?;
        }
        Ok(())
    }

    fn describe_base(&self) -> String {
        match &self.commit {
            Some(c) => format!("{} {:?}", c.short_id(), c.subject),
            None => format!("{} as it is", self.source.path().display()),
        }
    }
}

/// Which tree a workspace's mirror holds, as far as bringing it to another
/// tree goes: a commit of a git repository and a tarball's files are known
/// without reading them, so the way from one to another is the paths that
/// differ; a tree as it is can have changed anywhere since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Lineage {
    /// A commit of the git repository at `repository` (canonical path).
    Git { repository: PathBuf, commit: String },
    /// An unpacked tarball, by its identity (name and SHA-256).
    Tarball { identity: String },
    /// A tree read as it is, uncommitted changes included.
    Tree { path: PathBuf },
}

impl Lineage {
    /// Whether two lineages are of one source (one repository, one tarball,
    /// one tree), so a workspace holding one is the place to build the other.
    pub fn same_source(&self, other: &Lineage) -> bool {
        match (self, other) {
            (Lineage::Git { repository: a, .. }, Lineage::Git { repository: b, .. }) => a == b,
            (Lineage::Tarball { identity: a }, Lineage::Tarball { identity: b }) => a == b,
            (Lineage::Tree { path: a }, Lineage::Tree { path: b }) => a == b,
            _ => false,
        }
    }

    /// A few words for messages: the repository at a commit, the tarball.
    pub fn describe(&self) -> String {
        match self {
            Lineage::Git { repository, commit } => format!(
                "{} at {}",
                repository.display(),
                &commit[..commit.len().min(12)]
            ),
            Lineage::Tarball { identity } => identity
                .split(" sha256 ")
                .next()
                .unwrap_or(identity)
                .to_string(),
            Lineage::Tree { path } => format!("{} as it was", path.display()),
        }
    }
}

/// The tree a workspace's mirror holds: its lineage, the patches applied on
/// top (by SHA-256, in order) and every path they touch, so that the next
/// build knows which files to take back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeState {
    pub lineage: Lineage,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touched: Vec<String>,
}

/// How a workspace's mirror is brought to the tree a build wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    /// Only these paths (relative to the tree) can differ: each is written
    /// from the wanted tree, or removed when that tree has no such path.
    Paths {
        paths: Vec<String>,
        /// Where the paths came from, for the step's message.
        why: String,
    },
    /// Every file has to be compared: the reason, for the step's message.
    Whole(String),
}

/// Beyond this many paths, writing them one by one is no faster than
/// mirroring the whole tree (and their names would not fit one command line).
const MOST_PATHS: usize = 4000;

impl ResolvedOrigin {
    /// The tree this origin builds, as a workspace records it.
    pub fn tree_state(&self) -> Result<TreeState> {
        let lineage = match (&self.commit, &self.source) {
            (Some(commit), KernelSource::Tree(repo)) => Lineage::Git {
                repository: std::fs::canonicalize(repo).unwrap_or_else(|_| repo.clone()),
                commit: commit.id.clone(),
            },
            (_, KernelSource::Tarball(_)) => Lineage::Tarball {
                identity: self.source_identity.clone(),
            },
            (None, KernelSource::Tree(path)) => Lineage::Tree {
                path: std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()),
            },
        };
        Ok(TreeState {
            lineage,
            patches: self
                .patches
                .iter()
                .map(|(_, p)| p.sha256.to_string())
                .collect(),
            touched: self.touched_by_patches()?,
        })
    }

    /// Every path the patches name, once, in the order first named.
    fn touched_by_patches(&self) -> Result<Vec<String>> {
        let mut touched = Vec::new();
        for (path, _) in &self.patches {
            for file in touched_files(path)? {
                if !touched.contains(&file) {
                    touched.push(file);
                }
            }
        }
        Ok(touched)
    }

    /// The way from the tree a workspace holds to this origin's: the paths
    /// `git diff` names between the two commits (or none, between two
    /// builds of one tarball) and the paths both trees' patches touch; the
    /// whole tree when the two are of different sources, the source is a
    /// tree as it is, or git cannot say.
    pub fn delta_from(&self, held: &TreeState) -> Result<Delta> {
        let want = self.tree_state()?;
        if !want.lineage.same_source(&held.lineage) {
            return Ok(Delta::Whole(format!(
                "the workspace holds {}",
                held.lineage.describe()
            )));
        }
        let (mut paths, mut why) = match (&held.lineage, &want.lineage) {
            (
                Lineage::Git {
                    repository,
                    commit: from,
                },
                Lineage::Git { commit: to, .. },
            ) => match changed_paths(repository, from, to) {
                Ok(paths) => {
                    let why = format!(
                        "{} path(s) differ between {} and {} (git diff)",
                        paths.len(),
                        &from[..from.len().min(12)],
                        &to[..to.len().min(12)]
                    );
                    (paths, why)
                }
                Err(e) => {
                    return Ok(Delta::Whole(format!(
                        "git cannot compare the workspace's {} with {}: {e:#}",
                        &from[..from.len().min(12)],
                        &to[..to.len().min(12)]
                    )))
                }
            },
            (Lineage::Tarball { .. }, Lineage::Tarball { .. }) => {
                (Vec::new(), "the same tarball".to_string())
            }
            _ => {
                return Ok(Delta::Whole(format!(
                    "{} may have changed anywhere since the last build",
                    want.lineage.describe()
                )))
            }
        };
        let patched: Vec<&String> = held.touched.iter().chain(&want.touched).collect();
        if !patched.is_empty() {
            why.push_str(&format!(
                ", {} path(s) the patches touch (the last build's and this one's)",
                held.touched.len() + want.touched.len()
            ));
        }
        for path in patched {
            if !paths.contains(path) {
                paths.push(path.clone());
            }
        }
        if paths.len() > MOST_PATHS {
            return Ok(Delta::Whole(format!(
                "{} paths differ from the workspace's tree",
                paths.len()
            )));
        }
        Ok(Delta::Paths { paths, why })
    }

    /// Writes into `dest` (an empty directory) those of `paths` the tree to
    /// build holds, as it holds them: from git's objects for a commit, from
    /// the unpacked tarball otherwise; then applies the patches, which
    /// touch only paths among them.
    pub fn write_paths(&self, paths: &[String], dest: &Path) -> Result<()> {
        match (&self.commit, &self.source) {
            (Some(commit), KernelSource::Tree(repo)) => {
                copy_from_commit(repo, &commit.id, paths, dest)?
            }
            _ => {
                let base = self.base_tree()?;
                for file in paths {
                    let from = base.path.join(file);
                    let Ok(meta) = std::fs::symlink_metadata(&from) else {
                        continue;
                    };
                    let to = dest.join(file);
                    if let Some(parent) = to.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    if meta.is_symlink() {
                        std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
                    } else if meta.is_file() {
                        std::fs::copy(&from, &to)
                            .with_context(|| format!("copying {}", from.display()))?;
                    }
                }
            }
        }
        for (path, _) in &self.patches {
            apply(dest, path).map_err(|m| anyhow::anyhow!("{m}"))?;
        }
        Ok(())
    }
}

/// The paths that differ between two commits: `git diff --name-only
/// --no-renames` (a rename is its old path removed and its new one added;
/// a change of mode is a change), without rename detection's cost.
fn changed_paths(repo: &Path, from: &str, to: &str) -> Result<Vec<String>> {
    let out = git(
        repo,
        &[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            from,
            to,
            "--",
        ],
    )?;
    Ok(out
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect())
}

/// Marks a finished tree in the cache.
const DONE: &str = ".markbench-tree";

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

/// Where the snapshot of a commit is kept in the cache: `src/rev-<commit>`
/// (the tree in its `linux/`).
pub fn snapshot_dir(commit: &str) -> PathBuf {
    Cache::here().snapshot(commit)
}

/// The seal of a commit's snapshot ([`super::seal::TreeSeal`]), beside its tree.
pub fn snapshot_seal(commit: &str) -> PathBuf {
    snapshot_dir(commit).join("tree.seal")
}

/// The snapshot of a commit in the cache (`git archive`, made once),
/// checked against its seal at each use.
fn snapshot(repo: &Path, commit: &str) -> Result<PathBuf> {
    let dir = snapshot_dir(commit).join("linux");
    let seal = snapshot_seal(commit);
    if dir.join(DONE).is_file() {
        match super::seal::check_tree(&dir, &seal) {
            SealVerdict::Sound | SealVerdict::SealedNow => {
                super::lock::used(&snapshot_dir(commit));
                return Ok(dir);
            }
            SealVerdict::Damaged(why) => {
                crate::base::message::warning(format_args!(
                    "cached snapshot {} is damaged ({why}): making it again",
                    dir.display()
                ));
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("removing {}", dir.display()))?;
            }
        }
    }
    let partial = dir.with_extension(format!("partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)?;
    crate::base::message::note(format_args!(
        "snapshot of {} at {} …",
        repo.display(),
        short_commit(commit)
    ));
    archive_into(repo, commit, &[], &partial)?;
    std::fs::write(partial.join(DONE), commit)?;
    super::seal::write_tree_seal(&super::seal::tree_seal_of(&partial), &seal)?;
    if std::fs::rename(&partial, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    super::lock::used(&snapshot_dir(commit));
    Ok(dir)
}

/// `git archive COMMIT [-- PATHS] | tar -x -C DEST`.
fn archive_into(repo: &Path, commit: &str, paths: &[String], dest: &Path) -> Result<()> {
    let mut archive = Command::new("git");
    archive
        .arg("-C")
        .arg(repo)
        .args(["--literal-pathspecs", "archive", "--format=tar", commit]);
    if !paths.is_empty() {
        archive.arg("--").args(paths);
    }
    let mut archive = archive
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .context("starting git archive")?;
    let stdout = archive.stdout.take().context("git archive's output")?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dest)
        .stdin(stdout)
        .status()
        .context("starting tar")?;
    let out = archive.wait_with_output()?;
    if !out.status.success() || !tar.success() {
        bail!(
            "git archive of {} at {commit} into {} failed: {}",
            repo.display(),
            dest.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Those of `files` that exist at `commit`, extracted into `dest`.
fn copy_from_commit(repo: &Path, commit: &str, files: &[String], dest: &Path) -> Result<()> {
    let mut args = vec![
        "--literal-pathspecs",
        "ls-tree",
        "-r",
        "-z",
        "--name-only",
        commit,
        "--",
    ];
    args.extend(files.iter().map(String::as_str));
    let present: Vec<String> = git(repo, &args)?
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    if present.is_empty() {
        return Ok(());
    }
    archive_into(repo, commit, &present, dest)
}

/// A copy of a tree without its `.git`.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let mut pack = Command::new("tar")
        .arg("-C")
        .arg(from)
        .args(["--exclude=./.git", "-cf", "-", "."])
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .context("starting tar")?;
    let stdout = pack.stdout.take().context("tar's output")?;
    let unpack = Command::new("tar")
        .arg("-C")
        .arg(to)
        .arg("-xf")
        .arg("-")
        .stdin(stdout)
        .status()
        .context("starting tar")?;
    if !pack.wait()?.success() || !unpack.success() {
        bail!("copying {} to {} failed", from.display(), to.display());
    }
    Ok(())
}

/// The paths a patch names (old and new), as `git apply --numstat` reads them.
fn touched_files(patch: &Path) -> Result<Vec<String>> {
    let out = Command::new("git")
        .args(["apply", "--numstat", "-z"])
        .arg(patch)
        .env("GIT_CEILING_DIRECTORIES", "/")
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .context("starting git apply")?;
    if !out.status.success() {
        return Err(InputError::new(format!(
            "patch {}: not a patch git can read: {}",
            patch.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
        .into());
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut files = Vec::new();
    let mut tokens = text.split('\0').filter(|t| !t.is_empty());
    while let Some(token) = tokens.next() {
        let mut fields = token.splitn(3, '\t');
        let (_, _, path) = (fields.next(), fields.next(), fields.next());
        match path {
            // A rename: the old and the new path follow as tokens of their own.
            Some("") => files.extend(tokens.by_ref().take(2).map(str::to_string)),
            Some(path) => files.push(path.to_string()),
            None => {}
        }
    }
    if files.is_empty() {
        return Err(InputError::new(format!("patch {}: holds no diff", patch.display())).into());
    }
    Ok(files)
}

/// `git apply` of one patch inside `tree`; on failure, a message naming
/// the patch, the file and the hunk.
fn apply(tree: &Path, patch: &Path) -> std::result::Result<(), String> {
    let patch = std::fs::canonicalize(patch).unwrap_or_else(|_| patch.to_path_buf());
    let out = Command::new("git")
        .args(["apply", "-v"])
        .arg(&patch)
        .current_dir(tree)
        // Outside a repository git apply patches the files below the
        // current directory; never let it find one above the tree.
        .env(
            "GIT_CEILING_DIRECTORIES",
            tree.parent().unwrap_or(Path::new("/")),
        )
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("starting git apply: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&patch).unwrap_or_default();
    Err(explain_failure(&patch, &text, &stderr))
}

/// Turns `git apply -v`'s complaint into one message: the patch, then the
/// file and the hunk (its number in that file, its `@@` header and its line
/// in the patch) for a hunk that does not match, or git's own words.
pub fn explain_failure(patch: &Path, text: &str, stderr: &str) -> String {
    let patch_name = patch.display();
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("error: patch failed: ") else {
            continue;
        };
        let Some((file, old_line)) = rest.rsplit_once(':') else {
            continue;
        };
        let Ok(old_line) = old_line.trim().parse::<u64>() else {
            continue;
        };
        if let Some(hunk) = find_hunk(text, file, old_line) {
            return format!(
                "{patch_name}:{}: patch does not apply: {file}: hunk #{} ({}) does not match \
                 the source",
                hunk.patch_line, hunk.number, hunk.header
            );
        }
        return format!(
            "{patch_name}: patch does not apply: {file}: the hunk at line {old_line} does not \
             match the source"
        );
    }
    let reasons: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error: "))
        .collect();
    format!(
        "{patch_name}: patch does not apply: {}",
        if reasons.is_empty() {
            stderr.trim().to_string()
        } else {
            reasons.join("; ")
        }
    )
}

/// A hunk of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Its number among the hunks of its file, from 1.
    pub number: usize,
    /// Its `@@ -a,b +c,d @@` line.
    pub header: String,
    /// The header's line in the patch file, from 1.
    pub patch_line: usize,
}

/// The hunk of `file` in a unified diff whose old range starts at `old_line`.
pub fn find_hunk(text: &str, file: &str, old_line: u64) -> Option<Hunk> {
    let mut in_file = false;
    let mut number = 0;
    for (i, line) in text.lines().enumerate() {
        if let Some(path) = line.strip_prefix("+++ ") {
            let path = path.split('\t').next().unwrap_or(path).trim();
            // `b/path` for git and `diff -u a b` alike (-p1).
            let stripped = path.split_once('/').map_or(path, |(_, p)| p);
            in_file = stripped == file;
            number = 0;
            continue;
        }
        if line.starts_with("diff ") {
            in_file = false;
            continue;
        }
        if !in_file {
            continue;
        }
        if let Some(range) = line.strip_prefix("@@ -") {
            number += 1;
            let start = range
                .split([',', ' '])
                .next()
                .and_then(|s| s.parse::<u64>().ok());
            if start == Some(old_line) {
                return Some(Hunk {
                    number,
                    header: line.to_string(),
                    patch_line: i + 1,
                });
            }
        }
    }
    None
}

/// Unpacks `tarball` into `dest`, feeding tar through a pipe so the share
/// of the (compressed) file read so far is the step's progress.
fn unpack(tarball: &Path, dest: &Path) -> Result<()> {
    let name = tarball.to_string_lossy();
    let filter = [
        (".xz", "-J"),
        (".txz", "-J"),
        (".gz", "-z"),
        (".tgz", "-z"),
        (".bz2", "-j"),
        (".zst", "--zstd"),
    ]
    .iter()
    .find(|(ext, _)| name.ends_with(ext))
    .map(|(_, flag)| *flag);
    let mut file =
        std::fs::File::open(tarball).with_context(|| format!("opening {}", tarball.display()))?;
    let size_mb = file.metadata()?.len().div_ceil(1 << 20);
    let mut tar = Command::new("tar");
    tar.arg("-x")
        .args(filter)
        .arg("-f")
        .arg("-")
        .arg("-C")
        .arg(dest);
    let mut child = tar
        .stdin(std::process::Stdio::piped())
        .spawn()
        .context("starting tar")?;
    let mut stdin = child.stdin.take().context("tar's input")?;
    let file_name = tarball
        .file_name()
        .map_or(name.to_string(), |n| n.to_string_lossy().into_owned());
    let mut step =
        crate::base::progress::Step::start(format!("unpacking {file_name}"), "MiB", Some(size_mb));
    let mut buffer = vec![0u8; 1 << 20];
    let mut read = 0u64;
    let fed: std::io::Result<()> = (|| {
        use std::io::{Read, Write};
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                return Ok(());
            }
            stdin.write_all(&buffer[..n])?;
            read += n as u64;
            step.set(read >> 20);
        }
    })();
    drop(stdin);
    step.finish();
    let status = child.wait().context("waiting for tar")?;
    if !status.success() {
        bail!("unpacking {} failed ({status})", tarball.display());
    }
    fed.with_context(|| format!("reading {} into tar", tarball.display()))
}

/// Unpacks a tarball into the cache once; returns the source tree.
fn unpacked_tree(tarball: &Path, identity: &str) -> Result<PathBuf> {
    let dir = Cache::here().unpacked(key_of(&[("source", identity.as_bytes())]).as_str());
    let done = dir.join(".markbench-unpacked");
    if !done.exists() {
        let partial = dir.with_extension(format!("partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial)?;
        crate::base::message::note(format_args!("unpacking {} …", tarball.display()));
        unpack(tarball, &partial)?;
        std::fs::write(partial.join(".markbench-unpacked"), identity)?;
        if std::fs::rename(&partial, &dir).is_err() {
            // Another process unpacked it first; use theirs.
            let _ = std::fs::remove_dir_all(&partial);
        }
    }
    super::lock::used(&dir);
    // The tarball holds one top directory (e.g. linux-source-6.1).
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.join("Makefile").is_file() && path.join("Kconfig").is_file() {
            return Ok(path);
        }
    }
    bail!(
        "{}: no kernel tree inside the unpacked tarball",
        dir.display()
    )
}

/// What differs in the source between the baseline's kernel and a
/// candidate's, as a kernel developer reads it: the commits between two
/// revisions of one tree (`git log --oneline`) and `git diff --stat`, then
/// the candidate's patches with their hashes. `None` when both come from
/// the same source, revision and patches.
pub fn source_difference(base: &ResolvedOrigin, cand: &ResolvedOrigin) -> Result<Option<String>> {
    let mut text = String::new();
    if let (Some(a), Some(b), KernelSource::Tree(repo)) = (&base.commit, &cand.commit, &cand.source)
    {
        if a.id != b.id && base.source.path() == cand.source.path() {
            let range = format!("{}..{}", a.id, b.id);
            text.push_str(&format!("commits {}..{}:\n", a.short_id(), b.short_id()));
            text.push_str(&git(
                repo,
                &["log", "--oneline", "--abbrev=12", "--no-decorate", &range],
            )?);
            text.push('\n');
            text.push_str(&git(repo, &["diff", "--stat=72", &a.id, &b.id])?);
        }
    }
    let base_patches: Vec<&PatchRecord> = base.patches.iter().map(|(_, r)| r).collect();
    let extra: Vec<&PatchRecord> = cand
        .patches
        .iter()
        .map(|(_, r)| r)
        .filter(|r| !base_patches.contains(r))
        .collect();
    if !extra.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("patches applied on top:\n");
        for p in extra {
            text.push_str(&format!("  {} (sha256 {})\n", p.name, p.sha256.short()));
        }
    }
    Ok((!text.trim().is_empty()).then_some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A git repository with a Makefile, a Kconfig and kernel/fork.c, and
    /// `n` commits on top of the first, each changing one line of fork.c.
    fn repo(n: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let run = |args: &[&str]| git_in(p, args);
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(p.join("Makefile"), "all:\n").unwrap();
        std::fs::write(p.join("Kconfig"), "").unwrap();
        std::fs::create_dir_all(p.join("kernel")).unwrap();
        let lines: Vec<String> = (1..=20).map(|i| format!("int line{i};")).collect();
        std::fs::write(p.join("kernel/fork.c"), lines.join("\n") + "\n").unwrap();
        run(&["add", "-A"]);
        run(&["commit", "-q", "-m", "base"]);
        for c in 1..=n {
            let text = std::fs::read_to_string(p.join("kernel/fork.c")).unwrap();
            std::fs::write(
                p.join("kernel/fork.c"),
                text.replace(&format!("int line{c};"), &format!("long line{c};")),
            )
            .unwrap();
            run(&["commit", "-q", "-am", &format!("change {c}")]);
        }
        dir
    }

    fn git_in(p: &Path, args: &[&str]) {
        let out = Command::new("git")
            .arg("-C")
            .arg(p)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(out.status.success(), "{:?}", out);
    }

    fn origin_at(repo: &Path, rev: &str, patches: &[PathBuf]) -> ResolvedOrigin {
        ResolvedOrigin::resolve(&KernelOrigin {
            source: KernelSource::Tree(repo.to_path_buf()),
            rev: Some(rev.into()),
            patches: patches.to_vec(),
        })
        .unwrap()
    }

    /// Brings `workspace` to `origin`'s tree as a build does when it knows
    /// the tree held: by the delta, which must be a list of paths.
    fn step(
        workspace: &crate::guest::images::workspace::Workspace,
        origin: &ResolvedOrigin,
    ) -> usize {
        let held = workspace.state().expect("a recorded tree");
        let Delta::Paths { paths, .. } = origin.delta_from(&held).unwrap() else {
            panic!("a whole-tree delta between two commits of one repository");
        };
        assert_eq!(workspace.changed_since_recorded().unwrap(), None);
        workspace.forget_state().unwrap();
        let incoming = workspace.incoming().unwrap();
        origin.write_paths(&paths, &incoming).unwrap();
        workspace.write_paths(&paths, &incoming).unwrap();
        workspace
            .record_state(&origin.tree_state().unwrap())
            .unwrap();
        paths.len()
    }

    /// Whether the workspace's tree is, file for file, what a whole mirror
    /// of `origin`'s tree makes: mirroring it again changes nothing.
    fn holds_exactly(
        workspace: &crate::guest::images::workspace::Workspace,
        origin: &ResolvedOrigin,
    ) {
        let full = tempfile::tempdir().unwrap();
        origin.write_tree(full.path()).unwrap();
        let again =
            crate::guest::images::workspace::mirror(full.path(), &workspace.tree()).unwrap();
        assert_eq!(
            (again.written, again.removed),
            (0, 0),
            "the tree stepped to {} differs from its whole mirror",
            origin.describe()
        );
    }

    #[test]
    fn a_step_between_commits_writes_what_git_names_and_leaves_the_tree_a_whole_mirror_makes() {
        use std::os::unix::fs::PermissionsExt;
        let r = repo(1);
        let p = r.path();
        std::fs::create_dir_all(p.join("drivers/old")).unwrap();
        std::fs::write(p.join("drivers/old/gone.c"), "int gone;\n").unwrap();
        std::fs::write(p.join("scripts.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(p.join("moved.c"), "int moved;\n").unwrap();
        std::fs::write(p.join("becomes"), "a file, then a directory\n").unwrap();
        std::os::unix::fs::symlink("kernel/fork.c", p.join("link")).unwrap();
        git_in(p, &["add", "-A"]);
        git_in(p, &["commit", "-q", "-m", "more files"]);
        // The next commit: a change, a deletion that empties a directory, a
        // rename, a mode change, a new file in a new directory, a link moved
        // and a file replaced by a directory.
        std::fs::write(p.join("kernel/fork.c"), "int changed;\n").unwrap();
        std::fs::remove_dir_all(p.join("drivers/old")).unwrap();
        std::fs::rename(p.join("moved.c"), p.join("kernel/moved.c")).unwrap();
        std::fs::set_permissions(p.join("scripts.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::create_dir_all(p.join("net/new")).unwrap();
        std::fs::write(p.join("net/new/added.c"), "int added;\n").unwrap();
        std::fs::remove_file(p.join("link")).unwrap();
        std::os::unix::fs::symlink("Makefile", p.join("link")).unwrap();
        std::fs::remove_file(p.join("becomes")).unwrap();
        std::fs::create_dir_all(p.join("becomes")).unwrap();
        std::fs::write(p.join("becomes/inside.c"), "int inside;\n").unwrap();
        git_in(p, &["add", "-A"]);
        git_in(p, &["commit", "-q", "-m", "the step"]);
        let patch = p.join("0001-kconfig.patch");
        std::fs::write(
            &patch,
            "--- a/Kconfig\n+++ b/Kconfig\n@@ -0,0 +1 @@\n+config MARKBENCH_PATCHED\n",
        )
        .unwrap();

        let cache = tempfile::tempdir().unwrap();
        let workspace =
            crate::guest::images::workspace::Workspace::lock(cache.path().join("ws")).unwrap();
        let (before, after) = (origin_at(p, "main~1", &[]), origin_at(p, "main", &[]));
        let whole = tempfile::tempdir().unwrap();
        before.write_tree(whole.path()).unwrap();
        crate::guest::images::workspace::mirror(whole.path(), &workspace.tree()).unwrap();
        workspace
            .record_state(&before.tree_state().unwrap())
            .unwrap();
        let untouched = workspace.tree().join("Makefile");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&untouched)
            .unwrap()
            .set_modified(old)
            .unwrap();

        assert!(step(&workspace, &after) >= 8);
        holds_exactly(&workspace, &after);
        assert_eq!(
            std::fs::metadata(&untouched).unwrap().modified().unwrap(),
            old,
            "a file no commit touched was rewritten"
        );
        // A patch on top, then the plain commit again, then back where it began.
        let patched = origin_at(p, "main", std::slice::from_ref(&patch));
        assert_eq!(step(&workspace, &patched), 1);
        holds_exactly(&workspace, &patched);
        assert_eq!(step(&workspace, &after), 1);
        holds_exactly(&workspace, &after);
        step(&workspace, &before);
        holds_exactly(&workspace, &before);
    }

    #[test]
    fn a_tree_changed_behind_the_record_or_another_source_means_the_whole_tree() {
        let r = repo(2);
        let other = repo(1);
        let cache = tempfile::tempdir().unwrap();
        let workspace =
            crate::guest::images::workspace::Workspace::lock(cache.path().join("ws")).unwrap();
        let first = origin_at(r.path(), "main~1", &[]);
        let whole = tempfile::tempdir().unwrap();
        first.write_tree(whole.path()).unwrap();
        crate::guest::images::workspace::mirror(whole.path(), &workspace.tree()).unwrap();
        workspace
            .record_state(&first.tree_state().unwrap())
            .unwrap();
        let held = workspace.state().unwrap();
        assert!(matches!(
            origin_at(other.path(), "main", &[]).delta_from(&held).unwrap(),
            Delta::Whole(why) if why.contains("the workspace holds")
        ));
        assert_eq!(workspace.changed_since_recorded().unwrap(), None);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(workspace.tree().join("Kconfig"), "edited by hand\n").unwrap();
        assert_eq!(
            workspace.changed_since_recorded().unwrap(),
            Some(workspace.tree().join("Kconfig"))
        );
        // An unknown commit (a repository rewritten since) is not a delta.
        let gone = TreeState {
            lineage: Lineage::Git {
                repository: std::fs::canonicalize(r.path()).unwrap(),
                commit: "0123456789abcdef0123456789abcdef01234567".into(),
            },
            patches: vec![],
            touched: vec![],
        };
        assert!(matches!(
            origin_at(r.path(), "main", &[]).delta_from(&gone).unwrap(),
            Delta::Whole(why) if why.contains("git cannot compare")
        ));
    }

    #[test]
    fn a_range_is_its_base_then_every_commit_to_its_tip_oldest_first() {
        let r = repo(3);
        let list = commits(
            r.path(),
            &RevSelection::Range {
                base: "main~3".into(),
                tip: "main".into(),
            },
        )
        .unwrap();
        let subjects: Vec<&str> = list.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(subjects, ["base", "change 1", "change 2", "change 3"]);
        assert_eq!(list[3].id, resolve_rev(r.path(), "main").unwrap().id);
        assert_eq!(list[0].short_id().len(), 12);
    }

    #[test]
    fn an_empty_range_and_an_unknown_revision_are_input_errors() {
        let r = repo(1);
        let empty = commits(
            r.path(),
            &RevSelection::Range {
                base: "main".into(),
                tip: "main".into(),
            },
        )
        .unwrap_err();
        assert!(
            matches!(empty, crate::base::error::Error::Input(_)),
            "{empty:#}"
        );
        let unknown = resolve_rev(r.path(), "v9.9").unwrap_err();
        assert!(unknown.to_string().contains("\"v9.9\""), "{unknown:#}");
        assert!(matches!(unknown, crate::base::error::Error::Input(_)));
    }

    #[test]
    fn revs_are_a_pair_or_a_range() {
        assert_eq!(
            parse_revs("v6.1,my-branch").unwrap(),
            RevSelection::Pair("v6.1".into(), "my-branch".into())
        );
        assert_eq!(
            parse_revs("v6.1..HEAD").unwrap(),
            RevSelection::Range {
                base: "v6.1".into(),
                tip: "HEAD".into()
            }
        );
        for bad in ["v6.1", "a,b,c", ",b", "a..", "a...b", "..b"] {
            assert!(parse_revs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_key_names_the_commit_not_the_revision() {
        let r = repo(1);
        let origin = |rev: &str| KernelOrigin {
            source: KernelSource::Tree(r.path().to_path_buf()),
            rev: Some(rev.into()),
            patches: Vec::new(),
        };
        let by_branch = ResolvedOrigin::resolve(&origin("main")).unwrap();
        let by_id =
            ResolvedOrigin::resolve(&origin(&by_branch.commit.as_ref().unwrap().id)).unwrap();
        let parent = ResolvedOrigin::resolve(&origin("main~1")).unwrap();
        assert_eq!(by_branch.identity, by_id.identity);
        assert_ne!(by_branch.identity, parent.identity);
        assert_eq!(by_branch.commit.unwrap().subject, "change 1");
    }

    #[test]
    fn a_failed_hunk_is_found_by_its_old_start_line() {
        let patch =
            "diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n\
                     @@ -10,3 +10,3 @@\n j\n-k\n+K\n l\n";
        let hunk = find_hunk(patch, "x.c", 10).unwrap();
        assert_eq!(hunk.number, 2);
        assert_eq!(hunk.patch_line, 9);
        assert_eq!(hunk.header, "@@ -10,3 +10,3 @@");
        assert_eq!(find_hunk(patch, "y.c", 10), None);
        let message = explain_failure(
            Path::new("p.patch"),
            patch,
            "Checking patch x.c...\nerror: while searching for:\nj\nk\n\nerror: patch failed: x.c:10\n\
             error: x.c: patch does not apply\n",
        );
        assert_eq!(
            message,
            "p.patch:9: patch does not apply: x.c: hunk #2 (@@ -10,3 +10,3 @@) does not match the source"
        );
    }
}
