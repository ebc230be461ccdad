//! `markbench images`: build the suite's kernels and guest initramfs into
//! the cache, or with `--list` list the kernels it holds.

use super::SuiteChoice;
use crate::base::error::Result;
use crate::base::exit::ExitStatus;

pub fn run(suite: &SuiteChoice, list: bool, yes: bool) -> Result<ExitStatus> {
    if list {
        print_kernels();
        return Ok(ExitStatus::Success);
    }
    let (suite, source) = suite.load()?;
    use crate::base::prereq::{ensure, Consent, HostNeeds};
    // The images are the kernels and the initramfs: markbench's QEMU is
    // built by the run that boots it.
    let needs = HostNeeds {
        run: true,
        ..HostNeeds::default()
    };
    ensure(
        needs,
        if yes {
            Consent::Given
        } else {
            Consent::AskInTerminal
        },
    )?;
    let images = crate::stages::run_images::prepare_images(&suite, &source)?;
    for k in &images.kernels {
        println!("kernel {:<20} {}", k.name, k.bzimage.display());
    }
    println!("initramfs {}", images.base.path.display());
    Ok(ExitStatus::Success)
}

/// `images --list`: the cache's kernels, one line each.
fn print_kernels() {
    println!("cache: {}", crate::guest::images::cache_dir().display());
    for k in crate::guest::images::kernel::cached_kernels() {
        println!(
            "kernel {:<20} {}  built in {:>4.0} s  {}",
            k.name,
            k.short_key(),
            k.build_seconds,
            k.bzimage.display()
        );
    }
}
