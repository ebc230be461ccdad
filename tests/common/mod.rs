//! What the tests that drive the run loop with the fake guest share: the
//! suite they run, stand-in images, and the accelerator decision.

#![allow(dead_code)]

use markbench::guest::images::initramfs::{BaseImage, ImageFile, ImageRecord};
use markbench::guest::images::kernel::KernelImage;
use markbench::guest::images::kernel::KernelSource;
use markbench::guest::images::size::{self, KernelSizes, ObjectSize, SizeComparison, SizeRecord};
use markbench::jobs::compare::{Overrides, Resolved};
use markbench::record::RunMeta;
use markbench::stages::run_images::Images;
use markbench::stages::suite::{FragmentLookup, Suite};
use markbench::stages::vm::accel::{AccelDecision, TimingDecision};
use markbench::stages::vm::qemu::QemuBinary;
use markbench::stages::vm::Accel;
use markbench::stages::vm::Machine;
use markbench::stages::vm::Runner;
use std::path::{Path, PathBuf};

/// Two CPU counts, two workloads; the "on" variant boots with `slow` in its
/// command line, which the fake guest reads as its cue to be slower.
pub const SUITE: &str = r#"
name = "fake"
boots = 3
iterations = 2
warmup = 1
cpus = [1, 2]
seed = 5
[[variant]]
name = "off"
kernel = "markers-off"
[[variant]]
name = "on"
kernel = "markers-on"
cmdline = "slow"
[[workload]]
kind = "hackbench"
params = [2, 8]
[[workload]]
kind = "ping-flood"
params = [2000]
"#;

/// Two CPU counts, one point each; the "on" variant is 2% slower. With
/// ±1% of noise a boot, one measured run a boot and a target of ±1%, the
/// points need more than the two planned boots a side but far fewer than
/// the cap of 16 a side.
pub const PRECISE: &str = r#"
name = "precise"
boots = 2
iterations = 2
warmup = 1
cpus = [1, 2]
seed = 11
precision = 1.0
[[variant]]
name = "off"
kernel = "markers-off"
[[variant]]
name = "on"
kernel = "markers-on"
cmdline = "slow"
[[workload]]
kind = "hackbench"
params = [2]
"#;

pub fn load(dir: &Path, text: &str) -> Suite {
    let path = dir.join("suite.toml");
    std::fs::write(&path, text).unwrap();
    Suite::load(
        &path,
        &FragmentLookup::BesideSuite {
            cwd: env!("CARGO_MANIFEST_DIR").into(),
        },
    )
    .unwrap()
}

pub fn run_dir(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    dir
}

/// Images that only the fake guest accepts: no kernel was built.
pub fn images(dir: &Path) -> Images {
    let base = dir.join("base.cpio");
    std::fs::write(&base, b"not really an initramfs").unwrap();
    let kernel = |name: &str| KernelImage {
        name: name.into(),
        key: format!("{name}-key-0123456789abcdef").into(),
        dir: dir.into(),
        bzimage: dir.join(format!("{name}.bzImage")),
        config: dir.join("config"),
        build_log: dir.join("build.log"),
        source_identity: "test".into(),
        compiler: "gcc".into(),
        fragment_sha256: Default::default(),
        config_sha256: "0".into(),
        build_seconds: 0.0,
        base: String::new(),
        source_files_rebuilt: None,
        ..Default::default()
    };
    Images {
        kernels: vec![kernel("markers-off"), kernel("markers-on")],
        fragments: vec![Vec::new(), Vec::new()],
        base: BaseImage {
            path: base,
            key: "k".into(),
            files: Vec::new(),
        },
        guest: ImageRecord {
            sha256: "5eed".repeat(16).into(),
            files: vec![ImageFile {
                path: "/usr/bin/hackbench".into(),
                kind: "program".into(),
                package: "rt-tests".into(),
                version: "2.4-1".into(),
                sha256: "4ac6".repeat(16).into(),
            }],
        },
        diffconfig: " FTRACE n -> y\n".into(),
        source_diff: String::new(),
        sizes: captured_sizes(["off", "on"]),
        extra_archives: Vec::new(),
    }
}

/// A run of `suite` as it is, or already resolved with overrides: what the
/// run loop takes.
pub trait AsRun {
    fn as_run(&self) -> Resolved;
}

impl AsRun for Suite {
    fn as_run(&self) -> Resolved {
        resolved_with(self, Overrides::default())
    }
}

impl AsRun for Resolved {
    fn as_run(&self) -> Resolved {
        self.clone()
    }
}

/// `suite` with `overrides`, planned (no kernel source is read).
pub fn resolved_with(suite: &Suite, overrides: Overrides) -> Resolved {
    Resolved::planned(
        suite,
        overrides,
        KernelSource::Tarball("/nonexistent".into()),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `run` into `dir` with the fake guest (or another runner), resuming
/// the interrupted run `resume` describes when given.
pub fn execute(
    run: &impl AsRun,
    images: &Images,
    machine: &Machine,
    runner: &mut dyn Runner,
    dir: &Path,
    resume: Option<RunMeta>,
) -> markbench::base::error::Result<RunMeta> {
    let mut run = run.as_run();
    if let Some(meta) = resume {
        run = run.resuming(dir, meta);
    }
    markbench::jobs::compare::execute(&run, images, machine, runner, dir)
}

/// What the fake guests boot with: TCG and wall time, as decided for a test.
pub fn machine() -> Machine {
    Machine {
        qemu: QemuBinary {
            path: "/usr/bin/qemu-system-x86_64".into(),
            version: "QEMU emulator version 10.0.2".into(),
            sha256: "test".into(),
        },
        accel: AccelDecision {
            accel: Accel::Tcg,
            reason: "test".into(),
        },
        timing: TimingDecision::wall("test"),
        smp: None,
    }
}

/// A size record built from tool output captured from the real markers-off
/// and markers-on kernels (`tests/fixtures/sizes/`), through markbench's own
/// parsers, for the kernels named `variants` (baseline first).
pub fn captured_sizes(variants: [&str; 2]) -> SizeRecord {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sizes");
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
    };
    let bzimage_bytes: Vec<u64> = read("bzImage.bytes.txt")
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    let object = "kernel/trace/ring_buffer.o".to_string();
    let kernels = ["markers-off", "markers-on"]
        .iter()
        .enumerate()
        .map(|(i, kernel)| {
            let vmlinux = size::parse_berkeley(&read(&format!("{kernel}.size.txt"))).unwrap()[0].1;
            let ring_buffer =
                std::fs::read_to_string(dir.join(format!("{kernel}.ring_buffer.size.txt")))
                    .ok()
                    .map(|text| size::parse_berkeley(&text).unwrap()[0].1);
            KernelSizes {
                variant: variants[i].to_string(),
                kernel: kernel.to_string(),
                vmlinux: Some(vmlinux),
                bzimage_bytes: Some(bzimage_bytes[i]),
                sections: size::parse_sysv(&read(&format!("{kernel}.size-A.txt"))).unwrap(),
                tables: size::parse_nm_tables(&read(&format!("{kernel}.nm-start-stop.txt")))
                    .unwrap(),
                objects: vec![ObjectSize {
                    path: object.clone(),
                    size: ring_buffer,
                }],
                padding: None,
                errors: Vec::new(),
            }
        })
        .collect();
    SizeRecord {
        objects: vec![object],
        kernels,
        comparisons: vec![SizeComparison {
            baseline: variants[0].to_string(),
            candidate: variants[1].to_string(),
            bloat: Some(size::parse_bloat_o_meter(&read("bloat-o-meter.txt")).unwrap()),
            bloat_error: None,
        }],
    }
}
