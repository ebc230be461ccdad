//! The kernel's own ring-buffer benchmark (kernel/trace/ring_buffer_benchmark.c,
//! `CONFIG_RING_BUFFER_BENCHMARK=y`), the figure Rostedt's 2009 series gave after each
//! commit of a series ("from an average of 220 ns per recording, to 183 ns").
//!
//! Built in, the benchmark starts at boot and runs until the guest powers
//! off: a producer thread writes 10-byte events into a ring buffer of its
//! own for 10 s, then sleeps 10 s, forever; a consumer reads them unless
//! `ring_buffer_benchmark.disable_reader=1`. Its other settings are kernel
//! parameters too (`ring_buffer_benchmark.X=` in a variant's `cmdline`).
//! After each period it prints its figures with trace_printk into the
//! trace buffer. A run clears the trace buffer, waits (bounded) for the
//! next `periods` periods that start after that and end, and reads them
//! from `trace_pipe`: a period that started before the run may have run
//! beside the previous workload, so it is never counted.
//!
//! Metrics, each the mean over the run's periods of what the kernel prints:
//! `ns-per-entry` (lower is better) and `entries-per-ms` (higher is
//! better); and `ns-per-write`, `Time` over `Hit` (lower is better): the
//! same figure before the kernel rounds it to whole entries per millisecond,
//! a step of about 0.5% at the rates seen under icount. The period is 10 s of the guest's clock: under icount that clock
//! counts instructions, so the figures are instructions (2^shift ns each),
//! not the host's speed. The run's own elapsed time is only how long the
//! wait was and is not a measurement.
//!
//! Two details of the benchmark shape a suite: the consumer alternates
//! between reading events and reading whole pages from one period to the
//! next, so with the reader on, consecutive periods measure two different
//! readers beside the writer (`disable_reader=1` measures the writer alone);
//! and the producer runs at nice 19, so anything else running in the boot
//! takes its time from the period.

use super::{Guest, Measurement, OutputError, Refusal, Workload};
use crate::base::protocol::RunRecord;
use serde::{Deserialize, Serialize};

/// Where the guest mounts tracefs.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// The workload's kind, as a suite names it and its errors begin.
const KIND: &str = "ring-buffer";

/// The benchmark's parameters in sysfs: present when it is built in.
const MODULE_DIR: &str = "/sys/module/ring_buffer_benchmark";

/// The length of one benchmark period (10 s writing, 10 s sleeping) in the
/// guest's seconds, fixed in the kernel's source.
const PERIOD_S: u64 = 20;

/// The most periods one run may wait for: each is 20 s of guest time.
pub const MAX_PERIODS: u64 = 30;

/// The ring-buffer benchmark's settings. The sweep parameter is how many
/// consecutive periods one run waits for and averages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RingBufferSpec {
    /// Guest seconds a run waits beyond its periods' own 20 s each (the
    /// wait for the next period to start is up to one period): past it the
    /// run fails, naming the kernel option it needs.
    #[serde(default = "default_slack_s")]
    pub slack_s: u64,
}

fn default_slack_s() -> u64 {
    60
}

/// One period of the benchmark as it printed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Period {
    /// `Time: N (usecs)`: how long the producer wrote.
    pub time_us: u64,
    /// `Hit: N`: events written.
    pub hit: u64,
    /// `Entries per millisec: N`.
    pub entries_per_ms: u64,
    /// The first `N ns per entry` after it (a second one follows when
    /// writes were missed, counting the misses too).
    pub ns_per_entry: u64,
}

/// The shell line one run executes: clear the trace buffer, then print the
/// trace lines of the next `periods` periods that start after that, from the
/// `Starting` line through the `Sleeping` line the producer prints last.
///
/// The bound is a watcher of the shell's own rather than busybox `timeout`,
/// whose helper outlives the command by up to a second: the agent counts a
/// process left in the command's group as a failed run. The watcher kills
/// its `sleep` and reaps it before it exits, so nothing outlives the run.
fn script(periods: u64, wait_s: u64) -> String {
    script_at(MODULE_DIR, TRACEFS, periods, wait_s)
}

/// [`script`] with the module's sysfs directory and tracefs elsewhere, so
/// the shell logic can be run outside a guest.
fn script_at(module_dir: &str, tracefs: &str, periods: u64, wait_s: u64) -> String {
    format!(
        "[ -d {module_dir} ] || {{ echo 'ring-buffer: this kernel has no \
         ring-buffer benchmark (build it with CONFIG_RING_BUFFER_BENCHMARK=y)'; exit 3; }}; \
         [ -e {tracefs}/trace_pipe ] || mount -t tracefs nodev {tracefs} || exit 3; \
         : > {tracefs}/trace || exit 3; \
         awk -v periods={periods} \
         '/Starting ring buffer hammer/ {{ started = 1 }} started {{ print }} \
         started && /Sleeping for 10 secs/ {{ started = 0; if (++done == periods) exit }}' \
         {tracefs}/trace_pipe & reader=$!; \
         ( trap 'kill $timer 2>/dev/null; wait $timer; exit 0' TERM; \
         sleep {wait_s} & timer=$!; wait $timer && kill $reader ) & watcher=$!; \
         wait $reader; status=$?; kill $watcher 2>/dev/null; wait $watcher; \
         [ $status = 143 ] && echo \"ring-buffer: no {periods} complete period(s) within \
         {wait_s} s of guest time\"; exit $status"
    )
}

/// The value after `key` on a line, up to the next blank.
fn number_after(line: &str, key: &str) -> Option<u64> {
    let (_, rest) = line.split_once(key)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// The periods in trace output, each from its `Starting ring buffer hammer`
/// to its `Sleeping for 10 secs`. A period the benchmark flagged (`ERROR!`,
/// a zero time) or one missing a figure is an error: its figures would not be
/// the benchmark's. Lines before the first `Starting` (a period already under
/// way) are ignored.
pub fn parse_periods(output: &str) -> Result<Vec<Period>, OutputError> {
    #[derive(Default)]
    struct Partial {
        time_us: Option<u64>,
        hit: Option<u64>,
        entries_per_ms: Option<u64>,
        ns_per_entry: Option<u64>,
    }
    let mut periods = Vec::new();
    let mut current: Option<Partial> = None;
    for (index, line) in output.lines().enumerate() {
        let at = |problem: String| OutputError::at_line(KIND, index + 1, line, problem);
        if line.contains("Starting ring buffer hammer") {
            current = Some(Partial::default());
            continue;
        }
        let Some(p) = current.as_mut() else { continue };
        let number = periods.len() + 1;
        if line.contains("ERROR!") {
            return Err(at(format!(
                "period {number}: the benchmark found an error in the ring buffer's contents"
            )));
        }
        if line.contains("TIME IS ZERO") {
            return Err(at(format!(
                "period {number}: the benchmark measured a time of zero"
            )));
        }
        if let Some(v) = number_after(line, "Time:") {
            p.time_us = Some(v);
        } else if let Some(v) = number_after(line, "Hit:") {
            p.hit = Some(v);
        } else if let Some(v) = number_after(line, "Entries per millisec:") {
            p.entries_per_ms = Some(v);
        } else if line.trim_end().ends_with(" ns per entry") && p.entries_per_ms.is_some() {
            if p.ns_per_entry.is_none() {
                let before = line.trim_end().trim_end_matches(" ns per entry");
                p.ns_per_entry = before
                    .rsplit(|c: char| c.is_whitespace() || c == ':')
                    .next()
                    .and_then(|n| n.parse().ok());
            }
        } else if line.contains("Sleeping for 10 secs") {
            let p = current.take().unwrap_or_default();
            match (p.time_us, p.hit, p.entries_per_ms, p.ns_per_entry) {
                (Some(time_us), Some(hit), Some(entries_per_ms), Some(ns_per_entry)) => {
                    periods.push(Period {
                        time_us,
                        hit,
                        entries_per_ms,
                        ns_per_entry,
                    })
                }
                _ => {
                    return Err(at(format!(
                        "period {number} ended without its Time, Hit, Entries per millisec \
                         and ns per entry lines"
                    )))
                }
            }
        }
    }
    Ok(periods)
}

impl Period {
    /// `Time` over `Hit`: the kernel's ns per entry without its rounding to
    /// whole entries per millisecond (one entry/ms is 0.5% at 184/ms).
    pub fn ns_per_write(&self) -> f64 {
        self.time_us as f64 * 1000.0 / self.hit as f64
    }
}

impl RingBufferSpec {
    /// Guest seconds a run of `periods` periods may take.
    fn wait_s(&self, periods: u64) -> u64 {
        (periods + 1) * PERIOD_S + self.slack_s
    }
}

impl Workload for RingBufferSpec {
    const PARAM_LABEL: &'static str = "periods";

    fn check(&self, params: &[u64], _guest: Guest<'_>) -> Result<(), Refusal> {
        match params.iter().find(|&&p| p > MAX_PERIODS) {
            Some(p) => Err(format!(
                "ring-buffer: params must be at most {MAX_PERIODS} periods a run ({p} is \
                 {} s of guest time); add iterations instead",
                p * PERIOD_S
            )
            .into()),
            None => Ok(()),
        }
    }

    /// A run's work is its periods, the parameter itself.
    fn scale(&mut self, params: &mut Vec<u64>, factor: f64) {
        super::scale_work_params(params, factor, MAX_PERIODS);
    }

    fn command(&self, periods: u64) -> Vec<String> {
        vec![
            "/bin/busybox".into(),
            "sh".into(),
            "-c".into(),
            script(periods, self.wait_s(periods)),
        ]
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
        let periods = parse_periods(&record.output)?;
        if periods.is_empty() {
            return Err(
                OutputError::new(KIND, "no complete benchmark period in the trace")
                    .with_output(record.output.trim()),
            );
        }
        let mean = |f: fn(&Period) -> u64| {
            periods.iter().map(|p| f(p) as f64).sum::<f64>() / periods.len() as f64
        };
        if periods.iter().any(|p| p.hit == 0 || p.time_us == 0) {
            return Err(OutputError::new(KIND, "a period wrote no events"));
        }
        Ok(vec![
            Measurement {
                metric: "ns-per-entry".into(),
                unit: "ns".into(),
                higher_is_better: false,
                value: mean(|p| p.ns_per_entry),
            },
            Measurement {
                metric: "entries-per-ms".into(),
                unit: "entries/ms".into(),
                higher_is_better: true,
                value: mean(|p| p.entries_per_ms),
            },
            Measurement {
                metric: "ns-per-write".into(),
                unit: "ns".into(),
                higher_is_better: false,
                value: periods.iter().map(Period::ns_per_write).sum::<f64>()
                    / periods.len() as f64,
            },
        ])
    }

    fn describe(&self, params: &str) -> String {
        format!(
            "ring_buffer_benchmark: the next {params} period(s) of 10 s writing + 10 s sleeping, \
             read from {TRACEFS}/trace_pipe"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `trace_pipe` gives for one period of the 6.1 benchmark with the
    /// reader on (the layout of trace_printk's lines: task-pid, CPU, flags,
    /// time stamp, function).
    const PERIOD: &str = "\
 rb_producer-45      [000] .....    40.120003: ring_buffer_producer: Starting ring buffer hammer
 rb_producer-45      [000] .....    50.120011: ring_buffer_producer: End ring buffer hammer
 rb_producer-45      [000] .....    50.131207: ring_buffer_producer: Running Consumer at nice: 19
 rb_producer-45      [000] .....    50.131210: ring_buffer_producer: Running Producer at nice: 19
 rb_producer-45      [000] .....    50.131211: ring_buffer_producer: WARNING!!! This test is running at lowest priority.
 rb_producer-45      [000] .....    50.131213: ring_buffer_producer: Time:     10000007 (usecs)
 rb_producer-45      [000] .....    50.131214: ring_buffer_producer: Overruns: 0
 rb_producer-45      [000] .....    50.131215: ring_buffer_producer: Read:     2871300  (by events)
 rb_producer-45      [000] .....    50.131216: ring_buffer_producer: Entries:  0
 rb_producer-45      [000] .....    50.131217: ring_buffer_producer: Total:    2871300
 rb_producer-45      [000] .....    50.131218: ring_buffer_producer: Missed:   0
 rb_producer-45      [000] .....    50.131219: ring_buffer_producer: Hit:      2871300
 rb_producer-45      [000] .....    50.131220: ring_buffer_producer: Entries per millisec: 287
 rb_producer-45      [000] .....    50.131221: ring_buffer_producer: 3484 ns per entry
 rb_producer-45      [000] .....    50.131222: ring_buffer_producer: Sleeping for 10 secs
";

    fn record(output: &str) -> RunRecord {
        crate::guest::workloads::finished_run("ring-buffer/1", output, 31_000_000_000)
    }

    fn spec() -> RingBufferSpec {
        toml::from_str("").unwrap()
    }

    fn value(m: &[Measurement], metric: &str) -> f64 {
        m.iter().find(|m| m.metric == metric).unwrap().value
    }

    #[test]
    fn one_period_gives_the_kernels_figures() {
        let periods = parse_periods(PERIOD).unwrap();
        assert_eq!(
            periods,
            [Period {
                time_us: 10_000_007,
                hit: 2_871_300,
                entries_per_ms: 287,
                ns_per_entry: 3484,
            }]
        );
        let m = spec().measure(&record(PERIOD)).unwrap();
        assert_eq!(value(&m, "ns-per-entry"), 3484.0);
        assert_eq!(value(&m, "entries-per-ms"), 287.0);
        let exact = value(&m, "ns-per-write");
        assert!((exact - 10_000_007_000.0 / 2_871_300.0).abs() < 1e-9, "{exact}");
        let ns = m.iter().find(|m| m.metric == "ns-per-entry").unwrap();
        assert!(!ns.higher_is_better && ns.unit == "ns");
        assert!(m.iter().any(|m| m.metric == "entries-per-ms" && m.higher_is_better));
    }

    #[test]
    fn several_periods_average_and_a_period_under_way_is_skipped() {
        let second = PERIOD
            .replace("3484 ns per entry", "3500 ns per entry")
            .replace("millisec: 287", "millisec: 285");
        // The tail of a period that started before the run: no Starting line.
        let tail = PERIOD
            .lines()
            .skip(1)
            .map(|l| l.replace("3484", "1"))
            .collect::<Vec<_>>()
            .join("\n");
        let output = format!("{tail}\n{PERIOD}{second}");
        assert_eq!(parse_periods(&output).unwrap().len(), 2);
        let m = spec().measure(&record(&output)).unwrap();
        assert_eq!(value(&m, "ns-per-entry"), 3492.0);
        assert_eq!(value(&m, "entries-per-ms"), 286.0);
    }

    #[test]
    fn missed_writes_keep_the_first_ns_per_entry() {
        let missed = PERIOD.replace(
            "3484 ns per entry\n",
            "3484 ns per entry\n x: Total iterations per millisec: 300\n x: 3333 ns per entry\n",
        );
        assert_eq!(parse_periods(&missed).unwrap()[0].ns_per_entry, 3484);
    }

    #[test]
    fn an_incomplete_period_is_no_sample() {
        // Cut off before the Sleeping line (the run's wait ran out).
        let cut: String = PERIOD.lines().take(9).map(|l| format!("{l}\n")).collect();
        assert_eq!(parse_periods(&cut).unwrap(), []);
        let e = spec().measure(&record(&cut)).unwrap_err().to_string();
        assert!(e.contains("no complete benchmark period"), "{e}");
        // Ended, but a figure is missing.
        let no_hit: String = PERIOD
            .lines()
            .filter(|l| !l.contains("Hit:"))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = parse_periods(&no_hit).unwrap_err();
        let ended = no_hit
            .lines()
            .position(|l| l.contains("Sleeping for 10 secs"))
            .unwrap();
        assert_eq!(e.line.as_ref().map(|l| l.number), Some(ended + 1), "{e}");
        let e = e.to_string();
        assert!(
            e.starts_with(&format!("ring-buffer: line {} of the output: ", ended + 1)),
            "{e}"
        );
        assert!(e.contains("period 1 ended without"), "{e}");
    }

    #[test]
    fn the_benchmarks_own_errors_are_refused() {
        let error = PERIOD.replace("Overruns: 0", "ERROR!");
        let e = parse_periods(&error).unwrap_err();
        assert!(e.problem.contains("error"), "{e}");
        let line = e.line.as_ref().expect("the error names its line");
        assert!(line.text.ends_with("ring_buffer_producer: ERROR!"), "{e}");
        assert_eq!(
            error.lines().nth(line.number - 1),
            Some(line.text.as_str()),
            "{e}"
        );
        let zero = PERIOD.replace("Overruns: 0", "TIME IS ZERO??");
        assert!(parse_periods(&zero)
            .unwrap_err()
            .to_string()
            .contains("time of zero"));
    }

    #[test]
    fn garbage_is_no_sample() {
        for output in ["", "sh: awk: not found\n", "Starting ring buffer hammer\n\u{0}\u{1}"] {
            assert!(spec().measure(&record(output)).is_err(), "{output:?}");
        }
        let garbled = PERIOD.replace("Time:     10000007", "Time:     ten");
        assert!(parse_periods(&garbled).is_err());
    }

    #[test]
    fn the_command_waits_for_whole_periods_within_a_bound() {
        let argv = spec().command(3);
        assert_eq!(argv[..3], ["/bin/busybox", "sh", "-c"]);
        let line = &argv[3];
        assert!(!line.contains(['\n', '\t']), "one line for the job file");
        assert!(line.contains("awk -v periods=3"), "{line}");
        assert!(line.contains("sleep 140 &"), "{line}");
        assert!(line.contains(": > /sys/kernel/tracing/trace"), "{line}");
        assert!(line.contains("CONFIG_RING_BUFFER_BENCHMARK=y"), "{line}");
    }

    /// Runs the run's shell line with busybox on the host, with a FIFO as
    /// `trace_pipe` fed `feed` (nothing: no writer ever opens it), in a
    /// process group of its own as the agent runs it. Returns the exit
    /// status, the output, and whether any process of the group outlived it.
    fn run_script(periods: u64, wait_s: u64, feed: Option<&str>) -> (i32, String, bool) {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("module");
        let tracefs = dir.path().join("tracing");
        std::fs::create_dir_all(&module).unwrap();
        std::fs::create_dir_all(&tracefs).unwrap();
        std::fs::write(tracefs.join("trace"), "old lines").unwrap();
        let pipe = tracefs.join("trace_pipe");
        let made = std::process::Command::new("mkfifo").arg(&pipe).status();
        assert!(made.unwrap().success(), "mkfifo");
        let line = script_at(
            module.to_str().unwrap(),
            tracefs.to_str().unwrap(),
            periods,
            wait_s,
        );
        let child = std::process::Command::new("/bin/busybox")
            .args(["sh", "-c", &line])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("/bin/busybox (the guest's shell) on the host");
        let group = child.id() as i32;
        let writer = feed.map(|text| {
            let (pipe, text) = (pipe.clone(), text.to_string());
            std::thread::spawn(move || std::fs::write(pipe, text).unwrap())
        });
        let out = child.wait_with_output().unwrap();
        if let Some(w) = writer {
            w.join().unwrap();
        }
        // SAFETY: signal 0 only asks whether the group still has a process.
        let outlived = unsafe { libc::kill(-group, 0) } == 0;
        assert_eq!(std::fs::read_to_string(tracefs.join("trace")).unwrap(), "");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            outlived,
        )
    }

    #[test]
    fn the_shell_line_prints_the_next_period_and_leaves_nothing_running() {
        let feed = format!("partial: 1 ns per entry\nSleeping for 10 secs\n{PERIOD}{PERIOD}");
        let started = std::time::Instant::now();
        // A watcher left running would hold the line until its bound: a
        // bound far beyond what a loaded host takes to run the line tells
        // the two apart.
        let (status, output, outlived) = run_script(1, 300, Some(&feed));
        assert_eq!(status, 0, "{output}");
        assert!(started.elapsed().as_secs() < 300, "the watcher was not stopped");
        assert!(!outlived, "a process of the run outlived it");
        assert_eq!(parse_periods(&output).unwrap().len(), 1, "{output}");
        assert!(!output.contains("partial"), "{output}");
    }

    #[test]
    fn the_shell_line_gives_up_after_its_bound() {
        let (status, output, outlived) = run_script(1, 1, None);
        assert_eq!(status, 143, "{output}");
        assert!(
            output.contains("no 1 complete period(s) within 1 s"),
            "{output}"
        );
        assert!(!outlived);
        let e = spec().measure(&record(&output)).unwrap_err().to_string();
        assert!(e.contains("no complete benchmark period"), "{e}");
    }

    #[test]
    fn params_are_bounded_and_scale_as_periods() {
        let guest = Guest {
            cpus: &[1],
            memory_mib: 512,
        };
        assert!(spec().check(&[1, MAX_PERIODS], guest).is_ok());
        let e = spec().check(&[MAX_PERIODS + 1], guest).unwrap_err().message;
        assert!(e.contains("at most 30 periods"), "{e}");
        let mut params = vec![1, 2];
        spec().scale(&mut params, 2.0);
        assert_eq!(params, [2, 4]);
        let mut params = vec![1, 2];
        spec().scale(&mut params, 0.1);
        assert_eq!(params, [1]);
    }
}
