//! The report's "Where the difference goes": from a run directory's
//! `profiles/` alone, per point the instructions per run of each kernel, the
//! difference, and the functions that account for most of it; with the
//! cycle model, its counts likewise. A run without profiles has no such
//! section.

use super::format::{escape_md, percent, signed};
use crate::base::error::Result;
use crate::record::RunMeta;
use crate::stages::profile::breakdown::FunctionDiff;
use crate::stages::profile::raw::USER_SPACE;
use crate::stages::profile::store::{self, Manifest, PointTotals, ProfileBoot};
use crate::stages::profile::symbols::function_name;
use crate::stages::profile::{compare, Breakdown};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// Rows of a point's table; the rest are summed in one row.
pub const TOP_FUNCTIONS: usize = 12;
/// Bars in a point's plot.
pub const PLOT_FUNCTIONS: usize = 15;

/// One point compared across the two profiled boots.
#[derive(Debug, Clone, Serialize)]
pub struct ProfilePoint {
    pub workload: String,
    pub param: u64,
    pub cpus: u32,
    /// The agent's guest time per measured run on each side, in ns.
    pub elapsed_ns_per_run: [f64; 2],
    pub breakdown: Breakdown,
    /// The cycle model's counts compared likewise, one breakdown per point
    /// of the model (`llc-misses`, …, in the order of
    /// [`crate::base::cycle_model::METRICS`]), when both profiled boots ran under it.
    pub model: Option<Vec<(String, Breakdown)>>,
}

/// The wall time of a profiled boot against the timed boots of its
/// variant and CPU count: what the plugin costs.
#[derive(Debug, Clone, Serialize)]
pub struct Slowdown {
    pub variant: String,
    pub cpus: u32,
    pub profiled_wall_s: f64,
    pub timed_wall_s: f64,
    pub factor: f64,
}

/// Everything the section shows of one candidate against the baseline.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileView {
    pub variants: [String; 2],
    /// With several candidates, this one's name: it titles the section and
    /// tells the plots apart. `None` in a run of two.
    pub candidate: Option<String>,
    pub icount_shift: u32,
    pub guest_seeds: Vec<(u32, Option<u64>)>,
    pub points: Vec<ProfilePoint>,
    pub slowdown: Vec<Slowdown>,
    /// Profiled boots that failed: (variant, CPUs, status).
    pub failed: Vec<(String, u32, String)>,
    /// Functions only each side's kernel has.
    #[serde(skip)]
    pub only_in: [BTreeSet<String>; 2],
}

fn find(manifest: &Manifest, side: usize, cpus: u32) -> Option<&ProfileBoot> {
    manifest
        .boots
        .iter()
        .find(|b| b.ok() && b.side == side && b.cpus == cpus)
}

fn totals<'a>(boot: &'a ProfileBoot, workload: &str, param: u64) -> Option<&'a PointTotals> {
    boot.points
        .iter()
        .find(|p| p.workload == workload && p.param == param)
}

/// Counts by function, the pieces gcc split off a function folded into it.
fn fold(counts: Option<&BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (symbol, n) in counts.into_iter().flatten() {
        *out.entry(function_name(symbol).to_string()).or_default() += n;
    }
    out
}

/// The cycle model's counts of a point by metric and function, folded as
/// [`fold`] does.
fn fold_model(
    counts: Option<&BTreeMap<String, BTreeMap<String, u64>>>,
) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (symbol, metrics) in counts.into_iter().flatten() {
        for (metric, n) in metrics {
            *out.entry(metric.clone())
                .or_default()
                .entry(function_name(symbol).to_string())
                .or_default() += n;
        }
    }
    out
}

/// Reads a run directory's profiles: one view per candidate against the
/// baseline; none when it has no profiles.
pub fn load(dir: &Path, meta: &RunMeta) -> Result<Vec<ProfileView>> {
    let Some(manifest) = Manifest::read(dir)? else {
        return Ok(Vec::new());
    };
    let names = crate::stages::analysis::variant_names(meta);
    let several = names.len() > 2;
    (1..names.len())
        .filter(|&c| c == 1 || manifest.boots.iter().any(|b| b.side == c))
        .map(|c| load_candidate(dir, meta, &manifest, &names, c, several))
        .collect()
}

/// The view of candidate `c` (an index into `names`) against the baseline.
fn load_candidate(
    dir: &Path,
    meta: &RunMeta,
    manifest: &Manifest,
    names: &[String],
    c: usize,
    several: bool,
) -> Result<ProfileView> {
    let variants = [names[0].clone(), names[c].clone()];
    let pdir = store::dir(dir);
    let [a, b] = store::only_in_files(names, c).map(|f| store::read_names(&pdir.join(f)));
    let only_in = [a?, b?];
    let cpus: BTreeSet<u32> = manifest.boots.iter().map(|b| b.cpus).collect();
    let mut points = Vec::new();
    let mut guest_seeds = Vec::new();
    for &n in &cpus {
        let (Some(base), Some(cand)) = (find(manifest, 0, n), find(manifest, c, n)) else {
            continue;
        };
        guest_seeds.push((n, base.guest_seed));
        points.extend(pair_points(&pdir, base, cand, n, &only_in)?);
    }
    let ours = |b: &&ProfileBoot| b.side == 0 || b.side == c;
    let failed = manifest
        .boots
        .iter()
        .filter(ours)
        .filter(|b| !b.ok())
        .map(|b| (b.variant.clone(), b.cpus, b.status().clone()))
        .collect();
    Ok(ProfileView {
        candidate: several.then(|| names[c].clone()),
        variants,
        icount_shift: manifest.icount_shift,
        guest_seeds,
        points,
        slowdown: slowdowns(meta, manifest, c),
        failed,
        only_in,
    })
}

/// The points of one pair of profiled boots (the baseline's and the
/// candidate's at `cpus`): every point both measured, with its functions'
/// breakdown and, where both ran the cycle model, each model count's.
fn pair_points(
    pdir: &Path,
    base: &ProfileBoot,
    cand: &ProfileBoot,
    cpus: u32,
    only_in: &[BTreeSet<String>; 2],
) -> Result<Vec<ProfilePoint>> {
    let counts = [
        store::read_counts(&pdir.join(&base.file))?,
        store::read_counts(&pdir.join(&cand.file))?,
    ];
    let model = match (&base.model_file, &cand.model_file) {
        (Some(a), Some(b)) => Some([
            store::read_model_counts(&pdir.join(a))?,
            store::read_model_counts(&pdir.join(b))?,
        ]),
        _ => None,
    };
    let mut points = Vec::new();
    for t in &base.points {
        let Some(u) = totals(cand, &t.workload, t.param) else {
            continue;
        };
        let key = (t.workload.clone(), t.param);
        let folded = [0, 1].map(|s| fold(counts[s].get(&key)));
        let side = |s: usize| &folded[s];
        let model = model.as_ref().map(|m| {
            let by_metric = [0, 1].map(|s| fold_model(m[s].get(&key)));
            let none = BTreeMap::new();
            crate::base::cycle_model::METRICS
                .iter()
                .map(|(metric, _)| *metric)
                .filter(|metric| *metric != "instructions")
                .map(|metric| {
                    let of = |s: usize| by_metric[s].get(metric).unwrap_or(&none);
                    let b = compare([of(0), of(1)], [t.runs, u.runs], [&only_in[0], &only_in[1]]);
                    (metric.to_string(), b)
                })
                .collect()
        });
        points.push(ProfilePoint {
            workload: t.workload.clone(),
            param: t.param,
            cpus,
            elapsed_ns_per_run: [t, u].map(|p| p.elapsed_ns as f64 / p.runs.max(1) as f64),
            breakdown: compare(
                [side(0), side(1)],
                [t.runs, u.runs],
                [&only_in[0], &only_in[1]],
            ),
            model,
        });
    }
    Ok(points)
}

/// What profiling cost: each sound profiled boot of the baseline or
/// candidate `c` against the mean of the timed boots of its variant and CPU
/// count.
fn slowdowns(meta: &RunMeta, manifest: &Manifest, c: usize) -> Vec<Slowdown> {
    manifest
        .boots
        .iter()
        .filter(|b| b.side == 0 || b.side == c)
        .filter(|b| b.ok())
        .filter_map(|b| {
            let timed: Vec<f64> = meta
                .boots
                .iter()
                .filter(|t| t.ok() && t.variant == b.variant && t.cpus == b.cpus)
                .map(|t| t.wall_s)
                .collect();
            let mean = timed.iter().sum::<f64>() / timed.len() as f64;
            (!timed.is_empty() && mean > 0.0).then(|| Slowdown {
                variant: b.variant.clone(),
                cpus: b.cpus,
                profiled_wall_s: b.wall_s,
                timed_wall_s: mean,
                factor: b.wall_s / mean,
            })
        })
        .collect()
}

/// Thousands separated by thin spaces, as instruction counts are long.
pub fn count(v: f64) -> String {
    let n = v.round();
    let digits = format!("{}", n.abs() as u64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    if n < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

fn signed_count(v: f64) -> String {
    if v.round() == 0.0 {
        "0".into()
    } else if v > 0.0 {
        format!("+{}", count(v))
    } else {
        count(v)
    }
}

fn share(s: Option<f64>) -> String {
    s.map_or("–".into(), |s| format!("{}%", percent(s * 100.0)))
}

/// The stem of a point's plot in `plots/`.
pub fn plot_stem(view: &ProfileView, p: &ProfilePoint) -> String {
    let of = view
        .candidate
        .as_ref()
        .map_or(String::new(), |c| format!("-{c}"));
    format!("profile-{}-{}-{}cpu{of}", p.workload, p.param, p.cpus)
}

fn point_title(p: &ProfilePoint) -> String {
    format!(
        "{}, {} {}, {} CPU{}",
        escape_md(&p.workload),
        crate::stages::analysis::param_label(&p.workload),
        p.param,
        p.cpus,
        if p.cpus == 1 { "" } else { "s" }
    )
}

fn function_cell(name: &str, only_in: Option<usize>, variants: &[String; 2]) -> String {
    let shown = if name.starts_with('[') {
        escape_md(name)
    } else {
        format!("`{name}`")
    };
    match only_in {
        Some(side) => format!("{shown} (only in {})", escape_md(&variants[side])),
        None => shown,
    }
}

/// The markdown section (empty when `view` is `None`): what the profiled
/// boots measured and how, then each point's difference by function.
pub fn section(view: Option<&ProfileView>, with_plots: bool) -> String {
    let Some(v) = view else {
        return String::new();
    };
    let mut r = String::new();
    match &v.candidate {
        Some(c) => {
            let _ = writeln!(
                r,
                "## Where the difference goes: {} against {}\n",
                escape_md(c),
                escape_md(&v.variants[0])
            );
        }
        None => {
            let _ = writeln!(r, "## Where the difference goes\n");
        }
    }
    r.push_str(&method(v));
    for (variant, cpus, status) in &v.failed {
        let _ = writeln!(
            r,
            "**The profiled boot of {} on {cpus} CPU(s) failed**: {}.\n",
            escape_md(variant),
            escape_md(status)
        );
    }
    if v.points.is_empty() {
        let _ = writeln!(r, "No point has a profile of both variants.\n");
        return r;
    }
    for p in &v.points {
        r.push_str(&point(v, p, with_plots));
    }
    let model = if v.points.iter().any(|p| p.model.is_some()) {
        "; the cycle model's in `profiles/*-model.tsv` (workload, param, symbol, metric, value)"
    } else {
        ""
    };
    let _ = writeln!(
        r,
        "Counts by function: `profiles/*.tsv` (workload, param, symbol, instructions over the \
         measured runs){model}; the profiled boots in `profiles/profiles.toml`.\n"
    );
    r
}

/// How the profile was made, and what the plugin cost in wall time.
fn method(v: &ProfileView) -> String {
    let mut r = String::new();
    let ns = 1u64 << v.icount_shift;
    let seeds: Vec<String> = v
        .guest_seeds
        .iter()
        .map(|(n, s)| {
            format!(
                "{n} CPU{}: {}",
                if *n == 1 { "" } else { "s" },
                s.map_or("none".into(), |s| s.to_string())
            )
        })
        .collect();
    let _ = writeln!(
        r,
        "Each variant booted once more per CPU count, apart from the timed boots (whose figures \
         these boots do not enter), with markbench's TCG plugin counting every guest instruction \
         that the timed runs executed: by kernel function (each instruction's address looked up \
         in its kernel's System.map) and in user space as one sum; measured runs only, warm-ups \
         left out. Under TCG the counts are exact, not sampled: a boot repeats instruction for \
         instruction with its seed, and both sides' profiled boots had the same guest seed ({}), \
         so an A/A profile differs in no function. Each side has one profiled boot: how often the \
         scheduler, the timer and the allocator ran is part of a function's count, as it is part \
         of the timed runs. Parts gcc split off a function (`name.isra.0`, `name.cold`, …) count \
         as the function. They count instructions, not time: cache, \
         memory and timing effects are not in them. Under `-icount shift={}` one instruction is \
         {ns} ns of guest time, which checks the counts against the agent's own timing.\n",
        seeds.join(", "),
        v.icount_shift
    );
    if !v.slowdown.is_empty() {
        let parts: Vec<String> = v
            .slowdown
            .iter()
            .map(|s| {
                format!(
                    "{} on {} CPU{}: {:.1} s against {:.1} s (×{:.2})",
                    escape_md(&s.variant),
                    s.cpus,
                    if s.cpus == 1 { "" } else { "s" },
                    s.profiled_wall_s,
                    s.timed_wall_s,
                    s.factor
                )
            })
            .collect();
        let _ = writeln!(
            r,
            "What the plugin costs, wall time of a profiled boot against the mean timed boot: {}.\n",
            parts.join("; ")
        );
    }
    r
}

/// One point: its instruction counts against the measured guest time, and
/// the functions that differ.
fn point(v: &ProfileView, p: &ProfilePoint, with_plots: bool) -> String {
    let ns = 1u64 << v.icount_shift;
    let names = &v.variants;
    let mut r = String::new();
    let b = &p.breakdown;
    let _ = writeln!(r, "### {}\n", point_title(p));
    let _ = writeln!(
        r,
        "| per run | {} | {} | diff | diff % |",
        escape_md(&names[0]),
        escape_md(&names[1])
    );
    let _ = writeln!(r, "|---|---:|---:|---:|---:|");
    let rel = if b.per_run[0] > 0.0 {
        percent(b.difference / b.per_run[0] * 100.0)
    } else {
        "–".into()
    };
    let _ = writeln!(
        r,
        "| instructions | {} | {} | {} | {rel} |",
        count(b.per_run[0]),
        count(b.per_run[1]),
        signed_count(b.difference)
    );
    let implied = b.per_run.map(|n| n * ns as f64 / 1e9);
    let measured = p.elapsed_ns_per_run.map(|e| e / 1e9);
    let _ = writeln!(
        r,
        "| × {ns} ns [s] | {:.4} | {:.4} | {} | |",
        implied[0],
        implied[1],
        signed(implied[1] - implied[0], 4)
    );
    let _ = writeln!(
        r,
        "| measured guest time [s] | {:.4} | {:.4} | {} | |",
        measured[0],
        measured[1],
        signed(measured[1] - measured[0], 4)
    );
    let agreement: Vec<String> = (0..2)
        .map(|s| percent((implied[s] / measured[s] - 1.0) * 100.0))
        .collect();
    let _ = writeln!(
        r,
        "\nCounted against measured: {}% and {}% (the rest is guest time in which no \
         instruction ran, idle, and instructions counted twice when a fault interrupts a \
         translated block).\n",
        agreement[0], agreement[1]
    );
    let b = &p.breakdown;
    let differing: Vec<_> = b.differing().collect();
    if differing.is_empty() {
        let _ = writeln!(
            r,
            "No function differs: both kernels executed the same instructions in every \
             function ({} functions ran).\n",
            b.functions.len()
        );
        if let Some(model) = &p.model {
            r.push_str(&model_counts(model, names));
        }
        return r;
    }
    r.push_str(&functions_table(b, &differing, names));
    r.push_str(&where_the_difference_adds_up(v, b, &differing));
    if with_plots {
        let stem = plot_stem(v, p);
        let _ = writeln!(
            r,
            "\n![largest differences by function](plots/{stem}-bars.png)\n\n\
             Plot as SVG: [largest differences by function](plots/{stem}-bars.svg)."
        );
    }
    let _ = writeln!(r);
    if let Some(model) = &p.model {
        r.push_str(&model_counts(model, names));
    }
    r
}

/// Functions named per point of the model, largest differences first.
pub const MODEL_FUNCTIONS: usize = 4;

/// The cycle model's counts of a point: per run on each side, and for each
/// count the functions whose counts differ most.
fn model_counts(model: &[(String, Breakdown)], names: &[String; 2]) -> String {
    let mut r = String::new();
    let _ = writeln!(
        r,
        "The cycle model's counts, per run; each count is the function's whose translated \
         block made it (its instruction fetches, its loads and stores, the branch that ends \
         it), so a function's misses are those of its own code and accesses:\n"
    );
    let _ = writeln!(
        r,
        "| per run | {} | {} | diff | diff % | largest differences by function |",
        escape_md(&names[0]),
        escape_md(&names[1])
    );
    let _ = writeln!(r, "|---|---:|---:|---:|---:|---|");
    for (metric, b) in model {
        let rel = if b.per_run[0] > 0.0 {
            percent(b.difference / b.per_run[0] * 100.0)
        } else {
            "–".into()
        };
        let largest: Vec<String> = b
            .differing()
            .take(MODEL_FUNCTIONS)
            .map(|f| {
                let of = f
                    .share
                    .map_or(String::new(), |s| format!(", {}%", percent(s * 100.0)));
                format!(
                    "{} {} → {} ({}{of})",
                    function_cell(&f.function, f.only_in, names),
                    count(f.per_run[0]),
                    count(f.per_run[1]),
                    signed_count(f.difference)
                )
            })
            .collect();
        let largest = if largest.is_empty() {
            "none differs".to_string()
        } else {
            largest.join("; ")
        };
        let _ = writeln!(
            r,
            "| {metric} | {} | {} | {} | {rel} | {largest} |",
            count(b.per_run[0]),
            count(b.per_run[1]),
            signed_count(b.difference)
        );
    }
    let _ = writeln!(r);
    r
}
/// The functions whose counts differ, largest differences first.
fn functions_table(b: &Breakdown, differing: &[&FunctionDiff], names: &[String; 2]) -> String {
    let mut r = String::new();
    let _ = writeln!(
        r,
        "{} of {} functions that ran differ; the {} largest differences, instructions per \
         run (the shares add up to 100% over all functions, negative ones included):\n",
        differing.len(),
        b.functions.len(),
        differing.len().min(TOP_FUNCTIONS)
    );
    let _ = writeln!(
        r,
        "| function | {} | {} | diff | share of diff |",
        escape_md(&names[0]),
        escape_md(&names[1])
    );
    let _ = writeln!(r, "|---|---:|---:|---:|---:|");
    for f in differing.iter().take(TOP_FUNCTIONS) {
        let cell = |side: usize| {
            if f.only_in == Some(1 - side) {
                "—".to_string()
            } else {
                count(f.per_run[side])
            }
        };
        let _ = writeln!(
            r,
            "| {} | {} | {} | {} | {} |",
            function_cell(&f.function, f.only_in, names),
            cell(0),
            cell(1),
            signed_count(f.difference),
            share(f.share)
        );
    }
    if differing.len() > TOP_FUNCTIONS {
        let rest = &differing[TOP_FUNCTIONS..];
        let sum = |side: usize| rest.iter().map(|f| f.per_run[side]).sum::<f64>();
        let d: f64 = rest.iter().map(|f| f.difference).sum();
        let _ = writeln!(
            r,
            "| {} other functions | {} | {} | {} | {} |",
            rest.len(),
            count(sum(0)),
            count(sum(1)),
            signed_count(d),
            share((b.difference != 0.0).then(|| d / b.difference))
        );
    }
    r
}

/// What the functions that grew, shrank, ran in user space or exist on one
/// side only add to the difference.
fn where_the_difference_adds_up(
    v: &ProfileView,
    b: &Breakdown,
    differing: &[&FunctionDiff],
) -> String {
    let names = &v.variants;
    let mut r = String::new();
    let grew: f64 = differing.iter().map(|f| f.difference.max(0.0)).sum();
    let shrank: f64 = differing.iter().map(|f| f.difference.min(0.0)).sum();
    let _ = writeln!(
        r,
        "\nThe functions that grew add {} per run, those that shrank {}; the difference is \
         their sum.",
        signed_count(grew),
        signed_count(shrank)
    );
    if let Some(user) = b.functions.iter().find(|f| f.function == USER_SPACE) {
        let _ = writeln!(
            r,
            "User space: {} and {} per run, {} ({} of the difference).",
            count(user.per_run[0]),
            count(user.per_run[1]),
            signed_count(user.difference),
            share(user.share)
        );
    }
    for (side, name) in names.iter().enumerate() {
        let own: Vec<_> = b
            .functions
            .iter()
            .filter(|f| f.only_in == Some(side))
            .collect();
        if own.is_empty() {
            continue;
        }
        let d: f64 = own.iter().map(|f| f.difference).sum();
        let _ = writeln!(
            r,
            "Functions only {} has ({} of its {} such functions ran): {} per run ({} of the \
             difference).",
            escape_md(name),
            own.len(),
            v.only_in[side].len(),
            signed_count(d),
            share((b.difference != 0.0).then(|| d / b.difference))
        );
    }
    r
}

/// The section's figures for `summary.json`.
pub fn json(view: &ProfileView) -> serde_json::Value {
    let points: Vec<serde_json::Value> = view
        .points
        .iter()
        .map(|p| {
            let b = &p.breakdown;
            let mut point = serde_json::json!({
                "workload": p.workload,
                "param": p.param,
                "cpus": p.cpus,
                "without": view.variants[0],
                "with": view.variants[1],
                "runs": b.runs,
                "instructions_per_run": b.per_run,
                "difference": b.difference,
                "elapsed_ns_per_run": p.elapsed_ns_per_run,
                "functions": b.differing().take(TOP_FUNCTIONS * 4).collect::<Vec<_>>(),
                "user_space": b.functions.iter().find(|f| f.function == USER_SPACE),
            });
            if let Some(model) = &p.model {
                let metrics: serde_json::Map<String, serde_json::Value> = model
                    .iter()
                    .map(|(metric, b)| {
                        let figures = serde_json::json!({
                            "per_run": b.per_run,
                            "difference": b.difference,
                            "functions": b.differing().take(TOP_FUNCTIONS).collect::<Vec<_>>(),
                        });
                        (metric.clone(), figures)
                    })
                    .collect();
                point["model"] = serde_json::Value::Object(metrics);
            }
            point
        })
        .collect();
    serde_json::json!({
        "icount_shift": view.icount_shift,
        "points": points,
        "slowdown": view.slowdown,
        "failed": view.failed,
    })
}

/// The bars of a point's plot: its largest differences.
pub fn plot_input(view: &ProfileView, p: &ProfilePoint) -> crate::base::plots::ProfileBars {
    crate::base::plots::ProfileBars {
        title: format!(
            "{}: where {} differs from {}",
            point_title(p),
            view.variants[1],
            view.variants[0]
        ),
        label_a: view.variants[0].clone(),
        label_b: view.variants[1].clone(),
        bars: p
            .breakdown
            .differing()
            .take(PLOT_FUNCTIONS)
            .map(|f| {
                let name = match f.only_in {
                    Some(side) => format!("{} (only {})", f.function, view.variants[side]),
                    None => f.function.clone(),
                };
                (name, f.difference)
            })
            .collect(),
        total: p.breakdown.difference,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(count(137311144.0), "137\u{2009}311\u{2009}144");
        assert_eq!(count(-1234.4), "-1\u{2009}234");
        assert_eq!(count(12.0), "12");
        assert_eq!(signed_count(0.2), "0");
        assert_eq!(signed_count(1000.0), "+1\u{2009}000");
    }
}
