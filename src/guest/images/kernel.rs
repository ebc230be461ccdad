//! Guest kernels: `tinyconfig` + `base.config` + one variant fragment (found
//! as `images::fragments` says), built from the tree a variant's origin
//! names (`images::source`) in the configuration's workspace
//! (`images::workspace`: the next commit of a series rebuilds only what it
//! changed), cached under a key made of the origin's identity (source or
//! commit, and patches), the fragments and the compiler version.
//!
//! After `olddefconfig` every symbol the fragments set is checked against the
//! final `.config`: Kconfig silently drops options whose dependencies are
//! missing, and a "markers-on" kernel without tracepoints would make the
//! whole comparison a lie.

use super::fragments::Fragment;
use super::seal::{Seal, SealVerdict};
pub use super::source::KernelSource;
use super::source::{Delta, OriginRecord, ResolvedOrigin, TreeState};
use super::workspace::{MirrorStats, Workspace};
use super::{key_of, tool_version, Cache};
use crate::base::arch::Arch;
use crate::base::error::bail;
use crate::base::error::InputError;
use crate::base::error::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Kernel arguments every boot gets (a variant's `cmdline` follows them;
/// the suite checks it does not repeat them). `panic=-1` plus `-no-reboot` turns a
/// guest panic into a QEMU exit instead of a hang; `oops=panic` makes an
/// oops visible the same way.
pub const BASE_CMDLINE: &str = "console=ttyS0 panic=-1 oops=panic rdinit=/init";

/// What every boot's command line holds after the console.
const CMDLINE_AFTER_CONSOLE: &str = "panic=-1 oops=panic rdinit=/init";

/// [`BASE_CMDLINE`] for a guest of `arch`: the console is the arch's first
/// serial port (`ttyS0` on x86-64, `ttyAMA0` on arm64).
pub fn base_cmdline(arch: Arch) -> String {
    format!("console={} {CMDLINE_AFTER_CONSOLE}", arch.serial_ports().0)
}

/// What a kernel is built from.
#[derive(Debug, Clone)]
pub struct KernelSpec {
    /// The variant fragment's name, e.g. `markers-on`.
    pub name: String,
    /// The configuration the fragments go on top of.
    pub base: KernelBase,
    /// Base fragment first, then the variant's; later lines win.
    pub fragments: Vec<Fragment>,
    /// What it is built for (cross-built with `ARCH=` and `CROSS_COMPILE=`
    /// when not the host's).
    pub arch: Arch,
}

/// The configuration a kernel starts from, before `base.config` (what the
/// guest needs) and the variant's fragment are merged on top: `make
/// tinyconfig` (the smallest kernel, markbench's default), `make defconfig`
/// (the architecture's default, what most developers build), or a full
/// `.config` of the user's (a distro's `/boot/config-*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum KernelBase {
    #[default]
    Tinyconfig,
    Defconfig,
    /// A `.config` file, read when the suite was: the kernel is keyed by
    /// its text, so an edited file is another kernel.
    File {
        path: PathBuf,
        text: String,
    },
}

/// A base is written as what it says (`meta.toml`'s and the dry run's words).
impl Serialize for KernelBase {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.describe())
    }
}

impl KernelBase {
    /// `tinyconfig`, `defconfig` or a path to a `.config`, as a suite's
    /// `[kernel] base` says it (a path already resolved against the suite's
    /// directory).
    pub fn from_setting(setting: &str, resolved: &Path) -> Result<KernelBase, String> {
        match setting {
            "tinyconfig" => Ok(KernelBase::Tinyconfig),
            "defconfig" => Ok(KernelBase::Defconfig),
            _ => {
                // Through the bounded reader: a FIFO or `/dev/zero` named
                // by mistake is refused by name, not read forever.
                let text = crate::base::input_file::read_text(
                    resolved,
                    crate::base::input_file::Bound::Record,
                )
                .map_err(|e| {
                    format!(
                        "base: {e:#}; base is \"tinyconfig\", \"defconfig\" or the path of a \
                         full .config (relative to the suite file)"
                    )
                })?;
                if !text.lines().any(|l| l.starts_with("CONFIG_")) {
                    return Err(format!(
                        "base: {} holds no CONFIG_ line: it is not a kernel .config",
                        resolved.display()
                    ));
                }
                Ok(KernelBase::File {
                    path: resolved.to_path_buf(),
                    text,
                })
            }
        }
    }

    /// What `meta.toml`, the dry run and the report say: `tinyconfig`,
    /// `defconfig`, or the file's path and the start of its sha256.
    pub fn describe(&self) -> String {
        match self {
            KernelBase::Tinyconfig => "tinyconfig".into(),
            KernelBase::Defconfig => "defconfig".into(),
            KernelBase::File { path, text } => format!(
                "{} (sha256 {})",
                path.display(),
                key_of(&[("file", text.as_bytes())]).short()
            ),
        }
    }
}

/// A built, verified kernel in the cache.
#[derive(Default, Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelImage {
    pub name: String,
    pub key: crate::base::sha256::Digest,
    pub dir: PathBuf,
    pub bzimage: PathBuf,
    pub config: PathBuf,
    pub build_log: PathBuf,
    pub source_identity: String,
    pub compiler: String,
    /// SHA-256 of each fragment, by file name.
    pub fragment_sha256: BTreeMap<String, crate::base::sha256::Digest>,
    pub config_sha256: crate::base::sha256::Digest,
    pub build_seconds: f64,
    /// The configuration it started from ([`KernelBase::describe`]; empty
    /// for kernels cached before there was a choice, all on tinyconfig).
    #[serde(default)]
    pub base: String,
    /// How many source files differed from the last build in the
    /// configuration's workspace (none for kernels cached before
    /// workspaces): what this build had to recompile.
    #[serde(default)]
    pub source_files_rebuilt: Option<usize>,
    /// Source, revision, commit and patches (default for kernels cached
    /// before they were recorded).
    #[serde(default)]
    pub origin: OriginRecord,
    /// Objects `make bzImage` compiled or assembled (its `CC` and `AS`
    /// lines), and whether the build started from an empty build
    /// directory: a later first build of a configuration takes the count
    /// as what to expect (none for kernels cached before it was counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects_compiled: Option<u64>,
    #[serde(default)]
    pub first_build: bool,
    /// The size and SHA-256 of the files a boot reads (`bzImage`,
    /// `config`), by name in the entry, as built; empty for kernels cached
    /// before they were kept, which are sealed on first use.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub seals: BTreeMap<String, Seal>,
    /// What it was built for (absent in x86-64 kernels' records, every
    /// kernel cached before there was a choice).
    #[serde(default, skip_serializing_if = "Arch::is_default")]
    pub arch: Arch,
}

/// The files of a kernel entry that are sealed: what a boot and the report
/// read (an x86-64 entry's; [`sealed_files`] names any arch's).
pub const SEALED_FILES: [&str; 2] = ["bzImage", "config"];

/// The files of a kernel entry of `arch` that are sealed: its image, under
/// the name the kernel's build gives it (`bzImage`, `Image`), and its
/// `.config`.
pub fn sealed_files(arch: Arch) -> [&'static str; 2] {
    [arch.kernel_image().0, "config"]
}

impl KernelImage {
    /// The first 16 characters of the build key, or all of a shorter key (a
    /// record read from disk may hold one): a listing never panics on it.
    pub fn short_key(&self) -> &str {
        self.key.short()
    }

    /// The kernel's `O=` build directory, kept in the cache beside it
    /// (vmlinux and every object file): sizes are read from there.
    pub fn build_dir(&self) -> PathBuf {
        self.dir.join("build")
    }
}

const RECORD: &str = "kernel.toml";

/// What a fragment asks of one symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    pub symbol: String,
    /// `None` means "is not set".
    pub value: Option<String>,
    /// The fragment's path, or what names a built-in one.
    pub fragment: String,
    pub line: usize,
}

/// Reads the `CONFIG_X=v` and `# CONFIG_X is not set` lines of a fragment;
/// `label` names it in messages (its path).
pub fn parse_fragment(label: &str, text: &str) -> Result<Vec<Expectation>, InputError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let at = |value: Option<String>, symbol: &str| Expectation {
            symbol: symbol.to_string(),
            value,
            fragment: label.to_string(),
            line: i + 1,
        };
        if let Some(rest) = line.strip_prefix("# CONFIG_") {
            if let Some(sym) = rest.strip_suffix(" is not set") {
                out.push(at(None, &format!("CONFIG_{sym}")));
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once('=') {
            Some((sym, value)) if sym.starts_with("CONFIG_") && !value.is_empty() => {
                out.push(at(Some(value.to_string()), sym))
            }
            _ => {
                return Err(InputError::at_line_col(
                    Path::new(label),
                    (i + 1, 1),
                    format_args!(
                        "not a Kconfig line: {raw:?} (expected CONFIG_X=value or \
                         `# CONFIG_X is not set`)"
                    ),
                ))
            }
        }
    }
    Ok(out)
}

/// Symbol values of a final `.config` (`n` symbols are absent).
pub fn parse_config(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| l.starts_with("CONFIG_"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Every expectation the final config does not meet, as readable messages.
/// Later fragments override earlier ones for the same symbol.
pub fn verify(expectations: &[Expectation], config: &BTreeMap<String, String>) -> Vec<String> {
    let mut last: BTreeMap<&str, &Expectation> = BTreeMap::new();
    for e in expectations {
        last.insert(&e.symbol, e);
    }
    let mut problems = Vec::new();
    for e in last.values() {
        let actual = config.get(&e.symbol).filter(|v| v.as_str() != "n");
        let ok = match (&e.value, actual) {
            (None, None) => true,
            (Some(want), _) if want == "n" => actual.is_none(),
            (Some(want), Some(have)) => want == have,
            _ => false,
        };
        if !ok {
            problems.push(format!(
                "{} (asked {} by {}:{}) is {} in the final .config: Kconfig dropped or changed it, \
                 most likely because a dependency is missing",
                e.symbol,
                e.value.as_deref().unwrap_or("not set"),
                e.fragment,
                e.line,
                actual.map_or("not set".to_string(), |v| format!("={v}")),
            ));
        }
    }
    problems
}

fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(key_of(&[("file", &bytes)]).into())
}

/// Runs a command, appending its output to the build log; fails with the
/// log's tail when it fails.
pub(crate) fn logged(log_path: &Path, command: &mut Command) -> Result<()> {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)?;
    writeln!(log, "$ {command:?}")?;
    let status = command
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log.try_clone()?))
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("starting {command:?}"))?;
    if !status.success() {
        return Err(Exited::from_log(command, status, log_path).into());
    }
    Ok(())
}

/// Makes a kernel build depend on its inputs alone (the kernel's
/// Documentation/kbuild/reproducible-builds.rst): the build's time, user,
/// host and number are fixed, and `LOCALVERSION` is set (empty), so
/// `setlocalversion` never appends `+` for a git tree with changes.
///
/// No prefix map is added: the guest kernels carry no debug info, and the
/// kernel's Makefile already maps the source tree out of `__FILE__`
/// (`-fmacro-prefix-map=$(srctree)/=`), so neither the source's nor the
/// `O=` directory's path reaches an object file (tests/kernel_series.rs
/// builds one kernel under two caches and compares the bytes). A
/// `-fdebug-prefix-map` naming the directories would only enter ccache's
/// hash and make every build directory miss.
pub(crate) fn reproducible(make: &mut Command) {
    make.env("KBUILD_BUILD_TIMESTAMP", "2020-01-01 00:00:00 UTC")
        .env("KBUILD_BUILD_USER", "markbench")
        .env("KBUILD_BUILD_HOST", "markbench")
        .env("KBUILD_BUILD_VERSION", "1")
        .arg("LOCALVERSION=");
}

/// Makes a kernel build one for `arch`: `ARCH=` and `CROSS_COMPILE=` for
/// an architecture not the host's; nothing for x86-64, whose command line
/// stays as it always was.
pub(crate) fn cross_build(make: &mut Command, arch: Arch) {
    if let Some(prefix) = arch.cross_compile() {
        make.arg(format!("ARCH={}", arch.kernel_arch()))
            .arg(format!("CROSS_COMPILE={prefix}"));
    }
}

/// Environment variable naming ccache's directory instead of the cache's
/// `ccache/`: two caches can then share compiled objects (the
/// reproducibility test builds in a fresh cache at the cost of a rebuild
/// from ccache, not a full build).
pub const CCACHE_ENV: &str = "MARKBENCH_CCACHE_DIR";

/// ccache's directory when ccache is installed: a fresh workspace (another
/// cache, or a configuration whose preprocessed sources mostly match one
/// built before) then compiles only what ccache has not seen. Without debug
/// info ccache does not hash the working directory, and with the build
/// directory inside the workspace's tree every path on the compiler's
/// command line is relative, so workspaces at different paths share it.
fn ccache() -> Option<PathBuf> {
    let installed = Command::new("ccache")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    installed.then(|| {
        std::env::var_os(CCACHE_ENV)
            .filter(|d| !d.is_empty())
            .map_or_else(|| Cache::here().ccache(), PathBuf::from)
    })
}

/// The build key of a kernel, without building it: the fragments count by
/// their text alone, so a fragment found elsewhere (or built in) with the
/// same text is the same kernel.
///
/// `compiler` is the version of the arch's compiler ([`compiler_version`]).
/// A kernel of another architecture than x86-64 is keyed by its
/// architecture too; an x86-64 kernel keeps the key it always had.
pub fn kernel_key(spec: &KernelSpec, identity: &str, compiler: &str) -> String {
    let mut parts: Vec<(&str, &[u8])> = vec![
        (
            "recipe",
            b"tinyconfig+fragments+olddefconfig+bzImage v2 reproducible",
        ),
        ("source", identity.as_bytes()),
        ("compiler", compiler.as_bytes()),
    ];
    // Kernels on tinyconfig, the only base there was, keep their keys.
    let base;
    match &spec.base {
        KernelBase::Tinyconfig => {}
        KernelBase::Defconfig => parts.push(("base", b"defconfig")),
        KernelBase::File { text, .. } => {
            base = format!("file {text}");
            parts.push(("base", base.as_bytes()));
        }
    }
    for f in &spec.fragments {
        parts.push(("fragment", f.text.as_bytes()));
    }
    if !spec.arch.is_default() {
        parts.push(("arch", spec.arch.as_str().as_bytes()));
    }
    key_of(&parts).into()
}

/// The first line of `--version` of the compiler that builds `arch`'s
/// kernels (the host's `gcc`, or the cross compiler).
pub fn compiler_version(arch: Arch) -> String {
    tool_version(arch.compiler())
}

/// The key of a configuration's workspace: the kernel's key without its
/// source, so every tree built with these fragments shares one.
fn workspace_key(spec: &KernelSpec, compiler: &str) -> String {
    kernel_key(spec, "any source", compiler)
}

/// Returns the cached kernel for `spec` built from `origin`, building it
/// first if needed.
pub fn ensure_kernel(origin: &ResolvedOrigin, spec: &KernelSpec) -> Result<KernelImage> {
    let identity = origin.identity.as_str();
    let compiler = compiler_version(spec.arch);
    let key = kernel_key(spec, identity, &compiler);
    let dir = Cache::here().kernel(&spec.name, &key);
    if let Some(image) = cached(&dir) {
        return Ok(image);
    }
    let mut expectations = Vec::new();
    for f in &spec.fragments {
        expectations.extend(parse_fragment(&f.label(), &f.text)?);
    }
    let started = std::time::Instant::now();
    let want = origin.tree_state()?;
    let workspace = Workspace::lock(super::workspace::choose_slot(
        &Cache::here().workspace(&spec.name, &workspace_key(spec, &compiler)),
        &want,
    ))?;
    // Another process may have built it while this one waited (a damage
    // found above was named there already).
    if let (Some(image), SealVerdict::Sound | SealVerdict::SealedNow) = check_entry(&dir) {
        return Ok(image);
    }
    let partial = dir.with_extension(format!("partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)?;
    workspace.begin()?;
    let mirroring = std::time::Instant::now();
    let (mirrored, whole) = bring_tree(&workspace, origin, &want)?;
    let first_build = whole && mirrored.unchanged == 0;
    note_mirroring(
        &workspace,
        &mirrored,
        whole,
        first_build,
        mirroring.elapsed(),
    );
    let expected = first_build.then(|| expected_objects(spec)).flatten();
    let source = origin.source.path().to_path_buf();
    let objects = match build_in(
        &workspace,
        &origin.describe(),
        &partial,
        spec,
        &expectations,
        expected,
    ) {
        Ok(objects) => objects,
        Err(e) => {
            if e.machinery().is_some_and(|m| m.is::<BuildFailed>()) {
                workspace.finish(&format!("a failed build of {identity}"))?;
            }
            return Err(e);
        }
    };
    workspace.finish(identity)?;
    keep_build(&workspace, &partial, &source, spec.arch)
        .with_context(|| format!("keeping kernel {}", spec.name))?;
    let fragment_sha256 = spec
        .fragments
        .iter()
        .map(|f| (f.file_name.clone(), f.sha256().into()))
        .collect();
    let image = KernelImage {
        name: spec.name.clone(),
        key: key.clone().into(),
        bzimage: dir.join(spec.arch.kernel_image().0),
        config: dir.join("config"),
        build_log: dir.join("build.log"),
        dir: dir.clone(),
        source_identity: identity.to_string(),
        compiler,
        fragment_sha256,
        config_sha256: sha256_file(&partial.join("config"))?.into(),
        build_seconds: started.elapsed().as_secs_f64(),
        base: spec.base.describe(),
        source_files_rebuilt: Some(mirrored.written),
        origin: origin.record(),
        objects_compiled: Some(objects),
        first_build,
        seals: sealed_files(spec.arch)
            .iter()
            .map(|f| Ok((f.to_string(), super::seal::seal_of(&partial.join(f))?)))
            .collect::<Result<_>>()?,
        arch: spec.arch,
    };
    std::fs::write(partial.join(RECORD), toml::to_string(&image)?)?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&partial, &dir)
        .with_context(|| format!("moving {} to {}", partial.display(), dir.display()))?;
    crate::base::message::note(format_args!(
        "built kernel {} in {:.0} s ({objects} objects compiled)",
        spec.name, image.build_seconds
    ));
    Ok(image)
}

/// Says how the workspace's mirror came to hold the tree: by the paths
/// that differ, as a first build, or by comparing every file.
fn note_mirroring(
    workspace: &Workspace,
    mirrored: &MirrorStats,
    whole: bool,
    first_build: bool,
    took: std::time::Duration,
) {
    if !whole {
        crate::base::message::note(format_args!(
            "{} file(s) written and {} removed in {} ({} of the paths already held it) in {:.1} s",
            mirrored.written,
            mirrored.removed,
            workspace.tree().display(),
            mirrored.unchanged,
            took.as_secs_f64()
        ));
    } else if first_build {
        crate::base::message::note(format_args!(
            "the first build of this configuration: {} source files copied to {} in {:.0} s",
            mirrored.written,
            workspace.tree().display(),
            took.as_secs_f64()
        ));
    } else {
        crate::base::message::note(format_args!(
            "{} of {} source files differ from the last build in {} (mirrored in {:.0} s)",
            mirrored.written,
            mirrored.written + mirrored.unchanged,
            workspace.tree().display(),
            took.as_secs_f64()
        ));
    }
}

/// Keeps the workspace's build beside the kernel in `partial`: the whole
/// build directory (for `size`, `nm` and the profile's symbols), the
/// bootable image (checked by its header) and the `.config`.
fn keep_build(workspace: &Workspace, partial: &Path, source: &Path, arch: Arch) -> Result<()> {
    let copy = Command::new("cp")
        .arg("-a")
        .arg(workspace.build_dir())
        .arg(partial.join("build"))
        .status()
        .context("starting cp")?;
    if !copy.success() {
        bail!(
            "copying {} beside the kernel failed ({copy})",
            workspace.build_dir().display()
        );
    }
    // Kbuild's `source` link says `..`; beside the kernel it names the
    // source the tree came from.
    let link = partial.join("build").join("source");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(source, &link)?;
    let build = partial.join("build");
    let (image, built_at) = arch.kernel_image();
    std::fs::copy(build.join(built_at), partial.join(image))
        .with_context(|| format!("copying {}", build.join(built_at).display()))?;
    if let Some(why) = super::seal::kernel_image_header_damage(&partial.join(image), arch) {
        bail!("the kernel built, but its {image} is not one: {why}");
    }
    std::fs::copy(build.join(".config"), partial.join("config"))?;
    Ok(())
}

/// Brings the workspace's mirror to the tree `origin` builds: by the paths
/// that differ from the tree it holds when it knows that tree and git or
/// the patches can name them, else by comparing every file. Says which and
/// why; returns what it wrote and whether the whole tree was compared.
fn bring_tree(
    workspace: &Workspace,
    origin: &ResolvedOrigin,
    want: &TreeState,
) -> Result<(MirrorStats, bool)> {
    let delta = match workspace.state() {
        None if workspace.tree().is_dir() => {
            Delta::Whole("the workspace holds no record of its tree".to_string())
        }
        None => Delta::Whole(String::new()),
        Some(held) => match origin.delta_from(&held)? {
            Delta::Paths { paths, why } => match workspace.changed_since_recorded()? {
                Some(changed) => Delta::Whole(format!(
                    "{} changed since the workspace recorded its tree",
                    changed.display()
                )),
                None => Delta::Paths { paths, why },
            },
            whole => whole,
        },
    };
    workspace.forget_state()?;
    let stats = match delta {
        Delta::Paths { paths, why } => {
            crate::base::message::note(format_args!("{}: {why} …", origin.describe()));
            let incoming = workspace.incoming()?;
            origin.write_paths(&paths, &incoming)?;
            let stats = workspace.write_paths(&paths, &incoming)?;
            std::fs::remove_dir_all(&incoming)
                .with_context(|| format!("removing {}", incoming.display()))?;
            workspace.record_state(want)?;
            return Ok((stats, false));
        }
        Delta::Whole(why) => {
            if !why.is_empty() {
                crate::base::message::note(format_args!("{why}: comparing the whole tree"));
            }
            match origin.existing_tree()? {
                Some(tree) => workspace.mirror(&tree)?,
                None => {
                    let incoming = workspace.incoming()?;
                    origin.write_tree(&incoming)?;
                    let mirrored = workspace.mirror(&incoming)?;
                    std::fs::remove_dir_all(&incoming)
                        .with_context(|| format!("removing {}", incoming.display()))?;
                    mirrored
                }
            }
        }
    };
    workspace.record_state(want)?;
    Ok((stats, true))
}

/// How many objects the first build of `spec`'s configuration is
/// expected to compile: the count of the last first build of a kernel of
/// that name, else of the largest first build on the same base, else the
/// figure measured for markbench's own tinyconfig-based kernels.
fn expected_objects(spec: &KernelSpec) -> Option<u64> {
    let base = spec.base.describe();
    let firsts: Vec<KernelImage> = cached_kernels()
        .into_iter()
        .filter(|k| k.first_build && k.objects_compiled.is_some() && k.arch == spec.arch)
        .collect();
    let by_name = firsts
        .iter()
        .filter(|k| k.name == spec.name)
        .filter_map(|k| k.objects_compiled)
        .max();
    let by_base = || {
        firsts
            .iter()
            .filter(|k| k.base == base)
            .filter_map(|k| k.objects_compiled)
            .max()
    };
    by_name.or_else(by_base).or(
        (spec.base == KernelBase::Tinyconfig && spec.arch == Arch::X86_64)
            .then_some(TINYCONFIG_OBJECTS),
    )
}

/// Objects a first build of the quick suite's markers-off kernel compiled
/// (tinyconfig and `base.config`, Debian's linux-source-6.1; counted in its
/// `build.log` on 2026-12-04): a first estimate for a tinyconfig-based
/// configuration never built here.
const TINYCONFIG_OBJECTS: u64 = 1185;

/// Whether a line of Kbuild's output says it compiled or assembled an
/// object (`  CC      kernel/fork.o`, `  AS      arch/x86/…/head_64.o`).
pub fn is_object_line(line: &str) -> bool {
    let mut words = line.split_whitespace();
    matches!(words.next(), Some("CC" | "AS"))
        && line.starts_with(' ')
        && words.last().is_some_and(|w| w.ends_with(".o"))
}

/// Runs `command` with its output appended to `log_path`, as [`logged`]
/// does, counting the objects Kbuild says it compiled into `step` as the
/// log grows; returns the count.
pub(crate) fn logged_counting(
    log_path: &Path,
    command: &mut Command,
    step: &mut crate::base::progress::Step,
) -> Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)?;
    writeln!(log, "$ {command:?}")?;
    let from = log.stream_position()?;
    let mut child = command
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log.try_clone()?))
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let mut reader = std::fs::File::open(log_path)?;
    reader.seek(SeekFrom::Start(from))?;
    let mut pending = Vec::new();
    let mut objects = 0u64;
    let count_new = |reader: &mut std::fs::File, pending: &mut Vec<u8>| -> Result<u64> {
        let mut chunk = Vec::new();
        reader.read_to_end(&mut chunk)?;
        pending.extend_from_slice(&chunk);
        // Only whole lines: the last may still be being written.
        let Some(end) = pending.iter().rposition(|&b| b == b'\n') else {
            return Ok(0);
        };
        let whole: Vec<u8> = pending.drain(..=end).collect();
        Ok(String::from_utf8_lossy(&whole)
            .lines()
            .filter(|l| is_object_line(l))
            .count() as u64)
    };
    let status = loop {
        let exited = child.try_wait()?;
        objects += count_new(&mut reader, &mut pending)?;
        step.set(objects);
        if let Some(status) = exited {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    step.finish();
    if !status.success() {
        return Err(Exited::from_log(command, status, log_path).into());
    }
    Ok(objects)
}

/// Configures and builds one kernel in `workspace` (its tree mirrors
/// what `source` describes), the log in `partial/build.log`. The configuration is made in a
/// directory of its own and copied to the build's only when it differs, so
/// an unchanged `.config` keeps its time stamp and Kbuild reconfigures
/// nothing; it is checked against the fragments before the long part of the
/// build.
fn build_in(
    workspace: &Workspace,
    source: &str,
    partial: &Path,
    spec: &KernelSpec,
    expectations: &[Expectation],
    expected_objects: Option<u64>,
) -> Result<u64> {
    let log = partial.join("build.log");
    crate::base::message::note(format_args!(
        "building kernel {} from {}; log: {} (moved beside the kernel when done)",
        spec.name,
        source,
        log.display()
    ));
    let compiler_launcher = ccache();
    let tree = workspace.tree();
    let make = |out: &Path, target: &str| {
        let mut c = Command::new("make");
        c.arg("-C").arg(&tree).arg(format!("O={}", out.display()));
        cross_build(&mut c, spec.arch);
        reproducible(&mut c);
        if let Some(ccache_dir) = &compiler_launcher {
            c.arg(format!("CC=ccache {}", spec.arch.compiler()))
                .env("CCACHE_DIR", ccache_dir);
        }
        c.arg(target);
        c
    };
    let config_dir = workspace.config_dir();
    std::fs::create_dir_all(&config_dir)?;
    let config_path = config_dir.join(".config");
    let base = match &spec.base {
        KernelBase::Tinyconfig | KernelBase::Defconfig => {
            let target = if spec.base == KernelBase::Tinyconfig {
                "tinyconfig"
            } else {
                "defconfig"
            };
            logged(&log, &mut make(&config_dir, target))?;
            std::fs::read_to_string(&config_path)
                .with_context(|| format!("reading {}", config_path.display()))?
        }
        KernelBase::File { text, .. } => text.clone(),
    };
    std::fs::write(&config_path, merged_config(&base, &spec.fragments))
        .with_context(|| format!("writing {}", config_path.display()))?;
    logged(&log, &mut make(&config_dir, "olddefconfig"))?;
    let config = std::fs::read(&config_path)?;
    let problems = verify(
        expectations,
        &parse_config(&String::from_utf8_lossy(&config)),
    );
    if !problems.is_empty() {
        bail!(
            "kernel {}: the final .config ({}) does not match its fragments:\n  {}",
            spec.name,
            config_path.display(),
            problems.join("\n  ")
        );
    }
    let build = workspace.build_dir();
    std::fs::create_dir_all(&build)?;
    if std::fs::read(build.join(".config")).ok().as_ref() != Some(&config) {
        std::fs::write(build.join(".config"), &config)?;
    }
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut bz = make(&build, spec.arch.kernel_image().0);
    bz.arg(format!("-j{jobs}"));
    let mut step = crate::base::progress::Step::start(
        format!("building kernel {}", spec.name),
        "objects",
        expected_objects,
    );
    let exited = logged_counting(&log, &mut bz, &mut step);
    match exited {
        Err(e)
            if e.machinery()
                .and_then(|m| m.downcast_ref::<Exited>())
                .is_some_and(|x| x.status.code().is_some()) =>
        {
            Err(BuildFailed {
                kernel: spec.name.clone(),
                origin: source.to_string(),
                log: log.clone(),
                detail: format!("{e:#}"),
            }
            .into())
        }
        other => other,
    }
}

/// A kernel source that does not compile: `make` ran and exited with an
/// error (a compiler's, a linker's). Unlike a build that was killed, it
/// leaves the build directory as Kbuild keeps it after any failed build
/// (what failed deleted, the rest valid), so the next build in the
/// workspace carries on from it.
#[derive(Debug, thiserror::Error)]
#[error("kernel {kernel} from {origin} does not build (log {}):\n{detail}", log.display())]
pub struct BuildFailed {
    pub kernel: String,
    pub origin: String,
    pub log: PathBuf,
    pub detail: String,
}

/// A command that ran and did not succeed.
#[derive(Debug, thiserror::Error)]
#[error("{command} failed ({status}); build log {}, last lines:\n{tail}", log.display())]
pub struct Exited {
    pub command: String,
    pub status: std::process::ExitStatus,
    pub log: PathBuf,
    pub tail: String,
}

impl Exited {
    /// `command` ended with `status`; the last 25 lines of its log say why.
    fn from_log(command: &Command, status: std::process::ExitStatus, log_path: &Path) -> Exited {
        let text = std::fs::read_to_string(log_path).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(25).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Exited {
            command: format!("{command:?}"),
            status,
            log: log_path.to_path_buf(),
            tail: tail.join("\n"),
        }
    }
}

/// The configuration `olddefconfig` completes: the base's, then each
/// fragment under a line naming it. Kconfig takes a symbol's last
/// assignment, so `base.config` (what the guest needs) overrides the base
/// and the variant's fragment overrides both.
pub fn merged_config(base: &str, fragments: &[Fragment]) -> String {
    let mut text = base.to_string();
    for f in fragments {
        text.push_str(&format!("\n# ---- {} (markbench)\n", f.label()));
        text.push_str(&f.text);
    }
    text
}

/// Whether the cache holds `spec`'s kernel built from `origin` whole, so a
/// run would not build it.
pub fn is_cached(origin: &ResolvedOrigin, spec: &KernelSpec) -> bool {
    let key = kernel_key(spec, origin.identity.as_str(), &compiler_version(spec.arch));
    cached(&Cache::here().kernel(&spec.name, &key)).is_some()
}

/// The kernel cached in `dir`, if it is there whole: its record reads and
/// its files match their seals. A damaged entry is named on the screen and
/// passed over (the caller builds it again, replacing it), never booted.
fn cached(dir: &Path) -> Option<KernelImage> {
    if !dir.join(RECORD).exists() {
        return None;
    }
    match check_entry(dir) {
        (Some(image), SealVerdict::Sound | SealVerdict::SealedNow) => Some(image),
        (_, verdict) => {
            if let SealVerdict::Damaged(why) = verdict {
                crate::base::message::warning(format_args!(
                    "cached kernel {} is damaged ({why}): building it again",
                    dir.display()
                ));
            }
            None
        }
    }
}

/// Checks the kernel entry `dir`: its record, then the size and hash of
/// each sealed file. An entry cached before seals were kept is checked by
/// its `bzImage`'s boot header (a truncated copy is shorter than the header
/// declares), then sealed: its record is rewritten with the seals.
pub fn check_entry(dir: &Path) -> (Option<KernelImage>, SealVerdict) {
    let record = dir.join(RECORD);
    let mut image: KernelImage = match crate::base::input_file::read_toml(
        &record,
        crate::base::input_file::Bound::Record,
        "kernel record",
    ) {
        Ok(image) => image,
        Err(e) => return (None, SealVerdict::Damaged(format!("{e:#}"))),
    };
    if image.seals.is_empty() {
        let (file, _) = image.arch.kernel_image();
        if let Some(why) = super::seal::kernel_image_header_damage(&dir.join(file), image.arch) {
            return (None, SealVerdict::Damaged(why));
        }
        let seals: Result<BTreeMap<String, Seal>> = sealed_files(image.arch)
            .iter()
            .map(|f| Ok((f.to_string(), super::seal::seal_of(&dir.join(f))?)))
            .collect();
        match seals.and_then(|seals| {
            image.seals = seals;
            Ok(std::fs::write(&record, toml::to_string(&image)?)?)
        }) {
            Ok(()) => return (Some(image), SealVerdict::SealedNow),
            Err(e) => return (None, SealVerdict::Damaged(format!("{e:#}"))),
        }
    }
    for (file, seal) in &image.seals {
        if let Some(why) = super::seal::damage(&dir.join(file), seal) {
            return (None, SealVerdict::Damaged(why));
        }
    }
    (Some(image), SealVerdict::Sound)
}

/// Every kernel in the cache (a damaged entry's record is still listed).
pub fn cached_kernels() -> Vec<KernelImage> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(Cache::here().kernels()) {
        for e in entries.flatten() {
            if let Ok(image) = crate::base::input_file::read_toml::<KernelImage>(
                &e.path().join(RECORD),
                crate::base::input_file::Bound::Record,
                "kernel record",
            ) {
                out.push(image);
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name).then(a.key.cmp(&b.key)));
    out
}

/// `scripts/diffconfig` between two kernels' final configs, run from a
/// source tree they were built from.
pub fn diffconfig(tree: &Path, a: &KernelImage, b: &KernelImage) -> Result<String> {
    let out = Command::new("python3")
        .arg(tree.join("scripts/diffconfig"))
        .arg(&a.config)
        .arg(&b.config)
        .output()
        .context("running scripts/diffconfig")?;
    if !out.status.success() {
        bail!(
            "scripts/diffconfig failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::images::fragments::{FragmentSearch, Origin};

    fn expect(text: &str) -> Vec<Expectation> {
        parse_fragment("frag.config", text).unwrap()
    }

    #[test]
    fn kbuild_lines_that_compile_an_object_are_counted_and_no_others() {
        for line in [
            "  CC      kernel/fork.o",
            "  AS      arch/x86/kernel/head_64.o",
            "  CC [M]  fs/ext4/inode.o",
        ] {
            assert!(is_object_line(line), "{line}");
        }
        for line in [
            "  LD      vmlinux.o",
            "  CC      scripts/mod/empty.s",
            "CC kernel/fork.o",
            "  HOSTCC  scripts/basic/fixdep",
            "kernel/fork.c:12: warning: CC unused",
        ] {
            assert!(!is_object_line(line), "{line}");
        }
    }

    #[test]
    fn a_build_counts_the_objects_of_its_log_as_it_goes() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("build.log");
        let mut script = Command::new("sh");
        script.arg("-c").arg(
            "printf '  CC      a.o\\n  HOSTCC  fixdep\\n'; sleep 1; printf '  AS      b.o\\n  LD      vmlinux.o\\n'",
        );
        let mut step = crate::base::progress::Step::with_target(
            "building kernel k",
            "objects",
            Some(2),
            Some(indicatif::ProgressDrawTarget::hidden()),
            crate::base::progress::Step::LOG_EVERY,
        );
        assert_eq!(logged_counting(&log, &mut script, &mut step).unwrap(), 2);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("  LD      vmlinux.o"), "{text}");
        let mut failing = Command::new("sh");
        failing.arg("-c").arg("printf '  CC      c.o\\n'; exit 2");
        let e = logged_counting(&log, &mut failing, &mut step).unwrap_err();
        assert!(e.machinery().is_some_and(|m| m.is::<Exited>()), "{e:#}");
    }

    #[test]
    fn fragment_lines_become_expectations() {
        let e = expect("# comment\nCONFIG_A=y\n\n# CONFIG_B is not set\nCONFIG_N=8\n");
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].symbol, "CONFIG_A");
        assert_eq!(e[0].value.as_deref(), Some("y"));
        assert_eq!(e[1].value, None);
        assert_eq!(e[1].line, 4);
        assert_eq!(e[2].value.as_deref(), Some("8"));
    }

    #[test]
    fn malformed_fragment_line_names_file_and_line() {
        let err = parse_fragment("x.config", "CONFIG_A=y\nJUMP_LABEL=y\n").unwrap_err();
        assert!(err.to_string().starts_with("x.config:2:1:"), "{err}");
    }

    #[test]
    fn verification_names_the_dropped_symbol() {
        let e = expect("CONFIG_TRACEPOINTS=y\nCONFIG_JUMP_LABEL=y\n# CONFIG_FOO is not set\n");
        let config =
            parse_config("CONFIG_JUMP_LABEL=y\nCONFIG_FOO=y\n# CONFIG_TRACEPOINTS is not set\n");
        let problems = verify(&e, &config);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("CONFIG_FOO (asked not set"),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("CONFIG_TRACEPOINTS (asked y"),
            "{problems:?}"
        );
    }

    #[test]
    fn verification_passes_a_matching_config_and_lets_later_fragments_win() {
        let mut e = expect("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=n\n");
        e.extend(parse_fragment("v.config", "# CONFIG_A is not set\n").unwrap());
        let config = parse_config("CONFIG_X=y\n");
        assert!(verify(&e, &config).is_empty());
    }

    #[test]
    fn shipped_fragments_parse() {
        let built_in = FragmentSearch::for_suite(None, None, Path::new("/nonexistent"));
        for name in crate::guest::images::fragments::built_in_names() {
            let f = built_in.find(name).unwrap().unwrap();
            assert!(
                !parse_fragment(&f.label(), &f.text).unwrap().is_empty(),
                "{name}"
            );
        }
    }

    fn spec_from(search: &FragmentSearch, name: &str) -> KernelSpec {
        KernelSpec {
            name: name.into(),
            base: KernelBase::Tinyconfig,
            fragments: search.kernel(name).unwrap(),
            arch: Arch::X86_64,
        }
    }

    #[test]
    fn tinyconfig_kernels_keep_their_keys_and_other_bases_are_other_kernels() {
        let mut spec = spec_from(
            &FragmentSearch::for_suite(None, None, Path::new("/nonexistent")),
            "markers-on",
        );
        let tiny = kernel_key(&spec, "src", "gcc 12");
        // The key every markers-on kernel of this source had before bases.
        let mut parts: Vec<(&str, &[u8])> = vec![
            (
                "recipe",
                b"tinyconfig+fragments+olddefconfig+bzImage v2 reproducible",
            ),
            ("source", b"src"),
            ("compiler", b"gcc 12"),
        ];
        for f in &spec.fragments {
            parts.push(("fragment", f.text.as_bytes()));
        }
        assert_eq!(tiny, key_of(&parts).to_string());
        spec.base = KernelBase::Defconfig;
        let defconfig = kernel_key(&spec, "src", "gcc 12");
        spec.base = KernelBase::File {
            path: "/boot/config-6.1.0-amd64".into(),
            text: "CONFIG_SMP=y\n".into(),
        };
        let file = kernel_key(&spec, "src", "gcc 12");
        spec.base = KernelBase::File {
            path: "/elsewhere/config".into(),
            text: "CONFIG_SMP=y\n".into(),
        };
        // The file's text is the kernel, not where it was found.
        assert_eq!(kernel_key(&spec, "src", "gcc 12"), file);
        assert!(tiny != defconfig && defconfig != file && tiny != file);
    }

    #[test]
    fn arm64_kernels_are_keyed_by_their_arch_and_cross_compiler() {
        let search = FragmentSearch::for_suite(None, None, Path::new("/nonexistent"));
        let x86 = spec_from(&search, "markers-on");
        let arm64 = KernelSpec {
            fragments: search.kernel_for("markers-on", Arch::Arm64).unwrap(),
            arch: Arch::Arm64,
            ..x86.clone()
        };
        assert_eq!(arm64.fragments[0].file_name, "base-arm64.config");
        let cross = "aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0";
        assert_ne!(
            kernel_key(&arm64, "src", cross),
            kernel_key(&x86, "src", cross)
        );
        assert_ne!(
            kernel_key(&arm64, "src", cross),
            kernel_key(&arm64, "src", "aarch64-linux-gnu-gcc 13")
        );
        // The same fragments, arch aside, are still another kernel.
        let same_fragments = KernelSpec {
            arch: Arch::Arm64,
            ..x86.clone()
        };
        assert_ne!(
            kernel_key(&same_fragments, "src", "gcc 12"),
            kernel_key(&x86, "src", "gcc 12")
        );
        assert_ne!(workspace_key(&arm64, cross), workspace_key(&x86, cross));
        assert_eq!(sealed_files(Arch::X86_64), SEALED_FILES);
        assert_eq!(sealed_files(Arch::Arm64), ["Image", "config"]);
    }

    #[test]
    fn a_cross_build_names_arch_and_compiler_and_x86_names_neither() {
        let mut x86 = Command::new("make");
        cross_build(&mut x86, Arch::X86_64);
        assert_eq!(x86.get_args().count(), 0);
        let mut arm64 = Command::new("make");
        cross_build(&mut arm64, Arch::Arm64);
        let args: Vec<_> = arm64.get_args().map(|a| a.to_string_lossy()).collect();
        assert_eq!(args, ["ARCH=arm64", "CROSS_COMPILE=aarch64-linux-gnu-"]);
    }

    #[test]
    fn the_console_is_the_arch_s_first_serial_port() {
        assert_eq!(base_cmdline(Arch::X86_64), BASE_CMDLINE);
        assert_eq!(
            base_cmdline(Arch::Arm64),
            "console=ttyAMA0 panic=-1 oops=panic rdinit=/init"
        );
    }

    #[test]
    fn a_base_config_file_is_read_and_merged_under_the_fragments() {
        let dir = tempfile::tempdir().unwrap();
        let distro = dir.path().join("config-6.1.0-amd64");
        // A distro's serial driver is a module; the guest needs it built in.
        std::fs::write(
            &distro,
            "CONFIG_SMP=y\nCONFIG_SERIAL_8250=m\n# CONFIG_TRACEPOINTS is not set\n",
        )
        .unwrap();
        let base = KernelBase::from_setting("config-6.1.0-amd64", &distro).unwrap();
        assert!(base
            .describe()
            .starts_with(&format!("{} (sha256 ", distro.display())));
        let spec = spec_from(
            &FragmentSearch::for_suite(None, None, Path::new("/nonexistent")),
            "markers-on",
        );
        let KernelBase::File { text, .. } = &base else {
            panic!("{base:?}")
        };
        let merged = merged_config(text, &spec.fragments);
        let last = |symbol: &str| {
            parse_config(&merged)
                .get(symbol)
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(last("CONFIG_SERIAL_8250"), "y");
        assert_eq!(last("CONFIG_TRACEPOINTS"), "y");
        // What the base's Kconfig would drop is named against its fragment.
        let mut expectations = Vec::new();
        for f in &spec.fragments {
            expectations.extend(parse_fragment(&f.label(), &f.text).unwrap());
        }
        let mut final_config = parse_config(&merged);
        final_config.remove("CONFIG_JUMP_LABEL");
        let problems = verify(&expectations, &final_config);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .starts_with("CONFIG_JUMP_LABEL (asked y by built-in vm-images/markers-on.config:"),
            "{}",
            problems[0]
        );

        let empty = dir.path().join("empty");
        std::fs::write(&empty, "# nothing\n").unwrap();
        let e = KernelBase::from_setting("empty", &empty).unwrap_err();
        assert!(e.contains("not a kernel .config"), "{e}");
        let e = KernelBase::from_setting("nowhere", &dir.path().join("nowhere")).unwrap_err();
        assert!(
            e.contains("cannot be read") && e.contains("defconfig"),
            "{e}"
        );
        let e = KernelBase::from_setting("zero", Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("not a regular file (a character device)"), "{e}");
        assert_eq!(
            KernelBase::from_setting("defconfig", Path::new("x")).unwrap(),
            KernelBase::Defconfig
        );
    }

    #[test]
    fn key_changes_with_fragments_and_compiler() {
        let built_in = spec_from(
            &FragmentSearch::for_suite(None, None, Path::new("/nonexistent")),
            "markers-on",
        );
        let k1 = kernel_key(&built_in, "src", "gcc 12");
        assert_ne!(k1, kernel_key(&built_in, "src", "gcc 13"));
        assert_ne!(k1, kernel_key(&built_in, "src2", "gcc 12"));

        // Another checkout's vm-images/: an unchanged copy of a fragment is
        // the same kernel; an edited one is another.
        let checkout = tempfile::tempdir().unwrap();
        let images = checkout.path().join("vm-images");
        std::fs::create_dir_all(&images).unwrap();
        let on = built_in.fragments[1].text.clone();
        std::fs::write(images.join("markers-on.config"), &on).unwrap();
        let search = FragmentSearch::for_suite(None, None, checkout.path());
        let copy = spec_from(&search, "markers-on");
        assert!(matches!(copy.fragments[1].origin, Origin::File(_)));
        assert_eq!(kernel_key(&copy, "src", "gcc 12"), k1);
        std::fs::write(
            images.join("markers-on.config"),
            format!("{on}CONFIG_PRINTK_TIME=y\n"),
        )
        .unwrap();
        let edited = spec_from(&search, "markers-on");
        assert_ne!(kernel_key(&edited, "src", "gcc 12"), k1);
        assert_ne!(edited.fragments[1].sha256(), built_in.fragments[1].sha256());
    }
}
