//! A real build: the same source and configuration built under two
//! different caches (so from trees and into `O=` directories at different
//! paths) gives a byte-identical bzImage and vmlinux. The second cache
//! shares the first's ccache directory (`MARKBENCH_CCACHE_DIR`), so this
//! costs a rebuild from ccache's objects, minutes rather than a full build;
//! ccache only returns what the compiler would have produced, so sharing it
//! hides no difference in the compiler's output.

use assert_cmd::Command;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    hex::encode(Sha256::digest(bytes))
}

/// The markers-off kernel's directory in `cache`, if built.
fn markers_off(cache: &Path) -> Option<PathBuf> {
    std::fs::read_dir(cache.join("kernels"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("markers-off-")
                && name.len() == "markers-off-".len() + 16
                && p.join("bzImage").is_file()
                && p.join("build/vmlinux").is_file()
        })
}

/// Builds markers-off into `cache` with `markbench images`, ccache in `ccache`.
fn build(cache: &Path, ccache: &Path, suite: &Path) -> PathBuf {
    let out = Command::cargo_bin("markbench")
        .unwrap()
        .args(["images", "--suite"])
        .arg(suite)
        .env("MARKBENCH_CACHE", cache)
        .env("MARKBENCH_CCACHE_DIR", ccache)
        .timeout(std::time::Duration::from_secs(2 * 60 * 60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "images failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    markers_off(cache).expect("a markers-off kernel in the cache")
}

#[test]
fn one_source_and_config_built_under_two_caches_is_byte_identical() {
    let normal = markbench::images::cache_dir();
    let ccache = normal.join("ccache");
    let dir = tempfile::tempdir().unwrap();
    // Both variants on the markers-off fragment: one kernel to build.
    let suite = dir.path().join("one-kernel.toml");
    let quick = std::fs::read_to_string("suites/quick.toml").unwrap();
    std::fs::write(
        &suite,
        quick.replace("kernel = \"markers-on\"", "kernel = \"markers-off\""),
    )
    .unwrap();
    for f in ["base.config", "markers-off.config"] {
        std::fs::copy(Path::new("vm-images").join(f), dir.path().join(f)).unwrap();
    }

    let fresh = build(&dir.path().join("cache-a"), &ccache, &suite);
    // The kernel of the usual cache when there is one (built in another
    // directory, at another time), else a second fresh cache.
    let reference = match markers_off(&normal).filter(|k| k.file_name() == fresh.file_name()) {
        Some(k) => k,
        None => build(&dir.path().join("cache-b"), &ccache, &suite),
    };
    assert_ne!(fresh, reference);
    let record = |k: &Path| std::fs::read_to_string(k.join("kernel.toml")).unwrap();
    eprintln!("fresh cache: {}\n{}", fresh.display(), record(&fresh));
    for file in ["bzImage", "build/vmlinux"] {
        let (a, b) = (sha256(&fresh.join(file)), sha256(&reference.join(file)));
        eprintln!(
            "{file}: sha256 {a} ({}), {b} ({})",
            fresh.display(),
            reference.display()
        );
        assert_eq!(a, b, "{file} differs between the two caches");
    }
}
