//! The Desnoyers 2006 micro-benchmarks' table, from the `micro` workload's samples: cycles per loop
//! of an empty loop and a 4 KiB memcpy loop without a marker and with each
//! variant's dormant marker, what the marker costs, and the rows of the
//! marker enabled with an empty probe. Shown first when a run has micro
//! samples; other runs get nothing from here.

use super::super::format::{escape_md, signed, value};
use super::RunReport;
use crate::samples::{RunMeta, Sample};
use crate::workloads::micro::{self, Loop, Marker};
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
    crate::workloads::kind_of_label(workload) == "micro"
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
    r.push_str(&spread_note(&figures));
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
}

fn loop_label(l: Loop) -> &'static str {
    match l {
        Loop::Empty => "empty loop",
        Loop::Memcpy => "memcpy loop (4096 bytes)",
    }
}

/// The table itself: a row per loop with the marker dormant, then enabled.
fn rows(figures: &Figures, variants: &[String]) -> String {
    let unit = figures.counting.unit;
    let baseline = variants.first().map_or("", String::as_str);
    let mut r = String::new();
    let columns: String = variants
        .iter()
        .map(|v| {
            let v = escape_md(v);
            format!(" {v} [{unit}/loop] | {v}: marker [{unit}] |")
        })
        .collect();
    let _ = writeln!(
        r,
        "| loop | no marker [{unit}/loop] |{columns}\n|---|---:|{}",
        "---:|---:|".repeat(variants.len())
    );
    // Each variant's loop with the marker in one state, and what it adds.
    let cells = |l: Loop, marker: Marker, cost: String| -> String {
        variants
            .iter()
            .map(|v| {
                format!(
                    " {} | {} |",
                    value(figures.mean(v, &micro::metric(l, marker)), 2),
                    signed(figures.mean(v, &cost), 3)
                )
            })
            .collect()
    };
    // The dormant rows: the marker's cost over the loop without it.
    for l in Loop::ALL {
        let _ = writeln!(
            r,
            "| {} | {} |{}",
            loop_label(l),
            value(figures.mean(baseline, &micro::metric(l, Marker::None)), 2),
            cells(l, Marker::Dormant, micro::marker_cost_metric(l))
        );
    }
    // The enabled rows: what enabling the marker adds over the dormant
    // marker (the seed's 52.11 − 4.00 = 48.11).
    for l in Loop::ALL {
        let _ = writeln!(
            r,
            "| {}, marker enabled, empty probe | – |{}",
            loop_label(l),
            cells(l, Marker::Enabled, micro::probe_cost_metric(l))
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
    use crate::report::{render, RunFiles};
    use crate::samples::TimingDecision;
    use crate::samples::{KernelMeta, RunMeta};

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
                    out.push(Sample {
                        suite: "micro".into(),
                        workload: "micro".into(),
                        metric,
                        unit: micro::UNIT.into(),
                        higher_is_better: false,
                        param: 1000,
                        cpus: 1,
                        variant: variant.into(),
                        boot: iteration % 2,
                        iteration: iteration / 2,
                        warmup: false,
                        value: v,
                        started_at: String::new(),
                    });
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
        m.accel = crate::samples::Accel::Kvm;
        let text = render(&m, &s, RunFiles::default());
        assert!(
            text.contains("| empty loop | 1.50 | 4.00 | +2.500 | 2.77 | +1.170 |"),
            "{text}"
        );
        assert!(text.contains("TSC cycles of the guest under KVM"), "{text}");
        assert!(text.contains("spread by up to 7.22% of it"), "{text}");
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
