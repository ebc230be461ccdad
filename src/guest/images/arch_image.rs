//! The base guest image of a guest architecture: the one place a run asks
//! for it, so the image of each architecture is chosen here and nowhere
//! else. x86-64's is `initramfs::ensure_base`; arm64's (an aarch64 agent,
//! arm64 busybox and workload programs) is not built yet, and a run on
//! arm64 stops here with that said, after its kernels are built.

use super::initramfs::{self, BaseImage};
use crate::base::arch::Arch;
use crate::base::error::Result;

/// Returns the base initramfs of guests of `arch`, building it when its
/// inputs changed.
pub fn ensure_base_for(arch: Arch) -> Result<BaseImage> {
    match arch {
        Arch::X86_64 => initramfs::ensure_base(),
        Arch::Arm64 => Err(crate::base::error::InputError::new(format!(
            "the {arch} guest image is not built yet: markbench builds {arch} kernels but \
             has no {arch} agent and programs to boot them with"
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arm64_run_is_told_its_guest_image_is_missing() {
        let e = ensure_base_for(Arch::Arm64).unwrap_err();
        assert!(
            format!("{e:#}").contains("the arm64 guest image is not built yet"),
            "{e:#}"
        );
    }
}
