//! The real runner: one `qemu-system-x86_64` (or, for arm64 guests,
//! `qemu-system-aarch64 -M virt`) process per boot.
//!
//! No network device, no disk, no shared folder: `-nodefaults` and nothing
//! added but two serial ports, so nothing of the host is writable from the
//! guest. The first (ttyS0, ttyAMA0 on arm64: the kernel console) goes to a
//! log file; the second (ttyS1, ttyAMA1) carries the agent's result lines on
//! QEMU's stdout, read line by line as they come.

use super::{BootEnd, BootOutcome, BootRequest, Runner};
use crate::base::arch::Arch;
use crate::base::error::InputError;
use crate::base::protocol::Message;
use crate::guest::images::kernel::base_cmdline;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const QEMU: &str = "qemu-system-x86_64";

pub use crate::record::ICOUNT_RTC_BASE;

/// The QEMU binary a run boots its guests with: the one a suite or
/// `--qemu` names, else the guest architecture's (`qemu-system-x86_64`,
/// `qemu-system-aarch64`) on PATH. Its content hash keys
/// the verdicts remembered about it (whether SMP guests run under icount),
/// so an upgrade in place is tried again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QemuBinary {
    pub path: PathBuf,
    /// First line of `--version`, e.g. `QEMU emulator version 10.0.2 (Debian …)`.
    pub version: String,
    pub sha256: crate::base::sha256::Digest,
}

impl QemuBinary {
    /// The binary at `explicit`, or the first `qemu-system-x86_64` on PATH.
    pub fn locate(explicit: Option<&Path>) -> crate::base::error::Result<QemuBinary> {
        QemuBinary::locate_for(explicit, Arch::X86_64)
    }

    /// The binary at `explicit`, or the first of `arch`'s system emulator
    /// on PATH.
    pub fn locate_for(
        explicit: Option<&Path>,
        arch: Arch,
    ) -> crate::base::error::Result<QemuBinary> {
        let wanted = arch.qemu_binary();
        let path = match explicit {
            Some(p) if p.is_file() => p.to_path_buf(),
            Some(p) => {
                return Err(InputError::new(format!(
                    "QEMU binary {} does not exist (give the path of a {wanted})",
                    p.display()
                ))
                .into())
            }
            None => crate::base::prereq::on_path(wanted).ok_or_else(|| {
                InputError::new(format!(
                    "{wanted} is not on PATH; run `markbench setup{}` (or name a binary with \
                     --qemu PATH)",
                    if arch.is_default() {
                        String::new()
                    } else {
                        format!(" --arch {arch}")
                    }
                ))
            })?,
        };
        let bytes = std::fs::read(&path).map_err(|e| {
            crate::base::input_file::io_failure(e, format_args!("reading {}", path.display()))
        })?;
        let version = Command::new(&path)
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .map(str::to_string)
            })
            .ok_or_else(|| {
                InputError::in_file(&path, format!("`--version` failed; is it a {wanted}?"))
            })?;
        Ok(QemuBinary {
            path,
            version,
            sha256: crate::guest::images::key_of(&[("qemu", &bytes)]).into(),
        })
    }
}

/// Boots each request with one process of its QEMU binary.
#[derive(Debug)]
pub struct QemuRunner {
    pub binary: PathBuf,
}

impl QemuRunner {
    pub fn new(qemu: &QemuBinary) -> QemuRunner {
        QemuRunner {
            binary: qemu.path.clone(),
        }
    }
}

/// The QEMU command line for a request.
pub fn qemu_args(r: &BootRequest) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "-nodefaults".into(),
        "-no-user-config".into(),
        "-display".into(),
        "none".into(),
        "-no-reboot".into(),
    ];
    if let Some(machine) = r.arch.machine() {
        args.extend(["-M".into(), machine.into()]);
    }
    args.extend([
        "-accel".into(),
        match r.rr_turn {
            Some(turn) => format!("{},rr-turn={turn}", r.accel.as_str()),
            None => r.accel.as_str().into(),
        },
        "-cpu".into(),
        r.arch.guest_cpu().into(),
        "-smp".into(),
        r.cpus.to_string(),
        "-m".into(),
        r.memory_mib.to_string(),
        "-kernel".into(),
        r.kernel.display().to_string(),
        "-initrd".into(),
        r.initrd.display().to_string(),
        "-append".into(),
        format!("{} {}", base_cmdline(r.arch), r.extra_cmdline)
            .trim()
            .to_string(),
        "-serial".into(),
        format!("file:{}", r.console_log.display()),
        "-chardev".into(),
        "stdio,id=results,signal=off".into(),
        "-serial".into(),
        "chardev:results".into(),
        "-monitor".into(),
        "none".into(),
    ]);
    if let Some(shift) = r.icount_shift {
        // sleep=off: idle guest time jumps ahead instead of waiting for the
        // host (sleep=on lets host time into every idle period, and align=on
        // needs it). The RTC runs on guest time from a fixed start, so the
        // guest's wall clock does not depend on when the boot began either.
        args.extend([
            "-icount".into(),
            format!("shift={shift},sleep=off"),
            "-rtc".into(),
            format!("base={ICOUNT_RTC_BASE},clock=vm"),
        ]);
    }
    if let Some(seed) = r.guest_seed {
        args.extend(["-seed".into(), seed.to_string()]);
    }
    if let Some(plugin) = &r.plugin {
        // QEMU's option syntax separates with commas; a doubled one is literal.
        let escape = |p: &Path| p.display().to_string().replace(',', ",,");
        args.extend([
            "-plugin".into(),
            format!(
                "file={},out={}{}",
                escape(&plugin.library),
                escape(&plugin.output),
                plugin
                    .args
                    .iter()
                    .map(|a| format!(",{}", a.replace(',', ",,")))
                    .collect::<String>()
            ),
        ]);
    }
    args
}

/// What watching a boot saw, besides QEMU's stderr and the console.
struct Watched {
    interrupted: bool,
    timed_out: bool,
    /// The agent said `done`.
    done: bool,
    agent_error: Option<String>,
    status: Option<std::process::ExitStatus>,
}

/// How a boot ended, from what watching it saw: the first of Ctrl-C, the
/// deadline, a panic on the console, the agent's error, the agent's
/// `done`, a plugin QEMU could not load, QEMU's own failure, or an end
/// nobody announced.
fn ending(r: &BootRequest, seen: Watched, qemu_stderr: &str, console: &str) -> BootEnd {
    let Watched {
        interrupted,
        timed_out,
        done,
        agent_error,
        status,
    } = seen;
    // Ctrl-C on a terminal reaches QEMU too, which may exit before we notice.
    if interrupted || super::interrupted() {
        BootEnd::Interrupted
    } else if timed_out {
        BootEnd::TimedOut {
            after_s: r.deadline.as_secs(),
        }
    } else if let Some(panic) = find_panic(console) {
        BootEnd::KernelPanic { detail: panic }
    } else if let Some(message) = agent_error {
        BootEnd::AgentError { message }
    } else if done {
        BootEnd::Completed
    } else if let Some(plugin) = r.plugin.as_ref().filter(|p| {
        // QEMU names the library it could not load.
        qemu_stderr.contains(&*p.library.to_string_lossy())
    }) {
        BootEnd::PluginFailed {
            detail: format!("{}: {}", plugin.library.display(), qemu_stderr.trim()),
        }
    } else if status.is_some_and(|s| !s.success()) || !qemu_stderr.trim().is_empty() {
        BootEnd::QemuFailed {
            detail: format!(
                "exit {}: {}",
                status.map_or("unknown".into(), |s| s.to_string()),
                qemu_stderr.trim()
            ),
        }
    } else if console.trim().is_empty() {
        // Firmware that finds no kernel to start, or an image that is not
        // one, leaves the serial console empty: name what was booted.
        BootEnd::Vanished {
            detail: format!(
                "the guest printed nothing on its console: is {} a kernel image?",
                r.kernel.display()
            ),
        }
    } else {
        BootEnd::Vanished {
            detail: format!("console ends with: {}", console_tail(console, 3)),
        }
    }
}

/// Looks for a panic in the console log; returns the panic line.
pub fn find_panic(console: &str) -> Option<String> {
    console
        .lines()
        .find(|l| l.contains("Kernel panic - not syncing"))
        .map(|l| l.trim().to_string())
}

/// Last lines of the console, for failure reports.
pub fn console_tail(console: &str, lines: usize) -> String {
    let all: Vec<&str> = console.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Starts QEMU for one boot, bound to the boot's host CPU if it has one,
/// and killed by the kernel if markbench dies (SIGKILL, OOM): a guest must
/// not run on unwatched.
fn spawn_qemu(binary: &Path, r: &BootRequest) -> std::io::Result<std::process::Child> {
    let mut command = Command::new(binary);
    // The CPU set is built here, before the fork: pre_exec may not allocate.
    let host_cpu = r.host_cpu.map(|cpu| {
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET only sets a bit of it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut set) };
        set
    });
    // SAFETY: prctl and sched_setaffinity are async-signal-safe and
    // touch no memory of ours but the set built above.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if let Some(set) = &host_cpu {
                // Every thread QEMU starts (its vCPU threads, the I/O
                // thread) inherits the binding.
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    command
        .args(qemu_args(r))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
}

/// The agent's messages from QEMU's stdout (the results port), parsed on a
/// thread of their own; a line that does not parse arrives as its error.
fn read_messages(
    stdout: std::process::ChildStdout,
) -> (
    mpsc::Receiver<Result<Message, String>>,
    std::thread::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::channel::<Result<Message, String>>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            match Message::parse_line(&line) {
                Ok(Some(m)) => {
                    if tx.send(Ok(m)).is_err() {
                        break;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        }
    });
    (rx, reader)
}

/// Passes the agent's messages on until the results port closes, the
/// deadline passes or Ctrl-C; kills QEMU in the last two cases. `status`
/// is left for [`reap`].
fn watch(
    r: &BootRequest,
    started: Instant,
    child: &mut std::process::Child,
    rx: &mpsc::Receiver<Result<Message, String>>,
    on_message: &mut dyn FnMut(Message),
) -> Watched {
    let mut seen = Watched {
        interrupted: false,
        timed_out: false,
        done: false,
        agent_error: None,
        status: None,
    };
    loop {
        if super::interrupted() {
            seen.interrupted = true;
            let _ = child.kill();
            break;
        }
        let left = r.deadline.saturating_sub(started.elapsed());
        if left.is_zero() {
            seen.timed_out = true;
            let _ = child.kill();
            break;
        }
        match rx.recv_timeout(left.min(Duration::from_millis(500))) {
            Ok(Ok(Message::Done)) => {
                seen.done = true;
                on_message(Message::Done);
            }
            Ok(Ok(Message::Error { message })) => {
                seen.agent_error.get_or_insert(message.clone());
                on_message(Message::Error { message });
            }
            Ok(Ok(m)) => on_message(m),
            Ok(Err(e)) => {
                seen.agent_error.get_or_insert(e.clone());
                on_message(Message::Error { message: e });
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    seen
}

/// Waits for QEMU to exit, with a grace period for the poweroff to finish,
/// then kills it.
fn reap(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let grace = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if grace.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            _ => {
                let _ = child.kill();
                return child.wait().ok();
            }
        }
    }
}

impl Runner for QemuRunner {
    fn boot(&self, r: &BootRequest, on_message: &mut dyn FnMut(Message)) -> BootOutcome {
        let started = Instant::now();
        let outcome = |end| BootOutcome {
            end,
            wall: started.elapsed(),
        };
        let binary = r.qemu.as_ref().unwrap_or(&self.binary);
        let mut child = match spawn_qemu(binary, r) {
            Ok(c) => c,
            Err(e) => {
                return outcome(BootEnd::QemuFailed {
                    detail: format!("cannot start {}: {e}", binary.display()),
                })
            }
        };
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (rx, reader) = read_messages(stdout);
        let stderr_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });

        let mut seen = watch(r, started, &mut child, &rx, on_message);
        // The results port closed (QEMU exited) or it was killed: reap it.
        seen.status = reap(&mut child);
        let _ = reader.join();
        let qemu_stderr = stderr_reader.join().unwrap_or_default();
        let console = std::fs::read_to_string(&r.console_log).unwrap_or_default();
        outcome(ending(r, seen, &qemu_stderr, &console))
    }
}

/// Whether a `--version` line (`QEMU emulator version 10.0.2 (Debian …)`)
/// names the same major and minor release as `version` (`10.0.2`).
pub fn same_release(version_line: &str, version: &str) -> bool {
    let major_minor = |text: &str| -> Option<(u32, u32)> {
        let mut parts = text.split(|c: char| !c.is_ascii_digit());
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    };
    let line = version_line
        .split("version ")
        .nth(1)
        .unwrap_or(version_line);
    major_minor(line).is_some_and(|r| Some(r) == major_minor(version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_is_its_major_and_minor_version() {
        let debian = "QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)";
        assert!(same_release(debian, "10.0.2"));
        assert!(same_release("QEMU emulator version 10.0.7", "10.0.2"));
        assert!(!same_release("QEMU emulator version 10.1.0", "10.0.2"));
        assert!(!same_release(
            "QEMU emulator version 7.2.19 (Debian)",
            "10.0.2"
        ));
        assert!(!same_release("", "10.0.2"));
    }
    use crate::record::Accel;

    #[test]
    fn the_icount_rtc_base_is_the_clock_start_the_archives_are_dated_against() {
        let base = chrono::NaiveDateTime::parse_from_str(ICOUNT_RTC_BASE, "%Y-%m-%dT%H:%M:%S")
            .unwrap()
            .and_utc()
            .timestamp();
        assert_eq!(
            base as u64,
            crate::guest::images::initramfs::GUEST_CLOCK_START_S
        );
    }

    fn request() -> BootRequest {
        BootRequest {
            kernel: "/k/bzImage".into(),
            initrd: "/k/initrd".into(),
            extra_cmdline: "trace_event=sched:*".into(),
            cpus: 4,
            memory_mib: 512,
            accel: Accel::Tcg,
            icount_shift: None,
            guest_seed: None,
            deadline: Duration::from_secs(10),
            console_log: "/run/logs/boot.log".into(),
            plugin: None,
            host_cpu: None,
            qemu: None,
            rr_turn: None,
            arch: Arch::X86_64,
        }
    }

    #[test]
    fn an_x86_guest_keeps_its_command_line() {
        let args = qemu_args(&request());
        assert!(!args.iter().any(|a| a == "-M"));
        let joined = args.join(" ");
        assert!(joined.contains("-accel tcg -cpu max -smp 4"), "{joined}");
        assert!(
            joined.contains("-append console=ttyS0 panic=-1"),
            "{joined}"
        );
    }

    #[test]
    fn an_arm64_guest_boots_on_virt_with_one_fixed_cpu_and_its_console() {
        let mut r = request();
        r.arch = Arch::Arm64;
        r.kernel = "/k/Image".into();
        r.icount_shift = Some(4);
        let args = qemu_args(&r);
        let joined = args.join(" ");
        assert!(
            joined.starts_with("-nodefaults -no-user-config -display none -no-reboot -M virt "),
            "{joined}"
        );
        assert!(
            joined.contains("-accel tcg -cpu neoverse-n1 -smp 4 -m 512 -kernel /k/Image"),
            "{joined}"
        );
        assert!(
            joined.contains(
                "-append console=ttyAMA0 panic=-1 oops=panic rdinit=/init trace_event=sched:*"
            ),
            "{joined}"
        );
        assert_eq!(args.iter().filter(|a| *a == "-serial").count(), 2);
        assert!(joined.contains("-icount shift=4,sleep=off"), "{joined}");
    }

    #[test]
    fn qemu_gets_no_network_no_disk_and_two_serial_ports() {
        let args = qemu_args(&request());
        let joined = args.join(" ");
        assert!(joined.starts_with("-nodefaults"));
        for forbidden in ["-netdev", "-nic", "-drive", "-hda", "-virtfs", "-fsdev"] {
            assert!(
                !args.iter().any(|a| a == forbidden),
                "{forbidden} in {joined}"
            );
        }
        assert_eq!(args.iter().filter(|a| *a == "-serial").count(), 2);
        assert!(joined.contains("-smp 4 -m 512"));
        assert!(joined.contains("-accel tcg"));
        assert!(joined.contains("panic=-1 oops=panic rdinit=/init trace_event=sched:*"));
        assert!(joined.contains("file:/run/logs/boot.log"));
    }

    #[test]
    fn icount_mode_counts_instructions_and_keeps_the_rtc_on_guest_time() {
        let mut r = request();
        assert!(!qemu_args(&r).iter().any(|a| a == "-icount" || a == "-seed"));
        r.icount_shift = Some(4);
        r.guest_seed = Some(12345);
        let joined = qemu_args(&r).join(" ");
        assert!(
            joined.ends_with(
                "-icount shift=4,sleep=off -rtc base=2020-01-01T00:00:00,clock=vm -seed 12345"
            ),
            "{joined}"
        );
    }

    #[test]
    fn a_plugin_is_loaded_only_when_asked_for_with_its_paths_escaped() {
        let mut r = request();
        assert!(!qemu_args(&r).iter().any(|a| a == "-plugin"));
        r.plugin = Some(crate::stages::vm::PluginLoad {
            library: "/cache/lib,x.so".into(),
            output: "/run/profiles/raw.tsv".into(),
            args: Vec::new(),
        });
        let args = qemu_args(&r);
        let at = args.iter().position(|a| a == "-plugin").unwrap();
        assert_eq!(
            args[at + 1],
            "file=/cache/lib,,x.so,out=/run/profiles/raw.tsv"
        );
        r.plugin.as_mut().unwrap().args = vec!["model=cycles".into(), "l2-cycles=14".into()];
        let args = qemu_args(&r);
        assert_eq!(
            args[at + 1],
            "file=/cache/lib,,x.so,out=/run/profiles/raw.tsv,model=cycles,l2-cycles=14"
        );
    }

    #[test]
    fn a_guest_that_printed_nothing_is_told_apart_and_its_kernel_named() {
        let seen = || Watched {
            interrupted: false,
            timed_out: false,
            done: false,
            agent_error: None,
            status: None,
        };
        let BootEnd::Vanished { detail } = ending(&request(), seen(), "", " \n") else {
            panic!("not a vanished boot");
        };
        assert!(detail.contains("printed nothing"), "{detail}");
        assert!(detail.contains("/k/bzImage"), "{detail}");
        let BootEnd::Vanished { detail } =
            ending(&request(), seen(), "", "Linux version 6.1\nRun /init\n")
        else {
            panic!("not a vanished boot");
        };
        assert_eq!(detail, "console ends with: Linux version 6.1\nRun /init");
    }

    #[test]
    fn panics_are_found_on_the_console() {
        let console =
            "[    1.0] foo\n[    2.1] Kernel panic - not syncing: sysrq triggered crash\n";
        assert_eq!(
            find_panic(console).as_deref(),
            Some("[    2.1] Kernel panic - not syncing: sysrq triggered crash")
        );
        assert_eq!(find_panic("all good\n"), None);
    }
}
