//! What markbench learns about the machine it runs on: its name, CPU,
//! cores, memory and how busy it is. Probed here only; recorded in
//! `meta.toml` (`record::HostInfo`) by the stage that starts a run.

use std::time::Duration;

/// This machine's host name, as samples and `meta.toml` record it.
pub fn name() -> String {
    read("/proc/sys/kernel/hostname")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The CPU model `/proc/cpuinfo` names.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Bytes free to an unprivileged writer on the filesystem that holds
/// `path`, or would hold it (its nearest existing ancestor); `None` when it
/// cannot be read.
pub fn free_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let existing = path.ancestors().find(|p| p.exists())?;
    let c_path = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes only into the zeroed struct it is given, and
    // reads the NUL-terminated path.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    let status = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
    (status == 0).then(|| stat.f_bavail as u64 * stat.f_frsize as u64)
}

/// Cores this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The host's memory in MiB (`MemTotal`), 0 when unknown.
pub fn memory_mib() -> u64 {
    meminfo_mib("MemTotal:")
}

/// The running kernel's release.
pub fn kernel_release() -> String {
    read("/proc/sys/kernel/osrelease")
}

/// The memory of this machine in GiB, to one decimal.
pub fn memory_gib() -> f64 {
    (memory_mib() as f64 / 1024.0 * 10.0).round() / 10.0
}

/// The host CPUs this process may run on (its affinity set), in order;
/// empty when it cannot be read.
pub fn usable_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is the empty set; sched_getaffinity fills
    // at most its size, and CPU_ISSET reads a bit of it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let read =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if read != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Memory the host can give new processes without swapping, in MiB
/// (`MemAvailable`); 0 when unknown.
pub fn available_mib() -> u64 {
    meminfo_mib("MemAvailable:")
}

fn meminfo_mib(key: &str) -> u64 {
    read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024)
}

/// The CPU time of the host at one moment, and how much of it this process
/// and its children (the guests' QEMU processes) account for: the load
/// beside markbench's own is the difference of two of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTime {
    /// Busy and all jiffies of every CPU (`/proc/stat`).
    busy: u64,
    total: u64,
    /// Jiffies this process, its children and the children it reaped ran.
    own: u64,
}

/// utime + stime + cutime + cstime of a `/proc/PID/stat` line, and its
/// parent's pid. The command name (in parentheses) may hold spaces, so the
/// fields are counted after its closing parenthesis.
fn stat_times(stat: &str) -> Option<(u32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    let ppid = fields.get(1)?.parse().ok()?;
    let times: Option<Vec<u64>> = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<i64>().ok().map(|v| v.max(0) as u64))
        .collect();
    Some((ppid, times?.iter().sum()))
}

/// This process's CPU time with its children's, live and reaped.
fn own_jiffies() -> u64 {
    let me = std::process::id();
    let mut own = stat_times(&read("/proc/self/stat")).map_or(0, |(_, t)| t);
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            if let Some((ppid, time)) = stat_times(&stat) {
                if ppid == me {
                    own += time;
                }
            }
        }
    }
    own
}

/// The host's CPU time now, `None` where `/proc/stat` cannot be read.
pub fn cpu_time() -> Option<CpuTime> {
    let (busy, total) = cpu_jiffies()?;
    Some(CpuTime {
        busy,
        total,
        own: own_jiffies(),
    })
}

/// How many of the host's cores were busy between `from` and `to` with
/// work other than markbench's own and its guests', to a tenth.
pub fn load_beside_own(from: &CpuTime, to: &CpuTime) -> f64 {
    let total = to.total.saturating_sub(from.total);
    if total == 0 {
        return 0.0;
    }
    let busy = to.busy.saturating_sub(from.busy);
    let own = to.own.saturating_sub(from.own);
    let other = busy.saturating_sub(own) as f64 / total as f64 * cores() as f64;
    (other * 10.0).round() / 10.0
}

/// (busy, total) jiffies of all CPUs from /proc/stat's `cpu` line.
fn cpu_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal …: idle and iowait are not busy.
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4).unwrap_or(&0);
    Some((total - idle, total))
}

/// How many of the host's cores were busy over the next half second with
/// work other than markbench's own and its guests' (which may be running
/// beside each other in the slots of a boot loop).
pub fn load() -> f64 {
    let Some(from) = cpu_time() else {
        return 0.0;
    };
    std::thread::sleep(Duration::from_millis(500));
    cpu_time().map_or(0.0, |to| load_beside_own(&from, &to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_is_read_for_a_path_not_made_yet() {
        let dir = tempfile::tempdir().unwrap();
        let below = free_bytes(&dir.path().join("not/made/yet")).unwrap();
        let here = free_bytes(dir.path()).unwrap();
        // The same filesystem, read twice: only what others wrote between.
        assert!(below.abs_diff(here) < 1 << 30, "{below} against {here}");
        assert!(below > 0);
    }

    #[test]
    fn a_stat_line_gives_its_parent_and_its_times_whatever_its_name_holds() {
        let stat =
            "4242 (qemu (x) 1) S 17 4242 17 0 -1 4194560 100 0 0 0 250 30 7 5 20 0 3 0 9 0 0";
        assert_eq!(stat_times(stat), Some((17, 250 + 30 + 7 + 5)));
        assert_eq!(stat_times("garbage"), None);
    }

    #[test]
    fn the_load_beside_markbench_leaves_its_own_time_out() {
        let from = CpuTime {
            busy: 100,
            total: 1000,
            own: 10,
        };
        // 400 jiffies of 1000 busy, 300 of them markbench's and its guests'.
        let to = CpuTime {
            busy: 500,
            total: 2000,
            own: 310,
        };
        let cores = cores() as f64;
        assert_eq!(
            load_beside_own(&from, &to),
            (100.0 / 1000.0 * cores * 10.0).round() / 10.0
        );
        assert_eq!(load_beside_own(&to, &to), 0.0);
    }

    #[test]
    fn this_process_may_run_somewhere() {
        let cpus = usable_cpus();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]), "{cpus:?}");
    }
}
