//! Images: guest kernels and the guest initramfs, built once and cached
//! outside the repository, keyed by everything that goes into them.

pub mod agent_build;
pub mod agent_flags;
pub mod arm64_root;
pub mod cache;
pub mod compile_tree;
pub mod fragments;
pub mod guest_elf;
pub mod initramfs;
pub mod kernel;
pub mod lock;
pub mod plugin;
pub mod qemu_build;
pub mod seal;
pub mod size;
pub mod source;
pub mod workspace;

// Entry names carry a key's first 16 hex digits, as it is shown.
use crate::base::sha256::short;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Environment variable overriding the cache directory.
pub const CACHE_ENV: &str = "MARKBENCH_CACHE";

/// Root of the build cache: `$MARKBENCH_CACHE`, else `$XDG_CACHE_HOME/markbench`,
/// else `~/.cache/markbench`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(CACHE_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("markbench");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache").join("markbench")
}

/// The cache's layout: where each kind of entry lives under the root, as
/// [`crate::base::run_dir::RunDir`] knows a run directory's. Entries named by a
/// key use its first 16 hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// The cache this process uses ([`cache_dir`]).
    pub fn here() -> Cache {
        Cache::at(cache_dir())
    }

    pub fn at(root: PathBuf) -> Cache {
        Cache { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A top-level folder of the cache.
    fn folder(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Built kernels, one folder each.
    pub fn kernels(&self) -> PathBuf {
        self.folder("kernels")
    }

    /// The folder of the kernel `name` with build key `key`.
    pub fn kernel(&self, name: &str, key: &str) -> PathBuf {
        self.kernels().join(format!("{name}-{}", short(key)))
    }

    /// The first workspace of configuration `name` with workspace key `key`
    /// (the others are named after it, see [`workspace::slots`]).
    pub fn workspace(&self, name: &str, key: &str) -> PathBuf {
        self.folder("workspaces")
            .join(format!("{name}-{}", short(key)))
    }

    /// Sources: unpacked tarballs, commit snapshots, patched copies.
    pub fn sources(&self) -> PathBuf {
        self.folder("src")
    }

    /// An unpacked tarball, by the key of its identity.
    pub fn unpacked(&self, key: &str) -> PathBuf {
        self.sources().join(short(key))
    }

    /// A commit's snapshot (its tree in `linux/`).
    pub fn snapshot(&self, commit: &str) -> PathBuf {
        self.sources().join(format!("rev-{commit}"))
    }

    /// A base with patches applied, by the key of the origin.
    pub fn patched(&self, key: &str) -> PathBuf {
        self.sources().join(format!("patched-{}", short(key)))
    }

    /// The profile plugin's builds and their sources.
    pub fn plugin(&self) -> PathBuf {
        self.folder("plugin")
    }

    /// ccache's objects, shared by every kernel build.
    pub fn ccache(&self) -> PathBuf {
        self.folder("ccache")
    }

    /// The compile workload's prepared tree, by key.
    pub fn compile_tree(&self, key: &str) -> PathBuf {
        self.folder("compile-tree").join(short(key))
    }

    /// Guest initramfs images.
    pub fn initramfs(&self) -> PathBuf {
        self.folder("initramfs")
    }

    /// What a guest image of a foreign architecture is made of (its agent,
    /// its Debian packages, their unpacked root), as markbench cannot take
    /// it from the host: `guest-arm64`.
    pub fn foreign_guest(&self, arch: crate::base::arch::Arch) -> PathBuf {
        self.folder(&format!("guest-{}", arch.as_str()))
    }

    /// Scratch files of the trial boots.
    pub fn trials(&self) -> PathBuf {
        self.folder("trials")
    }

    /// markbench's own QEMU builds, one folder each, and their source.
    pub fn qemu_builds(&self) -> PathBuf {
        self.folder("qemu-builds")
    }

    /// What QEMU was found able to do (SMP under icount), by its key.
    pub fn qemu_verdict(&self, key: &str) -> PathBuf {
        self.folder("qemu")
            .join(format!("smp-icount-{}.toml", short(key)))
    }

    /// Whether a QEMU tells the plugin the running vCPU, by the key of the
    /// QEMU binary and the plugin.
    pub fn which_vcpu_verdict(&self, key: &str) -> PathBuf {
        self.folder("qemu")
            .join(format!("which-vcpu-{}.toml", short(key)))
    }

    /// The accelerator decided for a host and QEMU, by their key.
    pub fn accel_verdict(&self, key: &str) -> PathBuf {
        self.folder("accel").join(format!("{key}.toml"))
    }
}

/// Hex SHA-256 of a sequence of labelled parts (labels keep `ab`+`c` apart from `a`+`bc`).
pub fn key_of(parts: &[(&str, &[u8])]) -> crate::base::sha256::Sha256 {
    let mut hasher = Sha256::new();
    for (label, bytes) in parts {
        hasher.update((label.len() as u64).to_le_bytes());
        hasher.update(label.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    crate::base::sha256::Sha256::from_digest(&hasher.finalize())
}

/// First line of `program --version`, or "unknown".
pub fn tool_version(program: &str) -> String {
    std::process::Command::new(program)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// SHA-256 of a file's bytes, hex.
pub(crate) fn content_sha256(path: &Path) -> crate::base::error::Result<String> {
    use crate::base::error::Context;
    let mut file =
        std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hasher).with_context(|| format!("reading {}", path.display()))?;
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_separates_parts() {
        assert_ne!(
            key_of(&[("x", b"ab"), ("y", b"c")]),
            key_of(&[("x", b"a"), ("y", b"bc")])
        );
        assert_eq!(key_of(&[("x", b"ab")]), key_of(&[("x", b"ab")]));
    }
}
