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

/// Cores this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The host's memory in MiB (`MemTotal`), 0 when unknown.
pub fn memory_mib() -> u64 {
    read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024)
}

/// The running kernel's release.
pub fn kernel_release() -> String {
    read("/proc/sys/kernel/osrelease")
}

/// The memory of this machine in GiB, to one decimal.
pub fn memory_gib() -> f64 {
    (memory_mib() as f64 / 1024.0 * 10.0).round() / 10.0
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

/// How many of the host's cores were busy over the last half second, while
/// no guest of ours ran. Unlike the load average, this does not still carry
/// the previous boot's own QEMU.
pub fn load() -> f64 {
    let cores = cores() as f64;
    let Some((busy0, total0)) = cpu_jiffies() else {
        return 0.0;
    };
    std::thread::sleep(Duration::from_millis(500));
    let Some((busy1, total1)) = cpu_jiffies() else {
        return 0.0;
    };
    let total = total1.saturating_sub(total0);
    if total == 0 {
        return 0.0;
    }
    let busy = busy1.saturating_sub(busy0) as f64 / total as f64 * cores;
    (busy * 10.0).round() / 10.0
}
