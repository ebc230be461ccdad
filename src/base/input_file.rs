//! Reading a file markbench did not just write itself (a run directory's
//! files, a suite, a cache entry's record): the one way in, bounded. A
//! path that is not a regular file (a FIFO, a device such as `/dev/zero`
//! behind a link, a directory) is refused by name before it is opened, so
//! nothing blocks on it or reads it forever, and a file larger than its
//! kind's bound is refused before a byte of it is held, so no file can make
//! markbench allocate without bound. Every refusal is an [`InputError`]
//! (exit status 2): the file is input to fix. So is a path that names no
//! file, or one the user may not read: what to fix is the path or the
//! file's permissions. A read the system fails (EIO from a failing disk,
//! a stale NFS handle, no memory) is no fault of the file's: an error of
//! the machinery (exit status 1) with the system's error kept as its
//! source, so `{:#}` shows it.

use crate::base::error::{Error, InputError, Result};
use std::io::Read;
use std::path::Path;

/// What a file is, and so how large it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `samples.csv`: one row per measured iteration; a long run of fast
    /// micro-benchmarks writes millions of rows (about 150 bytes each).
    Samples,
    /// A record written by markbench or a person: `meta.toml`, a suite,
    /// `kernel.toml`, `sizes.toml`, `gate.json`, a fragment.
    Record,
    /// Text a run keeps for the report: `diffconfig.txt`, the source
    /// difference with its patches, why a bisected commit is untestable.
    Text,
}

impl Bound {
    /// The largest file of this kind markbench reads, in bytes.
    pub const fn bytes(self) -> u64 {
        match self {
            Bound::Samples => 1 << 30,
            Bound::Record => 8 << 20,
            Bound::Text => 64 << 20,
        }
    }
}

/// Whether `path` may be read as a file of kind `bound`: it is a regular
/// file (links followed) no larger than the bound. The error names the
/// file and what it is instead.
pub fn check(path: &Path, bound: Bound) -> Result<u64> {
    let meta = std::fs::metadata(path).map_err(|e| cannot_read(path, e))?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(InputError::in_file(
            path,
            format_args!(
                "not a regular file ({}); markbench reads only regular files here",
                describe(&kind)
            ),
        )
        .into());
    }
    if meta.len() > bound.bytes() {
        return Err(too_large(path, meta.len(), bound).into());
    }
    Ok(meta.len())
}

/// The bytes of `path`, a file of kind `bound`.
pub fn read(path: &Path, bound: Bound) -> Result<Vec<u8>> {
    let len = check(path, bound)?;
    let file = std::fs::File::open(path).map_err(|e| cannot_read(path, e))?;
    // The file may grow between the check and the read: take one byte
    // past the bound to see it, never more.
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(bound.bytes() + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot_read(path, e))?;
    if bytes.len() as u64 > bound.bytes() {
        return Err(too_large(path, bytes.len() as u64, bound).into());
    }
    Ok(bytes)
}

/// The text of `path`, a file of kind `bound`, which must be UTF-8.
pub fn read_text(path: &Path, bound: Bound) -> Result<String> {
    let bytes = read(path, bound)?;
    String::from_utf8(bytes).map_err(|e| {
        let text = String::from_utf8_lossy(e.as_bytes());
        let offset = e.utf8_error().valid_up_to();
        InputError::at(path, &text, offset, "not text (invalid UTF-8)").into()
    })
}

/// Like [`read`], `None` when the file does not exist (an optional file
/// of a run directory); any other failure is still an error.
pub fn read_if_present(path: &Path, bound: Bound) -> Result<Option<Vec<u8>>> {
    if absent(path) {
        Ok(None)
    } else {
        read(path, bound).map(Some)
    }
}

/// Like [`read_text`], `None` when the file does not exist (an optional
/// file of a run directory); any other failure is still an error.
pub fn read_text_if_present(path: &Path, bound: Bound) -> Result<Option<String>> {
    if absent(path) {
        Ok(None)
    } else {
        read_text(path, bound).map(Some)
    }
}

/// Whether anything is at `path` (a link counts as what it is, not
/// followed). Only "not found" is absence: a stat that fails otherwise
/// (EIO, ENOTDIR, a name too long) says nothing about the file, so it is
/// an error naming it, classed as a failed read is (the machinery's for
/// EIO, input to fix for a path that cannot name a file), rather than a
/// file that is there passing for one that never was.
pub fn present(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(cannot_read(path, e)),
    }
}

/// Whether nothing is at `path`. Only "not found" is absence: a stat that
/// fails otherwise (EIO, EACCES on a directory above it) says nothing about
/// the file, so the read that follows is left to fail and say why, naming
/// the file, rather than a damaged run reading as one that never had it.
fn absent(path: &Path) -> bool {
    matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// `path` read as TOML into a `T`, a file of kind `bound`; what is wrong
/// with it is an input error at `file:line:col`, with `what` saying what
/// the file is ("run metadata", "size record").
pub fn read_toml<T: serde::de::DeserializeOwned>(
    path: &Path,
    bound: Bound,
    what: &str,
) -> Result<T> {
    let text = read_text(path, bound)?;
    Ok(parse_toml(path, &text, what)?)
}

/// `text`, the contents of `path`, parsed as TOML into a `T`; errors as
/// [`read_toml`]'s.
pub fn parse_toml<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
    what: &str,
) -> Result<T, InputError> {
    toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        InputError::at(
            path,
            text,
            offset,
            format_args!("malformed {what}: {}", e.message().trim_end()),
        )
    })
}

fn cannot_read(path: &Path, e: std::io::Error) -> Error {
    if is_input(&e) {
        InputError::in_file(path, format_args!("cannot be read: {e}")).into()
    } else {
        io_failure(e, format!("{}: cannot be read", path.display()))
    }
}

/// `e`, met opening or reading a file, as an error saying `what` failed
/// (rendered `what: e` either way): input to fix when the path or the
/// file's permissions are wrong, else a failure of the machinery with `e`
/// kept as its source.
pub fn io_failure(e: std::io::Error, what: impl std::fmt::Display) -> Error {
    if is_input(&e) {
        InputError::new(format!("{what}: {e}")).into()
    } else {
        Error::Machinery(anyhow::Error::new(e).context(what.to_string()))
    }
}

/// Whether an error opening or reading a file is the user's to fix: the
/// path names no file (or goes through a file, or a loop of links, or is
/// too long), or the file may not be read by this user. Permissions count
/// as input: the file was named by the user (or lies in a directory the
/// user named), the fix is theirs (`chmod`, another path), and running
/// again without it fails the same way. Anything else (EIO, ESTALE, ENOMEM,
/// EMFILE) is the system's.
fn is_input(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::ENAMETOOLONG | libc::EACCES)
    )
}

fn too_large(path: &Path, len: u64, bound: Bound) -> InputError {
    InputError::in_file(
        path,
        format_args!(
            "{len} bytes, more than the {} bytes markbench reads from a file of this kind",
            bound.bytes()
        ),
    )
}

fn describe(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Makes `path` a file whose read fails with EIO, as a failing disk's
/// does: a link to this process's own memory, a regular file whose offset
/// 0 is an address nothing is mapped at. Permissions cannot stand in for
/// it: tests run as root, which reads any file.
#[cfg(test)]
pub(crate) fn link_to_failing_read(path: &Path) {
    std::os::unix::fs::symlink("/proc/self/mem", path).unwrap();
}

/// A new directory under `root` whose own path a system call takes but
/// whose entries' paths are too long for one (PATH_MAX): a stat of
/// `meta.toml` in it fails with ENAMETOOLONG, not "not found", while the
/// directory itself lists and stats, as one a disk fails under would.
#[cfg(test)]
pub(crate) fn dir_whose_files_cannot_be_named(root: &Path) -> std::path::PathBuf {
    // The longest path a call takes, without its NUL, less room for a
    // short name ("/x") but not for "/meta.toml".
    let len = libc::PATH_MAX as usize - 1 - 5;
    let mut dir = root.to_path_buf();
    loop {
        let left = len - dir.as_os_str().len();
        if left == 0 {
            break;
        }
        // Each component is "/" and a name of 1 to 200 bytes; never leave
        // a single byte, which no component fits.
        let mut name = (left - 1).min(200);
        if left - 1 - name == 1 {
            name -= 1;
        }
        dir.push("d".repeat(name));
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_within_its_bound_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.toml");
        std::fs::write(&path, "a = 1\n").unwrap();
        assert_eq!(read_text(&path, Bound::Record).unwrap(), "a = 1\n");
        assert_eq!(
            read_text_if_present(&dir.path().join("absent"), Bound::Record).unwrap(),
            None
        );
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let zero = dir.path().join("samples.csv");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read(&zero, Bound::Samples).unwrap_err().to_string();
        assert!(
            e.contains("samples.csv: not a regular file (a character device)"),
            "{e}"
        );
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&fifo, Bound::Record).unwrap_err().to_string();
        assert!(e.contains("(a FIFO)"), "{e}");
        let e = read(dir.path(), Bound::Record).unwrap_err().to_string();
        assert!(e.contains("(a directory)"), "{e}");
    }

    #[test]
    fn a_file_over_its_bound_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.toml");
        let file = std::fs::File::create(&path).unwrap();
        // Sparse: no disk space, only a length.
        file.set_len(Bound::Record.bytes() + 1).unwrap();
        let e = read(&path, Bound::Record).unwrap_err().to_string();
        assert!(e.contains("more than the"), "{e}");
    }

    #[test]
    fn text_that_is_not_utf8_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.toml");
        std::fs::write(&path, b"a = 1\nb = \xff\n").unwrap();
        let e = read_text(&path, Bound::Record).unwrap_err().to_string();
        assert!(e.contains("meta.toml:2:5: not text"), "{e}");
    }

    #[test]
    fn a_missing_file_is_input_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(&dir.path().join("meta.toml"), Bound::Record).unwrap_err();
        assert!(is_input_error(&e), "{e:#}");
        let text = format!("{e:#}");
        assert!(
            text.contains("meta.toml: cannot be read: No such file"),
            "{text}"
        );
        let Error::Input(input) = e else {
            panic!("not input")
        };
        assert_eq!(
            input.file.as_deref(),
            Some(dir.path().join("meta.toml").as_path())
        );
    }

    #[test]
    fn a_failing_disk_is_the_machinery_with_its_error_kept() {
        let eio = std::io::Error::from_raw_os_error(libc::EIO);
        let e = cannot_read(Path::new("runs/a/samples.csv"), eio);
        assert!(!is_input_error(&e), "{e:#}");
        let source = e
            .machinery()
            .expect("the machinery's")
            .chain()
            .find_map(|c| c.downcast_ref::<std::io::Error>())
            .expect("the system's error is kept");
        assert_eq!(source.raw_os_error(), Some(libc::EIO));
        let text = format!("{e:#}");
        assert_eq!(
            text,
            format!(
                "runs/a/samples.csv: cannot be read: {}",
                std::io::Error::from_raw_os_error(libc::EIO)
            )
        );
        assert!(text.contains("Input/output error"), "{text}");
    }

    #[test]
    fn only_a_file_not_found_is_absent() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("sizes.toml");
        assert_eq!(read_if_present(&absent, Bound::Record).unwrap(), None);
        // A directory where the file should be is damage, not absence.
        std::fs::create_dir(&absent).unwrap();
        let e = read_if_present(&absent, Bound::Record).unwrap_err();
        assert!(is_input_error(&e), "{e:#}");
        assert!(format!("{e:#}").contains("sizes.toml: not a regular file"));
        let e = read_text_if_present(&absent, Bound::Record).unwrap_err();
        assert!(format!("{e:#}").contains("sizes.toml: not a regular file"));
        // So is a path whose stat fails otherwise than "not found".
        std::fs::write(dir.path().join("meta.toml"), "").unwrap();
        let through_a_file = dir.path().join("meta.toml/sizes.toml");
        let e = read_if_present(&through_a_file, Bound::Record).unwrap_err();
        assert!(
            format!("{e:#}").contains("cannot be read: Not a directory"),
            "{e:#}"
        );
        // A read the system fails is the machinery's, named.
        let failing = dir.path().join("samples.csv");
        link_to_failing_read(&failing);
        let e = read_if_present(&failing, Bound::Samples).unwrap_err();
        assert!(!is_input_error(&e), "{e:#}");
        assert!(
            format!("{e:#}").contains("samples.csv: cannot be read: Input/output error"),
            "{e:#}"
        );
    }

    #[test]
    fn present_is_false_only_when_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("build.toml");
        assert!(!present(&path).unwrap());
        // A link is there even when what it names is not.
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &path).unwrap();
        assert!(present(&path).unwrap());
        std::fs::write(dir.path().join("meta.toml"), "").unwrap();
        let through_a_file = dir.path().join("meta.toml/build.toml");
        let e = present(&through_a_file).unwrap_err();
        assert!(is_input_error(&e), "{e:#}");
        assert!(
            format!("{e:#}").contains("meta.toml/build.toml: cannot be read: Not a directory"),
            "{e:#}"
        );
    }

    #[test]
    fn a_file_the_user_may_not_read_is_input_to_fix() {
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        let e = cannot_read(Path::new("suite.toml"), denied);
        assert!(is_input_error(&e), "{e:#}");
    }

    /// Whether `e` ends a command with status 2.
    fn is_input_error(e: &Error) -> bool {
        matches!(e, Error::Input(_))
    }
}
