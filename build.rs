//! Builds the guest agent (`src/bin/markbench-guest.rs`, PID 1 of every
//! benchmark boot) as a static x86-64 binary that markbench embeds, so an
//! installed markbench packs the guest initramfs with no source tree and no
//! Rust toolchain on the machine that runs it (a Slurm node, a CI runner).
//!
//! The agent uses std only, so one `rustc` call builds it. `--target` is
//! explicit because `crt-static` gives a static-pie binary on the gnu target
//! only then (and passed through cargo as RUSTFLAGS without `--target` it
//! would also reach proc-macro crates, which cannot be static).
//!
//! When the agent cannot be built (no x86-64 std, no static C library) the
//! build goes on with a warning and an empty agent, and markbench says why
//! when it needs the agent instead of failing every other command too.

use std::path::{Path, PathBuf};
use std::process::Command;

const AGENT_SOURCE: &str = "src/bin/markbench-guest.rs";
/// Included by the agent through `#[path]`.
const PROTOCOL_SOURCE: &str = "src/base/protocol.rs";
/// The agent's compiler flags, shared with its run-time build.
const FLAGS_SOURCE: &str = "src/guest/images/agent_flags.rs";

#[path = "src/guest/images/agent_flags.rs"]
mod agent_flags;

fn main() {
    for path in [AGENT_SOURCE, PROTOCOL_SOURCE, FLAGS_SOURCE, "build.rs"] {
        println!("cargo:rerun-if-changed={path}");
    }
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let agent = out_dir.join("markbench-guest");
    let error = match build_agent_once(&manifest_dir, &out_dir, &agent) {
        Ok(()) => String::new(),
        Err(e) => {
            println!(
                "cargo:warning=the guest agent was not built: {}",
                e.lines().next().unwrap_or_default()
            );
            let _ = std::fs::write(&agent, b"");
            e
        }
    };
    std::fs::write(out_dir.join("markbench-guest.error"), error).expect("writing to OUT_DIR");
    git_revision(&manifest_dir);
}

/// Builds the agent unless it was built from the same inputs before: the
/// script also runs again when the git revision may have moved, which must
/// not cost an agent build.
fn build_agent_once(manifest_dir: &Path, out_dir: &Path, out: &Path) -> Result<(), String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut inputs = Command::new(&rustc)
        .arg("-vV")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    for source in [AGENT_SOURCE, PROTOCOL_SOURCE, FLAGS_SOURCE] {
        let path = manifest_dir.join(source);
        inputs
            .extend(std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?);
    }
    let stamp = out_dir.join("markbench-guest.inputs");
    if out.is_file() && std::fs::read(&stamp).is_ok_and(|old| old == inputs) {
        return Ok(());
    }
    let _ = std::fs::remove_file(&stamp);
    build_agent(&rustc, manifest_dir, out)?;
    std::fs::write(&stamp, inputs).map_err(|e| format!("writing {}: {e}", stamp.display()))
}

fn build_agent(rustc: &std::ffi::OsStr, manifest_dir: &Path, out: &Path) -> Result<(), String> {
    let output = Command::new(rustc)
        .args(agent_flags::AGENT_RUSTC_FLAGS)
        .args(["--target", "x86_64-unknown-linux-gnu"])
        // Panic locations name the source file: without the checkout's path
        // in them, the same source gives the same agent in every checkout.
        .arg(format!(
            "--remap-path-prefix={}=markbench",
            manifest_dir.display()
        ))
        .arg(manifest_dir.join(AGENT_SOURCE))
        .arg("-o")
        .arg(out)
        .output()
        .map_err(|e| format!("cannot start {}: {e}", rustc.to_string_lossy()))?;
    if !output.status.success() {
        return Err(format!(
            "{} {AGENT_SOURCE} --target x86_64-unknown-linux-gnu -C target-feature=+crt-static \
             failed ({}):\n{}",
            rustc.to_string_lossy(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// The git revision markbench is built from, for the runs' metadata: asked
/// of git here, because at run time the checkout may be gone or be another.
fn git_revision(manifest_dir: &Path) {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(manifest_dir)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let revision = git(&["describe", "--always", "--dirty"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=MARKBENCH_GIT_REVISION={revision}");
    // What moves the revision: a commit (HEAD, its branch, packed refs);
    // and its `-dirty`: an edit of what goes into the binary.
    if let (Some(git_dir), Some(common_dir)) = (
        git(&["rev-parse", "--absolute-git-dir"]),
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
    ) {
        let (git_dir, common_dir) = (PathBuf::from(git_dir), PathBuf::from(common_dir));
        let mut watched = vec![
            git_dir.join("HEAD"),
            git_dir.join("logs/HEAD"),
            common_dir.join("packed-refs"),
        ];
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(common_dir.join(branch));
        }
        // Cargo counts a watched file that is missing as changed, so a ref
        // that lives only in packed-refs (after `git pack-refs` or `git gc`),
        // or a repository without packed-refs, would rebuild markbench on
        // every run. HEAD's reflog moves with every commit, checkout and
        // reset, whichever file holds the ref.
        for path in watched.iter().filter(|path| path.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    for path in ["src", "vm-images", "suites", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
