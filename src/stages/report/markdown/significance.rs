//! The Significance section: how the figures were tested, where the second
//! opinion disagrees, host blocking, A/A calibration, noise and outliers.

use super::super::format::{decimals, escape_md, percent_2dp, percent_cell, relative, value};
use super::{PointNames, RunReport};
use crate::base::stats::{Outlier, PointAnalysis, SideSummary};
use crate::record::RunMeta;
use crate::stages::analysis::{Analysis, Comparison, ComparisonResults, Point, TableKey};
use std::fmt::Write as _;

/// The section.
pub(super) fn section(run: &RunReport) -> String {
    let analysis = run.analysis;
    let mut r = String::from("## Significance\n\n");
    r.push_str(&method(analysis));
    if let Some(model) = run.cycle_model {
        r.push_str(&cycle_model_method(
            model,
            run.meta.cpus.iter().any(|&c| c > 1),
        ));
        if let Some(weights) = run.weights {
            r.push_str(&second_weights(weights));
        }
    }
    let Ok(results) = &analysis.results else {
        return r;
    };
    let names = PointNames::of(analysis);
    let agreement = bootstrap_agreement(analysis, results, &names);
    if !agreement.is_empty() {
        let _ = writeln!(r, "{agreement}");
    }
    r.push_str(&host_blocking(analysis, results, &names));
    r.push_str(&aa_calibration(run.meta, analysis));
    r.push_str(&noise(analysis, &names));
    r.push_str(&outliers(analysis, &names));
    r
}

/// What the cycle model's points are, for a run made under it.
fn cycle_model_method(model: &crate::base::cycle_model::CycleModel, several_vcpus: bool) -> String {
    use crate::base::cycle_model::{METRICS, PART_METRICS, SMP_METRICS};
    let smp: &[(&str, &str)] = if several_vcpus { SMP_METRICS } else { &[] };
    let prefetches = model.get("prefetch-streams") > 0;
    // A part's points only where the part was on: a run without them
    // reads as it did before they existed.
    let parts = PART_METRICS.iter().filter(|(m, _)| {
        if m.starts_with("string-") {
            model.models_strings()
        } else if *m == "base-cycles" {
            model.models_throughput()
        } else if *m == "tlb-misses" {
            model.models_tlb()
        } else {
            prefetches
        }
    });
    let metrics: Vec<String> = METRICS
        .iter()
        .chain(smp)
        .chain(parts)
        .map(|(m, _)| format!("`{m}`"))
        .collect();
    let core = if model.models_throughput() {
        format!(
            " Each translated block costs its throughput on a core that issues {} \
             instructions a cycle (or its longest register chain, a load the L1d serves {} \
             cycles), `base cycles`, in place of one cycle an instruction.",
            model.get("issue-width"),
            model.get("load-cycles")
        )
    } else {
        String::new()
    };
    let profile = profile_words(model.profile.as_ref());
    format!(
        "Cycle model: every boot ran under markbench's TCG plugin simulating caches and \
         branch prediction ({}), so each timed run has, beside its time, the model's counts \
         as points of their own, user space and kernel together: {}. {}, each cost in \
         cycles where the access was served.{core}{profile} A relative measure for comparing \
         kernels, not a prediction of any machine's seconds: no out-of-order overlap of \
         misses, {}{}SMT or frequency, and layout moves it as it moves real caches \
         (docs/cycle-model.md).\n\n",
        model.geometry(),
        metrics.join(", "),
        model.formula(several_vcpus),
        if prefetches { "" } else { "no prefetchers, " },
        if model.models_tlb() {
            ""
        } else {
            "page walks, "
        }
    )
}

/// Which profile the model's settings are, the CPU it was measured on, and
/// how far the model was from that CPU when the profile was checked.
fn profile_words(profile: Option<&crate::base::cycle_model::ProfileNote>) -> String {
    let Some(p) = profile else {
        return " The settings are not a calibrated profile: the generic core of the \
                defaults (or the suite's own), no CPU's measured figures, so the estimates \
                are in no particular CPU's cycles (`markbench calibrate` measures the \
                host's)."
            .to_string();
    };
    let measured = format!(
        " The settings are the profile of the {} measured natively on {} at {} \
         (`markbench calibrate`, {}).",
        p.cpu, p.host, p.measured, p.file
    );
    let Some(c) = &p.check else {
        return format!(
            "{measured} The profile was never checked against its CPU \
             (`scripts/cycle-model-check/check.py --native --profile {} --record` on the {} \
             checks it and keeps the figure in the profile).",
            p.file, p.cpu
        );
    };
    let sharing = match (c.error_with_sharing, c.patterns_with_sharing) {
        (Some(e), Some(n)) => format!(", {} over {n} with the two-vCPU sharing pair", pct(e)),
        _ => String::new(),
    };
    let false_sharing = match (c.sharing_cpu, c.sharing_model) {
        (Some(cpu), Some(model)) => format!(
            "; false sharing (one line ÷ a line apart) ×{cpu:.2} on the CPU, ×{model:.2} in the \
             model"
        ),
        _ => String::new(),
    };
    format!(
        "{measured} Checked against that CPU at {} (markbench {}): programs apart from \
         calibration's, timed natively and under the model, put the model's cycles {} off on \
         geometric mean over {} one-vCPU programs{sharing}, the worst {} at ×{:.2} of the \
         CPU's{false_sharing} (`{}`, docs/cycle-model.md).",
        c.checked,
        c.commit,
        pct(c.error),
        c.patterns,
        escape_md(&c.worst_pattern),
        c.worst_ratio,
        c.command
    )
}

/// A fraction as a whole percentage.
fn pct(fraction: f64) -> String {
    format!("{:.0}%", fraction * 100.0)
}

/// How the estimates' verdicts fare under the second weights.
fn second_weights(weights: &crate::stages::analysis::weights::WeightCheck) -> String {
    let found = if weights.sensitive.is_empty() {
        format!(
            "none of the {} verdicts on an estimate changes",
            weights.verdicts
        )
    } else {
        format!(
            "{} of the {} verdicts on an estimate change, each marked *weight-sensitive* \
             where it is shown",
            weights.sensitive.len(),
            weights.verdicts
        )
    };
    format!(
        "Second weights: every estimate is recomputed from the same run's counts with other \
         costs in cycles ({}; iai-callgrind's and KCachegrind's estimates, \
         docs/cycle-model.md) and tested as above: {found}. A verdict that changes with the \
         weights rests on how the misses are priced rather than on the counts alone.\n\n",
        weights.weights_text
    )
}

/// What the tests are, and over how many comparisons the correction runs.
fn method(analysis: &Analysis) -> String {
    let cfg = &analysis.config;
    let family = analysis.all_points().len();
    let correction = cfg.correction.as_str();
    let points = analysis.tables.values().map(Vec::len).sum::<usize>();
    let family = if !analysis.steps.is_empty() {
        format!(
            "all {family} comparisons of this report ({} kernels against the baseline and {} \
             against the kernel before them, × {points} points, {correction})",
            analysis.comparisons.len(),
            analysis.steps.len()
        )
    } else if analysis.is_pair() {
        format!("all {family} points of this report ({correction})")
    } else {
        format!(
            "all {family} comparisons of this report ({} candidates × {} points, {correction})",
            analysis.comparisons.len(),
            analysis.tables.values().map(Vec::len).sum::<usize>()
        )
    };
    format!(
        "Boots are the independent unit; iterations within a boot are nested in them \
         (Kalibera & Jones, ISMM 2013). Per point: the difference of means with a 95% interval \
         of the relative difference (B/A − 1), the t interval of the log ratio of boot means \
         (Welch's standard error and degrees of freedom: the interval TOST uses at 90%); a \
         Welch t-test on boot means, its p-value adjusted over {family}; equivalence by TOST (90% interval of the ratio inside ±{}%). Second opinions, \
         in summary.json: Mann-Whitney U on boot means, and a hierarchical bootstrap interval \
         (boots resampled, each with all of its iterations; expanded percentile; {} \
         resamples, seed {}). Verdicts: \
         *regression* / *improvement* (adjusted p < {}, direction from the metric), \
         *equivalent* (TOST passes), *no significant difference* (neither), \
         *insufficient data* (fewer than 2 boots on a side: no p-value is invented).\n\n",
        cfg.margin * 100.0,
        cfg.resamples,
        cfg.seed,
        cfg.alpha
    )
}

/// Every comparison's analysis at every point, point after point, with
/// its comparison: the order in which per-point findings are listed.
fn by_point<'a>(
    analysis: &'a Analysis,
    results: &'a [ComparisonResults],
) -> Vec<(&'a TableKey, &'a Point, &'a Comparison, &'a PointAnalysis)> {
    let mut out = Vec::new();
    for (key, points) in &analysis.tables {
        for (j, p) in points.iter().enumerate() {
            for (c, per_table) in analysis.comparisons.iter().zip(results) {
                if let Some(a) = per_table.get(key).and_then(|l| l.get(j)) {
                    out.push((key, p, c, a));
                }
            }
        }
    }
    out
}

/// ", on against off" where the run has several candidates, else nothing.
fn which(analysis: &Analysis, c: &Comparison) -> String {
    if analysis.is_pair() {
        String::new()
    } else {
        let [base, cand] = analysis.names(c).map(escape_md);
        format!(", {cand} against {base}")
    }
}

/// One line on whether the bootstrap interval, the second opinion, agrees
/// with the report's t interval about each point: both exclude zero, or
/// neither does. Disagreements are named, since a maintainer should look at
/// those points' boots before trusting either.
fn bootstrap_agreement(
    analysis: &Analysis,
    results: &[ComparisonResults],
    names: &PointNames,
) -> String {
    let (mut compared, mut few_boots) = (0, false);
    let mut disagreements = Vec::new();
    for (key, p, c, a) in by_point(analysis, results) {
        let (Some(t), Some(bootstrap)) = (a.relative_difference_ci, a.bootstrap_ci) else {
            continue;
        };
        compared += 1;
        few_boots |= a.a.n_boots.min(a.b.n_boots) < 5;
        if t.contains(0.0) != bootstrap.contains(0.0) {
            disagreements.push(format!(
                "{}{}: t {}% … {}%, bootstrap {}% … {}%",
                names.name(key, p.param),
                which(analysis, c),
                relative(t.lower),
                relative(t.upper),
                relative(bootstrap.lower),
                relative(bootstrap.upper)
            ));
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
    let what = if analysis.is_pair() {
        "points"
    } else {
        "comparisons"
    };
    if disagreements.is_empty() {
        format!(
            "The bootstrap interval agrees with the t interval about zero on all {compared} \
             {what}.{caveat}\n"
        )
    } else {
        format!(
            "The bootstrap interval disagrees with the t interval about zero on {} of \
             {compared} {what}: {}.{caveat}\n",
            disagreements.len(),
            disagreements.join("; ")
        )
    }
}

/// Points whose boots come from several hosts: how each host compared.
fn host_blocking(analysis: &Analysis, results: &[ComparisonResults], names: &PointNames) -> String {
    let mut blocked = Vec::new();
    for (key, p, c, a) in by_point(analysis, results) {
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
                    s.relative_difference
                        .map_or(", one variant only: not used".to_string(), |d| {
                            format!(", {}%", relative(d))
                        })
                )
            })
            .collect();
        blocked.push(format!(
            "- {}{}: {}{}",
            names.name(key, p.param),
            which(analysis, c),
            strata.join(", "),
            if b.applied {
                format!(
                    "; combined {}%, {} degrees of freedom",
                    relative(b.log_ratio.exp() - 1.0),
                    b.df
                )
            } else {
                "; no host ran both variants, so the comparison is across hosts \
                 (not blocked)"
                    .to_string()
            }
        ));
    }
    if blocked.is_empty() {
        return String::new();
    }
    format!(
        "**Host blocking**: these points' boots come from several hosts, so the host is a \
         blocking factor: on log boot means, the variants are compared within each host \
         that ran both, and the hosts' differences are combined with inverse-variance \
         weights (randomized block design; error from the spread within each host and \
         variant plus the hosts' disagreement, df = boots − hosts − 1). For them the \
         relative difference, its interval (a t interval, not the bootstrap) and the \
         p-value are the blocked ones, and no Mann-Whitney test is made. The table's \
         without/with means pool all hosts. Per host (baseline + candidate boots, \
         difference on that host):\n\n{}\n\n",
        blocked.join("\n")
    )
}

/// Whether a comparison sets a kernel against itself: the same build and
/// command line, so every difference is noise.
fn same_kernel(meta: &RunMeta, c: &Comparison) -> bool {
    match (meta.kernels.get(c.baseline), meta.kernels.get(c.candidate)) {
        (Some(a), Some(b)) => a.build_key == b.build_key && a.cmdline == b.cmdline,
        _ => false,
    }
}

/// For each comparison of a kernel with itself, the noise floor it shows.
fn aa_calibration(meta: &RunMeta, analysis: &Analysis) -> String {
    let mut r = String::new();
    for (i, c) in analysis.comparisons.iter().enumerate() {
        let points = analysis.comparison_points(i);
        if !same_kernel(meta, c) || points.is_empty() {
            continue;
        }
        let cal = crate::base::stats::calibrate_aa(&points);
        let whose = if analysis.is_pair() {
            String::new()
        } else {
            let [base, cand] = analysis.names(c).map(escape_md);
            format!("{cand} against {base}: ")
        };
        let _ = writeln!(
            r,
            "**A/A calibration** ({whose}the same kernel and command line on both sides, so every \
             difference is noise): median |difference| {}, largest {}, median CoV {}; \
             {} of {} testable points significant (observed false-positive rate {}), \
             {} shown equivalent within ±{}%.\n",
            percent_2dp(cal.median_abs_relative_difference),
            percent_2dp(cal.max_abs_relative_difference),
            percent_2dp(cal.median_cov),
            cal.significant_points,
            cal.testable_points,
            percent_2dp(cal.false_positive_rate),
            percent_2dp(cal.equivalent_rate),
            analysis.config.margin * 100.0
        );
    }
    r
}

/// Each variant's summary and outliers at point `j` of a table, in variant order.
fn variant_summaries<'a>(
    analysis: &'a Analysis,
    key: &TableKey,
    j: usize,
) -> Vec<(usize, &'a SideSummary, &'a [Outlier])> {
    (0..analysis.variants.len())
        .filter_map(|v| {
            let (summary, outliers) = analysis.variant_summary(key, j, v)?;
            Some((v, summary, outliers))
        })
        .collect()
}

/// The coefficients of variation between boots and within a boot.
fn noise(analysis: &Analysis, names: &PointNames) -> String {
    let mut rows = String::new();
    for (key, points) in &analysis.tables {
        for (j, p) in points.iter().enumerate() {
            for (variant, summary, _) in variant_summaries(analysis, key, j) {
                let _ = writeln!(
                    rows,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    escape_md(&key.workload),
                    key.cpus,
                    names.cell(key, p.param),
                    escape_md(&analysis.variants[variant]),
                    summary.n_boots,
                    percent_cell(summary.cov_of(summary.boot_means_variance)),
                    percent_cell(summary.cov_of(summary.within_boot_variance)),
                );
            }
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "Noise: coefficient of variation of the boot means (between boots) and within a boot, \
         per point and side. The interval is built from the spread of the boot means: \
         where that is about the within-boot CoV over √iterations, more iterations a boot \
         narrow it; where it is larger, the boots differ and only more boots do.\n\n\
         | workload | CPUs | point | variant | boots | CoV between boots [%] | CoV within a boot [%] |\n\
         |---|---:|---|---|---:|---:|---:|\n{rows}\n"
    )
}

/// Values far from their point's others, flagged and kept.
fn outliers(analysis: &Analysis, names: &PointNames) -> String {
    let mut lines = Vec::new();
    for (key, points) in &analysis.tables {
        for (j, p) in points.iter().enumerate() {
            for (variant, _, found) in variant_summaries(analysis, key, j) {
                for o in found {
                    lines.push(format!(
                        "- {}, {}: boot {} iteration {}: {} {} (modified z = {:.1})",
                        names.name(key, p.param),
                        escape_md(&analysis.variants[variant]),
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
    if lines.is_empty() {
        "No outliers (modified z-score above 3.5).\n\n".to_string()
    } else {
        format!(
            "Outliers (modified z-score above 3.5), flagged and kept in every figure above:\n\n{}\n\n",
            lines.join("\n")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::cycle_model::{CycleModel, ProfileCheck, ProfileNote};

    fn note(check: Option<ProfileCheck>) -> ProfileNote {
        ProfileNote {
            cpu: "Intel(R) Xeon(R) Processor".into(),
            host: "vm".into(),
            measured: "2026-12-07T19:00:00Z".into(),
            file: "/cache/model-profiles/intel-r-xeon-r-processor.toml".into(),
            check,
        }
    }

    fn check() -> ProfileCheck {
        ProfileCheck {
            error: 0.4123,
            patterns: 13,
            error_with_sharing: Some(0.5),
            patterns_with_sharing: Some(15),
            worst_pattern: "chase 32768".into(),
            worst_ratio: 0.31,
            sharing_cpu: Some(1.14),
            sharing_model: Some(3.2),
            checked: "2026-12-07T20:40:00Z".into(),
            command: "scripts/cycle-model-check/check.py --native --record".into(),
            commit: "0123456789ab".into(),
        }
    }

    #[test]
    fn a_checked_profile_states_its_cpu_and_the_checks_figures() {
        let model = CycleModel {
            profile: Some(note(Some(check()))),
            ..CycleModel::default()
        };
        let text = cycle_model_method(&model, true);
        for part in [
            "the profile of the Intel(R) Xeon(R) Processor measured natively on vm",
            "Checked against that CPU at 2026-12-07T20:40:00Z (markbench 0123456789ab)",
            "41% off on geometric mean over 13 one-vCPU programs, 50% over 15 with",
            "the worst chase 32768 at ×0.31 of the CPU's",
            "×1.14 on the CPU, ×3.20 in the model",
            "`scripts/cycle-model-check/check.py --native --record`",
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
        assert!(!text.contains("never checked"), "{text}");
        // Without the sharing pair, neither of its figures.
        let mut one_vcpu = check();
        one_vcpu.error_with_sharing = None;
        one_vcpu.patterns_with_sharing = None;
        one_vcpu.sharing_cpu = None;
        one_vcpu.sharing_model = None;
        let text = profile_words(Some(&note(Some(one_vcpu))));
        assert!(text.contains("13 one-vCPU programs, the worst"), "{text}");
        assert!(!text.contains("sharing"), "{text}");
    }

    #[test]
    fn an_unchecked_profile_says_so_with_the_command_and_the_defaults_are_no_profile() {
        let text = profile_words(Some(&note(None)));
        assert!(text.contains("measured natively on vm"), "{text}");
        assert!(
            text.contains(
                "never checked against its CPU (`scripts/cycle-model-check/check.py --native \
                 --profile /cache/model-profiles/intel-r-xeon-r-processor.toml --record`"
            ),
            "{text}"
        );
        let text = cycle_model_method(&CycleModel::default(), false);
        assert!(
            text.contains("not a calibrated profile: the generic core"),
            "{text}"
        );
        assert!(!text.contains("Checked against") && !text.contains("never checked"));
    }

    #[test]
    fn page_walks_are_among_what_it_does_not_model_only_without_the_tlbs() {
        let with = cycle_model_method(&CycleModel::default(), false);
        assert!(with.contains("30·TLB misses"), "{with}");
        assert!(!with.contains("page walks"), "{with}");
        let mut without = CycleModel::default();
        without.set("tlb-walk-cycles", 0).unwrap();
        let text = cycle_model_method(&without, false);
        assert!(
            text.contains("no out-of-order overlap of misses, page walks, SMT"),
            "{text}"
        );
    }
}
