//! `markbench plan --shards N`: the split of a suite over N machines
//! ([`crate::stages::shard`]), printed and optionally written.

use super::SuiteChoice;
use crate::base::error::{Context, Result};
use crate::base::exit::ExitStatus;
use crate::record::Overrides;
use std::path::Path;

/// Prints the split of `suite` (with `overrides`) into `shards` shards and
/// writes it to `out` (TOML, or JSON when it ends in .json).
pub fn run(
    suite: &SuiteChoice,
    overrides: &Overrides,
    shards: u32,
    out: Option<&Path>,
) -> Result<ExitStatus> {
    let (file, _) = suite.load()?;
    let suite = overrides.apply(&file)?;
    let plan = crate::stages::shard::plan(&suite, &overrides.describe(), shards)?;
    print!("{}", crate::stages::shard::describe(&plan));
    if let Some(out) = out {
        let text = if out.extension().is_some_and(|e| e == "json") {
            serde_json::to_string_pretty(&plan)? + "\n"
        } else {
            toml::to_string(&plan)?
        };
        std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
        println!("written to {}", out.display());
    }
    Ok(ExitStatus::Success)
}
