//! `markbench cache`: what the cache holds by kind, with sizes and last use;
//! `cache prune` frees space, `cache --verify` checks every sealed entry
//! ([`crate::guest::images::cache`]).

use super::status::ExitsWith;
use crate::base::exit::ExitStatus;
use crate::guest::images::cache::{self, Entry, Kind};
use anyhow::Result;
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

/// A size in binary units (`1.5 GiB`).
fn size(bytes: u64) -> String {
    bytesize::ByteSize(bytes).display().iec().to_string()
}

/// How long ago `t` was, in words.
fn ago(t: SystemTime) -> String {
    let since = SystemTime::now()
        .duration_since(t)
        .unwrap_or_default()
        .as_secs();
    match since {
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s if s < 172_800 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

/// The listing: every entry by kind, with its size and last use.
fn list(root: &Path, entries: &[Entry]) {
    let total: u64 = entries.iter().map(|e| e.bytes).sum();
    println!("cache: {} ({} in all)", root.display(), size(total));
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
        println!(
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
            println!(
                "  {:>10}  {:<14}  {}{}",
                size(e.bytes),
                ago(e.last_use),
                e.path.strip_prefix(root).unwrap_or(&e.path).display(),
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
}

/// `cache prune`: removes (or with `dry_run` names) what `prune` chooses,
/// one line each, and what that freed.
fn remove(root: &Path, entries: &[Entry], prune: &Prune) -> Result<()> {
    let total: u64 = entries.iter().map(|e| e.bytes).sum();
    let chosen = cache::to_prune(entries, SystemTime::now(), prune.older_than, prune.max_size);
    let mut freed = 0;
    for e in entries.iter().filter(|e| chosen.contains(&e.path)) {
        let shown = e.path.strip_prefix(root).unwrap_or(&e.path).display();
        let why = if e.debris {
            format!("{}, what a killed build left", size(e.bytes))
        } else {
            format!("{}, last used {}", size(e.bytes), ago(e.last_use))
        };
        if prune.dry_run {
            println!("would remove {shown} ({why})");
            freed += e.bytes;
        } else if cache::remove(e)? {
            println!("removed {shown} ({why})");
            freed += e.bytes;
        } else {
            println!("kept {shown}: a running markbench holds it");
        }
    }
    println!(
        "{} {} of {}",
        if prune.dry_run { "would free" } else { "freed" },
        size(freed),
        size(total)
    );
    Ok(())
}

/// `cache --verify`: one line per sealed entry, and the exit status
/// ([`super::status`]).
fn verify_cache(root: &Path) -> ExitStatus {
    use crate::guest::images::seal::SealVerdict;
    let checked = cache::verify(root);
    let mut damaged = 0;
    for c in &checked {
        let shown = c.path.strip_prefix(root).unwrap_or(&c.path).display();
        match &c.verdict {
            SealVerdict::Sound => println!("ok       {shown}"),
            SealVerdict::SealedNow => {
                println!("sealed   {shown} (made before seals were kept; checked and sealed now)")
            }
            SealVerdict::Damaged(why) => {
                damaged += 1;
                println!("DAMAGED  {shown}: {why}");
            }
        }
    }
    if damaged == 0 {
        crate::base::message::note(format_args!(
            "cache {}: {} entries checked, all sound",
            root.display(),
            checked.len()
        ));
    } else {
        crate::base::message::error(format_args!(
            "cache {}: {damaged} of {} entries damaged; the next run that needs one builds it again",
            root.display(),
            checked.len()
        ));
    }
    checked.status()
}
