//! `perf bench` (Debian's linux-perf, `/usr/bin/perf`): four of its
//! benchmarks of kernel paths, each printing its own figure.
//!
//! - `sched pipe`: two processes pass a token back and forth over a pair of
//!   pipes, `-l N` round trips. Metric `usecs-per-op`, µs per round trip
//!   (two writes, two reads, two wake-ups and two context switches), lower
//!   is better.
//! - `syscall basic`: `-l N` calls of `getppid()`, about the cheapest system
//!   call. Metric `usecs-per-op`, µs per call, lower is better.
//! - `sched messaging`: hackbench inside perf, `-g G` groups of 20 senders
//!   and 20 receivers (processes, over socketpairs), each sender writing
//!   `-l N` 100-byte messages to each receiver of its group. Metric
//!   `total-time`, seconds from the moment every task has forked and is
//!   ready to the last one reaped, lower is better; perf prints it to the
//!   millisecond, so runs should last a tenth of a second or more.
//! - `futex hash`: `-t T` threads (pinned round-robin to the CPUs) each call
//!   FUTEX_WAIT round 1024 private futexes of their own, with a value that
//!   does not match so every call fails at once: the hashing of the address
//!   and the bucket lock, for `-r S` seconds. Metric `ops-per-sec`, each
//!   thread's calls over the run's whole seconds (perf drops the fraction),
//!   averaged over the threads, higher is better.
//!
//! For `sched pipe` and `syscall basic` perf prints three figures of one
//! clock difference: `Total time` (to the ms), `usecs/op` (the same time, in
//! µs, over the loop count) and `ops/sec` (its reciprocal, truncated). At
//! one point the loop count is fixed, so all three rank runs alike; each
//! metric becomes a table and a statistical test of its own in the report,
//! so only `usecs-per-op`, the finest of the three, is kept.
//!
//! The sweep parameter is each benchmark's amount of work: the loop count
//! (`-l`) of `sched pipe`, `syscall basic` and `sched messaging`, the
//! seconds (`-r`) of `futex hash`.
//!
//! These are guest times. Under QEMU's icount (the default here) guest time
//! advances with executed instructions (2^shift ns each), so µs per
//! operation and operations per second count the instructions of an
//! operation, its code path length: not cycles, cache misses or lock
//! contention as real hardware would show them.

use super::{output_tail, Guest, Measurement, OutputError, Refusal, Workload};
use crate::base::protocol::{Directive, RunRecord};
use serde::{Deserialize, Serialize};

pub const PROGRAM: &str = "/usr/bin/perf";

/// The largest loop count perf takes: it reads `-l` into a C `int` and
/// silently wraps anything larger.
pub const MAX_LOOPS: u64 = i32::MAX as u64;

/// The most seconds one `futex hash` run may last.
pub const MAX_SECONDS: u64 = 600;

/// The most `futex hash` threads a run may start.
pub const MAX_THREADS: u64 = 1024;

/// Tasks in one `sched messaging` group: 20 senders and 20 receivers (perf
/// has no option to change it).
pub const TASKS_PER_GROUP: u64 = 40;

/// Which `perf bench` benchmark a workload runs, named as its command line
/// names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PerfBench {
    #[serde(rename = "sched messaging")]
    SchedMessaging,
    #[serde(rename = "sched pipe")]
    SchedPipe,
    #[serde(rename = "syscall basic")]
    SyscallBasic,
    #[serde(rename = "futex hash")]
    FutexHash,
}

impl PerfBench {
    /// The subsystem and benchmark words of perf's command line.
    pub fn words(self) -> [&'static str; 2] {
        match self {
            PerfBench::SchedMessaging => ["sched", "messaging"],
            PerfBench::SchedPipe => ["sched", "pipe"],
            PerfBench::SyscallBasic => ["syscall", "basic"],
            PerfBench::FutexHash => ["futex", "hash"],
        }
    }

    /// As the suite file names it (`sched pipe`).
    pub fn name(self) -> String {
        self.words().join(" ")
    }
}

/// `perf bench`'s settings. The sweep parameter is the benchmark's work:
/// its loop count, or the seconds of `futex hash`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerfBenchSpec {
    pub bench: PerfBench,
    /// `sched messaging` only: its groups of 40 tasks (`-g`, default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<u64>,
    /// `futex hash` only: its threads (`-t`, default 1; perf's own default
    /// is one per online CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u64>,
}

pub const DEFAULT_GROUPS: u64 = 5;
pub const DEFAULT_THREADS: u64 = 1;

impl PerfBenchSpec {
    fn groups(&self) -> u64 {
        self.groups.unwrap_or(DEFAULT_GROUPS)
    }

    fn threads(&self) -> u64 {
        self.threads.unwrap_or(DEFAULT_THREADS)
    }

    /// Whether the parameter is seconds rather than loops.
    fn timed(&self) -> bool {
        self.bench == PerfBench::FutexHash
    }

    /// The most the parameter may be.
    fn max_param(&self) -> u64 {
        if self.timed() {
            MAX_SECONDS
        } else {
            MAX_LOOPS
        }
    }

    /// perf's arguments after `bench`, the parameter written as `param`.
    fn args(&self, param: &str) -> Vec<String> {
        let mut argv: Vec<String> = self.bench.words().map(String::from).to_vec();
        match self.bench {
            PerfBench::SchedMessaging => {
                argv.extend(["-g".into(), self.groups().to_string()]);
                argv.extend(["-l".into(), param.into()]);
            }
            PerfBench::SchedPipe | PerfBench::SyscallBasic => {
                argv.extend(["-l".into(), param.into()]);
            }
            PerfBench::FutexHash => {
                argv.extend(["-t".into(), self.threads().to_string()]);
                argv.extend(["-r".into(), param.into()]);
            }
        }
        argv
    }
}

/// The figure of `sched pipe` and `syscall basic`'s `    20.645550 usecs/op`.
pub fn usecs_per_op(output: &str) -> Option<f64> {
    output.lines().find_map(|l| {
        l.trim()
            .strip_suffix("usecs/op")
            .and_then(|v| v.trim().parse().ok())
    })
}

/// The seconds of `     Total time: 0.136 [sec]`.
pub fn total_time(output: &str) -> Option<f64> {
    output.lines().find_map(|l| {
        l.trim()
            .strip_prefix("Total time:")?
            .trim()
            .strip_suffix("[sec]")?
            .trim()
            .parse()
            .ok()
    })
}

/// The operations per second of `futex hash`'s summary,
/// `Averaged 2115584 operations/sec (+- 0.00%), total secs = 1`.
pub fn averaged_ops_per_sec(output: &str) -> Option<f64> {
    output.lines().find_map(|l| {
        let mut words = l.trim().strip_prefix("Averaged ")?.split_whitespace();
        let value = words.next()?.parse().ok()?;
        (words.next()? == "operations/sec").then_some(value)
    })
}

impl Workload for PerfBenchSpec {
    const PARAM_LABEL: &'static str = "param";

    fn check(&self, params: &[u64], _guest: Guest<'_>) -> Result<(), Refusal> {
        let bench = self.bench.name();
        if self.groups.is_some() && self.bench != PerfBench::SchedMessaging {
            return Err(format!(
                "perf-bench: groups is a setting of sched messaging, not of {bench}"
            )
            .into());
        }
        if self.threads.is_some() && self.bench != PerfBench::FutexHash {
            return Err(
                format!("perf-bench: threads is a setting of futex hash, not of {bench}").into(),
            );
        }
        let max_groups = super::hackbench::MAX_TASKS / TASKS_PER_GROUP;
        if !(1..=max_groups).contains(&self.groups()) {
            return Err(format!(
                "perf-bench: groups must be 1 to {max_groups} ({TASKS_PER_GROUP} tasks each; \
                 the guest kernels allow at most {} tasks)",
                super::hackbench::MAX_TASKS
            )
            .into());
        }
        if !(1..=MAX_THREADS).contains(&self.threads()) {
            return Err(format!("perf-bench: threads must be 1 to {MAX_THREADS}").into());
        }
        if let Some(p) = params.iter().find(|&&p| p > self.max_param()) {
            let what = if self.timed() {
                "seconds a run (-r)"
            } else {
                "loops (-l: perf reads it as a C int)"
            };
            return Err(format!(
                "perf-bench: {bench}'s params must be at most {} {what}; {p} given",
                self.max_param()
            )
            .into());
        }
        Ok(())
    }

    /// A run's work is its parameter: loops, or the seconds of `futex hash`
    /// (at least one).
    fn scale(&mut self, params: &mut Vec<u64>, factor: f64) {
        super::scale_work_params(params, factor, self.max_param());
    }

    /// Untimed, once per boot, for `sched messaging`: raise pid_max to the
    /// kernel's limit, as hackbench does, so many groups can fork.
    fn setup(&self) -> Vec<Directive> {
        if self.bench != PerfBench::SchedMessaging {
            return Vec::new();
        }
        vec![super::hackbench::raise_pid_max()]
    }

    fn programs(&self) -> Vec<String> {
        vec![PROGRAM.to_string()]
    }

    fn command(&self, param: u64) -> Vec<String> {
        let mut argv = vec![PROGRAM.to_string(), "bench".into()];
        argv.extend(self.args(&param.to_string()));
        argv
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
        let output = &record.output;
        let (metric, unit, higher_is_better, line, value) = match self.bench {
            PerfBench::SchedPipe | PerfBench::SyscallBasic => (
                "usecs-per-op",
                "µs",
                false,
                "usecs/op",
                usecs_per_op(output),
            ),
            PerfBench::SchedMessaging => (
                "total-time",
                "s",
                false,
                "Total time: … [sec]",
                total_time(output),
            ),
            PerfBench::FutexHash => (
                "ops-per-sec",
                "ops/s",
                true,
                "Averaged … operations/sec",
                averaged_ops_per_sec(output),
            ),
        };
        let bench = self.bench.name();
        let value = value.ok_or_else(|| {
            OutputError::new(
                "perf-bench",
                format!("perf bench {bench} printed no `{line}` line"),
            )
            .with_output(output_tail(output))
        })?;
        // perf times with gettimeofday (µs): a run shorter than its
        // resolution prints 0, which is no measurement.
        if !value.is_finite() || value <= 0.0 {
            return Err(OutputError::new(
                "perf-bench",
                format!(
                    "perf bench {bench} printed {value} {unit} (below its clock's \
                     resolution?); give it more work"
                ),
            ));
        }
        Ok(vec![Measurement {
            metric: metric.into(),
            unit: unit.into(),
            higher_is_better,
            value,
        }])
    }

    fn describe(&self, params: &str) -> String {
        format!("perf bench {}", self.args(params).join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Output of `perf bench` from Debian's linux-perf 6.1.192-3
    // (`perf version 6.1.192`), stdout and stderr together, as captured on
    // a Debian 12 host.

    /// `perf bench sched pipe -l 20000`
    const SCHED_PIPE: &str = "# Running 'sched/pipe' benchmark:
# Executed 20000 pipe operations between two processes

     Total time: 0.412 [sec]

      20.645550 usecs/op
          48436 ops/sec
";

    /// `perf bench syscall basic -l 200000`
    const SYSCALL_BASIC: &str = "# Running 'syscall/basic' benchmark:
# Executed 200000 getppid() calls
     Total time: 0.041 [sec]

       0.206320 usecs/op
        4846839 ops/sec
";

    /// `perf bench sched messaging -g 2 -l 50`
    const SCHED_MESSAGING: &str = "# Running 'sched/messaging' benchmark:
# 20 sender and receiver processes per group
# 2 groups == 80 processes run

     Total time: 0.136 [sec]
";

    /// `perf bench futex hash -t 1 -r 1`
    const FUTEX_HASH: &str = "# Running 'futex/hash' benchmark:
Run summary [PID 29157]: 1 threads, each operating on 1024 [private] futexes for 1 secs.

[thread  0] futexes: 0x55e6e43cc3a0 ... 0x55e6e43cd39c [ 2115584 ops/sec ]

Averaged 2115584 operations/sec (+- 0.00%), total secs = 1
";

    /// `perf bench futex hash -t 2 -r 1`
    const FUTEX_HASH_2: &str = "# Running 'futex/hash' benchmark:
Run summary [PID 29379]: 2 threads, each operating on 1024 [private] futexes for 1 secs.

[thread  0] futexes: 0x55f58bec83c0 ... 0x55f58bec93bc [ 1673216 ops/sec ]
[thread  1] futexes: 0x55f58bec9660 ... 0x55f58beca65c [ 1141760 ops/sec ]

Averaged 1407488 operations/sec (+- 18.88%), total secs = 1
";

    const GUEST: Guest<'static> = Guest {
        cpus: &[1, 2],
        memory_mib: 1024,
    };

    fn spec(toml_text: &str) -> PerfBenchSpec {
        toml::from_str(toml_text).unwrap()
    }

    fn record(output: &str) -> RunRecord {
        crate::guest::workloads::finished_run("perf-bench/1", output, 1)
    }

    fn one(spec: &PerfBenchSpec, output: &str) -> Measurement {
        let mut m = spec.measure(&record(output)).unwrap();
        assert_eq!(m.len(), 1, "{m:?}");
        m.remove(0)
    }

    #[test]
    fn commands_and_descriptions_follow_the_bench() {
        let pipe = spec("bench = \"sched pipe\"");
        assert_eq!(
            pipe.command(20000),
            ["/usr/bin/perf", "bench", "sched", "pipe", "-l", "20000"]
        );
        assert_eq!(
            pipe.describe("{1000, 2000}"),
            "perf bench sched pipe -l {1000, 2000}"
        );
        let syscall = spec("bench = \"syscall basic\"");
        assert_eq!(
            syscall.command(200000).join(" "),
            "/usr/bin/perf bench syscall basic -l 200000"
        );
        let messaging = spec("bench = \"sched messaging\"");
        assert_eq!(
            messaging.command(50).join(" "),
            "/usr/bin/perf bench sched messaging -g 5 -l 50"
        );
        let messaging = spec("bench = \"sched messaging\"\ngroups = 2");
        assert_eq!(
            messaging.describe("50"),
            "perf bench sched messaging -g 2 -l 50"
        );
        let futex = spec("bench = \"futex hash\"");
        assert_eq!(
            futex.command(3).join(" "),
            "/usr/bin/perf bench futex hash -t 1 -r 3"
        );
        let futex = spec("bench = \"futex hash\"\nthreads = 4");
        assert_eq!(
            futex.describe("{1, 2}"),
            "perf bench futex hash -t 4 -r {1, 2}"
        );
        assert_eq!(futex.programs(), ["/usr/bin/perf"]);
        assert!(futex.setup().is_empty() && !messaging.setup().is_empty());
    }

    #[test]
    fn unknown_benches_and_keys_are_refused() {
        assert!(toml::from_str::<PerfBenchSpec>("bench = \"sched-pipe\"").is_err());
        assert!(toml::from_str::<PerfBenchSpec>("bench = \"sched pipe\"\nloops = 3").is_err());
    }

    #[test]
    fn sched_pipe_and_syscall_basic_give_usecs_per_op() {
        let m = one(&spec("bench = \"sched pipe\""), SCHED_PIPE);
        assert_eq!(
            (m.metric.as_str(), m.unit.as_str(), m.higher_is_better),
            ("usecs-per-op", "µs", false)
        );
        assert_eq!(m.value, 20.645550);
        let m = one(&spec("bench = \"syscall basic\""), SYSCALL_BASIC);
        assert_eq!(m.metric, "usecs-per-op");
        assert_eq!(m.value, 0.206320);
    }

    #[test]
    fn sched_messaging_gives_total_time() {
        assert_eq!(total_time(SCHED_PIPE), Some(0.412));
        let m = one(&spec("bench = \"sched messaging\""), SCHED_MESSAGING);
        assert_eq!(
            (m.metric.as_str(), m.unit.as_str(), m.higher_is_better),
            ("total-time", "s", false)
        );
        assert_eq!(m.value, 0.136);
    }

    #[test]
    fn futex_hash_gives_the_averaged_ops_per_sec() {
        let futex = spec("bench = \"futex hash\"");
        let m = one(&futex, FUTEX_HASH);
        assert_eq!(
            (m.metric.as_str(), m.unit.as_str(), m.higher_is_better),
            ("ops-per-sec", "ops/s", true)
        );
        assert_eq!(m.value, 2115584.0);
        // The per-thread lines are not the summary.
        assert_eq!(one(&futex, FUTEX_HASH_2).value, 1407488.0);
    }

    #[test]
    fn output_without_the_figure_is_an_error_showing_its_end() {
        let pipe = spec("bench = \"sched pipe\"");
        let e = pipe.measure(&record(SCHED_MESSAGING)).unwrap_err().to_string();
        assert!(
            e.starts_with("perf-bench: perf bench sched pipe printed no `usecs/op` line")
                && e.ends_with("     Total time: 0.136 [sec]"),
            "{e}"
        );
        let futex = spec("bench = \"futex hash\"");
        let e = futex.measure(&record(SCHED_PIPE)).unwrap_err().to_string();
        assert!(e.contains("futex hash printed no `Averaged"), "{e}");
        let long: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        assert_eq!(output_tail(&long).lines().next(), Some("line 21"));
        let zero = SYSCALL_BASIC.replace("0.206320", "0.000000");
        let e = spec("bench = \"syscall basic\"")
            .measure(&record(&zero))
            .unwrap_err().to_string();
        assert!(e.contains("printed 0 µs"), "{e}");
    }

    #[test]
    fn silly_settings_are_refused() {
        let refused = |text: &str, params: &[u64]| spec(text).check(params, GUEST).unwrap_err();
        let e = refused("bench = \"sched pipe\"\ngroups = 2", &[1]).message;
        assert!(
            e.starts_with("perf-bench: groups is a setting of sched messaging"),
            "{e}"
        );
        let e = refused("bench = \"sched messaging\"\nthreads = 2", &[1]).message;
        assert!(
            e.starts_with("perf-bench: threads is a setting of futex hash"),
            "{e}"
        );
        let e = refused("bench = \"sched messaging\"\ngroups = 0", &[1]).message;
        assert!(e.starts_with("perf-bench: groups must be 1 to"), "{e}");
        assert!(refused("bench = \"sched messaging\"\ngroups = 1000", &[1])
            .message
            .starts_with("perf-bench: groups must be"));
        let e = refused("bench = \"futex hash\"\nthreads = 0", &[1]).message;
        assert!(e.starts_with("perf-bench: threads must be 1 to"), "{e}");
        let e = refused("bench = \"futex hash\"", &[1, 3600]).message;
        assert!(
            e.contains("at most 600 seconds") && e.contains("3600 given"),
            "{e}"
        );
        let e = refused("bench = \"sched pipe\"", &[3_000_000_000]).message;
        assert!(
            e.starts_with("perf-bench: sched pipe's params must be at most 2147483647 loops"),
            "{e}"
        );
        assert!(spec("bench = \"sched messaging\"\ngroups = 10")
            .check(&[100], GUEST)
            .is_ok());
        assert!(spec("bench = \"futex hash\"\nthreads = 2")
            .check(&[600], GUEST)
            .is_ok());
    }

    #[test]
    fn scaling_scales_the_loops_and_keeps_a_second() {
        let mut params = vec![20_000, 40_000];
        spec("bench = \"sched pipe\"").scale(&mut params, 0.5);
        assert_eq!(params, [10_000, 20_000]);
        let mut params = vec![MAX_LOOPS];
        spec("bench = \"syscall basic\"").scale(&mut params, 2.0);
        assert_eq!(params, [MAX_LOOPS]);
        let mut params = vec![1, 2, 10];
        spec("bench = \"futex hash\"").scale(&mut params, 0.1);
        assert_eq!(params, [1]);
    }
}
