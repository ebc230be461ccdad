//! The Desnoyers 2006 micro-benchmarks' table, from the `micro` workload's samples: cycles per loop
//! of an empty loop and a 4 KiB memcpy loop without a marker and with each
//! variant's dormant marker, what the marker costs, and the rows of the
//! marker enabled with an empty probe. Shown first when a run has micro
//! samples; other runs get nothing from here. When the cycle model counted
//! each loop (`micro::model_metric` samples), the table gives estimated
//! cycles per loop beside the instructions, and a second table the model's
//! counts per loop; without them the section is what it was before the model.

use super::super::format::{escape_md, signed, value};
use super::RunReport;
use crate::guest::workloads::micro::{self, Loop, Marker};
use crate::record::{RunMeta, Sample};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The micro samples of one table: a workload label, a CPU count and the
/// empty loop's iteration count.
type TableId = (String, u32, u64);

/// What the figures count, from how the run was timed.
struct Counting {
    /// Per-loop figures are divided by this (2^shift under icount).
    divisor: f64,
    /// "cycles" or "instructions".
    unit: &'static str,
    caption: String,
}

impl Counting {
    fn of(meta: &RunMeta) -> Counting {
        let shift = meta.icount_shift();
        match shift {
            Some(shift) => {
                let per = 1u64 << shift;
                Counting {
                    divisor: per as f64,
                    unit: "instructions",
                    caption: format!(
                        "Measured under icount (`-icount shift={shift}`): the guest's TSC does not \
                         count cycles here, it advances {per} (2^{shift}) per instruction the guest \
                         executes, so the TSC figures are divided by {per} and the table gives \
                         **instructions** per loop (a `rep movs` counts once per repetition), not \
                         the cycles Desnoyers measured on a Pentium 4 in 2006. Under KVM the same suite \
                         gives the host CPU's TSC cycles. samples.csv keeps the TSC figures."
                    ),
                }
            }
            None => Counting {
                divisor: 1.0,
                unit: "cycles",
                caption: format!(
                    "TSC cycles of the guest under {}, read with `rdtsc_ordered()`{}.",
                    meta.accel.as_str().to_uppercase(),
                    if meta.accel.as_str() == "kvm" {
                        ""
                    } else {
                        "; under TCG without icount the TSC follows the host's clock, \
                         not the emulated instructions"
                    }
                ),
            },
        }
    }
}

/// Mean, smallest and largest value of one metric of one variant.
#[derive(Debug, Clone, Copy)]
struct Spread {
    mean: f64,
    min: f64,
    max: f64,
    n: usize,
}

impl Spread {
    fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        Some(Spread {
            mean: values.iter().sum::<f64>() / values.len() as f64,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n: values.len(),
        })
    }
}

/// Every measured micro sample's values, by table, variant and metric.
type Grouped<'a> = BTreeMap<TableId, BTreeMap<(&'a str, &'a str), Vec<f64>>>;

fn grouped(samples: &[Sample]) -> Grouped<'_> {
    let mut out: Grouped = BTreeMap::new();
    for s in samples
        .iter()
        .filter(|s| !s.warmup && is_micro(&s.workload))
    {
        out.entry((s.workload.clone(), s.cpus, s.param))
            .or_default()
            .entry((s.variant.as_str(), s.metric.as_str()))
            .or_default()
            .push(s.value);
    }
    out
}

/// Whether a sample's workload column names the micro workload.
fn is_micro(workload: &str) -> bool {
    crate::guest::workloads::kind_of_label(workload) == "micro"
}

/// The section: one table per (workload, CPU count, iteration count), or
/// nothing when the run has no micro samples.
pub(super) fn section(run: &RunReport) -> String {
    let groups = grouped(run.samples);
    if groups.is_empty() {
        return String::new();
    }
    let counting = Counting::of(run.meta);
    let variants = &run.analysis.variants;
    let mut r = String::new();
    let _ = writeln!(r, "## Cost of a marker (Desnoyers 2006 micro-benchmarks)\n");
    for ((workload, cpus, param), values) in &groups {
        r.push_str(&table(
            &counting,
            variants,
            (workload, *cpus, *param),
            values,
        ));
    }
    r
}

fn table(
    counting: &Counting,
    variants: &[String],
    (workload, cpus, param): (&str, u32, u64),
    values: &BTreeMap<(&str, &str), Vec<f64>>,
) -> String {
    let figures = Figures { counting, values };
    let mut r = rows(&figures, variants);
    let _ = writeln!(
        r,
        "\n{} at {cpus} vCPU{}: {param} iterations of the empty loop, the memcpy loop's count as \
         the workload line under *Where and how* gives it; each loop timed with interrupts off \
         and `rdtsc_ordered()`. *marker* is the dormant marker's cost (the loop with it less the \
         same kernel's loop without); in the enabled rows it is what enabling the marker and \
         calling an empty probe add over the dormant marker. Each variant's marker is a \
         `static_branch_unlikely()`: a patched NOP with `CONFIG_JUMP_LABEL=y` (the Desnoyers 2006 micro-benchmarks' \
         \"optimized\"), a load, test and branch without (its \"generic\").",
        escape_md(workload),
        if cpus == 1 { "" } else { "s" }
    );
    let _ = writeln!(r, "\n{}", counting.caption);
    r.push_str(&own_loops_note(&figures, variants));
    if figures.has_model() {
        r.push_str(&model_counts(&figures, variants));
    }
    r.push_str(&spread_note(&figures));
    r
}

/// The unit of the model's estimate in the table's headers.
const ESTIMATED: &str = "estimated cycles";

/// The model's points per loop in the counts table: (point, header).
const MODEL_POINTS: &[(&str, &str)] = &[
    ("instructions", "instructions"),
    ("l1i-misses", "L1i misses"),
    ("l1d-misses", "L1d misses"),
    ("l2-misses", "L2 misses"),
    ("llc-misses", "LLC misses"),
    ("branch-mispredicts", "branch mispredicts"),
    ("estimated-cycles", ESTIMATED),
];

/// A count per loop: most are far below one, so small ones keep two
/// significant digits rather than rounding to zero.
fn per_loop(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v == 0.0 {
        "0".into()
    } else if v.abs() < 0.01 {
        format!("{v:.1e}")
    } else {
        format!("{v:.3}")
    }
}

/// The model's counts per iteration of each loop, a row per loop, marker
/// state and kernel.
fn model_counts(figures: &Figures, variants: &[String]) -> String {
    let mut r = String::from(
        "\nThe cycle model's counts per loop (`--model cycles`; the Significance section gives \
         its caches, predictor and formula): the counts between two markers the kernel code puts \
         around each timed loop, divided by the loop's iterations. They include the loop's call \
         and its `rdtsc_ordered()` pair once per timing, a few tens of instructions spread over \
         all iterations, and count a block's instructions whole when it starts, so *instructions* \
         may differ from the icount figure above by a fraction of one per loop. Interrupts are \
         off, so the counts are the loop's own.\n\n",
    );
    let header: String = MODEL_POINTS
        .iter()
        .map(|(_, h)| format!(" {h} |"))
        .collect();
    let _ = writeln!(
        r,
        "| loop | marker | kernel |{header}\n|---|---|---|{}",
        "---:|".repeat(MODEL_POINTS.len())
    );
    for l in Loop::ALL {
        for marker in Marker::ALL {
            for v in variants {
                let cells: String = MODEL_POINTS
                    .iter()
                    .map(|(point, _)| {
                        let metric = micro::model_metric(l, marker, point);
                        format!(" {} |", per_loop(figures.model_mean(v, &metric)))
                    })
                    .collect();
                let _ = writeln!(
                    r,
                    "| {} | {} | {} |{cells}",
                    loop_label(l),
                    marker.name(),
                    escape_md(v)
                );
            }
        }
    }
    r
}

/// One table's figures: each (variant, metric)'s runs, in the table's unit.
struct Figures<'a> {
    counting: &'a Counting,
    values: &'a BTreeMap<(&'a str, &'a str), Vec<f64>>,
}

impl Figures<'_> {
    fn spread(&self, variant: &str, metric: &str) -> Option<Spread> {
        let divisor = self.counting.divisor;
        self.values
            .get(&(variant, metric))
            .and_then(|v| Spread::of(v))
            .map(|s| Spread {
                mean: s.mean / divisor,
                min: s.min / divisor,
                max: s.max / divisor,
                n: s.n,
            })
    }

    fn mean(&self, variant: &str, metric: &str) -> f64 {
        self.spread(variant, metric).map_or(f64::NAN, |s| s.mean)
    }

    /// The mean of one of the model's points per loop, in its own unit
    /// (the icount divisor is the TSC's, not the model's).
    fn model_mean(&self, variant: &str, metric: &str) -> f64 {
        self.values
            .get(&(variant, metric))
            .and_then(|v| Spread::of(v))
            .map_or(f64::NAN, |s| s.mean)
    }

    /// Estimated cycles per loop of one loop with one marker state.
    fn estimated(&self, variant: &str, l: Loop, marker: Marker) -> f64 {
        self.model_mean(variant, &micro::model_metric(l, marker, "estimated-cycles"))
    }

    /// Whether the cycle model counted the loops apart.
    fn has_model(&self) -> bool {
        self.values
            .keys()
            .any(|(_, metric)| Self::model_loop_metric(metric))
    }

    /// Whether a metric is one of the model's points per loop.
    fn model_loop_metric(metric: &str) -> bool {
        Loop::ALL.iter().any(|&l| {
            Marker::ALL.iter().any(|&m| {
                crate::base::cycle_model::METRICS
                    .iter()
                    .any(|(point, _)| micro::model_metric(l, m, point) == metric)
            })
        })
    }

    /// Whether a metric's spread is the one the first table's figures
    /// have: the workload's own (TSC figures and marker costs) and the
    /// model's estimated cycles per loop. Not the model's counts of the
    /// whole run, nor its misses and mispredictions per loop, which are a
    /// handful of events in millions whose relative spread between runs
    /// says nothing of the figures.
    fn in_spread(metric: &str) -> bool {
        if Self::model_loop_metric(metric) {
            return metric.ends_with("/estimated-cycles");
        }
        !crate::base::cycle_model::is_model_metric(metric)
    }
}

fn loop_label(l: Loop) -> &'static str {
    match l {
        Loop::Empty => "empty loop",
        Loop::Memcpy => "memcpy loop (4096 bytes)",
    }
}

/// The table itself: a row per loop with the marker dormant, then enabled.
/// With the model, every figure gets its estimated cycles beside it.
fn rows(figures: &Figures, variants: &[String]) -> String {
    let unit = figures.counting.unit;
    let model = figures.has_model();
    let baseline = variants.first().map_or("", String::as_str);
    let mut r = String::new();
    let columns: String = variants
        .iter()
        .map(|v| {
            let v = escape_md(v);
            if model {
                format!(
                    " {v} [{unit}/loop] | {v} [{ESTIMATED}/loop] | {v}: marker [{unit}] | \
                     {v}: marker [{ESTIMATED}] |"
                )
            } else {
                format!(" {v} [{unit}/loop] | {v}: marker [{unit}] |")
            }
        })
        .collect();
    let (no_marker, no_marker_align, per_variant_align) = if model {
        (
            format!(" no marker [{unit}/loop] | no marker [{ESTIMATED}/loop] |"),
            "---:|---:|",
            "---:|---:|---:|---:|",
        )
    } else {
        (format!(" no marker [{unit}/loop] |"), "---:|", "---:|---:|")
    };
    let _ = writeln!(
        r,
        "| loop |{no_marker}{columns}\n|---|{no_marker_align}{}",
        per_variant_align.repeat(variants.len())
    );
    // Each variant's loop with the marker in one state, and what it adds
    // over the loop with the marker in the state `from`.
    let cells = |l: Loop, marker: Marker, from: Marker, cost: String| -> String {
        variants
            .iter()
            .map(|v| {
                let (loop_figure, cost) = (
                    value(figures.mean(v, &micro::metric(l, marker)), 2),
                    signed(figures.mean(v, &cost), 3),
                );
                if model {
                    let estimated = figures.estimated(v, l, marker);
                    format!(
                        " {loop_figure} | {} | {cost} | {} |",
                        value(estimated, 2),
                        signed(estimated - figures.estimated(v, l, from), 3)
                    )
                } else {
                    format!(" {loop_figure} | {cost} |")
                }
            })
            .collect()
    };
    let no_marker_cells = |l: Loop| {
        let instructions = value(figures.mean(baseline, &micro::metric(l, Marker::None)), 2);
        if model {
            format!(
                "{instructions} | {}",
                value(figures.estimated(baseline, l, Marker::None), 2)
            )
        } else {
            instructions
        }
    };
    // The dormant rows: the marker's cost over the loop without it.
    for l in Loop::ALL {
        let _ = writeln!(
            r,
            "| {} | {} |{}",
            loop_label(l),
            no_marker_cells(l),
            cells(
                l,
                Marker::Dormant,
                Marker::None,
                micro::marker_cost_metric(l)
            )
        );
    }
    // The enabled rows: what enabling the marker adds over the dormant
    // marker (the seed's 52.11 − 4.00 = 48.11).
    let none = if model { "– | –" } else { "–" };
    for l in Loop::ALL {
        let _ = writeln!(
            r,
            "| {}, marker enabled, empty probe | {none} |{}",
            loop_label(l),
            cells(
                l,
                Marker::Enabled,
                Marker::Dormant,
                micro::probe_cost_metric(l)
            )
        );
    }
    r
}

/// Without-marker loops that differ between the kernels: the table shows
/// the baseline's, the marker costs are each kernel's own.
fn own_loops_note(figures: &Figures, variants: &[String]) -> String {
    let baseline = variants.first().map_or("", String::as_str);
    let mut notes = Vec::new();
    for v in variants.iter().skip(1) {
        for l in Loop::ALL {
            let metric = micro::metric(l, Marker::None);
            let (own, base) = (figures.mean(v, &metric), figures.mean(baseline, &metric));
            if own.is_finite() && base.is_finite() && own != base {
                notes.push(format!(
                    "{}'s {} without a marker: {}",
                    escape_md(v),
                    loop_label(l),
                    value(own, 2)
                ));
            }
            // The model's figures move by a few mispredictions between
            // runs: a difference the table's two decimals do not show is
            // none to speak of.
            let (own, base) = (
                value(figures.estimated(v, l, Marker::None), 2),
                value(figures.estimated(baseline, l, Marker::None), 2),
            );
            if own != "–" && base != "–" && own != base {
                notes.push(format!(
                    "{}'s {} without a marker: {own} {ESTIMATED}",
                    escape_md(v),
                    loop_label(l),
                ));
            }
        }
    }
    if notes.is_empty() {
        return String::new();
    }
    format!(
        "\nThe *no marker* column is {}'s; {}.\n",
        escape_md(baseline),
        notes.join("; ")
    )
}

/// How much the runs moved: none at all under icount.
fn spread_note(figures: &Figures) -> String {
    let all: Vec<Spread> = figures
        .values
        .keys()
        .filter(|(_, m)| Figures::in_spread(m))
        .filter_map(|(v, m)| figures.spread(v, m))
        .collect();
    let runs: BTreeSet<usize> = all.iter().map(|s| s.n).collect();
    let widest = all
        .iter()
        .filter(|s| s.mean != 0.0)
        .map(|s| (s.max - s.min) / s.mean.abs())
        .fold(0.0, f64::max);
    let plural = if runs.iter().all(|&n| n == 1) {
        ""
    } else {
        "s"
    };
    let runs = runs
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if widest == 0.0 {
        format!(
            "\nEvery figure is the mean of {runs} run{plural} (over all boots), and every run \
             of a kernel gave the same figures.\n\n"
        )
    } else {
        format!(
            "\nEvery figure is the mean of {runs} run{plural} (over all boots); the runs of one figure \
             spread by up to {:.2}% of it (smallest to largest). The Results section gives \
             each metric's interval.\n\n",
            widest * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TimingDecision;
    use crate::record::{KernelMeta, RunMeta};
    use crate::stages::report::{render, RunFiles};

    fn meta(shift: Option<u32>) -> RunMeta {
        RunMeta {
            suite: "micro".into(),
            kernels: ["optimized", "generic"]
                .iter()
                .map(|v| KernelMeta {
                    variant: v.to_string(),
                    ..Default::default()
                })
                .collect(),
            timing: TimingDecision {
                icount_shift: shift,
                ..Default::default()
            },
            complete: true,
            ..Default::default()
        }
    }

    /// Samples as the workload measures them, from per-loop TSC figures of
    /// (none, dormant, enabled) per loop, the same in every run.
    /// The optimized and the generic kernel's samples: each its (empty,
    /// memcpy) loops' none, dormant and enabled figures.
    fn pair(
        optimized: ([f64; 3], [f64; 3]),
        generic: ([f64; 3], [f64; 3]),
        runs: u32,
    ) -> Vec<Sample> {
        let mut out = samples("optimized", optimized.0, optimized.1, runs);
        out.extend(samples("generic", generic.0, generic.1, runs));
        out
    }

    /// One measured run's figure of the micro workload; runs alternate
    /// between two boots.
    fn sample(variant: &str, metric: String, unit: &str, iteration: u32, value: f64) -> Sample {
        Sample {
            suite: "micro".into(),
            workload: "micro".into(),
            metric,
            unit: unit.into(),
            higher_is_better: false,
            param: 1000,
            cpus: 1,
            variant: variant.into(),
            boot: iteration % 2,
            iteration: iteration / 2,
            warmup: false,
            value,
            started_at: String::new(),
        }
    }

    fn samples(variant: &str, empty: [f64; 3], memcpy: [f64; 3], runs: u32) -> Vec<Sample> {
        let mut out = Vec::new();
        for iteration in 0..runs {
            for (l, [none, dormant, enabled]) in [(Loop::Empty, empty), (Loop::Memcpy, memcpy)] {
                for (metric, v) in [
                    (micro::metric(l, Marker::None), none),
                    (micro::metric(l, Marker::Dormant), dormant),
                    (micro::metric(l, Marker::Enabled), enabled),
                    (micro::marker_cost_metric(l), dormant - none),
                    (micro::probe_cost_metric(l), enabled - dormant),
                ] {
                    out.push(sample(variant, metric, micro::UNIT, iteration, v));
                }
            }
        }
        out
    }

    #[test]
    fn icount_figures_become_instructions_and_the_caption_says_so() {
        let s = pair(
            ([48.0, 64.0, 320.0], [8320.0, 8336.0, 8592.0]),
            ([48.0, 96.0, 352.0], [8320.0, 8368.0, 8624.0]),
            4,
        );
        let text = render(&meta(Some(4)), &s, RunFiles::default());
        // The seed's table is the report's first.
        let first_table = text.find("\n|").unwrap();
        let ours = text.find("## Cost of a marker").unwrap();
        assert!(ours < first_table, "{text}");
        assert!(text.contains(
            "| loop | no marker [instructions/loop] | optimized [instructions/loop] | optimized: marker [instructions] | generic [instructions/loop] | generic: marker [instructions] |"
        ), "{text}");
        assert!(
            text.contains("| empty loop | 3.00 | 4.00 | +1.000 | 6.00 | +3.000 |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| memcpy loop (4096 bytes) | 520.00 | 521.00 | +1.000 | 523.00 | +3.000 |"
            ),
            "{text}"
        );
        assert!(text.contains(
            "| empty loop, marker enabled, empty probe | – | 20.00 | +16.000 | 22.00 | +16.000 |"
        ), "{text}");
        assert!(text.contains("advances 16 (2^4) per instruction"), "{text}");
        assert!(text.contains("Under KVM the same suite gives the host CPU's TSC cycles"));
        assert!(
            text.contains("every run of a kernel gave the same figures"),
            "{text}"
        );
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    }

    #[test]
    fn wall_time_figures_stay_cycles_and_their_spread_is_given() {
        let mut s = pair(
            ([1.5, 4.0, 52.11], [1298.16, 1298.23, 1350.0]),
            ([1.5, 2.67, 50.0], [1298.16, 1300.28, 1352.0]),
            2,
        );
        // One run of the generic empty loop a little slower.
        let slow = s
            .iter_mut()
            .find(|x| x.variant == "generic" && x.metric == "empty/dormant")
            .unwrap();
        slow.value = 2.87;
        let mut m = meta(None);
        m.accel = crate::record::Accel::Kvm;
        let text = render(&m, &s, RunFiles::default());
        assert!(
            text.contains("| empty loop | 1.50 | 4.00 | +2.500 | 2.77 | +1.170 |"),
            "{text}"
        );
        assert!(text.contains("TSC cycles of the guest under KVM"), "{text}");
        assert!(text.contains("spread by up to 7.22% of it"), "{text}");
    }

    /// The model's points per loop of one kernel, as the workload gives
    /// them from the counts of each loop's part: `instructions` per loop
    /// of (none, dormant, enabled) for the empty and the memcpy loop, one
    /// L1d miss per memcpy loop and, in the generic kernel's dormant
    /// loops, a mispredict every 1000 loops; estimated cycles from the
    /// default formula (14 an L2 hit, 17 a mispredict).
    fn model_samples(variant: &str, instructions: [[f64; 3]; 2], runs: u32) -> Vec<Sample> {
        let mut out = Vec::new();
        for iteration in 0..runs {
            for (l, per_marker) in Loop::ALL.into_iter().zip(instructions) {
                for (marker, instructions) in Marker::ALL.into_iter().zip(per_marker) {
                    let l1d = if l == Loop::Memcpy { 1.0 } else { 0.0 };
                    let mispredicts = if variant == "generic" && marker == Marker::Dormant {
                        0.001
                    } else {
                        0.0
                    };
                    // As on a real run: an L1i miss in some runs and not in
                    // others, and a kernel whose loop without a marker
                    // differs from the other's in a digit the table does
                    // not show.
                    let l1i = 1e-7 * (iteration % 2) as f64;
                    let unseen = if variant == "generic" && marker == Marker::None {
                        1e-6
                    } else {
                        0.0
                    };
                    for (point, unit, value) in [
                        ("instructions", "instructions", instructions),
                        ("l1d-misses", "misses", l1d),
                        ("l1i-misses", "misses", l1i),
                        ("branch-mispredicts", "mispredicts", mispredicts),
                        (
                            "estimated-cycles",
                            "cycles",
                            instructions + 14.0 * l1d + 17.0 * mispredicts + unseen,
                        ),
                    ] {
                        let metric = micro::model_metric(l, marker, point);
                        out.push(sample(variant, metric, unit, iteration, value));
                    }
                }
            }
        }
        out
    }

    /// The model's counts of whole runs, which the section does not show.
    fn run_points(variant: &str, runs: u32) -> Vec<Sample> {
        (0..runs)
            .flat_map(|iteration| {
                crate::base::cycle_model::METRICS
                    .iter()
                    .map(move |(metric, unit)| Sample {
                        suite: "micro".into(),
                        workload: "micro".into(),
                        metric: metric.to_string(),
                        unit: unit.to_string(),
                        higher_is_better: false,
                        param: 1000,
                        cpus: 1,
                        variant: variant.into(),
                        boot: iteration % 2,
                        iteration: iteration / 2,
                        warmup: false,
                        // A run's whole count moves from run to run.
                        value: 1e6 + iteration as f64,
                        started_at: String::new(),
                    })
            })
            .collect()
    }

    fn section_of(text: &str) -> &str {
        let start = text.find("## Cost of a marker").unwrap();
        let end = text[start + 3..]
            .find("\n## ")
            .map_or(text.len(), |e| start + 3 + e);
        &text[start..end]
    }

    fn icount_pair() -> Vec<Sample> {
        pair(
            ([48.0, 64.0, 320.0], [8320.0, 8336.0, 8592.0]),
            ([48.0, 96.0, 352.0], [8320.0, 8368.0, 8624.0]),
            4,
        )
    }

    #[test]
    fn model_counts_per_loop_put_estimated_cycles_beside_the_instructions() {
        let mut s = icount_pair();
        s.extend(model_samples(
            "optimized",
            [[3.0, 4.0, 20.0], [520.0, 521.0, 537.0]],
            4,
        ));
        s.extend(model_samples(
            "generic",
            [[3.0, 6.0, 22.0], [520.0, 523.0, 539.0]],
            4,
        ));
        s.extend(run_points("optimized", 4));
        s.extend(run_points("generic", 4));
        let text = render(&meta(Some(4)), &s, RunFiles::default());
        let section = section_of(&text);
        assert!(
            section.contains(
                "| loop | no marker [instructions/loop] | no marker [estimated cycles/loop] | \
             optimized [instructions/loop] | optimized [estimated cycles/loop] | \
             optimized: marker [instructions] | optimized: marker [estimated cycles] | \
             generic [instructions/loop] | generic [estimated cycles/loop] | \
             generic: marker [instructions] | generic: marker [estimated cycles] |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            ),
            "{section}"
        );
        assert!(
            section.contains("| empty loop | 3.00 | 3.00 | 4.00 | 4.00 | +1.000 | +1.000 | 6.00 | 6.02 | +3.000 | +3.017 |"),
            "{section}"
        );
        assert!(
            section.contains("| memcpy loop (4096 bytes) | 520.00 | 534.00 | 521.00 | 535.00 | +1.000 | +1.000 | 523.00 | 537.02 | +3.000 | +3.017 |"),
            "{section}"
        );
        // Enabled rows: over the dormant loop, in both units.
        assert!(
            section.contains("| empty loop, marker enabled, empty probe | – | – | 20.00 | 20.00 | +16.000 | +16.000 | 22.00 | 22.00 | +16.000 | +15.983 |"),
            "{section}"
        );
        // The counts table: a row per loop, marker and kernel.
        assert!(section.contains(
            "| loop | marker | kernel | instructions | L1i misses | L1d misses | L2 misses | LLC misses | branch mispredicts | estimated cycles |"
        ), "{section}");
        assert!(
            section.contains(
                "| empty loop | dormant | generic | 6.000 | 5.0e-8 | 0 | – | – | 1.0e-3 | 6.017 |"
            ),
            "{section}"
        );
        assert!(
            section.contains("| memcpy loop (4096 bytes) | none | optimized | 520.000 | 5.0e-8 | 1.000 | – | – | 0 | 534.000 |"),
            "{section}"
        );
        assert_eq!(
            section.matches("| empty loop | ").count(),
            1 + 6,
            "{section}"
        );
        // The whole runs' counts and the L1i misses move from run to run;
        // the first table's figures do not.
        assert!(!section.contains("The *no marker* column"), "{section}");
        assert!(
            section.contains("every run of a kernel gave the same figures"),
            "{section}"
        );
        assert!(
            !section.contains("NaN") && !section.contains("inf"),
            "{section}"
        );
    }

    #[test]
    fn without_counts_per_loop_the_section_is_the_one_without_the_model() {
        let plain = render(&meta(Some(4)), &icount_pair(), RunFiles::default());
        // A kernel that marks no loops: the model counted the runs only.
        let mut s = icount_pair();
        s.extend(run_points("optimized", 4));
        s.extend(run_points("generic", 4));
        let with_run_points = render(&meta(Some(4)), &s, RunFiles::default());
        assert_eq!(section_of(&with_run_points), section_of(&plain));
        assert!(!section_of(&plain).contains(ESTIMATED), "{plain}");
    }

    #[test]
    fn small_counts_per_loop_keep_their_digits() {
        assert_eq!(per_loop(0.0), "0");
        assert_eq!(per_loop(0.000_123), "1.2e-4");
        assert_eq!(per_loop(0.25), "0.250");
        assert_eq!(per_loop(1298.16), "1298.160");
        assert_eq!(per_loop(f64::NAN), "–");
    }

    #[test]
    fn runs_without_micro_samples_get_no_section() {
        let s = vec![Sample {
            suite: "q".into(),
            workload: "hackbench".into(),
            metric: "time".into(),
            unit: "s".into(),
            higher_is_better: false,
            param: 2,
            cpus: 1,
            variant: "optimized".into(),
            boot: 0,
            iteration: 0,
            warmup: false,
            value: 1.0,
            started_at: String::new(),
        }];
        let text = render(&meta(Some(4)), &s, RunFiles::default());
        assert!(!text.contains("Cost of a marker"), "{text}");
    }
}
