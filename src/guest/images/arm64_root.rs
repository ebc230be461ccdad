//! The programs of a foreign architecture's guest image, from Debian's
//! packages of that architecture: the host's own programs are x86-64, and
//! installing a foreign program package would replace the host's (busybox-
//! static, rt-tests and iputils-ping are not co-installable across
//! architectures). So the packages are downloaded with `apt-get download`
//! into markbench's cache and unpacked with `dpkg-deb -x` into a root of
//! their own, keyed by the packages' SHA-256; the image takes the programs
//! and the libraries their ELF headers ask for from there
//! ([`super::guest_elf`]).

use super::{key_of, Cache};
use crate::base::arch::Arch;
use crate::base::error::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The packages an arm64 image is made of: the programs', then the
/// libraries those programs link (what their ELF headers ask for; a
/// program needing a library none of them holds is an error naming it,
/// so this list grows with the programs).
pub const ARM64_PACKAGES: &[&str] = &[
    "busybox-static",
    "rt-tests",
    "iputils-ping",
    "libc6",
    "libcap2",
    "libidn2-0",
    "libunistring2",
];

/// The programs an image holds, by the path the guest runs them at (the
/// x86-64 image's: workloads name them so), and the paths a package may
/// have put each at (Debian 12's iputils-ping still ships `/bin/ping`; a
/// merged `/usr` makes both one on a host, not in an unpacked root).
pub const GUEST_PROGRAMS: &[(&str, &[&str])] = &[
    ("/bin/busybox", &["/bin/busybox", "/usr/bin/busybox"]),
    (
        "/usr/bin/hackbench",
        &["/usr/bin/hackbench", "/bin/hackbench"],
    ),
    ("/usr/bin/ping", &["/usr/bin/ping", "/bin/ping"]),
];

/// A package file as apt describes it before downloading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deb {
    /// The file name `apt-get download` gives it.
    pub file_name: String,
    pub size: u64,
    pub sha256: String,
}

/// The files of `apt-get download --print-uris` output: one line per
/// package, `'URI' FILE SIZE SHA256:HEX`.
pub fn parse_print_uris(text: &str) -> Result<Vec<Deb>> {
    let mut debs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if !line.starts_with('\'') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let parsed = match fields.as_slice() {
            [_, file, size, hash] => hash
                .strip_prefix("SHA256:")
                .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                .zip(size.parse::<u64>().ok())
                .map(|(sha256, size)| Deb {
                    file_name: file.to_string(),
                    size,
                    sha256: sha256.to_ascii_lowercase(),
                }),
            _ => None,
        };
        match parsed {
            Some(deb) if !deb.file_name.contains('/') => debs.push(deb),
            _ => bail!(
                "apt-get download --print-uris, line {}: expected 'URI' FILE SIZE SHA256:HEX, \
                 got {line:?}",
                number + 1
            ),
        }
    }
    Ok(debs)
}

/// The key of a root unpacked from `debs`: their contents (by SHA-256),
/// in the order unpacked.
pub fn root_key(debs: &[Deb]) -> crate::base::sha256::Sha256 {
    let mut parts: Vec<(&str, &[u8])> = vec![("recipe", b"dpkg-deb -x root v1")];
    parts.extend(
        debs.iter()
            .map(|d| (d.file_name.as_str(), d.sha256.as_bytes())),
    );
    key_of(&parts)
}

fn run(command: &mut Command, what: &str) -> Result<Vec<u8>> {
    let out = command
        .output()
        .with_context(|| format!("running {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// The packages of `arch` in `dir`, downloaded when apt's current version
/// of one is not there yet, each checked against the SHA-256 apt's lists
/// give it.
pub fn fetch_debs(arch: Arch, packages: &[&str], dir: &Path) -> Result<Vec<(Deb, PathBuf)>> {
    let names: Vec<String> = packages
        .iter()
        .map(|p| format!("{p}:{}", arch.debian_arch()))
        .collect();
    let listing = run(
        Command::new("apt-get")
            .args(["download", "--print-uris"])
            .args(&names),
        &format!("apt-get download --print-uris {}", names.join(" ")),
    )?;
    let debs = parse_print_uris(&String::from_utf8_lossy(&listing))?;
    if debs.len() != names.len() {
        bail!(
            "apt-get download --print-uris {} listed {} files for {} packages",
            names.join(" "),
            debs.len(),
            names.len()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let missing: Vec<&String> = names
        .iter()
        .zip(&debs)
        .filter(|(_, deb)| {
            let path = dir.join(&deb.file_name);
            !(path.is_file()
                && super::content_sha256(&path).ok().as_deref() == Some(deb.sha256.as_str()))
        })
        .map(|(name, _)| name)
        .collect();
    if !missing.is_empty() {
        crate::base::message::note(format_args!(
            "downloading {} {arch} package{} …",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        ));
        run(
            Command::new("apt-get")
                .arg("download")
                .args(&missing)
                .current_dir(dir),
            &format!("apt-get download {}", names.join(" ")),
        )?;
    }
    let mut out = Vec::new();
    for deb in debs {
        let path = dir.join(&deb.file_name);
        let sha256 = super::content_sha256(&path)?;
        if sha256 != deb.sha256 {
            bail!(
                "{}: SHA-256 {sha256}, apt's lists say {}",
                path.display(),
                deb.sha256
            );
        }
        out.push((deb, path));
    }
    Ok(out)
}

/// The packages unpacked into one root (`dpkg-deb -x` each, in order),
/// cached under `dir` by [`root_key`].
pub fn unpacked_root(debs: &[(Deb, PathBuf)], dir: &Path) -> Result<PathBuf> {
    let key = root_key(&debs.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>());
    let root = dir.join(format!("root-{}", key.short()));
    if root.is_dir() {
        return Ok(root);
    }
    let partial = dir.join(format!(
        "root-{}.partial-{}",
        key.short(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial).with_context(|| format!("creating {}", partial.display()))?;
    for (_, path) in debs {
        run(
            Command::new("dpkg-deb").arg("-x").arg(path).arg(&partial),
            &format!("dpkg-deb -x {} {}", path.display(), partial.display()),
        )?;
    }
    std::fs::rename(&partial, &root)
        .with_context(|| format!("renaming {} to {}", partial.display(), root.display()))?;
    Ok(root)
}

/// The multiarch triplet Debian's libraries of `arch` live under.
pub fn multiarch(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x86_64-linux-gnu",
        Arch::Arm64 => "aarch64-linux-gnu",
    }
}

/// The files of an arm64 image's programs: every program at its guest
/// path, with the loader and libraries they need, as guest path → the
/// file in the unpacked root holding its bytes.
pub fn guest_files(root: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let arch = Arch::Arm64;
    let mut programs = BTreeMap::new();
    for (guest, candidates) in GUEST_PROGRAMS {
        let Some(found) = candidates
            .iter()
            .find(|c| super::guest_elf::resolve_in_root(root, c).is_some())
        else {
            bail!(
                "none of {} is in the unpacked {arch} packages at {}",
                candidates.join(", "),
                root.display()
            );
        };
        programs.insert(*guest, *found);
    }
    let packaged: Vec<&str> = programs.values().copied().collect();
    let mut files = super::guest_elf::closure(
        root,
        &packaged,
        super::guest_elf::EM_AARCH64,
        &super::guest_elf::library_dirs(multiarch(arch)),
    )?;
    for (guest, packaged) in programs {
        if guest != packaged {
            let host = files
                .remove(packaged)
                .expect("the closure holds its programs");
            files.insert(guest.to_string(), host);
        }
    }
    Ok(files)
}

/// The unpacked root of an arm64 image's packages in markbench's cache,
/// downloaded and unpacked when apt's versions of them changed.
pub fn ensure_arm64_root() -> Result<PathBuf> {
    let dir = Cache::here().foreign_guest(Arch::Arm64);
    crate::base::prereq::check_arch(Arch::Arm64)?;
    let debs = fetch_debs(Arch::Arm64, ARM64_PACKAGES, &dir.join("debs"))?;
    unpacked_root(&debs, &dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str =
        "'http://deb.debian.org/debian/pool/main/r/rt-tests/rt-tests_2.4-1_arm64.deb' \
        rt-tests_2.4-1_arm64.deb 135028 \
        SHA256:da18caa11795ca6b9c10bb6249c1790b985b49d301c3a9f4fb484385411cefce\n\
        'http://deb.debian.org/debian/pool/main/n/numactl/libnuma1_2.0.16-1_arm64.deb' \
        libnuma1_2.0.16-1_arm64.deb 20312 \
        SHA256:b4ed2547f387eb2e97d13c0b423b034d2a4d052b2131dfe043e45a84915452c5\n";

    #[test]
    fn print_uris_lines_give_each_files_name_size_and_hash() {
        let debs = parse_print_uris(LISTING).unwrap();
        assert_eq!(
            debs[0],
            Deb {
                file_name: "rt-tests_2.4-1_arm64.deb".into(),
                size: 135028,
                sha256: "da18caa11795ca6b9c10bb6249c1790b985b49d301c3a9f4fb484385411cefce".into(),
            }
        );
        assert_eq!(debs[1].file_name, "libnuma1_2.0.16-1_arm64.deb");
        let err = parse_print_uris("'http://x/a.deb' a.deb 12 MD5Sum:00\n").unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("line 1") && text.contains("MD5Sum"), "{text}");
    }

    #[test]
    fn the_roots_key_follows_the_packages_contents() {
        let debs = parse_print_uris(LISTING).unwrap();
        let key = root_key(&debs);
        assert_eq!(key, root_key(&debs));
        let mut rebuilt = debs.clone();
        rebuilt[1].sha256 = "0".repeat(64);
        assert_ne!(key, root_key(&rebuilt));
        assert_ne!(key, root_key(&debs[..1]));
    }

    /// On a host where the arm64 packages have been unpacked by markbench,
    /// the real files resolve: every program's loader and libraries, ping
    /// at the guest path the workloads use though its package has
    /// `/bin/ping`.
    #[test]
    fn the_real_arm64_root_resolves_when_present() {
        let dir = Cache::here().foreign_guest(Arch::Arm64);
        let Some(root) = std::fs::read_dir(&dir).ok().and_then(|entries| {
            entries.flatten().map(|e| e.path()).find(|p| {
                p.is_dir()
                    && p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with("root-") && !n.contains(".partial-")
                    })
            })
        }) else {
            eprintln!("skipped: no unpacked arm64 root in {}", dir.display());
            return;
        };
        let files = guest_files(&root).unwrap();
        for wanted in [
            "/bin/busybox",
            "/usr/bin/hackbench",
            "/usr/bin/ping",
            "/lib/ld-linux-aarch64.so.1",
            "/lib/aarch64-linux-gnu/libc.so.6",
            "/lib/aarch64-linux-gnu/libpthread.so.0",
            "/usr/lib/aarch64-linux-gnu/libidn2.so.0",
        ] {
            assert!(files.contains_key(wanted), "{wanted} in {files:?}");
        }
        assert!(!files.contains_key("/bin/ping"), "{files:?}");
    }
}
