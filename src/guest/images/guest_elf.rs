//! The files a foreign architecture's programs need, found by reading their
//! ELF headers inside an unpacked root: `ldd` runs the dynamic loader, which
//! cannot run another architecture's binaries, so each program's DT_NEEDED
//! libraries and its PT_INTERP loader are looked up in the root the way the
//! guest's loader will look them up, recursively.

use crate::base::error::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What the dynamic linker needs to run one ELF file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ElfNeeds {
    /// `e_machine` (183 for AArch64, 62 for x86-64).
    pub machine: u16,
    /// The PT_INTERP loader's path, absent in a static binary.
    pub interpreter: Option<String>,
    /// The DT_NEEDED sonames, in order.
    pub needed: Vec<String>,
}

/// The ELF machine number of AArch64.
pub const EM_AARCH64: u16 = goblin::elf::header::EM_AARCH64;

/// Reads what `bytes` (an ELF file) needs at load time; `origin` names it
/// in errors.
pub fn elf_needs(bytes: &[u8], origin: &Path) -> Result<ElfNeeds> {
    let elf = goblin::elf::Elf::parse(bytes)
        .with_context(|| format!("{}: not an ELF file markbench can read", origin.display()))?;
    Ok(ElfNeeds {
        machine: elf.header.e_machine,
        interpreter: elf.interpreter.map(str::to_string),
        needed: elf.libraries.iter().map(|s| s.to_string()).collect(),
    })
}

/// Where the guest's loader looks for a soname (Debian's multiarch
/// directories first, as its `ld.so` is built to).
pub fn library_dirs(multiarch: &str) -> Vec<String> {
    vec![
        format!("/lib/{multiarch}"),
        format!("/usr/lib/{multiarch}"),
        "/lib".to_string(),
        "/usr/lib".to_string(),
    ]
}

/// The file under `root` that the guest path `guest` names, following
/// symbolic links as the guest would (an absolute target is inside
/// `root`); `None` when there is none or the links loop.
pub fn resolve_in_root(root: &Path, guest: &str) -> Option<PathBuf> {
    let mut path = guest.to_string();
    for _ in 0..40 {
        let host = root.join(path.trim_start_matches('/'));
        let meta = std::fs::symlink_metadata(&host).ok()?;
        if !meta.file_type().is_symlink() {
            return meta.is_file().then_some(host);
        }
        let target = std::fs::read_link(&host).ok()?;
        let target = target.to_str()?;
        path = if target.starts_with('/') {
            target.to_string()
        } else {
            let parent = Path::new(&path).parent().unwrap_or(Path::new("/"));
            normalize(&parent.join(target))
        };
    }
    None
}

/// `a/./b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.to_str().unwrap_or_default().split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Each program (a guest path, looked up in `root`) and every file the
/// loader will open to run it: the loader and the libraries, recursively.
/// Keys are guest paths, values the files under `root` that hold their
/// bytes (symbolic links followed). A program or library that is not in
/// `root`, or is built for another machine than `machine`, is an error
/// naming it and who needs it.
pub fn closure(
    root: &Path,
    programs: &[&str],
    machine: u16,
    lib_dirs: &[String],
) -> Result<BTreeMap<String, PathBuf>> {
    let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut queue: Vec<(String, String)> = Vec::new();
    for program in programs {
        let Some(host) = resolve_in_root(root, program) else {
            bail!(
                "{program} is not in the unpacked packages at {}",
                root.display()
            );
        };
        found.insert(program.to_string(), host.clone());
        queue.push((program.to_string(), program.to_string()));
    }
    let mut seen: BTreeSet<String> = programs.iter().map(|p| p.to_string()).collect();
    while let Some((guest, needed_by)) = queue.pop() {
        let host = &found[&guest];
        let bytes = std::fs::read(host).with_context(|| format!("reading {}", host.display()))?;
        let needs = elf_needs(&bytes, host)?;
        if needs.machine != machine {
            bail!(
                "{guest} (needed by {needed_by}) is for ELF machine {}, not {machine}",
                needs.machine
            );
        }
        let mut next: Vec<String> = Vec::new();
        if let Some(interpreter) = needs.interpreter {
            if resolve_in_root(root, &interpreter).is_none() {
                bail!(
                    "{guest}'s loader {interpreter} is not in the unpacked packages at {}",
                    root.display()
                );
            }
            next.push(interpreter);
        }
        for soname in &needs.needed {
            let Some(path) = lib_dirs
                .iter()
                .map(|dir| format!("{dir}/{soname}"))
                .find(|path| resolve_in_root(root, path).is_some())
            else {
                bail!(
                    "{guest} needs {soname}, which none of {} holds in the unpacked packages \
                     at {}: its package is missing from the image's package list",
                    lib_dirs.join(", "),
                    root.display()
                );
            };
            next.push(path);
        }
        for path in next {
            if seen.insert(path.clone()) {
                let host = resolve_in_root(root, &path).expect("resolved above");
                found.insert(path.clone(), host);
                queue.push((path, guest.clone()));
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A minimal 64-bit little-endian ELF file for `machine` with a
    /// PT_INTERP and a PT_DYNAMIC naming `needed` (what the loader reads,
    /// and all goblin needs).
    fn elf(machine: u16, interpreter: Option<&str>, needed: &[&str]) -> Vec<u8> {
        let mut strtab = vec![0u8];
        let mut offsets = Vec::new();
        for name in needed {
            offsets.push(strtab.len() as u64);
            strtab.extend_from_slice(name.as_bytes());
            strtab.push(0);
        }
        let interp: Vec<u8> = interpreter
            .map(|i| [i.as_bytes(), &[0]].concat())
            .unwrap_or_default();
        let phnum = 1 + interpreter.is_some() as u64 + 1; // LOAD, INTERP, DYNAMIC
        let ph_off = 64u64;
        let data_off = ph_off + 56 * phnum;
        let interp_off = data_off;
        let strtab_off = interp_off + interp.len() as u64;
        let dyn_off = (strtab_off + strtab.len() as u64 + 7) & !7;
        let mut dynamic: Vec<(u64, u64)> = offsets.iter().map(|&o| (1, o)).collect(); // DT_NEEDED
        dynamic.push((5, strtab_off)); // DT_STRTAB (vaddr = offset: one LOAD at 0)
        dynamic.push((10, strtab.len() as u64)); // DT_STRSZ
        dynamic.push((0, 0));
        let end = dyn_off + 16 * dynamic.len() as u64;
        let mut out = Vec::new();
        out.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
        out.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
        out.extend_from_slice(&machine.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // entry
        out.extend_from_slice(&ph_off.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // shoff
        out.extend_from_slice(&0u32.to_le_bytes());
        for half in [64u16, 56, phnum as u16, 64, 0, 0] {
            out.extend_from_slice(&half.to_le_bytes());
        }
        let mut ph = |kind: u32, off: u64, size: u64| {
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&4u32.to_le_bytes());
            for v in [off, off, off, size, size, 8] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        };
        ph(1, 0, end);
        if interpreter.is_some() {
            ph(3, interp_off, interp.len() as u64);
        }
        ph(2, dyn_off, 16 * dynamic.len() as u64);
        out.extend_from_slice(&interp);
        out.extend_from_slice(&strtab);
        out.resize(dyn_off as usize, 0);
        for (tag, value) in dynamic {
            out.extend_from_slice(&tag.to_le_bytes());
            out.extend_from_slice(&value.to_le_bytes());
        }
        out
    }

    fn put(root: &Path, guest: &str, bytes: &[u8]) {
        let path = root.join(guest.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn link(root: &Path, guest: &str, target: &str) {
        let path = root.join(guest.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(target, path).unwrap();
    }

    const LOADER: &str = "/lib/ld-linux-aarch64.so.1";

    /// A Debian-shaped arm64 root: the loader linked from /lib into the
    /// multiarch directory, libc there, libnuma under /usr/lib behind a
    /// soname link, a program needing both and a static one.
    fn debian_like_root() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let libc = "/lib/aarch64-linux-gnu/libc.so.6";
        put(
            root,
            "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
            &elf(EM_AARCH64, None, &[]),
        );
        link(root, LOADER, "aarch64-linux-gnu/ld-linux-aarch64.so.1");
        put(
            root,
            libc,
            &elf(EM_AARCH64, Some(LOADER), &["ld-linux-aarch64.so.1"]),
        );
        put(
            root,
            "/usr/lib/aarch64-linux-gnu/libnuma.so.1.0.0",
            &elf(EM_AARCH64, None, &["libc.so.6"]),
        );
        link(
            root,
            "/usr/lib/aarch64-linux-gnu/libnuma.so.1",
            "libnuma.so.1.0.0",
        );
        put(
            root,
            "/usr/bin/hackbench",
            &elf(EM_AARCH64, Some(LOADER), &["libnuma.so.1", "libc.so.6"]),
        );
        put(root, "/bin/busybox", &elf(EM_AARCH64, None, &[]));
        dir
    }

    #[test]
    fn needs_are_read_from_the_elf_headers() {
        let bytes = elf(EM_AARCH64, Some(LOADER), &["libnuma.so.1", "libc.so.6"]);
        let needs = elf_needs(&bytes, Path::new("hackbench")).unwrap();
        assert_eq!(
            needs,
            ElfNeeds {
                machine: EM_AARCH64,
                interpreter: Some(LOADER.into()),
                needed: vec!["libnuma.so.1".into(), "libc.so.6".into()],
            }
        );
        let err = elf_needs(b"#!/bin/sh\n", Path::new("/x/script")).unwrap_err();
        assert!(format!("{err:#}").contains("/x/script"), "{err:#}");
    }

    #[test]
    fn the_closure_holds_the_loader_and_every_library_recursively() {
        let dir = debian_like_root();
        let root = dir.path();
        let found = closure(
            root,
            &["/usr/bin/hackbench", "/bin/busybox"],
            EM_AARCH64,
            &library_dirs("aarch64-linux-gnu"),
        )
        .unwrap();
        let guest: Vec<&str> = found.keys().map(String::as_str).collect();
        assert_eq!(
            guest,
            [
                "/bin/busybox",
                "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
                "/lib/aarch64-linux-gnu/libc.so.6",
                LOADER,
                "/usr/bin/hackbench",
                "/usr/lib/aarch64-linux-gnu/libnuma.so.1",
            ]
        );
        // Links are followed to the bytes.
        assert_eq!(
            found["/usr/lib/aarch64-linux-gnu/libnuma.so.1"],
            root.join("usr/lib/aarch64-linux-gnu/libnuma.so.1.0.0")
        );
        assert_eq!(
            found[LOADER],
            root.join("lib/aarch64-linux-gnu/ld-linux-aarch64.so.1")
        );
    }

    #[test]
    fn a_missing_library_or_a_foreign_machine_is_named() {
        let dir = debian_like_root();
        let root = dir.path();
        let dirs = library_dirs("aarch64-linux-gnu");
        std::fs::remove_file(root.join("usr/lib/aarch64-linux-gnu/libnuma.so.1.0.0")).unwrap();
        let err = closure(root, &["/usr/bin/hackbench"], EM_AARCH64, &dirs).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("/usr/bin/hackbench needs libnuma.so.1"),
            "{text}"
        );
        put(root, "/usr/bin/x86", &elf(62, None, &[]));
        let err = closure(root, &["/usr/bin/x86"], EM_AARCH64, &dirs).unwrap_err();
        assert!(format!("{err:#}").contains("/usr/bin/x86"), "{err:#}");
        let err = closure(root, &["/usr/bin/absent"], EM_AARCH64, &dirs).unwrap_err();
        assert!(format!("{err:#}").contains("/usr/bin/absent"), "{err:#}");
    }

    #[test]
    fn links_resolve_inside_the_root_and_loops_end() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(root, "/usr/lib/real", b"x");
        link(root, "/lib/abs", "/usr/lib/real");
        link(root, "/lib/rel", "../usr/lib/real");
        link(root, "/lib/loop", "loop");
        assert_eq!(
            resolve_in_root(root, "/lib/abs"),
            Some(root.join("usr/lib/real"))
        );
        assert_eq!(
            resolve_in_root(root, "/lib/rel"),
            Some(root.join("usr/lib/real"))
        );
        assert_eq!(resolve_in_root(root, "/lib/loop"), None);
        assert_eq!(resolve_in_root(root, "/lib/none"), None);
    }
}
