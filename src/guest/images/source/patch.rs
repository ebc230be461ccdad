//! Patches: the files they touch, applied to a tree, and a failed hunk
//! found again in the patch to name it.

use super::*;

/// The paths a patch names (old and new), as `git apply --numstat` reads them.
pub(super) fn touched_files(patch: &Path) -> Result<Vec<String>> {
    let out = Command::new("git")
        .args(["apply", "--numstat", "-z"])
        .arg(patch)
        .env("GIT_CEILING_DIRECTORIES", "/")
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .context("starting git apply")?;
    if !out.status.success() {
        return Err(InputError::new(format!(
            "patch {}: not a patch git can read: {}",
            patch.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
        .into());
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut files = Vec::new();
    let mut tokens = text.split('\0').filter(|t| !t.is_empty());
    while let Some(token) = tokens.next() {
        let mut fields = token.splitn(3, '\t');
        let (_, _, path) = (fields.next(), fields.next(), fields.next());
        match path {
            // A rename: the old and the new path follow as tokens of their own.
            Some("") => files.extend(tokens.by_ref().take(2).map(str::to_string)),
            Some(path) => files.push(path.to_string()),
            None => {}
        }
    }
    if files.is_empty() {
        return Err(InputError::new(format!("patch {}: holds no diff", patch.display())).into());
    }
    Ok(files)
}

/// `git apply` of one patch inside `tree`; on failure, a message naming
/// the patch, the file and the hunk.
pub(super) fn apply(tree: &Path, patch: &Path) -> std::result::Result<(), String> {
    let patch = std::fs::canonicalize(patch).unwrap_or_else(|_| patch.to_path_buf());
    let out = Command::new("git")
        .args(["apply", "-v"])
        .arg(&patch)
        .current_dir(tree)
        // Outside a repository git apply patches the files below the
        // current directory; never let it find one above the tree.
        .env(
            "GIT_CEILING_DIRECTORIES",
            tree.parent().unwrap_or(Path::new("/")),
        )
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("starting git apply: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&patch).unwrap_or_default();
    Err(explain_failure(&patch, &text, &stderr))
}

/// Turns `git apply -v`'s complaint into one message: the patch, then the
/// file and the hunk (its number in that file, its `@@` header and its line
/// in the patch) for a hunk that does not match, or git's own words.
pub fn explain_failure(patch: &Path, text: &str, stderr: &str) -> String {
    let patch_name = patch.display();
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("error: patch failed: ") else {
            continue;
        };
        let Some((file, old_line)) = rest.rsplit_once(':') else {
            continue;
        };
        let Ok(old_line) = old_line.trim().parse::<u64>() else {
            continue;
        };
        if let Some(hunk) = find_hunk(text, file, old_line) {
            return format!(
                "{patch_name}:{}: patch does not apply: {file}: hunk #{} ({}) does not match \
                 the source",
                hunk.patch_line, hunk.number, hunk.header
            );
        }
        return format!(
            "{patch_name}: patch does not apply: {file}: the hunk at line {old_line} does not \
             match the source"
        );
    }
    let reasons: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error: "))
        .collect();
    format!(
        "{patch_name}: patch does not apply: {}",
        if reasons.is_empty() {
            stderr.trim().to_string()
        } else {
            reasons.join("; ")
        }
    )
}

/// A hunk of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Its number among the hunks of its file, from 1.
    pub number: usize,
    /// Its `@@ -a,b +c,d @@` line.
    pub header: String,
    /// The header's line in the patch file, from 1.
    pub patch_line: usize,
}

/// The hunk of `file` in a unified diff whose old range starts at `old_line`.
pub fn find_hunk(text: &str, file: &str, old_line: u64) -> Option<Hunk> {
    let mut in_file = false;
    let mut number = 0;
    for (i, line) in text.lines().enumerate() {
        if let Some(path) = line.strip_prefix("+++ ") {
            let path = path.split('\t').next().unwrap_or(path).trim();
            // `b/path` for git and `diff -u a b` alike (-p1).
            let stripped = path.split_once('/').map_or(path, |(_, p)| p);
            in_file = stripped == file;
            number = 0;
            continue;
        }
        if line.starts_with("diff ") {
            in_file = false;
            continue;
        }
        if !in_file {
            continue;
        }
        if let Some(range) = line.strip_prefix("@@ -") {
            number += 1;
            let start = range
                .split([',', ' '])
                .next()
                .and_then(|s| s.parse::<u64>().ok());
            if start == Some(old_line) {
                return Some(Hunk {
                    number,
                    header: line.to_string(),
                    patch_line: i + 1,
                });
            }
        }
    }
    None
}
