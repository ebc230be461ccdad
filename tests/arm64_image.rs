//! The arm64 guest image, built for real: Debian's arm64 packages
//! downloaded and unpacked, the agent built with Debian's rustc, the
//! programs' loader and libraries found from their ELF headers. Skipped,
//! saying so, where the host lacks what an arm64 guest needs (`markbench
//! setup --arch arm64` installs it); where it has it, every failure fails.
//!
//! With `MARKBENCH_TEST_ARM64_KERNEL` naming an arm64 kernel `Image`, the
//! image is also booted under qemu-system-aarch64 and must run hackbench
//! through the agent.

use markbench::base::arch::Arch;
use markbench::base::protocol::{Directive, Message};
use markbench::guest::images::initramfs;
use std::path::Path;
use std::process::Command;

fn cpio_names(path: &Path) -> Vec<String> {
    let out = Command::new("cpio")
        .args(["-t", "--quiet", "-F"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "cpio -t {}", path.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_arm64_image_holds_a_static_arm64_agent_and_the_programs_with_their_libraries() {
    if let Err(e) = markbench::base::prereq::check_arch(Arch::Arm64) {
        eprintln!("skipped: {e:#}");
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    // This test binary has no other test: no one else reads the variable.
    std::env::set_var("MARKBENCH_CACHE", cache.path());
    let base = initramfs::ensure_base_for(Arch::Arm64).unwrap();
    let names = cpio_names(&base.path);
    for wanted in [
        "init",
        "bin/busybox",
        "bin/sh",
        "usr/bin/hackbench",
        "usr/bin/ping",
        "lib/ld-linux-aarch64.so.1",
        "lib/aarch64-linux-gnu/libc.so.6",
        "lib/aarch64-linux-gnu/libpthread.so.0",
        "usr/lib/aarch64-linux-gnu/libunistring.so.2",
        "lib/aarch64-linux-gnu/libcap.so.2",
        "usr/lib/aarch64-linux-gnu/libidn2.so.0",
    ] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
    }
    // Built again: the cached image, the same key.
    let again = initramfs::ensure_base_for(Arch::Arm64).unwrap();
    assert_eq!(
        (again.path.clone(), again.key.clone()),
        (base.path.clone(), base.key.clone())
    );

    let Some(kernel) = std::env::var_os("MARKBENCH_TEST_ARM64_KERNEL") else {
        eprintln!("not booted: MARKBENCH_TEST_ARM64_KERNEL names no arm64 kernel Image");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let initrd = work.path().join("initrd.cpio");
    let argv = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let job = [
        Directive::Setup {
            argv: argv(&["/bin/busybox", "ip", "link", "set", "lo", "up"]),
        },
        Directive::Run {
            id: "hackbench".into(),
            iterations: 2,
            argv: argv(&["/usr/bin/hackbench", "-g", "1", "-l", "10"]),
        },
        Directive::Run {
            id: "ping".into(),
            iterations: 1,
            argv: argv(&["/usr/bin/ping", "-c", "2", "-i", "0.2", "127.0.0.1"]),
        },
        // Pins the agent to each CPU in turn and checks the kernel runs it there.
        Directive::WhichVcpu { rounds: 1 },
    ];
    initramfs::write_boot_initrd(&base, &job, &initrd).unwrap();
    let console = work.path().join("console.log");
    let out = Command::new("timeout")
        .arg("600")
        .args([
            "qemu-system-aarch64",
            "-M",
            "virt",
            "-cpu",
            "neoverse-n1",
            "-m",
            "512",
        ])
        .args(["-smp", "2", "-accel", "tcg,thread=single"])
        .args(["-icount", "shift=4,align=off,sleep=off"])
        .args(["-nographic", "-no-reboot", "-kernel"])
        .arg(&kernel)
        .arg("-initrd")
        .arg(&initrd)
        .args(["-append", "console=ttyAMA0 rdinit=/init panic=-1"])
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .args(["-serial", "stdio", "-monitor", "none"])
        .output()
        .unwrap();
    let results = String::from_utf8_lossy(&out.stdout);
    let messages: Vec<Message> = results
        .lines()
        .filter_map(|l| Message::parse_line(l).unwrap())
        .collect();
    let console = std::fs::read_to_string(&console).unwrap_or_default();
    let runs: Vec<_> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Run(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(runs.len(), 3, "results: {results}\nconsole: {console}");
    assert!(runs.iter().all(|r| r.status == 0), "{runs:?}");
    assert!(
        matches!(messages.last(), Some(Message::Done)),
        "{messages:?}"
    );
}
