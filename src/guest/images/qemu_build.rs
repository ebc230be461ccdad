//! markbench's own QEMU: the version the distribution ships (10.0.2, from
//! Debian's source package in bookworm-backports) with a short series of
//! patches kept in `qemu/patches/`, built for x86_64 system emulation with
//! plugins only, cached and sealed like a kernel.
//!
//! It is what SMP guests under icount boot with: stock QEMU tells the
//! profile plugin the vCPU that translated a block instead of the one
//! running it, and gives each vCPU round-robin turns too long for shared
//! data to change hands as it does between cores (the patches say why in
//! their messages). One vCPU needs neither fix, so 1-vCPU boots keep the
//! distribution's QEMU.
//!
//! The entry is `qemu-builds/<key>/`: the `qemu-system-x86_64` binary with
//! its seal, and `qemu-build.toml` naming the source and patches. It is
//! built in `<key>.partial-<pid>/` and renamed into place, so a killed build
//! leaves debris `cache prune` removes, never an entry. Objects go through
//! the kernels' ccache, so a rebuild after a patch changes recompiles little.

use super::{key_of, lock::EntryLock, tool_version, Cache};
use crate::base::error::bail;
use crate::base::error::{Context, Result};
use crate::base::sha256::Sha256;
use serde::{Deserialize, Serialize};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The upstream version the patches apply to.
pub const VERSION: &str = "10.0.2";
/// Debian's source package of that version, as `apt-get source` names it.
pub const SOURCE_PACKAGE: &str = "qemu/bookworm-backports";
/// The upstream tarball of the source package (Debian repacks it as `+ds`,
/// without prebuilt firmware; the distribution's firmware is used).
pub const SOURCE_TARBALL: &str = "qemu_10.0.2+ds.orig.tar.xz";
/// Its SHA-256: a tarball that differs is not built.
pub const SOURCE_SHA256: &str = "0901da33844a331bf8b3602b9c1fbd178e60b737c8e3ade678255bd090c9b9f1";
/// The top directory of the unpacked tarball.
const SOURCE_DIR: &str = "qemu-10.0.2";

/// The binary an entry holds.
pub const BINARY: &str = "qemu-system-x86_64";
/// The record beside it.
const RECORD: &str = "qemu-build.toml";

/// The patches, in the order they apply, built into markbench so that an
/// installed binary builds its QEMU without a checkout.
pub const PATCHES: &[(&str, &str)] = &[
    (
        "0001-plugins-give-callbacks-the-running-vCPU-whenever-the.patch",
        include_str!(
            "../../../qemu/patches/0001-plugins-give-callbacks-the-running-vCPU-whenever-the.patch"
        ),
    ),
    (
        "0002-tcg-icount-a-cap-on-one-vCPU-s-round-robin-turn-acce.patch",
        include_str!(
            "../../../qemu/patches/0002-tcg-icount-a-cap-on-one-vCPU-s-round-robin-turn-acce.patch"
        ),
    ),
    (
        "0003-meson-no-EDK2-images-to-unpack-when-the-source-has-n.patch",
        include_str!(
            "../../../qemu/patches/0003-meson-no-EDK2-images-to-unpack-when-the-source-has-n.patch"
        ),
    ),
];

/// Where the distribution keeps the firmware QEMU loads (SeaBIOS, the
/// option ROMs of `-kernel`): Debian's qemu-system-data, seabios and ipxe.
const FIRMWARE_PATH: &str = "/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu";

/// `configure`'s options: one target, TCG with plugins, nothing optional
/// (no display, no network back-end, no tools, no docs). The devices stay
/// the default ones: without them there is no `pc` machine, and with them
/// a guest sees the machine the distribution's QEMU gives it.
fn configure_args() -> Vec<String> {
    [
        "--target-list=x86_64-softmmu",
        "--without-default-features",
        "--enable-tcg",
        "--enable-plugins",
        "--disable-docs",
        "--disable-werror",
        "--disable-install-blobs",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--firmwarepath={FIRMWARE_PATH}")])
    .collect()
}

/// A patch applied to the build: its file name and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedPatch {
    pub name: String,
    pub sha256: Sha256,
}

/// What an entry was built from, kept beside its binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildRecord {
    pub key: Sha256,
    pub version: String,
    pub source: String,
    pub source_sha256: crate::base::sha256::Digest,
    pub patches: Vec<AppliedPatch>,
}

/// A built QEMU, ready to boot with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltQemu {
    pub binary: PathBuf,
    pub record: BuildRecord,
}

impl BuildRecord {
    /// The record of the build this markbench makes.
    pub fn planned() -> BuildRecord {
        BuildRecord {
            key: build_key(),
            version: VERSION.into(),
            source: SOURCE_TARBALL.into(),
            source_sha256: SOURCE_SHA256.into(),
            patches: PATCHES
                .iter()
                .map(|(name, text)| AppliedPatch {
                    name: (*name).into(),
                    sha256: key_of(&[("patch", text.as_bytes())]),
                })
                .collect(),
        }
    }
}

/// The C compiler's version, which goes into the key (another compiler
/// makes another binary).
fn compiler() -> String {
    tool_version("cc")
}

/// The key of the build: source, patches, options and compiler.
pub fn build_key() -> Sha256 {
    let mut parts: Vec<(String, Vec<u8>)> = vec![
        ("recipe".into(), b"markbench qemu v1".to_vec()),
        ("source".into(), SOURCE_SHA256.as_bytes().to_vec()),
        ("configure".into(), configure_args().join(" ").into_bytes()),
        ("cc".into(), compiler().into_bytes()),
    ];
    for (name, text) in PATCHES {
        parts.push(((*name).into(), text.as_bytes().to_vec()));
    }
    let refs: Vec<(&str, &[u8])> = parts
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_slice()))
        .collect();
    key_of(&refs)
}

/// The entry of the build with `key` under `root` (`qemu-builds/`).
pub fn entry_dir(root: &Path, key: &Sha256) -> PathBuf {
    root.join(key.short())
}

/// The built QEMU of the entry at `dir`, if the entry is whole: its binary
/// matches its seal and its record reads and names `key`.
fn usable(dir: &Path, key: &Sha256) -> Option<BuiltQemu> {
    let binary = dir.join(BINARY);
    if !binary.exists() {
        return None;
    }
    let record: Option<BuildRecord> = std::fs::read_to_string(dir.join(RECORD))
        .ok()
        .and_then(|t| toml::from_str(&t).ok());
    match record {
        Some(record) if &record.key == key => {
            super::seal::usable_file_entry(&binary, "markbench's QEMU")
                .then_some(BuiltQemu { binary, record })
        }
        _ => {
            crate::base::message::warning(format_args!(
                "{}: its record is missing or damaged; rebuilding markbench's QEMU",
                dir.join(RECORD).display()
            ));
            None
        }
    }
}

/// markbench's QEMU, built into the cache when it is not there (or is
/// damaged).
pub fn ensure() -> Result<BuiltQemu> {
    ensure_in(&Cache::here())
}

/// [`ensure`] with the cache at `cache`.
pub fn ensure_in(cache: &Cache) -> Result<BuiltQemu> {
    let root = cache.qemu_builds();
    let planned = BuildRecord::planned();
    let dir = entry_dir(&root, &planned.key);
    if let Some(built) = usable(&dir, &planned.key) {
        super::lock::used(&dir);
        return Ok(built);
    }
    let _building = EntryLock::exclusive(
        &root.join(format!("{}.lock", planned.key.short())),
        "another markbench building QEMU",
    )?;
    if let Some(built) = usable(&dir, &planned.key) {
        super::lock::used(&dir);
        return Ok(built);
    }
    // Its tools and the deb-src entry the source is fetched from, before
    // the fetch (a run has installed them before its first build).
    crate::base::prereq::ensure_qemu_build_tools()?;
    let tarball = source_tarball(&root.join("source"))?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let partial = root.join(format!(
        "{}.partial-{}",
        planned.key.short(),
        std::process::id()
    ));
    let started = std::time::Instant::now();
    build(&tarball, &partial, &cache.ccache(), &planned)?;
    std::fs::rename(&partial, &dir)
        .with_context(|| format!("renaming {} to {}", partial.display(), dir.display()))?;
    crate::base::message::note(format_args!(
        "built markbench's QEMU {VERSION} + {} patches in {} ({})",
        PATCHES.len(),
        crate::base::progress::minutes(started.elapsed()),
        dir.display()
    ));
    super::lock::used(&dir);
    Ok(BuiltQemu {
        binary: dir.join(BINARY),
        record: planned,
    })
}

/// The source tarball in `dir`, fetched with `apt-get source` when it is
/// not there or not the one expected.
fn source_tarball(dir: &Path) -> Result<PathBuf> {
    source_tarball_with(dir, "apt-get")
}

/// [`source_tarball`], fetching with the program `apt_get`.
fn source_tarball_with(dir: &Path, apt_get: &str) -> Result<PathBuf> {
    let path = dir.join(SOURCE_TARBALL);
    let matches =
        |p: &Path| super::seal::seal_of(p).is_ok_and(|s| s.sha256.as_str() == SOURCE_SHA256);
    if matches(&path) {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let _ = std::fs::remove_file(&path);
    crate::base::message::note(format_args!(
        "fetching QEMU's source: apt-get source --download-only {SOURCE_PACKAGE}"
    ));
    // apt-get also fetches the package's .dsc and Debian changes, which the
    // build does not use; a mirror missing them is no failure as long as
    // the tarball came and is the one expected.
    let out = Command::new(apt_get)
        .args(["source", "--download-only", "-q", SOURCE_PACKAGE])
        .current_dir(dir)
        .output();
    if matches(&path) {
        return Ok(path);
    }
    let why = match out {
        Err(e) => format!("apt-get could not start: {e}"),
        Ok(o) if !path.exists() => {
            let text = String::from_utf8_lossy(&o.stderr);
            let last: Vec<&str> = text.lines().rev().take(3).collect();
            format!(
                "apt-get did not fetch it ({}): {}",
                o.status,
                last.into_iter().rev().collect::<Vec<_>>().join(" / ")
            )
        }
        Ok(_) => {
            let _ = std::fs::rename(&path, path.with_extension("unexpected"));
            format!("the fetched tarball's SHA-256 is not {SOURCE_SHA256}")
        }
    };
    bail!(
        "QEMU's source {SOURCE_TARBALL} is missing: {why}.\nRun `markbench setup` (it adds a \
         deb-src entry for bookworm-backports and the build tools), or put the tarball \
         (SHA-256 {SOURCE_SHA256}) in {}",
        dir.display()
    )
}

/// Runs `cmd`, its output appended to `log`; an error with the log's tail
/// when it fails.
fn logged(mut cmd: Command, what: &str, log: &Path) -> Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let status = cmd
        .stdout(file.try_clone()?)
        .stderr(file)
        .status()
        .with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status}); {}", log_tail(log));
    }
    Ok(())
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(12).collect();
    format!(
        "the end of {}:\n{}",
        log.display(),
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    )
}

/// The environment a build step runs in: ccache in front of the compiler
/// (Debian's `/usr/lib/ccache` links), its objects in markbench's cache,
/// paths taken relative to the build's own folder (each build has one of
/// its own, named by the process, and would otherwise miss every object).
fn with_ccache(cmd: &mut Command, ccache: &Path, partial: &Path) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![PathBuf::from("/usr/lib/ccache")];
    dirs.extend(std::env::split_paths(&path));
    if let Ok(joined) = std::env::join_paths(dirs) {
        cmd.env("PATH", joined);
    }
    cmd.env("CCACHE_DIR", ccache);
    cmd.env("CCACHE_BASEDIR", partial);
}

/// Unpacks, patches, configures and builds into `partial`, then leaves in
/// it only the sealed binary and the record.
fn build(tarball: &Path, partial: &Path, ccache: &Path, planned: &BuildRecord) -> Result<()> {
    if partial.exists() {
        std::fs::remove_dir_all(partial)
            .with_context(|| format!("removing {}", partial.display()))?;
    }
    std::fs::create_dir_all(partial).with_context(|| format!("creating {}", partial.display()))?;
    let log = partial.join("build.log");
    let mut tar = Command::new("tar");
    tar.arg("xf").arg(tarball).arg("-C").arg(partial);
    logged(tar, &format!("unpacking {}", tarball.display()), &log)?;
    let source = partial.join(SOURCE_DIR);
    apply_patches(&source, &log)?;
    let build = partial.join("build");
    std::fs::create_dir_all(&build).with_context(|| format!("creating {}", build.display()))?;
    let mut configure = Command::new(source.join("configure"));
    configure.args(configure_args()).current_dir(&build);
    // Debian's python3 sees Debian's meson and pycotap; a python3 of
    // one's own (pyenv, a venv) first on PATH would not.
    if Path::new("/usr/bin/python3").exists() {
        configure.arg("--python=/usr/bin/python3");
    }
    with_ccache(&mut configure, ccache, partial);
    logged(configure, "configuring QEMU", &log)?;
    ninja(&build, (ccache, partial), &log)?;
    let built = build.join(BINARY);
    let binary = partial.join(BINARY);
    let staged = partial.join(format!("{BINARY}.staged"));
    std::fs::copy(&built, &staged)
        .with_context(|| format!("copying {} to {}", built.display(), staged.display()))?;
    super::seal::seal_file_entry(&staged, &binary)?;
    std::fs::rename(&staged, &binary).with_context(|| format!("writing {}", binary.display()))?;
    std::fs::write(
        partial.join(RECORD),
        toml::to_string(planned).context("writing the QEMU build record")?,
    )
    .with_context(|| format!("writing {}", partial.join(RECORD).display()))?;
    // The tree and objects are a gigabyte; ccache keeps what a rebuild
    // needs.
    for dir in [&source, &build] {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(())
}

/// Applies [`PATCHES`] to the tree at `source`, naming the one that does not apply.
fn apply_patches(source: &Path, log: &Path) -> Result<()> {
    for (name, text) in PATCHES {
        let file = source.join(format!(".markbench-{name}"));
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        let mut apply = Command::new("git");
        apply
            .args(["apply", "--whitespace=nowarn", "-p1"])
            .arg(&file)
            .current_dir(source);
        logged(apply, &format!("applying qemu/patches/{name}"), log)?;
        let _ = std::fs::remove_file(&file);
    }
    Ok(())
}

/// `ninja` of the one binary, its `[done/total]` lines driving a progress bar.
fn ninja(build: &Path, (ccache, partial): (&Path, &Path), log: &Path) -> Result<()> {
    let jobs = crate::base::host::usable_cpus().len().max(1);
    let mut cmd = Command::new("ninja");
    cmd.arg(format!("-j{jobs}"))
        .arg(BINARY)
        .current_dir(build)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    with_ccache(&mut cmd, ccache, partial);
    let mut child = cmd.spawn().context("starting ninja to build QEMU")?;
    let stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut e) = stderr {
            let _ = std::io::Read::read_to_string(&mut e, &mut text);
        }
        text
    });
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    // Started at ninja's first status line, which gives the count of steps.
    let mut step: Option<crate::base::progress::Step> = None;
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines().map_while(|l| l.ok()) {
            use std::io::Write;
            let _ = writeln!(file, "{line}");
            if let Some((done, total)) = ninja_progress(&line) {
                step.get_or_insert_with(|| {
                    crate::base::progress::Step::start(
                        format!("building QEMU {VERSION} + {} patches", PATCHES.len()),
                        "steps",
                        Some(total),
                    )
                })
                .set(done);
            }
        }
    }
    if let Some(step) = &step {
        step.finish();
    }
    let status = child.wait().context("waiting for ninja")?;
    let errors = errors.join().unwrap_or_default();
    {
        use std::io::Write;
        let _ = file.write_all(errors.as_bytes());
    }
    if !status.success() {
        bail!("building QEMU failed ({status}); {}", log_tail(log));
    }
    Ok(())
}

/// `(done, total)` of a ninja status line (`[412/1225] Compiling …`).
pub fn ninja_progress(line: &str) -> Option<(u64, u64)> {
    let inner = line.strip_prefix('[')?.split(']').next()?;
    let (done, total) = inner.split_once('/')?;
    Some((done.trim().parse().ok()?, total.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_patches_are_the_series_in_the_repository() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("qemu/patches");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".patch"))
            .collect();
        on_disk.sort();
        let built_in: Vec<&str> = PATCHES.iter().map(|(n, _)| *n).collect();
        assert_eq!(on_disk, built_in);
        for (name, text) in PATCHES {
            assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text);
        }
    }

    #[test]
    fn ninja_status_lines_read_as_progress_and_others_not() {
        assert_eq!(
            ninja_progress("[412/1225] Compiling C object x.o"),
            Some((412, 1225))
        );
        assert_eq!(ninja_progress("ninja: Entering directory `build'"), None);
        assert_eq!(ninja_progress("[a/b] x"), None);
    }

    #[test]
    fn the_record_names_every_patch_and_the_key_follows_them() {
        let record = BuildRecord::planned();
        assert_eq!(record.patches.len(), PATCHES.len());
        assert_eq!(record.key, build_key());
        assert_eq!(record.source_sha256, SOURCE_SHA256);
    }

    #[test]
    fn a_damaged_binary_or_record_makes_the_entry_unusable() {
        let root = tempfile::tempdir().unwrap();
        let key = build_key();
        let dir = entry_dir(root.path(), &key);
        std::fs::create_dir_all(&dir).unwrap();
        let staged = dir.join("staged");
        std::fs::write(&staged, b"\x7fELF a binary").unwrap();
        super::super::seal::seal_file_entry(&staged, &dir.join(BINARY)).unwrap();
        std::fs::rename(&staged, dir.join(BINARY)).unwrap();
        std::fs::write(
            dir.join(RECORD),
            toml::to_string(&BuildRecord::planned()).unwrap(),
        )
        .unwrap();
        assert!(usable(&dir, &key).is_some());
        std::fs::write(dir.join(RECORD), "key = [").unwrap();
        assert!(usable(&dir, &key).is_none(), "a torn record");
        std::fs::write(
            dir.join(RECORD),
            toml::to_string(&BuildRecord::planned()).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.join(BINARY), b"\x7fELF cut").unwrap();
        assert!(usable(&dir, &key).is_none(), "a binary cut short");
    }

    #[test]
    fn a_source_that_cannot_be_fetched_says_what_to_run() {
        let dir = tempfile::tempdir().unwrap();
        // A tarball that is not the expected one is not built from.
        std::fs::write(dir.path().join(SOURCE_TARBALL), b"not qemu").unwrap();
        // No apt-get: what a machine without Debian's tools has.
        let e = source_tarball_with(dir.path(), "/nonexistent/apt-get")
            .unwrap_err()
            .to_string();
        assert!(e.contains("markbench setup"), "{e}");
        assert!(e.contains(SOURCE_SHA256), "{e}");
    }
}
