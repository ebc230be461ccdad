//! A release tarball unpacked into the cache, once, with its progress.

use super::*;

/// Unpacks `tarball` into `dest`, feeding tar through a pipe so the share
/// of the (compressed) file read so far is the step's progress.
pub(super) fn unpack(tarball: &Path, dest: &Path) -> Result<()> {
    let name = tarball.to_string_lossy();
    let filter = [
        (".xz", "-J"),
        (".txz", "-J"),
        (".gz", "-z"),
        (".tgz", "-z"),
        (".bz2", "-j"),
        (".zst", "--zstd"),
    ]
    .iter()
    .find(|(ext, _)| name.ends_with(ext))
    .map(|(_, flag)| *flag);
    let mut file =
        std::fs::File::open(tarball).with_context(|| format!("opening {}", tarball.display()))?;
    let size_mb = file.metadata()?.len().div_ceil(1 << 20);
    let mut tar = Command::new("tar");
    tar.arg("-x")
        .args(filter)
        .arg("-f")
        .arg("-")
        .arg("-C")
        .arg(dest);
    let mut child = tar
        .stdin(std::process::Stdio::piped())
        .spawn()
        .context("starting tar")?;
    let mut stdin = child.stdin.take().context("tar's input")?;
    let file_name = tarball
        .file_name()
        .map_or(name.to_string(), |n| n.to_string_lossy().into_owned());
    let mut step =
        crate::base::progress::Step::start(format!("unpacking {file_name}"), "MiB", Some(size_mb));
    let mut buffer = vec![0u8; 1 << 20];
    let mut read = 0u64;
    let fed: std::io::Result<()> = (|| {
        use std::io::{Read, Write};
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                return Ok(());
            }
            stdin.write_all(&buffer[..n])?;
            read += n as u64;
            step.set(read >> 20);
        }
    })();
    drop(stdin);
    step.finish();
    let status = child.wait().context("waiting for tar")?;
    if !status.success() {
        bail!("unpacking {} failed ({status})", tarball.display());
    }
    fed.with_context(|| format!("reading {} into tar", tarball.display()))
}

/// Unpacks a tarball into the cache once; returns the source tree.
pub(super) fn unpacked_tree(tarball: &Path, identity: &str) -> Result<PathBuf> {
    let dir = Cache::here().unpacked(key_of(&[("source", identity.as_bytes())]).as_str());
    let done = dir.join(".markbench-unpacked");
    if !done.exists() {
        let partial = dir.with_extension(format!("partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial)?;
        crate::base::message::note(format_args!("unpacking {} …", tarball.display()));
        unpack(tarball, &partial)?;
        std::fs::write(partial.join(".markbench-unpacked"), identity)?;
        if std::fs::rename(&partial, &dir).is_err() {
            // Another process unpacked it first; use theirs.
            let _ = std::fs::remove_dir_all(&partial);
        }
    }
    crate::guest::images::lock::used(&dir);
    // The tarball holds one top directory (e.g. linux-source-6.1).
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.join("Makefile").is_file() && path.join("Kconfig").is_file() {
            return Ok(path);
        }
    }
    bail!(
        "{}: no kernel tree inside the unpacked tarball",
        dir.display()
    )
}
