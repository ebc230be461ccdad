//! Prerequisites: the host tools markbench drives, and installing them.
//!
//! On Debian or Ubuntu, as root or with password-less sudo, missing packages
//! are installed with apt-get and the installed list is printed. Elsewhere
//! the run stops with the exact command to type, so the README's two commands
//! work on a fresh machine or say precisely why they cannot.

use crate::base::error::bail;
use crate::base::error::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

mod arch_needs;
pub use arch_needs::{arch_needs, arch_plan, check_arch, setup_arch, ArchHost, ArchNeed, ArchStep};

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

/// Debian 12's own QEMU (7.2) hangs SMP guests under icount; its
/// `bookworm-backports` suite carries QEMU 10.0, which does not.
const BACKPORTS_SOURCES: &str = "/etc/apt/sources.list.d/markbench-bookworm-backports.sources";

/// The packages that come from bookworm-backports on Debian 12: QEMU 10
/// (Debian 12's 7.2 hangs SMP guests under icount), and what building
/// markbench's QEMU needs newer than Debian 12 has (meson 1.5, pycotap).
const FROM_BACKPORTS: &[&str] = &["qemu-system-x86", "meson", "python3-pycotap"];

/// The text of every apt source file under `root` (`/` on a real host).
fn apt_sources_under(root: &Path) -> Vec<String> {
    let mut files = vec![root.join("etc/apt/sources.list")];
    if let Ok(dir) = std::fs::read_dir(root.join("etc/apt/sources.list.d")) {
        files.extend(dir.flatten().map(|e| e.path()));
    }
    files
        .iter()
        .filter(|f| {
            let name = f.to_string_lossy();
            name.ends_with(".list") || name.ends_with(".sources")
        })
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect()
}

/// True when one of the apt sources' texts gives bookworm-backports with
/// the entry type `kind` (`deb` for binary packages, `deb-src` for source
/// packages), in the one-line or the deb822 format.
fn names_backports(sources: &[String], kind: &str) -> bool {
    sources.iter().any(|text| {
        let one_line = text.lines().any(|l| {
            let mut words = l.split_whitespace();
            words.next() == Some(kind) && l.contains("bookworm-backports")
        });
        let deb822 = text.split("\n\n").any(|stanza| {
            let field = |name: &str| {
                stanza
                    .lines()
                    .filter(|l| !l.trim_start().starts_with('#'))
                    .find_map(|l| l.strip_prefix(name))
                    .unwrap_or("")
                    .to_string()
            };
            field("Types:").split_whitespace().any(|t| t == kind)
                && field("Suites:")
                    .split_whitespace()
                    .any(|s| s == "bookworm-backports")
                && !field("Enabled:").trim().eq_ignore_ascii_case("no")
        });
        one_line || deb822
    })
}

/// What of the host a command needs before it builds anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostNeeds {
    /// What a run needs ([`requirements`]).
    pub run: bool,
    /// What building markbench's own QEMU needs: its build tools and the
    /// deb-src entry its source comes from.
    pub qemu_build: bool,
    /// What CI needs beyond a run ([`ci_requirements`]).
    pub ci: bool,
}

/// This host, as far as planning what to install looks at it: read by
/// [`HostState::read`], given as data in tests.
#[derive(Debug, Clone, Default)]
pub struct HostState {
    /// The release codename (`bookworm`, `trixie`, …).
    pub codename: Option<String>,
    /// apt-get is there to install with.
    pub debian_like: bool,
    /// Root, or password-less sudo.
    pub can_install: bool,
    /// The Debian package of every requirement that is not met.
    pub unmet: std::collections::BTreeSet<&'static str>,
    /// `(major, minor)` of `qemu-system-x86_64` on PATH.
    pub qemu_version: Option<(u32, u32)>,
    /// The text of every apt source file.
    pub apt_sources: Vec<String>,
}

impl HostState {
    /// This host, now.
    pub fn read() -> Self {
        Self::read_at(Path::new("/"))
    }

    /// This host, with its apt sources read under `root`.
    pub fn read_at(root: &Path) -> Self {
        let mut all = requirements();
        all.extend(ci_requirements());
        all.extend(qemu_build_requirements());
        Self {
            codename: codename(),
            debian_like: is_debian_like(),
            can_install: is_debian_like() && (is_root() || has_passwordless_sudo()),
            unmet: all
                .iter()
                .filter(|r| !r.is_met())
                .map(|r| r.package)
                .collect(),
            qemu_version: qemu_version(),
            apt_sources: apt_sources_under(root),
        }
    }
}

#[cfg(test)]
impl HostState {
    /// A new Debian 12 machine that has only Rust, as root: no package
    /// markbench installs, apt sources of Debian's own suites alone.
    pub fn new_debian_12() -> Self {
        let mut all = requirements();
        all.extend(ci_requirements());
        all.extend(qemu_build_requirements());
        Self {
            codename: Some("bookworm".into()),
            debian_like: true,
            can_install: true,
            unmet: all.iter().map(|r| r.package).collect(),
            qemu_version: None,
            apt_sources: vec!["Types: deb\nURIs: http://deb.debian.org/debian\n\
                               Suites: bookworm bookworm-updates\nComponents: main\n"
                .into()],
        }
    }
}

/// One step of giving the host what it lacks, in the order it is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostStep {
    /// Writes an apt source file for bookworm-backports with these entry types.
    AddSource {
        path: &'static str,
        types: &'static str,
    },
    /// `apt-get update`.
    Update,
    /// `apt-get install` of these packages, from bookworm-backports or not.
    Install {
        packages: Vec<&'static str>,
        backports: bool,
    },
}

impl HostStep {
    /// The step as a user types it.
    fn command(&self) -> String {
        match self {
            HostStep::AddSource { path, types } => format!(
                "printf 'Types: {types}\\nURIs: http://deb.debian.org/debian\\nSuites: \
                 bookworm-backports\\nComponents: main\\nSigned-By: \
                 /usr/share/keyrings/debian-archive-keyring.gpg\\n' | sudo tee {path}"
            ),
            HostStep::Update => "sudo apt-get update".into(),
            HostStep::Install {
                packages,
                backports,
            } => format!(
                "sudo apt-get install -y --no-install-recommends {}{}",
                if *backports {
                    "-t bookworm-backports "
                } else {
                    ""
                },
                packages.join(" ")
            ),
        }
    }
}

/// What the host lacks of what a command needs and the steps that give it,
/// decided as a whole before anything is built: the dry run shows it, the
/// run takes it (or stops with its one command) before the first build.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostPlan {
    pub steps: Vec<HostStep>,
    /// What is missing, in words.
    pub missing: Vec<&'static str>,
    /// What the host lacks that the command does without, said, not installed.
    pub notes: Vec<String>,
    /// Root or password-less sudo on a Debian-like system.
    pub can_install: bool,
    pub debian_like: bool,
}

/// Whether a command may go ahead with installing without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consent {
    /// Ask first when a person is at the terminal (`--yes` not given).
    AskInTerminal,
    /// Install without asking (`--yes`, `setup`).
    Given,
}

/// The plan that gives `host` what `needs` asks for.
pub fn plan_for(needs: HostNeeds, host: &HostState) -> HostPlan {
    let bookworm = host.codename.as_deref() == Some("bookworm");
    let mut wanted = Vec::new();
    if needs.run {
        wanted.extend(requirements());
    }
    if needs.ci {
        wanted.extend(ci_requirements());
    }
    if needs.qemu_build {
        wanted.extend(qemu_build_requirements());
    }
    let (mut plain, mut backports, mut missing) = (Vec::new(), Vec::new(), Vec::new());
    let mut notes = Vec::new();
    for r in wanted.iter().filter(|r| host.unmet.contains(r.package)) {
        // Debian 12's QEMU is decided below, by its version.
        if bookworm && r.package == "qemu-system-x86" {
            continue;
        }
        let to = match bookworm && FROM_BACKPORTS.contains(&r.package) {
            true => &mut backports,
            false => &mut plain,
        };
        // One line of words per package, though two lists may name it.
        if !to.contains(&r.package) {
            to.push(r.package);
            missing.push(r.what);
        }
    }
    if needs.run && bookworm && host.qemu_version.is_none_or(|v| v < (8, 1)) {
        if host.can_install || host.qemu_version.is_none() {
            backports.insert(0, "qemu-system-x86");
            missing.insert(
                0,
                "QEMU 8.1 or later (qemu-system-x86 from bookworm-backports)",
            );
        } else {
            // 1-vCPU suites and wall time work with Debian 12's own.
            notes.push(format!(
                "Debian 12's QEMU 7.2 cannot run SMP guests under icount (suites with more \
                 than 1 vCPU then fall back to noisy wall time); to install QEMU 10 from \
                 bookworm-backports run:\n    {}",
                backports_command()
            ));
        }
    }
    let mut steps = Vec::new();
    if !backports.is_empty() && !names_backports(&host.apt_sources, "deb") {
        steps.push(HostStep::AddSource {
            path: BACKPORTS_SOURCES,
            types: "deb",
        });
    }
    if needs.qemu_build && !names_backports(&host.apt_sources, "deb-src") {
        steps.push(HostStep::AddSource {
            path: BACKPORTS_SRC_SOURCES,
            types: "deb-src",
        });
        missing.push("a deb-src entry for bookworm-backports (QEMU's source)");
    }
    if !steps.is_empty() || !plain.is_empty() || !backports.is_empty() {
        steps.push(HostStep::Update);
    }
    for (packages, backports) in [(plain, false), (backports, true)] {
        if !packages.is_empty() {
            steps.push(HostStep::Install {
                packages,
                backports,
            });
        }
    }
    HostPlan {
        steps,
        missing,
        notes,
        can_install: host.can_install,
        debian_like: host.debian_like,
    }
}

impl HostPlan {
    /// Nothing to install.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Every package the plan installs.
    pub fn packages(&self) -> Vec<&'static str> {
        self.steps
            .iter()
            .flat_map(|s| match s {
                HostStep::Install { packages, .. } => packages.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// The apt source files the plan writes.
    pub fn sources(&self) -> Vec<&'static str> {
        self.steps
            .iter()
            .filter_map(|s| match s {
                HostStep::AddSource { path, .. } => Some(*path),
                _ => None,
            })
            .collect()
    }

    /// The one command that takes the whole plan by hand.
    pub fn command(&self) -> String {
        let steps: Vec<String> = self.steps.iter().map(HostStep::command).collect();
        steps.join(" && ")
    }

    /// The error of a command that cannot take the plan itself; `stopped`:
    /// a command that would have built something, and stops before it.
    fn refusal(&self, stopped: bool) -> crate::base::error::Error {
        let how = if self.debian_like {
            format!("run:\n    {}", self.command())
        } else {
            format!(
                "this is not a Debian-like system; install the equivalents of the Debian \
                 packages {} (on Debian: {})",
                self.packages().join(" "),
                self.command()
            )
        };
        crate::base::error::Error::msg(format!(
            "missing prerequisites: {}\n{}To install them, {how}",
            self.missing.join(", "),
            if stopped {
                "Stopped before building anything. "
            } else {
                ""
            }
        ))
    }

    /// Says the notes, then takes the plan: installs as root or with
    /// password-less sudo (asking first at a terminal unless `consent` is
    /// given), else fails with the one command to run. Checks afterwards
    /// that nothing is still missing.
    pub fn apply(&self, needs: HostNeeds, consent: Consent) -> Result<()> {
        for n in &self.notes {
            crate::base::message::note(format_args!("note: {n}"));
        }
        if self.is_empty() {
            return Ok(());
        }
        if !self.can_install {
            return Err(self.refusal(true));
        }
        if consent == Consent::AskInTerminal && !self.confirmed()? {
            return Err(self.refusal(true));
        }
        for step in &self.steps {
            take(step)?;
        }
        let still = plan_for(needs, &HostState::read());
        if !still.is_empty() {
            bail!(
                "installed {} but still missing: {}",
                self.packages().join(" "),
                still.missing.join(", ")
            );
        }
        crate::base::message::note(format_args!(
            "installed what the run needs: {}",
            self.packages().join(" ")
        ));
        Ok(())
    }

    /// At a terminal, whether the person there agrees to the plan; without
    /// one (CI, a script) the plan goes ahead.
    fn confirmed(&self) -> Result<bool> {
        use std::io::{BufRead, IsTerminal, Write};
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return Ok(true);
        }
        let mut err = std::io::stderr();
        writeln!(
            err,
            "markbench: before building, this machine needs: {}",
            self.missing.join(", ")
        )?;
        writeln!(err, "markbench: it will run:\n    {}", self.command())?;
        write!(
            err,
            "markbench: go ahead? [Y/n] (--yes skips this question) "
        )?;
        err.flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        let answer = answer.trim().to_ascii_lowercase();
        Ok(answer.is_empty() || answer == "y" || answer == "yes")
    }
}

/// Takes one step of a plan as root (directly, or through password-less sudo).
fn take(step: &HostStep) -> Result<()> {
    match step {
        HostStep::AddSource { path, types } => {
            let text = format!(
                "Types: {types}\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\n\
                 Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
            );
            let written = if is_root() {
                std::fs::write(path, &text).is_ok()
            } else {
                sudo_write(path, &text)
            };
            if !written {
                bail!("could not write {path}; run:\n    {}", step.command());
            }
            crate::base::message::note(format_args!(
                "added Debian's bookworm-backports ({types}) in {path}"
            ));
            Ok(())
        }
        HostStep::Update => apt(&["apt-get", "update", "-q"]),
        HostStep::Install {
            packages,
            backports,
        } => {
            crate::base::message::note(format_args!(
                "installing{}: {}",
                if *backports {
                    " from bookworm-backports"
                } else {
                    ""
                },
                packages.join(" ")
            ));
            let mut install = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
            if *backports {
                install.extend(["-t", "bookworm-backports"]);
            }
            install.extend(packages.iter().copied());
            apt(&install)
        }
    }
}

/// Gives this host what `needs` asks for, or fails with the one command
/// that would.
pub fn ensure(needs: HostNeeds, consent: Consent) -> Result<()> {
    plan_for(needs, &HostState::read()).apply(needs, consent)
}

/// Makes sure markbench's QEMU can be built (the deb-src entry its source
/// comes from and its build tools). A run has planned them before its
/// first build; this is for whatever builds QEMU without one.
pub fn ensure_qemu_build_tools() -> Result<()> {
    ensure(
        HostNeeds {
            qemu_build: true,
            ..HostNeeds::default()
        },
        Consent::Given,
    )
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

/// What `markbench setup` does: the requirements of a run and what
/// building markbench's QEMU needs (a run plans it only when an SMP point
/// may need that QEMU; setup installs it up front), then `just`, which runs
/// the README's `just compare`. A run itself needs no `just`, so only setup
/// installs it (cargo compiles it for minutes: not something a `compare`
/// should do on its way). With `ci`: what CI needs too, without `just`,
/// which no test runs.
pub fn setup(check_only: bool, ci: bool) -> Result<()> {
    let needs = HostNeeds {
        run: true,
        qemu_build: true,
        ci,
    };
    let plan = plan_for(needs, &HostState::read());
    let system = match check_only {
        true if !plan.is_empty() => Err(plan.refusal(false)),
        true => Ok(()),
        false => plan.apply(needs, Consent::Given),
    };
    let just = if ci { Ok(()) } else { ensure_just(check_only) };
    match (system, just) {
        (Ok(()), just) => just,
        (Err(e), Ok(())) => Err(e),
        (Err(system), Err(just)) => Err(anyhow::anyhow!("{system:#}\n{just:#}").into()),
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

    fn new_bookworm_machine(sources: &[&str]) -> HostState {
        HostState {
            apt_sources: sources.iter().map(|s| s.to_string()).collect(),
            ..HostState::new_debian_12()
        }
    }

    const DEBIAN_SOURCES: &str = "Types: deb\nURIs: http://deb.debian.org/debian\n\
        Suites: bookworm bookworm-updates\nComponents: main\n";

    fn run_with_own_qemu() -> HostNeeds {
        HostNeeds {
            run: true,
            qemu_build: true,
            ci: false,
        }
    }

    #[test]
    fn on_a_new_machine_the_plan_adds_the_sources_then_installs_the_build_tools_and_qemu() {
        let plan = plan_for(
            run_with_own_qemu(),
            &new_bookworm_machine(&[DEBIAN_SOURCES]),
        );
        assert_eq!(
            plan.steps[..3],
            [
                HostStep::AddSource {
                    path: BACKPORTS_SOURCES,
                    types: "deb"
                },
                HostStep::AddSource {
                    path: BACKPORTS_SRC_SOURCES,
                    types: "deb-src"
                },
                HostStep::Update,
            ]
        );
        let packages = plan.packages();
        for p in [
            "ninja-build",
            "meson",
            "python3-pycotap",
            "qemu-system-x86",
            "rt-tests",
        ] {
            assert!(packages.contains(&p), "{p} not in {packages:?}");
        }
        let backports = plan.steps.iter().find_map(|s| match s {
            HostStep::Install {
                packages,
                backports: true,
            } => Some(packages.clone()),
            _ => None,
        });
        assert_eq!(
            backports,
            Some(vec!["qemu-system-x86", "meson", "python3-pycotap"])
        );
        assert!(plan
            .missing
            .contains(&"a deb-src entry for bookworm-backports (QEMU's source)"));
        // The one command a user runs by hand does all of it, sources first.
        let command = plan.command();
        assert!(command.find("Types: deb-src").unwrap() < command.find("apt-get update").unwrap());
        assert!(command.contains("-t bookworm-backports qemu-system-x86 meson python3-pycotap"));
    }

    #[test]
    fn without_an_smp_point_under_icount_the_plan_leaves_the_qemu_build_out() {
        let plan = plan_for(
            HostNeeds {
                run: true,
                ..HostNeeds::default()
            },
            &new_bookworm_machine(&[DEBIAN_SOURCES]),
        );
        assert!(!plan.sources().contains(&BACKPORTS_SRC_SOURCES));
        assert!(!plan.packages().contains(&"ninja-build"));
        assert!(!plan.packages().contains(&"meson"));
        // QEMU 10 still comes from bookworm-backports.
        assert_eq!(plan.sources(), vec![BACKPORTS_SOURCES]);
    }

    #[test]
    fn a_host_that_has_everything_gets_an_empty_plan() {
        let mut host = new_bookworm_machine(&[
            DEBIAN_SOURCES,
            "Types: deb deb-src\nURIs: http://deb.debian.org/debian\n\
             Suites: bookworm-backports\nComponents: main\n",
        ]);
        host.unmet.clear();
        host.qemu_version = Some((10, 0));
        assert_eq!(
            plan_for(
                HostNeeds {
                    ci: true,
                    ..run_with_own_qemu()
                },
                &host
            ),
            HostPlan {
                can_install: true,
                debian_like: true,
                ..HostPlan::default()
            }
        );
    }

    #[test]
    fn a_binary_backports_entry_is_not_a_source_entry_and_a_disabled_one_is_none() {
        let binary = "Types: deb\nSuites: bookworm-backports\n".to_string();
        let one_line = "deb-src http://deb.debian.org/debian bookworm-backports main".to_string();
        let disabled = "Types: deb-src\nSuites: bookworm-backports\nEnabled: no\n".to_string();
        let commented =
            "# deb-src http://deb.debian.org/debian bookworm-backports main".to_string();
        assert!(names_backports(std::slice::from_ref(&binary), "deb"));
        assert!(!names_backports(std::slice::from_ref(&binary), "deb-src"));
        assert!(names_backports(std::slice::from_ref(&one_line), "deb-src"));
        assert!(!names_backports(std::slice::from_ref(&one_line), "deb"));
        assert!(!names_backports(&[disabled], "deb-src"));
        assert!(!names_backports(&[commented], "deb-src"));
    }

    #[test]
    fn the_sources_are_read_under_the_root_given() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("etc/apt/sources.list.d");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("backports.sources"),
            "Types: deb-src\nSuites: bookworm-backports\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("backports.sources.bak"),
            "Types: deb\nSuites: bookworm-backports\n",
        )
        .unwrap();
        let sources = apt_sources_under(root.path());
        assert!(names_backports(&sources, "deb-src"));
        assert!(!names_backports(&sources, "deb"), "apt reads no .bak file");
    }

    #[test]
    fn without_root_the_plan_is_refused_with_the_one_command_and_nothing_installed() {
        let mut host = new_bookworm_machine(&[DEBIAN_SOURCES]);
        host.can_install = false;
        let plan = plan_for(run_with_own_qemu(), &host);
        let error = plan
            .apply(run_with_own_qemu(), Consent::Given)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("Stopped before building anything"),
            "{error}"
        );
        assert!(error.contains(&plan.command()), "{error}");
        assert!(
            error.contains("deb-src entry for bookworm-backports"),
            "{error}"
        );
    }

    #[test]
    fn an_old_qemu_without_root_is_a_note_not_a_refusal() {
        let mut host = new_bookworm_machine(&[DEBIAN_SOURCES]);
        host.unmet.clear();
        host.can_install = false;
        host.qemu_version = Some((7, 2));
        let plan = plan_for(
            HostNeeds {
                run: true,
                ..HostNeeds::default()
            },
            &host,
        );
        assert!(plan.is_empty(), "{plan:?}");
        assert!(plan.notes[0].contains("QEMU 7.2"), "{plan:?}");
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
