//! hackbench from rt-tests: `-g G` groups, each of `-f F` senders and F
//! receivers (40 tasks per group with the default 20), passing `-l L`
//! messages of `-s S` bytes over sockets (default) or pipes (`-p`), as
//! processes (default) or threads (`-T`).
//!
//! The 2008 ia64 mail's "Number of processes" 50…800 is most likely this
//! group count: the original hackbench.c took the number of groups as its
//! only argument.
//!
//! Metric: `time`, seconds, lower is better: the agent's CLOCK_MONOTONIC wall
//! time of the whole hackbench process (start-up included, a few ms). The
//! figure hackbench prints itself (`Time: 1.234`, what the seeds tabulated)
//! must be present, or the run is not counted: it proves hackbench finished.

use super::{Guest, Measurement, OutputError, Refusal, Workload};
use crate::base::protocol::{Directive, RunRecord};
use serde::{Deserialize, Serialize};

/// hackbench's settings: `-g groups` groups of `fds` senders and `fds`
/// receivers passing `loops` messages each. The sweep parameter is the group
/// count, which is what the 2008 ia64 mail calls "number of processes" (each
/// group is 40 tasks with the default 20 fds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HackbenchSpec {
    #[serde(default = "default_loops")]
    pub loops: u64,
    #[serde(default = "default_fds")]
    pub fds: u64,
    #[serde(default)]
    pub mode: HackbenchMode,
    #[serde(default)]
    pub transport: HackbenchTransport,
    #[serde(default = "default_datasize")]
    pub datasize: u64,
}

fn default_loops() -> u64 {
    100
}
fn default_fds() -> u64 {
    20
}
fn default_datasize() -> u64 {
    100
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HackbenchMode {
    #[default]
    Process,
    Thread,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HackbenchTransport {
    #[default]
    Socket,
    Pipe,
}

pub const PROGRAM: &str = "/usr/bin/hackbench";

/// The most tasks one hackbench run may start in a guest. The guest kernels
/// are tinyconfig-based (`CONFIG_BASE_SMALL`): pid_max starts at 4096 and can
/// be raised to 32768 at most, of which the first 300 are not reused. 100
/// groups (4000 tasks) fit once after boot and then failed to fork.
pub const MAX_TASKS: u64 = 32_768 - 300 - 64;

/// Untimed, once per boot: raise pid_max to the kernel's limit (32768 in
/// these kernels, whose default is 4096), so large group counts can fork.
pub fn raise_pid_max() -> Directive {
    Directive::Setup {
        argv: [
            "/bin/busybox",
            "sh",
            "-c",
            "echo 32768 > /proc/sys/kernel/pid_max",
        ]
        .map(String::from)
        .to_vec(),
    }
}

/// Tasks a run starts: each group has `fds` senders and `fds` receivers.
pub fn tasks(spec: &HackbenchSpec, groups: u64) -> u64 {
    groups * 2 * spec.fds
}

/// The `Time: …` hackbench prints, in seconds.
pub fn reported_time(output: &str) -> Option<f64> {
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix("Time:"))
        .and_then(|t| t.trim().parse::<f64>().ok())
}

/// hackbench's flags besides `-g`.
fn flags(spec: &HackbenchSpec) -> Vec<String> {
    let mut argv = vec![
        "-l".into(),
        spec.loops.to_string(),
        "-f".into(),
        spec.fds.to_string(),
        "-s".into(),
        spec.datasize.to_string(),
    ];
    if spec.mode == HackbenchMode::Thread {
        argv.push("-T".into());
    }
    if spec.transport == HackbenchTransport::Pipe {
        argv.push("-p".into());
    }
    argv
}

impl Workload for HackbenchSpec {
    const PARAM_LABEL: &'static str = "groups";

    fn check(&self, params: &[u64], _guest: Guest<'_>) -> Result<(), Refusal> {
        if self.loops == 0 || self.fds == 0 || self.datasize == 0 {
            return Err("hackbench: loops, fds and datasize must be at least 1"
                .to_string()
                .into());
        }
        match params.iter().find(|&&g| tasks(self, g) > MAX_TASKS) {
            Some(&groups) => Err(format!(
                "hackbench: -g {groups} -f {} starts {} tasks; the guest kernels allow at most {MAX_TASKS}",
                self.fds,
                tasks(self, groups)
            )
            .into()),
            None => Ok(()),
        }
    }

    fn scale(&mut self, _params: &mut Vec<u64>, factor: f64) {
        self.loops = super::scaled(self.loops, factor);
    }

    fn setup(&self) -> Vec<Directive> {
        vec![raise_pid_max()]
    }

    fn command(&self, groups: u64) -> Vec<String> {
        let mut argv = vec![PROGRAM.to_string(), "-g".into(), groups.to_string()];
        argv.extend(flags(self));
        argv
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
        reported_time(&record.output).ok_or_else(|| {
            OutputError::new("hackbench", "no `Time:` line").with_output(record.output.trim())
        })?;
        Ok(vec![Measurement::elapsed_time(record)])
    }

    fn describe(&self, params: &str) -> String {
        let mode = match self.mode {
            HackbenchMode::Process => "process",
            HackbenchMode::Thread => "thread",
        };
        let transport = match self.transport {
            HackbenchTransport::Socket => "socket",
            HackbenchTransport::Pipe => "pipe",
        };
        format!(
            "hackbench -g {params} {} ({mode}, {transport})",
            flags(self).join(" ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output of rt-tests 2.5 hackbench, captured in a markbench guest.
    const CAPTURED: &str =
        "Running in process mode with 4 groups using 40 file descriptors each (== 160 tasks)\n\
Each sender will pass 50 messages of 100 bytes\n\
Time: 0.412\n";

    fn spec() -> HackbenchSpec {
        toml::from_str("").unwrap()
    }

    fn record(output: &str, elapsed_ns: u64) -> RunRecord {
        crate::guest::workloads::finished_run("hackbench/4", output, elapsed_ns)
    }

    #[test]
    fn command_follows_the_spec() {
        let spec = HackbenchSpec {
            loops: 50,
            fds: 20,
            mode: HackbenchMode::Thread,
            transport: HackbenchTransport::Pipe,
            datasize: 100,
        };
        assert_eq!(
            spec.command(4).join(" "),
            "/usr/bin/hackbench -g 4 -l 50 -f 20 -s 100 -T -p"
        );
    }

    #[test]
    fn captured_output_gives_the_agent_time() {
        assert_eq!(reported_time(CAPTURED), Some(0.412));
        let m = spec().measure(&record(CAPTURED, 431_000_000)).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].metric, "time");
        assert_eq!(m[0].unit, "s");
        assert!((m[0].value - 0.431).abs() < 1e-12);
        assert!(!m[0].higher_is_better);
    }

    #[test]
    fn output_without_time_is_an_error() {
        let e = spec()
            .measure(&record("hackbench: fork failed\n", 1))
            .unwrap_err().to_string();
        assert!(e.contains("no `Time:` line"), "{e}");
    }
}
