//! Prerequisites: the host tools markbench drives, and installing them.
//!
//! On Debian or Ubuntu, as root or with password-less sudo, missing packages
//! are installed with apt-get and the installed list is printed. Elsewhere
//! the run stops with the exact command to type, so the README's two commands
//! work on a fresh machine or say precisely why they cannot.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's kernel source tarball, the default kernel source.
pub const DEFAULT_KERNEL_SOURCE: &str = "/usr/src/linux-source-6.1.tar.xz";

/// One thing markbench needs, how to tell it is there, and which Debian
/// package provides it.
#[derive(Debug, Clone)]
pub struct Requirement {
    pub what: &'static str,
    pub package: &'static str,
    check: Check,
}

#[derive(Debug, Clone)]
enum Check {
    /// An executable on PATH.
    Program(&'static str),
    /// A file that must exist.
    File(&'static str),
    /// A static (no ELF interpreter) executable at this path.
    StaticBinary(&'static str),
    /// `ping -V` names iputils (busybox ping has no flood mode).
    IputilsPing,
    /// A program whose `--version` is at least `(major, minor)`.
    AtLeast(&'static str, (u32, u32)),
    /// A Python module Debian's python3 imports.
    PythonModule(&'static str),
}

pub fn requirements() -> Vec<Requirement> {
    use Check::*;
    let r = |what, package, check| Requirement {
        what,
        package,
        check,
    };
    vec![
        r(
            "QEMU (qemu-system-x86_64)",
            "qemu-system-x86",
            Program("qemu-system-x86_64"),
        ),
        r(
            "static busybox",
            "busybox-static",
            StaticBinary("/bin/busybox"),
        ),
        r(
            "hackbench (rt-tests)",
            "rt-tests",
            File("/usr/bin/hackbench"),
        ),
        r("iputils ping", "iputils-ping", IputilsPing),
        r("perf (perf bench)", "linux-perf", File("/usr/bin/perf")),
        r("stress-ng", "stress-ng", File("/usr/bin/stress-ng")),
        r(
            "kernel source",
            "linux-source-6.1",
            File(DEFAULT_KERNEL_SOURCE),
        ),
        r("make", "make", Program("make")),
        r("gcc", "gcc", Program("gcc")),
        r(
            "C library headers",
            "libc6-dev",
            File("/usr/include/stdio.h"),
        ),
        r("bc", "bc", Program("bc")),
        r("bison", "bison", Program("bison")),
        r("flex", "flex", Program("flex")),
        r(
            "libelf headers",
            "libelf-dev",
            File("/usr/include/libelf.h"),
        ),
        r(
            "OpenSSL headers",
            "libssl-dev",
            File("/usr/include/openssl/ssl.h"),
        ),
        r("cpio", "cpio", Program("cpio")),
        r("xz", "xz-utils", Program("xz")),
        r(
            "python3 (scripts/diffconfig, scripts/bloat-o-meter)",
            "python3",
            Program("python3"),
        ),
        r(
            "size and nm (the kernels' sizes, scripts/bloat-o-meter)",
            "binutils",
            Program("size"),
        ),
        r("perl", "perl", Program("perl")),
        r(
            "ccache (kernels that share sources rebuild only what differs)",
            "ccache",
            Program("ccache"),
        ),
    ]
}

/// What CI needs beyond the requirements of a run: a one-node Slurm cluster
/// for the array-job test (tests/slurm.rs, scripts/slurm/local-cluster.sh)
/// and a browser that renders the history page (tests/history.rs).
/// Not needed to run markbench, so only `setup --ci` installs it.
pub fn ci_requirements() -> Vec<Requirement> {
    use Check::*;
    vec![
        Requirement {
            what: "Slurm controller (slurmctld)",
            package: "slurmctld",
            check: Program("slurmctld"),
        },
        Requirement {
            what: "Slurm node daemon (slurmd)",
            package: "slurmd",
            check: Program("slurmd"),
        },
        Requirement {
            what: "Slurm commands (sbatch)",
            package: "slurm-client",
            check: Program("sbatch"),
        },
        Requirement {
            what: "munge (Slurm's authentication)",
            package: "munge",
            check: Program("munged"),
        },
        Requirement {
            what: "Chromium (renders the history page headless in its test)",
            package: "chromium",
            check: Program("chromium"),
        },
    ]
}

/// What building markbench's own QEMU needs (`guest::images::qemu_build`).
/// meson and pycotap come from bookworm-backports: QEMU 10 needs meson 1.5,
/// Debian 12 has 1.0.
pub fn qemu_build_requirements() -> Vec<Requirement> {
    use Check::*;
    let r = |what, package, check| Requirement {
        what,
        package,
        check,
    };
    vec![
        r("ninja", "ninja-build", Program("ninja")),
        r(
            "meson 1.5 or later (bookworm-backports)",
            "meson",
            AtLeast("meson", (1, 5)),
        ),
        r(
            "Python's venv module",
            "python3-venv",
            PythonModule("ensurepip"),
        ),
        r(
            "pycotap (bookworm-backports)",
            "python3-pycotap",
            PythonModule("pycotap"),
        ),
        r("pkg-config", "pkg-config", Program("pkg-config")),
        r(
            "GLib headers",
            "libglib2.0-dev",
            File("/usr/include/glib-2.0/glib.h"),
        ),
        r("zlib headers", "zlib1g-dev", File("/usr/include/zlib.h")),
        r(
            "libfdt headers",
            "libfdt-dev",
            File("/usr/include/libfdt.h"),
        ),
        r("flex", "flex", Program("flex")),
        r("bison", "bison", Program("bison")),
        r("git (applies the patches)", "git", Program("git")),
        r("ccache", "ccache", Program("ccache")),
        r(
            "QEMU's firmware (SeaBIOS)",
            "seabios",
            File("/usr/share/seabios/bios-256k.bin"),
        ),
        r(
            "QEMU's option ROMs (linuxboot_dma.bin)",
            "qemu-system-data",
            File("/usr/share/qemu/linuxboot_dma.bin"),
        ),
    ]
}

/// The apt source of Debian's source packages in bookworm-backports, from
/// which `apt-get source` fetches QEMU's.
const BACKPORTS_SRC_SOURCES: &str =
    "/etc/apt/sources.list.d/markbench-bookworm-backports-src.sources";

/// True when an apt source has deb-src lines for bookworm-backports.
fn has_backports_src_source() -> bool {
    apt_sources().iter().any(|t| {
        let deb822 = t.contains("bookworm-backports")
            && t.lines()
                .any(|l| l.starts_with("Types:") && l.contains("deb-src"));
        let one_line = t
            .lines()
            .any(|l| l.trim_start().starts_with("deb-src") && l.contains("bookworm-backports"));
        deb822 || one_line
    })
}

/// The text of every apt source file.
fn apt_sources() -> Vec<String> {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        files.extend(dir.flatten().map(|e| e.path()));
    }
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect()
}

/// The command that gives this system what building markbench's QEMU needs.
pub fn qemu_build_command(packages: &[&str]) -> String {
    let (backports, plain): (Vec<&str>, Vec<&str>) = packages
        .iter()
        .partition(|p| matches!(**p, "meson" | "python3-pycotap"));
    let mut steps = vec![format!(
        "printf 'Types: deb deb-src\\nURIs: http://deb.debian.org/debian\\nSuites: \
         bookworm-backports\\nComponents: main\\nSigned-By: \
         /usr/share/keyrings/debian-archive-keyring.gpg\\n' | sudo tee {BACKPORTS_SRC_SOURCES}"
    )];
    steps.push("sudo apt-get update".into());
    if !plain.is_empty() {
        steps.push(format!(
            "sudo apt-get install -y --no-install-recommends {}",
            plain.join(" ")
        ));
    }
    if !backports.is_empty() {
        steps.push(format!(
            "sudo apt-get install -y --no-install-recommends -t bookworm-backports {}",
            backports.join(" ")
        ));
    }
    steps.join(" && ")
}

/// Makes sure markbench's QEMU can be built: the deb-src entry its source
/// comes from and the tools of [`qemu_build_requirements`], installed where
/// markbench may (as root or with password-less sudo on Debian 12), else an
/// error with the command to run.
pub fn ensure_qemu_build_tools() -> Result<()> {
    let missing: Vec<Requirement> = qemu_build_requirements()
        .into_iter()
        .filter(|r| !r.is_met())
        .collect();
    let source = has_backports_src_source();
    if missing.is_empty() && source {
        return Ok(());
    }
    let packages: Vec<&str> = missing.iter().map(|r| r.package).collect();
    let what: Vec<&str> = missing.iter().map(|r| r.what).collect();
    let can_install = is_debian_like()
        && codename().as_deref() == Some("bookworm")
        && (is_root() || has_passwordless_sudo());
    if !can_install {
        let mut lacking = what.join(", ");
        if !source {
            if !lacking.is_empty() {
                lacking.push_str(", ");
            }
            lacking.push_str("a deb-src entry for bookworm-backports (QEMU's source)");
        }
        bail!(
            "building markbench's QEMU (for SMP guests under icount) needs {lacking}
To              install them, run:
    {}",
            qemu_build_command(&packages)
        );
    }
    if !source {
        // The binary packages of bookworm-backports too where no source
        // names them yet: meson and pycotap come from there.
        let types = if has_backports_source() {
            "deb-src"
        } else {
            "deb deb-src"
        };
        let text = format!(
            "Types: {types}\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\n\
             Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        );
        let text = text.as_str();
        let written = if is_root() {
            std::fs::write(BACKPORTS_SRC_SOURCES, text).is_ok()
        } else {
            sudo_write(BACKPORTS_SRC_SOURCES, text)
        };
        if !written {
            bail!(
                "could not write {BACKPORTS_SRC_SOURCES}; run:\n    {}",
                qemu_build_command(&packages)
            );
        }
        crate::base::message::note(format_args!(
            "added Debian's bookworm-backports sources in {BACKPORTS_SRC_SOURCES}"
        ));
    }
    apt(&["apt-get", "update", "-q"])?;
    let (backports, plain): (Vec<&str>, Vec<&str>) = packages
        .iter()
        .partition(|p| matches!(**p, "meson" | "python3-pycotap"));
    if !plain.is_empty() {
        crate::base::message::note(format_args!(
            "installing what building QEMU needs: {}",
            plain.join(" ")
        ));
        let mut install = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
        install.extend(plain.iter().copied());
        apt(&install)?;
    }
    if !backports.is_empty() {
        crate::base::message::note(format_args!(
            "installing from bookworm-backports: {}",
            backports.join(" ")
        ));
        let mut install = vec![
            "apt-get",
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            "-t",
            "bookworm-backports",
        ];
        install.extend(backports.iter().copied());
        apt(&install)?;
    }
    let still: Vec<&str> = qemu_build_requirements()
        .iter()
        .filter(|r| !r.is_met())
        .map(|r| r.what)
        .collect();
    if !still.is_empty() {
        bail!(
            "installed {} but building QEMU still lacks: {}",
            packages.join(" "),
            still.join(", ")
        );
    }
    Ok(())
}

pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// True when `path` is an ELF executable without a PT_INTERP header, i.e. it
/// runs without a dynamic loader (what an initramfs with no libc needs).
pub fn is_static_elf(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return false;
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(bytes[0x20..0x28].try_into().unwrap_or([0; 8])) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    const PT_INTERP: u32 = 3;
    (0..phnum).all(|i| {
        let o = phoff + i * phentsize;
        bytes
            .get(o..o + 4)
            .map(|t| u32::from_le_bytes(t.try_into().unwrap_or([0; 4])) != PT_INTERP)
            .unwrap_or(false)
    })
}

impl Requirement {
    pub fn is_met(&self) -> bool {
        match self.check {
            Check::Program(p) => on_path(p).is_some(),
            Check::File(f) => Path::new(f).exists(),
            Check::StaticBinary(f) => is_static_elf(Path::new(f)),
            Check::AtLeast(program, least) => Command::new(program)
                .arg("--version")
                .output()
                .ok()
                .and_then(|o| {
                    let text = String::from_utf8_lossy(&o.stdout);
                    let mut parts = text.trim().split(|c: char| !c.is_ascii_digit());
                    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
                })
                .is_some_and(|v: (u32, u32)| v >= least),
            Check::PythonModule(module) => Command::new("/usr/bin/python3")
                .args(["-c", &format!("import {module}")])
                .output()
                .is_ok_and(|o| o.status.success()),
            Check::IputilsPing => Command::new("ping")
                .arg("-V")
                .output()
                .map(|o| {
                    let text = String::from_utf8_lossy(&o.stdout).to_string()
                        + &String::from_utf8_lossy(&o.stderr);
                    text.contains("iputils")
                })
                .unwrap_or(false),
        }
    }
}

pub fn missing() -> Vec<Requirement> {
    requirements().into_iter().filter(|r| !r.is_met()).collect()
}

/// The requirements of a run, and with `ci` those of CI too, that are missing.
fn missing_of(ci: bool) -> Vec<Requirement> {
    let mut all = requirements();
    if ci {
        all.extend(ci_requirements());
    }
    all.into_iter().filter(|r| !r.is_met()).collect()
}

fn is_debian_like() -> bool {
    Path::new("/usr/bin/apt-get").exists() && Path::new("/etc/debian_version").exists()
}

fn is_root() -> bool {
    // The effective uid is in /proc/self/status ("Uid: real effective …").
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn has_passwordless_sudo() -> bool {
    Command::new("sudo")
        .args(["-n", "true"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The command a user types to install `packages`.
pub fn install_command(packages: &[&str]) -> String {
    format!(
        "sudo apt-get update && sudo apt-get install -y --no-install-recommends {}",
        packages.join(" ")
    )
}

/// Debian 12's own QEMU (7.2) hangs SMP guests under icount; its
/// `bookworm-backports` suite carries QEMU 10.0, which does not.
const BACKPORTS_SOURCES: &str = "/etc/apt/sources.list.d/markbench-bookworm-backports.sources";

/// The release codename from /etc/os-release (`bookworm`, `trixie`, …).
fn codename() -> Option<String> {
    std::fs::read_to_string("/etc/os-release")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
}

/// `(major, minor)` of an installed QEMU, from `qemu-system-x86_64 --version`.
fn qemu_version() -> Option<(u32, u32)> {
    let out = Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .ok()?;
    parse_qemu_version(&String::from_utf8_lossy(&out.stdout))
}

fn parse_qemu_version(text: &str) -> Option<(u32, u32)> {
    let rest = text.split("version ").nth(1)?;
    let mut parts = rest.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The exact commands that give this system a QEMU able to run SMP guests
/// under icount (QEMU 8.1 or later).
pub fn smp_icount_qemu_hint() -> String {
    match codename().as_deref() {
        Some("bookworm") => format!(
            "on Debian 12 it comes from bookworm-backports: run `markbench setup` as root, or \
             `{}`",
            backports_command()
        ),
        _ if is_debian_like() => {
            "run `sudo apt-get update && sudo apt-get install -y qemu-system-x86`, or name a \
             QEMU of 8.1 or later with --qemu PATH"
                .into()
        }
        _ => "install QEMU 8.1 or later and name its qemu-system-x86_64 with --qemu PATH (or \
              `qemu = \"PATH\"` in the suite)"
            .into(),
    }
}

fn backports_command() -> String {
    format!(
        "printf 'Types: deb\\nURIs: http://deb.debian.org/debian\\nSuites: bookworm-backports\\n\
         Components: main\\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\\n' | \
         sudo tee {BACKPORTS_SOURCES} && sudo apt-get update && sudo apt-get install -y \
         --no-install-recommends -t bookworm-backports qemu-system-x86"
    )
}

/// True when an apt source already names bookworm-backports.
fn has_backports_source() -> bool {
    apt_sources().iter().any(|t| {
        t.lines()
            .any(|l| !l.trim_start().starts_with('#') && l.contains("bookworm-backports"))
    })
}

/// On Debian 12, installs QEMU from bookworm-backports when the QEMU there
/// is older than 8.1 or missing (the version only picks what to install;
/// whether SMP icount works is decided by a trial boot at run time). Where
/// it cannot install, it says how, and the run goes on: 1-vCPU suites and
/// wall time work with any QEMU.
fn ensure_smp_icount_qemu(check_only: bool, can_install: bool) -> Result<()> {
    if codename().as_deref() != Some("bookworm") {
        return Ok(());
    }
    if qemu_version().is_some_and(|v| v >= (8, 1)) {
        return Ok(());
    }
    if check_only || !can_install {
        if qemu_version().is_none() {
            bail!(
                "missing prerequisites: QEMU (qemu-system-x86_64)\nTo install QEMU 10 from Debian's \
                 bookworm-backports (Debian 12's own 7.2 cannot run SMP guests under icount), \
                 run:\n    {}",
                backports_command()
            );
        }
        crate::base::message::note(format_args!(
            "note: Debian 12's QEMU 7.2 cannot run SMP guests under icount (suites with \
             more than 1 vCPU then fall back to noisy wall time); to install QEMU 10 from \
             bookworm-backports run:\n    {}",
            backports_command()
        ));
        return Ok(());
    }
    if !has_backports_source() {
        let sources = "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\n\
                       Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n";
        let written = if is_root() {
            std::fs::write(BACKPORTS_SOURCES, sources).is_ok()
        } else {
            sudo_write(BACKPORTS_SOURCES, sources)
        };
        if !written {
            bail!(
                "could not write {BACKPORTS_SOURCES}; run:\n    {}",
                backports_command()
            );
        }
        crate::base::message::note(format_args!(
            "added Debian's bookworm-backports in {BACKPORTS_SOURCES}"
        ));
    }
    crate::base::message::note("installing QEMU from bookworm-backports (SMP guests under icount)");
    apt(&["apt-get", "update", "-q"])?;
    apt(&[
        "apt-get",
        "install",
        "-y",
        "-q",
        "--no-install-recommends",
        "-t",
        "bookworm-backports",
        "qemu-system-x86",
    ])?;
    match qemu_version() {
        Some(v) if v >= (8, 1) => {
            crate::base::message::note(format_args!("installed QEMU {}.{}", v.0, v.1));
            Ok(())
        }
        other => bail!(
            "installed qemu-system-x86 from bookworm-backports but qemu-system-x86_64 is {other:?}; \
             run:\n    {}",
            backports_command()
        ),
    }
}

fn sudo_write(path: &str, text: &str) -> bool {
    use std::io::Write;
    let Ok(mut child) = Command::new("sudo")
        .args(["-n", "tee", path])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
    else {
        return false;
    };
    let wrote = child
        .stdin
        .take()
        .is_some_and(|mut i| i.write_all(text.as_bytes()).is_ok());
    wrote && child.wait().is_ok_and(|s| s.success())
}

/// Runs an apt command as root (directly, or through password-less sudo).
fn apt(args: &[&str]) -> Result<()> {
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo", "-n"] };
    let mut argv: Vec<&str> = sudo.to_vec();
    argv.extend_from_slice(args);
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .with_context(|| format!("starting {}", argv.join(" ")))?;
    if !status.success() {
        bail!("`{}` failed ({status})", argv.join(" "));
    }
    Ok(())
}

/// What `markbench setup` does: the requirements of a run, then `just`,
/// which runs the README's `just compare`. A run itself needs no `just`, so
/// only setup installs it (cargo compiles it for minutes: not something a
/// `compare` should do on its way). With `ci`: what CI needs instead, the
/// run's requirements and CI's own, without `just`, which no test runs.
pub fn setup(check_only: bool, ci: bool) -> Result<()> {
    let system = ensure_with(check_only, ci).and_then(|()| {
        // What SMP suites under icount build their QEMU with; a run asks
        // for it only when it needs that QEMU, setup installs it up front.
        if check_only {
            let missing: Vec<&str> = qemu_build_requirements()
                .iter()
                .filter(|r| !r.is_met())
                .map(|r| r.package)
                .collect();
            if !missing.is_empty() || !has_backports_src_source() {
                bail!(
                    "missing: what building markbench's QEMU needs\nTo install it, run:\n    {}",
                    qemu_build_command(&missing)
                );
            }
            Ok(())
        } else {
            ensure_qemu_build_tools()
        }
    });
    let just = if ci { Ok(()) } else { ensure_just(check_only) };
    match (system, just) {
        (Ok(()), just) => just,
        (Err(e), Ok(())) => Err(e),
        (Err(system), Err(just)) => Err(anyhow::anyhow!("{system:#}\n{just:#}")),
    }
}

/// How `just` is installed: Debian 12 has no package of it, cargo builds
/// it from the crate registry.
pub const JUST_INSTALL: &str = "cargo install just";

/// What setup does about `just`, given where programs are found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum JustStep {
    Present,
    /// Missing, and cargo is there to install it.
    Install,
    /// Missing, and no cargo to install it with.
    NoCargo,
}

fn just_step(find: impl Fn(&str) -> Option<PathBuf>) -> JustStep {
    match (find("just"), find("cargo")) {
        (Some(_), _) => JustStep::Present,
        (None, Some(_)) => JustStep::Install,
        (None, None) => JustStep::NoCargo,
    }
}

fn ensure_just(check_only: bool) -> Result<()> {
    match just_step(on_path) {
        JustStep::Present => Ok(()),
        JustStep::Install if check_only => bail!(
            "missing: just (for the README's `just compare`; `cargo run --release -- compare` \
             does the same)\nTo install it, run:\n    {JUST_INSTALL}"
        ),
        JustStep::NoCargo => {
            // Optional for a run; said, not failed, where it cannot be installed.
            crate::base::message::note(format_args!(
                "note: just (for the README's `just compare`) is missing and there is \
                 no cargo to install it with; install Rust (https://rustup.rs), then run:\n    \
                 {JUST_INSTALL}"
            ));
            Ok(())
        }
        JustStep::Install => {
            crate::base::message::note(format_args!("installing just: {JUST_INSTALL}"));
            let status = Command::new("cargo")
                .args(["install", "just"])
                .status()
                .context("starting cargo install just")?;
            if !status.success() {
                bail!("`{JUST_INSTALL}` failed ({status})");
            }
            if on_path("just").is_none() {
                bail!(
                    "`{JUST_INSTALL}` installed just into cargo's bin directory (~/.cargo/bin \
                     unless CARGO_HOME says otherwise), which is not on PATH; add it to PATH"
                );
            }
            crate::base::message::note("installed just");
            Ok(())
        }
    }
}

/// Makes sure every requirement is met, installing what is missing where that
/// is possible, and fails with the exact install command where it is not.
pub fn ensure(check_only: bool) -> Result<()> {
    ensure_with(check_only, false)
}

/// [`ensure`], with `ci` also for what CI needs ([`ci_requirements`]).
pub fn ensure_with(check_only: bool, ci: bool) -> Result<()> {
    let can_install = is_debian_like() && (is_root() || has_passwordless_sudo());
    let mut missing = missing_of(ci);
    if codename().as_deref() == Some("bookworm") {
        // On Debian 12 QEMU comes from backports (next): its own 7.2 would
        // only be replaced.
        missing.retain(|r| r.package != "qemu-system-x86");
    }
    let icount_qemu = ensure_smp_icount_qemu(check_only, can_install);
    if !missing.is_empty() {
        install_missing(&missing, check_only, can_install, ci)?;
    }
    icount_qemu
}

fn install_missing(
    missing: &[Requirement],
    check_only: bool,
    can_install: bool,
    ci: bool,
) -> Result<()> {
    let mut packages: Vec<&str> = missing.iter().map(|r| r.package).collect();
    packages.dedup();
    let what: Vec<&str> = missing.iter().map(|r| r.what).collect();
    if check_only || !can_install {
        let how = if is_debian_like() {
            format!("run:\n    {}", install_command(&packages))
        } else {
            format!(
                "this is not a Debian-like system; install the equivalents of the Debian packages {} \
                 (on Debian: {})",
                packages.join(" "),
                install_command(&packages)
            )
        };
        bail!(
            "missing prerequisites: {}\nTo install them, {how}",
            what.join(", ")
        );
    }
    crate::base::message::note(format_args!(
        "installing missing prerequisites: {}",
        packages.join(" ")
    ));
    apt(&["apt-get", "update", "-q"])?;
    let mut install = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    install.extend(packages.iter().copied());
    apt(&install)?;
    let still: Vec<&str> = missing_of(ci).iter().map(|r| r.what).collect();
    if !still.is_empty() {
        bail!(
            "installed {} but still missing: {}",
            packages.join(" "),
            still.join(", ")
        );
    }
    crate::base::message::note(format_args!("installed {}", packages.join(" ")));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qemu_versions_are_read_from_the_version_line() {
        assert_eq!(
            parse_qemu_version(
                "QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)\n"
            ),
            Some((10, 0))
        );
        assert_eq!(
            parse_qemu_version("QEMU emulator version 7.2.19 (Debian 1:7.2+dfsg-7+deb12u16)"),
            Some((7, 2))
        );
        assert_eq!(parse_qemu_version("no version here"), None);
    }

    #[test]
    fn just_is_installed_with_cargo_only_where_it_is_missing_and_cargo_is_there() {
        let found = |names: &'static [&'static str]| {
            move |p: &str| {
                names
                    .contains(&p)
                    .then(|| PathBuf::from("/usr/bin").join(p))
            }
        };
        assert_eq!(just_step(found(&["just", "cargo"])), JustStep::Present);
        assert_eq!(just_step(found(&["just"])), JustStep::Present);
        assert_eq!(just_step(found(&["cargo"])), JustStep::Install);
        assert_eq!(just_step(found(&[])), JustStep::NoCargo);
    }

    #[test]
    fn install_command_names_every_package() {
        let cmd = install_command(&["rt-tests", "busybox-static"]);
        assert!(cmd.ends_with("--no-install-recommends rt-tests busybox-static"));
    }

    #[test]
    fn static_elf_detection_tells_static_from_dynamic() {
        // /bin/sh is dynamically linked on every Debian system.
        assert!(!is_static_elf(Path::new("/bin/sh")));
        assert!(!is_static_elf(Path::new("/nonexistent")));
        let not_elf = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(not_elf.path(), b"#!/bin/sh\n").unwrap();
        assert!(!is_static_elf(not_elf.path()));
    }
}
