//! The cache's listing, what `cache prune` removes and what `cache --verify`
//! found, worded for the terminal from the cache's entries.

use crate::guest::images::cache::{Checked, Entry, Kind};
use crate::guest::images::seal::SealVerdict;
use std::fmt::Write as _;
use std::path::Path;
use std::time::SystemTime;

/// A size in binary units (`1.5 GiB`).
fn size(bytes: u64) -> String {
    bytesize::ByteSize(bytes).display().iec().to_string()
}

/// How long before `now` the time `t` was, in words.
fn ago(t: SystemTime, now: SystemTime) -> String {
    let since = now.duration_since(t).unwrap_or_default().as_secs();
    match since {
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s if s < 172_800 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

/// An entry's path under the cache's root.
fn under<'a>(root: &Path, path: &'a Path) -> std::path::Display<'a> {
    path.strip_prefix(root).unwrap_or(path).display()
}

/// The listing of the cache at `root`: every entry by kind, with its size
/// and last use before `now`.
pub fn listing(root: &Path, entries: &[Entry], now: SystemTime) -> String {
    let total: u64 = entries.iter().map(|e| e.bytes).sum();
    let mut s = format!("cache: {} ({} in all)\n", root.display(), size(total));
    let kinds = [
        Kind::Kernel,
        Kind::Workspace,
        Kind::Source,
        Kind::GuestImage,
        Kind::Qemu,
        Kind::Other,
    ];
    for kind in kinds {
        let of: Vec<_> = entries.iter().filter(|e| e.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "\n{} ({}, {}){}",
            kind.as_str(),
            of.len(),
            size(of.iter().map(|e| e.bytes).sum()),
            if kind == Kind::Other {
                ", never pruned"
            } else {
                ""
            }
        );
        for e in of {
            let _ = writeln!(
                s,
                "  {:>10}  {:<14}  {}{}",
                size(e.bytes),
                ago(e.last_use, now),
                under(root, &e.path),
                if e.in_use {
                    "  (in use)"
                } else if e.debris {
                    "  (what a killed build left)"
                } else {
                    ""
                }
            );
        }
    }
    s
}

/// What `cache prune` did with an entry it chose.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PruneAction {
    /// A dry run: it would be removed.
    WouldRemove,
    Removed,
    /// A running markbench holds it.
    Kept,
}

/// One line of `cache prune`: the entry and what was done with it.
pub fn pruned(root: &Path, e: &Entry, action: PruneAction, now: SystemTime) -> String {
    let shown = under(root, &e.path);
    let why = if e.debris {
        format!("{}, what a killed build left", size(e.bytes))
    } else {
        format!("{}, last used {}", size(e.bytes), ago(e.last_use, now))
    };
    match action {
        PruneAction::WouldRemove => format!("would remove {shown} ({why})"),
        PruneAction::Removed => format!("removed {shown} ({why})"),
        PruneAction::Kept => format!("kept {shown}: a running markbench holds it"),
    }
}

/// `cache prune`'s last line: what it freed (or would) of the cache's total.
pub fn freed(dry_run: bool, freed: u64, total: u64) -> String {
    format!(
        "{} {} of {}",
        if dry_run { "would free" } else { "freed" },
        size(freed),
        size(total)
    )
}

/// One line of `cache --verify`: a sealed entry and its verdict.
pub fn verified(root: &Path, c: &Checked) -> String {
    let shown = under(root, &c.path);
    match &c.verdict {
        SealVerdict::Sound => format!("ok       {shown}"),
        SealVerdict::SealedNow => {
            format!("sealed   {shown} (made before seals were kept; checked and sealed now)")
        }
        SealVerdict::Damaged(why) => format!("DAMAGED  {shown}: {why}"),
    }
}

/// `cache --verify`'s closing line: how many entries were checked and how
/// many of them are damaged.
pub fn verify_summary(root: &Path, checked: usize, damaged: usize) -> String {
    if damaged == 0 {
        format!(
            "cache {}: {checked} entries checked, all sound",
            root.display()
        )
    } else {
        format!(
            "cache {}: {damaged} of {checked} entries damaged; the next run that needs one \
             builds it again",
            root.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn entry(kind: Kind, path: &str, bytes: u64, age_s: u64, now: SystemTime) -> Entry {
        Entry {
            kind,
            path: Path::new("/c").join(path),
            bytes,
            last_use: now - Duration::from_secs(age_s),
            in_use: false,
            debris: false,
        }
    }

    #[test]
    fn the_listing_groups_entries_by_kind_with_their_sizes_and_ages() {
        let now = SystemTime::now();
        let mut held = entry(Kind::Kernel, "kernels/b", 2048, 7200, now);
        held.in_use = true;
        let entries = [
            entry(Kind::Kernel, "kernels/a", 1024, 30, now),
            held,
            entry(Kind::Other, "x", 10, 3 * 86_400, now),
        ];
        assert_eq!(
            listing(Path::new("/c"), &entries, now),
            "cache: /c (3.0 KiB in all)\n\
             \n\
             kernels (2, 3.0 KiB)\n\
             \x20    1.0 KiB  30 s ago        kernels/a\n\
             \x20    2.0 KiB  2 h ago         kernels/b  (in use)\n\
             \n\
             other (1, 10 B), never pruned\n\
             \x20       10 B  3 days ago      x\n"
        );
    }

    #[test]
    fn a_pruned_entry_says_what_was_done_and_why_it_was_chosen() {
        let now = SystemTime::now();
        let mut e = entry(Kind::Workspace, "ws/k", 1 << 30, 600, now);
        let root = Path::new("/c");
        assert_eq!(
            pruned(root, &e, PruneAction::WouldRemove, now),
            "would remove ws/k (1.0 GiB, last used 10 min ago)"
        );
        e.debris = true;
        assert_eq!(
            pruned(root, &e, PruneAction::Removed, now),
            "removed ws/k (1.0 GiB, what a killed build left)"
        );
        assert_eq!(
            freed(true, 1 << 30, 1 << 31),
            "would free 1.0 GiB of 2.0 GiB"
        );
    }
}
