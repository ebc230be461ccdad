//! Build workspaces: one per kernel configuration (the fragments, the
//! compiler and the recipe, not the source), kept in the cache. A workspace
//! holds a mirror of the last source tree built in it and that build's `O=`
//! directory, objects included. Building another tree with the same
//! configuration (the next commit of a series, the tree with a patch on top)
//! mirrors it in: only the files whose content differs are rewritten, so
//! Kbuild's own dependency tracking recompiles what the change touches and
//! nothing else, minutes become seconds, and the result is the bytes a clean
//! build gives (Kbuild rebuilds everything whose inputs are newer, and a
//! rewritten file is always newer than the objects built before it).
//!
//! A build that did not finish (killed, failed) leaves objects nobody can
//! vouch for: the workspace records a finished build, and one without that
//! record starts from an empty build directory.
//!
//! The workspace also records which tree its mirror holds (a commit of a
//! repository, a tarball, and the patches on top), so the next build of
//! the same source writes only the paths git's diff and the patches name,
//! without reading the other eighty thousand files. A configuration keeps
//! a few workspaces, each holding the tree last built in it, so builds that
//! alternate between two sources each find their own.

use super::source::TreeState;
use crate::base::error::{Context, Result};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use walkdir::WalkDir;

/// A workspace, locked for one build (other processes wait).
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    _lock: super::lock::EntryLock,
}

/// What mirroring a tree into a workspace did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MirrorStats {
    /// Files and links written: new, or changed since the last build.
    pub written: usize,
    /// Files, links and directories the new tree no longer has.
    pub removed: usize,
    /// Files and links left as they were (their objects stay valid).
    pub unchanged: usize,
}

const FINISHED: &str = "finished";

/// The record of the tree the mirror holds, written once it holds it.
const TREE_STATE: &str = "tree.toml";

/// How many workspaces one configuration keeps (`NAME-KEY`, `NAME-KEY.2`, …).
pub const SLOTS: usize = 3;

/// The workspaces a configuration may use, the first the one of old.
pub fn slots(first: &Path) -> Vec<PathBuf> {
    let mut all = vec![first.to_path_buf()];
    for n in 2..=SLOTS {
        let mut name = first.as_os_str().to_os_string();
        name.push(format!(".{n}"));
        all.push(PathBuf::from(name));
    }
    all
}

/// The tree state recorded in a workspace at `root`; `None` when there is
/// none or it cannot be read (the whole tree is then compared).
fn recorded_state(root: &Path) -> Option<TreeState> {
    let path = root.join(TREE_STATE);
    let text = std::fs::read_to_string(&path).ok()?;
    match toml::from_str(&text) {
        Ok(state) => Some(state),
        Err(e) => {
            crate::base::message::warning(format_args!(
                "{} cannot be read ({}); the whole tree will be compared",
                path.display(),
                e.message()
            ));
            None
        }
    }
}

/// Which of a configuration's workspaces builds `want`: the one holding
/// that very tree, else the one most recently used for the same source,
/// else one never used (or one of an earlier version, which holds a tree
/// but not its record), else the least recently used.
pub fn choose_slot(first: &Path, want: &TreeState) -> PathBuf {
    let used = |root: &Path| -> i128 {
        std::fs::metadata(root.join(TREE_STATE))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128)
    };
    slots(first)
        .into_iter()
        .enumerate()
        .max_by_key(|(i, root)| {
            let (tier, recency) = match recorded_state(root) {
                Some(held) if held == *want => (4, used(root)),
                Some(held) if held.lineage.same_source(&want.lineage) => (3, used(root)),
                None if root.join("linux").is_dir() => (2, 0),
                None => (1, 0),
                // Of the workspaces holding other sources, the least
                // recently used.
                Some(_) => (0, -used(root)),
            };
            // Ties go to the earlier workspace.
            (tier, recency, std::cmp::Reverse(*i))
        })
        .map_or_else(|| first.to_path_buf(), |(_, root)| root)
}

impl Workspace {
    /// Locks `root`, made if missing; waits while another build holds it.
    pub fn lock(root: PathBuf) -> Result<Workspace> {
        std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        let lock = super::lock::EntryLock::exclusive(
            &root.join("lock"),
            &format!("another build in {}", root.display()),
        )?;
        Ok(Workspace { root, _lock: lock })
    }

    /// The mirrored source tree.
    pub fn tree(&self) -> PathBuf {
        self.root.join("linux")
    }

    /// The `O=` directory, inside the tree: Kbuild then names the source
    /// `..` and every path on the compiler's command line is relative, so
    /// ccache shares objects between workspaces at different paths.
    pub fn build_dir(&self) -> PathBuf {
        self.tree().join(".markbench-build")
    }

    /// The `O=` directory the configuration is made in, apart from the
    /// build's so that an unchanged `.config` keeps its time stamp.
    pub fn config_dir(&self) -> PathBuf {
        self.tree().join(".markbench-config")
    }

    /// An empty directory beside the tree for a tree that has to be made
    /// before it is mirrored (a commit's files, a patched copy).
    pub fn incoming(&self) -> Result<PathBuf> {
        let dir = self.root.join("incoming");
        remove_any(&dir)?;
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    /// Starts a build: forgets the last finished one, and empties the build
    /// directory when the last build did not finish.
    pub fn begin(&self) -> Result<()> {
        let finished = self.root.join(FINISHED);
        if !finished.is_file() && self.build_dir().exists() {
            crate::base::message::note(format_args!(
                "the last build in {} did not finish; starting from an empty build \
                 directory",
                self.root.display()
            ));
            std::fs::remove_dir_all(self.build_dir())
                .with_context(|| format!("removing {}", self.build_dir().display()))?;
        }
        match std::fs::remove_file(&finished) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {}", finished.display()))
            }
            _ => Ok(()),
        }
    }

    /// Records that the build finished, naming what was built.
    pub fn finish(&self, identity: &str) -> Result<()> {
        std::fs::write(self.root.join(FINISHED), identity)
            .with_context(|| format!("writing {}", self.root.join(FINISHED).display()))
    }

    /// The tree the mirror holds, when the last build recorded it.
    pub fn state(&self) -> Option<TreeState> {
        recorded_state(&self.root)
    }

    /// Forgets which tree the mirror holds, before it is changed: a
    /// mirroring cut short leaves a tree nobody can name.
    pub fn forget_state(&self) -> Result<()> {
        let path = self.root.join(TREE_STATE);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {}", path.display()))
            }
            _ => Ok(()),
        }
    }

    /// Records the tree the mirror now holds.
    pub fn record_state(&self, state: &TreeState) -> Result<()> {
        let path = self.root.join(TREE_STATE);
        let partial = self.root.join(format!("{TREE_STATE}.partial"));
        std::fs::write(&partial, toml::to_string(state)?)
            .with_context(|| format!("writing {}", partial.display()))?;
        std::fs::rename(&partial, &path).with_context(|| format!("writing {}", path.display()))
    }

    /// A file of the mirror changed since its tree was recorded (by hand, or
    /// by something that is not a build), if any: its record no longer
    /// names what the tree holds.
    pub fn changed_since_recorded(&self) -> Result<Option<PathBuf>> {
        let recorded = std::fs::metadata(self.root.join(TREE_STATE))
            .and_then(|m| m.modified())
            .with_context(|| format!("reading {}", self.root.join(TREE_STATE).display()))?;
        let tree = self.tree();
        let entries = WalkDir::new(&tree)
            .min_depth(1)
            .into_iter()
            .filter_entry(|e| e.depth() != 1 || !not_the_kernels(e.file_name()));
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", tree.display()))?;
            let meta = entry
                .metadata()
                .with_context(|| format!("reading {}", entry.path().display()))?;
            if meta.modified().is_ok_and(|m| m > recorded) {
                return Ok(Some(entry.path().to_path_buf()));
            }
        }
        Ok(None)
    }

    /// Brings the named `paths` of the tree to what `from` holds (a
    /// directory with only those of them the new tree has): a path `from`
    /// lacks is removed, with the directories it leaves empty; one whose
    /// bytes and mode are already there keeps its time stamp.
    pub fn write_paths(&self, paths: &[String], from: &Path) -> Result<MirrorStats> {
        let tree = self.tree();
        let mut stats = MirrorStats::default();
        let (present, gone): (Vec<&String>, Vec<&String>) = paths
            .iter()
            // git names files and links, never directories: a directory
            // at a path means the file there is gone and files are below.
            .partition(|p| std::fs::symlink_metadata(from.join(p)).is_ok_and(|m| !m.is_dir()));
        for path in gone {
            let dest = tree.join(path);
            if std::fs::symlink_metadata(&dest).is_err() {
                continue;
            }
            remove_any(&dest)?;
            stats.removed += 1;
            let mut dir = dest.parent();
            while let Some(d) = dir.filter(|d| *d != tree) {
                if std::fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
        for path in present {
            let src = from.join(path);
            let dest = tree.join(path);
            // A file where the new tree has a directory on the way.
            let mut up = dest.parent();
            while let Some(d) = up.filter(|d| d.starts_with(&tree) && *d != tree) {
                if std::fs::symlink_metadata(d).is_ok_and(|m| !m.is_dir()) {
                    remove_any(d)?;
                }
                up = d.parent();
            }
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            let is_link = std::fs::symlink_metadata(&src)?.is_symlink();
            write_entry(&src, &dest, is_link, &mut stats)?;
        }
        Ok(stats)
    }

    /// Mirrors `from` into the workspace's tree, showing the files compared
    /// so far while it goes.
    pub fn mirror(&self, from: &Path) -> Result<MirrorStats> {
        let mut step = crate::base::progress::Step::start(
            format!("mirroring {} into the workspace", from.display()),
            "files compared",
            None,
        );
        let stats = mirror_counting(from, &self.tree(), &mut |n| step.set(n));
        step.finish();
        stats
    }
}

/// Entries at a tree's top that are not the kernel's: markbench's own
/// (build directories, markers) and git's. Never copied, never removed.
fn not_the_kernels(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name.starts_with(".markbench") || name == ".git"
}

/// Makes `to` hold exactly the files, links and directories of `from` (but
/// the entries [`not_the_kernels`]), writing only what differs: a file whose
/// bytes and mode are already there keeps its time stamp.
pub fn mirror(from: &Path, to: &Path) -> Result<MirrorStats> {
    mirror_counting(from, to, &mut |_| {})
}

/// [`mirror`], telling `compared` how many entries it has compared so far
/// (about every thousand).
fn mirror_counting(from: &Path, to: &Path, compared: &mut dyn FnMut(u64)) -> Result<MirrorStats> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let mut stats = MirrorStats::default();
    let mut seen = HashSet::new();
    let entries = WalkDir::new(from)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| e.depth() != 1 || !not_the_kernels(e.file_name()));
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", from.display()))?;
        let rel = entry.path().strip_prefix(from)?.to_path_buf();
        let dest = to.join(&rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            if !std::fs::symlink_metadata(&dest).is_ok_and(|m| m.is_dir()) {
                remove_any(&dest)?;
                std::fs::create_dir(&dest)
                    .with_context(|| format!("creating {}", dest.display()))?;
            }
        } else {
            write_entry(entry.path(), &dest, kind.is_symlink(), &mut stats)?;
        }
        seen.insert(rel);
        if seen.len() % 1024 == 0 {
            compared(seen.len() as u64);
        }
    }
    let mut walk = WalkDir::new(to).min_depth(1).into_iter();
    while let Some(entry) = walk.next() {
        let entry = entry.with_context(|| format!("reading {}", to.display()))?;
        if entry.depth() == 1 && not_the_kernels(entry.file_name()) {
            if entry.file_type().is_dir() {
                walk.skip_current_dir();
            }
            continue;
        }
        let rel = entry.path().strip_prefix(to)?;
        if !seen.contains(rel) {
            if entry.file_type().is_dir() {
                walk.skip_current_dir();
            }
            remove_any(entry.path())?;
            stats.removed += 1;
        }
    }
    Ok(stats)
}

/// Makes `dest` the link or file `src` is, unless it already is (then its
/// time stamp stays), counting which.
fn write_entry(src: &Path, dest: &Path, is_link: bool, stats: &mut MirrorStats) -> Result<()> {
    if is_link {
        let target = std::fs::read_link(src)?;
        if std::fs::read_link(dest).is_ok_and(|t| t == target) {
            stats.unchanged += 1;
            return Ok(());
        }
        remove_any(dest)?;
        std::os::unix::fs::symlink(&target, dest)
            .with_context(|| format!("linking {}", dest.display()))?;
    } else if same_file(src, dest)? {
        stats.unchanged += 1;
        return Ok(());
    } else {
        remove_any(dest)?;
        std::fs::copy(src, dest)
            .with_context(|| format!("copying {} to {}", src.display(), dest.display()))?;
    }
    stats.written += 1;
    Ok(())
}

/// Whether `dest` is a regular file with `src`'s bytes and mode.
fn same_file(src: &Path, dest: &Path) -> Result<bool> {
    let Ok(have) = std::fs::symlink_metadata(dest) else {
        return Ok(false);
    };
    let want = std::fs::metadata(src).with_context(|| format!("reading {}", src.display()))?;
    if !have.is_file() || have.len() != want.len() || have.permissions() != want.permissions() {
        return Ok(false);
    }
    let a = std::fs::read(src).with_context(|| format!("reading {}", src.display()))?;
    let b = std::fs::read(dest).with_context(|| format!("reading {}", dest.display()))?;
    Ok(a == b)
}

/// Removes a file, link or directory tree if there is one.
fn remove_any(path: &Path) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
    .with_context(|| format!("removing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, SystemTime};

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn mtime(path: &Path) -> SystemTime {
        std::fs::symlink_metadata(path).unwrap().modified().unwrap()
    }

    /// Sets a file's time stamp into the past, as an object built long ago.
    fn age(path: &Path) {
        let old = SystemTime::now() - Duration::from_secs(3600);
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    #[test]
    fn mirroring_rewrites_only_what_differs_and_removes_what_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (a, ws) = (dir.path().join("a"), dir.path().join("ws"));
        write(&a.join("kernel/sched/core.c"), "schedule\n");
        write(&a.join("net/unix/af_unix.c"), "send\n");
        write(&a.join("drivers/old/gone.c"), "gone\n");
        std::os::unix::fs::symlink("core.c", a.join("kernel/sched/link.c")).unwrap();
        let first = mirror(&a, &ws).unwrap();
        assert_eq!(
            first,
            MirrorStats {
                written: 4,
                removed: 0,
                unchanged: 0
            }
        );
        for f in ["kernel/sched/core.c", "net/unix/af_unix.c"] {
            age(&ws.join(f));
        }
        let before = mtime(&ws.join("kernel/sched/core.c"));

        // The next commit: one file changed, one directory removed, one
        // file new, a link retargeted, a mode changed.
        let b = dir.path().join("b");
        write(&b.join("kernel/sched/core.c"), "schedule\n");
        write(&b.join("net/unix/af_unix.c"), "send and spin\n");
        write(&b.join("kernel/new.c"), "new\n");
        std::os::unix::fs::symlink("../new.c", b.join("kernel/sched/link.c")).unwrap();
        let second = mirror(&b, &ws).unwrap();
        assert_eq!(
            second,
            MirrorStats {
                written: 3,
                removed: 1,
                unchanged: 1
            }
        );
        assert_eq!(mtime(&ws.join("kernel/sched/core.c")), before);
        assert!(mtime(&ws.join("net/unix/af_unix.c")) > before);
        assert_eq!(
            std::fs::read_to_string(ws.join("net/unix/af_unix.c")).unwrap(),
            "send and spin\n"
        );
        assert!(
            !ws.join("drivers").exists(),
            "the directory is gone with its file"
        );
        assert_eq!(
            std::fs::read_link(ws.join("kernel/sched/link.c")).unwrap(),
            Path::new("../new.c")
        );

        std::fs::set_permissions(
            b.join("kernel/new.c"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let third = mirror(&b, &ws).unwrap();
        assert_eq!(third.written, 1, "{third:?}");
        assert_eq!(
            std::fs::metadata(ws.join("kernel/new.c"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o755
        );
        assert_eq!(
            mirror(&b, &ws).unwrap(),
            MirrorStats {
                written: 0,
                removed: 0,
                unchanged: 4
            }
        );
    }

    #[test]
    fn a_build_goes_to_the_workspace_of_its_tree_else_of_its_source_else_a_free_one() {
        use crate::guest::images::source::Lineage;
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("markers-off-0123");
        let git = |commit: &str| TreeState {
            lineage: Lineage::Git {
                repository: "/src/linux".into(),
                commit: commit.into(),
            },
            patches: vec![],
            touched: vec![],
        };
        let tarball = |name: &str| TreeState {
            lineage: Lineage::Tarball {
                identity: format!("tarball {name} sha256 00"),
            },
            patches: vec![],
            touched: vec![],
        };
        let hold = |root: &Path, state: &TreeState| {
            let w = Workspace::lock(root.to_path_buf()).unwrap();
            std::fs::create_dir_all(w.tree()).unwrap();
            w.record_state(state).unwrap();
        };
        let [one, two, three] = <[PathBuf; 3]>::try_from(slots(&first)).unwrap();
        assert_eq!(choose_slot(&first, &git("a")), one, "a fresh configuration");
        hold(&one, &tarball("linux-6.1"));
        assert_eq!(choose_slot(&first, &tarball("linux-6.1")), one);
        assert_eq!(
            choose_slot(&first, &git("a")),
            two,
            "another source, a free one"
        );
        hold(&two, &git("a"));
        assert_eq!(choose_slot(&first, &git("b")), two, "the same repository");
        hold(&three, &tarball("linux-6.12"));
        std::thread::sleep(Duration::from_millis(20));
        hold(&one, &tarball("linux-6.1"));
        assert_eq!(
            choose_slot(&first, &tarball("linux-7.0")),
            two,
            "all taken: the least recently used"
        );
        // A workspace of an earlier version holds a tree but no record: it
        // is taken before an empty one, its files likely the same source's.
        let old = dir.path().join("markers-on-4567");
        std::fs::create_dir_all(old.join("linux")).unwrap();
        assert_eq!(choose_slot(&old, &git("a")), old);
        std::fs::write(old.join(TREE_STATE), "garbage = [").unwrap();
        assert_eq!(Workspace::lock(old.clone()).unwrap().state(), None);
    }

    #[test]
    fn mirroring_leaves_build_directories_and_git_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (src, ws) = (dir.path().join("src"), dir.path().join("ws"));
        write(&src.join("Makefile"), "all:\n");
        write(&src.join(".git/HEAD"), "ref\n");
        write(&src.join(".markbench-tree"), "marker\n");
        write(&ws.join(".markbench-build/vmlinux.o"), "object\n");
        let stats = mirror(&src, &ws).unwrap();
        assert_eq!(stats.written, 1, "{stats:?}");
        assert_eq!(stats.removed, 0, "{stats:?}");
        assert!(ws.join(".markbench-build/vmlinux.o").is_file());
        assert!(!ws.join(".git").exists());
        assert!(!ws.join(".markbench-tree").exists());
    }

    #[test]
    fn an_unfinished_build_empties_the_build_directory() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::lock(dir.path().join("ws")).unwrap();
        write(&ws.build_dir().join("kernel/fork.o"), "half-written\n");
        ws.begin().unwrap();
        assert!(!ws.build_dir().exists(), "no record of a finished build");

        write(&ws.build_dir().join("kernel/fork.o"), "whole\n");
        ws.finish("commit 1").unwrap();
        ws.begin().unwrap();
        assert!(ws.build_dir().join("kernel/fork.o").is_file());
        // Begun and not finished: the next build cannot trust it.
        ws.begin().unwrap();
        assert!(!ws.build_dir().exists());
    }
}
