//! Which tree a workspace's mirror holds and how it is brought to the tree
//! the next build wants.

use super::*;

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
pub(super) const MOST_PATHS: usize = 4000;

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
pub(super) fn changed_paths(repo: &Path, from: &str, to: &str) -> Result<Vec<String>> {
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
