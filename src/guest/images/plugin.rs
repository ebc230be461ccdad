//! The profile plugin: markbench's TCG plugin (`plugin/`, a crate of its own
//! under GPL-2.0-or-later that QEMU loads; markbench never links it), built
//! with cargo once into the cache, keyed by its source and toolchain.

use super::{key_of, tool_version, Cache};
use crate::base::error::bail;
use crate::base::error::{Context, Result};
use crate::base::sha256::Sha256;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The shared object cargo builds from `plugin/`.
pub const PLUGIN_FILE: &str = "libmarkbench_profile_plugin.so";

/// A built plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilePlugin {
    pub path: PathBuf,
    pub key: crate::base::sha256::Digest,
}

/// The plugin crate's files, built into markbench so that an installed
/// binary builds its plugin without a checkout.
const PLUGIN_SOURCES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../../../plugin/Cargo.toml")),
    ("Cargo.lock", include_str!("../../../plugin/Cargo.lock")),
    (
        "src/attribution.rs",
        include_str!("../../../plugin/src/attribution.rs"),
    ),
    ("src/lib.rs", include_str!("../../../plugin/src/lib.rs")),
    ("src/marks.rs", include_str!("../../../plugin/src/marks.rs")),
    (
        "src/model/caches.rs",
        include_str!("../../../plugin/src/model/caches.rs"),
    ),
    (
        "src/model/coherence.rs",
        include_str!("../../../plugin/src/model/coherence.rs"),
    ),
    (
        "src/model/config.rs",
        include_str!("../../../plugin/src/model/config.rs"),
    ),
    (
        "src/model/counts.rs",
        include_str!("../../../plugin/src/model/counts.rs"),
    ),
    (
        "src/model/mod.rs",
        include_str!("../../../plugin/src/model/mod.rs"),
    ),
    (
        "src/model/predictors.rs",
        include_str!("../../../plugin/src/model/predictors.rs"),
    ),
    (
        "src/model/prefetcher.rs",
        include_str!("../../../plugin/src/model/prefetcher.rs"),
    ),
    (
        "src/model/reference.rs",
        include_str!("../../../plugin/src/model/reference.rs"),
    ),
    (
        "src/model/strings.rs",
        include_str!("../../../plugin/src/model/strings.rs"),
    ),
    (
        "src/model/testing.rs",
        include_str!("../../../plugin/src/model/testing.rs"),
    ),
    (
        "src/model/tlb.rs",
        include_str!("../../../plugin/src/model/tlb.rs"),
    ),
    (
        "src/model/weave.rs",
        include_str!("../../../plugin/src/model/weave.rs"),
    ),
    (
        "src/throughput.rs",
        include_str!("../../../plugin/src/throughput.rs"),
    ),
    (
        "src/translation.rs",
        include_str!("../../../plugin/src/translation.rs"),
    ),
];

/// The plugin's crate, written from the built-in sources into the cache
/// (once per content) so cargo can build it there.
pub fn plugin_dir() -> Result<PathBuf> {
    let parts: Vec<(&str, &[u8])> = PLUGIN_SOURCES
        .iter()
        .map(|(name, text)| (*name, text.as_bytes()))
        .collect();
    let dir = Cache::here()
        .plugin()
        .join(format!("src-{}", key_of(&parts).short()));
    for (name, text) in PLUGIN_SOURCES {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(*text) {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(dir)
}

/// Every file that goes into the plugin, sorted: manifest, lock file,
/// sources (every `.rs` under `src/`, modules in directories among them).
fn sources(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = vec![dir.join("Cargo.toml"), dir.join("Cargo.lock")];
    let src = dir.join("src");
    let mut rs = Vec::new();
    for entry in walkdir::WalkDir::new(&src) {
        let entry = entry
            .with_context(|| format!("reading {} (the profile plugin's source)", src.display()))?;
        if entry.file_type().is_file() && entry.path().extension().is_some_and(|x| x == "rs") {
            rs.push(entry.into_path());
        }
    }
    rs.sort();
    files.extend(rs);
    Ok(files)
}

/// The cache key of the plugin in `dir`: its files and the toolchain.
pub fn plugin_key(dir: &Path) -> Result<Sha256> {
    let cargo = cargo();
    let mut parts: Vec<(String, Vec<u8>)> = vec![
        ("recipe".into(), b"profile plugin v1".to_vec()),
        ("cargo".into(), tool_version(&cargo).into_bytes()),
        ("rustc".into(), tool_version("rustc").into_bytes()),
    ];
    for f in sources(dir)? {
        let name = f.strip_prefix(dir).unwrap_or(&f).display().to_string();
        let bytes = std::fs::read(&f).with_context(|| format!("reading {}", f.display()))?;
        parts.push((name, bytes));
    }
    let refs: Vec<(&str, &[u8])> = parts
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_slice()))
        .collect();
    Ok(key_of(&refs))
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Returns the plugin built from the source tree's `plugin/`, building it
/// when its key is not in the cache.
pub fn ensure_plugin() -> Result<ProfilePlugin> {
    ensure_plugin_at(&plugin_dir()?, &Cache::here().plugin())
}

/// Builds the plugin crate in `dir` into the cache directory `root`.
pub fn ensure_plugin_at(dir: &Path, root: &Path) -> Result<ProfilePlugin> {
    // One build at a time in this process: its partial file is named by
    // the process, so two threads building at once (on a cold cache)
    // would copy into one partial file and rename it from under each
    // other. The second finds the first's entry when it gets the lock.
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _building = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let key = plugin_key(dir)?;
    let root = root.to_path_buf();
    let path = root.join(key.short()).join(PLUGIN_FILE);
    if super::seal::usable_file_entry(&path, "profile plugin") {
        return Ok(ProfilePlugin {
            path,
            key: key.into(),
        });
    }
    crate::base::message::note("building the profile plugin …");
    let target = root.join("target");
    std::fs::create_dir_all(&target).with_context(|| format!("creating {}", target.display()))?;
    let log = root.join("build.log");
    let out = Command::new(cargo())
        .args(["build", "--release", "--locked", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        // The plugin is built for the host as it is, whatever flags or
        // target the markbench build itself was given.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .with_context(|| format!("starting {} to build the profile plugin", cargo()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::write(&log, &text);
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "building the profile plugin in {} failed ({}); log {}:\n{}",
            dir.display(),
            out.status,
            log.display(),
            tail.join("\n")
        );
    }
    let built = target.join("release").join(PLUGIN_FILE);
    if !built.is_file() {
        bail!(
            "building the profile plugin gave no {} (log {})",
            built.display(),
            log.display()
        );
    }
    let parent = path.parent().unwrap_or(&root);
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::copy(&built, &partial)
        .with_context(|| format!("copying {} to {}", built.display(), partial.display()))?;
    super::seal::seal_file_entry(&partial, &path)?;
    std::fs::rename(&partial, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(ProfilePlugin {
        path,
        key: key.into(),
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_built_in_plugin_sources_are_the_plugin_crate() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin");
        let on_disk: Vec<String> = sources(&dir)
            .unwrap()
            .iter()
            .map(|f| f.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        let built_in: Vec<&str> = PLUGIN_SOURCES.iter().map(|(n, _)| *n).collect();
        assert_eq!(on_disk, built_in);
        for (name, text) in PLUGIN_SOURCES {
            assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text);
        }
    }

    /// Every `.rs` file under `plugin/src`, found apart from [`sources`]:
    /// a module missing from the built-in list would build from the
    /// checkout but not from an installed binary.
    #[test]
    fn every_rust_file_under_the_plugins_src_is_built_in() {
        fn walk(dir: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|x| x == "rs") {
                    out.push(path.display().to_string());
                }
            }
        }
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin");
        let mut found = Vec::new();
        walk(&dir.join("src"), &mut found);
        // The walk went into the modules' directories.
        assert!(found
            .iter()
            .any(|f| Path::new(f).parent() != Some(&dir.join("src"))));
        for file in found {
            let name = Path::new(&file).strip_prefix(&dir).unwrap();
            let name = name.display().to_string();
            assert!(
                PLUGIN_SOURCES.iter().any(|(n, _)| *n == name),
                "{name} is not in PLUGIN_SOURCES"
            );
        }
    }

    use super::*;

    #[test]
    fn the_key_follows_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("Cargo.toml"), "[package]").unwrap();
        std::fs::write(root.join("Cargo.lock"), "").unwrap();
        std::fs::write(root.join("src/lib.rs"), "// one").unwrap();
        let first = plugin_key(root).unwrap();
        assert_eq!(plugin_key(root).unwrap(), first);
        std::fs::write(root.join("src/lib.rs"), "// two").unwrap();
        let second = plugin_key(root).unwrap();
        assert_ne!(second, first);
        // A module in a directory of its own counts as much.
        std::fs::create_dir_all(root.join("src/model")).unwrap();
        std::fs::write(root.join("src/model/mod.rs"), "// one").unwrap();
        let third = plugin_key(root).unwrap();
        assert_ne!(third, second);
        std::fs::write(root.join("src/model/mod.rs"), "// two").unwrap();
        assert_ne!(plugin_key(root).unwrap(), third);
    }

    /// A crate at `root` named `name` that builds a cdylib of `source`.
    fn plugin_crate(root: &Path, name: &str, source: &str) {
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n[lib]\ncrate-type = [\"cdylib\"]\n"),
        )
        .unwrap();
        std::fs::write(
            root.join("Cargo.lock"),
            format!("version = 3\n\n[[package]]\nname = \"{name}\"\nversion = \"0.1.0\"\n"),
        )
        .unwrap();
        std::fs::write(root.join("src/lib.rs"), source).unwrap();
    }

    #[test]
    fn threads_that_need_the_plugin_at_once_on_a_cold_cache_all_get_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        plugin_crate(dir.path(), "markbench_profile_plugin", "");
        let paths: Vec<PathBuf> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..6)
                .map(|_| scope.spawn(|| ensure_plugin_at(dir.path(), cache.path())))
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap().unwrap().path)
                .collect()
        });
        assert!(
            paths.iter().all(|p| p == &paths[0] && p.is_file()),
            "{paths:?}"
        );
    }

    #[test]
    fn a_plugin_that_does_not_build_is_an_error_naming_why() {
        let dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let root = dir.path();
        plugin_crate(root, "broken", "this is not rust");
        let e = ensure_plugin_at(root, cache.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("building the profile plugin"), "{e}");
        assert!(e.contains("expected"), "{e}");
    }
}
