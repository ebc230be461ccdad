//! `markbench cache`: what the cache holds by kind, with sizes and last use;
//! `cache prune` frees space, `cache --verify` checks every sealed entry
//! ([`crate::guest::images::cache`]).

use super::status::ExitsWith;
use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::guest::images::cache::{self, Entry};
use crate::stages::report::cache::{self as report, PruneAction};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// What `cache prune` was asked to remove.
#[derive(Debug, Clone, Default)]
pub struct Prune {
    /// Entries last used longer ago than this.
    pub older_than: Option<Duration>,
    /// Then the least recently used until the cache holds at most this many bytes.
    pub max_size: Option<u64>,
    /// Print what would be removed, remove nothing.
    pub dry_run: bool,
}

/// The listing, `prune`, or with `verify` the check of every sealed entry.
pub fn run(verify: bool, prune: Option<Prune>) -> Result<ExitStatus> {
    let root = cache::root();
    if verify {
        if prune.is_some() {
            return Err(crate::base::error::InputError::new(
                "cache: --verify checks the cache; give it without prune",
            )
            .into());
        }
        return Ok(verify_cache(&root));
    }
    let entries = cache::entries(&root);
    match prune {
        None => list(&root, &entries),
        Some(prune) => remove(&root, &entries, &prune)?,
    }
    Ok(ExitStatus::Success)
}

/// The listing: every entry by kind, with its size and last use.
fn list(root: &Path, entries: &[Entry]) {
    print!("{}", report::listing(root, entries, SystemTime::now()));
}

/// `cache prune`: removes (or with `dry_run` names) what `prune` chooses,
/// one line each, and what that freed.
fn remove(root: &Path, entries: &[Entry], prune: &Prune) -> Result<()> {
    let now = SystemTime::now();
    let total: u64 = entries.iter().map(|e| e.bytes).sum();
    let chosen = cache::to_prune(entries, now, prune.older_than, prune.max_size);
    let mut freed = 0;
    for e in entries.iter().filter(|e| chosen.contains(&e.path)) {
        let action = if prune.dry_run {
            PruneAction::WouldRemove
        } else if cache::remove(e)? {
            PruneAction::Removed
        } else {
            PruneAction::Kept
        };
        if action != PruneAction::Kept {
            freed += e.bytes;
        }
        println!("{}", report::pruned(root, e, action, now));
    }
    println!("{}", report::freed(prune.dry_run, freed, total));
    Ok(())
}

/// `cache --verify`: one line per sealed entry, and the exit status
/// ([`super::status`]).
fn verify_cache(root: &Path) -> ExitStatus {
    use crate::guest::images::seal::SealVerdict;
    let checked = cache::verify(root);
    for c in &checked {
        println!("{}", report::verified(root, c));
    }
    let damaged = checked
        .iter()
        .filter(|c| matches!(c.verdict, SealVerdict::Damaged(_)))
        .count();
    let summary = report::verify_summary(root, checked.len(), damaged);
    if damaged == 0 {
        crate::base::message::note(summary);
    } else {
        crate::base::message::error(summary);
    }
    checked.status()
}
