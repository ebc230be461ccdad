//! One kind of lock for every cache entry: an advisory `flock` on a file
//! beside or inside the entry. A build holds it exclusively (others wait);
//! a run holds it shared while it uses the entry (pruning then leaves the
//! entry alone); pruning takes it exclusively without waiting. The kernel
//! drops it when the holder exits, killed or not, so no lock outlives its
//! process.

use crate::base::error::{Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A held lock; released when dropped.
#[derive(Debug)]
pub struct EntryLock {
    file: File,
    path: PathBuf,
}

impl EntryLock {
    fn open(path: &Path) -> Result<File> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        File::create(path).with_context(|| format!("creating {}", path.display()))
    }

    /// Takes the lock at `path` exclusively, waiting while another process
    /// holds it; says what it waits for.
    pub fn exclusive(path: &Path, waiting_for: &str) -> Result<EntryLock> {
        let file = EntryLock::open(path)?;
        if file.try_lock().is_err() {
            crate::base::message::note(format_args!("waiting for {waiting_for} …"));
            file.lock()
                .with_context(|| format!("locking {}", path.display()))?;
        }
        Ok(EntryLock {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Takes the lock at `path` exclusively if nobody holds it.
    pub fn exclusive_now(path: &Path) -> Result<Option<EntryLock>> {
        let file = EntryLock::open(path)?;
        Ok(file.try_lock().is_ok().then(|| EntryLock {
            file,
            path: path.to_path_buf(),
        }))
    }

    /// Takes the lock at `path` shared (several users at once), waiting
    /// while someone holds it exclusively.
    pub fn shared(path: &Path) -> Result<EntryLock> {
        let file = EntryLock::open(path)?;
        file.lock_shared()
            .with_context(|| format!("locking {}", path.display()))?;
        Ok(EntryLock {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Whether someone holds the lock at `path`, shared or not; a missing
    /// lock file is nobody's.
    pub fn is_held(path: &Path) -> bool {
        match File::open(path) {
            Ok(f) => {
                let free = f.try_lock().is_ok();
                let _ = f.unlock();
                !free
            }
            Err(_) => false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for EntryLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// The lock a user of an entry holds (shared) while it uses it, touched at
/// each use: inside an entry directory, or beside an entry file with this
/// suffix.
pub const IN_USE: &str = ".markbench-in-use";

/// The in-use lock of the entry at `path`.
pub fn in_use_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(IN_USE)
    } else {
        let mut name = path.as_os_str().to_owned();
        name.push(IN_USE);
        PathBuf::from(name)
    }
}

/// The locks this process holds on the entries it has used: kept until it
/// exits, as runs use their kernels and images until the end.
static HELD: Mutex<Vec<EntryLock>> = Mutex::new(Vec::new());

/// Records a use of the entry at `path` (a directory or file in the
/// cache): touches its in-use lock, which dates its last use, and holds the
/// lock against pruning until this process ends. Failing to do either only
/// weakens pruning, so it is not an error.
pub fn used(path: &Path) {
    if !path.exists() {
        return;
    }
    if let Ok(lock) = EntryLock::shared(&in_use_file(path)) {
        if let Ok(mut held) = HELD.lock() {
            held.push(lock);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exclusive_lock_excludes_and_a_shared_one_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry").join("lock");
        assert!(!EntryLock::is_held(&path));
        let held = EntryLock::exclusive(&path, "a test").unwrap();
        assert!(EntryLock::is_held(&path));
        assert!(EntryLock::exclusive_now(&path).unwrap().is_none());
        drop(held);
        assert!(!EntryLock::is_held(&path));
        let user = EntryLock::shared(&path).unwrap();
        assert!(EntryLock::is_held(&path));
        assert!(EntryLock::exclusive_now(&path).unwrap().is_none());
        drop(user);
        assert!(EntryLock::exclusive_now(&path).unwrap().is_some());
    }
}
