//! The guest's architecture: what a kernel is built for, which QEMU boots
//! it, which compiler and packages make its image. Every stage that differs
//! between architectures asks this type rather than naming one itself, so
//! x86-64 (the default, and every run before the field existed) keeps its
//! keys, command lines and words.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A guest architecture markbench builds and boots.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum Arch {
    #[default]
    #[serde(rename = "x86-64")]
    X86_64,
    #[serde(rename = "arm64")]
    Arm64,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Arm64];

    /// The name suites, options and run records use.
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86-64",
            Arch::Arm64 => "arm64",
        }
    }

    /// Whether this is the default architecture (runs that do not name one).
    pub fn is_default(&self) -> bool {
        *self == Arch::default()
    }

    /// The kernel's `ARCH=`.
    pub fn kernel_arch(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86",
            Arch::Arm64 => "arm64",
        }
    }

    /// The kernel's `CROSS_COMPILE=` prefix on an x86-64 host (none for the
    /// host's own architecture).
    pub fn cross_compile(self) -> Option<&'static str> {
        match self {
            Arch::X86_64 => None,
            Arch::Arm64 => Some("aarch64-linux-gnu-"),
        }
    }

    /// The `make` target that builds the bootable image, and where it lands
    /// under the build directory.
    pub fn kernel_image(self) -> (&'static str, &'static str) {
        match self {
            Arch::X86_64 => ("bzImage", "arch/x86/boot/bzImage"),
            Arch::Arm64 => ("Image", "arch/arm64/boot/Image"),
        }
    }

    /// The system emulator that boots this architecture.
    pub fn qemu_binary(self) -> &'static str {
        match self {
            Arch::X86_64 => "qemu-system-x86_64",
            Arch::Arm64 => "qemu-system-aarch64",
        }
    }

    /// The Rust target the guest agent is built for (static).
    pub fn rust_target(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-gnu",
            Arch::Arm64 => "aarch64-unknown-linux-gnu",
        }
    }

    /// Debian's name for the architecture (packages, `dpkg`).
    pub fn debian_arch(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }

    /// The C compiler that builds this architecture's kernels on an x86-64
    /// host: its version enters every cache key of what it builds.
    pub fn compiler(self) -> &'static str {
        match self {
            Arch::X86_64 => "gcc",
            Arch::Arm64 => "aarch64-linux-gnu-gcc",
        }
    }

    /// QEMU's `-M` for this architecture (`None`: QEMU's default PC).
    pub fn machine(self) -> Option<&'static str> {
        match self {
            Arch::X86_64 => None,
            Arch::Arm64 => Some("virt"),
        }
    }

    /// QEMU's `-cpu`. On arm64 one fixed model, never `max`: the kernel
    /// patches its code by the CPU's features (LSE atomics, pointer
    /// authentication), so another model would run other instructions and
    /// count differently; the model is recorded with the run.
    pub fn guest_cpu(self) -> &'static str {
        match self {
            Arch::X86_64 => "max",
            Arch::Arm64 => "neoverse-n1",
        }
    }

    /// Whether KVM can run this architecture's guests on this host: only
    /// the host's own (x86-64); arm64 guests always run under TCG.
    pub fn kvm_possible(self) -> bool {
        self == Arch::X86_64
    }

    /// The guest's console and the agent's results port: the first and
    /// second serial ports (`-serial` twice; QEMU's `virt` machine gives
    /// arm64 a second PL011 when a second `-serial` is given).
    pub fn serial_ports(self) -> (&'static str, &'static str) {
        match self {
            Arch::X86_64 => ("ttyS0", "ttyS1"),
            Arch::Arm64 => ("ttyAMA0", "ttyAMA1"),
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Arch {
    type Err = String;

    fn from_str(text: &str) -> Result<Arch, String> {
        match text {
            "x86-64" | "x86_64" | "amd64" => Ok(Arch::X86_64),
            "arm64" | "aarch64" => Ok(Arch::Arm64),
            other => Err(format!(
                "unknown architecture {other:?} (known: {})",
                Arch::ALL.map(Arch::as_str).join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_read() {
        for arch in Arch::ALL {
            assert_eq!(arch.as_str().parse::<Arch>(), Ok(arch));
        }
        assert_eq!("aarch64".parse::<Arch>(), Ok(Arch::Arm64));
        assert_eq!("x86_64".parse::<Arch>(), Ok(Arch::X86_64));
        let err = "ia64".parse::<Arch>().unwrap_err();
        assert!(Arch::X86_64.machine().is_none() && Arch::Arm64.machine() == Some("virt"));
        assert_eq!(Arch::X86_64.guest_cpu(), "max");
        assert_ne!(Arch::Arm64.guest_cpu(), "max");
        assert!(err.contains("ia64") && err.contains("arm64"), "{err}");
    }

    #[test]
    fn serde_uses_the_same_names() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Holder {
            arch: Arch,
        }
        let text = toml::to_string(&Holder { arch: Arch::Arm64 }).unwrap();
        assert_eq!(text.trim(), "arch = \"arm64\"");
        let back: Holder = toml::from_str("arch = \"x86-64\"").unwrap();
        assert_eq!(back.arch, Arch::X86_64);
    }
}
