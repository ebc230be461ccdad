//! The images one run boots, assembled for its suite: every variant's
//! kernel (resolved, patched, built or found in the cache), the base
//! initramfs and the archives some workloads add, with the differences
//! between the kernels; and what one unit's boot is made of from them.
//! Both the timed boots (`run`) and the profiled ones (`profile`) boot
//! from here, so neither needs the other.

use crate::base::error::{Context, Result};
use crate::guest::images::fragments::Fragment;
use crate::guest::images::initramfs::{self, BaseImage};
use crate::guest::images::kernel::{self, KernelImage, KernelSource, KernelSpec};
use crate::guest::images::size::{self, SizeRecord};
use crate::guest::images::source::{KernelOrigin, ResolvedOrigin};
use crate::record::Accel;
use crate::stages::plan::{self, Unit};
use crate::stages::suite::Suite;
use crate::stages::vm::BootRequest;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The built images a run boots.
#[derive(Debug, Clone)]
pub struct Images {
    /// One per variant: the baseline first, then each candidate.
    pub kernels: Vec<KernelImage>,
    /// The fragments each kernel was built from, as found for this run.
    pub fragments: Vec<Vec<Fragment>>,
    pub base: BaseImage,
    /// Archives appended to every boot's initrd after the base (the
    /// kernel-compile tree and toolchain when the suite compiles).
    pub extra_archives: Vec<PathBuf>,
    /// What the guest image (the base and the archives after it) holds.
    pub guest: initramfs::ImageRecord,
    /// The configuration difference of each candidate against the baseline.
    pub diffconfig: String,
    /// The source difference of each candidate against the baseline, where
    /// their kernels come from other revisions or patches; empty otherwise.
    pub source_diff: String,
    /// Every kernel's sizes and each candidate's against the baseline's,
    /// read from their builds.
    pub sizes: SizeRecord,
}

/// Each variant's kernel origin, its revision resolved and its patches
/// checked on a scratch copy: a patch that does not apply stops the run
/// here, before any kernel is built. `source` is the run's, for variants
/// that name none of their own.
pub fn resolve_origins(suite: &Suite, source: &KernelSource) -> Result<Vec<ResolvedOrigin>> {
    let mut origins = Vec::new();
    for v in &suite.variants {
        let origin = KernelOrigin {
            source: match &v.source {
                Some(path) => KernelSource::from_path(path)?,
                None => source.clone(),
            },
            rev: v.rev.clone(),
            patches: v.patches.clone(),
        };
        let resolved =
            ResolvedOrigin::resolve(&origin).with_context(|| format!("variant {}", v.name))?;
        resolved
            .check_patches()
            .with_context(|| format!("variant {}", v.name))?;
        origins.push(resolved);
    }
    Ok(origins)
}

/// What the kernel named `kernel` is built from in `suite`.
fn kernel_spec(suite: &Suite, kernel: &str) -> Result<KernelSpec> {
    Ok(KernelSpec {
        name: kernel.to_string(),
        base: suite.kernel_base.clone(),
        fragments: suite.fragments.kernel_for(kernel, suite.arch)?,
        arch: suite.arch,
    })
}

/// Each variant's kernel name and whether the cache holds it, as the run
/// would build it from `origins` (each variant's, resolved).
pub fn cached_kernels(suite: &Suite, origins: &[ResolvedOrigin]) -> Result<Vec<(String, bool)>> {
    let mut kernels = Vec::new();
    for (v, origin) in suite.variants.iter().zip(origins) {
        let spec = kernel_spec(suite, &v.kernel)?;
        let entry = (v.kernel.clone(), kernel::is_cached(origin, &spec));
        if !kernels.contains(&entry) {
            kernels.push(entry);
        }
    }
    Ok(kernels)
}

/// Builds (or finds in the cache) every variant's kernel and the base initramfs.
pub fn prepare_images(suite: &Suite, source: &KernelSource) -> Result<Images> {
    // What another architecture's guest needs of the host is checked before
    // the first kernel is built, not found missing after it.
    crate::base::prereq::check_arch(suite.arch)?;
    let origins = resolve_origins(suite, source)?;
    let (kernels, fragments) = build_kernels(suite, &origins)?;
    // What all kernels share (scripts, the compile workload's tree) comes
    // from the baseline's tree. A run of one kernel (a bisection's step)
    // compares nothing and needs no tree: a commit's tree is a snapshot of
    // some 1.5 GB, made in tens of seconds.
    let baseline = &origins[0];
    let baseline_tree = match kernels.len() {
        1 => Err("one kernel, nothing to compare it with".to_string()),
        _ => Ok(baseline.tree()?.path),
    };
    let diffconfig = match &baseline_tree {
        Ok(tree) => diffconfigs(tree, &suite.variants, &kernels)?,
        Err(_) => String::new(),
    };
    let source_diff = source_differences(suite, &origins)?;
    let sizes = kernel_sizes(
        suite,
        &kernels,
        baseline_tree.as_deref().map_err(Clone::clone),
    );
    let (base, extra_archives, guest) = guest_image(suite, baseline, &fragments[0][0])?;
    // Held against `cache prune` while this run lasts.
    for used in kernels.iter().map(|k| &k.dir).chain([&base.path]) {
        crate::guest::images::lock::used(used);
    }
    for archive in &extra_archives {
        let entry = match archive.parent() {
            Some(dir) if dir.parent().is_some_and(|p| p.ends_with("compile-tree")) => dir,
            _ => archive,
        };
        crate::guest::images::lock::used(entry);
    }
    Ok(Images {
        kernels,
        fragments,
        base,
        extra_archives,
        guest,
        diffconfig,
        source_diff,
        sizes,
    })
}

/// Every variant's kernel, built or found in the cache, with the fragments
/// it was configured from.
fn build_kernels(
    suite: &Suite,
    origins: &[ResolvedOrigin],
) -> Result<(Vec<KernelImage>, Vec<Vec<Fragment>>)> {
    let mut kernels = Vec::new();
    let mut fragments = Vec::new();
    for (v, origin) in suite.variants.iter().zip(origins) {
        let spec = kernel_spec(suite, &v.kernel)?;
        kernels.push(kernel::ensure_kernel(origin, &spec)?);
        fragments.push(spec.fragments);
    }
    Ok((kernels, fragments))
}

/// How each candidate's source differs from the baseline's, one section
/// per candidate whose source differs.
fn source_differences(suite: &Suite, origins: &[ResolvedOrigin]) -> Result<String> {
    let mut source_diff = String::new();
    for (v, origin) in suite.variants.iter().zip(origins).skip(1) {
        if let Some(diff) = crate::guest::images::source::source_difference(&origins[0], origin)? {
            source_diff.push_str(&format!(
                "# {} against {}\n{diff}",
                v.name, suite.variants[0].name
            ));
            if !source_diff.ends_with('\n') {
                source_diff.push('\n');
            }
        }
    }
    Ok(source_diff)
}

/// The kernels' sizes; what could not be measured is a warning, not a
/// failed run.
fn kernel_sizes(
    suite: &Suite,
    kernels: &[KernelImage],
    baseline_tree: std::result::Result<&Path, String>,
) -> SizeRecord {
    let variants: Vec<String> = suite.variants.iter().map(|v| v.name.clone()).collect();
    let sizes = size::record(&variants, kernels, &suite.objects, baseline_tree);
    for k in &sizes.kernels {
        for e in &k.errors {
            crate::base::message::warning(format_args!("sizes of {}: {e}", k.variant));
        }
    }
    for c in &sizes.comparisons {
        if let Some(e) = &c.bloat_error {
            crate::base::message::warning(format_args!(
                "bloat-o-meter of {} against {}: {e}",
                c.candidate, c.baseline
            ));
        }
    }
    sizes
}

/// The guest image every boot shares: the base initramfs, the archive of
/// what the workloads add, the compile workload's tree, and their record.
fn guest_image(
    suite: &Suite,
    baseline: &ResolvedOrigin,
    baseline_fragment: &Fragment,
) -> Result<(BaseImage, Vec<PathBuf>, initramfs::ImageRecord)> {
    let base = initramfs::ensure_base_for(suite.arch)?;
    let (programs, carried) = guest_additions(suite);
    let additions = initramfs::ensure_additions_for(suite.arch, &programs, &carried)?;
    let mut hashed = base.files.clone();
    let mut extra_archives: Vec<PathBuf> = Vec::new();
    if let Some(additions) = additions {
        hashed.extend(additions.files);
        extra_archives.push(additions.path);
    }
    for spec in &suite.workloads {
        if let crate::guest::workloads::WorkloadKind::KernelCompile(k) = &spec.kind {
            let tree = crate::guest::images::compile_tree::ensure_compile_tree(
                &baseline.source,
                &baseline.source_identity,
                baseline_fragment,
                &k.make_targets(),
            )?;
            if !extra_archives.contains(&tree.archive) {
                extra_archives.push(tree.archive);
            }
        }
    }
    let mut archives = vec![base.path.clone()];
    archives.extend(extra_archives.iter().cloned());
    let mut every_program = initramfs::base_programs();
    every_program.extend(programs);
    let guest = initramfs::ImageRecord::of(&archives, &every_program, &carried, &hashed)?;
    Ok((base, extra_archives, guest))
}

/// The programs and files a suite's workloads add to every image, each once.
fn guest_additions(suite: &Suite) -> (Vec<PathBuf>, Vec<initramfs::CarriedFile>) {
    let in_base = initramfs::base_programs();
    let mut programs: Vec<PathBuf> = Vec::new();
    let mut carried: Vec<initramfs::CarriedFile> = Vec::new();
    for w in &suite.workloads {
        for p in w.programs() {
            let p = PathBuf::from(p);
            if !programs.contains(&p) && !in_base.contains(&p) {
                programs.push(p);
            }
        }
        for f in w.files() {
            let file = initramfs::CarriedFile {
                host: PathBuf::from(f.from),
                guest: f.to,
            };
            if !carried.contains(&file) {
                carried.push(file);
            }
        }
    }
    (programs, carried)
}

/// The configuration difference of each candidate against the baseline:
/// for two variants the diffconfig alone, for more one headed section per
/// candidate.
fn diffconfigs(
    tree: &Path,
    variants: &[crate::stages::suite::Variant],
    kernels: &[KernelImage],
) -> Result<String> {
    if kernels.len() == 2 {
        return kernel::diffconfig(tree, &kernels[0], &kernels[1]);
    }
    let mut text = String::new();
    for (v, k) in variants.iter().zip(kernels).skip(1) {
        let diff = kernel::diffconfig(tree, &kernels[0], k)?;
        text.push_str(&format!(
            "# {} against {}\n{diff}",
            v.name, variants[0].name
        ));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok(text)
}

impl Images {
    /// Writes the initrd of one unit's boot to `out`: the base image, the
    /// extra archives and the unit's job.
    pub fn write_unit_initrd(&self, suite: &Suite, unit: &Unit, out: &Path) -> Result<()> {
        initramfs::write_boot_initrd_with_archives(
            &self.base,
            &self.extra_archives,
            &plan::job_for(suite, unit),
            out,
        )
    }

    /// The boot of one unit as every boot of it is made: its variant's
    /// kernel and command line at its CPU count, under `accel`, within the
    /// suite's deadline. Guest time (icount shift, guest seed) and a plugin
    /// differ between the timed and the profiled boots: the caller sets them.
    pub fn boot_request(
        &self,
        suite: &Suite,
        unit: &Unit,
        accel: Accel,
        initrd: PathBuf,
        console_log: PathBuf,
    ) -> BootRequest {
        BootRequest {
            kernel: self.kernels[unit.side].bzimage.clone(),
            initrd,
            extra_cmdline: suite.variants[unit.side].cmdline.clone(),
            cpus: unit.cpus,
            memory_mib: suite.memory_mib,
            accel,
            icount_shift: None,
            guest_seed: None,
            deadline: Duration::from_secs(suite.boot_timeout_s),
            console_log,
            plugin: None,
            host_cpu: None,
            qemu: None,
            rr_turn: None,
            arch: suite.arch,
        }
    }
}
