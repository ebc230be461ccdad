//! A commit's snapshot in the cache (`git archive`, sealed) and the copies
//! of trees and files a patched tree is made of.

use super::*;

/// Marks a finished tree in the cache.
pub(super) const DONE: &str = ".markbench-tree";

/// Where the snapshot of a commit is kept in the cache: `src/rev-<commit>`
/// (the tree in its `linux/`).
pub fn snapshot_dir(commit: &str) -> PathBuf {
    Cache::here().snapshot(commit)
}

/// The seal of a commit's snapshot ([`crate::guest::images::seal::TreeSeal`]), beside its tree.
pub fn snapshot_seal(commit: &str) -> PathBuf {
    snapshot_dir(commit).join("tree.seal")
}

/// The snapshot of a commit in the cache (`git archive`, made once),
/// checked against its seal at each use.
pub(super) fn snapshot(repo: &Path, commit: &str) -> Result<PathBuf> {
    let dir = snapshot_dir(commit).join("linux");
    let seal = snapshot_seal(commit);
    if dir.join(DONE).is_file() {
        match crate::guest::images::seal::check_tree(&dir, &seal) {
            SealVerdict::Sound | SealVerdict::SealedNow => {
                crate::guest::images::lock::used(&snapshot_dir(commit));
                return Ok(dir);
            }
            SealVerdict::Damaged(why) => {
                crate::base::message::warning(format_args!(
                    "cached snapshot {} is damaged ({why}): making it again",
                    dir.display()
                ));
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("removing {}", dir.display()))?;
            }
        }
    }
    let partial = dir.with_extension(format!("partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)?;
    crate::base::message::note(format_args!(
        "snapshot of {} at {} …",
        repo.display(),
        short_commit(commit)
    ));
    archive_into(repo, commit, &[], &partial)?;
    std::fs::write(partial.join(DONE), commit)?;
    crate::guest::images::seal::write_tree_seal(
        &crate::guest::images::seal::tree_seal_of(&partial),
        &seal,
    )?;
    if std::fs::rename(&partial, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    crate::guest::images::lock::used(&snapshot_dir(commit));
    Ok(dir)
}

/// `git archive COMMIT [-- PATHS] | tar -x -C DEST`.
pub(super) fn archive_into(repo: &Path, commit: &str, paths: &[String], dest: &Path) -> Result<()> {
    let mut archive = Command::new("git");
    archive
        .arg("-C")
        .arg(repo)
        .args(["--literal-pathspecs", "archive", "--format=tar", commit]);
    if !paths.is_empty() {
        archive.arg("--").args(paths);
    }
    let mut archive = archive
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .context("starting git archive")?;
    let stdout = archive.stdout.take().context("git archive's output")?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dest)
        .stdin(stdout)
        .status()
        .context("starting tar")?;
    let out = archive.wait_with_output()?;
    if !out.status.success() || !tar.success() {
        bail!(
            "git archive of {} at {commit} into {} failed: {}",
            repo.display(),
            dest.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Those of `files` that exist at `commit`, extracted into `dest`.
pub(super) fn copy_from_commit(
    repo: &Path,
    commit: &str,
    files: &[String],
    dest: &Path,
) -> Result<()> {
    let mut args = vec![
        "--literal-pathspecs",
        "ls-tree",
        "-r",
        "-z",
        "--name-only",
        commit,
        "--",
    ];
    args.extend(files.iter().map(String::as_str));
    let present: Vec<String> = git(repo, &args)?
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    if present.is_empty() {
        return Ok(());
    }
    archive_into(repo, commit, &present, dest)
}

/// A copy of a tree without its `.git`.
pub(super) fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let mut pack = Command::new("tar")
        .arg("-C")
        .arg(from)
        .args(["--exclude=./.git", "-cf", "-", "."])
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .context("starting tar")?;
    let stdout = pack.stdout.take().context("tar's output")?;
    let unpack = Command::new("tar")
        .arg("-C")
        .arg(to)
        .arg("-xf")
        .arg("-")
        .stdin(stdout)
        .status()
        .context("starting tar")?;
    if !pack.wait()?.success() || !unpack.success() {
        bail!("copying {} to {} failed", from.display(), to.display());
    }
    Ok(())
}
