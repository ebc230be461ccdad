//! markbench installed with `cargo install` works wherever it is: the
//! checkout is copied away, installed from the copy into a fresh root, and
//! the copy deleted; the binary then plans the default suite (built in) from
//! a directory that holds nothing of markbench's, and runs a real compare of
//! a suite kept in another directory, packing the guest initramfs itself.
//!
//! The compare boots each of the markers-off and markers-on kernels once, 1
//! vCPU, one short hackbench run (about a minute here with the kernels in
//! ~/.cache/markbench; on a cold cache it builds them first, as the
//! end-to-end test does). The install is a `--debug` build, which compiles
//! in a fraction of a release build's time and installs the same way.

use markbench::record::RunMeta;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Copies the checkout's files, without its build output, git data and runs.
fn copy_checkout(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if from == Path::new(env!("CARGO_MANIFEST_DIR"))
            && [".git", "target", "reports"].contains(&name.to_str().unwrap_or_default())
        {
            continue;
        }
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_checkout(&entry.path(), &to.join(&name));
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

/// The directory this test's own build went to (`target/`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/install-<hash>
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `cargo install` of a copy of this checkout into `root`; the copy is gone
/// when it returns.
fn install_from_a_copy(root: &Path) -> PathBuf {
    let copy = tempfile::tempdir().unwrap();
    let checkout = copy.path().join("markbench");
    copy_checkout(Path::new(env!("CARGO_MANIFEST_DIR")), &checkout);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut install = Command::new(cargo);
    install
        .args([
            "install",
            "--offline",
            "--locked",
            "--debug",
            "--bin",
            "markbench",
        ])
        .arg("--path")
        .arg(&checkout)
        .arg("--root")
        .arg(root)
        // Its own target directory, kept between runs so the dependencies
        // build once; not this test's, whose lock the running `cargo test` holds.
        .env("CARGO_TARGET_DIR", target_dir().join("install-test"))
        .current_dir(copy.path());
    // What cargo tells this test about this package is not the copy's.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("CARGO_PKG_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_CRATE_NAME",
                "CARGO_PRIMARY_PACKAGE",
            ]
            .contains(&key.as_str())
        {
            install.env_remove(key);
        }
    }
    let out = install.output().unwrap();
    assert!(out.status.success(), "cargo install failed\n{}", text(&out));
    drop(copy);
    assert!(!checkout.exists());
    root.join("bin/markbench")
}

const TINY: &str = r#"
name = "installed"
description = "markbench installed elsewhere: one short hackbench run a side"
boots = 1
iterations = 1
warmup = 0
cpus = [1]
memory_mib = 256
boot_timeout_s = 300
accel = "tcg"
[[variant]]
name = "markers-off"
kernel = "markers-off"
[[variant]]
name = "markers-on"
kernel = "markers-on"
[[workload]]
kind = "hackbench"
params = [1]
loops = 5
"#;

#[test]
fn an_installed_binary_runs_with_its_checkout_gone() {
    let root = tempfile::tempdir().unwrap();
    let bin = install_from_a_copy(&root.path().join("install"));

    // Nothing of markbench's in the working directory: the default suite
    // and every fragment come from the binary.
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = Command::new(&bin)
        .args(["compare", "--dry-run"])
        .current_dir(&work)
        .output()
        .unwrap();
    let dry = text(&out);
    assert!(out.status.success(), "{dry}");
    assert!(
        dry.contains("suite quick (built-in suites/quick.toml)"),
        "{dry}"
    );
    assert!(dry.contains("running markbench's built-in copy"), "{dry}");
    assert!(
        dry.contains("markers-on.config        built in (sha256 "),
        "{dry}"
    );
    assert!(!dry.contains(env!("CARGO_MANIFEST_DIR")), "{dry}");

    // A suite kept elsewhere, with an (unchanged) copy of one shipped
    // fragment beside it, given by a path relative to the working directory.
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("vm-images")).unwrap();
    std::fs::write(elsewhere.join("tiny.toml"), TINY).unwrap();
    let beside = elsewhere.join("vm-images/markers-on.config");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("vm-images/markers-on.config"),
        &beside,
    )
    .unwrap();

    // A cache of its own for the initramfs, which this binary must pack
    // itself; the kernels (and the unpacked source) are the shared cache's.
    let cache = root.path().join("cache");
    let shared = markbench::guest::images::cache_dir();
    std::fs::create_dir_all(&cache).unwrap();
    for dir in ["kernels", "src"] {
        std::fs::create_dir_all(shared.join(dir)).unwrap();
        std::os::unix::fs::symlink(shared.join(dir), cache.join(dir)).unwrap();
    }
    let out = Command::new(&bin)
        .args(["compare", "--suite", "../elsewhere/tiny.toml"])
        .env(markbench::guest::images::CACHE_ENV, &cache)
        .current_dir(&work)
        .output()
        .unwrap();
    let run = text(&out);
    assert!(out.status.success(), "{run}");
    assert!(
        std::fs::read_dir(cache.join("initramfs"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("base-")),
        "no initramfs packed\n{run}"
    );

    let dir = std::fs::read_dir(work.join("reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && !p.ends_with("latest"))
        .unwrap_or_else(|| panic!("no run directory in {}\n{run}", work.display()));
    let meta = RunMeta::read(&dir).unwrap();
    assert!(meta.complete && meta.boots.len() == 2, "{:?}", meta.boots);
    assert!(meta.boots.iter().all(|b| b.ok()), "{:?}", meta.boots);
    let samples = markbench::record::read_samples(&dir).unwrap();
    assert_eq!(samples.len(), 2, "{samples:?}");
    let real = |p: &Path| std::fs::canonicalize(p).unwrap().display().to_string();
    let on = &meta.kernels[1].fragment_sources;
    assert_eq!(on["markers-on.config"], real(&beside), "{on:?}");
    assert_eq!(on["base.config"], "built in", "{on:?}");
    assert_eq!(
        meta.kernels[0].fragment_sources["markers-off.config"],
        "built in"
    );
    assert!(dir.join("vm-images/markers-on.config").is_file());
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("markers-off.config: built in"), "{report}");
}
