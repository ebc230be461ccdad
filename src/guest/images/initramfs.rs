//! The guest initramfs: the static agent as `/init`, static busybox, and the
//! benchmark programs with the shared libraries they link, as a cached newc
//! cpio archive. A boot's job rides in a second small archive appended to it
//! (the kernel unpacks concatenated archives), so nothing is rebuilt per boot.

use super::{key_of, Cache};
use crate::base::arch::Arch;
use crate::base::error::bail;
use crate::base::error::{Context, Result};
use crate::base::protocol::{Directive, JOB_HEADER};
use crate::base::sha256::Sha256;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Host programs copied into every image, with their libraries.
pub const GUEST_PROGRAMS: &[&str] = &["/usr/bin/hackbench", "/usr/bin/ping"];
const BUSYBOX: &str = "/bin/busybox";

/// The guest agent, built static when markbench was built (build.rs): an
/// installed markbench needs neither its source tree nor rustc to pack it.
const AGENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/markbench-guest"));
/// Why build.rs could not build the agent (empty when it could).
const AGENT_BUILD_ERROR: &str = include_str!(concat!(env!("OUT_DIR"), "/markbench-guest.error"));

/// The embedded guest agent, or why this markbench has none.
fn agent() -> Result<&'static [u8]> {
    if AGENT.is_empty() {
        bail!(
            "this markbench was built without its guest agent, so it cannot pack the guest \
             initramfs; rebuild it where this works:\n{AGENT_BUILD_ERROR}"
        );
    }
    Ok(AGENT)
}

/// Writes the guest agent to `out` as an executable.
pub fn write_agent(out: &Path) -> Result<()> {
    write_agent_bytes(agent()?, out)
}

/// Writes an agent's bytes to `out` as an executable, checking it is static.
fn write_agent_bytes(agent: &[u8], out: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(out, agent).with_context(|| format!("writing {}", out.display()))?;
    std::fs::set_permissions(out, std::fs::Permissions::from_mode(0o755))?;
    if !crate::base::prereq::is_static_elf(out) {
        bail!("{}: the guest agent is not a static binary", out.display());
    }
    Ok(())
}

/// Libraries a dynamic executable needs, as `ldd` reports them (absolute paths).
pub fn shared_libraries(program: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(program)
        .output()
        .with_context(|| format!("running ldd {}", program.display()))?;
    Ok(parse_ldd(&String::from_utf8_lossy(&out.stdout)))
}

/// Absolute library paths from `ldd` output (`name => /path (addr)` or `/path (addr)`).
pub fn parse_ldd(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rhs)) => rhs.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

fn copy_into(root: &Path, host_path: &Path) -> Result<()> {
    copy_to(root, host_path, &host_path.display().to_string())
}

/// Copies a host file into the image root at the guest path `guest`.
fn copy_to(root: &Path, host_path: &Path, guest: &str) -> Result<()> {
    let dest = root.join(guest.trim_start_matches('/'));
    std::fs::create_dir_all(dest.parent().unwrap_or(root))?;
    // Follow symlinks: the image gets the real bytes under the linked name.
    std::fs::copy(host_path, &dest)
        .with_context(|| format!("copying {} into the initramfs", host_path.display()))?;
    Ok(())
}

/// Packs a directory into a newc cpio archive owned by root.
pub(crate) fn pack_cpio(root: &Path, out: &Path) -> Result<()> {
    let list = Command::new("find")
        .arg(".")
        .current_dir(root)
        .output()
        .context("listing initramfs files")?;
    let mut names: Vec<&str> = std::str::from_utf8(&list.stdout)?.lines().collect();
    names.sort(); // a stable order makes the archive reproducible
    let file = std::fs::File::create(out)?;
    let mut child = Command::new("cpio")
        .args(["--quiet", "-o", "-H", "newc", "-R", "0:0", "--reproducible"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(file)
        .spawn()
        .context("starting cpio")?;
    {
        let mut stdin = child.stdin.take().context("cpio stdin")?;
        for n in names {
            writeln!(stdin, "{n}")?;
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("cpio failed ({status})");
    }
    Ok(())
}

/// Gives everything under `root` the guest's clock start as its time, as
/// the job archive has: cpio records times, so an image packed from copies
/// made at another moment would be other bytes, another boot under icount,
/// and the same files on two hosts would not give the same image.
fn fix_times(root: &Path) -> Result<()> {
    let time = filetime::FileTime::from_unix_time(GUEST_CLOCK_START_S as i64, 0);
    for entry in walkdir::WalkDir::new(root) {
        let entry = entry?;
        filetime::set_symlink_file_times(entry.path(), time, time)
            .with_context(|| format!("setting the time of {}", entry.path().display()))?;
    }
    Ok(())
}

/// A host file of an image and the SHA-256 of its bytes.
pub type HashedFile = (PathBuf, String);

/// The cached base initramfs.
#[derive(Debug, Clone)]
pub struct BaseImage {
    pub path: PathBuf,
    pub key: crate::base::sha256::Digest,
    /// Its programs and their libraries, hashed when it was keyed.
    pub files: Vec<HashedFile>,
}

/// The cached archive of what a suite adds to the base image.
#[derive(Debug, Clone, PartialEq)]
pub struct Additions {
    pub path: PathBuf,
    /// Its programs, their libraries and the carried files (by host path),
    /// hashed when it was keyed.
    pub files: Vec<HashedFile>,
}

/// An image's cache key: its recipe, the agent's bytes (when it holds the
/// agent) and each file's guest path and content, so an updated program or
/// library is another image.
fn image_key(recipe: &[u8], agent: &[u8], contents: &[(String, String)]) -> Sha256 {
    let mut parts: Vec<(&str, &[u8])> = vec![("recipe", recipe), ("agent", agent)];
    parts.extend(contents.iter().map(|(f, s)| (f.as_str(), s.as_bytes())));
    key_of(&parts)
}

/// The host files `programs` need in the guest: each program and the
/// shared libraries it links (busybox is static), in path order.
fn with_libraries(programs: &[PathBuf]) -> Result<BTreeSet<PathBuf>> {
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    for p in programs {
        if !p.is_file() {
            bail!("{} is missing; run `markbench setup`", p.display());
        }
        files.insert(p.clone());
        if !crate::base::prereq::is_static_elf(p) {
            files.extend(shared_libraries(p)?);
        }
    }
    Ok(files)
}

/// Each file's path and content hash.
fn contents(files: &BTreeSet<PathBuf>) -> Result<Vec<HashedFile>> {
    files
        .iter()
        .map(|f| Ok((f.clone(), super::content_sha256(f)?)))
        .collect()
}

/// Hashed files as an image key names them.
fn key_parts(files: &[HashedFile]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(f, sha)| (f.display().to_string(), sha.clone()))
        .collect()
}

/// The programs every image holds: busybox, then [`GUEST_PROGRAMS`].
pub fn base_programs() -> Vec<PathBuf> {
    std::iter::once(BUSYBOX)
        .chain(GUEST_PROGRAMS.iter().copied())
        .map(PathBuf::from)
        .collect()
}

/// Returns the base initramfs, building it when its inputs changed.
pub fn ensure_base() -> Result<BaseImage> {
    let files = with_libraries(&base_programs())?;
    let hashed = contents(&files)?;
    let key = image_key(b"initramfs v3, fixed times", agent()?, &key_parts(&hashed));
    let path = Cache::here()
        .initramfs()
        .join(format!("base-{}.cpio", key.short()));
    let placed: Vec<(PathBuf, String)> = files
        .iter()
        .map(|f| (f.clone(), f.display().to_string()))
        .collect();
    pack_base_once(&path, agent()?, &placed)?;
    Ok(BaseImage {
        path,
        key: key.into(),
        files: hashed,
    })
}

/// The base initramfs of a guest of `arch`: for x86-64 [`ensure_base`]
/// (the host's programs and the embedded agent); for arm64 the agent built
/// for it and the programs of Debian's arm64 packages, with the libraries
/// their ELF headers ask for (see [`super::arm64_root`]).
pub fn ensure_base_for(arch: Arch) -> Result<BaseImage> {
    match arch {
        Arch::X86_64 => ensure_base(),
        Arch::Arm64 => ensure_arm64_base(),
    }
}

fn ensure_arm64_base() -> Result<BaseImage> {
    crate::base::prereq::check_arch(Arch::Arm64)?;
    let root = super::arm64_root::ensure_arm64_root()?;
    let agent_path = super::agent_build::ensure_agent(Arch::Arm64)?;
    let agent =
        std::fs::read(&agent_path).with_context(|| format!("reading {}", agent_path.display()))?;
    let files = super::arm64_root::guest_files(&root)?;
    let mut hashed: Vec<HashedFile> = Vec::new();
    let mut keyed: Vec<(String, String)> = Vec::new();
    let mut placed: Vec<(PathBuf, String)> = Vec::new();
    for (guest, host) in &files {
        let sha = super::content_sha256(host)?;
        keyed.push((guest.clone(), sha.clone()));
        hashed.push((host.clone(), sha));
        placed.push((host.clone(), guest.clone()));
    }
    // Keyed by guest paths, not the cache's: the same packages give the
    // same image under any cache directory.
    let key = image_key(b"initramfs arm64 v1, fixed times", &agent, &keyed);
    let path = Cache::here()
        .initramfs()
        .join(format!("base-arm64-{}.cpio", key.short()));
    pack_base_once(&path, &agent, &placed)?;
    Ok(BaseImage {
        path,
        key: key.into(),
        files: hashed,
    })
}

/// Packs a base image at `path` unless a sound one is there: `agent` as
/// `/init`, each `(host file, guest path)` of `files`, busybox's applets
/// and the few files of /etc.
fn pack_base_once(path: &Path, agent: &[u8], files: &[(PathBuf, String)]) -> Result<()> {
    if super::seal::usable_file_entry(path, "guest image") {
        return Ok(());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let staging = tempfile::Builder::new()
        .prefix("initramfs-")
        .tempdir_in(dir)?;
    let root = staging.path().join("root");
    for d in [
        "bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "run", "etc", "root",
    ] {
        std::fs::create_dir_all(root.join(d))?;
    }
    crate::base::message::note("building the guest agent and initramfs …");
    write_agent_bytes(agent, &root.join("init"))?;
    for (host, guest) in files {
        copy_to(&root, host, guest)?;
    }
    // Shell and the applets the agent and workloads call by name.
    for applet in ["sh", "mount", "ip", "poweroff", "stty", "sync", "cat", "ls"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet))?;
    }
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")?;
    std::fs::write(root.join("etc/group"), "root:x:0:\n")?;
    fix_times(&root)?;
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    pack_cpio(&root, &partial)?;
    super::seal::seal_file_entry(&partial, path)?;
    std::fs::rename(&partial, path)?;
    Ok(())
}

/// A host file carried to a path of the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedFile {
    pub host: PathBuf,
    pub guest: String,
}

/// The archive of what a suite's workloads add to the base image (their
/// programs with their libraries, and their files), appended after it;
/// `None` when they add nothing. Keyed by content like the base.
pub fn ensure_additions(programs: &[PathBuf], files: &[CarriedFile]) -> Result<Option<Additions>> {
    additions_in(&Cache::here().initramfs(), programs, files)
}

/// [`ensure_additions`] for a guest of `arch`. An arm64 guest takes
/// carried files, but not host programs: they are x86-64 binaries, and
/// finding a program's arm64 package is not done yet, so asking for one is
/// refused, naming it.
pub fn ensure_additions_for(
    arch: Arch,
    programs: &[PathBuf],
    files: &[CarriedFile],
) -> Result<Option<Additions>> {
    refuse_foreign_programs(arch, programs)?;
    ensure_additions(programs, files)
}

fn refuse_foreign_programs(arch: Arch, programs: &[PathBuf]) -> Result<()> {
    if arch == Arch::X86_64 || programs.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = programs.iter().map(|p| p.display().to_string()).collect();
    bail!(
        "an {arch} guest image cannot carry the host's programs ({}): they are x86-64 \
         binaries, and markbench's {arch} image holds only busybox, hackbench and ping so far",
        names.join(", ")
    )
}

/// [`ensure_additions`] with its archives kept in `dir`.
fn additions_in(
    dir: &Path,
    programs: &[PathBuf],
    files: &[CarriedFile],
) -> Result<Option<Additions>> {
    if programs.is_empty() && files.is_empty() {
        return Ok(None);
    }
    let host_files = with_libraries(programs)?;
    let mut hashed = contents(&host_files)?;
    let mut keyed = key_parts(&hashed);
    for f in files {
        let sha = super::content_sha256(&f.host)?;
        keyed.push((format!("{} -> {}", f.host.display(), f.guest), sha.clone()));
        hashed.push((f.host.clone(), sha));
    }
    let key = image_key(b"initramfs additions v1", b"", &keyed);
    let path = dir.join(format!("additions-{}.cpio", key.short()));
    let additions = Additions {
        path,
        files: hashed,
    };
    if super::seal::usable_file_entry(&additions.path, "guest image") {
        return Ok(Some(additions));
    }
    std::fs::create_dir_all(dir)?;
    let staging = tempfile::Builder::new()
        .prefix("additions-")
        .tempdir_in(dir)?;
    let root = staging.path().join("root");
    std::fs::create_dir_all(&root)?;
    crate::base::message::note(format_args!(
        "adding {} program{} and {} file{} to the guest image …",
        programs.len(),
        if programs.len() == 1 { "" } else { "s" },
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    ));
    for f in &host_files {
        copy_into(&root, f)?;
    }
    for f in files {
        let dest = root.join(f.guest.trim_start_matches('/'));
        std::fs::create_dir_all(dest.parent().unwrap_or(&root))?;
        std::fs::copy(&f.host, &dest).with_context(|| {
            format!(
                "copying {} into the guest image as {}",
                f.host.display(),
                f.guest
            )
        })?;
    }
    fix_times(&root)?;
    let partial = additions
        .path
        .with_extension(format!("partial-{}", std::process::id()));
    pack_cpio(&root, &partial)?;
    super::seal::seal_file_entry(&partial, &additions.path)?;
    std::fs::rename(&partial, &additions.path)?;
    Ok(Some(additions))
}

/// One program or library of a guest image, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImageFile {
    /// Its path on the host (and in the guest).
    pub path: String,
    /// `program`, `library` or `file`.
    pub kind: String,
    /// The Debian package that installed it and the package's version
    /// (empty when no package owns it, e.g. a program of the user's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub package: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    pub sha256: crate::base::sha256::Digest,
}

/// What a run's guest image held: what two runs' figures depend on besides
/// the kernels, QEMU and the suite (a library's other build changes the
/// instructions a benchmark executes, and so its icount figures).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImageRecord {
    /// SHA-256 over the base image and every archive appended to it, in
    /// order (not a boot's job).
    pub sha256: crate::base::sha256::Digest,
    pub files: Vec<ImageFile>,
}

impl ImageRecord {
    /// The record of an image made of `archives` (the base first) holding
    /// `programs`, carried `files`, and `hashed`: every host file in it with
    /// its hash, as the archives were keyed (the programs' libraries are
    /// the rest).
    pub fn of(
        archives: &[PathBuf],
        programs: &[PathBuf],
        files: &[CarriedFile],
        hashed: &[HashedFile],
    ) -> Result<Self> {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        for a in archives {
            let mut file =
                std::fs::File::open(a).with_context(|| format!("reading {}", a.display()))?;
            std::io::copy(&mut file, &mut hasher)?;
        }
        let carried = |p: &PathBuf| files.iter().any(|f| &f.host == p);
        let libraries: BTreeSet<&PathBuf> = hashed
            .iter()
            .map(|(p, _)| p)
            .filter(|p| !programs.contains(p) && !carried(p))
            .collect();
        let mut entries: Vec<ImageFile> = Vec::new();
        for (paths, kind) in [
            (programs.iter().collect::<Vec<_>>(), "program"),
            (libraries.into_iter().collect(), "library"),
            (files.iter().map(|f| &f.host).collect(), "file"),
        ] {
            for p in paths {
                if entries.iter().any(|e| Path::new(&e.path) == p) {
                    continue;
                }
                let sha256 = match hashed.iter().find(|(h, _)| h == p) {
                    Some((_, sha)) => sha.clone(),
                    None => super::content_sha256(p)?,
                };
                entries.push(ImageFile {
                    path: p.display().to_string(),
                    kind: kind.into(),
                    sha256: sha256.into(),
                    ..ImageFile::default()
                });
            }
        }
        let owners = package_owners(&entries.iter().map(|e| e.path.as_str()).collect::<Vec<_>>());
        for e in &mut entries {
            if let Some((package, version)) = owners.get(&e.path) {
                e.package = package.clone();
                e.version = version.clone();
            }
        }
        Ok(ImageRecord {
            sha256: hex::encode(hasher.finalize()).into(),
            files: entries,
        })
    }
}

/// The Debian package owning each path and its installed version, as far
/// as dpkg knows (nothing on hosts without dpkg).
fn package_owners(paths: &[&str]) -> std::collections::BTreeMap<String, (String, String)> {
    let mut owners = std::collections::BTreeMap::new();
    let Ok(out) = Command::new("dpkg-query").arg("-S").args(paths).output() else {
        return owners;
    };
    let mut packages: BTreeSet<String> = BTreeSet::new();
    for (package, path) in parse_dpkg_search(&String::from_utf8_lossy(&out.stdout)) {
        packages.insert(package.clone());
        owners.insert(path, (package, String::new()));
    }
    // A library found through a merged /usr may be registered under its
    // other name: ask again for what was not found.
    let missing: Vec<(String, String)> = paths
        .iter()
        .filter(|p| !owners.contains_key(**p))
        .map(|p| {
            let other = match p.strip_prefix("/usr") {
                Some(rest) => rest.to_string(),
                None => format!("/usr{p}"),
            };
            (p.to_string(), other)
        })
        .collect();
    if !missing.is_empty() {
        if let Ok(out) = Command::new("dpkg-query")
            .arg("-S")
            .args(missing.iter().map(|(_, other)| other))
            .output()
        {
            for (package, path) in parse_dpkg_search(&String::from_utf8_lossy(&out.stdout)) {
                if let Some((asked, _)) = missing.iter().find(|(_, other)| *other == path) {
                    packages.insert(package.clone());
                    owners.insert(asked.clone(), (package, String::new()));
                }
            }
        }
    }
    let mut versions = std::collections::BTreeMap::new();
    if !packages.is_empty() {
        if let Ok(out) = Command::new("dpkg-query")
            .args(["-W", "-f", "${binary:Package}\t${Version}\n"])
            .args(&packages)
            .output()
        {
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if let Some((package, version)) = line.split_once('\t') {
                    versions.insert(package.to_string(), version.to_string());
                }
            }
        }
    }
    for (package, version) in owners.values_mut() {
        *version = versions.get(package.as_str()).cloned().unwrap_or_default();
    }
    owners
}

/// (package, path) pairs from `dpkg-query -S` output (`pkg[:arch]: path`;
/// a path several packages share lists them all, the first kept).
pub fn parse_dpkg_search(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let (packages, path) = line.split_once(": ")?;
            if packages.starts_with("diversion by") {
                return None;
            }
            let first = packages.split(", ").next()?.trim();
            Some((first.to_string(), path.trim().to_string()))
        })
        .collect()
}

/// The job file text for a list of directives.
pub fn job_text(directives: &[Directive]) -> Result<String> {
    let mut text = format!("{JOB_HEADER}\n");
    for d in directives {
        let line = d
            .to_line()
            .map_err(|e| anyhow::anyhow!("cannot encode job: {e}"))?;
        text.push_str(&line);
        text.push('\n');
    }
    Ok(text)
}

/// The guest's clock start under icount (its RTC base, 2020-01-01T00:00:00
/// UTC), in seconds since the epoch. Files packed for the guest carry fixed
/// times at or before it, so no file is "in the future" for a guest that
/// starts there, and no host time reaches the guest through an archive.
pub const GUEST_CLOCK_START_S: u64 = 1_577_836_800;

/// The modification time of everything in a job archive (any fixed time
/// would do).
const JOB_MTIME_S: u64 = GUEST_CLOCK_START_S;

/// Writes `base + job` to `out`: the initrd of one boot.
pub fn write_boot_initrd(base: &BaseImage, directives: &[Directive], out: &Path) -> Result<()> {
    write_boot_initrd_with_archives(base, &[], directives, out)
}

/// Writes `base + archives… + job` to `out`. Later archives win where paths
/// overlap, as the kernel unpacks them in order.
pub fn write_boot_initrd_with_archives(
    base: &BaseImage,
    archives: &[PathBuf],
    directives: &[Directive],
    out: &Path,
) -> Result<()> {
    let staging = tempfile::tempdir()?;
    let root = staging.path().join("root");
    std::fs::create_dir_all(&root)?;
    std::fs::write(root.join("job"), job_text(directives)?)?;
    // cpio records modification times: left alone, the same job packed a
    // second later gives a different initrd, and under icount that alone
    // was seen to change a boot's timings. A fixed time makes a unit's
    // initrd, and so its boot, the same in every run.
    for path in [root.join("job"), root.clone()] {
        std::fs::File::open(&path)
            .and_then(|f| {
                f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(JOB_MTIME_S))
            })
            .with_context(|| format!("setting the time of {}", path.display()))?;
    }
    let job_cpio = staging.path().join("job.cpio");
    pack_cpio(&root, &job_cpio)?;
    // Streamed, not read whole: the compile tree is hundreds of megabytes.
    let mut initrd = std::io::BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("writing {}", out.display()))?,
    );
    for part in std::iter::once(&base.path)
        .chain(archives)
        .chain(std::iter::once(&job_cpio))
    {
        let mut file =
            std::fs::File::open(part).with_context(|| format!("reading {}", part.display()))?;
        std::io::copy(&mut file, &mut initrd)
            .with_context(|| format!("appending {} to {}", part.display(), out.display()))?;
    }
    initrd
        .flush()
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_agent_is_a_static_executable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("init");
        write_agent(&path).unwrap();
        assert!(crate::base::prereq::is_static_elf(&path));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[test]
    fn an_image_key_follows_the_agent_and_the_files_contents() {
        let files = vec![("/bin/busybox".to_string(), "sha 1".to_string())];
        let key = image_key(b"r", b"agent", &files);
        assert_eq!(key, image_key(b"r", b"agent", &files));
        assert_ne!(key, image_key(b"r", b"agent 2", &files));
        let updated = vec![("/bin/busybox".to_string(), "sha 2".to_string())];
        assert_ne!(key, image_key(b"r", b"agent", &updated));
    }

    #[test]
    fn dpkg_search_output_gives_each_paths_package() {
        let text = "libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6\n\
                    rt-tests: /usr/bin/hackbench\n\
                    diversion by dash from: /bin/sh\n\
                    pkg-a, pkg-b: /usr/share/shared\n";
        assert_eq!(
            parse_dpkg_search(text),
            [
                (
                    "libc6:amd64".to_string(),
                    "/lib/x86_64-linux-gnu/libc.so.6".to_string()
                ),
                ("rt-tests".to_string(), "/usr/bin/hackbench".to_string()),
                ("pkg-a".to_string(), "/usr/share/shared".to_string()),
            ]
        );
    }

    #[test]
    fn additions_carry_programs_and_files_keyed_by_content() {
        let cache = tempfile::tempdir().unwrap();
        let ensure_additions = |p: &[PathBuf], f: &[CarriedFile]| {
            additions_in(cache.path(), p, f).map(|a| a.map(|a| a.path))
        };
        let input = cache.path().join("input.bin");
        std::fs::write(&input, b"one").unwrap();
        let carried = [CarriedFile {
            host: input.clone(),
            guest: "/data/input.bin".into(),
        }];
        assert_eq!(ensure_additions(&[], &[]).unwrap(), None);
        let first = ensure_additions(&[], &carried).unwrap().unwrap();
        let listing = Command::new("cpio")
            .args(["-t", "--quiet", "-F"])
            .arg(&first)
            .output()
            .unwrap();
        let names = String::from_utf8_lossy(&listing.stdout);
        assert!(names.lines().any(|l| l == "data/input.bin"), "{names}");
        assert_eq!(ensure_additions(&[], &carried).unwrap().unwrap(), first);
        // Packed again elsewhere, later: the same bytes.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let elsewhere = tempfile::tempdir().unwrap();
        let again = additions_in(elsewhere.path(), &[], &carried)
            .unwrap()
            .unwrap()
            .path;
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&first).unwrap()
        );
        std::fs::write(&input, b"two").unwrap();
        assert_ne!(ensure_additions(&[], &carried).unwrap().unwrap(), first);
    }

    #[test]
    fn an_arm64_image_refuses_host_programs_by_name() {
        let program = [PathBuf::from("/usr/bin/stress-ng")];
        let err = refuse_foreign_programs(Arch::Arm64, &program).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("/usr/bin/stress-ng") && text.contains("arm64"),
            "{text}"
        );
        refuse_foreign_programs(Arch::Arm64, &[]).unwrap();
        refuse_foreign_programs(Arch::X86_64, &program).unwrap();
    }

    #[test]
    fn ldd_output_gives_library_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibpthread.so.0 => /lib/x86_64-linux-gnu/libpthread.so.0 (0x00007f91)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f91)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f91)\n";
        assert_eq!(
            parse_ldd(text),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libpthread.so.0"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
    }

    #[test]
    fn the_same_job_gives_the_same_initrd_bytes_whenever_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let base_path = dir.path().join("base.cpio");
        std::fs::write(&base_path, b"base").unwrap();
        let base = BaseImage {
            path: base_path,
            key: "k".into(),
            files: Vec::new(),
        };
        let job = vec![Directive::Run {
            id: "hackbench/2".into(),
            iterations: 2,
            argv: vec!["/usr/bin/hackbench".into()],
        }];
        let (first, second) = (dir.path().join("1"), dir.path().join("2"));
        write_boot_initrd(&base, &job, &first).unwrap();
        // cpio stores whole seconds: make sure the clock has moved on.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        write_boot_initrd(&base, &job, &second).unwrap();
        assert_eq!(
            std::fs::read(first).unwrap(),
            std::fs::read(second).unwrap()
        );
    }

    #[test]
    fn job_text_round_trips_through_the_agent_parser() {
        let directives = vec![
            Directive::Setup {
                argv: vec!["/bin/ip".into(), "link".into()],
            },
            Directive::Run {
                id: "hackbench/4".into(),
                iterations: 3,
                argv: vec!["/usr/bin/hackbench".into(), "-g".into(), "4".into()],
            },
        ];
        let text = job_text(&directives).unwrap();
        let parsed: Vec<Directive> = text
            .lines()
            .filter_map(|l| Directive::parse_line(l).unwrap())
            .collect();
        assert_eq!(parsed, directives);
    }
}
