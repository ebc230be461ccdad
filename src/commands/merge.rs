//! `markbench merge DIR…`: the run directories of every shard of a suite
//! joined into one run ([`crate::jobs::merge`]), its report rendered.

use super::status::ExitsWith;
use crate::base::error::Result;
use crate::base::exit::ExitStatus;
use crate::base::run_dir::RunDir;
use std::path::{Path, PathBuf};

/// Merges the shards in `dirs` into `out` (default: a new directory under
/// `reports`, [`merged_dir`]), prints what was merged, and ends as the
/// merged run does: incomplete when a shard was or a boot failed.
pub fn run(dirs: &[PathBuf], out: Option<PathBuf>, reports: &Path) -> Result<ExitStatus> {
    let out = match out {
        Some(out) => out,
        None => merged_dir(reports, dirs),
    };
    let merged = crate::jobs::merge::merge(dirs, &out)?;
    for w in &merged.warnings {
        crate::base::message::warning(format_args!("{w}"));
    }
    let failed = merged.meta.boots.iter().filter(|b| !b.ok()).count();
    println!(
        "merged {} shards ({} boots, {} failed) into {}",
        merged.meta.shards.len(),
        merged.meta.boots.len(),
        failed,
        out.display()
    );
    println!("report: {}", RunDir::new(&out).report().display());
    Ok(merged.status())
}

/// The default directory of a merged run: named after the first shard's suite.
fn merged_dir(reports: &Path, dirs: &[PathBuf]) -> PathBuf {
    let suite = dirs
        .first()
        .and_then(|d| crate::record::RunMeta::read(d).ok())
        .map_or_else(|| "merged".to_string(), |m| m.suite);
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    reports.join(format!("{stamp}-{suite}-merged"))
}
