//! The Desnoyers 2006 micro-benchmark of a marker: TSC cycles per iteration of an
//! empty loop and of a 4 KiB memcpy loop, each without a marker, with a
//! dormant one and with it enabled and an empty probe connected.
//!
//! The loops are kernel code of markbench's own
//! (`vm-images/patches/markbench-micro.patch`, `CONFIG_MARKBENCH_MICRO`),
//! built into the kernels of a micro suite: tinyconfig kernels have no
//! modules. Writing "EMPTY MEMCPY" to `/proc/markbench_micro` sets the two
//! loops' iteration counts; reading it runs every measurement with
//! interrupts off and prints one line each:
//!
//! ```text
//! markbench-micro jump_label=y
//! markbench-micro loop=empty marker=none iterations=10000000 cycles=15026497
//! ```
//!
//! The sweep parameter is the empty loop's iteration count (the seed's
//! 10,000,000); `memcpy_iterations` is the copy loop's (the seed's 10,000).
//!
//! Metrics, all in TSC cycles per iteration (lower is better): `LOOP/none`,
//! `LOOP/dormant` and `LOOP/enabled` for each loop, and the differences the
//! seed printed: `LOOP/marker` (dormant − none: what a dormant marker costs)
//! and `LOOP/probe` (enabled − dormant: what the enabled marker and its empty
//! probe add, the seed's "52.11−4.00=48.11"). Under icount the guest's TSC
//! follows the instruction count, so the figures count instructions.
//!
//! Under the cycle model (`--model cycles`) the kernel code marks each timed
//! loop as a part of the run (loop index × 3 + marker index, the order of
//! [`Loop::ALL`] and [`Marker::ALL`]), and each of the model's points per
//! loop becomes a metric of its own, `LOOP/MARKER/POINT` per iteration
//! (`empty/dormant/estimated-cycles`), beside the whole run's points.

use super::{Guest, Measurement, ModelParts, OutputError, Refusal, Workload};
use crate::base::protocol::RunRecord;
use serde::{Deserialize, Serialize};

/// The file the patch adds in the guest.
pub const PROC_FILE: &str = "/proc/markbench_micro";

/// The prefix of every line the kernel code prints.
const LINE_PREFIX: &str = "markbench-micro";

/// The workload's kind, as a suite names it and its errors begin.
const KIND: &str = "micro";

/// The kernel code refuses counts above this (a loop of 10⁹ iterations with
/// interrupts off is already far past what a guest tolerates).
pub const MAX_ITERATIONS: u64 = 1_000_000_000;

/// The unit of every metric: what `rdtsc` counts, which is a core's cycles
/// only on CPUs whose TSC follows the core clock (the Pentium 4 of Desnoyers' 2006 mails);
/// an invariant TSC ticks at a fixed rate, and icount's at 2^shift per
/// instruction. The report's Cost table says which in its caption.
pub const UNIT: &str = "TSC ticks";

/// The micro-benchmark's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MicroSpec {
    /// Iterations of the 4 KiB memcpy loop.
    #[serde(default = "default_memcpy_iterations")]
    pub memcpy_iterations: u64,
}

fn default_memcpy_iterations() -> u64 {
    10_000
}

/// The loops the kernel code times, in the order it prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Loop {
    Empty,
    Memcpy,
}

/// The marker in a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Marker {
    /// No marker at all.
    None,
    /// A `static_branch_unlikely()` on a false key.
    Dormant,
    /// The same marker with the key enabled, calling an empty probe.
    Enabled,
}

impl Loop {
    pub const ALL: [Loop; 2] = [Loop::Empty, Loop::Memcpy];

    /// The name in the kernel's lines and in the metrics.
    pub fn name(self) -> &'static str {
        match self {
            Loop::Empty => "empty",
            Loop::Memcpy => "memcpy",
        }
    }

    fn from_name(name: &str) -> Option<Loop> {
        Loop::ALL.into_iter().find(|l| l.name() == name)
    }
}

impl Marker {
    pub const ALL: [Marker; 3] = [Marker::None, Marker::Dormant, Marker::Enabled];

    /// The name in the kernel's lines and in the metrics.
    pub fn name(self) -> &'static str {
        match self {
            Marker::None => "none",
            Marker::Dormant => "dormant",
            Marker::Enabled => "enabled",
        }
    }

    fn from_name(name: &str) -> Option<Marker> {
        Marker::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The metric of a loop with a marker: `empty/dormant`.
pub fn metric(l: Loop, m: Marker) -> String {
    format!("{}/{}", l.name(), m.name())
}

/// The metric of what a dormant marker adds to a loop: `empty/marker`.
pub fn marker_cost_metric(l: Loop) -> String {
    format!("{}/marker", l.name())
}

/// The metric of what enabling the marker (and calling its empty probe)
/// adds over the dormant marker: `empty/probe`.
pub fn probe_cost_metric(l: Loop) -> String {
    format!("{}/probe", l.name())
}

/// The metric of one of the cycle model's points per iteration of a loop
/// with a marker: `empty/dormant/estimated-cycles`.
pub fn model_metric(l: Loop, m: Marker, point: &str) -> String {
    format!("{}/{point}", metric(l, m))
}

/// The part number the kernel code gives a loop with a marker.
pub fn part(l: Loop, m: Marker) -> u8 {
    let loop_index = Loop::ALL.iter().position(|&x| x == l).unwrap_or(0);
    let marker_index = Marker::ALL.iter().position(|&x| x == m).unwrap_or(0);
    (loop_index * Marker::ALL.len() + marker_index) as u8
}

/// One measurement line of the kernel code.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub l: Loop,
    pub marker: Marker,
    pub iterations: u64,
    pub cycles: u64,
}

impl Timing {
    pub fn per_iteration(&self) -> f64 {
        self.cycles as f64 / self.iterations as f64
    }
}

/// Reads `key=value` from one field; the error says what was expected.
fn field<'a>(token: Option<&'a str>, key: &str) -> Result<&'a str, String> {
    token
        .and_then(|t| t.strip_prefix(key))
        .and_then(|t| t.strip_prefix('='))
        .ok_or_else(|| format!("expected {key}=…"))
}

/// One `markbench-micro loop=… marker=… iterations=… cycles=…` line; the
/// error says what is wrong with it ([`parse`] adds where it is).
fn parse_line(line: &str) -> Result<Timing, String> {
    let mut tokens = line.split_whitespace().skip(1);
    let l = field(tokens.next(), "loop")?;
    let l = Loop::from_name(l).ok_or_else(|| format!("unknown loop {l:?}"))?;
    let marker = field(tokens.next(), "marker")?;
    let marker = Marker::from_name(marker).ok_or_else(|| format!("unknown marker {marker:?}"))?;
    let iterations: u64 = field(tokens.next(), "iterations")?
        .parse()
        .map_err(|e| format!("iterations: {e}"))?;
    let cycles: u64 = field(tokens.next(), "cycles")?
        .parse()
        .map_err(|e| format!("cycles: {e}"))?;
    if iterations == 0 {
        return Err("iterations=0".into());
    }
    if tokens.next().is_some() {
        return Err("unexpected text after cycles=…".into());
    }
    Ok(Timing {
        l,
        marker,
        iterations,
        cycles,
    })
}

/// Every (loop, marker) timing of the kernel code's output, in the order
/// of [`Loop::ALL`] × [`Marker::ALL`]; an error naming the first line that
/// does not read, or the measurements missing or given twice.
pub fn parse(output: &str) -> Result<Vec<Timing>, OutputError> {
    let mut timings: Vec<Timing> = Vec::new();
    for (number, line) in output.lines().enumerate() {
        let line = line.trim();
        let is_ours = line.split_whitespace().next() == Some(LINE_PREFIX);
        // The header line says which marker the kernel has; nothing to measure.
        if !is_ours || line.contains("jump_label=") {
            continue;
        }
        let t = parse_line(line).map_err(|e| OutputError::at_line(KIND, number + 1, line, e))?;
        if timings
            .iter()
            .any(|s| (s.l, s.marker) == (t.l, t.marker))
        {
            return Err(OutputError::at_line(
                KIND,
                number + 1,
                line,
                format!("{} given twice", metric(t.l, t.marker)),
            ));
        }
        timings.push(t);
    }
    let missing: Vec<String> = Loop::ALL
        .iter()
        .flat_map(|&l| Marker::ALL.map(|m| (l, m)))
        .filter(|&(l, m)| !timings.iter().any(|t| (t.l, t.marker) == (l, m)))
        .map(|(l, m)| metric(l, m))
        .collect();
    if !missing.is_empty() {
        return Err(OutputError::new(
            KIND,
            format!(
                "no {} line for {} (is the kernel built with {PROC_FILE}, \
                 CONFIG_MARKBENCH_MICRO?)",
                LINE_PREFIX,
                missing.join(", ")
            ),
        ));
    }
    timings.sort_by_key(|t| (t.l, t.marker));
    Ok(timings)
}

/// The cycle model's points per iteration of each timed loop, from the
/// counts of the run's parts: every loop's part must be there (a kernel
/// that marks none gives no parts at all, and is never asked).
pub fn model_measurements(
    timings: &[Timing],
    parts: &ModelParts,
) -> Result<Vec<Measurement>, OutputError> {
    let known: Vec<u8> = timings.iter().map(|t| part(t.l, t.marker)).collect();
    if let Some(unknown) = parts.keys().find(|p| !known.contains(p)) {
        return Err(OutputError::new(
            KIND,
            format!(
                "the cycle model counted a part {unknown}, which is no loop's (0 to {})",
                Loop::ALL.len() * Marker::ALL.len() - 1
            ),
        ));
    }
    let mut out = Vec::new();
    for t in timings {
        let Some(counts) = parts.get(&part(t.l, t.marker)) else {
            return Err(OutputError::new(
                KIND,
                format!(
                    "the cycle model counted no part {} ({})",
                    part(t.l, t.marker),
                    metric(t.l, t.marker)
                ),
            ));
        };
        for (point, unit, value) in crate::base::cycle_model::metrics(counts) {
            out.push(Measurement {
                metric: model_metric(t.l, t.marker, point),
                unit: unit.into(),
                higher_is_better: false,
                value: value as f64 / t.iterations as f64,
            });
        }
    }
    Ok(out)
}

/// The measurements of one run: cycles per iteration of every (loop,
/// marker) and, per loop, the dormant marker's and the probe's cost.
pub fn measurements(timings: &[Timing]) -> Vec<Measurement> {
    let cycles = |metric: String, value: f64| Measurement {
        metric,
        unit: UNIT.into(),
        higher_is_better: false,
        value,
    };
    let per = |l: Loop, m: Marker| {
        timings
            .iter()
            .find(|t| (t.l, t.marker) == (l, m))
            .map(Timing::per_iteration)
    };
    let mut out: Vec<Measurement> = timings
        .iter()
        .map(|t| cycles(metric(t.l, t.marker), t.per_iteration()))
        .collect();
    for l in Loop::ALL {
        if let (Some(none), Some(dormant)) = (per(l, Marker::None), per(l, Marker::Dormant)) {
            out.push(cycles(marker_cost_metric(l), dormant - none));
            if let Some(enabled) = per(l, Marker::Enabled) {
                out.push(cycles(probe_cost_metric(l), enabled - dormant));
            }
        }
    }
    out
}

impl Workload for MicroSpec {
    const PARAM_LABEL: &'static str = "loops";

    fn check(&self, params: &[u64], _guest: Guest<'_>) -> Result<(), Refusal> {
        if self.memcpy_iterations == 0 || self.memcpy_iterations > MAX_ITERATIONS {
            return Err(format!(
                "micro: memcpy_iterations = {} must be 1 to {MAX_ITERATIONS}",
                self.memcpy_iterations
            )
            .into());
        }
        match params.iter().find(|&&p| p > MAX_ITERATIONS) {
            Some(p) => Err(format!(
                "micro: params are the empty loop's iterations; {p} is above the kernel code's {MAX_ITERATIONS}"
            )
            .into()),
            None => Ok(()),
        }
    }

    fn scale(&mut self, params: &mut Vec<u64>, factor: f64) {
        for p in params.iter_mut() {
            *p = super::scaled(*p, factor);
        }
        self.memcpy_iterations = super::scaled(self.memcpy_iterations, factor);
    }

    fn command(&self, empty_iterations: u64) -> Vec<String> {
        vec![
            "/bin/busybox".into(),
            "sh".into(),
            "-c".into(),
            format!(
                "echo {empty_iterations} {} > {PROC_FILE} && cat {PROC_FILE}",
                self.memcpy_iterations
            ),
        ]
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
        let timings = parse(&record.output).map_err(|e| {
            e.with_output(record.output.trim().chars().take(400).collect::<String>())
        })?;
        Ok(measurements(&timings))
    }

    fn model_parts(
        &self,
        record: &RunRecord,
        parts: &ModelParts,
    ) -> Result<Vec<Measurement>, OutputError> {
        let timings = parse(&record.output)?;
        model_measurements(&timings, parts)
    }

    fn describe(&self, params: &str) -> String {
        format!(
            "micro: {PROC_FILE}, empty loop × {params}, 4 KiB memcpy loop × {} (no marker, dormant, enabled)",
            self.memcpy_iterations
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines the kernel code prints, in its order: the dormant marker
    /// of each loop right after the loop without one, then the enabled ones.
    fn output(cycles: [u64; 6]) -> String {
        let order = [
            (Loop::Empty, Marker::None),
            (Loop::Empty, Marker::Dormant),
            (Loop::Memcpy, Marker::None),
            (Loop::Memcpy, Marker::Dormant),
            (Loop::Empty, Marker::Enabled),
            (Loop::Memcpy, Marker::Enabled),
        ];
        let mut text = String::from("markbench-micro jump_label=y\n");
        for ((l, marker), cycles) in order.into_iter().zip(cycles) {
            let iterations = if l == Loop::Empty { 1000 } else { 10 };
            text.push_str(&format!(
                "markbench-micro loop={} marker={} iterations={iterations} cycles={cycles}\n",
                l.name(),
                marker.name(),
            ));
        }
        text
    }

    fn record(output: &str) -> RunRecord {
        crate::guest::workloads::finished_run("micro/1000", output, 1)
    }

    fn spec() -> MicroSpec {
        toml::from_str("").unwrap()
    }

    fn value(m: &[Measurement], metric: &str) -> f64 {
        m.iter()
            .find(|m| m.metric == metric)
            .unwrap_or_else(|| panic!("no {metric} in {m:?}"))
            .value
    }

    #[test]
    fn good_output_gives_cycles_per_iteration_and_the_costs() {
        let m = spec()
            .measure(&record(&output([1500, 4000, 12980, 12990, 52000, 13500])))
            .unwrap();
        assert_eq!(m.len(), 10);
        assert_eq!(value(&m, "empty/none"), 1.5);
        assert_eq!(value(&m, "empty/dormant"), 4.0);
        assert_eq!(value(&m, "empty/enabled"), 52.0);
        assert_eq!(value(&m, "memcpy/none"), 1298.0);
        assert_eq!(value(&m, "memcpy/dormant"), 1299.0);
        assert_eq!(value(&m, "memcpy/enabled"), 1350.0);
        assert_eq!(value(&m, "empty/marker"), 2.5);
        assert_eq!(value(&m, "memcpy/marker"), 1.0);
        assert_eq!(value(&m, "empty/probe"), 48.0);
        assert_eq!(value(&m, "memcpy/probe"), 51.0);
        assert!(m.iter().all(|m| m.unit == UNIT && !m.higher_is_better));
    }

    #[test]
    fn console_noise_around_the_lines_is_ignored() {
        let text = format!(
            "[   1.0] random: crng init done\n{}sh: warning\n",
            output([1, 2, 3, 4, 5, 6])
        );
        assert_eq!(parse(&text).unwrap().len(), 6);
    }

    #[test]
    fn a_missing_line_is_named() {
        let text: String = output([1, 2, 3, 4, 5, 6])
            .lines()
            .filter(|l| !l.contains("loop=memcpy marker=dormant"))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = spec().measure(&record(&text)).unwrap_err().to_string();
        assert!(e.starts_with("micro: no markbench-micro line for memcpy/dormant"), "{e}");
        assert!(!e.contains("empty/none"), "{e}");
        let e = spec().measure(&record("sh: can't create /proc/markbench_micro: nonexistent directory\n")).unwrap_err().to_string();
        assert!(e.contains("empty/none") && e.contains("CONFIG_MARKBENCH_MICRO"), "{e}");
    }

    #[test]
    fn garbage_in_a_line_is_an_error_naming_the_line() {
        for (bad, why) in [
            ("markbench-micro loop=empty marker=none iterations=10 cycles=x", "cycles"),
            ("markbench-micro loop=empty marker=none iterations=0 cycles=5", "iterations=0"),
            ("markbench-micro loop=spin marker=none iterations=10 cycles=5", "unknown loop"),
            ("markbench-micro loop=empty marker=hot iterations=10 cycles=5", "unknown marker"),
            ("markbench-micro loop=empty marker=none cycles=5", "expected iterations="),
            ("markbench-micro loop=empty marker=none iterations=1 cycles=5 x", "unexpected text"),
        ] {
            let text = format!("markbench-micro jump_label=n\n{bad}\n");
            let e = parse(&text).unwrap_err();
            assert_eq!(e.line.as_ref().map(|l| (l.number, l.text.as_str())), Some((2, bad)));
            assert!(e.problem.contains(why), "{bad}: {e}");
            let e = e.to_string();
            assert!(e.starts_with("micro: line 2 of the output: ") && e.contains(why), "{bad}: {e}");
        }
        let twice = format!(
            "{}markbench-micro loop=empty marker=none iterations=1 cycles=5\n",
            output([1, 2, 3, 4, 5, 6])
        );
        let e = parse(&twice).unwrap_err().to_string();
        assert!(e.contains("line 8 of the output: empty/none given twice"), "{e}");
    }

    #[test]
    fn the_command_sets_both_counts_then_reads_the_file() {
        let spec = MicroSpec {
            memcpy_iterations: 10_000,
        };
        assert_eq!(
            spec.command(10_000_000)[3],
            "echo 10000000 10000 > /proc/markbench_micro && cat /proc/markbench_micro"
        );
    }

    #[test]
    fn counts_the_kernel_refuses_are_refused_and_scale_moves_both() {
        let guest = Guest {
            cpus: &[1],
            memory_mib: 512,
        };
        assert!(spec().check(&[10_000_000], guest).is_ok());
        let e = spec().check(&[MAX_ITERATIONS + 1], guest).unwrap_err();
        assert!(e.message.contains("above the kernel code's"), "{e:?}");
        let zero = MicroSpec {
            memcpy_iterations: 0,
        };
        assert!(zero.check(&[1], guest).is_err());
        let mut s = spec();
        let mut params = vec![10_000_000];
        s.scale(&mut params, 0.01);
        assert_eq!((params, s.memcpy_iterations), (vec![100_000], 100));
    }

    /// The counts the plugin writes for one part, as the host reads them.
    fn counts(instructions: u64, l1d: u64, mispredicts: u64) -> crate::base::cycle_model::RegionCounts {
        [
            ("kernel:instructions", instructions),
            ("kernel:estimated-cycles", instructions + 14 * l1d + 17 * mispredicts),
            ("kernel:l1d-misses", l1d),
            ("kernel:conditional-mispredicts", mispredicts),
            ("user:instructions", 0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn all_parts() -> ModelParts {
        (0..6u8).map(|p| (p, counts(1000 * (p as u64 + 1), p as u64, 10))).collect()
    }

    #[test]
    fn each_loops_model_counts_become_points_per_iteration() {
        let text = output([1500, 4000, 12980, 12990, 52000, 13500]);
        let m = spec().model_parts(&record(&text), &all_parts()).unwrap();
        assert_eq!(m.len(), 6 * crate::base::cycle_model::METRICS.len());
        // empty loops run 1000 iterations, memcpy loops 10 (see `output`).
        assert_eq!(value(&m, "empty/none/instructions"), 1.0);
        assert_eq!(value(&m, "empty/dormant/l1d-misses"), 0.001);
        assert_eq!(value(&m, "empty/enabled/branch-mispredicts"), 0.01);
        assert_eq!(value(&m, "memcpy/none/instructions"), 400.0);
        assert_eq!(value(&m, "memcpy/dormant/estimated-cycles"), (5000.0 + 56.0 + 170.0) / 10.0);
        assert_eq!(value(&m, "memcpy/enabled/l1i-misses"), 0.0);
        let estimated = m.iter().find(|m| m.metric == "memcpy/none/estimated-cycles").unwrap();
        assert_eq!((estimated.unit.as_str(), estimated.higher_is_better), ("cycles", false));
    }

    #[test]
    fn a_missing_or_unknown_part_is_an_error_naming_it() {
        let text = output([1, 2, 3, 4, 5, 6]);
        let mut parts = all_parts();
        parts.remove(&part(Loop::Memcpy, Marker::Dormant));
        let e = spec().model_parts(&record(&text), &parts).unwrap_err().to_string();
        assert!(e.contains("no part 4 (memcpy/dormant)"), "{e}");
        let mut parts = all_parts();
        parts.insert(9, counts(1, 0, 0));
        let e = spec().model_parts(&record(&text), &parts).unwrap_err().to_string();
        assert!(e.contains("a part 9, which is no loop's"), "{e}");
    }

    /// The kernel code numbers its parts with #defines; they must be the
    /// numbers [`part`] gives.
    #[test]
    fn the_kernel_codes_part_numbers_are_the_hosts() {
        let patch = include_str!("../../../vm-images/patches/markbench-micro.patch");
        let mut seen = 0;
        for l in Loop::ALL {
            for m in Marker::ALL {
                let define = format!(
                    "#define MARKBENCH_MICRO_{}_{} {}",
                    l.name().to_uppercase(),
                    m.name().to_uppercase(),
                    part(l, m)
                );
                assert!(patch.contains(&define), "no {define:?} in the patch");
                let used = format!("MARKBENCH_MICRO_{}_{})", l.name().to_uppercase(), m.name().to_uppercase());
                assert!(patch.contains(&used), "the patch never times {used}");
                seen += 1;
            }
        }
        assert_eq!(seen, 6);
        assert!(patch.contains("\"i\" (0x10 + part)"), "the start marker's byte");
        assert!(patch.contains(".byte 0x0f, 0x1f, 0x80, 0x03, 0x53, 0x42, 0x4d"), "the end marker");
    }
}
