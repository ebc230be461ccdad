//! `markbench setup`: install the prerequisites, or with `--check` only say
//! what is missing ([`crate::base::prereq`]).

use crate::base::error::Result;
use crate::base::exit::ExitStatus;

pub fn run(check: bool, ci: bool) -> Result<ExitStatus> {
    crate::base::prereq::setup(check, ci)?;
    println!(
        "{}",
        crate::base::message::line("all prerequisites are installed")
    );
    Ok(ExitStatus::Success)
}

/// `markbench setup --arch ARCH`: what a guest of another architecture
/// needs (its cross compiler, QEMU, Debian's rustc and the architecture's
/// Rust standard library, dpkg knowing the architecture), kept apart from
/// a plain `setup` and `setup --ci`, which no arm64 work needs.
pub fn run_arch(arch: crate::base::arch::Arch, check: bool) -> Result<ExitStatus> {
    crate::base::prereq::setup_arch(arch, check)?;
    println!(
        "{}",
        crate::base::message::line(format_args!("all that an {arch} guest needs is installed"))
    );
    Ok(ExitStatus::Success)
}
