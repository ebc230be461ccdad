//! `report.md`: one function per section, in the order they appear.
//!
//! A run of two variants reads as a pair ("without" and "with"); with more,
//! every candidate is set against the baseline, and each results table has
//! one column group per candidate.

mod micro;
mod precision;
mod results;
mod series;
mod significance;

pub(super) use results::decimals_of;

use super::format::escape_md;
use super::{profile, sizes, Export, RunReport, REPORT_FILE};
use crate::record::{KernelMeta, SAMPLES_FILE};
use crate::stages::analysis::{param_label, Analysis, TableKey};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

pub(super) struct Markdown;

impl Export for Markdown {
    fn file(&self) -> &'static str {
        REPORT_FILE
    }

    fn render(&self, run: &RunReport) -> crate::base::error::Result<String> {
        Ok(render(run))
    }
}

/// The line naming the QEMU a run's SMP boots ran with, when it was
/// markbench's own: its source, its patches and the turn it gave each vCPU.
fn smp_qemu_line(q: &crate::record::SmpQemuRecord) -> String {
    let turn = match q.turn {
        0 => "turns to the next timer deadline, as upstream".to_string(),
        n => format!("each vCPU's turn at most {n} instructions"),
    };
    format!(
        "- QEMU of the boots with more than one vCPU: markbench's own build {} (`{}`, sha256 {}) \
         of {} (sha256 {}) with {} patch(es): {}; {turn}\n",
        escape_md(&q.version),
        q.path.replace('`', "'"),
        q.sha256.short(),
        escape_md(&q.source),
        q.source_sha256.short(),
        q.patches.len(),
        escape_md(
            &q.patches
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

/// The whole report.
pub(super) fn render(run: &RunReport) -> String {
    let mut r = header(run);
    // The Desnoyers 2006 micro-benchmarks' table first: it is what a micro run is for.
    r.push_str(&micro::section(run));
    r.push_str(&what_was_compared(run));
    r.push_str(&sizes::section(run.files.sizes));
    r.push_str(&where_and_how(run));
    r.push_str(&results::section(run));
    r.push_str(&super::reference::markdown(run));
    r.push_str(&precision::section(run));
    r.push_str(&series::section(run));
    r.push_str(&significance::section(run));
    for view in run.profiles {
        r.push_str(&profile::section(Some(view), run.with_plots));
    }
    r.push_str(&boots(run));
    r
}

/// How the points of a report are named in its prose.
struct PointNames {
    /// Workloads measured in more than one metric (kernel-compile's real,
    /// user and sys time): their points need the metric to be told apart.
    several_metrics: BTreeSet<String>,
}

impl PointNames {
    fn of(analysis: &Analysis) -> PointNames {
        let mut metrics: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for key in analysis.tables.keys() {
            metrics
                .entry(key.workload.as_str())
                .or_default()
                .insert(key.metric.as_str());
        }
        PointNames {
            several_metrics: metrics
                .into_iter()
                .filter(|(_, m)| m.len() > 1)
                .map(|(w, _)| w.to_string())
                .collect(),
        }
    }

    /// ", user" where the workload has several metrics, else nothing.
    fn metric_suffix(&self, key: &TableKey) -> String {
        if self.several_metrics.contains(&key.workload) {
            format!(", {}", escape_md(&key.metric))
        } else {
            String::new()
        }
    }

    /// The point in a table cell: "groups 4", "jobs 2, user".
    fn cell(&self, key: &TableKey, param: u64) -> String {
        format!(
            "{} {param}{}",
            param_label(&key.workload),
            self.metric_suffix(key)
        )
    }

    /// The point in prose: "hackbench 2 CPUs, groups 4", "ping-flood 1 CPU, …".
    fn name(&self, key: &TableKey, param: u64) -> String {
        format!(
            "{} {} CPU{}, {}",
            escape_md(&key.workload),
            key.cpus,
            if key.cpus == 1 { "" } else { "s" },
            self.cell(key, param)
        )
    }
}

/// "both variants" for a pair, "all 3 variants" beyond.
fn every_variant(analysis: &Analysis) -> String {
    match analysis.variants.len() {
        2 => "both variants".into(),
        n => format!("all {n} variants"),
    }
}

/// The verdict line of comparison `i`, as the report and summary.json give it.
pub(super) fn verdict_text(analysis: &Analysis, i: usize) -> String {
    match &analysis.results {
        Ok(_) => {
            let points = analysis.comparison_points(i);
            if points.is_empty() {
                "no points were measured".to_string()
            } else {
                crate::base::stats::summary_line(&points, &analysis.config)
            }
        }
        Err(e) => format!("the statistics could not be computed: {e}"),
    }
}

/// Title, warnings, description and the verdict.
fn header(run: &RunReport) -> String {
    let (meta, analysis) = (run.meta, run.analysis);
    let names: Vec<String> = analysis.variants.iter().map(|n| escape_md(n)).collect();
    let mut r = String::new();
    let _ = writeln!(
        r,
        "# markbench: {} vs {} ({} suite)\n",
        names[0],
        names[1..].join(", "),
        escape_md(&meta.suite_title())
    );
    if let Some(arch) = super::words::architecture(meta) {
        let _ = writeln!(r, "**Architecture**: {}\n", escape_md(&arch));
    }
    if !meta.complete {
        let _ = writeln!(
            r,
            "> **Partial run**: the run did not finish; the tables hold what was measured before it stopped.\n"
        );
    }
    for w in &meta.warnings {
        let _ = writeln!(r, "> **Warning**: {}\n", escape_md(&w.describe()));
    }
    if let Some(torn) = run.files.torn {
        let _ = writeln!(
            r,
            "> **Missing sample**: line {} of {SAMPLES_FILE} is incomplete ({}, no newline: a write \
             cut short); the tables are made without it.\n",
            torn.line,
            escape_md(&torn.why)
        );
    }
    if !meta.description.is_empty() {
        let _ = writeln!(r, "{}\n", escape_md(&meta.description));
    }
    let accel = meta.accel.as_str().to_uppercase();
    if analysis.is_pair() {
        let _ = write!(
            r,
            "**Verdict** ({} against {}, measured under {accel}): {}.\n\n",
            names[1],
            names[0],
            verdict_text(analysis, 0)
        );
    } else {
        let _ = writeln!(r, "**Verdict** (measured under {accel}):\n");
        for (i, c) in analysis.comparisons.iter().enumerate() {
            let [base, cand] = analysis.names(c).map(escape_md);
            let _ = writeln!(r, "- {cand} against {base}: {}.", verdict_text(analysis, i));
        }
        r.push('\n');
    }
    let failed = meta.boots.iter().filter(|b| !b.ok()).count();
    let _ = writeln!(
        r,
        "{} boots ran ({} failed); {} measured samples over {} points in {} tables.\n",
        meta.boots.len(),
        failed,
        run.samples.iter().filter(|s| !s.warmup).count(),
        analysis.tables.values().map(Vec::len).sum::<usize>(),
        analysis.tables.len()
    );
    r
}

/// A kernel's fragments for the report: each file, where it was found and
/// its hash (runs from before the source was recorded give the hash alone).
fn fragments_cell(k: &KernelMeta) -> String {
    if k.fragments.is_empty() {
        return "–".into();
    }
    // The base configuration first, as the kernel is built.
    let base = crate::guest::images::fragments::BASE;
    k.fragments
        .iter()
        .filter(|(file, _)| file.as_str() == base)
        .chain(k.fragments.iter().filter(|(file, _)| file.as_str() != base))
        .map(|(file, sha256)| {
            let sha256 = sha256.short();
            match k.fragment_sources.get(file) {
                Some(source) => format!("{file}: {source} ({sha256})"),
                None => format!("{file} ({sha256})"),
            }
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Each comparison whose two variants booted the same bzImage, byte for
/// byte: whatever it measured between them is noise.
fn identical_kernels(meta: &crate::record::RunMeta, analysis: &Analysis) -> String {
    let mut r = String::new();
    for same in super::identical::identical_builds(meta, analysis) {
        let a = same.bzimage_sha256;
        let (cand, base, sha) = (
            escape_md(same.candidate),
            escape_md(same.baseline),
            a.short(),
        );
        if same.same_cmdline {
            let _ = writeln!(
                r,
                "\n**Identical kernels**: {cand} booted the same bzImage as {base}, byte for \
                 byte (sha256 {sha}), with the same command line: whatever differs between \
                 them is noise, so that comparison is an A/A test."
            );
        } else {
            let _ = writeln!(
                r,
                "\n{cand} booted the same bzImage as {base} (sha256 {sha}): that comparison \
                 measures their command lines alone."
            );
        }
    }
    r
}

/// The kernels side by side, and their configuration difference.
fn what_was_compared(run: &RunReport) -> String {
    let (meta, analysis) = (run.meta, run.analysis);
    let mut r = String::new();
    let _ = writeln!(r, "## What was compared\n");
    let columns = analysis.variants.len();
    if analysis.is_pair() {
        let _ = writeln!(
            r,
            "| | without (baseline) | with (candidate) |\n|---|---|---|"
        );
    } else {
        let candidates: String = (1..columns).map(|i| format!(" candidate {i} |")).collect();
        let _ = writeln!(
            r,
            "| | baseline |{candidates}\n|---|---|{}",
            "---|".repeat(columns - 1)
        );
    }
    let row = |label: &str, f: &dyn Fn(&KernelMeta) -> String| -> String {
        let cells: String = (0..columns)
            .map(|i| {
                let cell = meta.kernels.get(i).map_or("–".into(), |k| escape_md(&f(k)));
                format!(" {cell} |")
            })
            .collect();
        format!("| {label} |{cells}\n")
    };
    let or_dash = |s: &str| {
        if s.is_empty() {
            "–".to_string()
        } else {
            s.to_string()
        }
    };
    r.push_str(&row("variant", &|k| k.variant.clone()));
    r.push_str(&row("kernel", &|k| k.kernel.clone()));
    // tinyconfig, markbench's own base, goes without saying (runs from
    // before there was a choice record none).
    if meta
        .kernels
        .iter()
        .any(|k| k.config_base_words() != "tinyconfig")
    {
        r.push_str(&row("configuration base", &|k| k.config_base_words()));
    }
    r.push_str(&row("kernel fragments", &fragments_cell));
    r.push_str(&row("extra command line", &|k| or_dash(&k.cmdline)));
    r.push_str(&row("source", &|k| k.source.to_string()));
    r.push_str(&row("build key", &|k| k.build_key.short().to_string()));
    r.push_str(&row("final .config sha256", &|k| {
        k.config_sha256.short().to_string()
    }));
    r.push_str(&row("compiler", &|k| k.compiler.clone()));
    if meta.kernels.iter().any(|k| !k.bzimage_sha256.is_empty()) {
        r.push_str(&row("bzImage sha256", &|k| {
            or_dash(k.bzimage_sha256.short())
        }));
    }
    // What the booted kernel said it is: the release and build line `uname
    // -r`/`-v` print (runs from before the agent reported it have none).
    let reported = |k: &KernelMeta| {
        meta.boots
            .iter()
            .find(|b| b.variant == k.variant && !b.guest_version.is_empty())
            .map(|b| format!("{} {}", b.guest_kernel, b.guest_version))
    };
    if meta.kernels.iter().any(|k| reported(k).is_some()) {
        r.push_str(&row("guest `uname -rv`", &|k| {
            reported(k).unwrap_or_else(|| "–".into())
        }));
    }
    r.push_str(&differences(run));
    r
}

/// What differs between the kernels: their configurations, whether they
/// are the same kernel, and their sources.
fn differences(run: &RunReport) -> String {
    let (meta, analysis) = (run.meta, run.analysis);
    let columns = analysis.variants.len();
    let mut r = String::new();
    match run.files.diffconfig {
        Some(text) if !text.trim().is_empty() => {
            let _ = writeln!(
                r,
                "\nConfiguration difference (`scripts/diffconfig` baseline → candidate):\n\n```\n{}\n```\n",
                text.trim_end().replace("```", "'''")
            );
        }
        Some(_) => {
            let _ = writeln!(
                r,
                "\nThe {}kernels' configurations are identical.\n",
                if columns == 2 { "two " } else { "" }
            );
        }
        None => {}
    }
    r.push_str(&identical_kernels(meta, analysis));
    if let Some(text) = run.files.source_diff.filter(|t| !t.trim().is_empty()) {
        let _ = writeln!(
            r,
            "Source difference (commits and `git diff --stat` baseline → candidate, patches on top):\n\n```\n{}\n```\n",
            text.trim_end().replace("```", "\'\'\'")
        );
    }
    r
}

/// What the guest image held, its programs and libraries with the packages
/// and versions they came from: a library built otherwise changes the
/// instructions a benchmark executes, and so what icount measures.
fn guest_image(image: &crate::record::ImageRecord) -> String {
    let count = |kind: &str| image.files.iter().filter(|f| f.kind == kind).count();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut r = String::new();
    // Folded: a perf-bench image lists some fifty libraries.
    let _ = writeln!(
        r,
        "<details><summary>Guest image: sha256 {} ({}, {}{})</summary>\n",
        image.sha256.short(),
        plural(count("program"), "program", "programs"),
        plural(count("library"), "library", "libraries"),
        match count("file") {
            0 => String::new(),
            n => format!(", {}", plural(n, "carried file", "carried files")),
        }
    );
    let _ = writeln!(
        r,
        "| file | kind | package | version | sha256 |\n|---|---|---|---|---|"
    );
    let or_dash = |s: &str| {
        if s.is_empty() {
            "–".to_string()
        } else {
            escape_md(s)
        }
    };
    for f in &image.files {
        let _ = writeln!(
            r,
            "| `{}` | {} | {} | {} | {} |",
            f.path.replace('`', "'"),
            f.kind,
            or_dash(&f.package),
            or_dash(&f.version),
            f.sha256.short()
        );
    }
    r.push_str("\n</details>\n\n");
    r
}

/// Host, QEMU, accelerator, suite, order, timing; the workloads; shards and hosts.
fn where_and_how(run: &RunReport) -> String {
    let (meta, analysis) = (run.meta, run.analysis);
    let mut r = String::new();
    let _ = writeln!(r, "## Where and how\n");
    let h = &meta.host;
    let _ = writeln!(
        r,
        "- Host: {} ({} cores, {} GiB), Linux {}\n- QEMU: {}\n{}- Accelerator: **{}**: {}\n\
         - Suite: {} (`{}`, sha256 {}); {} boots per variant and CPU count, {} measured iterations \
         (+{} warm-up) per point per boot; {} MiB guest memory\n\
         - Overrides of the suite: {}\n\
         - Order: boots interleaved in balanced blocks (one of each variant), seed {}; the order is in meta.toml\n{}\
         - Timing: the guest agent's CLOCK_MONOTONIC around each workload run; {}\n\
         - Run: started {}, {} s of wall time, {}; markbench {} (git {})\n",
        escape_md(&meta.cpu_model_words()),
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
        meta.smp_qemu.as_ref().map_or_else(String::new, smp_qemu_line),
        meta.accel,
        escape_md(&meta.accel_reason.to_string()),
        escape_md(&meta.suite_title()),
        escape_md(&meta.suite_path),
        meta.suite_sha256.short(),
        meta.boots_per_variant,
        meta.iterations,
        meta.warmup,
        meta.memory_mib,
        match meta.overrides.describe() {
            words if words.is_empty() => "none".to_string(),
            words => escape_md(&words.join(", ")),
        },
        meta.seed,
        match &meta.slots {
            Some(slots) => format!("- Slots: {}\n", escape_md(&slots.reason.to_string())),
            None => String::new(),
        },
        escape_md(&meta.timing_sentence()),
        escape_md(&meta.started_at),
        meta.wall_s.round(),
        if meta.complete { "complete" } else { "partial" },
        escape_md(&meta.markbench_version),
        escape_md(&meta.git_revision),
    );
    if !meta.workloads.is_empty() {
        let _ = writeln!(r, "Workloads:\n");
        for w in meta.workload_lines() {
            let _ = writeln!(r, "- {}", escape_md(&w));
        }
        let _ = writeln!(r);
    }
    if let Some(image) = &meta.guest_image {
        r.push_str(&guest_image(image));
    }
    r.push_str(&shards_and_hosts(meta, analysis));
    r
}

/// The shard a run is, or the shards and hosts a merged run is made of.
fn shards_and_hosts(meta: &crate::record::RunMeta, analysis: &Analysis) -> String {
    let mut r = String::new();
    if let Some(shard) = &meta.shard {
        let _ = writeln!(
            r,
            "Shard {} of {} of the suite (`markbench run-shard`), on host {}: {} of {}.\n",
            shard.index,
            shard.count,
            escape_md(&meta.host.hostname),
            every_variant(analysis),
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
             {} of its points, so every comparison is made within one host; where a \
             point's boots come from several hosts, the host is a blocking factor (see Significance).\n\n\
             | shard | host | points | boots | failed | wall [s] | accelerator | timing |\n\
             |---:|---|---|---:|---:|---:|---|---|",
            meta.shards.len(),
            hosts.len(),
            if hosts.len() == 1 { "" } else { "s" },
            every_variant(analysis)
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
                escape_md(&s.timing_mode.to_string())
            );
        }
        let _ = writeln!(r);
    }
    r
}

/// Every boot: its variant, status, wall time and the host's load around it.
fn boots(run: &RunReport) -> String {
    let meta = run.meta;
    let mut r = String::new();
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
            "(half or more of its {} cores busy with work not markbench's in the half second \
             before the boot)",
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
        "| # | variant | CPUs | boot | status | wall [s] | samples | cores busy beside markbench before → after | guest kernel | console log |"
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
            if b.ok() {
                escape_md(&b.status())
            } else {
                format!("**{}**", escape_md(&b.status()))
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

#[cfg(test)]
mod tests {
    use crate::record::{KernelMeta, RunMeta, Sample};
    use crate::stages::report::{render, RunFiles};

    fn sample(variant: &str, metric: &str, value: f64) -> Sample {
        Sample {
            suite: "t".into(),
            workload: "kernel-compile".into(),
            metric: metric.into(),
            unit: "s".into(),
            higher_is_better: false,
            param: 4,
            cpus: 2,
            variant: variant.into(),
            boot: 0,
            iteration: 0,
            warmup: false,
            value,
            started_at: String::new(),
        }
    }

    fn meta(variants: &[&str]) -> RunMeta {
        RunMeta {
            suite: "my|suite".into(),
            kernels: variants
                .iter()
                .map(|v| KernelMeta {
                    variant: v.to_string(),
                    ..Default::default()
                })
                .collect(),
            complete: false,
            ..Default::default()
        }
    }

    #[test]
    fn report_escapes_names_and_marks_partial_runs() {
        let samples = vec![sample("off", "real", 1.0), sample("on", "real", 1.1)];
        let text = render(
            &meta(&["off", "on"]),
            &samples,
            RunFiles {
                diffconfig: Some(" FTRACE n -> y\n"),
                ..Default::default()
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

    #[test]
    fn the_head_names_an_architecture_other_than_x86_64_and_only_then() {
        let samples = vec![sample("off", "real", 1.0), sample("on", "real", 1.1)];
        let x86 = meta(&["off", "on"]);
        let arm64 = RunMeta {
            arch: crate::base::arch::Arch::Arm64,
            guest_cpu: Some("neoverse-n1".into()),
            ..x86.clone()
        };
        let line = "arm64 guests (qemu-system-aarch64, -cpu neoverse-n1), kernels cross-built \
                    with aarch64-linux-gnu-";
        let md = render(&arm64, &samples, RunFiles::default());
        assert!(md.contains(&format!("**Architecture**: {line}\n")), "{md}");
        let text = crate::stages::report::render_text(&arm64, &samples, RunFiles::default());
        assert!(text.contains("Architecture: arm64 guests"), "{text}");
        let md = render(&x86, &samples, RunFiles::default());
        let text = crate::stages::report::render_text(&x86, &samples, RunFiles::default());
        assert!(!md.contains("Architecture") && !text.contains("Architecture"));
    }

    #[test]
    fn kernels_that_booted_the_same_bzimage_are_named() {
        let samples: Vec<Sample> = ["off", "same", "tracing", "other"]
            .iter()
            .map(|v| sample(v, "real", 1.0))
            .collect();
        let mut run = meta(&["off", "same", "tracing", "other"]);
        let shas = [
            "ab".repeat(32),
            "ab".repeat(32),
            "ab".repeat(32),
            "cd".repeat(32),
        ];
        for (k, sha) in run.kernels.iter_mut().zip(shas) {
            k.bzimage_sha256 = sha.into();
        }
        run.kernels[2].cmdline = "trace_event=sched:*".into();
        let text = render(&run, &samples, RunFiles::default());
        assert!(
            text.contains("| bzImage sha256 | abababababababab | abababababababab |"),
            "{text}"
        );
        assert!(
            text.contains(
                "**Identical kernels**: same booted the same bzImage as off, byte for byte \
                 (sha256 abababababababab), with the same command line"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "tracing booted the same bzImage as off (sha256 abababababababab): that \
                 comparison measures their command lines alone."
            ),
            "{text}"
        );
        assert!(!text.contains("other booted"), "{text}");
        // Runs from before the hash was recorded: no row, no note.
        let text = render(&meta(&["off", "same"]), &samples[..2], RunFiles::default());
        assert!(!text.contains("bzImage sha256") && !text.contains("same bzImage"));
    }

    #[test]
    fn the_noise_table_names_the_metric_of_a_workload_measured_in_several() {
        let samples: Vec<Sample> = ["real", "user", "sys"]
            .iter()
            .flat_map(|m| [sample("off", m, 1.0), sample("on", m, 1.1)])
            .collect();
        let text = render(&meta(&["off", "on"]), &samples, RunFiles::default());
        for metric in ["real", "user", "sys"] {
            for variant in ["off", "on"] {
                let row = format!("| kernel-compile | 2 | jobs 4, {metric} | {variant} | 1 |");
                assert_eq!(text.matches(&row).count(), 1, "{row}\n{text}");
            }
        }
        // A workload measured in one metric keeps the short name.
        let hackbench: Vec<Sample> = samples[..2]
            .iter()
            .map(|s| Sample {
                workload: "hackbench".into(),
                ..s.clone()
            })
            .collect();
        let text = render(&meta(&["off", "on"]), &hackbench, RunFiles::default());
        assert!(
            text.contains("| hackbench | 2 | groups 4 | off | 1 |"),
            "{text}"
        );
    }

    #[test]
    fn what_was_compared_shows_what_each_guest_reported_as_its_kernel() {
        let samples = vec![sample("off", "real", 1.0), sample("on", "real", 1.1)];
        let mut run = meta(&["off", "on"]);
        let text = render(&run, &samples, RunFiles::default());
        assert!(
            !text.contains("uname"),
            "no boot reported a version: {text}"
        );
        for (variant, version) in [("off", ""), ("on", "#1 SMP Wed Jan  1 00:00:00 UTC 2020")] {
            run.boots.push(crate::record::BootRecord {
                variant: variant.into(),
                guest_kernel: "6.1.0".into(),
                guest_version: version.into(),
                ..Default::default()
            });
        }
        let text = render(&run, &samples, RunFiles::default());
        assert!(
            text.contains(
                "| guest `uname -rv` | – | 6.1.0 \\#1 SMP Wed Jan  1 00:00:00 UTC 2020 |"
            ),
            "{text}"
        );
    }
}
