//! What a cache entry held when it was made: the size and SHA-256 of each
//! file a boot or a build reads from it (a kernel's `bzImage` and
//! `config`, a guest image, the compile-tree archive, the profile plugin).
//! Using an entry checks them, so a file truncated by a full disk or a
//! killed copy, or changed since, is found and the entry rebuilt, never
//! booted.
//!
//! A kernel or a compile tree keeps its seals in its record (`kernel.toml`,
//! `compile-tree.toml`); a single-file entry (a guest image, the plugin)
//! in a file beside it, `<entry>.seal`, written before the entry is moved
//! into place, so an entry never exists without its seal. Entries made
//! before seals were kept are checked for what can be checked without one
//! (a `bzImage`'s boot header against its length) and sealed on first use.

use crate::base::error::{Context, Result};
use crate::base::sha256::Sha256;
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The size and SHA-256 of one file. A record whose hash is no SHA-256
/// does not read: its entry is damaged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    pub bytes: u64,
    pub sha256: Sha256,
}

/// The seal file beside a single-file entry.
pub const SEAL_SUFFIX: &str = ".seal";

/// The seal of the file at `path` (a regular file, links followed),
/// hashed as it is read, a block at a time.
pub fn seal_of(path: &Path) -> Result<Seal> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if !meta.is_file() {
        crate::base::error::bail!("{}: not a regular file", path.display());
    }
    let mut file =
        std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = file
            .read(&mut buffer)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        hasher.update(&buffer[..n]);
    }
    Ok(Seal {
        bytes,
        sha256: Sha256::from_digest(&hasher.finalize()),
    })
}

/// Why the file at `path` does not match `seal`, if it does not: its size
/// first (cheap, and what a cut-short copy changes), then its hash.
pub fn damage(path: &Path, seal: &Seal) -> Option<String> {
    let name = path.display();
    match std::fs::metadata(path) {
        Err(e) => return Some(format!("{name}: {e}")),
        Ok(m) if !m.is_file() => return Some(format!("{name}: not a regular file")),
        Ok(m) if m.len() != seal.bytes => {
            return Some(format!(
                "{name}: {} bytes, {} when it was made",
                m.len(),
                seal.bytes
            ))
        }
        Ok(_) => {}
    }
    match seal_of(path) {
        Err(e) => Some(format!("{e:#}")),
        Ok(now) if now.sha256 != seal.sha256 => Some(format!(
            "{name}: its SHA-256 is {}, {} when it was made",
            now.sha256.short(),
            seal.sha256.short()
        )),
        Ok(_) => None,
    }
}

/// The seal file of the single-file entry at `path`.
pub fn seal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(SEAL_SUFFIX);
    PathBuf::from(name)
}

/// Seals `made` (a file about to be moved to `entry`): writes the seal
/// beside where the entry will be, before the entry is moved in.
pub fn seal_file_entry(made: &Path, entry: &Path) -> Result<()> {
    let seal = seal_of(made)?;
    let path = seal_path(entry);
    let tmp = path.with_extension(format!("seal.partial-{}", std::process::id()));
    std::fs::write(&tmp, toml::to_string(&seal)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

/// What checking an entry found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealVerdict {
    /// Its files match their seals.
    Sound,
    /// It had no seals (made before they were kept); what could be checked
    /// was, and it is sealed now.
    SealedNow,
    /// Why it cannot be used.
    Damaged(String),
}

/// Checks the single-file entry at `path` against its seal, sealing an
/// entry made before seals were kept.
pub fn check_file_entry(path: &Path) -> SealVerdict {
    let seal_file = seal_path(path);
    match std::fs::read_to_string(&seal_file) {
        Ok(text) => match toml::from_str::<Seal>(&text) {
            Ok(seal) => damage(path, &seal).map_or(SealVerdict::Sound, SealVerdict::Damaged),
            Err(e) => SealVerdict::Damaged(format!("{}: malformed seal: {e}", seal_file.display())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match seal_file_entry(path, path) {
            Ok(()) => SealVerdict::SealedNow,
            Err(e) => SealVerdict::Damaged(format!("{e:#}")),
        },
        Err(e) => SealVerdict::Damaged(format!("{}: {e}", seal_file.display())),
    }
}

/// Whether the single-file entry at `path` may be used: `true` when it
/// is sound (or sealed now); when damaged, says so naming it, removes it
/// and its seal, and gives `false`, so the caller builds it again.
pub fn usable_file_entry(path: &Path, what: &str) -> bool {
    if !path.exists() {
        return false;
    }
    match check_file_entry(path) {
        SealVerdict::Sound | SealVerdict::SealedNow => true,
        SealVerdict::Damaged(why) => {
            crate::base::message::warning(format_args!(
                "cached {what} {} is damaged ({why}): building it again",
                path.display()
            ));
            let _ = std::fs::remove_file(path);
            let _ = std::fs::remove_file(seal_path(path));
            false
        }
    }
}

/// What a source tree held when it was made: its regular files' count and
/// total size. A tree of a commit is some 70,000 files; hashing them at
/// each use would cost more than the build it saves, while a count and a
/// sum of sizes (metadata alone, a fraction of a second) find a tree cut
/// short by a full disk or a killed extraction, and files removed or
/// emptied by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeSeal {
    pub files: u64,
    pub bytes: u64,
}

/// The seal of the tree under `dir` (links not followed).
pub fn tree_seal_of(dir: &Path) -> TreeSeal {
    let mut seal = TreeSeal { files: 0, bytes: 0 };
    for meta in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
    {
        seal.files += 1;
        seal.bytes += meta.len();
    }
    seal
}

/// Checks the tree under `dir` against the seal kept in `seal_file`; a
/// tree made before seals were kept is sealed as it is.
pub fn check_tree(dir: &Path, seal_file: &Path) -> SealVerdict {
    let now = tree_seal_of(dir);
    match std::fs::read_to_string(seal_file) {
        Ok(text) => match toml::from_str::<TreeSeal>(&text) {
            Ok(seal) if seal == now => SealVerdict::Sound,
            Ok(seal) => SealVerdict::Damaged(format!(
                "{}: {} files of {} bytes, {} of {} when it was made",
                dir.display(),
                now.files,
                now.bytes,
                seal.files,
                seal.bytes
            )),
            Err(e) => SealVerdict::Damaged(format!("{}: malformed seal: {e}", seal_file.display())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match write_tree_seal(&now, seal_file) {
                Ok(()) => SealVerdict::SealedNow,
                Err(e) => SealVerdict::Damaged(format!("{e:#}")),
            }
        }
        Err(e) => SealVerdict::Damaged(format!("{}: {e}", seal_file.display())),
    }
}

/// Writes `seal` to `seal_file` (through a file beside it, renamed).
pub fn write_tree_seal(seal: &TreeSeal, seal_file: &Path) -> Result<()> {
    let tmp = seal_file.with_extension(format!("seal.partial-{}", std::process::id()));
    std::fs::write(&tmp, toml::to_string(seal)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, seal_file).with_context(|| format!("writing {}", seal_file.display()))
}

/// What a `bzImage`'s own header says about it, for a kernel entry made
/// before seals were kept: the boot protocol's `HdrS` signature, and a
/// length at least the setup sectors and the protected-mode part it
/// declares (`setup_sects`, `syssize`), which a truncated copy is not.
pub fn bzimage_header_damage(path: &Path) -> Option<String> {
    let name = path.display();
    let mut header = [0u8; 0x206];
    let len = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => return Some(format!("{name}: not a regular file")),
        Err(e) => return Some(format!("{name}: {e}")),
    };
    if let Err(e) = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut header)) {
        return Some(format!("{name}: no boot header ({e})"));
    }
    if &header[0x202..0x206] != b"HdrS" {
        return Some(format!("{name}: no HdrS boot signature"));
    }
    let setup_sects = match header[0x1f1] {
        0 => 4,
        n => u64::from(n),
    };
    let syssize = u64::from(u32::from_le_bytes([
        header[0x1f4],
        header[0x1f5],
        header[0x1f6],
        header[0x1f7],
    ]));
    let declared = (setup_sects + 1) * 512 + syssize * 16;
    (len < declared).then(|| format!("{name}: {len} bytes, its header declares {declared}"))
}

/// What the kernel image of `arch` at `path` says about itself by its
/// header: a `bzImage`'s boot header ([`bzimage_header_damage`]) or an
/// arm64 `Image`'s ([`arm64_image_header_damage`]).
pub fn kernel_image_header_damage(path: &Path, arch: crate::base::arch::Arch) -> Option<String> {
    match arch {
        crate::base::arch::Arch::X86_64 => bzimage_header_damage(path),
        crate::base::arch::Arch::Arm64 => arm64_image_header_damage(path),
    }
}

/// The arm64 `Image` header's magic, `ARM\x64`, at [`ARM64_MAGIC_OFFSET`]
/// (the kernel's Documentation/arm64/booting.rst).
pub const ARM64_MAGIC: [u8; 4] = *b"ARM\x64";
pub const ARM64_MAGIC_OFFSET: usize = 0x38;

/// What an arm64 `Image`'s 64-byte header says about it: the magic, and a
/// declared size (`image_size` at 0x10: what is loaded, BSS included) that
/// is not zero and not below the file's length. The declared size covers
/// the BSS the file does not carry, so a truncation past the header is
/// caught by the entry's seal, not here.
pub fn arm64_image_header_damage(path: &Path) -> Option<String> {
    let name = path.display();
    let mut header = [0u8; 0x40];
    let len = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => return Some(format!("{name}: not a regular file")),
        Err(e) => return Some(format!("{name}: {e}")),
    };
    if let Err(e) = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut header)) {
        return Some(format!("{name}: no arm64 Image header ({e})"));
    }
    if header[ARM64_MAGIC_OFFSET..ARM64_MAGIC_OFFSET + 4] != ARM64_MAGIC {
        return Some(format!(
            "{name}: no arm64 Image magic (\"ARM\\x64\" at offset {ARM64_MAGIC_OFFSET:#x})"
        ));
    }
    let mut size = [0u8; 8];
    size.copy_from_slice(&header[0x10..0x18]);
    let image_size = u64::from_le_bytes(size);
    if image_size == 0 {
        return Some(format!("{name}: its header declares no image size"));
    }
    (len > image_size)
        .then(|| format!("{name}: {len} bytes, more than the {image_size} its header declares"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_whose_hash_was_cut_short_is_damage_named_by_its_file_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("base.cpio");
        std::fs::write(&entry, b"image").unwrap();
        seal_file_entry(&entry, &entry).unwrap();
        assert_eq!(check_file_entry(&entry), SealVerdict::Sound);
        let seal_file = seal_path(&entry);
        let text = std::fs::read_to_string(&seal_file).unwrap();
        let sha256 = seal_of(&entry).unwrap().sha256;
        std::fs::write(
            &seal_file,
            text.replace(sha256.as_str(), &sha256.as_str()[..8]),
        )
        .unwrap();
        match check_file_entry(&entry) {
            SealVerdict::Damaged(why) => {
                assert!(why.contains("base.cpio.seal"), "{why}");
                assert!(why.contains("64 hex digits"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// A file shaped like a bzImage: the boot header declaring `syssize`
    /// paragraphs after one setup sector.
    fn fake_bzimage(path: &Path, syssize: u32, len: usize) {
        let mut bytes = vec![0u8; len];
        bytes[0x1f1] = 1;
        bytes[0x1f4..0x1f8].copy_from_slice(&syssize.to_le_bytes());
        bytes[0x202..0x206].copy_from_slice(b"HdrS");
        std::fs::write(path, bytes).unwrap();
    }

    /// A file shaped like an arm64 Image: the header's magic and its
    /// declared size.
    fn fake_arm64_image(path: &Path, image_size: u64, len: usize) {
        let mut bytes = vec![0u8; len];
        bytes[0x10..0x18].copy_from_slice(&image_size.to_le_bytes());
        bytes[ARM64_MAGIC_OFFSET..ARM64_MAGIC_OFFSET + 4].copy_from_slice(&ARM64_MAGIC);
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn an_arm64_image_is_told_by_its_magic_and_a_bzimage_is_not_one() {
        use crate::base::arch::Arch;
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("Image");
        fake_arm64_image(&image, 8192, 4096);
        assert_eq!(kernel_image_header_damage(&image, Arch::Arm64), None);
        // The same file is no bzImage, and a bzImage no arm64 Image.
        assert!(kernel_image_header_damage(&image, Arch::X86_64).is_some());
        let bz = dir.path().join("bzImage");
        fake_bzimage(&bz, 64, 1024 + 64 * 16);
        let why = kernel_image_header_damage(&bz, Arch::Arm64).unwrap();
        assert!(why.contains("no arm64 Image magic"), "{why}");
        fake_arm64_image(&image, 0, 4096);
        let why = arm64_image_header_damage(&image).unwrap();
        assert!(why.contains("no image size"), "{why}");
        fake_arm64_image(&image, 1024, 4096);
        let why = arm64_image_header_damage(&image).unwrap();
        assert!(why.contains("more than the 1024"), "{why}");
        std::fs::write(&image, b"ARM").unwrap();
        let why = arm64_image_header_damage(&image).unwrap();
        assert!(why.contains("no arm64 Image header"), "{why}");
    }

    #[test]
    fn a_truncated_bzimage_is_told_by_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bzImage");
        fake_bzimage(&path, 64, 1024 + 64 * 16);
        assert_eq!(bzimage_header_damage(&path), None);
        fake_bzimage(&path, 64, 1024 + 64 * 16 - 100);
        let why = bzimage_header_damage(&path).unwrap();
        assert!(why.contains("its header declares 2048"), "{why}");
        std::fs::write(&path, b"not a kernel").unwrap();
        assert!(bzimage_header_damage(&path).is_some());
    }

    #[test]
    fn a_tree_cut_short_or_emptied_is_told_by_its_seal() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("linux");
        std::fs::create_dir_all(tree.join("kernel")).unwrap();
        std::fs::write(tree.join("Makefile"), "VERSION = 6\n").unwrap();
        std::fs::write(tree.join("kernel/fork.c"), "int x;\n").unwrap();
        let seal = dir.path().join("tree.seal");
        assert_eq!(check_tree(&tree, &seal), SealVerdict::SealedNow);
        assert_eq!(check_tree(&tree, &seal), SealVerdict::Sound);
        std::fs::write(tree.join("kernel/fork.c"), "").unwrap();
        let SealVerdict::Damaged(why) = check_tree(&tree, &seal) else {
            panic!("an emptied file went unnoticed");
        };
        assert!(
            why.contains("2 files of 12 bytes, 2 of 19 when it was made"),
            "{why}"
        );
    }

    #[test]
    fn a_file_entry_is_sealed_then_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("base-0123.cpio");
        std::fs::write(&path, vec![7u8; 5000]).unwrap();
        // Made before seals: sealed on first use.
        assert_eq!(check_file_entry(&path), SealVerdict::SealedNow);
        assert_eq!(check_file_entry(&path), SealVerdict::Sound);
        // Same size, another byte: the hash tells.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[10] = 8;
        std::fs::write(&path, &bytes).unwrap();
        let SealVerdict::Damaged(why) = check_file_entry(&path) else {
            panic!("a changed byte went unnoticed");
        };
        assert!(why.contains("SHA-256"), "{why}");
        // Cut short: the size tells; the entry is removed to be rebuilt.
        std::fs::write(&path, &bytes[..100]).unwrap();
        assert!(!usable_file_entry(&path, "guest image"));
        assert!(!path.exists() && !seal_path(&path).exists());
    }
}
