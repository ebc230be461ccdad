//! The kernel's own tracepoint benchmark (kernel/trace/trace_benchmark.c,
//! `CONFIG_TRACEPOINT_BENCHMARK=y`): the cost of one *enabled* tracepoint
//! writing an event into a ring buffer.
//!
//! Enabling the event `benchmark:benchmark_event` starts a kernel thread
//! that, in a loop, disables interrupts, reads the trace clock, writes the
//! event (a 128-byte string), reads the clock again; each event carries the
//! statistics of the writes before it (`last=… first=… max=… min=… avg=…
//! std=… std^2=…`). Disabling the event stops the thread and resets them.
//!
//! A run enables the event in a trace instance of its own (so its events do
//! not overwrite the global trace buffer, where the ring-buffer benchmark
//! prints), waits its parameter in guest seconds, disables the event and
//! reads the last event written. Metrics: `avg` and `min`, ns per write
//! (lower is better); `max` and `std` are left out (one slow write, a page
//! switch of the ring buffer, sets them). The clock is the trace clock, so
//! under icount these are instructions (2^shift ns each), not the host's
//! speed. The first, cold write (`first=`) is not in either figure.

use super::{Guest, Measurement, OutputError, Refusal, Workload};
use crate::base::protocol::RunRecord;
use crate::guest::workloads::ring_buffer::TRACEFS;
use serde::{Deserialize, Serialize};

/// The most seconds one run may keep the benchmark enabled.
pub const MAX_SECONDS: u64 = 600;

/// The workload's kind, as a suite names it and its errors begin.
const KIND: &str = "tracepoint-benchmark";

/// The trace instance a run creates and removes.
const INSTANCE: &str = "markbench-tracepoint-benchmark";

/// The tracepoint benchmark's settings. The sweep parameter is how many
/// guest seconds a run keeps the benchmark enabled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracepointBenchmarkSpec {
    /// The instance's ring buffer per CPU, in KiB: only its last event is
    /// read, and a small buffer keeps that read short.
    #[serde(default = "default_buffer_kb")]
    pub buffer_kb: u64,
}

fn default_buffer_kb() -> u64 {
    64
}

/// The statistics one benchmark event carries, in trace-clock ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteStats {
    pub last: u64,
    pub first: u64,
    pub max: u64,
    pub min: u64,
    pub avg: u64,
    pub std: u64,
}

/// The value of `key=` among the blank-separated fields of `text`.
fn field(text: &str, key: &str) -> Option<u64> {
    text.split_whitespace()
        .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// The statistics of the last complete benchmark event in `output` (a
/// `trace` file's lines). The benchmark's first two events carry none
/// (`START`, then only the cold write), and once the count passes
/// UINT_MAX it freezes them (`** avg=`): neither is a sample.
pub fn last_stats(output: &str) -> Result<WriteStats, OutputError> {
    let (index, line) = output
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("benchmark_event:"))
        .last()
        .ok_or_else(|| {
            OutputError::new(KIND, "no benchmark_event in the trace").with_output(output.trim())
        })?;
    let at = |problem: &str| OutputError::at_line(KIND, index + 1, line, problem);
    let (_, event) = line.split_once("benchmark_event:").unwrap_or_default();
    if event.contains("**") {
        return Err(at(
            "more than 2^32 writes, the kernel froze its statistics; enable it for fewer seconds",
        ));
    }
    let get = |key| field(event, key);
    match (
        get("last"),
        get("first"),
        get("max"),
        get("min"),
        get("avg"),
        get("std"),
    ) {
        (Some(last), Some(first), Some(max), Some(min), Some(avg), Some(std)) => Ok(WriteStats {
            last,
            first,
            max,
            min,
            avg,
            std,
        }),
        _ => Err(at(
            "the last event carries no statistics (too few writes?)",
        )),
    }
}

impl TracepointBenchmarkSpec {
    fn script(&self, seconds: u64) -> String {
        let dir = format!("{TRACEFS}/instances/{INSTANCE}");
        let enable = format!("{dir}/events/benchmark/benchmark_event/enable");
        format!(
            "[ -e {TRACEFS}/trace_pipe ] || mount -t tracefs nodev {TRACEFS} || exit 3; \
             [ -d {TRACEFS}/events/benchmark/benchmark_event ] || {{ echo 'tracepoint-benchmark: \
             this kernel has no benchmark:benchmark_event (build it with \
             CONFIG_TRACEPOINT_BENCHMARK=y)'; exit 3; }}; \
             rmdir {dir} 2>/dev/null; mkdir {dir} || exit 3; \
             echo {kb} > {dir}/buffer_size_kb || exit 3; \
             echo 1 > {enable} || exit 3; sleep {seconds}; echo 0 > {enable} || exit 3; \
             tail -n 1 {dir}/trace; rmdir {dir}",
            kb = self.buffer_kb
        )
    }
}

impl Workload for TracepointBenchmarkSpec {
    const PARAM_LABEL: &'static str = "seconds";

    fn check(&self, params: &[u64], _guest: Guest<'_>) -> Result<(), Refusal> {
        if let Some(s) = params.iter().find(|&&s| s > MAX_SECONDS) {
            return Err(format!(
                "tracepoint-benchmark: params must be at most {MAX_SECONDS} seconds a run ({s} given)"
            )
            .into());
        }
        if !(4..=65_536).contains(&self.buffer_kb) {
            return Err("tracepoint-benchmark: buffer_kb must be 4 to 65536 (KiB per CPU)"
                .to_string()
                .into());
        }
        Ok(())
    }

    /// A run's work is its seconds, the parameter itself.
    fn scale(&mut self, params: &mut Vec<u64>, factor: f64) {
        super::scale_work_params(params, factor, MAX_SECONDS);
    }

    fn command(&self, seconds: u64) -> Vec<String> {
        vec![
            "/bin/busybox".into(),
            "sh".into(),
            "-c".into(),
            self.script(seconds),
        ]
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
        let stats = last_stats(&record.output)?;
        let ns = |metric: &str, value: u64| Measurement {
            metric: metric.into(),
            unit: "ns".into(),
            higher_is_better: false,
            value: value as f64,
        };
        Ok(vec![ns("avg", stats.avg), ns("min", stats.min)])
    }

    fn describe(&self, params: &str) -> String {
        format!(
            "benchmark:benchmark_event enabled {params} s in a trace instance ({} KiB a CPU), \
             its last event read",
            self.buffer_kb
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tail of a `trace` file of the 6.1 benchmark (the event prints
    /// its string, then `delta=`).
    const TRACE: &str = "\
# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
 event_benchmark-61      [000] .....    33.284211: benchmark_event: last=1232 first=5904 max=20320 min=1216 avg=1247 std=151 std^2=22801 delta=1216
 event_benchmark-61      [000] .....    33.284227: benchmark_event: last=1216 first=5904 max=20320 min=1216 avg=1247 std=151 std^2=22801 delta=1248
";

    fn record(output: &str) -> RunRecord {
        crate::guest::workloads::finished_run("tracepoint-benchmark/5", output, 5_200_000_000)
    }

    fn spec() -> TracepointBenchmarkSpec {
        toml::from_str("").unwrap()
    }

    #[test]
    fn the_last_event_gives_the_statistics() {
        let s = last_stats(TRACE).unwrap();
        assert_eq!(
            (s.last, s.first, s.max, s.min, s.avg, s.std),
            (1216, 5904, 20320, 1216, 1247, 151)
        );
        let m = spec().measure(&record(TRACE)).unwrap();
        let names: Vec<&str> = m.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(names, ["avg", "min"]);
        assert_eq!((m[0].value, m[1].value), (1247.0, 1216.0));
        assert!(m.iter().all(|m| !m.higher_is_better && m.unit == "ns"));
    }

    #[test]
    fn too_few_writes_are_no_sample() {
        for early in [
            " event_benchmark-61 [000] ..... 1.0: benchmark_event: START delta=0\n",
            " event_benchmark-61 [000] ..... 1.0: benchmark_event: first=5904 [COLD CACHED] delta=5904\n",
        ] {
            let e = spec().measure(&record(early)).unwrap_err().to_string();
            assert!(e.contains("no statistics"), "{e}");
        }
        let e = spec()
            .measure(&record("# tracer: nop\n#\n"))
            .unwrap_err().to_string();
        assert!(e.contains("no benchmark_event"), "{e}");
    }

    #[test]
    fn frozen_statistics_are_refused() {
        let frozen = TRACE.replace("min=1216 avg", "min=1216 ** avg");
        let e = last_stats(&frozen).unwrap_err();
        let last = frozen.lines().count();
        assert_eq!(e.line.as_ref().map(|l| l.number), Some(last), "{e}");
        let e = e.to_string();
        assert!(
            e.starts_with(&format!("tracepoint-benchmark: line {last} of the output: ")),
            "{e}"
        );
        assert!(e.contains("froze"), "{e}");
    }

    #[test]
    fn garbage_is_no_sample() {
        for output in [
            "",
            "sh: can't create /sys/kernel/tracing/instances: nonexistent directory\n",
            "benchmark_event: last=x first=1 max=1 min=1 avg=1 std=1\n",
            "benchmark_event:",
        ] {
            assert!(spec().measure(&record(output)).is_err(), "{output:?}");
        }
    }

    #[test]
    fn the_command_enables_reads_and_disables_in_its_own_instance() {
        let argv = spec().command(5);
        let line = &argv[3];
        assert!(!line.contains(['\n', '\t']), "one line for the job file");
        let enable = line.find("echo 1 >").unwrap();
        let sleep = line.find("sleep 5;").unwrap();
        let disable = line.find("echo 0 >").unwrap();
        let read = line.find("tail -n 1").unwrap();
        assert!(enable < sleep && sleep < disable && disable < read, "{line}");
        assert!(line.contains("instances/markbench-tracepoint-benchmark/events/benchmark"));
        assert!(line.contains("CONFIG_TRACEPOINT_BENCHMARK=y"));
    }

    #[test]
    fn params_and_buffer_are_bounded() {
        let guest = Guest {
            cpus: &[1],
            memory_mib: 512,
        };
        assert!(spec().check(&[1, MAX_SECONDS], guest).is_ok());
        assert!(spec().check(&[MAX_SECONDS + 1], guest).is_err());
        let tiny = TracepointBenchmarkSpec { buffer_kb: 1 };
        assert!(tiny.check(&[5], guest).is_err());
        let mut params = vec![5, 10];
        spec().scale(&mut params, 0.5);
        assert_eq!(params, [3, 5]);
    }
}
