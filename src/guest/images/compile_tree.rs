//! The kernel-compile workload's image: a configured, prepared kernel tree and
//! the host's toolchain (make, gcc, cc1, binutils and the libraries they
//! link), packed as a cpio archive appended to a boot's initrd.
//!
//! The initramfs lives in guest RAM, so the timed compile reads and writes no
//! host file at all. The tree is configured as the guest kernels are
//! (`tinyconfig` + the suite's `base.config`), then `make prepare` runs once on
//! the host, out of tree (`O=`), into the cache. A reference build of the
//! workload's targets follows on the host: it proves the targets compile, and
//! the dependency lists Kbuild writes (`.*.cmd`) name every source file and
//! host header the build reads, so only those (plus Kbuild's own files) are
//! shipped instead of the whole 1.5 GB tree. The reference build's outputs
//! (everything newer than the [`PREPARED_MARKER`]) are not shipped, and the
//! guest deletes everything newer than the marker before each timed
//! iteration, so every iteration compiles the same files from the same state.
//!
//! Kbuild's files hold absolute paths (`O=` builds name the source tree by
//! its absolute path), so every file goes into the archive at its host path;
//! [`GUEST_TREE`] is a fixed symlink to the build directory. cpio keeps mtimes
//! (seconds) and the kernel's initramfs unpacker restores them, so Kbuild sees
//! an up-to-date tree and neither reconfigures nor rebuilds host tools inside
//! the timed region (the workload's output check fails a run that does).
//!
//! The archive's mtimes are not the host's: every file outside the build
//! directory (sources, toolchain) carries [`SOURCE_MTIME_S`], and the build
//! directory's prepared state and its marker [`PREPARED_MTIME_S`], a day
//! later, both before the guest's clock start under icount (2020-01-01).
//! With the host's times a guest whose clock starts in 2020 saw the whole
//! tree years in the future: make found every object "up to date" and the
//! reset deleted nothing. Two instants are all Kbuild needs (make rebuilds a
//! target only when a prerequisite is strictly newer, and everything
//! generated depends on sources or on other generated files), and fixed
//! instants keep the host's build time out of the guest.

use super::fragments::Fragment;
use super::kernel::{logged, logged_counting, KernelSource};
use super::seal::{Seal, SealVerdict};
use super::{key_of, tool_version, Cache};
use crate::base::error::bail;
use crate::base::error::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

/// The prepared build directory inside the guest (a symlink to its host path).
pub const GUEST_TREE: &str = "/usr/src/linux";
/// The makefile of Kbuild's recorded object commands (the `objects` driver),
/// outside the build directory so the per-iteration cleanup keeps it.
pub const GUEST_OBJECTS_MAKEFILE: &str = "/usr/src/markbench-objects.mk";
/// A file in the build directory written right after `make prepare`: what is
/// newer than it was made by a compile and is removed before each iteration.
pub const PREPARED_MARKER: &str = ".markbench-prepared";
/// The mtime of every shipped file outside the build directory (sources,
/// toolchain), in seconds since the epoch: two days before the guest's clock
/// start.
pub const SOURCE_MTIME_S: u64 = super::initramfs::GUEST_CLOCK_START_S - 2 * 86_400;
/// The mtime of the build directory's prepared state and of its
/// [`PREPARED_MARKER`]: a day after the sources, a day before the guest's
/// clock start, so whatever the guest compiles is newer than the marker
/// under icount and under wall time alike.
pub const PREPARED_MTIME_S: u64 = super::initramfs::GUEST_CLOCK_START_S - 86_400;
// Sources, then the prepared tree, then whatever the guest compiles.
const _: () = assert!(
    SOURCE_MTIME_S < PREPARED_MTIME_S && PREPARED_MTIME_S < super::initramfs::GUEST_CLOCK_START_S
);

/// Files in the build directory's root that every make invocation rewrites
/// (Kbuild's `outputmakefile`: the wrapper Makefile and the `source` link),
/// so they are newer than the marker yet part of the prepared state.
pub const REWRITTEN_BY_EVERY_MAKE: &[&str] = &["Makefile", "source"];

/// The toolchain Kbuild runs, copied from the host with the libraries they
/// link. Generic utilities the build also calls (rm, cat, mkdir, …) come from
/// busybox; sed, grep, awk, diff and cmp are GNU's because Kbuild's scripts
/// are written against them.
const TOOLCHAIN: &[&str] = &[
    "/usr/bin/make",
    "/usr/bin/gcc",
    "/usr/bin/as",
    "/usr/bin/ld",
    "/usr/bin/ar",
    "/usr/bin/nm",
    "/usr/bin/objcopy",
    "/usr/bin/objdump",
    "/usr/bin/readelf",
    "/usr/bin/strip",
    "/usr/bin/bc",
    "/usr/bin/getconf",
    "/usr/bin/sed",
    "/usr/bin/grep",
    "/usr/bin/awk",
    "/usr/bin/diff",
    "/usr/bin/cmp",
    "/usr/bin/dash",
    // The coreutils Kbuild's recipes were seen calling (strace of a host
    // build); busybox's would do, but the point is the host's own tools.
    "/usr/bin/rm",
    "/usr/bin/cat",
    "/usr/bin/mkdir",
    "/usr/bin/mv",
    "/usr/bin/cp",
    "/usr/bin/ln",
    "/usr/bin/touch",
    "/usr/bin/uname",
    "/usr/bin/head",
    "/usr/bin/tail",
    "/usr/bin/expr",
    "/usr/bin/xargs",
    "/usr/bin/whoami",
    "/usr/bin/wc",
    "/usr/bin/sort",
    "/usr/bin/dirname",
    "/usr/bin/basename",
    "/usr/bin/tr",
    "/usr/bin/cut",
    "/usr/bin/env",
    "/usr/bin/printf",
    "/usr/bin/realpath",
    "/usr/bin/readlink",
    "/usr/bin/od",
];

/// Kbuild records who built a tree and where (`include/generated/compile.h`);
/// fixed values keep the guest's make from rewriting it because the guest's
/// host name differs from the host's.
pub const BUILD_IDENTITY: &[&str] = &["KBUILD_BUILD_USER=markbench", "KBUILD_BUILD_HOST=markbench"];

/// Source files Kbuild's top-level `Kbuild` needs in every `prepare` pass
/// that no `.cmd` file names (prerequisites of `filechk` rules).
const ALWAYS_SHIPPED_FILES: &[&str] = &["kernel/time/timeconst.bc"];

/// Source directories every build reads whole: Kbuild itself, the headers,
/// the architecture, and what `make prepare` re-checks (objtool's sources).
const ALWAYS_SHIPPED_DIRS: &[&str] = &[
    "scripts",
    "include",
    "arch/x86",
    "tools/objtool",
    "tools/lib",
    "tools/include",
    "tools/arch/x86",
    "tools/build",
    "tools/scripts",
];

/// The cached archive.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompileTree {
    pub key: crate::base::sha256::Digest,
    pub archive: PathBuf,
    pub archive_bytes: u64,
    pub targets: Vec<String>,
    pub source_identity: String,
    pub compiler: String,
    /// Host time of the reference build of the targets (after `prepare`).
    pub reference_build_seconds: f64,
    /// The archive's size and SHA-256 as made (absent for trees cached
    /// before seals were kept: checked by `archive_bytes`, then sealed).
    #[serde(default)]
    pub archive_seal: Option<Seal>,
}

const RECORD: &str = "compile-tree.toml";

/// The cache key: source, configuration, toolchain and targets.
pub fn compile_tree_key(
    identity: &str,
    base_fragment: &[u8],
    compiler: &str,
    make: &str,
    targets: &[String],
) -> crate::base::sha256::Sha256 {
    key_of(&[
        (
            "recipe",
            b"tinyconfig+base+prepare, O=, cmd-file deps, objects.mk v2, fixed mtimes",
        ),
        ("source", identity.as_bytes()),
        ("fragment", base_fragment),
        ("compiler", compiler.as_bytes()),
        ("make", make.as_bytes()),
        ("targets", targets.join("\n").as_bytes()),
    ])
}

/// Returns the cached compile-tree archive for `targets`, building it first
/// when needed (a few minutes: configure, prepare, one reference build).
pub fn ensure_compile_tree(
    source: &KernelSource,
    identity: &str,
    base_fragment: &Fragment,
    targets: &[String],
) -> Result<CompileTree> {
    let compiler = tool_version("gcc");
    let key = compile_tree_key(
        identity,
        base_fragment.text.as_bytes(),
        &compiler,
        &tool_version("make"),
        targets,
    );
    let dir = Cache::here().compile_tree(key.as_str());
    if let Some(tree) = cached_tree(&dir) {
        return Ok(tree);
    }
    // Two runs that need the same tree (a test beside a compare) must not
    // build it into one directory at once: the second waits, then finds it.
    let _lock = super::lock::EntryLock::exclusive(
        &dir.with_extension("lock"),
        &format!(
            "another run preparing the kernel-compile tree {}",
            key.short()
        ),
    )?;
    if let Some(tree) = cached_tree(&dir) {
        return Ok(tree);
    }
    let src = source.tree(identity)?;
    // Built in place, not renamed from a partial directory: the paths Kbuild
    // records are absolute and must stay valid. No record means incomplete.
    let _ = std::fs::remove_dir_all(&dir);
    let build = dir.join("build");
    std::fs::create_dir_all(&build).with_context(|| format!("creating {}", build.display()))?;
    let log = dir.join("build.log");
    crate::base::message::note(format_args!(
        "preparing the kernel-compile tree ({}); log: {}",
        key.short(),
        log.display()
    ));
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let prepared_at = configure_and_prepare(&src, &build, &log, base_fragment, jobs)?;
    let reference_build_seconds = reference_build(&build, &log, jobs, targets)?;
    let archive = pack_guest_tree(&dir, &src, &build, prepared_at, targets)?;

    let archive_seal = super::seal::seal_of(&archive)?;
    let tree = CompileTree {
        key: key.to_string().into(),
        archive_bytes: archive_seal.bytes,
        archive_seal: Some(archive_seal),
        archive,
        targets: targets.to_vec(),
        source_identity: identity.to_string(),
        compiler,
        reference_build_seconds,
    };
    std::fs::write(dir.join(RECORD), toml::to_string(&tree)?)?;
    crate::base::message::note(format_args!(
        "kernel-compile tree ready: {} MB, reference build {:.0} s",
        tree.archive_bytes / 1_000_000,
        reference_build_seconds
    ));
    Ok(tree)
}

/// Configures the tree (`tinyconfig` + the base fragment) in `build` and
/// runs `make prepare`; returns when it was prepared, the line between
/// what the guest is given and what a compile makes.
fn configure_and_prepare(
    src: &Path,
    build: &Path,
    log: &Path,
    base_fragment: &Fragment,
    jobs: usize,
) -> Result<std::time::SystemTime> {
    let make = |args: &[&str]| {
        let mut c = Command::new("make");
        c.arg("-C").arg(src).arg(format!("O={}", build.display()));
        c.args(BUILD_IDENTITY).args(args);
        c
    };
    logged(log, &mut make(&["tinyconfig"]))?;
    {
        let mut config = std::fs::OpenOptions::new()
            .append(true)
            .open(build.join(".config"))?;
        writeln!(config, "\n# ---- {} (markbench)", base_fragment.label())?;
        config.write_all(base_fragment.text.as_bytes())?;
    }
    logged(log, &mut make(&["olddefconfig"]))?;
    let mut step =
        crate::base::progress::Step::start("preparing the compile tree", "objects", None);
    logged_counting(
        log,
        &mut make(&[&format!("-j{jobs}"), "prepare"]),
        &mut step,
    )?;
    std::fs::write(
        build.join(PREPARED_MARKER),
        "made right after `make prepare`\n",
    )?;
    let prepared_at = std::fs::metadata(build.join(PREPARED_MARKER))?.modified()?;
    Ok(prepared_at)
}

/// The reference build of `targets`, timed.
fn reference_build(build: &Path, log: &Path, jobs: usize, targets: &[String]) -> Result<f64> {
    // The reference build runs as the guest's will: in the build directory,
    // through the Makefile `prepare` generated there. (From the source tree
    // with O=, make regenerates that Makefile, which would then count as a
    // compile output and be left out of the archive.)
    let started = std::time::Instant::now();
    let mut reference = Command::new("make");
    reference
        .arg("-C")
        .arg(build)
        .arg(format!("-j{jobs}"))
        .args(BUILD_IDENTITY)
        .args(targets);
    let mut step = crate::base::progress::Step::start(
        format!(
            "the compile tree's reference build of {}",
            targets.join(" ")
        ),
        "objects",
        None,
    );
    logged_counting(log, &mut reference, &mut step)
        .context("the reference build of the compile targets failed")?;
    let reference_build_seconds = started.elapsed().as_secs_f64();
    Ok(reference_build_seconds)
}

/// The guest's tree in `dir/compile-tree.cpio`: the prepared build's files
/// and the toolchain with its libraries; the reference build's objects are
/// then removed from `build`.
fn pack_guest_tree(
    dir: &Path,
    src: &Path,
    build: &Path,
    prepared_at: std::time::SystemTime,
    targets: &[String],
) -> Result<PathBuf> {
    let files = files_to_ship(src, build, prepared_at, targets)?;
    let objects_makefile = objects_makefile(build, prepared_at, targets)?;
    let root = dir.join("root");
    // Every directory of the build, empty ones too: Kbuild reads `.cmd`
    // files through paths like `arch/x86/entry/syscalls/../../../../…`,
    // which resolve only if each directory on the way exists.
    for d in directories(build)? {
        std::fs::create_dir_all(root.join(d.strip_prefix("/").unwrap_or(&d)))?;
    }
    for file in &files {
        copy_preserving(file, &root, KeepSymlinks(true))?;
    }
    let mut programs = toolchain()?;
    // Host programs `prepare` built (objtool, fixdep, …) link libraries too.
    for built in files
        .iter()
        .filter(|f| f.starts_with(build) && is_executable(f))
    {
        programs.extend(super::initramfs::shared_libraries(built)?);
    }
    for program in programs {
        copy_preserving(&program, &root, KeepSymlinks(false))?;
    }
    add_guest_links(&root, build)?;
    std::fs::write(
        root.join(GUEST_OBJECTS_MAKEFILE.trim_start_matches('/')),
        &objects_makefile,
    )?;
    std::fs::write(dir.join("objects.mk"), &objects_makefile)?;
    // Kbuild's recipes and scripts run under /bin/sh; Debian's is dash. The
    // base image's is busybox, whose shell prefers its own applets to the
    // GNU tools on PATH (busybox diff lacks options objtool's check uses).
    let sh = root.join("bin/sh");
    let _ = std::fs::remove_file(&sh);
    std::os::unix::fs::symlink("/usr/bin/dash", &sh)?;
    set_archive_times(&root, build)?;
    let archive = dir.join("compile-tree.cpio");
    super::initramfs::pack_cpio(&root, &archive)?;
    std::fs::remove_dir_all(&root)?;
    // The reference build's objects are not shipped; removing them keeps the
    // cached build directory identical to what the guest starts from.
    remove_compile_outputs(build, prepared_at)?;
    Ok(archive)
}

/// The tree recorded as complete in `dir`, if its archive is there whole;
/// a damaged one is named on the screen and built again.
fn cached_tree(dir: &Path) -> Option<CompileTree> {
    if !dir.join(RECORD).exists() {
        return None;
    }
    match check_entry(dir) {
        (Some(tree), SealVerdict::Sound | SealVerdict::SealedNow) => Some(tree),
        (_, verdict) => {
            if let SealVerdict::Damaged(why) = verdict {
                crate::base::message::warning(format_args!(
                    "cached kernel-compile tree {} is damaged ({why}): building it again",
                    dir.display()
                ));
            }
            None
        }
    }
}

/// Checks the compile-tree entry `dir`: its record, then its archive's
/// size and hash; a tree cached before seals were kept is checked by the
/// size its record gives, then sealed.
pub fn check_entry(dir: &Path) -> (Option<CompileTree>, SealVerdict) {
    let record = dir.join(RECORD);
    let mut tree: CompileTree = match crate::base::input_file::read_toml(
        &record,
        crate::base::input_file::Bound::Record,
        "compile-tree record",
    ) {
        Ok(tree) => tree,
        Err(e) => return (None, SealVerdict::Damaged(format!("{e:#}"))),
    };
    let archive = dir.join(tree.archive.file_name().unwrap_or_default());
    match &tree.archive_seal {
        Some(seal) => match super::seal::damage(&archive, seal) {
            Some(why) => (None, SealVerdict::Damaged(why)),
            None => (Some(tree), SealVerdict::Sound),
        },
        None => {
            let len = std::fs::metadata(&archive).map(|m| m.len()).ok();
            if len != Some(tree.archive_bytes) {
                return (
                    None,
                    SealVerdict::Damaged(format!(
                        "{}: {} bytes, {} when it was made",
                        archive.display(),
                        len.map_or("no".to_string(), |l| l.to_string()),
                        tree.archive_bytes
                    )),
                );
            }
            match super::seal::seal_of(&archive).and_then(|seal| {
                tree.archive_seal = Some(seal);
                Ok(std::fs::write(&record, toml::to_string(&tree)?)?)
            }) {
                Ok(()) => (Some(tree), SealVerdict::SealedNow),
                Err(e) => (None, SealVerdict::Damaged(format!("{e:#}"))),
            }
        }
    }
}

/// Gives every entry under the staging `root` its fixed time: the build
/// directory's (the prepared state and its marker) [`PREPARED_MTIME_S`],
/// everything else [`SOURCE_MTIME_S`]. Symlinks get their own time (the
/// guest's reset compares a link's own mtime with the marker's).
fn set_archive_times(root: &Path, build: &Path) -> Result<()> {
    let build_in_root = root.join(build.strip_prefix("/").unwrap_or(build));
    let at = |s: u64| filetime::FileTime::from_unix_time(s as i64, 0);
    for entry in walkdir::WalkDir::new(root).contents_first(true) {
        let entry = entry.with_context(|| format!("listing {}", root.display()))?;
        let time = if entry.path().starts_with(&build_in_root) {
            at(PREPARED_MTIME_S)
        } else {
            at(SOURCE_MTIME_S)
        };
        filetime::set_symlink_file_times(entry.path(), time, time)
            .with_context(|| format!("setting the time of {}", entry.path().display()))?;
    }
    Ok(())
}

/// One object Kbuild compiled in the reference build, from its `.cmd` file.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedObject {
    /// Relative to the build directory, e.g. `kernel/locking/mutex.o`.
    pub target: String,
    /// The `.cmd` file's command variable line, verbatim (`cmd_<target> :=
    /// …`, or `savedcmd_…` in newer kernels): already escaped for make.
    pub assignment: String,
    /// The variable's name.
    pub variable: String,
    pub assembler: bool,
    /// Build-relative files the compile read.
    pub relative_deps: Vec<String>,
}

/// Reads an object's `.cmd` file; `None` for files that are not an object's.
pub fn read_object_cmd(text: &str) -> Option<RecordedObject> {
    let first = text.lines().next()?;
    let (variable, command) = first.split_once(" := ")?;
    let target = variable
        .strip_prefix("savedcmd_")
        .or_else(|| variable.strip_prefix("cmd_"))?;
    if !target.ends_with(".o") || !command.contains(" -c ") {
        return None;
    }
    let deps_marker = format!("deps_{target} :=");
    let relative_deps = text
        .split_once(&deps_marker)
        .map(|(_, deps)| {
            deps.lines()
                .skip(1)
                .take_while(|l| l.starts_with(' '))
                .map(|l| l.trim().trim_end_matches('\\').trim())
                .filter(|t| !t.is_empty() && !t.starts_with('/') && !t.starts_with("$("))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    Some(RecordedObject {
        target: target.to_string(),
        assignment: first.to_string(),
        variable: variable.to_string(),
        assembler: command.contains("-D__ASSEMBLY__"),
        relative_deps,
    })
}

/// The text of the `objects` driver's makefile: one rule per object with
/// the command Kbuild recorded for it, echoing Kbuild's short log line first
/// (the workload counts `CC`/`AS` lines).
pub fn render_objects_makefile(targets: &[String], objects: &[RecordedObject]) -> String {
    let mut mk = String::new();
    mk.push_str(&format!(
        "# The compile commands Kbuild recorded for the objects of {}.\n\
         # Generated by markbench; run in the build directory with make -f.\n\
         # `pound` is how Kbuild's .cmd files spell '#'.\n\
         pound := \\#\n\n.PHONY: all\nall:",
        targets.join(" ")
    ));
    for o in objects {
        mk.push_str(" \\\n  ");
        mk.push_str(&o.target);
    }
    mk.push_str("\n\n");
    for o in objects {
        let verb = if o.assembler { "AS" } else { "CC" };
        mk.push_str(&format!(
            "{}\n{}:\n\t@echo '  {verb:<7} {}'\n\t$({})\n\n",
            o.assignment, o.target, o.target, o.variable
        ));
    }
    mk
}

/// Builds the `objects` makefile from the reference build's `.cmd` files.
/// Fails when an object read a file the build itself generated (the
/// recorded commands do not regenerate it): such targets need Kbuild.
fn objects_makefile(build: &Path, prepared_at: SystemTime, targets: &[String]) -> Result<String> {
    let mut all = Vec::new();
    walk(build, &mut all)?;
    all.sort();
    let mut objects = Vec::new();
    for f in &all {
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        let recorded_object = name.starts_with('.') && name.ends_with(".o.cmd");
        if !(recorded_object && is_compile_output(build, f, prepared_at)) {
            continue;
        }
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let Some(object) = read_object_cmd(&text) else {
            continue;
        };
        if let Some(generated) = object
            .relative_deps
            .iter()
            .find(|d| is_compile_output(build, &build.join(d), prepared_at))
        {
            bail!(
                "kernel-compile: {} reads {generated}, which the build of {} generates; \
                 the objects driver cannot regenerate it (use driver = \"kbuild\")",
                object.target,
                targets.join(" ")
            );
        }
        objects.push(object);
    }
    if objects.is_empty() {
        bail!(
            "kernel-compile: the reference build of {} compiled no object",
            targets.join(" ")
        );
    }
    Ok(render_objects_makefile(targets, &objects))
}

/// Every non-directory under `dir` (symlinks included, not followed).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(&entry.path(), out)?;
        } else {
            out.push(entry.path());
        }
    }
    Ok(())
}

/// Whether a build-directory file was made by a compile (and is not part of
/// the prepared state).
fn is_compile_output(build: &Path, path: &Path, prepared_at: SystemTime) -> bool {
    let rewritten = REWRITTEN_BY_EVERY_MAKE
        .iter()
        .any(|name| path == build.join(name));
    !rewritten && is_newer(path, prepared_at)
}

/// Every directory under `dir`, `dir` included.
fn directories(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        for entry in std::fs::read_dir(&out[i])? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                out.push(entry.path());
            }
        }
        i += 1;
    }
    Ok(out)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn is_newer(path: &Path, than: SystemTime) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t > than)
}

fn remove_compile_outputs(build: &Path, prepared_at: SystemTime) -> Result<()> {
    let mut all = Vec::new();
    walk(build, &mut all)?;
    for f in all
        .iter()
        .filter(|f| is_compile_output(build, f, prepared_at))
    {
        std::fs::remove_file(f).with_context(|| format!("removing {}", f.display()))?;
    }
    Ok(())
}

/// Absolute paths named in a Kbuild `.cmd` file (the source, the headers it
/// includes, the tools in its command line).
pub fn cmd_file_paths(text: &str) -> Vec<PathBuf> {
    text.split_whitespace()
        .map(|t| t.trim_end_matches([':', '\\', ',', ')']))
        .filter(|t| t.starts_with('/') && !t.contains('$'))
        .map(PathBuf::from)
        .collect()
}

/// Whether a file is one Kbuild or Kconfig reads while walking the tree.
fn is_kbuild_file(name: &str) -> bool {
    name.starts_with("Kconfig") || name.starts_with("Makefile") || name.starts_with("Kbuild")
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// What the guest needs of the source tree and the build directory.
fn files_to_ship(
    src: &Path,
    build: &Path,
    prepared_at: SystemTime,
    targets: &[String],
) -> Result<BTreeSet<PathBuf>> {
    let mut ship = BTreeSet::new();
    let mut built = Vec::new();
    walk(build, &mut built)?;
    for f in &built {
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with('.') && name.ends_with(".cmd") {
            // Whatever this command read, wherever it lives (host headers too).
            let text = std::fs::read_to_string(f).unwrap_or_default();
            for p in cmd_file_paths(&text) {
                if !p.starts_with(build) && p.is_file() {
                    ship.insert(p);
                }
            }
            // The matching source directory whole: its Makefile's other
            // prerequisites (tables, scripts) are named nowhere else.
            if let Some(rel) = f.parent().and_then(|d| d.strip_prefix(build).ok()) {
                ship.extend(files_in(&src.join(rel)));
            }
        }
        if !is_compile_output(build, f, prepared_at) {
            ship.insert(f.clone());
        }
    }
    let mut source = Vec::new();
    walk(src, &mut source)?;
    for f in source {
        let rel = f.strip_prefix(src).unwrap_or(&f);
        let top_level = rel.components().count() == 1;
        let name = rel.file_name().unwrap_or_default().to_string_lossy();
        let in_dir = |d: &str| rel.starts_with(d);
        if top_level
            || is_kbuild_file(&name)
            || ALWAYS_SHIPPED_FILES.iter().any(|f| rel == Path::new(f))
            || ALWAYS_SHIPPED_DIRS.iter().any(|d| in_dir(d))
            || targets.iter().any(|t| t.ends_with('/') && in_dir(t))
        {
            ship.insert(f);
        }
    }
    Ok(ship)
}

/// The toolchain programs, the compiler's own programs and headers, and the
/// shared libraries of all of them.
fn toolchain() -> Result<BTreeSet<PathBuf>> {
    let mut files = BTreeSet::new();
    let gcc_says = |arg: &str| -> Result<PathBuf> {
        let out = Command::new("gcc")
            .arg(arg)
            .output()
            .with_context(|| format!("running gcc {arg}"))?;
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    };
    let cc1 = gcc_says("-print-prog-name=cc1")?;
    let gcc_include = gcc_says("-print-file-name=include")?;
    if !cc1.is_absolute() || !cc1.is_file() {
        bail!(
            "gcc does not name its cc1 ({}); is gcc installed?",
            cc1.display()
        );
    }
    let mut programs: Vec<PathBuf> = TOOLCHAIN.iter().map(PathBuf::from).collect();
    programs.push(cc1);
    for p in &programs {
        if !p.is_file() {
            bail!(
                "{} is missing: the kernel-compile workload copies the host's toolchain into \
                 the guest (apt-get install build-essential bc)",
                p.display()
            );
        }
        files.extend(super::initramfs::shared_libraries(p)?);
        files.insert(p.clone());
    }
    if gcc_include.is_dir() {
        let mut headers = Vec::new();
        walk(&gcc_include, &mut headers)?;
        files.extend(headers);
    }
    Ok(files)
}

/// Whether a symlink is copied as a symlink (inside the kernel tree) or as
/// the file it points to, under the linked name (programs and libraries,
/// whose targets are not shipped).
struct KeepSymlinks(bool);

/// Copies `host_path` to the same path under `root`, keeping its mode (its
/// time is set for the whole archive by [`set_archive_times`]).
fn copy_preserving(host_path: &Path, root: &Path, keep_symlinks: KeepSymlinks) -> Result<()> {
    let dest = root.join(host_path.strip_prefix("/").unwrap_or(host_path));
    if dest.symlink_metadata().is_ok() {
        return Ok(());
    }
    std::fs::create_dir_all(dest.parent().unwrap_or(root))?;
    let link = std::fs::symlink_metadata(host_path)?;
    if link.file_type().is_symlink() && keep_symlinks.0 {
        let target = std::fs::read_link(host_path)?;
        std::os::unix::fs::symlink(target, &dest)?;
        return Ok(());
    }
    std::fs::copy(host_path, &dest)
        .with_context(|| format!("copying {} into the compile tree", host_path.display()))?;
    Ok(())
}

/// The fixed name of the build directory, and busybox applets under /bin
/// for the utilities Kbuild calls by name (the base image links only a few).
fn add_guest_links(root: &Path, build: &Path) -> Result<()> {
    let guest_tree = root.join(GUEST_TREE.trim_start_matches('/'));
    std::fs::create_dir_all(guest_tree.parent().unwrap_or(root))?;
    std::os::unix::fs::symlink(build, &guest_tree)?;
    let list = Command::new("/bin/busybox")
        .arg("--list")
        .stderr(Stdio::null())
        .output()
        .context("running busybox --list")?;
    std::fs::create_dir_all(root.join("bin"))?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let applet = applet.trim();
        if applet.is_empty() || applet.contains('/') || applet == "busybox" {
            continue;
        }
        let link = root.join("bin").join(applet);
        if link.symlink_metadata().is_err() {
            std::os::unix::fs::symlink("busybox", &link)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mtime_s(path: &Path) -> u64 {
        let meta = std::fs::symlink_metadata(path).unwrap();
        filetime::FileTime::from_last_modification_time(&meta).unix_seconds() as u64
    }

    #[test]
    fn the_archive_carries_fixed_times_sources_before_the_prepared_tree() {
        let staging = tempfile::tempdir().unwrap();
        let root = staging.path();
        let build = Path::new("/cache/compile-tree/k/build");
        let build_in_root = root.join("cache/compile-tree/k/build");
        std::fs::create_dir_all(build_in_root.join("include/generated")).unwrap();
        std::fs::create_dir_all(root.join("src/kernel/locking")).unwrap();
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        let header = build_in_root.join("include/generated/autoconf.h");
        let marker = build_in_root.join(PREPARED_MARKER);
        let source = root.join("src/kernel/locking/mutex.c");
        let program = root.join("usr/bin/make");
        for f in [&header, &marker, &source, &program] {
            std::fs::write(f, "x").unwrap();
        }
        let link = build_in_root.join("source");
        std::os::unix::fs::symlink("/src", &link).unwrap();

        set_archive_times(root, build).unwrap();

        for f in [&header, &marker, &link, &build_in_root] {
            assert_eq!(mtime_s(f), PREPARED_MTIME_S, "{}", f.display());
        }
        for f in [&source, &program, &root.join("src")] {
            assert_eq!(mtime_s(f), SOURCE_MTIME_S, "{}", f.display());
        }
    }

    /// The shape of a real `.cmd` file of a 6.1 build (kernel/locking/mutex.o,
    /// flags shortened): the command with its objtool step, then the deps.
    const MUTEX_CMD: &str = "cmd_kernel/locking/mutex.o := gcc -Wp,-MMD,kernel/locking/.mutex.o.d \
        -nostdinc -I./include -DKBUILD_MODFILE='\"kernel/locking/mutex\"' -c -o kernel/locking/mutex.o \
        /src/kernel/locking/mutex.c   ; ./tools/objtool/objtool --hacks=jump_label --uaccess   \
        kernel/locking/mutex.o\n\n\
        source_kernel/locking/mutex.o := /src/kernel/locking/mutex.c\n\n\
        deps_kernel/locking/mutex.o := \\\n    $(wildcard include/config/PREEMPT_RT) \\\n  \
        /src/include/linux/compiler-version.h \\\n  \
        arch/x86/include/generated/asm/rwonce.h \\\n  \
        include/generated/timeconst.h \\\n\n\
        kernel/locking/mutex.o: $(deps_kernel/locking/mutex.o)\n\n\
        $(deps_kernel/locking/mutex.o):\n";

    #[test]
    fn an_object_cmd_file_gives_its_command_and_build_relative_deps() {
        let o = read_object_cmd(MUTEX_CMD).unwrap();
        assert_eq!(o.target, "kernel/locking/mutex.o");
        assert_eq!(o.variable, "cmd_kernel/locking/mutex.o");
        assert!(o.assignment.ends_with("--uaccess   kernel/locking/mutex.o"));
        assert!(!o.assembler);
        assert_eq!(
            o.relative_deps,
            vec![
                "arch/x86/include/generated/asm/rwonce.h",
                "include/generated/timeconst.h"
            ]
        );
        // Newer kernels name the variable savedcmd_.
        let newer = read_object_cmd(&MUTEX_CMD.replacen("cmd_", "savedcmd_", 1)).unwrap();
        assert_eq!(newer.variable, "savedcmd_kernel/locking/mutex.o");
        assert_eq!(newer.target, "kernel/locking/mutex.o");
        // An archive's .cmd is not an object's.
        assert_eq!(
            read_object_cmd("cmd_kernel/locking/built-in.a := rm -f kernel/locking/built-in.a\n"),
            None
        );
    }

    #[test]
    fn the_objects_makefile_runs_each_recorded_command_under_its_log_line() {
        let o = read_object_cmd(MUTEX_CMD).unwrap();
        let mut asm = o.clone();
        asm.target = "arch/x86/lib/memcpy_64.o".into();
        asm.variable = "cmd_arch/x86/lib/memcpy_64.o".into();
        asm.assignment = "cmd_arch/x86/lib/memcpy_64.o := gcc -D__ASSEMBLY__ -c -o x".into();
        asm.assembler = true;
        let mk = render_objects_makefile(&["kernel/locking/".into()], &[o.clone(), asm]);
        assert!(mk.contains("pound := \\#\n"), "{mk}");
        assert!(mk.contains("all: \\\n  kernel/locking/mutex.o \\\n  arch/x86/lib/memcpy_64.o\n"));
        assert!(mk.contains(&format!(
            "{}\nkernel/locking/mutex.o:\n\t@echo '  CC      kernel/locking/mutex.o'\n\t$(cmd_kernel/locking/mutex.o)\n",
            o.assignment
        )));
        assert!(mk.contains("\t@echo '  AS      arch/x86/lib/memcpy_64.o'\n"));
    }

    #[test]
    fn cmd_file_paths_are_the_absolute_dependencies() {
        let text = "cmd_kernel/sched/core.o := gcc -Wp,-MMD,kernel/sched/.core.o.d -nostdinc \
             -I/src/arch/x86/include -include /src/include/linux/kconfig.h -c -o kernel/sched/core.o \
             /src/kernel/sched/core.c\n\n\
             source_kernel/sched/core.o := /src/kernel/sched/core.c\n\n\
             deps_kernel/sched/core.o := \\\n  /src/include/linux/kconfig.h \\\n  \
             $(wildcard include/config/CPU_BIG_ENDIAN) \\\n  \
             /usr/lib/gcc/x86_64-linux-gnu/12/include/stdarg.h \\\n\n\
             kernel/sched/core.o: $(deps_kernel/sched/core.o)\n\n\
             $(deps_kernel/sched/core.o):\n";
        let paths = cmd_file_paths(text);
        assert!(paths.contains(&PathBuf::from("/src/kernel/sched/core.c")));
        assert!(paths.contains(&PathBuf::from("/src/include/linux/kconfig.h")));
        assert!(paths.contains(&PathBuf::from(
            "/usr/lib/gcc/x86_64-linux-gnu/12/include/stdarg.h"
        )));
        assert!(paths.iter().all(|p| !p.to_string_lossy().contains("$(")));
    }

    #[test]
    fn key_changes_with_targets_and_compiler() {
        let k = |targets: &[&str], cc: &str| {
            let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
            compile_tree_key("src", b"CONFIG_A=y", cc, "make 4.3", &targets)
        };
        assert_ne!(
            k(&["kernel/locking/"], "gcc 12"),
            k(&["kernel/sched/"], "gcc 12")
        );
        assert_ne!(
            k(&["kernel/locking/"], "gcc 12"),
            k(&["kernel/locking/"], "gcc 13")
        );
        assert_eq!(k(&["lib/"], "gcc 12"), k(&["lib/"], "gcc 12"));
    }
}
