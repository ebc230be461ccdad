//! Images: guest kernels and the guest initramfs, built once and cached
//! outside the repository, keyed by everything that goes into them.

pub mod cache;
pub mod compile_tree;
pub mod fragments;
pub mod initramfs;
pub mod kernel;
pub mod plugin;
pub mod seal;
pub mod size;
pub mod source;
pub mod workspace;

use sha2::{Digest, Sha256};
use std::path::PathBuf;

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

/// Hex SHA-256 of a sequence of labelled parts (labels keep `ab`+`c` apart from `a`+`bc`).
pub fn key_of(parts: &[(&str, &[u8])]) -> String {
    let mut hasher = Sha256::new();
    for (label, bytes) in parts {
        hasher.update((label.len() as u64).to_le_bytes());
        hasher.update(label.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hex::encode(hasher.finalize())
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
