//! A suite file (`suites/*.toml`): which two kernels to compare, on which
//! workloads, parameters and CPU counts, how many boots and iterations.
//!
//! Parsing is strict: unknown keys, unknown workloads, unknown kernel
//! fragments and impossible values are errors that name `file:line:col` and
//! the valid choices, because a typo in a suite silently measuring the wrong
//! thing costs a night.

use crate::base::arch::Arch;
use crate::base::error::InputError;
use crate::guest::images::fragments::FragmentSearch;
use crate::guest::images::kernel::KernelBase;
pub use crate::guest::workloads::kernel_compile::CompileScope;
use crate::guest::workloads::{Guest, WorkloadKind, WorkloadSpec};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The typed suite, after parsing and checking.
#[derive(Debug, Clone, Serialize)]
pub struct Suite {
    pub name: String,
    pub path: PathBuf,
    /// Read from markbench's built-in copy of a shipped suite, not a file.
    pub built_in: bool,
    /// The file's text, kept in the run directory for `--resume`.
    #[serde(skip)]
    pub text: String,
    /// Where its kernel fragments are looked up.
    #[serde(skip)]
    pub fragments: FragmentSearch,
    /// SHA-256 of the suite file, recorded so a report says exactly what ran.
    pub sha256: crate::base::sha256::Digest,
    pub description: String,
    /// The guest architecture its kernels are built for and boot as
    /// (`arch = "arm64"`; x86-64 when the file names none).
    #[serde(skip_serializing_if = "Arch::is_default")]
    pub arch: Arch,
    pub boots: u32,
    pub iterations: u32,
    pub warmup: u32,
    pub cpus: Vec<u32>,
    pub memory_mib: u32,
    pub boot_timeout_s: u64,
    /// Guests booted at once (`jobs = N`); `None`: as many as the host's
    /// cores and memory allow under icount, one under wall-clock timing.
    pub jobs: Option<u32>,
    pub accel: AccelChoice,
    pub timing: TimingChoice,
    /// `-icount shift=N`: one guest instruction counts 2^N ns of guest time.
    pub icount_shift: u32,
    /// Under icount, the longest round-robin turn of one vCPU of an SMP
    /// guest, in instructions (`smp_turn = N`; 0: to the next timer
    /// deadline). Only markbench's own QEMU has the setting.
    pub smp_turn: u32,
    pub seed: u64,
    pub order: RunOrder,
    /// Equivalence margin, as a fraction (the file says `margin_pct = 2.0`).
    pub margin: f64,
    pub correction: crate::base::stats::Correction,
    /// `[kernel] source`: the tree or tarball every kernel is built from
    /// unless `--kernel-source` or a variant's own `source` says otherwise;
    /// a relative path is taken from the suite file's directory, as every
    /// path a suite names.
    pub kernel_source: Option<PathBuf>,
    /// `[kernel] base`: the configuration every kernel starts from, under
    /// `base.config` and its variant's fragment.
    pub kernel_base: KernelBase,
    /// The QEMU binary to boot with (`qemu = "PATH"`, relative to the suite
    /// file); `None`: `qemu-system-x86_64` on PATH.
    pub qemu: Option<PathBuf>,
    /// Two or more: the baseline first, then each candidate compared with it.
    pub variants: Vec<Variant>,
    pub workloads: Vec<WorkloadSpec>,
    /// Object files whose sizes the report gives per kernel, relative to
    /// the kernel's build directory (e.g. `kernel/trace/ring_buffer.o`).
    pub objects: Vec<String>,
    /// Also boot each variant once per CPU count with the profile plugin,
    /// apart from the timed boots, to count where the instructions go.
    pub profile: bool,
    /// Run every boot under the cycle model (`model = "cycles"` or a
    /// `[model]` table of settings), adding its counts to every point.
    pub model: Option<crate::base::cycle_model::CycleModel>,
    /// Keep adding balanced blocks of boots after the planned ones until
    /// every point is resolved to this precision, within a budget.
    pub precision: Option<Precision>,
    /// The published table the report sets the run's figures beside
    /// (`reference = "aoki-2008"`).
    pub reference: Option<crate::record::ReferenceTable>,
}

/// A run that stops at a stated precision: after the suite's boots, blocks
/// of one boot of each variant are added at the CPU counts whose points'
/// 95% intervals of the relative difference are wider than ±`percent`,
/// until none is, the budget is spent or the boots are.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    /// The half-width asked of every point, in percent.
    pub percent: f64,
    /// The run's wall time, in seconds: no block starts that would end past it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<u64>,
    /// The run's boots, planned and added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_boots: Option<u32>,
}

impl Precision {
    /// Boots a run with a precision target but no cap of its own may make:
    /// eight times its plan, so a point that cannot be resolved (a workload
    /// that fails in every boot) ends the run instead of running forever.
    pub const DEFAULT_MAX_BOOTS_FACTOR: u32 = 8;

    /// Why a precision target cannot be used, if it cannot.
    pub fn check_percent(percent: f64) -> Result<(), String> {
        if percent > 0.0 && percent < 50.0 {
            Ok(())
        } else {
            Err(format!(
                "precision must be above 0 and below 50 (percent: the 95% interval's half-width), got {percent}"
            ))
        }
    }

    /// The cap on a run's boots: `max_boots`, else a multiple of its plan.
    pub fn boot_cap(&self, planned: usize) -> usize {
        self.max_boots.map_or(
            planned.saturating_mul(Self::DEFAULT_MAX_BOOTS_FACTOR as usize),
            |m| m as usize,
        )
    }
}

/// A duration as a suite or the command line writes it (`10m`, `90s`,
/// `1h 30m`), in whole seconds.
pub fn parse_budget(text: &str) -> Result<u64, String> {
    let d = humantime::parse_duration(text.trim())
        .map_err(|e| format!("budget {text:?} is not a duration such as \"5m\" or \"90s\": {e}"))?;
    if d.as_secs() == 0 {
        return Err(format!("budget {text:?} must be at least one second"));
    }
    Ok(d.as_secs())
}

/// How boots are ordered: always in blocks holding one boot of each variant
/// (balanced), the block's first side alternating (`abba`) or drawn from the
/// seed (`shuffled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOrder {
    #[default]
    Abba,
    Shuffled,
}

/// How guest time runs. `icount` makes QEMU's TCG count executed
/// instructions as guest time (`-icount shift=N,sleep=off`): timings then
/// measure code-path length, repeatable whatever the host is doing, but blind
/// to cache and memory effects. `auto` is icount under TCG for 1-vCPU
/// suites and wall time otherwise (see `vm::accel::timing_for`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TimingChoice {
    #[default]
    Auto,
    Wall,
    Icount,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AccelChoice {
    Auto,
    Kvm,
    Tcg,
}

/// One side of the comparison: a kernel built from the fragment
/// `<kernel>.config` on top of `base.config` (see `images::fragments` for
/// where they are found), booted with extra command-line arguments.
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    pub name: String,
    pub kernel: String,
    pub cmdline: String,
    /// The variant's own kernel source (relative paths taken from the suite
    /// file's directory); `None`: the run's (`--kernel-source`, `[kernel]
    /// source`, Debian's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<PathBuf>,
    /// A git revision of the source to build instead of the tree as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// Patches applied in order on top (relative to the suite file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PathBuf>,
}

/// Why an `objects` entry cannot be used, if it cannot: it is a path
/// relative to a kernel's build directory, inside it, naming an object file.
fn check_object(object: &str) -> Result<(), String> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
    let file = object.rsplit('/').next().unwrap_or_default();
    if object.starts_with('/') || !object.chars().all(safe) {
        return Err(format!(
            "objects: {object:?} must be a relative path in the kernel's build directory \
             (letters, digits, _ - . /), e.g. \"kernel/trace/ring_buffer.o\""
        ));
    }
    if !file.ends_with(".o") || file == ".o" {
        return Err(format!(
            "objects: {object:?} is not an object file (its name must end in .o)"
        ));
    }
    if object
        .split('/')
        .any(|part| part == ".." || part == "." || part.is_empty())
    {
        return Err(format!(
            "objects: {object:?} must name a file inside the build directory, without \
             empty, `.` or `..` parts"
        ));
    }
    Ok(())
}

/// The file as written, with spans kept for the checks that come after serde.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    arch: Option<Spanned<Arch>>,
    boots: Spanned<u32>,
    iterations: Spanned<u32>,
    #[serde(default)]
    warmup: u32,
    cpus: Spanned<Vec<u32>>,
    #[serde(default = "default_memory")]
    memory_mib: Spanned<u32>,
    #[serde(default = "default_boot_timeout")]
    boot_timeout_s: Spanned<u64>,
    #[serde(default)]
    jobs: Option<Spanned<u32>>,
    #[serde(default = "default_accel")]
    accel: AccelChoice,
    #[serde(default)]
    timing: TimingChoice,
    #[serde(default = "default_icount_shift")]
    icount_shift: Spanned<u32>,
    #[serde(default = "default_smp_turn")]
    smp_turn: Spanned<u32>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    order: RunOrder,
    /// Equivalence margin in percent (TOST): "no impact beyond this".
    #[serde(default = "default_margin_pct")]
    margin_pct: Spanned<f64>,
    #[serde(default)]
    correction: crate::base::stats::Correction,
    #[serde(default)]
    kernel: KernelSection,
    #[serde(default)]
    qemu: Option<String>,
    variant: Spanned<Vec<VariantFile>>,
    workload: Spanned<Vec<Spanned<WorkloadSpec>>>,
    /// Objects to size in every kernel's build.
    #[serde(default)]
    objects: Vec<Spanned<String>>,
    #[serde(default)]
    profile: bool,
    /// `"cycles"`, or a table of the cycle model's settings.
    #[serde(default)]
    model: Option<Spanned<ModelFile>>,
    /// Percent: the 95% interval's half-width every point is run to.
    #[serde(default)]
    precision: Option<Spanned<f64>>,
    /// Wall time of a run with a precision target, e.g. "5m".
    #[serde(default)]
    budget: Option<Spanned<String>>,
    /// Boots of a run with a precision target, planned and added.
    #[serde(default)]
    max_boots: Option<Spanned<u32>>,
    /// A published table to set the run's figures beside.
    #[serde(default)]
    reference: Option<Spanned<crate::record::ReferenceTable>>,
}

/// The suite's `model`: the model's name, or a table of its settings
/// (with an optional `kind = "cycles"`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ModelFile {
    Name(String),
    Table(std::collections::BTreeMap<String, toml::Value>),
}

fn default_memory() -> Spanned<u32> {
    Spanned::new(0..0, 1024)
}
fn default_boot_timeout() -> Spanned<u64> {
    Spanned::new(0..0, 900)
}
fn default_margin_pct() -> Spanned<f64> {
    Spanned::new(0..0, 2.0)
}
/// The turn SMP guests get under icount unless a suite says otherwise:
/// short enough that a cache line written by two vCPUs changes hands often,
/// long enough that a switch is a small part of a turn. What it costs in
/// host CPU is not measured to a figure yet (`scripts/smp-turn-cost.sh`
/// measures it).
pub const DEFAULT_SMP_TURN: u32 = 10_000;

/// The shortest turn allowed: below it a vCPU does little more than switch.
pub const SHORTEST_SMP_TURN: u32 = 100;

fn default_smp_turn() -> Spanned<u32> {
    Spanned::new(0..0, DEFAULT_SMP_TURN)
}

/// Whether `turn` is a turn markbench runs with (`smp_turn` or `--smp-turn`).
pub fn check_smp_turn(turn: u32) -> Result<(), String> {
    if turn != 0 && turn < SHORTEST_SMP_TURN {
        return Err(format!(
            "must be 0 (turns to the next timer deadline) or at least {SHORTEST_SMP_TURN} \
             instructions, not {turn}"
        ));
    }
    Ok(())
}

fn default_icount_shift() -> Spanned<u32> {
    Spanned::new(0..0, 4)
}
fn default_accel() -> AccelChoice {
    AccelChoice::Auto
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelSection {
    source: Option<Spanned<String>>,
    /// `tinyconfig` (default), `defconfig`, or a `.config` file relative to
    /// the suite file.
    base: Option<Spanned<String>>,
    /// A directory of fragments, relative to the suite file.
    fragments: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantFile {
    name: Spanned<String>,
    kernel: Spanned<String>,
    #[serde(default)]
    cmdline: Option<Spanned<String>>,
    source: Option<Spanned<String>>,
    rev: Option<Spanned<String>>,
    #[serde(default)]
    patches: Vec<Spanned<String>>,
}

/// The suite `compare`, `plan` and `images` run without `--suite`.
pub const DEFAULT_SUITE: &str = "suites/quick.toml";

/// The suites markbench ships, built in by their path in the repository, so
/// the default suite runs where no `suites/` directory is.
const BUILT_IN_SUITES: &[(&str, &str)] =
    &[(DEFAULT_SUITE, include_str!("../../suites/quick.toml"))];

/// Where a suite's kernel fragments are looked up (see `images::fragments`).
#[derive(Debug, Clone)]
pub enum FragmentLookup {
    /// Beside the suite file (or in the directory its `[kernel] fragments`
    /// names), then `vm-images/` in `cwd`, then built in.
    BesideSuite { cwd: PathBuf },
    /// `vm-images/` in `cwd`, then built in: for a built-in suite, which
    /// has no directory.
    FromCwd { cwd: PathBuf },
    /// Exactly these places (a resumed run's copies of its fragments).
    Fixed(FragmentSearch),
}

/// The largest suite file read.
pub const MAX_SUITE_BYTES: u64 = 1024 * 1024;

/// Why a variant's `cmdline` cannot be added to markbench's own kernel
/// arguments, if it cannot: it may not hold a newline (QEMU's `-append` and
/// the run's records are one line) nor set one of markbench's own
/// arguments, which the run depends on (the agent as init, the console log,
/// a panic ending the boot).
pub fn check_cmdline(cmdline: &str) -> Result<(), String> {
    if cmdline.contains(|c: char| c.is_control()) {
        return Err(
            "cmdline must be one line, without newlines, tabs or other control characters".into(),
        );
    }
    let own: Vec<&str> = crate::guest::images::kernel::BASE_CMDLINE
        .split_whitespace()
        .filter_map(|arg| arg.split_once('=').map(|(key, _)| key))
        .collect();
    for arg in cmdline.split_whitespace() {
        let key = arg.split_once('=').map_or(arg, |(key, _)| key);
        if own.contains(&key) {
            return Err(format!(
                "cmdline sets {key}=, which markbench sets itself ({}); leave it out",
                crate::guest::images::kernel::BASE_CMDLINE
            ));
        }
    }
    Ok(())
}

/// Why the cycle model cannot run on `arch`'s guests.
pub fn model_refusal(arch: Arch) -> String {
    format!(
        "the cycle model decodes x86 instructions only: it cannot run an {arch} guest \
         (leave out model / --model, or run on x86-64)"
    )
}

/// Why a workload cannot run on a guest of `arch`, if it cannot: on arm64
/// the micro-benchmarks' kernel patch reads the x86 time-stamp counter
/// (`rdtsc_ordered`), the kernel compile carries the host's x86-64
/// toolchain into the guest, and a workload's own programs are copied
/// from the host, x86-64 binaries.
pub fn refusal_on(spec: &WorkloadSpec, arch: Arch) -> Option<String> {
    if arch == Arch::X86_64 {
        return None;
    }
    let kind = spec.kind.name();
    match &spec.kind {
        WorkloadKind::Micro(_) => Some(format!(
            "workload {kind:?} cannot run on {arch}: its kernel patch times with the x86 \
             time-stamp counter (rdtsc_ordered)"
        )),
        WorkloadKind::KernelCompile(_) => Some(format!(
            "workload {kind:?} cannot run on {arch}: the compiler it carries into the guest \
             is the host's x86-64 one"
        )),
        _ if !spec.programs().is_empty() => Some(format!(
            "workload {kind:?} cannot run on {arch}: its programs ({}) are copied from this \
             x86-64 host",
            spec.programs().join(", ")
        )),
        _ => None,
    }
}

/// The most vCPUs a guest can have: the guest kernels' NR_CPUS.
pub const MAX_CPUS: u32 = 8;

/// Why a list of CPU counts (the file's `cpus` or `--cpus`) cannot run, if it cannot.
pub fn check_cpu_counts(cpus: &[u32]) -> Result<(), String> {
    if cpus.is_empty() || cpus.contains(&0) {
        return Err("cpus must list at least one CPU count, each at least 1".into());
    }
    if cpus.iter().any(|&c| c > MAX_CPUS) {
        return Err(format!(
            "cpus above {MAX_CPUS}: the guest kernels are built with NR_CPUS={MAX_CPUS}"
        ));
    }
    Ok(())
}

/// Why `-icount shift=N` cannot be used, if it cannot (the file's
/// `icount_shift` or `--icount-shift`).
pub fn check_icount_shift(shift: u32) -> Result<(), String> {
    // shift=0 hung in our trials; above 10 a guest second is too few instructions.
    if (1..=10).contains(&shift) {
        Ok(())
    } else {
        Err(format!("must be from 1 to 10, got {shift}"))
    }
}

impl Suite {
    /// Reads and checks a suite file.
    pub fn load(path: &Path, lookup: &FragmentLookup) -> crate::base::error::Result<Suite> {
        use std::io::Read;
        let cannot = |e: std::io::Error| {
            crate::base::input_file::io_failure(
                e,
                format_args!("{}: cannot read suite", path.display()),
            )
        };
        // Read at most one byte past the limit: `--suite /dev/zero` (or a
        // log given by mistake) must not fill the memory.
        // A FIFO would block the open, a device never end: refused by name
        // first (a missing file is told below, as a suite that cannot be read).
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            crate::base::input_file::check(path, crate::base::input_file::Bound::Record)?;
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SUITE_BYTES + 1).read_to_end(&mut bytes))
            .map_err(cannot)?;
        if bytes.len() as u64 > MAX_SUITE_BYTES {
            return Err(InputError::in_file(
                path,
                format_args!(
                    "not a suite: larger than {} KiB (suite files are a few KiB of TOML)",
                    MAX_SUITE_BYTES / 1024
                ),
            )
            .into());
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let position = crate::base::error::line_col(
                &String::from_utf8_lossy(&e.as_bytes()[..e.utf8_error().valid_up_to()]),
                usize::MAX,
            );
            InputError::at_line_col(path, position, "not a suite: the file is not UTF-8 text")
        })?;
        Ok(Suite::parse(path, &text, lookup)?)
    }

    /// `message` as an error at the suite file's top-level `key`: at its
    /// `file:line:col` when the file sets it, else at the file.
    pub fn error_at_key(&self, key: &str, message: impl std::fmt::Display) -> InputError {
        let keys: Option<std::collections::BTreeMap<String, Spanned<toml::Value>>> =
            toml::from_str(&self.text).ok();
        match keys.as_ref().and_then(|k| k.get(key)) {
            Some(value) => InputError::at(&self.path, &self.text, value.span().start, message),
            None => InputError::in_file(&self.path, message),
        }
    }

    /// The built-in copy of the shipped suite at `path` (as in the
    /// repository, e.g. `suites/quick.toml`), if markbench has one; its
    /// fragments are looked up from `cwd`.
    pub fn built_in(path: &Path, cwd: &Path) -> Option<Result<Suite, InputError>> {
        let (name, text) = BUILT_IN_SUITES
            .iter()
            .find(|(name, _)| Path::new(name) == path)?;
        let lookup = FragmentLookup::FromCwd {
            cwd: cwd.to_path_buf(),
        };
        Some(
            Suite::parse(Path::new(name), text, &lookup).map(|mut suite| {
                suite.built_in = true;
                suite
            }),
        )
    }

    /// The suite's path as a run records it.
    pub fn describe_path(&self) -> String {
        if self.built_in {
            format!("built-in {}", self.path.display())
        } else {
            self.path.display().to_string()
        }
    }

    pub fn parse(path: &Path, text: &str, lookup: &FragmentLookup) -> Result<Suite, InputError> {
        let file: SuiteFile = toml::from_str(text).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            InputError::at(path, text, offset, e.message().trim())
        })?;
        let at = At { path, text };
        let settings = at.settings(&file)?;
        let precision = at.precision(&file)?;
        let model = at.model(&file)?;
        let fragments = at.fragment_search(lookup, &file.kernel)?;
        let kernel_base = match &file.kernel.base {
            Some(base) => {
                let resolved = at.beside_suite(base.get_ref());
                let resolved = std::path::absolute(&resolved).unwrap_or(resolved);
                KernelBase::from_setting(base.get_ref(), &resolved)
                    .map_err(|m| at.err(base.span(), m))?
            }
            None => KernelBase::Tinyconfig,
        };
        let arch = file.arch.as_ref().map_or(Arch::default(), |a| *a.get_ref());
        at.model_on(arch, &file)?;
        let variants = at.variants(file.variant, &fragments, file.kernel.source.as_ref())?;
        let workloads =
            at.workloads(file.workload, &settings, &file.cpus, &file.memory_mib, arch)?;
        let reference = at.reference(file.reference, &workloads)?;
        let objects = at.objects(file.objects)?;
        let name = file.name.get_ref().clone();
        if name.trim().is_empty() || name.contains(['/', '\\']) {
            return Err(at.err(
                file.name.span(),
                "name must be non-empty and free of slashes".into(),
            ));
        }
        use sha2::Digest;
        Ok(Suite {
            name,
            path: path.to_path_buf(),
            built_in: false,
            text: text.to_string(),
            fragments,
            sha256: hex::encode(sha2::Sha256::digest(text.as_bytes())).into(),
            description: file.description,
            arch,
            boots: settings.boots,
            iterations: settings.iterations,
            warmup: file.warmup,
            cpus: settings.cpus,
            memory_mib: settings.memory_mib,
            boot_timeout_s: *file.boot_timeout_s.get_ref(),
            jobs: file.jobs.as_ref().map(|j| *j.get_ref()),
            accel: file.accel,
            timing: file.timing,
            icount_shift: settings.icount_shift,
            smp_turn: *file.smp_turn.get_ref(),
            seed: file.seed,
            order: file.order,
            margin: settings.margin_pct / 100.0,
            correction: file.correction,
            kernel_source: file.kernel.source.map(|s| {
                let beside = at.beside_suite(&s.into_inner());
                std::path::absolute(&beside).unwrap_or(beside)
            }),
            kernel_base,
            qemu: file.qemu.map(|q| at.beside_suite(&q)),
            variants,
            workloads,
            objects,
            profile: file.profile,
            model,
            precision,
            reference,
        })
    }
}

/// The run's settings of a suite file, checked.
struct Settings {
    boots: u32,
    iterations: u32,
    memory_mib: u32,
    margin_pct: f64,
    cpus: Vec<u32>,
    icount_shift: u32,
}

/// The suite file being parsed: where its errors point.
struct At<'a> {
    path: &'a Path,
    text: &'a str,
}

impl At<'_> {
    /// The suite's reference table, which must be of a workload it runs.
    fn reference(
        &self,
        reference: Option<Spanned<crate::record::ReferenceTable>>,
        workloads: &[WorkloadSpec],
    ) -> Result<Option<crate::record::ReferenceTable>, InputError> {
        let Some(reference) = reference else {
            return Ok(None);
        };
        let table = *reference.get_ref();
        let (kind, _) = table.workload();
        if !workloads.iter().any(|w| w.kind() == kind) {
            return Err(self.err(
                reference.span(),
                format!(
                    "reference {:?} is a table of {kind}, and the suite runs no {kind} workload",
                    table.name()
                ),
            ));
        }
        Ok(Some(table))
    }

    /// `msg` as an error at `span`'s `file:line:col`.
    fn err(&self, span: std::ops::Range<usize>, msg: String) -> InputError {
        InputError::at(self.path, self.text, span.start, msg)
    }

    /// `p` as written in the suite: relative to the suite file's directory.
    fn beside_suite(&self, p: &str) -> PathBuf {
        match self.path.parent() {
            Some(dir) if Path::new(p).is_relative() => dir.join(p),
            _ => PathBuf::from(p),
        }
    }

    fn positive(&self, v: &Spanned<u32>, what: &str) -> Result<u32, InputError> {
        crate::base::error::at_least_one(*v.get_ref(), what).map_err(|m| self.err(v.span(), m))
    }

    fn settings(&self, file: &SuiteFile) -> Result<Settings, InputError> {
        let boots = self.positive(&file.boots, "boots")?;
        let iterations = self.positive(&file.iterations, "iterations")?;
        let memory_mib = *file.memory_mib.get_ref();
        if memory_mib < 128 {
            return Err(self.err(
                file.memory_mib.span(),
                "memory_mib must be at least 128".into(),
            ));
        }
        crate::base::error::at_least_one(*file.boot_timeout_s.get_ref(), "boot_timeout_s")
            .map_err(|m| self.err(file.boot_timeout_s.span(), m))?;
        check_smp_turn(*file.smp_turn.get_ref())
            .map_err(|why| self.err(file.smp_turn.span(), format!("smp_turn {why}")))?;
        if let Some(jobs) = &file.jobs {
            crate::base::error::at_least_one(u64::from(*jobs.get_ref()), "jobs")
                .map_err(|m| self.err(jobs.span(), m))?;
        }
        let margin_pct = *file.margin_pct.get_ref();
        if !(margin_pct > 0.0 && margin_pct < 50.0) {
            return Err(self.err(
                file.margin_pct.span(),
                "margin_pct must be above 0 and below 50 (percent)".into(),
            ));
        }
        let cpus = file.cpus.get_ref().clone();
        check_cpu_counts(&cpus).map_err(|why| self.err(file.cpus.span(), why))?;
        let icount_shift = *file.icount_shift.get_ref();
        check_icount_shift(icount_shift)
            .map_err(|why| self.err(file.icount_shift.span(), format!("icount_shift {why}")))?;
        Ok(Settings {
            boots,
            iterations,
            memory_mib,
            margin_pct,
            cpus,
            icount_shift,
        })
    }

    /// Refuses a cycle model on a guest it cannot decode: the plugin's
    /// model decodes x86 instructions alone.
    fn model_on(&self, arch: Arch, file: &SuiteFile) -> Result<(), InputError> {
        match &file.model {
            Some(model) if arch != Arch::X86_64 => Err(self.err(model.span(), model_refusal(arch))),
            _ => Ok(()),
        }
    }

    /// `model`, checked: the one model's name, or its settings by name.
    fn model(
        &self,
        file: &SuiteFile,
    ) -> Result<Option<crate::base::cycle_model::CycleModel>, InputError> {
        use crate::base::cycle_model::{CycleModel, MODEL_NAME};
        let Some(spanned) = &file.model else {
            return Ok(None);
        };
        let span = spanned.span();
        let wrong_name = |name: &str| {
            format!("model {name:?} is not a model markbench has; the one model is {MODEL_NAME:?}")
        };
        let mut model = CycleModel::default();
        match spanned.get_ref() {
            ModelFile::Name(name) if name == MODEL_NAME => {}
            ModelFile::Name(name) => return Err(self.err(span, wrong_name(name))),
            ModelFile::Table(table) => {
                for (key, value) in table {
                    match (key.as_str(), value) {
                        ("kind", toml::Value::String(name)) if name == MODEL_NAME => {}
                        ("kind", other) => {
                            return Err(self.err(span, wrong_name(&other.to_string())))
                        }
                        (key, toml::Value::Integer(n)) if *n >= 0 => model
                            .set(key, *n as u64)
                            .map_err(|m| self.err(span.clone(), format!("[model] {m}")))?,
                        (key, other) => {
                            return Err(self.err(
                                span,
                                format!("[model] {key} must be a whole number, not {other}"),
                            ))
                        }
                    }
                }
            }
        }
        model.check().map_err(|m| self.err(span, m))?;
        Ok(Some(model))
    }

    /// `precision`, `budget` and `max_boots`, checked: a budget or a cap
    /// means nothing without a precision to run to.
    fn precision(&self, file: &SuiteFile) -> Result<Option<Precision>, InputError> {
        let Some(percent) = &file.precision else {
            let stray = file
                .budget
                .as_ref()
                .map(|b| ("budget", b.span()))
                .or(file.max_boots.as_ref().map(|m| ("max_boots", m.span())));
            return match stray {
                Some((key, span)) => Err(self.err(
                    span,
                    format!("{key} bounds a run with a precision target; add precision = PCT (e.g. 0.5) or remove {key}"),
                )),
                None => Ok(None),
            };
        };
        Precision::check_percent(*percent.get_ref()).map_err(|m| self.err(percent.span(), m))?;
        let budget_s = match &file.budget {
            Some(b) => Some(parse_budget(b.get_ref()).map_err(|m| self.err(b.span(), m))?),
            None => None,
        };
        let max_boots = match &file.max_boots {
            Some(m) => Some(self.positive(m, "max_boots")?),
            None => None,
        };
        Ok(Some(Precision {
            percent: *percent.get_ref(),
            budget_s,
            max_boots,
        }))
    }

    /// Where the suite's kernels' fragments are looked up.
    fn fragment_search(
        &self,
        lookup: &FragmentLookup,
        kernel: &KernelSection,
    ) -> Result<FragmentSearch, InputError> {
        Ok(match lookup {
            FragmentLookup::Fixed(search) => search.clone(),
            FragmentLookup::FromCwd { cwd } => FragmentSearch::for_suite(None, None, cwd),
            FragmentLookup::BesideSuite { cwd } => {
                let absolute = cwd.join(self.path);
                let dir = absolute
                    .parent()
                    .map(|d| std::fs::canonicalize(d).unwrap_or(d.into()));
                let named = match &kernel.fragments {
                    Some(named) => {
                        let resolved = dir.clone().unwrap_or_default().join(named.get_ref());
                        if !resolved.is_dir() {
                            return Err(self.err(
                                named.span(),
                                format!(
                                    "fragments: {} is not a directory (the path is relative to \
                                     the suite file)",
                                    resolved.display()
                                ),
                            ));
                        }
                        Some(resolved)
                    }
                    None => None,
                };
                FragmentSearch::for_suite(dir.as_deref(), named.as_deref(), cwd)
            }
        })
    }

    /// The `[[variant]]`s, checked: two or more, named once each, of known
    /// kernels, with sources, revisions and patches that exist.
    fn variants(
        &self,
        files: Spanned<Vec<VariantFile>>,
        fragments: &FragmentSearch,
        kernel_source: Option<&Spanned<String>>,
    ) -> Result<Vec<Variant>, InputError> {
        if files.get_ref().len() < 2 {
            return Err(self.err(
                files.span(),
                format!(
                    "a suite compares two or more [[variant]]s (the baseline first, then each \
                     candidate), found {}",
                    files.get_ref().len()
                ),
            ));
        }
        let kernels = fragments.kernel_names();
        let mut variants: Vec<Variant> = Vec::new();
        for v in files.into_inner() {
            let variant = self.variant(v, fragments, &kernels, kernel_source, &variants)?;
            variants.push(variant);
        }
        Ok(variants)
    }

    /// One `[[variant]]`, checked, after the variants `before` it.
    fn variant(
        &self,
        v: VariantFile,
        fragments: &FragmentSearch,
        kernels: &[String],
        kernel_source: Option<&Spanned<String>>,
        before: &[Variant],
    ) -> Result<Variant, InputError> {
        if !kernels.contains(v.kernel.get_ref()) {
            return Err(self.err(
                v.kernel.span(),
                format!(
                    "unknown kernel {:?}: no {}.config in {}; valid choices: {}",
                    v.kernel.get_ref(),
                    v.kernel.get_ref(),
                    fragments.describe(),
                    kernels.join(", ")
                ),
            ));
        }
        if v.name.get_ref().trim().is_empty()
            || v.name.get_ref().contains(['/', '\\', '\n', '\t', ','])
        {
            return Err(self.err(
                v.name.span(),
                "variant name must be non-empty and free of / \\ , tab and newline".into(),
            ));
        }
        if let Some(cmdline) = &v.cmdline {
            check_cmdline(cmdline.get_ref()).map_err(|m| self.err(cmdline.span(), m))?;
        }
        if before.iter().any(|seen| &seen.name == v.name.get_ref()) {
            return Err(self.err(
                v.name.span(),
                format!("two variants are named {:?}", v.name.get_ref()),
            ));
        }
        let source = match &v.source {
            Some(s) => {
                let resolved = self.beside_suite(s.get_ref());
                crate::guest::images::source::KernelSource::from_path(&resolved)
                    .map_err(|e| self.err(s.span(), format!("source: {e}")))?;
                Some(resolved)
            }
            None => None,
        };
        if let Some(rev) = &v.rev {
            if rev.get_ref().trim().is_empty() || rev.get_ref().starts_with('-') {
                return Err(self.err(
                    rev.span(),
                    format!("rev {:?} is not a git revision", rev.get_ref()),
                ));
            }
            // Checked here when the tree is known, so a typo names its line.
            let tree = source
                .clone()
                .or_else(|| kernel_source.map(|s| self.beside_suite(s.get_ref())));
            if let Some(tree) = tree.filter(|t| t.is_dir()) {
                crate::guest::images::source::resolve_rev(&tree, rev.get_ref())
                    .map_err(|e| self.err(rev.span(), format!("{e}")))?;
            }
        }
        let mut patches = Vec::new();
        for p in &v.patches {
            // Absolute: the patch is applied from inside the kernel tree,
            // where a path relative to here would not resolve.
            let beside = self.beside_suite(p.get_ref());
            let resolved = std::path::absolute(&beside).unwrap_or(beside);
            if !resolved.is_file() {
                return Err(self.err(
                    p.span(),
                    format!(
                        "patch {} does not exist (paths are relative to the suite file)",
                        resolved.display()
                    ),
                ));
            }
            patches.push(resolved);
        }
        Ok(Variant {
            name: v.name.into_inner(),
            kernel: v.kernel.into_inner(),
            cmdline: v.cmdline.map(Spanned::into_inner).unwrap_or_default(),
            source,
            rev: v.rev.map(Spanned::into_inner),
            patches,
        })
    }

    /// The `[[workload]]`s, each checked against the guest, none measuring
    /// what another does, and some workload at every CPU count.
    fn workloads(
        &self,
        files: Spanned<Vec<Spanned<WorkloadSpec>>>,
        settings: &Settings,
        cpus_key: &Spanned<Vec<u32>>,
        memory_key: &Spanned<u32>,
        arch: Arch,
    ) -> Result<Vec<WorkloadSpec>, InputError> {
        if files.get_ref().is_empty() {
            return Err(self.err(
                files.span(),
                "a suite needs at least one [[workload]]".into(),
            ));
        }
        let cpus = &settings.cpus;
        let guest = Guest {
            cpus,
            memory_mib: settings.memory_mib,
        };
        let mut workloads = Vec::new();
        let mut spans = Vec::new();
        for w in files.into_inner() {
            let span = w.span();
            let mut spec = w.into_inner();
            spec.check(guest).map_err(|refusal| {
                let at = match (refusal.suite_key, &refusal.near) {
                    (Some("memory_mib"), _) => memory_key.span(),
                    (_, Some((key, value))) => self.value_in(&span, key, value),
                    _ => span.clone(),
                };
                self.err(at, refusal.message)
            })?;
            if let Some(why) = refusal_on(&spec, arch) {
                return Err(self.err(span, why));
            }
            self.host_files(&mut spec, &span)?;
            workloads.push(spec);
            spans.push(span);
        }
        if let Some(c) = crate::guest::workloads::collision(&workloads, cpus) {
            let (line, _) = crate::base::error::line_col(self.text, spans[c.first].start);
            return Err(self.err(
                spans[c.second].clone(),
                format!("{} (the first is at line {line})", c.describe(&workloads)),
            ));
        }
        if let Some(idle) = cpus
            .iter()
            .find(|&&c| !workloads.iter().any(|w| w.runs_at(c)))
        {
            return Err(self.err(
                cpus_key.span(),
                format!("no workload runs at {idle} CPUs: drop it from cpus or add it to a workload's cpus"),
            ));
        }
        Ok(workloads)
    }

    /// Where `value` of `key` is written in the `[[workload]]` at `span`
    /// (up to the next workload, so in its `[[workload.metric]]` tables
    /// too, which the span does not cover): the first occurrence on a line
    /// of that key, else the first anywhere, else the table itself.
    fn value_in(
        &self,
        span: &std::ops::Range<usize>,
        key: &str,
        value: &str,
    ) -> std::ops::Range<usize> {
        let rest = self.text.get(span.start..).unwrap_or_default();
        let end = rest
            .get(1..)
            .and_then(|after| after.find("[[workload]]"))
            .map_or(rest.len(), |at| at + 1);
        let region = &rest[..end];
        let on_its_line = |at: &usize| {
            let line_start = region[..*at].rfind('\n').map_or(0, |i| i + 1);
            region[line_start..].trim_start().starts_with(key)
        };
        let found: Vec<usize> = region.match_indices(value).map(|(at, _)| at).collect();
        found
            .iter()
            .find(|at| on_its_line(at))
            .or(found.first())
            .map_or(span.clone(), |at| {
                span.start + at..span.start + at + value.len()
            })
    }

    /// The host programs and files a `command` workload carries into the
    /// guest, checked to exist (before anything is built), its files made
    /// absolute: a suite's paths are relative to it. The programs of
    /// built-in workloads are `setup`'s to install.
    fn host_files(
        &self,
        spec: &mut WorkloadSpec,
        span: &std::ops::Range<usize>,
    ) -> Result<(), InputError> {
        let WorkloadKind::Command(command) = &spec.kind else {
            return Ok(());
        };
        for p in &command.programs {
            let path = Path::new(p);
            let executable = std::fs::metadata(path).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            });
            if !executable {
                return Err(self.err(
                    self.value_in(span, "programs", p),
                    format!(
                        "command: program {p} {} on this host",
                        if path.exists() {
                            "is not an executable file"
                        } else {
                            "does not exist"
                        }
                    ),
                ));
            }
        }
        for f in &command.files {
            let resolved = self.beside_suite(&f.from);
            let resolved = std::path::absolute(&resolved).unwrap_or(resolved);
            if !resolved.is_file() {
                return Err(self.err(
                    self.value_in(span, "files", &f.from),
                    format!(
                        "command: files: {} is not a file (paths are relative to the suite file)",
                        resolved.display()
                    ),
                ));
            }
        }
        spec.resolve_files(|from| {
            let resolved = self.beside_suite(from);
            std::path::absolute(&resolved)
                .unwrap_or(resolved)
                .display()
                .to_string()
        });
        Ok(())
    }

    /// The objects to size, each a path inside the build directory, once.
    fn objects(&self, files: Vec<Spanned<String>>) -> Result<Vec<String>, InputError> {
        let mut objects: Vec<String> = Vec::new();
        for o in files {
            check_object(o.get_ref()).map_err(|m| self.err(o.span(), m))?;
            if objects.contains(o.get_ref()) {
                return Err(self.err(
                    o.span(),
                    format!("objects: {:?} is listed twice", o.get_ref()),
                ));
            }
            objects.push(o.into_inner());
        }
        Ok(objects)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::guest::workloads::hackbench::HackbenchMode;
    use crate::guest::workloads::kernel_compile::CompileDriver;
    use crate::guest::workloads::WorkloadKind;

    /// The lookup of a suite in this repository, run from its root.
    pub(crate) fn lookup() -> FragmentLookup {
        FragmentLookup::BesideSuite {
            cwd: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        }
    }

    /// A small valid suite; other modules' tests derive theirs from it.
    pub(crate) const GOOD: &str = r#"
name = "t"
boots = 2
iterations = 3
warmup = 1
cpus = [2]
[[variant]]
name = "off"
kernel = "markers-off"
[[variant]]
name = "on"
kernel = "markers-on"
[[workload]]
kind = "hackbench"
params = [2, 4]
loops = 10
"#;

    pub(crate) fn parse(text: &str) -> Result<Suite, InputError> {
        Suite::parse(Path::new("s.toml"), text, &lookup())
    }

    #[test]
    fn a_suite_names_its_architecture_and_x86_64_is_the_default() {
        assert_eq!(parse(GOOD).unwrap().arch, Arch::X86_64);
        let arm64 = parse(&format!("arch = \"arm64\"\n{GOOD}")).unwrap();
        assert_eq!(arm64.arch, Arch::Arm64);
        let e = parse(&format!("arch = \"riscv\"\n{GOOD}")).unwrap_err();
        assert!(e.to_string().starts_with("s.toml:1:"), "{e}");
        assert!(e.to_string().contains("arm64"), "{e}");
    }

    #[test]
    fn what_an_arm64_guest_cannot_run_is_refused_at_its_line() {
        let model = format!("arch = \"arm64\"\nmodel = \"cycles\"\n{GOOD}");
        let e = parse(&model).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:2:"), "{e}");
        assert!(e.contains("decodes x86 instructions only"), "{e}");
        // The same model on x86-64 is a suite.
        assert!(parse(&format!("model = \"cycles\"\n{GOOD}")).is_ok());
        let micro =
            format!("arch = \"arm64\"\n{GOOD}[[workload]]\nkind = \"micro\"\nparams = [1000]\n");
        let e = parse(&micro).unwrap_err().to_string();
        assert!(e.contains("rdtsc_ordered"), "{e}");
        let line = micro.lines().position(|l| l == "kind = \"micro\"").unwrap();
        assert!(e.starts_with(&format!("s.toml:{line}:")), "{e}");
        let stress = GOOD.replace(
            "kind = \"hackbench\"\nparams = [2, 4]\nloops = 10",
            "kind = \"stress-ng\"\nstressor = \"futex\"\nparams = [100]",
        );
        let e = parse(&format!("arch = \"arm64\"\n{stress}")).unwrap_err();
        assert!(
            e.to_string().contains("copied from this x86-64 host"),
            "{e}"
        );
    }

    #[test]
    fn the_shipped_arm64_suite_reads_as_quick_does_on_arm64() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let quick = Suite::load(&root.join("suites/quick.toml"), &lookup()).unwrap();
        let arm64 = Suite::load(&root.join("suites/quick-arm64.toml"), &lookup()).unwrap();
        assert_eq!(arm64.arch, Arch::Arm64);
        assert_eq!(quick.arch, Arch::X86_64);
        assert_eq!(arm64.cpus, quick.cpus);
        let kernels = |s: &Suite| {
            s.variants
                .iter()
                .map(|v| v.kernel.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(kernels(&arm64), kernels(&quick));
        let kinds = |s: &Suite| {
            s.workloads
                .iter()
                .map(|w| w.kind.name())
                .collect::<Vec<_>>()
        };
        assert_eq!(kinds(&arm64), kinds(&quick));
        assert!(arm64.precision.is_some_and(|p| p.budget_s.is_some()));
        for v in &arm64.variants {
            let fragments = arm64.fragments.kernel_for(&v.kernel, arm64.arch).unwrap();
            assert_eq!(fragments[0].file_name, "base-arm64.config");
        }
    }

    #[test]
    fn parses_a_good_suite_with_defaults() {
        let s = parse(GOOD).unwrap();
        assert_eq!(s.boots, 2);
        assert_eq!(s.variants[0].kernel, "markers-off");
        assert_eq!(s.accel, AccelChoice::Auto);
        match &s.workloads[0].kind {
            WorkloadKind::Hackbench(h) => {
                assert_eq!(s.workloads[0].params, vec![2, 4]);
                assert_eq!(h.fds, 20);
                assert_eq!(h.mode, HackbenchMode::Process);
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn unknown_key_names_file_line_and_column() {
        let text = GOOD.replace("warmup = 1", "warmpu = 1");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:5:1:"), "{e}");
        assert!(e.contains("warmpu"), "{e}");
    }

    #[test]
    fn a_precision_target_its_budget_and_its_cap_are_read() {
        let text = GOOD.replace(
            "warmup = 1",
            "warmup = 1\nprecision = 0.5\nbudget = \"4m 30s\"\nmax_boots = 40",
        );
        let p = parse(&text).unwrap().precision.unwrap();
        assert_eq!(
            (p.percent, p.budget_s, p.max_boots),
            (0.5, Some(270), Some(40))
        );
        assert_eq!(p.boot_cap(8), 40);
        let without_cap = parse(&GOOD.replace("warmup = 1", "warmup = 1\nprecision = 1"))
            .unwrap()
            .precision
            .unwrap();
        assert_eq!(
            without_cap.boot_cap(8),
            8 * Precision::DEFAULT_MAX_BOOTS_FACTOR as usize
        );
        assert!(parse(GOOD).unwrap().precision.is_none());
    }

    #[test]
    fn the_cycle_model_is_named_or_set_in_a_table_and_checked() {
        assert_eq!(parse(GOOD).unwrap().model, None);
        let named = parse(&GOOD.replace("warmup = 1", "warmup = 1\nmodel = \"cycles\"")).unwrap();
        assert_eq!(
            named.model,
            Some(crate::base::cycle_model::CycleModel::default())
        );
        let table =
            format!("{GOOD}[model]\nkind = \"cycles\"\nllc-bytes = 8388608\nmemory-cycles = 250\n");
        let model = parse(&table).unwrap().model.unwrap();
        assert_eq!(model.get("llc-bytes"), 8 << 20);
        assert_eq!(model.get("memory-cycles"), 250);
        assert_eq!(model.get("l2-cycles"), 14);
        for (bad, why) in [
            ("model = \"cache\"", "the one model is \"cycles\""),
            (
                "[model]\nl9-bytes = 1",
                "unknown model setting \"l9-bytes\"",
            ),
            ("[model]\nl2-bytes = \"big\"", "must be a whole number"),
            ("[model]\nl2-bytes = 3000000", "power-of-two number of sets"),
        ] {
            let text = if bad.starts_with('[') {
                format!("{GOOD}{bad}\n")
            } else {
                GOOD.replace("warmup = 1", &format!("warmup = 1\n{bad}"))
            };
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.starts_with("s.toml:"), "{e}");
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn a_bad_precision_budget_or_cap_names_its_line() {
        for (setting, expected) in [
            ("precision = 0", "s.toml:6:13:"),
            ("precision = 75", "s.toml:6:13:"),
            ("precision = 0.5\nbudget = \"soon\"", "s.toml:7:10:"),
            ("precision = 0.5\nbudget = \"0s\"", "s.toml:7:10:"),
            ("precision = 0.5\nmax_boots = 0", "s.toml:7:13:"),
            ("budget = \"5m\"", "s.toml:6:10:"),
            ("max_boots = 20", "s.toml:6:13:"),
        ] {
            let text = GOOD.replace("warmup = 1", &format!("warmup = 1\n{setting}"));
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.starts_with(expected), "{setting}: {e}");
        }
        let e = parse(&GOOD.replace("warmup = 1", "warmup = 1\nbudget = \"5m\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("add precision = PCT"), "{e}");
    }

    #[test]
    fn a_reference_table_is_named_and_must_be_of_a_workload_the_suite_runs() {
        assert_eq!(parse(GOOD).unwrap().reference, None);
        let named = GOOD.replace("warmup = 1", "warmup = 1\nreference = \"aoki-2008\"");
        assert_eq!(
            parse(&named).unwrap().reference,
            Some(crate::record::ReferenceTable::Aoki2008)
        );
        let e = parse(&GOOD.replace("warmup = 1", "warmup = 1\nreference = \"aoki-2009\""))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.toml:6:") && e.contains("aoki-2008"), "{e}");
        let no_hackbench = named
            .replace("kind = \"hackbench\"", "kind = \"ping-flood\"")
            .replace("loops = 10\n", "");
        let e = parse(&no_hackbench).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:6:13:"), "{e}");
        assert!(e.contains("runs no hackbench workload"), "{e}");
    }

    #[test]
    fn unknown_workload_lists_valid_choices() {
        let text = GOOD.replace("\"hackbench\"", "\"hackbnch\"");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("s.toml:"), "{e}");
        assert!(e.contains("hackbnch") && e.contains("hackbench"), "{e}");
    }

    #[test]
    fn unknown_kernel_names_the_fragments_available() {
        let text = GOOD.replace("kernel = \"markers-on\"", "kernel = \"markers-maybe\"");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:12:10:"), "{e}");
        assert!(
            e.contains("markers-generic, markers-off, markers-off-generic, markers-on"),
            "{e}"
        );
    }

    #[test]
    fn impossible_values_are_rejected() {
        for (from, to, needle) in [
            ("boots = 2", "boots = 0", "boots must be at least 1"),
            ("cpus = [2]", "cpus = []", "cpus must list"),
            ("cpus = [2]", "cpus = [16]", "NR_CPUS"),
            ("params = [2, 4]", "params = [0]", "params must list"),
            ("params = [2, 4]", "params = [-3]", "invalid value"),
        ] {
            let e = parse(&GOOD.replace(from, to)).unwrap_err().to_string();
            assert!(e.contains(needle), "{to}: {e}");
            assert!(e.starts_with("s.toml:"), "{to}: {e}");
        }
    }

    #[test]
    fn objects_to_size_are_read_in_order() {
        let text = GOOD.replace(
            "cpus = [2]",
            "cpus = [2]\nobjects = [\"kernel/trace/ring_buffer.o\", \"init/main.o\"]",
        );
        let s = parse(&text).unwrap();
        assert_eq!(s.objects, ["kernel/trace/ring_buffer.o", "init/main.o"]);
        assert!(parse(GOOD).unwrap().objects.is_empty());
    }

    #[test]
    fn objects_that_are_not_relative_object_paths_name_their_entry() {
        for (entry, needle) in [
            ("\"/abs/x.o\"", "relative path"),
            ("\"kernel/a b.o\"", "relative path"),
            ("\"../x.o\"", "inside the build directory"),
            ("\"kernel//x.o\"", "inside the build directory"),
            ("\"kernel/trace/\"", "must end in .o"),
            ("\"kernel/sched/core.c\"", "must end in .o"),
            ("\"kernel/.o\"", "must end in .o"),
            ("\"init/main.o\", \"init/main.o\"", "listed twice"),
            ("[\"x.o\"]", "invalid type"),
        ] {
            let text = GOOD.replace("cpus = [2]", &format!("cpus = [2]\nobjects = [{entry}]"));
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(needle), "{entry}: {e}");
            // The entry's own position: line 7, inside the list.
            assert!(e.starts_with("s.toml:7:"), "{entry}: {e}");
            let col: usize = e.split(':').nth(2).unwrap().parse().unwrap();
            assert!(col > "objects = [".len(), "{entry}: {e}");
        }
    }

    #[test]
    fn a_suite_needs_two_or_more_variants_with_their_own_names() {
        let text = GOOD.replace("[[variant]]\nname = \"on\"\nkernel = \"markers-on\"\n", "");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("two or more"), "{e}");
        let three = GOOD.replace(
            "[[variant]]\nname = \"on\"\n",
            "[[variant]]\nname = \"generic\"\nkernel = \"markers-generic\"\n\n[[variant]]\nname = \"on\"\n",
        );
        let s = parse(&three).unwrap();
        let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["off", "generic", "on"]);
        let e = parse(&three.replace("name = \"generic\"", "name = \"on\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("two variants are named \"on\""), "{e}");
    }

    pub(crate) const COMPILE: &str = r#"
[[workload]]
kind = "kernel-compile"
params = [2]
"#;

    #[test]
    fn kernel_compile_defaults_to_a_subset() {
        let text = GOOD.replace("cpus = [2]", "cpus = [2]\nmemory_mib = 2048") + COMPILE;
        let s = parse(&text).unwrap();
        match &s.workloads[1].kind {
            WorkloadKind::KernelCompile(k) => {
                assert_eq!(k.scope, CompileScope::Subset);
                assert_eq!(k.make_targets(), vec!["kernel/locking/".to_string()]);
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn kernel_compile_settings_are_checked() {
        let with_memory = GOOD.replace("cpus = [2]", "cpus = [2]\nmemory_mib = 2048");
        for (extra, needle) in [
            ("scope = \"full\"\ntargets = [\"lib/\"]\n", "subset\" only"),
            ("targets = [\"../etc/\"]\n", "leaves the kernel tree"),
            ("targets = [\"/abs/\"]\n", "relative path"),
            ("targets = [\"a b\"]\n", "relative path"),
            ("targets = []\n", "at least one target"),
            ("scope = \"most\"\n", "unknown variant"),
            (
                "scope = \"full\"\ndriver = \"objects\"\n",
                "built through Kbuild",
            ),
            ("iterations = 0\n", "at least 1"),
        ] {
            let e = parse(&format!("{with_memory}{COMPILE}{extra}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{extra}: {e}");
        }
        let e = parse(&format!("{GOOD}{COMPILE}")).unwrap_err().to_string();
        assert!(e.contains("memory_mib of at least 2048"), "{e}");
        let full = parse(&format!("{with_memory}{COMPILE}scope = \"full\"\n")).unwrap();
        match &full.workloads[1].kind {
            WorkloadKind::KernelCompile(k) => {
                assert_eq!(k.make_targets(), vec!["vmlinux"]);
                assert_eq!(k.driver(), CompileDriver::Kbuild);
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn every_workload_can_set_its_own_runs_a_boot() {
        let text = format!(
            "{GOOD}iterations = 2\n[[workload]]\nkind = \"ping-flood\"\nparams = [2000]\n\
             iterations = 36\nwarmup = 2\n"
        );
        let s = parse(&text).unwrap();
        assert_eq!(s.workloads[0].iterations_in(s.iterations, s.warmup), (2, 1));
        assert_eq!(
            s.workloads[1].iterations_in(s.iterations, s.warmup),
            (36, 2)
        );
        let e = parse(&GOOD.replace("loops = 10", "loops = 10\niterations = 0"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("s.toml:13") && e.contains("hackbench: iterations must be at least 1"),
            "{e}"
        );
    }

    #[test]
    fn patches_of_a_suite_named_by_a_relative_path_are_absolute() {
        // Tests run in the crate's directory, as `--suite suites/…` would.
        let suite = Suite::load(Path::new("suites/micro-2006.toml"), &lookup()).unwrap();
        let patch = &suite.variants[0].patches[0];
        assert!(patch.is_absolute(), "{}", patch.display());
        assert!(patch.ends_with("vm-images/patches/markbench-micro.patch"));
        assert!(patch.is_file());
    }

    #[test]
    fn the_kernel_source_of_a_suite_is_relative_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string("suites/quick.toml").unwrap();
        let text = text.replacen(
            "[[variant]]",
            "[kernel]\nsource = \"../linux\"\n\n[[variant]]",
            1,
        );
        std::fs::create_dir(dir.path().join("suites")).unwrap();
        let path = dir.path().join("suites/mine.toml");
        std::fs::write(&path, text).unwrap();
        let suite = Suite::load(&path, &lookup()).unwrap();
        assert_eq!(
            suite.kernel_source.as_deref(),
            Some(dir.path().join("suites/../linux").as_path())
        );
    }

    #[test]
    fn the_built_in_default_suite_is_the_shipped_file() {
        let nowhere = Path::new("/nonexistent");
        let built_in = Suite::built_in(Path::new(DEFAULT_SUITE), nowhere)
            .unwrap()
            .unwrap();
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_SUITE);
        let file = Suite::load(&shipped, &lookup()).unwrap();
        assert_eq!(built_in.sha256, file.sha256);
        assert!(built_in.built_in && !file.built_in);
        assert_eq!(built_in.describe_path(), "built-in suites/quick.toml");
        // Its fragments come from markbench itself when no vm-images/ is near.
        assert!(built_in.fragments.dirs.is_empty());
        assert!(Suite::built_in(Path::new("suites/other.toml"), nowhere).is_none());
    }

    #[test]
    fn a_suites_fragment_directory_is_relative_to_it_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let kconfigs = dir.path().join("kconfigs");
        std::fs::create_dir_all(&kconfigs).unwrap();
        std::fs::write(kconfigs.join("mine.config"), "CONFIG_A=y\n").unwrap();
        let text = format!(
            "{}[kernel]\nfragments = \"kconfigs\"\n",
            GOOD.replace("kernel = \"markers-on\"", "kernel = \"mine\"")
        );
        let line = text.lines().count();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, &text).unwrap();
        let elsewhere = FragmentLookup::BesideSuite {
            cwd: PathBuf::from("/nonexistent"),
        };
        let suite = Suite::load(&path, &elsewhere).unwrap();
        let mine = suite.fragments.kernel("mine").unwrap();
        assert_eq!(
            mine[1].origin,
            crate::guest::images::fragments::Origin::File(kconfigs.join("mine.config"))
        );
        std::fs::write(&path, text.replace("\"kconfigs\"", "\"missing\"")).unwrap();
        let e = Suite::load(&path, &elsewhere).unwrap_err().to_string();
        assert!(
            e.contains(&format!("s.toml:{line}:13:")) && e.contains("not a directory"),
            "{e}"
        );
    }
}
