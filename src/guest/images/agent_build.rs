//! The guest agent for an architecture markbench was not built with.
//!
//! build.rs embeds the x86-64 agent; an arm64 one cannot be built there,
//! because markbench is built with a toolchain that has only x86-64's
//! standard library. Debian's rustc (1.63, `/usr/bin/rustc`) has an arm64
//! one in the archive (`libstd-rust-dev:arm64`), so the arm64 agent is built
//! when an arm64 image is first needed, from the agent's source embedded in
//! markbench (an installed markbench has no source tree), and cached keyed
//! by that source, the compiler and the linker.

use super::agent_flags::AGENT_RUSTC_FLAGS;
use super::{key_of, Cache};
use crate::base::arch::Arch;
use crate::base::error::{bail, Context, Result};
use crate::base::sha256::Sha256;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The compiler that builds foreign agents: Debian's, whose standard
/// library comes for other architectures as packages.
pub const DEBIAN_RUSTC: &str = "/usr/bin/rustc";

/// The agent's source and the protocol module it includes, at the paths
/// its `#[path]` attribute expects relative to each other.
const SOURCES: [(&str, &str); 2] = [
    (
        "src/bin/markbench-guest.rs",
        include_str!("../../bin/markbench-guest.rs"),
    ),
    (
        "src/base/protocol.rs",
        include_str!("../../base/protocol.rs"),
    ),
];

/// The C cross-compiler that links a static agent for `arch` (glibc's
/// static library and crt files come with it), or `None` for the
/// architecture markbench embeds the agent of.
pub fn linker(arch: Arch) -> Option<String> {
    arch.cross_compile().map(|prefix| format!("{prefix}gcc"))
}

/// `rustc`'s arguments that build the agent for `arch` from the sources
/// under `tree` into `out`: static (`crt-static` with an explicit
/// `--target`), stripped, and with the build directory's path remapped so
/// the same source gives the same agent wherever it is built.
pub fn rustc_args(arch: Arch, tree: &Path, out: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = AGENT_RUSTC_FLAGS
        .iter()
        .chain(&["--target", arch.rust_target()])
        .map(OsString::from)
        .collect();
    if let Some(linker) = linker(arch) {
        args.push("-C".into());
        args.push(format!("linker={linker}").into());
    }
    args.push(format!("--remap-path-prefix={}=markbench", tree.display()).into());
    args.push(tree.join(SOURCES[0].0).into());
    args.push("-o".into());
    args.push(out.into());
    args
}

/// The cache key of an agent for `arch`: its source, and the compiler's
/// and the linker's own descriptions (`rustc -vV`, `gcc --version`).
pub fn agent_key(arch: Arch, rustc_version: &[u8], linker_version: &[u8]) -> Sha256 {
    let mut parts: Vec<(&str, &[u8])> = vec![
        ("recipe", b"foreign agent v1"),
        ("target", arch.rust_target().as_bytes()),
        ("rustc", rustc_version),
        ("linker", linker_version),
    ];
    parts.extend(SOURCES.iter().map(|(path, text)| (*path, text.as_bytes())));
    key_of(&parts)
}

/// Stdout of `program args…`, or an error naming the command.
fn output_of(program: &str, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {program} {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// The agent for `arch` in markbench's cache, built when its source, the
/// compiler or the linker changed. Only for foreign architectures: the
/// x86-64 agent is embedded.
pub fn ensure_agent(arch: Arch) -> Result<PathBuf> {
    ensure_agent_in(&Cache::here().foreign_guest(arch), arch, DEBIAN_RUSTC)
}

/// [`ensure_agent`] with the cache folder and the compiler given.
pub fn ensure_agent_in(dir: &Path, arch: Arch, rustc: &str) -> Result<PathBuf> {
    let Some(linker) = linker(arch) else {
        bail!("the {arch} agent is embedded in markbench, not built at run time");
    };
    crate::base::prereq::check_arch(arch)?;
    let rustc_version = output_of(rustc, &["-vV"])?;
    let linker_version = output_of(&linker, &["--version"])?;
    let key = agent_key(arch, &rustc_version, &linker_version);
    let path = dir.join(format!("agent-{}", key.short()));
    if super::seal::usable_file_entry(&path, "guest agent") {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::base::message::note(format_args!(
        "building the {arch} guest agent with {rustc} …"
    ));
    let staging = tempfile::Builder::new().prefix("agent-").tempdir_in(dir)?;
    let tree = staging.path().join("markbench");
    for (relative, text) in SOURCES {
        let file = tree.join(relative);
        std::fs::create_dir_all(file.parent().unwrap_or(&tree))?;
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    }
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    let out = Command::new(rustc)
        .args(rustc_args(arch, &tree, &partial))
        .output()
        .with_context(|| format!("running {rustc}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&partial);
        bail!(
            "{rustc} could not build the {arch} guest agent ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    check_agent(&partial, arch)?;
    super::seal::seal_file_entry(&partial, &path)?;
    std::fs::rename(&partial, &path)
        .with_context(|| format!("renaming {} to {}", partial.display(), path.display()))?;
    Ok(path)
}

/// That `path` is a static executable for `arch`'s machine: a dynamic
/// agent would find no loader as PID 1 of the image.
pub fn check_agent(path: &Path, arch: Arch) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let needs = super::guest_elf::elf_needs(&bytes, path)?;
    let machine = match arch {
        Arch::X86_64 => goblin::elf::header::EM_X86_64,
        Arch::Arm64 => goblin::elf::header::EM_AARCH64,
    };
    if needs.machine != machine {
        bail!(
            "{}: the guest agent is for ELF machine {}, not {arch}'s ({machine})",
            path.display(),
            needs.machine
        );
    }
    if let Some(interpreter) = needs.interpreter {
        bail!(
            "{}: the guest agent is not static (it asks for the loader {interpreter})",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_follows_the_compiler_the_linker_and_the_target() {
        let key = agent_key(Arch::Arm64, b"rustc 1.63.0", b"gcc 12.2");
        assert_eq!(key, agent_key(Arch::Arm64, b"rustc 1.63.0", b"gcc 12.2"));
        assert_ne!(key, agent_key(Arch::Arm64, b"rustc 1.64.0", b"gcc 12.2"));
        assert_ne!(key, agent_key(Arch::Arm64, b"rustc 1.63.0", b"gcc 12.3"));
        assert_ne!(key, agent_key(Arch::X86_64, b"rustc 1.63.0", b"gcc 12.2"));
    }

    #[test]
    fn the_arm64_agent_is_linked_static_by_the_cross_gcc() {
        let args: Vec<String> = rustc_args(Arch::Arm64, Path::new("/t"), Path::new("/o"))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let joined = args.join(" ");
        for wanted in [
            "--target aarch64-unknown-linux-gnu",
            "-C target-feature=+crt-static",
            "-C linker=aarch64-linux-gnu-gcc",
            "--remap-path-prefix=/t=markbench",
            "/t/src/bin/markbench-guest.rs -o /o",
        ] {
            assert!(joined.contains(wanted), "{wanted} in {joined}");
        }
        assert_eq!(linker(Arch::X86_64), None);
    }

    #[test]
    fn the_embedded_sources_are_the_agents() {
        assert!(SOURCES[0].1.contains("fn mark_which_vcpu"));
        assert!(SOURCES[1].1.contains("pub enum Directive"));
    }

    /// The agent's sources must build with Debian's rustc 1.63, the
    /// compiler of the arm64 agent, for both architectures (each compiles
    /// its own `cfg(target_arch)` half). Skipped only where that rustc is
    /// not installed; where it is, any failure fails the test, and a
    /// missing arm64 standard library is named with the package to install.
    #[test]
    fn the_agent_builds_with_debian_rustc() {
        if !Path::new(DEBIAN_RUSTC).exists() {
            eprintln!(
                "skipped: {DEBIAN_RUSTC} is not installed (`markbench setup --arch arm64` \
                 installs it)"
            );
            return;
        }
        let version = String::from_utf8(output_of(DEBIAN_RUSTC, &["--version"]).unwrap())
            .expect("rustc prints UTF-8");
        assert!(version.starts_with("rustc 1."), "{version}");
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("markbench");
        for (relative, text) in SOURCES {
            let file = tree.join(relative);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, text).unwrap();
        }
        // The agents Debian's rustc builds: those of other architectures.
        // x86-64's is the build script's, with markbench's own toolchain,
        // and keeps std's `process_group`, which 1.63 lacks.
        for arch in Arch::ALL.into_iter().filter(|a| !a.is_default()) {
            let out = dir.path().join(format!("agent-{arch}"));
            let result = Command::new(DEBIAN_RUSTC)
                .args(rustc_args(arch, &tree, &out))
                .output()
                .unwrap();
            assert!(
                result.status.success(),
                "{version}: the {arch} agent does not build (for arm64, \
                 `apt-get install libstd-rust-dev:arm64 gcc-aarch64-linux-gnu` after \
                 `dpkg --add-architecture arm64`):\n{}",
                String::from_utf8_lossy(&result.stderr)
            );
            check_agent(&out, arch).unwrap();
        }
    }
}
