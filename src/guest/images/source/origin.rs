//! What a kernel is built from: the source as the user names it, the
//! origin a variant asks for, and that origin resolved (commit, patches,
//! identity) into the tree a build reads.

use super::*;

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
    pub(super) fn base_tree(&self) -> Result<BuildTree> {
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
