//! The report: rendered from `samples.csv` and `meta.toml` only, so
//! `markbench report DIR` reproduces it without rerunning anything.

pub mod format;
pub mod profile;
pub mod sizes;

use crate::images::size::SizeRecord;
use crate::plots::{PlotInput, RelPoint, SidePoint};
use crate::samples::{RunMeta, Sample};
use crate::stats::{AnalysisConfig, Correction, PointAnalysis, PointInput};
use anyhow::Result;
use format::{decimals, escape_md, percent, signed, value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const REPORT_FILE: &str = "report.md";
pub const DIFFCONFIG_FILE: &str = "diffconfig.txt";
pub const SUMMARY_FILE: &str = "summary.json";
pub const PLOTS_DIR: &str = "plots";

/// What identifies one table: a workload's metric at one CPU count.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TableKey {
    pub workload: String,
    pub metric: String,
    pub cpus: u32,
}

impl TableKey {
    /// The table a sample belongs in.
    pub fn of(s: &Sample) -> TableKey {
        TableKey {
            workload: s.workload.clone(),
            metric: s.metric.clone(),
            cpus: s.cpus,
        }
    }
}

/// The measured (non-warm-up) values of one point, per side, grouped by boot.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub param: u64,
    pub unit: String,
    pub higher_is_better: bool,
    /// `sides[0]` is the baseline, `sides[1]` the candidate; each a list of boots.
    pub sides: [Vec<Vec<f64>>; 2],
}

impl Point {
    pub fn values(&self, side: usize) -> impl Iterator<Item = f64> + '_ {
        self.sides[side].iter().flatten().copied()
    }
    pub fn n(&self, side: usize) -> usize {
        self.values(side).count()
    }
    pub fn mean(&self, side: usize) -> f64 {
        let n = self.n(side);
        if n == 0 {
            f64::NAN
        } else {
            self.values(side).sum::<f64>() / n as f64
        }
    }
    /// Sample standard deviation over all values of a side (NaN below two).
    pub fn sd(&self, side: usize) -> f64 {
        let n = self.n(side);
        if n < 2 {
            return f64::NAN;
        }
        let m = self.mean(side);
        (self.values(side).map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    }
}

/// Unit, direction, and per side the values of each boot, while grouping.
type PointAccumulator = (String, bool, [BTreeMap<u32, Vec<f64>>; 2]);

/// Groups samples into tables of points. `variants` gives the two sides'
/// names, baseline first; samples of other variants and warm-ups are ignored.
pub fn tables(samples: &[Sample], variants: &[String; 2]) -> BTreeMap<TableKey, Vec<Point>> {
    // (table, param) → side → boot → values, in arrival order.
    let mut grouped: BTreeMap<(TableKey, u64), PointAccumulator> = BTreeMap::new();
    for s in samples.iter().filter(|s| !s.warmup) {
        let Some(side) = variants.iter().position(|v| *v == s.variant) else {
            continue;
        };
        let key = TableKey::of(s);
        let entry = grouped
            .entry((key, s.param))
            .or_insert_with(|| (s.unit.clone(), s.higher_is_better, Default::default()));
        entry.2[side].entry(s.boot).or_default().push(s.value);
    }
    let mut out: BTreeMap<TableKey, Vec<Point>> = BTreeMap::new();
    for ((key, param), (unit, higher_is_better, sides)) in grouped {
        let [a, b] = sides;
        out.entry(key).or_default().push(Point {
            param,
            unit,
            higher_is_better,
            sides: [a.into_values().collect(), b.into_values().collect()],
        });
    }
    out
}

/// What the sweep parameter of a workload is called in table headers.
pub fn param_label(workload: &str) -> &'static str {
    crate::workloads::param_label(workload)
}

/// One seed-layout table: param | without | with | diff | diff %, then, when
/// `analyses` is given (one per point), the 95% interval of the relative
/// difference, the corrected p-value and the verdict; then n and sd per side.
pub fn render_table(
    key: &TableKey,
    points: &[Point],
    names: &[String; 2],
    analyses: Option<&[PointAnalysis]>,
    correction: Correction,
) -> String {
    let unit = points.first().map_or("", |p| p.unit.as_str());
    let magnitude = points
        .iter()
        .map(|p| p.mean(0).abs().max(p.mean(1).abs()))
        .filter(|m| m.is_finite())
        .fold(0.0, f64::max);
    let d = decimals(unit, magnitude);
    let u = escape_md(unit);
    let (a, b) = (escape_md(&names[0]), escape_md(&names[1]));
    let mut t = String::new();
    let stats_header = if analyses.is_some() {
        format!(
            " 95% CI of diff [%] | p ({}) | verdict |",
            correction.as_str()
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        t,
        "| {} | without: {a} [{u}] | with: {b} [{u}] | diff [{u}] | diff [%] |{stats_header} n without | n with | sd without [{u}] | sd with [{u}] |",
        param_label(&key.workload)
    );
    let _ = writeln!(
        t,
        "|---:|---:|---:|---:|---:|{}---:|---:|---:|---:|",
        if analyses.is_some() {
            "---|---:|---|"
        } else {
            ""
        }
    );
    for (i, p) in points.iter().enumerate() {
        let (ma, mb) = (p.mean(0), p.mean(1));
        let diff = mb - ma;
        let stats_cells = match analyses.and_then(|a| a.get(i)) {
            Some(a) => format!(
                " {} | {} | {} |",
                a.relative_difference_ci
                    .as_ref()
                    .map_or("–".to_string(), |ci| format!(
                        "{} … {}",
                        percent(ci.lower * 100.0),
                        percent(ci.upper * 100.0)
                    )),
                a.adjusted_p_value.map_or("–".to_string(), p_value),
                if a.verdict.is_significant() {
                    format!("**{}**", a.verdict.as_str())
                } else {
                    a.verdict.as_str().to_string()
                }
            ),
            None => String::new(),
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} |{stats_cells} {} | {} | {} | {} |",
            p.param,
            value(ma, d),
            value(mb, d),
            signed(diff, d),
            percent(diff / ma * 100.0),
            p.n(0),
            p.n(1),
            value(p.sd(0), d),
            value(p.sd(1), d),
        );
    }
    t
}

/// A p-value with two significant digits, small ones in scientific notation.
fn p_value(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

fn direction(higher_is_better: bool) -> &'static str {
    if higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    }
}

/// The statistics settings a run's report uses.
pub fn analysis_config(meta: &RunMeta) -> AnalysisConfig {
    AnalysisConfig {
        // Runs recorded before the margin was a setting carry none: use the default.
        margin: if meta.margin > 0.0 {
            meta.margin
        } else {
            AnalysisConfig::default().margin
        },
        correction: meta.correction,
        seed: meta.seed,
        ..AnalysisConfig::default()
    }
}

/// Every table's points analysed as one sweep, so the multiple-comparison
/// correction covers the whole report.
pub struct Analysis {
    pub config: AnalysisConfig,
    pub tables: BTreeMap<TableKey, Vec<Point>>,
    /// Per table, one analysis per point; `Err` holds why the sweep could not be analysed.
    pub results: Result<BTreeMap<TableKey, Vec<PointAnalysis>>, String>,
}

pub fn analyse(meta: &RunMeta, samples: &[Sample]) -> Analysis {
    let hosts = vec![meta.host.hostname.clone(); samples.len()];
    analyse_with_hosts(meta, samples, &hosts)
}

/// [`analyse`] with the host that measured each sample (`hosts[i]` for
/// `samples[i]`): points whose boots come from several hosts are analysed
/// with the host as a blocking factor; the others exactly as on one machine.
pub fn analyse_with_hosts(meta: &RunMeta, samples: &[Sample], hosts: &[String]) -> Analysis {
    let names = side_names(meta);
    let tables = tables(samples, &names);
    let config = analysis_config(meta);
    // The host of each boot of each point and side, in the boot order
    // `tables` uses (ascending boot number), so it lines up with `sides`.
    let mut boot_hosts: BTreeMap<(TableKey, u64, usize), BTreeMap<u32, String>> = BTreeMap::new();
    for (s, host) in samples.iter().zip(hosts).filter(|(s, _)| !s.warmup) {
        let Some(side) = names.iter().position(|v| *v == s.variant) else {
            continue;
        };
        let key = TableKey::of(s);
        boot_hosts
            .entry((key, s.param, side))
            .or_default()
            .insert(s.boot, host.clone());
    }
    let point_hosts: Vec<crate::stats::blocked::PointHosts> = tables
        .iter()
        .flat_map(|(k, points)| points.iter().map(move |p| (k, p)))
        .map(|(k, p)| {
            let side = |i: usize| -> Vec<String> {
                boot_hosts
                    .get(&(k.clone(), p.param, i))
                    .map(|m| m.values().cloned().collect())
                    .unwrap_or_default()
            };
            crate::stats::blocked::PointHosts {
                a: side(0),
                b: side(1),
            }
        })
        .collect();
    let inputs: Vec<PointInput> = tables
        .values()
        .flatten()
        .map(|p| PointInput {
            a: &p.sides[0],
            b: &p.sides[1],
            higher_is_better: p.higher_is_better,
        })
        .collect();
    let results = crate::stats::analyze_sweep_with_hosts(&inputs, &point_hosts, &config)
        .map(|flat| {
            let mut flat = flat.into_iter();
            tables
                .iter()
                .map(|(k, points)| (k.clone(), flat.by_ref().take(points.len()).collect()))
                .collect()
        })
        .map_err(|e| e.to_string());
    Analysis {
        config,
        tables,
        results,
    }
}

fn side_names(meta: &RunMeta) -> [String; 2] {
    [
        meta.kernels
            .first()
            .map(|k| k.variant.clone())
            .unwrap_or_else(|| "A".into()),
        meta.kernels
            .get(1)
            .map(|k| k.variant.clone())
            .unwrap_or_else(|| "B".into()),
    ]
}

/// File stem of a table's plots.
pub fn plot_stem(key: &TableKey) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!(
        "{}-{}-{}cpu",
        clean(&key.workload),
        clean(&key.metric),
        key.cpus
    )
}

/// The plot data of one table.
pub fn plot_input(
    key: &TableKey,
    points: &[Point],
    analyses: Option<&[PointAnalysis]>,
    names: &[String; 2],
    margin: f64,
) -> PlotInput {
    let side = |i: usize| -> Vec<SidePoint> {
        points
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let summary = analyses
                    .and_then(|a| a.get(j))
                    .map(|a| if i == 0 { &a.a } else { &a.b });
                SidePoint {
                    param: p.param as f64,
                    mean: p.mean(i),
                    ci: summary
                        .and_then(|s| s.mean_ci.as_ref())
                        .map(|ci| (ci.interval.lower, ci.interval.upper)),
                    boot_means: p.sides[i]
                        .iter()
                        .filter(|b| !b.is_empty())
                        .map(|b| b.iter().sum::<f64>() / b.len() as f64)
                        .collect(),
                }
            })
            .collect()
    };
    let rel = points
        .iter()
        .enumerate()
        .map(|(j, p)| {
            let a = analyses.and_then(|a| a.get(j));
            RelPoint {
                param: p.param as f64,
                rel: a
                    .and_then(|a| a.relative_difference)
                    .unwrap_or(p.mean(1) / p.mean(0) - 1.0),
                ci: a
                    .and_then(|a| a.relative_difference_ci.as_ref())
                    .map(|ci| (ci.lower, ci.upper)),
            }
        })
        .collect();
    PlotInput {
        title: format!(
            "{}, {} CPU{}",
            key.workload,
            key.cpus,
            if key.cpus == 1 { "" } else { "s" }
        ),
        param_label: param_label(&key.workload).into(),
        metric_label: key.metric.clone(),
        unit: points.first().map_or(String::new(), |p| p.unit.clone()),
        higher_is_better: points.first().is_some_and(|p| p.higher_is_better),
        label_a: names[0].clone(),
        label_b: names[1].clone(),
        a: side(0),
        b: side(1),
        rel,
        margin,
    }
}

/// What a run directory holds beside its samples and metadata.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunFiles<'a> {
    /// `scripts/diffconfig` baseline → candidate.
    pub diffconfig: Option<&'a str>,
    /// `sizes.toml`; `None` for a run made before sizes were recorded.
    pub sizes: Option<&'a SizeRecord>,
}

/// The whole `report.md`.
pub fn render(meta: &RunMeta, samples: &[Sample], files: RunFiles) -> String {
    render_analysis(meta, samples, files, &analyse(meta, samples), false)
}

/// A point as the Significance section names it: "hackbench 2 CPUs, groups 4".
fn point_name(key: &TableKey, param: u64) -> String {
    format!(
        "{} {} CPUs, {} {param}",
        escape_md(&key.workload),
        key.cpus,
        param_label(&key.workload)
    )
}

/// One line on whether the bootstrap interval, the second opinion, agrees
/// with the report's t interval about each point: both exclude zero, or
/// neither does. Disagreements are named, since a maintainer should look at
/// those points' boots before trusting either.
fn bootstrap_agreement(
    results: &BTreeMap<TableKey, Vec<PointAnalysis>>,
    tables: &BTreeMap<TableKey, Vec<Point>>,
) -> String {
    let (mut compared, mut few_boots) = (0, false);
    let mut disagreements = Vec::new();
    for (key, list) in results {
        for (a, p) in list.iter().zip(&tables[key]) {
            let (Some(t), Some(bootstrap)) = (a.relative_difference_ci, a.bootstrap_ci) else {
                continue;
            };
            compared += 1;
            few_boots |= a.a.n_boots.min(a.b.n_boots) < 5;
            if t.contains(0.0) != bootstrap.contains(0.0) {
                disagreements.push(format!(
                    "{}: t {}% … {}%, bootstrap {}% … {}%",
                    point_name(key, p.param),
                    percent(t.lower * 100.0),
                    percent(t.upper * 100.0),
                    percent(bootstrap.lower * 100.0),
                    percent(bootstrap.upper * 100.0)
                ));
            }
        }
    }
    if compared == 0 {
        return String::new();
    }
    let caveat = if few_boots {
        " With fewer than 5 boots a side the bootstrap cannot reach past the most extreme \
         resample and runs narrow; the t interval is the one to read."
    } else {
        ""
    };
    if disagreements.is_empty() {
        format!(
            "The bootstrap interval agrees with the t interval about zero on all {compared} \
             points.{caveat}\n"
        )
    } else {
        format!(
            "The bootstrap interval disagrees with the t interval about zero on {} of \
             {compared} points: {}.{caveat}\n",
            disagreements.len(),
            disagreements.join("; ")
        )
    }
}

fn render_analysis(
    meta: &RunMeta,
    samples: &[Sample],
    files: RunFiles,
    analysis: &Analysis,
    with_plots: bool,
) -> String {
    let names = side_names(meta);
    let tables = &analysis.tables;
    let cfg = &analysis.config;
    let flat: Vec<PointAnalysis> = match &analysis.results {
        Ok(r) => r.values().flatten().cloned().collect(),
        Err(_) => Vec::new(),
    };
    let mut r = String::new();
    let _ = writeln!(
        r,
        "# markbench: {} vs {} ({} suite)\n",
        escape_md(&names[0]),
        escape_md(&names[1]),
        escape_md(&meta.suite)
    );
    if !meta.complete {
        let _ = writeln!(
            r,
            "> **Partial run**: the run did not finish; the tables hold what was measured before it stopped.\n"
        );
    }
    for w in &meta.warnings {
        let _ = writeln!(r, "> **Warning**: {}\n", escape_md(w));
    }
    if !meta.description.is_empty() {
        let _ = writeln!(r, "{}\n", escape_md(&meta.description));
    }
    let verdict = match &analysis.results {
        Ok(_) if flat.is_empty() => "no points were measured".to_string(),
        Ok(_) => crate::stats::summary_line(&flat, cfg),
        Err(e) => format!("the statistics could not be computed: {e}"),
    };
    let failed = meta.boots.iter().filter(|b| !b.ok).count();
    let _ = writeln!(
        r,
        "**Verdict** ({} against {}, measured under {}): {}.\n\n\
         {} boots ran ({} failed); {} measured samples over {} points in {} tables.\n",
        escape_md(&names[1]),
        escape_md(&names[0]),
        meta.accel.to_uppercase(),
        verdict,
        meta.boots.len(),
        failed,
        samples.iter().filter(|s| !s.warmup).count(),
        tables.values().map(Vec::len).sum::<usize>(),
        tables.len()
    );
    let _ = writeln!(r, "## What was compared\n");
    let _ = writeln!(
        r,
        "| | without (baseline) | with (candidate) |\n|---|---|---|"
    );
    let cell = |f: &dyn Fn(&crate::samples::KernelMeta) -> String| -> [String; 2] {
        [0, 1].map(|i| meta.kernels.get(i).map_or("–".into(), |k| escape_md(&f(k))))
    };
    for (label, cells) in [
        ("variant", cell(&|k| k.variant.clone())),
        ("kernel", cell(&|k| k.kernel.clone())),
        ("kernel fragments", cell(&fragments_cell)),
        (
            "extra command line",
            cell(&|k| {
                if k.cmdline.is_empty() {
                    "–".into()
                } else {
                    k.cmdline.clone()
                }
            }),
        ),
        ("source", cell(&|k| k.source.clone())),
        (
            "build key",
            cell(&|k| k.build_key.chars().take(16).collect()),
        ),
        (
            "final .config sha256",
            cell(&|k| k.config_sha256.chars().take(16).collect()),
        ),
        ("compiler", cell(&|k| k.compiler.clone())),
    ] {
        let _ = writeln!(r, "| {label} | {} | {} |", cells[0], cells[1]);
    }
    match files.diffconfig {
        Some(text) if !text.trim().is_empty() => {
            let _ = writeln!(
                r,
                "\nConfiguration difference (`scripts/diffconfig` baseline → candidate):\n\n```\n{}\n```\n",
                text.trim_end().replace("```", "'''")
            );
        }
        Some(_) => {
            let _ = writeln!(r, "\nThe two kernels' configurations are identical.\n");
        }
        None => {}
    }
    r.push_str(&sizes::section(files.sizes));

    let _ = writeln!(r, "## Where and how\n");
    let h = &meta.host;
    let _ = writeln!(
        r,
        "- Host: {} ({} cores, {} GiB), Linux {}\n- QEMU: {}\n- Accelerator: **{}**: {}\n\
         - Suite: {} (`{}`, sha256 {}); {} boots per variant and CPU count, {} measured iterations \
         (+{} warm-up) per point per boot; {} MiB guest memory\n\
         - Overrides of the suite: {}\n\
         - Order: boots interleaved in balanced blocks (one of each variant), seed {}; the order is in meta.toml\n\
         - Timing: the guest agent's CLOCK_MONOTONIC around each workload run; {}\n\
         - Run: started {}, {} s of wall time, {}; markbench {} (git {})\n",
        escape_md(&h.cpu_model),
        h.cores,
        h.memory_gib,
        escape_md(&h.kernel_release),
        if h.qemu_path.is_empty() {
            escape_md(&h.qemu_version)
        } else {
            // A code span shows its text as it is: no escapes inside.
            format!(
                "{} (`{}`)",
                escape_md(&h.qemu_version),
                h.qemu_path.replace('`', "'")
            )
        },
        meta.accel,
        escape_md(&meta.accel_reason),
        escape_md(&meta.suite),
        escape_md(&meta.suite_path),
        meta.suite_sha256.chars().take(16).collect::<String>(),
        meta.boots_per_variant,
        meta.iterations,
        meta.warmup,
        meta.memory_mib,
        if meta.overrides.is_empty() {
            "none".to_string()
        } else {
            escape_md(&meta.overrides.join(", "))
        },
        meta.seed,
        if meta.timing.is_empty() {
            "wall".to_string()
        } else {
            escape_md(&meta.timing)
        },
        escape_md(&meta.started_at),
        meta.wall_s.round(),
        if meta.complete { "complete" } else { "partial" },
        escape_md(&meta.markbench_version),
        escape_md(&meta.git_revision),
    );
    if !meta.workloads.is_empty() {
        let _ = writeln!(r, "Workloads:\n");
        for w in &meta.workloads {
            let _ = writeln!(r, "- {}", escape_md(w));
        }
        let _ = writeln!(r);
    }

    if let Some(shard) = &meta.shard {
        let _ = writeln!(
            r,
            "Shard {} of {} of the suite (`markbench run-shard`), on host {}: both variants of {}.\n",
            shard.index,
            shard.count,
            escape_md(&meta.host.hostname),
            escape_md(&shard.pieces.join("; "))
        );
    }
    if !meta.shards.is_empty() {
        let mut hosts: Vec<&str> = meta.shards.iter().map(|s| s.host.as_str()).collect();
        hosts.sort();
        hosts.dedup();
        let _ = writeln!(
            r,
            "Hosts: merged from {} shards run on {} host{} (`markbench merge`). Each shard booted \
             both variants of its points, so every comparison is made within one host; where a \
             point's boots come from several hosts, the host is a blocking factor (see Significance).\n\n\
             | shard | host | points | boots | failed | wall [s] | accelerator | timing |\n\
             |---:|---|---|---:|---:|---:|---|---|",
            meta.shards.len(),
            hosts.len(),
            if hosts.len() == 1 { "" } else { "s" }
        );
        for s in &meta.shards {
            let _ = writeln!(
                r,
                "| {} | {} | {} | {} | {} | {:.0} | {} | {} |",
                s.index,
                escape_md(&s.host),
                escape_md(&s.pieces.join("; ")),
                s.boots,
                s.failed_boots,
                s.wall_s,
                escape_md(&s.accel),
                // The mode only; what it measures is under "Timing" above.
                escape_md(&crate::samples::timing_mode_of(&s.timing))
            );
        }
        let _ = writeln!(r);
    }

    let _ = writeln!(r, "## Results\n");
    if tables.is_empty() {
        let _ = writeln!(r, "No samples were measured.\n");
    }
    for (key, points) in tables {
        let first = &points[0];
        let _ = writeln!(
            r,
            "### {}: {} [{}], {}, {} CPU{}\n",
            escape_md(&key.workload),
            escape_md(&key.metric),
            escape_md(&first.unit),
            direction(first.higher_is_better),
            key.cpus,
            if key.cpus == 1 { "" } else { "s" }
        );
        let analyses = analysis
            .results
            .as_ref()
            .ok()
            .and_then(|m| m.get(key))
            .map(Vec::as_slice);
        let _ = writeln!(
            r,
            "{}",
            render_table(key, points, &names, analyses, cfg.correction)
        );
        if with_plots {
            let stem = plot_stem(key);
            let _ = writeln!(
                r,
                "![{0} against {1}](plots/{2}-metric.png) ![relative difference](plots/{2}-diff.png)\n\n\
                 Plots as SVG: [{0}](plots/{2}-metric.svg), [relative difference](plots/{2}-diff.svg).\n",
                escape_md(&key.metric),
                param_label(&key.workload),
                stem
            );
        }
    }

    let _ = writeln!(r, "## Significance\n");
    let _ = writeln!(
        r,
        "Boots are the independent unit; iterations within a boot are nested in them \
         (Kalibera & Jones, ISMM 2013). Per point: the difference of means with a 95% interval \
         of the relative difference (B/A − 1), the t interval of the log ratio of boot means \
         (Welch's standard error and degrees of freedom: the interval TOST uses at 90%); a \
         Welch t-test on boot means, its p-value adjusted over all {2} points of this report \
         ({3}); equivalence by TOST (90% interval of the ratio inside ±{4}%). Second opinions, \
         in summary.json: Mann-Whitney U on boot means, and a hierarchical bootstrap interval \
         (boots resampled, each with all of its iterations; expanded percentile; {0} \
         resamples, seed {1}). Verdicts: \
         *regression* / *improvement* (adjusted p < {5}, direction from the metric), \
         *equivalent* (TOST passes), *no significant difference* (neither), \
         *insufficient data* (fewer than 2 boots on a side: no p-value is invented).\n",
        cfg.resamples,
        cfg.seed,
        flat.len(),
        cfg.correction.as_str(),
        cfg.margin * 100.0,
        cfg.alpha
    );
    if let Ok(results) = &analysis.results {
        let agreement = bootstrap_agreement(results, tables);
        if !agreement.is_empty() {
            let _ = writeln!(r, "{agreement}");
        }
    }
    if let Ok(results) = &analysis.results {
        let mut outliers = Vec::new();
        for (key, list) in results {
            for (a, p) in list.iter().zip(&tables[key]) {
                for (side, found) in [(0, &a.outliers_a), (1, &a.outliers_b)] {
                    for o in found {
                        outliers.push(format!(
                            "- {}, {}: boot {} iteration {}: {} {} (modified z = {:.1})",
                            point_name(key, p.param),
                            escape_md(&names[side]),
                            o.boot,
                            o.iteration,
                            value(o.value, decimals(&p.unit, o.value)),
                            escape_md(&p.unit),
                            o.score
                        ));
                    }
                }
            }
        }
        let mut blocked = Vec::new();
        for (key, list) in results {
            for (a, p) in list.iter().zip(&tables[key]) {
                let Some(b) = &a.host_blocking else { continue };
                let strata: Vec<String> = b
                    .strata
                    .iter()
                    .map(|s| {
                        format!(
                            "{} ({} + {} boots{})",
                            escape_md(&s.host),
                            s.boots_a,
                            s.boots_b,
                            s.relative_difference.map_or(
                                ", one variant only: not used".to_string(),
                                |d| format!(", {}%", percent(d * 100.0))
                            )
                        )
                    })
                    .collect();
                blocked.push(format!(
                    "- {}: {}{}",
                    point_name(key, p.param),
                    strata.join(", "),
                    if b.applied {
                        format!(
                            "; combined {}%, {} degrees of freedom",
                            percent((b.log_ratio.exp() - 1.0) * 100.0),
                            b.df
                        )
                    } else {
                        "; no host ran both variants, so the comparison is across hosts \
                         (not blocked)"
                            .to_string()
                    }
                ));
            }
        }
        if !blocked.is_empty() {
            let _ = writeln!(
                r,
                "**Host blocking**: these points' boots come from several hosts, so the host is a \
                 blocking factor: on log boot means, the variants are compared within each host \
                 that ran both, and the hosts' differences are combined with inverse-variance \
                 weights (randomized block design; error from the spread within each host and \
                 variant plus the hosts' disagreement, df = boots − hosts − 1). For them the \
                 relative difference, its interval (a t interval, not the bootstrap) and the \
                 p-value are the blocked ones, and no Mann-Whitney test is made. The table's \
                 without/with means pool all hosts. Per host (baseline + candidate boots, \
                 difference on that host):\n\n{}\n",
                blocked.join("\n")
            );
        }
        let same_kernel = meta.kernels.len() == 2
            && meta.kernels[0].build_key == meta.kernels[1].build_key
            && meta.kernels[0].cmdline == meta.kernels[1].cmdline;
        if same_kernel && !flat.is_empty() {
            let c = crate::stats::calibrate_aa(&flat);
            let pct =
                |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{:.2}%", v * 100.0));
            let _ = writeln!(
                r,
                "**A/A calibration** (the same kernel and command line on both sides, so every \
                 difference is noise): median |difference| {}, largest {}, median CoV {}; \
                 {} of {} testable points significant (observed false-positive rate {}), \
                 {} shown equivalent within ±{}%.\n",
                pct(c.median_abs_relative_difference),
                pct(c.max_abs_relative_difference),
                pct(c.median_cov),
                c.significant_points,
                c.testable_points,
                pct(c.false_positive_rate),
                pct(c.equivalent_rate),
                cfg.margin * 100.0
            );
        }
        let mut noise = String::new();
        for (key, list) in results {
            for (a, p) in list.iter().zip(&tables[key]) {
                for (side, summary) in [(0, &a.a), (1, &a.b)] {
                    let pct = |variance: Option<f64>| {
                        summary
                            .cov_of(variance)
                            .map_or("–".to_string(), |c| format!("{:.2}", c * 100.0))
                    };
                    let _ = writeln!(
                        noise,
                        "| {} | {} | {} {} | {} | {} | {} | {} |",
                        escape_md(&key.workload),
                        key.cpus,
                        param_label(&key.workload),
                        p.param,
                        escape_md(&names[side]),
                        summary.n_boots,
                        pct(summary.boot_means_variance),
                        pct(summary.within_boot_variance),
                    );
                }
            }
        }
        if !noise.is_empty() {
            let _ = writeln!(
                r,
                "Noise: coefficient of variation of the boot means (between boots) and within a boot, \
                 per point and side. The interval is built from the spread of the boot means: \
                 where that is about the within-boot CoV over √iterations, more iterations a boot \
                 narrow it; where it is larger, the boots differ and only more boots do.\n\n\
                 | workload | CPUs | point | variant | boots | CoV between boots [%] | CoV within a boot [%] |\n\
                 |---|---:|---|---|---:|---:|---:|\n{noise}"
            );
        }
        if outliers.is_empty() {
            let _ = writeln!(r, "No outliers (modified z-score above 3.5).\n");
        } else {
            let _ = writeln!(
                r,
                "Outliers (modified z-score above 3.5), flagged and kept in every figure above:\n\n{}\n",
                outliers.join("\n")
            );
        }
    }

    let _ = writeln!(r, "## Boots\n");
    let busy = meta
        .boots
        .iter()
        .filter(|b| b.under_load(meta.host.cores))
        .count();
    if busy > 0 {
        let what = format!(
            "{busy} of {} boots started while the host was busy",
            meta.boots.len()
        );
        let why = format!(
            "(half or more of its {} cores busy in the half second before the boot)",
            meta.host.cores
        );
        let _ = if meta.counts_instructions() {
            writeln!(
                r,
                "{what} {why}, marked ⚠ below. Under icount timing that slows the run but does \
                 not enter the figures: guest time counts the guest's instructions.\n"
            )
        } else {
            writeln!(
                r,
                "**{what}** {why}: their timings carry the host's noise. They are marked ⚠ \
                 below.\n"
            )
        };
    }
    let _ = writeln!(
        r,
        "| # | variant | CPUs | boot | status | wall [s] | samples | busy host cores before → after | guest kernel | console log |"
    );
    let _ = writeln!(r, "|---:|---|---:|---:|---|---:|---:|---|---|---|");
    for b in &meta.boots {
        let _ = writeln!(
            r,
            "| {} | {} | {} | {} | {} | {:.1} | {} | {}{:.1} → {:.1} | {} | [log]({}) |",
            b.unit,
            escape_md(&b.variant),
            b.cpus,
            b.boot,
            if b.ok {
                escape_md(&b.status)
            } else {
                format!("**{}**", escape_md(&b.status))
            },
            b.wall_s,
            b.samples,
            if b.under_load(meta.host.cores) {
                "⚠ "
            } else {
                ""
            },
            b.host_load_before,
            b.host_load_after,
            escape_md(&b.guest_kernel),
            b.console_log
        );
    }
    let _ = writeln!(
        r,
        "\nRaw data: [samples.csv](samples.csv) (every iteration, warm-ups marked), [meta.toml](meta.toml), [summary.json](summary.json) (every statistic of every point)."
    );
    r
}

/// Renders `report.md` in a run directory from its files.
pub fn write(dir: &Path) -> Result<PathBuf> {
    let meta = RunMeta::read(dir)?;
    let (samples, hosts) = crate::samples::hosts_or(
        crate::samples::read_samples_with_hosts(dir)?,
        &meta.host.hostname,
    );
    let diffconfig = std::fs::read_to_string(dir.join(DIFFCONFIG_FILE)).ok();
    let sizes = SizeRecord::read(dir)?;
    let files = RunFiles {
        diffconfig: diffconfig.as_deref(),
        sizes: sizes.as_ref(),
    };
    let analysis = analyse_with_hosts(&meta, &samples, &hosts);
    let names = side_names(&meta);
    let plots_dir = dir.join(PLOTS_DIR);
    for (key, points) in &analysis.tables {
        let analyses = analysis
            .results
            .as_ref()
            .ok()
            .and_then(|m| m.get(key))
            .map(Vec::as_slice);
        let input = plot_input(key, points, analyses, &names, analysis.config.margin);
        crate::plots::render(&input, &plots_dir, &plot_stem(key))?;
    }
    let text = render_analysis(&meta, &samples, files, &analysis, true);
    let profiles = profile::load(dir, &meta)?;
    let text = with_profile_section(text, profiles.as_ref(), &plots_dir)?;
    let mut summary = summary_json(&meta, &analysis, sizes.as_ref())?;
    if let Some(view) = &profiles {
        let mut doc: serde_json::Value = serde_json::from_str(&summary)?;
        doc["profile"] = profile::json(view);
        summary = serde_json::to_string_pretty(&doc)? + "\n";
    }
    std::fs::write(dir.join(SUMMARY_FILE), summary)?;
    let path = dir.join(REPORT_FILE);
    std::fs::write(&path, text)?;
    Ok(path)
}

/// The report with "Where the difference goes" (and its plots) before the
/// Boots section; unchanged for a run without profiles.
fn with_profile_section(
    text: String,
    view: Option<&profile::ProfileView>,
    plots_dir: &Path,
) -> Result<String> {
    let Some(view) = view else {
        return Ok(text);
    };
    for p in &view.points {
        crate::plots::render_profile(
            &profile::plot_input(view, p),
            plots_dir,
            &profile::plot_stem(p),
        )?;
    }
    let section = profile::section(Some(view), true);
    Ok(match text.find("## Boots\n") {
        Some(at) => format!("{}{section}{}", &text[..at], &text[at..]),
        None => text + &section,
    })
}

/// `summary.json`: one object per point with every statistic, and the
/// kernels' sizes (`null` when the run recorded none), for dashboards.
pub fn summary_json(
    meta: &RunMeta,
    analysis: &Analysis,
    sizes: Option<&SizeRecord>,
) -> Result<String> {
    let names = side_names(meta);
    let mut points = Vec::new();
    for (key, list) in &analysis.tables {
        let analyses = analysis.results.as_ref().ok().and_then(|m| m.get(key));
        for (i, p) in list.iter().enumerate() {
            points.push(serde_json::json!({
                "workload": key.workload,
                "metric": key.metric,
                "unit": p.unit,
                "higher_is_better": p.higher_is_better,
                "cpus": key.cpus,
                "param": p.param,
                "without": names[0],
                "with": names[1],
                "analysis": analyses.and_then(|a| a.get(i)),
            }));
        }
    }
    let doc = serde_json::json!({
        "suite": meta.suite,
        "accel": meta.accel,
        "complete": meta.complete,
        "config": analysis.config,
        "error": analysis.results.as_ref().err(),
        "points": points,
        "sizes": sizes,
    });
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

/// A kernel's fragments for the report: each file, where it was found and
/// its hash (runs from before the source was recorded give the hash alone).
fn fragments_cell(k: &crate::samples::KernelMeta) -> String {
    if k.fragments.is_empty() {
        return "–".into();
    }
    // The base configuration first, as the kernel is built.
    let base = crate::images::fragments::BASE;
    k.fragments
        .iter()
        .filter(|(file, _)| file.as_str() == base)
        .chain(k.fragments.iter().filter(|(file, _)| file.as_str() != base))
        .map(|(file, sha256)| {
            let sha256: String = sha256.chars().take(16).collect();
            match k.fragment_sources.get(file) {
                Some(source) => format!("{file}: {source} ({sha256})"),
                None => format!("{file} ({sha256})"),
            }
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_points() -> BTreeMap<u32, Vec<(Point, String, String)>> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hackbench-ia64-2008.csv");
        let mut reader = csv::Reader::from_path(path).unwrap();
        let mut out: BTreeMap<u32, Vec<(Point, String, String)>> = BTreeMap::new();
        for row in reader.records() {
            let row = row.unwrap();
            let cpus: u32 = row[0].parse().unwrap();
            let point = Point {
                param: row[1].parse().unwrap(),
                unit: "s".into(),
                higher_is_better: false,
                sides: [
                    vec![vec![row[2].parse().unwrap()]],
                    vec![vec![row[3].parse().unwrap()]],
                ],
            };
            out.entry(cpus)
                .or_default()
                .push((point, row[4].to_string(), row[5].to_string()));
        }
        out
    }

    /// The seed's diffs were computed from unrounded means; from the rounded
    /// means it printed, a diff can differ by one unit in the last digit.
    #[test]
    fn rendering_seed_004_reproduces_its_diff_columns() {
        let names = ["without".to_string(), "with".to_string()];
        let (mut rows, mut exact) = (0, 0);
        for (cpus, entries) in reference_points() {
            let points: Vec<Point> = entries.iter().map(|e| e.0.clone()).collect();
            let key = TableKey {
                workload: "hackbench".into(),
                metric: "time".into(),
                cpus,
            };
            let table = render_table(&key, &points, &names, None, Correction::Holm);
            for ((point, seed_diff, seed_pct), line) in entries.iter().zip(table.lines().skip(2)) {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                assert_eq!(cells[1], point.param.to_string());
                let (diff, pct) = (cells[4], cells[5]);
                let near = |a: &str, b: &str, tol: f64| {
                    (a.parse::<f64>().unwrap() - b.parse::<f64>().unwrap()).abs() <= tol
                };
                assert!(
                    near(diff, seed_diff, 0.0011),
                    "{cpus} CPUs {line}: {diff} vs {seed_diff}"
                );
                assert!(
                    near(pct, seed_pct, 0.021),
                    "{cpus} CPUs {line}: {pct} vs {seed_pct}"
                );
                assert_eq!(diff.starts_with('+'), seed_diff.starts_with('+'), "{line}");
                rows += 1;
                if diff == seed_diff && pct == seed_pct {
                    exact += 1;
                }
            }
        }
        assert_eq!(rows, 48);
        // 35 rows match to the character; the other 13 are off by the seed's rounding.
        assert!(exact >= 35, "only {exact} of 48 rows match exactly");
    }

    fn sample(variant: &str, boot: u32, iteration: u32, warmup: bool, value: f64) -> Sample {
        Sample {
            suite: "t".into(),
            workload: "hackbench".into(),
            metric: "time".into(),
            unit: "s".into(),
            higher_is_better: false,
            param: 4,
            cpus: 2,
            variant: variant.into(),
            boot,
            iteration,
            warmup,
            value,
            started_at: String::new(),
        }
    }

    #[test]
    fn tables_group_by_boot_and_drop_warmups() {
        let samples = vec![
            sample("off", 0, 0, true, 100.0),
            sample("off", 0, 1, false, 1.0),
            sample("off", 1, 1, false, 3.0),
            sample("on", 0, 1, false, 2.0),
            sample("other", 0, 1, false, 50.0),
        ];
        let t = tables(&samples, &["off".into(), "on".into()]);
        let points = &t[&TableKey {
            workload: "hackbench".into(),
            metric: "time".into(),
            cpus: 2,
        }];
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].sides[0], vec![vec![1.0], vec![3.0]]);
        assert_eq!(points[0].sides[1], vec![vec![2.0]]);
        assert_eq!(points[0].mean(0), 2.0);
        assert!((points[0].sd(0) - 2f64.sqrt()).abs() < 1e-12);
        assert!(points[0].sd(1).is_nan());
    }

    #[test]
    fn report_escapes_names_and_marks_partial_runs() {
        let meta = RunMeta {
            suite: "my|suite".into(),
            kernels: vec![
                crate::samples::KernelMeta {
                    variant: "off".into(),
                    ..Default::default()
                },
                crate::samples::KernelMeta {
                    variant: "on".into(),
                    ..Default::default()
                },
            ],
            complete: false,
            ..Default::default()
        };
        let samples = vec![
            sample("off", 0, 0, false, 1.0),
            sample("on", 0, 0, false, 1.1),
        ];
        let text = render(
            &meta,
            &samples,
            RunFiles {
                diffconfig: Some(" FTRACE n -> y\n"),
                sizes: None,
            },
        );
        assert!(text.contains("my\\|suite"));
        assert!(text.contains("**Partial run**"));
        assert!(text.contains("FTRACE n -> y"));
        assert!(
            text.contains(
                "| 4 | 1.000 | 1.100 | +0.100 | +10 | – | – | insufficient data | 1 | 1 | – | – |"
            ),
            "{text}"
        );
        assert!(text.contains("insufficient data on all 1 points"), "{text}");
    }
}
