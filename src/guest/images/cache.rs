//! What the cache holds, and freeing space in it. Every entry is one kernel,
//! one configuration's workspace, one source tree or snapshot, or one guest
//! image; each has a last use (a stamp markbench touches whenever it uses
//! the entry, else the entry's own time) and a lock a running markbench
//! holds while it uses the entry, so pruning never removes what a run, a
//! build or a bisection is using.

use super::lock::EntryLock;
use crate::base::error::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The kinds of entries, as listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Kernel,
    Workspace,
    Source,
    GuestImage,
    /// markbench's own QEMU builds and their source.
    Qemu,
    /// ccache's objects, remembered verdicts, the plugin: listed, never pruned.
    Other,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Kernel => "kernels",
            Kind::Workspace => "workspaces",
            Kind::Source => "sources and snapshots",
            Kind::GuestImage => "guest images",
            Kind::Qemu => "QEMU builds",
            Kind::Other => "other",
        }
    }

    /// The kind of the cache's subdirectory `name`, and whether each of
    /// its children is an entry (else the directory is one).
    fn of_dir(name: &str) -> (Kind, bool) {
        match name {
            "kernels" => (Kind::Kernel, true),
            "workspaces" => (Kind::Workspace, true),
            "src" => (Kind::Source, true),
            "series-repo" => (Kind::Source, false),
            "initramfs" | "compile-tree" | "guest-arm64" => (Kind::GuestImage, true),
            "qemu-builds" => (Kind::Qemu, true),
            _ => (Kind::Other, false),
        }
    }
}

/// One entry of the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub kind: Kind,
    pub path: PathBuf,
    pub bytes: u64,
    pub last_use: SystemTime,
    /// A running markbench holds it (or, for a partial build, its builder
    /// is still alive).
    pub in_use: bool,
    /// What a killed build left (`….partial-PID` of a process that is
    /// gone): `cache prune` always removes it.
    pub debris: bool,
}

use super::lock::{in_use_file, IN_USE};

/// Bytes of the files under `path` (links not followed).
fn size_of(path: &Path) -> u64 {
    walkdir::WalkDir::new(path)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn modified(path: &Path) -> SystemTime {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// A partial kernel build (`<name>-<key>.partial-<pid>`) whose builder is alive.
fn partial_build_alive(path: &Path) -> Option<bool> {
    let name = path.file_name()?.to_str()?;
    let pid = name.rsplit_once(".partial-")?.1.parse::<u32>().ok()?;
    Some(Path::new(&format!("/proc/{pid}")).exists())
}

/// Whether someone holds the entry: its in-use lock (shared, by a run), a
/// workspace's build lock, or a live partial build.
fn held(kind: Kind, path: &Path) -> bool {
    if let Some(alive) = partial_build_alive(path) {
        return alive;
    }
    let lock_file = if kind == Kind::Workspace {
        path.join("lock")
    } else {
        in_use_file(path)
    };
    EntryLock::is_held(&lock_file)
}

/// Every entry of the cache at `root`.
pub fn entries(root: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let Ok(top) = std::fs::read_dir(root) else {
        return out;
    };
    let mut add = |kind: Kind, path: PathBuf| {
        let stamp = in_use_file(&path);
        let last_use = if stamp.exists() {
            modified(&stamp)
        } else {
            modified(&path)
        };
        out.push(Entry {
            kind,
            bytes: size_of(&path),
            last_use,
            in_use: held(kind, &path),
            debris: partial_build_alive(&path) == Some(false),
            path,
        });
    };
    for dir in top.flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        let (kind, children) = Kind::of_dir(&name);
        if !children {
            add(kind, dir.path());
            continue;
        }
        if let Ok(list) = std::fs::read_dir(dir.path()) {
            for child in list.flatten() {
                let child_name = child.file_name().to_string_lossy().into_owned();
                // Locks and seals beside entries are part of them.
                if child_name.ends_with(".lock")
                    || child_name.ends_with(IN_USE)
                    || child_name.ends_with(super::seal::SEAL_SUFFIX)
                {
                    continue;
                }
                add(kind, child.path());
            }
        }
    }
    out.sort_by(|a, b| a.kind.cmp(&b.kind).then(b.last_use.cmp(&a.last_use)));
    out
}

/// What `prune` may remove: the debris of killed builds, entries older
/// than `older_than`, then the least recently used until the cache is at
/// most `max_bytes`; never one in use, never the kind `Other`.
pub fn to_prune(
    entries: &[Entry],
    now: SystemTime,
    older_than: Option<Duration>,
    max_bytes: Option<u64>,
) -> Vec<PathBuf> {
    let prunable = |e: &&Entry| e.kind != Kind::Other && !e.in_use;
    let mut chosen: Vec<&Entry> = entries
        .iter()
        .filter(prunable)
        .filter(|e| {
            e.debris
                || older_than.is_some_and(|age| {
                    now.duration_since(e.last_use)
                        .is_ok_and(|since| since >= age)
                })
        })
        .collect();
    if let Some(max) = max_bytes {
        let mut total: u64 = entries.iter().map(|e| e.bytes).sum::<u64>()
            - chosen.iter().map(|e| e.bytes).sum::<u64>();
        let mut oldest_first: Vec<&Entry> = entries
            .iter()
            .filter(prunable)
            .filter(|e| !chosen.iter().any(|c| c.path == e.path))
            .collect();
        oldest_first.sort_by_key(|e| e.last_use);
        for e in oldest_first {
            if total <= max {
                break;
            }
            total -= e.bytes;
            chosen.push(e);
        }
    }
    chosen.into_iter().map(|e| e.path.clone()).collect()
}

/// Removes one entry, after checking again, under its lock, that nobody
/// holds it.
pub fn remove(entry: &Entry) -> Result<bool> {
    if partial_build_alive(&entry.path) == Some(true) {
        return Ok(false);
    }
    let lock_file = if entry.kind == Kind::Workspace {
        entry.path.join("lock")
    } else {
        in_use_file(&entry.path)
    };
    // Taken and kept while removing, so no run starts using it meanwhile.
    let Some(_lock) = EntryLock::exclusive_now(&lock_file)? else {
        return Ok(false);
    };
    if entry.path.is_dir() {
        std::fs::remove_dir_all(&entry.path)
            .with_context(|| format!("removing {}", entry.path.display()))?;
    } else {
        std::fs::remove_file(&entry.path)
            .with_context(|| format!("removing {}", entry.path.display()))?;
        let _ = std::fs::remove_file(super::seal::seal_path(&entry.path));
        let _ = std::fs::remove_file(&lock_file);
    }
    Ok(true)
}

/// One entry as `cache --verify` found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub path: PathBuf,
    pub verdict: super::seal::SealVerdict,
}

/// Checks every sealed entry of the cache at `root` (kernels, guest
/// images, snapshots of commits, compile trees, the profile plugin)
/// against its seals, sealing
/// those made before seals were kept; the debris of killed builds is
/// reported as damaged (`cache prune` removes it).
pub fn verify(root: &Path) -> Vec<Checked> {
    use super::seal::{check_file_entry, SealVerdict};
    let mut out = Vec::new();
    let children = |dir: &str| -> Vec<PathBuf> {
        let mut list: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        list.sort();
        list
    };
    let debris = |path: &Path| {
        (partial_build_alive(path) == Some(false)).then(|| Checked {
            path: path.to_path_buf(),
            verdict: SealVerdict::Damaged(
                "what a killed build left; `markbench cache prune` removes it".into(),
            ),
        })
    };
    let is_partial = |path: &Path| partial_build_alive(path).is_some();
    for path in children("kernels") {
        if let Some(d) = debris(&path) {
            out.push(d);
        } else if path.is_dir() && !is_partial(&path) {
            let (_, verdict) = super::kernel::check_entry(&path);
            out.push(Checked { path, verdict });
        }
    }
    for path in children("initramfs") {
        let name = path.to_string_lossy();
        if let Some(d) = debris(&path) {
            out.push(d);
        } else if name.ends_with(".cpio") && !is_partial(&path) {
            let verdict = check_file_entry(&path);
            out.push(Checked { path, verdict });
        }
    }
    for path in children("guest-arm64") {
        let is_agent = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("agent-"));
        if let Some(d) = debris(&path) {
            out.push(d);
        } else if is_agent && !is_partial(&path) && !path.to_string_lossy().ends_with(".seal") {
            let verdict = check_file_entry(&path);
            out.push(Checked { path, verdict });
        }
    }
    for path in children("src") {
        let tree = path.join("linux");
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("rev-"))
            && tree.is_dir()
        {
            let verdict = super::seal::check_tree(&tree, &path.join("tree.seal"));
            out.push(Checked { path, verdict });
        }
    }
    for path in children("compile-tree") {
        if path.is_dir() {
            let (_, verdict) = super::compile_tree::check_entry(&path);
            out.push(Checked { path, verdict });
        }
    }
    for path in children("qemu-builds") {
        if let Some(d) = debris(&path) {
            out.push(d);
        } else if !is_partial(&path) {
            let binary = path.join(super::qemu_build::BINARY);
            if binary.is_file() {
                let verdict = check_file_entry(&binary);
                out.push(Checked { path, verdict });
            }
        }
    }
    for dir in children("plugin") {
        let path = dir.join(super::plugin::PLUGIN_FILE);
        if path.is_file() {
            let verdict = check_file_entry(&path);
            out.push(Checked { path, verdict });
        }
    }
    out
}

/// Where the cycle model's calibrated profile of `cpu` is kept.
pub fn model_profile(cpu: &str) -> PathBuf {
    root()
        .join(crate::base::calibration::PROFILE_DIR)
        .join(crate::base::calibration::file_name(cpu))
}

/// The cache's root, for the listing's header.
pub fn root() -> PathBuf {
    super::Cache::here().root().to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;

    fn entry(kind: Kind, name: &str, mib: u64, days_ago: u64, in_use: bool) -> Entry {
        Entry {
            kind,
            path: PathBuf::from(name),
            bytes: mib << 20,
            last_use: SystemTime::UNIX_EPOCH + Duration::from_secs((100 - days_ago) * 86_400),
            in_use,
            debris: false,
        }
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(100 * 86_400)
    }

    #[test]
    fn prune_takes_the_old_then_the_least_recently_used_but_never_what_is_held() {
        let entries = vec![
            entry(Kind::Kernel, "k-old", 150, 40, false),
            entry(Kind::Kernel, "k-held", 150, 50, true),
            entry(Kind::Workspace, "w", 1700, 10, false),
            entry(Kind::Source, "rev-a", 1500, 5, false),
            entry(Kind::GuestImage, "base.cpio", 7, 1, false),
            entry(Kind::Other, "ccache", 500, 90, false),
        ];
        let by_age = to_prune(
            &entries,
            now(),
            Some(Duration::from_secs(30 * 86_400)),
            None,
        );
        assert_eq!(by_age, [PathBuf::from("k-old")]);
        // 4007 MiB in all, 650 of them held or never pruned: at most 3 GiB
        // takes the two least recently used.
        let by_size = to_prune(&entries, now(), None, Some(3 << 30));
        assert_eq!(by_size, [PathBuf::from("k-old"), PathBuf::from("w")]);
        let both = to_prune(
            &entries,
            now(),
            Some(Duration::from_secs(30 * 86_400)),
            Some(1 << 30),
        );
        assert_eq!(
            both,
            [
                PathBuf::from("k-old"),
                PathBuf::from("w"),
                PathBuf::from("rev-a")
            ]
        );
        assert!(to_prune(&entries, now(), None, None).is_empty());
    }

    #[test]
    fn an_entry_in_use_by_a_run_is_listed_as_held_and_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = dir.path().join("kernels").join("markers-off-0123");
        std::fs::create_dir_all(&kernel).unwrap();
        std::fs::write(kernel.join("bzImage"), vec![0u8; 4096]).unwrap();
        let ws = dir.path().join("workspaces").join("markers-off-4567");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(dir.path().join("workspaces").join("x.lock"), b"").unwrap();
        let listed = entries(dir.path());
        assert_eq!(listed.len(), 2, "{listed:?}");
        let k = listed.iter().find(|e| e.kind == Kind::Kernel).unwrap();
        assert!(!k.in_use);
        assert!(k.bytes >= 4096);
        // A run holds it (as `used` does, from another open file).
        let holder = File::create(kernel.join(IN_USE)).unwrap();
        holder.lock_shared().unwrap();
        let k = entries(dir.path())
            .into_iter()
            .find(|e| e.kind == Kind::Kernel)
            .unwrap();
        assert!(k.in_use);
        assert!(!remove(&Entry {
            in_use: false,
            ..k.clone()
        })
        .unwrap());
        assert!(kernel.join("bzImage").exists());
        drop(holder);
        assert!(remove(&k).unwrap());
        assert!(!kernel.exists());
        // A workspace is held by its build lock.
        let build = File::create(ws.join("lock")).unwrap();
        build.lock().unwrap();
        let w = entries(dir.path()).into_iter().next().unwrap();
        assert!(w.in_use && w.kind == Kind::Workspace);
    }
}
