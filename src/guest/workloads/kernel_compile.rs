//! Kernel compile: `make -jN <targets>` of a configured, prepared kernel tree
//! inside the guest, with the host's own gcc, binutils and make (shipped in
//! the compile-tree archive, see `images::compile_tree`), as Desnoyers' 2006 mail timed
//! a 2.6.17 kernel build and reported `time`'s real, user and sys.
//!
//! The sweep parameter is the job count N. Before every iteration, untimed,
//! the guest deletes everything newer than the tree's "prepared" marker, so
//! each iteration compiles the same files from the same state.
//!
//! Metrics, all seconds, lower is better: `real` (the agent's
//! CLOCK_MONOTONIC wall time of the make process), `user` and `sys` (CPU
//! time of make and all its children, from the agent's cutime/cstime, 10 ms
//! resolution).
//!
//! A run counts only if make exited 0, compiled at least one object, and
//! Kbuild neither reconfigured nor rebuilt host tools or generated headers:
//! those would mean the shipped tree was not up to date in the guest (lost
//! mtimes, a missing file) and the time measured would not be a compile of
//! the targets.

use super::{Guest, Measurement, OutputError, Refusal, Workload};
use crate::guest::images::compile_tree::{
    BUILD_IDENTITY, GUEST_OBJECTS_MAKEFILE, GUEST_TREE, PREPARED_MARKER, REWRITTEN_BY_EVERY_MAKE,
};
use crate::base::protocol::RunRecord;
use serde::{Deserialize, Serialize};

pub const MAKE: &str = "/usr/bin/make";

/// The compile's settings: `make -jN` of a prepared kernel tree inside the
/// guest, with the host's gcc, binutils and make. The sweep parameter is the
/// job count N.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelCompileSpec {
    /// How much is compiled: `subset` (the `targets`) or `full` (vmlinux).
    #[serde(default)]
    pub scope: CompileScope,
    /// With `scope = "subset"`: Kbuild targets relative to the tree root;
    /// directories end in `/` (e.g. `kernel/locking/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    /// What make runs; default `objects` for a subset, `kbuild` for the whole
    /// kernel (see [`CompileDriver`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<CompileDriver>,
}

/// How the guest's make is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompileDriver {
    /// `make <targets>` through the kernel's top-level Makefile: Kbuild
    /// re-reads the configuration, re-checks `prepare` and walks the tree
    /// before compiling (about 70 s of a 2-vCPU TCG guest's time even when
    /// nothing needs doing), then compiles.
    Kbuild,
    /// `make -f` a makefile of the compile commands Kbuild recorded (`.cmd`
    /// files) for the targets' objects on the host: the same gcc and objtool
    /// invocations with the same flags, without Kbuild's walk. For subsets,
    /// where that walk would outweigh the compile.
    Objects,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CompileScope {
    /// A few directories: well under a minute per iteration under TCG.
    #[default]
    Subset,
    /// The whole vmlinux: for a KVM host (hours under TCG).
    Full,
}

/// What `scope = "subset"` compiles when the suite names no targets.
pub const DEFAULT_COMPILE_TARGETS: &[&str] = &["kernel/locking/"];

/// The most make jobs a step may ask for.
const MAX_JOBS: u64 = 64;

/// The guest memory a compile needs: the tree and toolchain (a few hundred
/// MB) are unpacked into guest RAM next to the compilers' working memory.
pub const MIN_MEMORY_MIB: u32 = 2048;

impl KernelCompileSpec {
    /// The driver in effect: the suite's, else by scope.
    pub fn driver(&self) -> CompileDriver {
        self.driver.unwrap_or(match self.scope {
            CompileScope::Subset => CompileDriver::Objects,
            CompileScope::Full => CompileDriver::Kbuild,
        })
    }

    /// The make targets one iteration builds.
    pub fn make_targets(&self) -> Vec<String> {
        match (self.scope, &self.targets) {
            (CompileScope::Full, _) => vec!["vmlinux".to_string()],
            (CompileScope::Subset, Some(targets)) => targets.clone(),
            (CompileScope::Subset, None) => DEFAULT_COMPILE_TARGETS
                .iter()
                .map(|t| t.to_string())
                .collect(),
        }
    }

    /// `--compile-scope`: the suite's targets and driver were chosen for
    /// its own scope; the new one takes its defaults.
    pub fn set_scope(&mut self, scope: CompileScope) {
        self.scope = scope;
        self.targets = None;
        self.driver = None;
    }
}

/// Why a subset target cannot be used, if it cannot: it must be a relative
/// path inside the tree, made of characters safe in a job file and a
/// command line.
fn check_target(target: &str) -> Result<(), String> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
    if target.is_empty() || target.starts_with('/') || !target.chars().all(safe) {
        return Err(format!(
            "kernel-compile: target {target:?} must be a relative path in the kernel tree \
             (letters, digits, _ - . /), e.g. \"kernel/locking/\""
        ));
    }
    if target.split('/').any(|part| part == "..") {
        return Err(format!(
            "kernel-compile: target {target:?} leaves the kernel tree"
        ));
    }
    Ok(())
}

/// Kbuild's short-log verbs that mean preparation work happened inside the
/// timed region: reconfiguration, host programs, changed generated headers.
const PREPARATION_VERBS: &[&str] = &["SYNC", "HOSTCC", "HOSTLD", "HOSTCXX", "UPD"];

/// What a make run's output says: objects compiled, and the first line that
/// shows preparation work (if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildLog {
    pub objects_compiled: usize,
    pub preparation: Option<String>,
}

pub fn read_build_log(output: &str) -> BuildLog {
    let mut objects_compiled = 0;
    let mut preparation = None;
    for line in output.lines() {
        let mut words = line.split_whitespace();
        let (Some(verb), Some(target)) = (words.next(), words.next()) else {
            continue;
        };
        // objtool is rebuilt by a sub-make that prints plain CC/LD lines
        // with absolute paths.
        let objtool_rebuilt = matches!(verb, "CC" | "LD" | "LINK") && target.contains("tools/");
        if PREPARATION_VERBS.contains(&verb) || objtool_rebuilt {
            preparation.get_or_insert_with(|| line.trim().to_string());
        } else if matches!(verb, "CC" | "AS") && target.ends_with(".o") {
            objects_compiled += 1;
        }
    }
    BuildLog {
        objects_compiled,
        preparation,
    }
}

impl Workload for KernelCompileSpec {
    const PARAM_LABEL: &'static str = "jobs";

    fn check(&self, params: &[u64], guest: Guest<'_>) -> Result<(), Refusal> {
        if self.scope == CompileScope::Full && self.targets.is_some() {
            return Err("kernel-compile: `targets` apply to scope = \"subset\" only \
                        (scope = \"full\" builds vmlinux)"
                .to_string()
                .into());
        }
        if self.scope == CompileScope::Full && self.driver() == CompileDriver::Objects {
            return Err(
                "kernel-compile: driver = \"objects\" compiles a subset's objects; \
                 the whole kernel (scope = \"full\") is built through Kbuild \
                 (driver = \"kbuild\"), which also links vmlinux"
                    .to_string()
                    .into(),
            );
        }
        if self.targets.as_ref().is_some_and(|t| t.is_empty()) {
            return Err("kernel-compile: targets must name at least one target"
                .to_string()
                .into());
        }
        for target in self.make_targets() {
            check_target(&target)?;
        }
        if params.iter().any(|&jobs| jobs > MAX_JOBS) {
            return Err(format!(
                "kernel-compile: params are make job counts (-jN), at most {MAX_JOBS}"
            )
            .into());
        }
        if guest.memory_mib < MIN_MEMORY_MIB {
            return Err(Refusal {
                message: format!(
                    "kernel-compile needs memory_mib of at least {MIN_MEMORY_MIB}: the kernel \
                     tree and toolchain live in guest RAM"
                ),
                suite_key: Some("memory_mib"),
                near: None,
            });
        }
        Ok(())
    }

    /// A compile's work is the tree; its parameter is the job count.
    fn scale(&mut self, _params: &mut Vec<u64>, _factor: f64) {}

    /// The untimed command run before each iteration: remove every file the
    /// previous compile made (whatever is newer than the marker), after
    /// checking that nothing in the tree is dated after the guest's clock.
    fn before(&self) -> Option<Vec<String>> {
        Some(vec![
            "/bin/busybox".into(),
            "sh".into(),
            "-c".into(),
            reset_script(GUEST_TREE),
        ])
    }

    fn command(&self, jobs: u64) -> Vec<String> {
        let mut argv = vec![MAKE.to_string(), "-C".into(), GUEST_TREE.into()];
        match self.driver() {
            CompileDriver::Objects => {
                argv.extend(["-f".to_string(), GUEST_OBJECTS_MAKEFILE.into()]);
                argv.push(format!("-j{jobs}"));
            }
            CompileDriver::Kbuild => {
                argv.push(format!("-j{jobs}"));
                argv.extend(BUILD_IDENTITY.iter().map(|v| v.to_string()));
                argv.extend(self.make_targets());
            }
        }
        argv
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
        let log = read_build_log(&record.output);
        if let Some(line) = log.preparation {
            let problem = "Kbuild redid preparation work inside the timed run; the shipped tree \
                           was not up to date in the guest";
            let number = record.output.lines().position(|l| l.trim() == line.trim());
            return Err(match number {
                Some(i) => OutputError::at_line("kernel-compile", i + 1, &line, problem),
                None => OutputError::new("kernel-compile", format!("{problem} ({line:?})")),
            });
        }
        if log.objects_compiled == 0 {
            return Err(OutputError::new(
                "kernel-compile",
                "make compiled nothing (were the previous objects removed?)",
            )
            .with_output(record.output.trim()));
        }
        let seconds = |ns: u64| ns as f64 / 1e9;
        Ok([
            ("real", record.elapsed_ns),
            ("user", record.user_ns),
            ("sys", record.sys_ns),
        ]
        .into_iter()
        .map(|(metric, ns)| Measurement {
            metric: metric.into(),
            unit: "s".into(),
            higher_is_better: false,
            value: seconds(ns),
        })
        .collect())
    }

    fn describe(&self, params: &str) -> String {
        let driver = match self.driver() {
            CompileDriver::Objects => "objects",
            CompileDriver::Kbuild => "kbuild",
        };
        format!(
            "make -j{params} {} (driver {driver}, in a prepared kernel tree)",
            self.make_targets().join(" ")
        )
    }
}

/// The shell line that brings `tree` back to its prepared state. It first
/// refuses a tree with files dated after the guest's clock: make would take
/// every object for up to date and the reset would keep them (the marker
/// compares in the future too), so every compile after the first would
/// compile nothing. Then it removes whatever is newer than the marker, but
/// the files every make rewrites.
pub fn reset_script(tree: &str) -> String {
    let bb = "/bin/busybox";
    let kept: String = REWRITTEN_BY_EVERY_MAKE
        .iter()
        .map(|name| format!(" ! -path {tree}/{name}"))
        .collect();
    format!(
        "now=$({bb} mktemp) && \
         future=$({bb} find -H {tree} -newer \"$now\" | {bb} head -n 3) && \
         {bb} rm -f \"$now\" && \
         if [ -n \"$future\" ]; then \
         echo \"kernel-compile: files of the tree are dated after the guest's clock \
         ($({bb} date -u)), so make would find nothing to do: $future\"; exit 1; fi && \
         {bb} find -H {tree} -newer {tree}/{PREPARED_MARKER} ! -type d{kept} \
         -exec {bb} rm -f {{}} +"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::Message;

    /// The results-port line of a real guest run: markbench-guest in a 6.1
    /// markers-off guest under TCG, 2 vCPUs, `make -j2 kernel/locking/`
    /// (the first of three iterations).
    const CAPTURED_LINE: &str = "MB1\trun\tkernel-compile/2\t0\t0\t104178990440\t149600000000\t29630000000\tmake: Entering directory '/root/.cache/markbench/compile-tree/215b01c079f6b338/build'\\n  GEN     Makefile\\n  DESCEND objtool\\n  CALL    /root/.cache/markbench/src/2217bacfacbe018c/linux-source-6.1/scripts/checksyscalls.sh\\n  CC      kernel/locking/mutex.o\\n  CC      kernel/locking/semaphore.o\\n  CC      kernel/locking/rwsem.o\\n  CC      kernel/locking/percpu-rwsem.o\\n  CC      kernel/locking/spinlock.o\\n  CC      kernel/locking/osq_lock.o\\n  CC      kernel/locking/qspinlock.o\\n  CC      kernel/locking/rtmutex_api.o\\n  CC      kernel/locking/qrwlock.o\\n  AR      kernel/locking/built-in.a\\nmake: Leaving directory '/root/.cache/markbench/compile-tree/215b01c079f6b338/build'\\n";

    fn spec() -> KernelCompileSpec {
        toml::from_str("").unwrap()
    }

    fn captured() -> RunRecord {
        match Message::parse_line(CAPTURED_LINE) {
            Ok(Some(Message::Run(record))) => record,
            other => panic!("the fixture is not a run line: {other:?}"),
        }
    }

    #[test]
    fn captured_run_gives_real_user_and_sys() {
        let record = captured();
        let log = read_build_log(&record.output);
        assert_eq!(log.objects_compiled, 9);
        assert_eq!(log.preparation, None);
        let m = spec().measure(&record).unwrap();
        let got: Vec<(&str, f64)> = m.iter().map(|m| (m.metric.as_str(), m.value)).collect();
        assert_eq!(
            got,
            vec![("real", 104.17899044), ("user", 149.6), ("sys", 29.63)]
        );
        assert!(m.iter().all(|m| m.unit == "s" && !m.higher_is_better));
    }

    #[test]
    fn preparation_inside_the_timed_run_is_an_error() {
        let mut record = captured();
        record.output = record.output.replace(
            "  DESCEND objtool\n",
            "  DESCEND objtool\n  SYSHDR  arch/x86/include/generated/uapi/asm/unistd_64.h\n  UPD     include/generated/timeconst.h\n",
        );
        let e = spec().measure(&record).unwrap_err().to_string();
        assert!(e.contains("UPD     include/generated/timeconst.h"), "{e}");
        let number = record
            .output
            .lines()
            .position(|l| l.contains("UPD     include/generated/timeconst.h"))
            .unwrap()
            + 1;
        assert!(
            e.starts_with(&format!("kernel-compile: line {number} of the output: ")),
            "{e}"
        );
        let mut objtool = captured();
        objtool.output = objtool.output.replace(
            "  DESCEND objtool\n",
            "  DESCEND objtool\n  HOSTCC  /x/build/tools/objtool/fixdep.o\n",
        );
        assert!(spec().measure(&objtool).unwrap_err().to_string().contains("redid preparation"));
    }

    #[test]
    fn a_run_that_compiled_nothing_is_an_error() {
        let mut record = captured();
        record.output =
            "make: Entering directory '/usr/src/linux'\n  CALL    scripts/checksyscalls.sh\n"
                .into();
        assert!(spec().measure(&record).unwrap_err().to_string().contains("compiled nothing"));
    }

    #[test]
    fn command_and_before_target_the_prepared_tree() {
        let mut spec = KernelCompileSpec {
            scope: CompileScope::Subset,
            targets: Some(vec!["kernel/locking/".into()]),
            driver: None,
        };
        assert_eq!(
            spec.command(2).join(" "),
            "/usr/bin/make -C /usr/src/linux -f /usr/src/markbench-objects.mk -j2"
        );
        spec.driver = Some(CompileDriver::Kbuild);
        assert_eq!(
            spec.command(2).join(" "),
            "/usr/bin/make -C /usr/src/linux -j2 KBUILD_BUILD_USER=markbench \
             KBUILD_BUILD_HOST=markbench kernel/locking/"
        );
        assert_eq!(
            spec.before().unwrap()[..3],
            ["/bin/busybox", "sh", "-c"].map(String::from)
        );
        assert_eq!(spec.before().unwrap()[3], reset_script(GUEST_TREE));
    }

    /// Runs the reset on `tree` with the host's busybox (the guest's shell).
    fn reset(tree: &std::path::Path) -> (bool, String) {
        let out = std::process::Command::new("/bin/busybox")
            .args(["sh", "-c", &reset_script(tree.to_str().unwrap())])
            .output()
            .expect("/bin/busybox (the guest's shell) on the host");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    fn dated(path: &std::path::Path, unix_s: i64) {
        std::fs::write(path, "x").unwrap();
        let t = filetime::FileTime::from_unix_time(unix_s, 0);
        filetime::set_file_mtime(path, t).unwrap();
    }

    #[test]
    fn the_reset_removes_what_a_compile_made_and_keeps_the_prepared_tree() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path();
        let hour_ago = chrono::Utc::now().timestamp() - 3600;
        std::fs::create_dir_all(tree.join("kernel/locking")).unwrap();
        dated(&tree.join(PREPARED_MARKER), hour_ago - 60);
        dated(&tree.join("kernel/locking/.mutex.o.cmd"), hour_ago - 120);
        dated(&tree.join("kernel/locking/mutex.o"), hour_ago);
        dated(&tree.join("kernel/locking/.mutex.o.d"), hour_ago);
        dated(&tree.join("Makefile"), hour_ago);

        let (ok, output) = reset(tree);
        assert!(ok, "{output}");
        assert!(!tree.join("kernel/locking/mutex.o").exists());
        assert!(!tree.join("kernel/locking/.mutex.o.d").exists());
        for kept in [PREPARED_MARKER, "kernel/locking/.mutex.o.cmd", "Makefile"] {
            assert!(tree.join(kept).exists(), "{kept}");
        }
    }

    #[test]
    fn the_reset_refuses_a_tree_dated_after_the_guests_clock() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path();
        let in_a_year = chrono::Utc::now().timestamp() + 365 * 86_400;
        dated(&tree.join(PREPARED_MARKER), in_a_year);
        dated(&tree.join("mutex.o"), in_a_year - 60);

        let (ok, output) = reset(tree);
        assert!(!ok, "{output}");
        assert!(
            output.contains("dated after the guest's clock") && output.contains(PREPARED_MARKER),
            "{output}"
        );
        // Nothing is removed from a tree that cannot be reset.
        assert!(tree.join("mutex.o").exists());
    }
}
