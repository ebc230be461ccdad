//! What a guest of a foreign architecture needs of the host, beyond a run's
//! requirements: its cross compiler (the kernel, the agent's link), its
//! QEMU, Debian's rustc with the architecture's standard library (the
//! agent), and dpkg knowing the architecture (its packages are the image's
//! programs). None of it is part of `setup` or `setup --ci`: only
//! `setup --arch` installs it, and [`check_arch`] stops a command that
//! lacks it before it builds anything.

use super::{apt, codename, is_debian_like, is_root, names_backports, HostStep};
use crate::base::arch::Arch;
use crate::base::error::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// How to tell one need is met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// An executable on PATH.
    Program(&'static str),
    /// A file or directory that must exist.
    Path(&'static str),
}

/// One thing a foreign guest needs and the Debian package that gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchNeed {
    pub what: &'static str,
    pub package: &'static str,
    /// Debian 12 has it only in bookworm-backports.
    pub backports: bool,
    probe: Probe,
}

/// What a guest of `arch` needs on an x86-64 Debian host (nothing for
/// x86-64: a run's own requirements cover it).
pub fn arch_needs(arch: Arch) -> Vec<ArchNeed> {
    match arch {
        Arch::X86_64 => Vec::new(),
        Arch::Arm64 => vec![
            ArchNeed {
                what: "the arm64 cross compiler (aarch64-linux-gnu-gcc)",
                package: "gcc-aarch64-linux-gnu",
                backports: false,
                probe: Probe::Program("aarch64-linux-gnu-gcc"),
            },
            ArchNeed {
                what: "arm64 glibc to link the static guest agent",
                package: "libc6-dev-arm64-cross",
                backports: false,
                probe: Probe::Path("/usr/aarch64-linux-gnu/lib/libc.a"),
            },
            ArchNeed {
                what: "QEMU for arm64 (qemu-system-aarch64)",
                package: "qemu-system-arm",
                backports: true,
                probe: Probe::Program("qemu-system-aarch64"),
            },
            ArchNeed {
                what: "Debian's rustc (/usr/bin/rustc, builds the arm64 guest agent)",
                package: "rustc",
                backports: false,
                probe: Probe::Path("/usr/bin/rustc"),
            },
            ArchNeed {
                what: "Rust's arm64 standard library",
                package: "libstd-rust-dev:arm64",
                backports: false,
                probe: Probe::Path("/usr/lib/rustlib/aarch64-unknown-linux-gnu/lib"),
            },
        ],
    }
}

/// What of a foreign guest's needs this host has, as far as the plan
/// looks: read by [`ArchHost::read`], given as data in tests.
#[derive(Debug, Clone, Default)]
pub struct ArchHost {
    pub codename: Option<String>,
    /// The packages of the needs that are not met.
    pub unmet: Vec<&'static str>,
    /// `dpkg --print-foreign-architectures`.
    pub foreign_architectures: Vec<String>,
    /// apt's lists know the architecture's packages (`apt-get update` ran
    /// after dpkg was told of it).
    pub lists_know_arch: bool,
    /// The apt sources give bookworm-backports' binary packages.
    pub has_backports: bool,
}

impl ArchHost {
    /// This host, now, for `arch`.
    pub fn read(arch: Arch) -> Self {
        let unmet = arch_needs(arch)
            .into_iter()
            .filter(|n| !n.is_met())
            .map(|n| n.package)
            .collect();
        let foreign_architectures = Command::new("dpkg")
            .arg("--print-foreign-architectures")
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let lists_know_arch = Command::new("apt-cache")
            .args(["show", "--no-all-versions"])
            .arg(format!("libc6:{}", arch.debian_arch()))
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
        ArchHost {
            codename: codename(),
            unmet,
            foreign_architectures,
            lists_know_arch,
            has_backports: names_backports(&super::apt_sources_under(Path::new("/")), "deb"),
        }
    }
}

impl ArchNeed {
    fn is_met(&self) -> bool {
        match self.probe {
            Probe::Program(program) => super::on_path(program).is_some(),
            Probe::Path(path) => Path::new(path).exists(),
        }
    }
}

/// One step of giving the host what a foreign guest needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchStep {
    /// `dpkg --add-architecture ARCH`.
    AddArchitecture(&'static str),
    /// An apt source, `apt-get update` or `apt-get install`.
    Host(HostStep),
}

impl ArchStep {
    /// The step as a user types it.
    pub fn command(&self) -> String {
        match self {
            ArchStep::AddArchitecture(arch) => format!("sudo dpkg --add-architecture {arch}"),
            ArchStep::Host(step) => step.command(),
        }
    }
}

/// The steps that give `host` what a guest of `arch` needs, in order;
/// empty when it has it all.
pub fn arch_plan(arch: Arch, host: &ArchHost) -> Vec<ArchStep> {
    let needs = arch_needs(arch);
    if needs.is_empty() {
        return Vec::new();
    }
    let debian_arch = arch.debian_arch();
    let bookworm = host.codename.as_deref() == Some("bookworm");
    let unmet: Vec<&ArchNeed> = needs
        .iter()
        .filter(|n| host.unmet.contains(&n.package))
        .collect();
    let from_backports = |n: &&&ArchNeed| bookworm && n.backports;
    let plain: Vec<&'static str> = unmet
        .iter()
        .filter(|n| !from_backports(n))
        .map(|n| n.package)
        .collect();
    let backports: Vec<&'static str> = unmet
        .iter()
        .filter(from_backports)
        .map(|n| n.package)
        .collect();
    let known = host.foreign_architectures.iter().any(|a| a == debian_arch);
    let mut steps = Vec::new();
    if !backports.is_empty() && !host.has_backports {
        steps.push(ArchStep::Host(HostStep::AddSource {
            path: super::BACKPORTS_SOURCES,
            types: "deb",
        }));
    }
    if !known {
        steps.push(ArchStep::AddArchitecture(debian_arch));
    }
    if !steps.is_empty() || !plain.is_empty() || !backports.is_empty() || !host.lists_know_arch {
        steps.push(ArchStep::Host(HostStep::Update));
    }
    for (packages, backports) in [(plain, false), (backports, true)] {
        if !packages.is_empty() {
            steps.push(ArchStep::Host(HostStep::Install {
                packages,
                backports,
            }));
        }
    }
    steps
}

/// The one command that takes `steps` by hand.
pub fn plan_command(steps: &[ArchStep]) -> String {
    steps
        .iter()
        .map(ArchStep::command)
        .collect::<Vec<_>>()
        .join(" && ")
}

/// Whether this host can build and boot a guest of `arch`: Ok, or an
/// error naming what is missing and the exact command that installs it.
/// For a command to call before it builds anything.
pub fn check_arch(arch: Arch) -> Result<()> {
    let host = ArchHost::read(arch);
    let steps = arch_plan(arch, &host);
    if steps.is_empty() {
        return Ok(());
    }
    Err(refusal(arch, &host, &steps))
}

fn refusal(arch: Arch, host: &ArchHost, steps: &[ArchStep]) -> crate::base::error::Error {
    let mut missing: Vec<&str> = arch_needs(arch)
        .iter()
        .filter(|n| host.unmet.contains(&n.package))
        .map(|n| n.what)
        .collect();
    if !host
        .foreign_architectures
        .iter()
        .any(|a| a == arch.debian_arch())
        || !host.lists_know_arch
    {
        missing.push("apt's lists of Debian's arm64 packages (the guest's programs)");
    }
    crate::base::error::Error::msg(format!(
        "an {arch} guest needs what this host lacks: {}\nStopped before building anything. \
         To install it, run `markbench setup --arch {arch}` as root, or:\n    {}",
        missing.join(", "),
        plan_command(steps)
    ))
}

/// `markbench setup --arch ARCH`: installs what a guest of `arch` needs
/// (as root, or with password-less sudo), or with `check_only` says what
/// is missing.
pub fn setup_arch(arch: Arch, check_only: bool) -> Result<()> {
    let host = ArchHost::read(arch);
    let steps = arch_plan(arch, &host);
    if steps.is_empty() {
        return Ok(());
    }
    if check_only || !is_debian_like() || !(is_root() || super::has_passwordless_sudo()) {
        return Err(refusal(arch, &host, &steps));
    }
    for step in &steps {
        match step {
            ArchStep::AddArchitecture(debian_arch) => {
                let mut argv = if is_root() {
                    Vec::new()
                } else {
                    vec!["sudo", "-n"]
                };
                argv.extend(["dpkg", "--add-architecture", debian_arch]);
                let status = Command::new(argv[0])
                    .args(&argv[1..])
                    .status()
                    .with_context(|| format!("starting {}", argv.join(" ")))?;
                if !status.success() {
                    bail!("`{}` failed ({status})", argv.join(" "));
                }
            }
            ArchStep::Host(HostStep::Update) => apt(&["apt-get", "update", "-q"])?,
            ArchStep::Host(step) => super::take(step)?,
        }
    }
    let still = arch_plan(arch, &ArchHost::read(arch));
    if !still.is_empty() {
        bail!(
            "installed what an {arch} guest needs, but still missing; run:\n    {}",
            plan_command(&still)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh_bookworm() -> ArchHost {
        ArchHost {
            codename: Some("bookworm".into()),
            unmet: arch_needs(Arch::Arm64).iter().map(|n| n.package).collect(),
            foreign_architectures: Vec::new(),
            lists_know_arch: false,
            has_backports: false,
        }
    }

    #[test]
    fn a_fresh_debian_12_gets_the_architecture_then_the_packages() {
        let steps = arch_plan(Arch::Arm64, &fresh_bookworm());
        let command = plan_command(&steps);
        let at = |s: &str| {
            command
                .find(s)
                .unwrap_or_else(|| panic!("{s} in {command}"))
        };
        assert!(at("sudo tee /etc/apt/sources.list.d/") < at("dpkg --add-architecture arm64"));
        assert!(at("dpkg --add-architecture arm64") < at("apt-get update"));
        assert!(
            command.contains(
                "apt-get install -y --no-install-recommends gcc-aarch64-linux-gnu \
                 libc6-dev-arm64-cross rustc libstd-rust-dev:arm64"
            ),
            "{command}"
        );
        assert!(
            command.contains("-t bookworm-backports qemu-system-arm"),
            "{command}"
        );
    }

    #[test]
    fn a_host_with_everything_needs_nothing_and_x86_needs_nothing_extra() {
        let ready = ArchHost {
            codename: Some("bookworm".into()),
            unmet: Vec::new(),
            foreign_architectures: vec!["arm64".into()],
            lists_know_arch: true,
            has_backports: true,
        };
        assert_eq!(arch_plan(Arch::Arm64, &ready), Vec::new());
        assert_eq!(arch_plan(Arch::X86_64, &fresh_bookworm()), Vec::new());
    }

    #[test]
    fn stale_lists_alone_ask_for_an_update() {
        let host = ArchHost {
            codename: Some("bookworm".into()),
            unmet: Vec::new(),
            foreign_architectures: vec!["arm64".into()],
            lists_know_arch: false,
            has_backports: true,
        };
        assert_eq!(
            arch_plan(Arch::Arm64, &host),
            vec![ArchStep::Host(HostStep::Update)]
        );
        let message = format!(
            "{:#}",
            refusal(Arch::Arm64, &host, &arch_plan(Arch::Arm64, &host))
        );
        assert!(
            message.contains("markbench setup --arch arm64"),
            "{message}"
        );
        assert!(message.contains("sudo apt-get update"), "{message}");
    }

    #[test]
    fn outside_debian_12_qemu_comes_from_the_release_itself() {
        let host = ArchHost {
            codename: Some("trixie".into()),
            ..fresh_bookworm()
        };
        let command = plan_command(&arch_plan(Arch::Arm64, &host));
        assert!(!command.contains("backports"), "{command}");
        assert!(command.contains("qemu-system-arm"), "{command}");
    }
}
