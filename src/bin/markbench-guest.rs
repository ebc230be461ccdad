//! The markbench guest agent: PID 1 of every benchmark boot.
//!
//! It mounts what the workloads need, reads the job the host appended to the
//! initramfs (`/job`), runs each command with the tools shipped in the image
//! (busybox, hackbench, ping, …), times every run with the guest's
//! CLOCK_MONOTONIC (`std::time::Instant`), reports each run as one line on the
//! results port (the second serial port: `/dev/ttyS1` on x86-64,
//! `/dev/ttyAMA1` on arm64) and powers the machine off.
//!
//! It is built static with `std` only (no crates), so markbench's build script
//! compiles it with a single `rustc` call and markbench embeds it, to drop
//! it into an initramfs as `/init`. The arm64 agent is built when an arm64
//! image is first needed, with Debian's rustc (1.63, the one with an arm64
//! std in the archive): this file and `protocol.rs` keep to what 1.63
//! compiles (no `let … else`, no `is_ok_and`; `process_group` only where
//! the arm64 build configures it out).

#[path = "../base/protocol.rs"]
#[allow(dead_code)]
mod protocol;

use protocol::{Directive, Message, RunRecord};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

const BUSYBOX: &str = "/bin/busybox";
/// The second serial port: a 16550 UART on x86-64's PC machine, a PL011
/// on arm64's `virt` machine.
#[cfg(target_arch = "x86_64")]
const RESULTS_PORT: &str = "/dev/ttyS1";
#[cfg(target_arch = "aarch64")]
const RESULTS_PORT: &str = "/dev/ttyAMA1";
const JOB_FILE: &str = "/job";
/// USER_HZ: the unit of the times in /proc/<pid>/stat; 100 on every x86
/// and arm64 Linux.
const USER_HZ: u64 = 100;

fn main() {
    // Its last act is `poweroff -f`: started by hand on a host (it is a
    // binary of the package, so `cargo install` may put it on PATH), as root
    // that would power the host off.
    if std::process::id() != 1 {
        eprintln!(
            "markbench-guest: this is the init (PID 1) of markbench's guest machines; \
             it does not run on a host"
        );
        std::process::exit(2);
    }
    let mut results = open_results_port();
    if let Err(message) = run_agent(&mut results) {
        send(&mut results, &Message::Error { message });
    }
    send(&mut results, &Message::Done);
    let _ = results.flush();
    power_off();
}

/// Runs a busybox applet with inherited stdio: the first calls mount /dev,
/// and until then there is no /dev/null to redirect to.
fn busybox(args: &[&str]) -> std::io::Result<std::process::ExitStatus> {
    Command::new(BUSYBOX).args(args).status()
}

fn mount_filesystems() {
    for dir in ["/proc", "/sys", "/dev", "/tmp", "/run"] {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = busybox(&["mount", "-t", "devtmpfs", "devtmpfs", "/dev"]);
    let _ = busybox(&["mount", "-t", "proc", "proc", "/proc"]);
    let _ = busybox(&["mount", "-t", "sysfs", "sysfs", "/sys"]);
    // An archive appended to the initrd may carry files under /tmp (the
    // kernel-compile tree lives at its host path, which is under /tmp when
    // the cache is): a tmpfs mounted there would hide them. The initramfs
    // is writable memory already, so /tmp needs a mount only to be empty.
    if empty_dir("/tmp") {
        let _ = busybox(&["mount", "-t", "tmpfs", "tmpfs", "/tmp"]);
    }
    let _ = busybox(&["mount", "-t", "tmpfs", "tmpfs", "/run"]);
}

fn empty_dir(path: &str) -> bool {
    std::fs::read_dir(path)
        .map(|mut entries| entries.next().is_none())
        .unwrap_or(false)
}

fn open_results_port() -> Box<dyn Write> {
    mount_filesystems();
    match OpenOptions::new().write(true).open(RESULTS_PORT) {
        Ok(port) => {
            // Raw mode: no newline translation, no echo, so lines arrive intact.
            let _ = busybox(&["stty", "-F", RESULTS_PORT, "raw", "-echo", "115200"]);
            Box::new(port)
        }
        // Without the results port nothing can be reported; the console is the
        // only place left to say why, and the host will see no `done` line.
        Err(err) => {
            eprintln!("markbench-guest: cannot open {RESULTS_PORT}: {err}");
            Box::new(std::io::stderr())
        }
    }
}

fn send(port: &mut Box<dyn Write>, message: &Message) {
    let _ = writeln!(port, "{}", message.to_line());
    let _ = port.flush();
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn run_agent(results: &mut Box<dyn Write>) -> Result<(), String> {
    send(
        results,
        &Message::Hello {
            kernel_release: read_trimmed("/proc/sys/kernel/osrelease"),
            kernel_version: read_trimmed("/proc/sys/kernel/version"),
            online_cpus: read_trimmed("/sys/devices/system/cpu/online"),
            cmdline: read_trimmed("/proc/cmdline"),
        },
    );
    let job = std::fs::read_to_string(JOB_FILE).map_err(|e| format!("reading {JOB_FILE}: {e}"))?;
    let mut directives = Vec::new();
    for (number, line) in job.lines().enumerate() {
        match Directive::parse_line(line) {
            Ok(Some(d)) => directives.push(d),
            Ok(None) => {}
            Err(e) => return Err(format!("{JOB_FILE}:{}: {e}", number + 1)),
        }
    }
    std::env::set_var("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    std::env::set_var("HOME", "/tmp");
    std::env::set_current_dir("/tmp").map_err(|e| format!("cd /tmp: {e}"))?;
    let mut before: std::collections::HashMap<String, Vec<String>> = Default::default();
    for directive in directives {
        match directive {
            Directive::Before { id, argv } => {
                before.insert(id, argv);
            }
            Directive::Setup { argv } => {
                let (status, output, _) =
                    execute(&argv, false).map_err(|e| format!("{argv:?}: {e}"))?;
                send(results, &Message::Setup { status, output });
                if status != 0 {
                    return Err(format!("setup command {argv:?} exited with {status}"));
                }
            }
            Directive::Run {
                id,
                iterations,
                argv,
            } => {
                for iteration in 0..iterations {
                    if let Some(prepare) = before.get(&id) {
                        let (status, output, _) =
                            execute(prepare, false).map_err(|e| format!("{prepare:?}: {e}"))?;
                        if status != 0 {
                            return Err(format!(
                                "{id}: untimed preparation {prepare:?} exited with {status}: {output}"
                            ));
                        }
                    }
                    let record = timed_run(&id, iteration, &argv)?;
                    let failed = record.status != 0;
                    send(results, &Message::Run(record));
                    if failed {
                        // Later iterations of a failing command would fail the
                        // same way; stop the boot and let the host record why.
                        return Err(format!("{id}: command {argv:?} failed"));
                    }
                }
            }
            Directive::WhichVcpu { rounds } => {
                let cpus = online_cpus()?;
                for _ in 0..rounds {
                    for &cpu in &cpus {
                        pin_to(cpu)?;
                        mark_which_vcpu(cpu);
                    }
                }
            }
            Directive::Sysrq { key } => {
                let mut trigger = File::create("/proc/sysrq-trigger")
                    .map_err(|e| format!("opening /proc/sysrq-trigger: {e}"))?;
                let _ = trigger.write_all(&[key as u8]);
            }
        }
    }
    Ok(())
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

// libc is linked anyway (the agent is a static glibc program); these
// calls are all the agent needs beyond std.
extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    #[cfg(target_arch = "aarch64")]
    fn setpgid(pid: i32, pgid: i32) -> i32;
}
const SIGKILL: i32 = 9;
const WNOHANG: i32 = 1;

/// Reaps every exited child: as PID 1 the agent inherits whatever a command
/// orphaned, and unreaped zombies would keep their process ids taken.
fn reap_zombies() {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid out-pointer; no other thread waits.
        if unsafe { waitpid(-1, &mut status, WNOHANG) } <= 0 {
            break;
        }
    }
}

/// Whether any process of the group is left (zombies the agent inherited
/// are reaped first, so they do not count).
fn group_alive(group: i32) -> bool {
    reap_zombies();
    // SAFETY: signal 0 only checks that the group exists.
    unsafe { kill(-group, 0) == 0 }
}

/// The profile markers: instructions that do nothing on any CPU, and that
/// markbench's TCG plugin recognises by their bytes to start and stop
/// counting instructions. On x86-64 seven-byte NOPs, `nopl 0x4d4253NN(%rax)`;
/// on arm64 `movk xzr, #0x4dNN, lsl #48`, a move into the zero register,
/// which the architecture discards (docs/cycle-model.md says why that
/// instruction). NN is the marker's code: 01 starts, 02 ends, 04 asks which
/// vCPU runs it.
#[cfg(target_arch = "x86_64")]
macro_rules! marker {
    (start) => {
        ".byte 0x0f, 0x1f, 0x80, 0x01, 0x53, 0x42, 0x4d"
    };
    (end) => {
        ".byte 0x0f, 0x1f, 0x80, 0x02, 0x53, 0x42, 0x4d"
    };
    (which_vcpu) => {
        ".byte 0x0f, 0x1f, 0x80, 0x04, 0x53, 0x42, 0x4d"
    };
}
#[cfg(target_arch = "aarch64")]
macro_rules! marker {
    (start) => {
        ".inst 0xf2e9a03f"
    };
    (end) => {
        ".inst 0xf2e9a05f"
    };
    (which_vcpu) => {
        ".inst 0xf2e9a09f"
    };
}

#[inline(always)]
fn mark_start() {
    // SAFETY: a NOP: no memory, stack or flags touched.
    unsafe { std::arch::asm!(marker!(start), options(nomem, nostack, preserves_flags)) };
}

#[inline(always)]
fn mark_end() {
    // SAFETY: as mark_start.
    unsafe { std::arch::asm!(marker!(end), options(nomem, nostack, preserves_flags)) };
}

/// Where the which-vCPU marker's store goes.
static WHICH_VCPU_STORE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The which-vCPU store's address. An `AtomicU64` has the layout of a
/// `u64` and mutability inside, so writing through it is sound (a cast,
/// because `AtomicU64::as_ptr` is newer than the arm64 agent's rustc).
fn which_vcpu_slot() -> *mut u64 {
    &WHICH_VCPU_STORE as *const std::sync::atomic::AtomicU64 as *mut u64
}

/// The marker whose callback tells the plugin which vCPU runs it, and right
/// after it a store (of the CPU's number) whose memory callback the plugin
/// checks too, since the cycle model's caches are fed by memory callbacks:
/// one function for every CPU, so the block holding them is translated
/// once and run by all.
#[inline(never)]
fn mark_which_vcpu(cpu: u32) {
    // SAFETY: the marker is a NOP; the store writes a static of the agent's
    // own, eight bytes, aligned; no stack or flags touched.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!(
            marker!(which_vcpu),
            "mov qword ptr [{slot}], {cpu}",
            slot = in(reg) which_vcpu_slot(),
            cpu = in(reg) u64::from(cpu),
            options(nostack, preserves_flags)
        )
    };
    // SAFETY: as on x86-64.
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!(
            marker!(which_vcpu),
            "str {cpu}, [{slot}]",
            slot = in(reg) which_vcpu_slot(),
            cpu = in(reg) u64::from(cpu),
            options(nostack, preserves_flags)
        )
    };
}

extern "C" {
    fn sched_setaffinity(pid: i32, size: usize, mask: *const u64) -> i32;
    fn sched_getcpu() -> i32;
}

/// The online CPUs, from `/sys/devices/system/cpu/online` (`0-3,5`).
fn online_cpus() -> Result<Vec<u32>, String> {
    let text = read_trimmed("/sys/devices/system/cpu/online");
    let mut cpus = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let parse = |s: &str| {
            s.parse::<u32>()
                .map_err(|_| format!("/sys/devices/system/cpu/online: {text:?}"))
        };
        cpus.extend(parse(a)?..=parse(b)?);
    }
    Ok(cpus)
}

/// Moves the agent to `cpu` and checks the kernel runs it there.
fn pin_to(cpu: u32) -> Result<(), String> {
    let mut mask = [0u64; 16];
    let (word, bit) = ((cpu / 64) as usize, cpu % 64);
    if word >= mask.len() {
        return Err(format!("CPU {cpu} is beyond the agent's CPU mask"));
    }
    mask[word] = 1 << bit;
    // SAFETY: the mask is a live array of the size given.
    if unsafe { sched_setaffinity(0, std::mem::size_of_val(&mask), mask.as_ptr()) } != 0 {
        return Err(format!(
            "pinning to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: no arguments.
    let now = unsafe { sched_getcpu() };
    if now != cpu as i32 {
        return Err(format!(
            "pinned to CPU {cpu}, the kernel runs the agent on {now}"
        ));
    }
    Ok(())
}

/// Reads a child's pipe to its end on a thread of its own, so stdout and
/// stderr cannot block each other.
fn drain<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Runs a command in a process group of its own and returns its exit code,
/// its output (stdout then stderr) and the time until it exited.
///
/// When it exits while processes of its group still run (hackbench's parent
/// dies on a failed fork, leaving its children waiting for a start signal
/// that never comes), they are killed and the output says so: otherwise they
/// would hold the output pipes open and the boot would hang until its
/// deadline with nothing to show why.
///
/// A timed command runs between the profile markers, so a profiled boot
/// counts exactly what the run's time covers.
fn execute(argv: &[String], timed: bool) -> std::io::Result<(i32, String, std::time::Duration)> {
    use std::os::unix::process::CommandExt;
    let start = Instant::now();
    if timed {
        mark_start();
    }
    // Each command leads a process group of its own, so that a timeout
    // kills what it started too. x86-64 keeps std's `process_group`, so its
    // timed regions run the instructions they always ran; the arm64 agent's
    // rustc (1.63) is older than that method, and makes the same call
    // between fork and exec itself. (A statement configured out is parsed,
    // never resolved, so 1.63 compiles this file.)
    #[cfg(not(target_arch = "aarch64"))]
    let spawned = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    #[cfg(target_arch = "aarch64")]
    let spawned = {
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: setpgid is async-signal-safe, the one call between fork
        // and exec.
        unsafe {
            command.pre_exec(|| {
                if setpgid(0, 0) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            })
        };
        command.spawn()
    };
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            if timed {
                mark_end();
            }
            return Err(e);
        }
    };
    let group = child.id() as i32;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = child.wait();
    if timed {
        mark_end();
    }
    let status = status?;
    let elapsed = start.elapsed();
    let leftovers = group_alive(group);
    if leftovers {
        // SAFETY: kills the command's own process group, nothing else.
        unsafe { kill(-group, SIGKILL) };
        let killed_at = Instant::now();
        while group_alive(group) && killed_at.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    let mut text = String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned();
    text.push_str(&String::from_utf8_lossy(&stderr.join().unwrap_or_default()));
    let mut code = exit_code(status);
    if leftovers {
        text.push_str(
            "\nmarkbench-guest: the command exited but processes it started were still \
             running (killed): the run is not a complete one\n",
        );
        if code == 0 {
            code = 125;
        }
    }
    Ok((code, text, elapsed))
}

/// CPU time (user, system) of all waited-for children of this process, in ns.
fn children_cpu_ns() -> (u64, u64) {
    let stat = read_trimmed("/proc/self/stat");
    // The command name (field 2) may hold spaces; fields after ')' are fixed.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After ')': state is index 0, so cutime (field 16) is index 13, cstime 14.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let to_ns = |t: u64| t * (1_000_000_000 / USER_HZ);
    (to_ns(ticks(13)), to_ns(ticks(14)))
}

fn timed_run(id: &str, iteration: u32, argv: &[String]) -> Result<RunRecord, String> {
    let (user_before, sys_before) = children_cpu_ns();
    let (status, output, elapsed) =
        execute(argv, true).map_err(|e| format!("starting {argv:?}: {e}"))?;
    let (user_after, sys_after) = children_cpu_ns();
    Ok(RunRecord {
        id: id.to_string(),
        iteration,
        status,
        elapsed_ns: elapsed.as_nanos() as u64,
        user_ns: user_after.saturating_sub(user_before),
        sys_ns: sys_after.saturating_sub(sys_before),
        output,
    })
}

fn power_off() -> ! {
    let _ = busybox(&["sync"]);
    let _ = busybox(&["poweroff", "-f"]);
    // If poweroff failed, exiting PID 1 panics the kernel, and `panic=-1`
    // with QEMU's `-no-reboot` ends the VM all the same.
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::empty_dir;

    #[test]
    fn a_tmp_holding_files_of_the_initrd_is_not_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        assert!(empty_dir(path));
        std::fs::create_dir(dir.path().join("coldci")).unwrap();
        assert!(!empty_dir(path), "a tmpfs here would hide the tree");
        assert!(!empty_dir("/nonexistent/markbench"));
    }
}
