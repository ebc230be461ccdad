//! What differs in the source between two kernels, as a kernel developer
//! reads it.

use super::*;

/// What differs in the source between the baseline's kernel and a
/// candidate's, as a kernel developer reads it: the commits between two
/// revisions of one tree (`git log --oneline`) and `git diff --stat`, then
/// the candidate's patches with their hashes. `None` when both come from
/// the same source, revision and patches.
pub fn source_difference(base: &ResolvedOrigin, cand: &ResolvedOrigin) -> Result<Option<String>> {
    let mut text = String::new();
    if let (Some(a), Some(b), KernelSource::Tree(repo)) = (&base.commit, &cand.commit, &cand.source)
    {
        if a.id != b.id && base.source.path() == cand.source.path() {
            let range = format!("{}..{}", a.id, b.id);
            text.push_str(&format!("commits {}..{}:\n", a.short_id(), b.short_id()));
            text.push_str(&git(
                repo,
                &["log", "--oneline", "--abbrev=12", "--no-decorate", &range],
            )?);
            text.push('\n');
            text.push_str(&git(repo, &["diff", "--stat=72", &a.id, &b.id])?);
        }
    }
    let base_patches: Vec<&PatchRecord> = base.patches.iter().map(|(_, r)| r).collect();
    let extra: Vec<&PatchRecord> = cand
        .patches
        .iter()
        .map(|(_, r)| r)
        .filter(|r| !base_patches.contains(r))
        .collect();
    if !extra.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("patches applied on top:\n");
        for p in extra {
            text.push_str(&format!("  {} (sha256 {})\n", p.name, p.sha256.short()));
        }
    }
    Ok((!text.trim().is_empty()).then_some(text))
}
