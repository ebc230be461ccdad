//! `--patch FILE…` and `--revs A,B | BASE..TIP`: the kernels of a run made
//! from the kernel source instead of the suite's variants. The tree against
//! the tree with the patches; two revisions; or a series, its base then one
//! kernel per commit. Every kernel is built with the suite's baseline
//! fragment and command line, so the source is the only difference.

use crate::base::error::InputError;
use crate::base::error::Result;
use crate::guest::images::source::{self, KernelSource, RevSelection};
use crate::record::Overrides;
use crate::stages::suite::{Suite, Variant};

/// Whether `overrides` make a patch series of the run: its kernels are then
/// also compared each with the one before.
pub fn is_series(overrides: &Overrides) -> bool {
    overrides
        .revs
        .as_ref()
        .is_some_and(crate::record::RevSelection::is_series)
}

/// `file` with its variants replaced as `overrides.patches` / `.revs` ask;
/// `file` itself when they ask for neither.
pub fn apply(file: &Suite, overrides: &Overrides, source: &KernelSource) -> Result<Suite> {
    if overrides.patches.is_empty() && overrides.revs.is_none() {
        return Ok(file.clone());
    }
    if !overrides.patches.is_empty() && overrides.revs.is_some() {
        return Err(InputError::new(
            "give --patch (the tree against the tree with patches) or --revs (two revisions or \
             a series), not both",
        )
        .into());
    }
    let mut suite = file.clone();
    let mut baseline = suite.variants[0].clone();
    baseline.source = None;
    baseline.rev = None;
    baseline.patches = Vec::new();
    if !overrides.patches.is_empty() {
        for p in &overrides.patches {
            if !p.is_file() {
                return Err(
                    InputError::new(format!("--patch {}: no such file", p.display())).into(),
                );
            }
        }
        let mut candidate = baseline.clone();
        baseline.name = "unpatched".into();
        candidate.name = "patched".into();
        candidate.patches = overrides.patches.clone();
        suite.variants = vec![baseline, candidate];
        return Ok(suite);
    }
    let Some(selection) = overrides.revs.clone().map(RevSelection::from) else {
        return Ok(suite);
    };
    let revs = selection.to_string();
    let KernelSource::Tree(repo) = source else {
        return Err(InputError::new(format!(
            "--revs {revs}: the kernel source {} is a tarball; give a git tree with \
             --kernel-source",
            source.path().display()
        ))
        .into());
    };
    let commits = source::commits(repo, &selection)?;
    if let [a, b] = &commits[..] {
        if a.id == b.id {
            return Err(InputError::new(format!(
                "--revs {revs}: both name commit {}",
                a.short_id()
            ))
            .into());
        }
    }
    suite.variants = at_commits(
        &baseline,
        commits.iter().map(|c| (c.short_id(), c.id.as_str())),
    );
    Ok(suite)
}

/// One variant per commit `(short id, id)` of the run's kernel source, each
/// built and booted as `like` (its fragment and command line), named by
/// the commit's short id, with no source or patches of its own.
pub fn at_commits<'a>(
    like: &Variant,
    commits: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<Variant> {
    commits
        .into_iter()
        .map(|(short, id)| {
            let mut v = like.clone();
            v.name = short.to_string();
            v.rev = Some(id.to_string());
            v.source = None;
            v.patches = Vec::new();
            v
        })
        .collect()
}
