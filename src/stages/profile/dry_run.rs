//! What a run's profiled boots will be, for the dry run: which variant on
//! how many CPUs, which points they run, and what they cost in time.

use super::boot::units;
use super::store::Manifest;
use crate::stages::suite::Suite;
use std::path::Path;

/// A profiled boot's time over a timed boot of the same job, as measured
/// here (docs/reading-a-report.md, "Where the difference goes", "What it
/// costs": QEMU's CPU time ×1.08 on 1 vCPU with inline counters, ×1.18 on
/// 2 vCPUs with callbacks). Used when no earlier run of the suite has
/// profiled boots of its own to go by.
pub const SLOWDOWN: f64 = 1.2;

/// A timed boot of the suite measured before: its mean wall time and the
/// run directory it comes from.
#[derive(Debug, Clone, Copy)]
pub struct EarlierRun<'a> {
    pub seconds_per_boot: f64,
    pub dir: &'a Path,
    /// Whether its boots ran under the cycle model (`--model` is no
    /// override of the suite, so a run of the same suite may not have).
    pub under_model: bool,
}

impl EarlierRun<'_> {
    /// What the earlier run's wall times are multiplied by to give this
    /// run's: the cycle model's cost where this run adds the model.
    pub fn model_factor(&self, suite: &Suite) -> f64 {
        if suite.model.is_some() && !self.under_model {
            crate::base::cycle_model::WALL_TIME_FACTOR
        } else {
            1.0
        }
    }

    /// A timed boot of this run, by the earlier one's.
    pub fn timed_boot_s(&self, suite: &Suite) -> f64 {
        self.seconds_per_boot * self.model_factor(suite)
    }
}

/// The warning that a boot estimated at `seconds` under the cycle model
/// would be stopped by the suite's `boot_timeout_s`; none within it.
pub fn timeout_warning(suite: &Suite, what: &str, seconds: f64) -> Option<String> {
    (suite.model.is_some() && seconds > suite.boot_timeout_s as f64).then(|| {
        format!(
            "warning: {what} under the cycle model is estimated at {seconds:.0} s, above the \
             suite's boot_timeout_s = {} s: such a boot would be stopped as hung; raise \
             boot_timeout_s",
            suite.boot_timeout_s
        )
    })
}

/// The dry run's lines about profiling; none when the suite does not profile.
pub fn describe(suite: &Suite, earlier: Option<EarlierRun>) -> Vec<String> {
    if !suite.profile {
        return Vec::new();
    }
    let units = units(suite);
    // An earlier run's own profiled boots say what this one's will cost.
    let profiled = earlier
        .and_then(|e| Manifest::read(e.dir).ok().flatten())
        .unwrap_or_default();
    let mut lines = vec![format!(
        "{} profiled boots after the timed ones, one per variant per CPU count, with markbench's \
         TCG plugin (their runs count instructions by function and are not samples; they need \
         icount timing):",
        units.len()
    )];
    let mut total = Some(0.0);
    let mut longest: Option<(f64, String)> = None;
    for unit in &units {
        let points: Vec<String> = unit
            .steps
            .iter()
            .map(|s| {
                format!(
                    "{} {} ({} measured + {} warm-up)",
                    suite.workloads[s.workload].kind(),
                    s.param,
                    s.iterations - s.warmup,
                    s.warmup
                )
            })
            .collect();
        let seconds = profiled
            .boots
            .iter()
            .find(|b| b.ok() && b.variant == unit.variant && b.cpus == unit.cpus)
            .map(|b| b.wall_s * earlier.map_or(1.0, |e| e.model_factor(suite)))
            .or_else(|| earlier.map(|e| e.timed_boot_s(suite) * SLOWDOWN));
        total = total.zip(seconds).map(|(t, s)| t + s);
        if let Some(s) = seconds.filter(|&s| longest.as_ref().is_none_or(|(l, _)| s > *l)) {
            longest = Some((
                s,
                format!(
                    "the profiled boot of {} on {} CPU{}",
                    unit.variant,
                    unit.cpus,
                    if unit.cpus == 1 { "" } else { "s" }
                ),
            ));
        }
        lines.push(format!(
            "  {} on {} CPU{}: {}{}",
            unit.variant,
            unit.cpus,
            if unit.cpus == 1 { "" } else { "s" },
            points.join(", "),
            seconds.map_or(String::new(), |s| format!(", about {s:.0} s"))
        ));
    }
    let model = crate::base::cycle_model::WALL_TIME_FACTOR;
    let adds_model = earlier.is_some_and(|e| e.model_factor(suite) > 1.0);
    let with_model = if adds_model {
        format!(", ×{model} for the cycle model, which it ran without")
    } else {
        String::new()
    };
    lines.push(match (total, earlier) {
        (Some(t), Some(e)) if !profiled.boots.is_empty() => format!(
            "estimated time of the profiled boots: {:.1} min (as they took in {}{with_model})",
            t / 60.0,
            e.dir.display()
        ),
        (Some(t), Some(e)) => format!(
            "estimated time of the profiled boots: {:.1} min (×{SLOWDOWN} the {:.0} s of a timed \
             boot in {}: the plugin's slow-down{with_model})",
            t / 60.0,
            e.seconds_per_boot,
            e.dir.display()
        ),
        _ if suite.model.is_some() => format!(
            "estimated time of the profiled boots: about ×{:.1} a timed boot without the model \
             each (×{SLOWDOWN} the plugin's slow-down, ×{model} the cycle model's)",
            SLOWDOWN * model
        ),
        _ => format!(
            "estimated time of the profiled boots: about ×{SLOWDOWN} a timed boot each (the \
             plugin's slow-down)"
        ),
    });
    if let Some((seconds, which)) = longest {
        lines.extend(timeout_warning(suite, &which, seconds));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::profile::store::ProfileBoot;

    fn suite(profile: bool) -> Suite {
        let text = crate::stages::suite::tests::GOOD.replace("cpus = [2]", "cpus = [1, 2]");
        let text = if profile {
            format!("profile = true\n{text}")
        } else {
            text
        };
        Suite::parse(
            Path::new("t.toml"),
            &text,
            &crate::stages::suite::tests::lookup(),
        )
        .unwrap()
    }

    #[test]
    fn each_profiled_boot_is_listed_with_its_points_and_an_estimate() {
        assert!(describe(&suite(false), None).is_empty());

        let s = suite(true);
        let lines = describe(&s, None);
        assert!(lines[0].starts_with("4 profiled boots"), "{lines:?}");
        let boots: Vec<&String> = lines.iter().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(boots.len(), 4, "{lines:?}");
        for (variant, cpus) in [("off", "1 CPU:"), ("on", "1 CPU:"), ("off", "2 CPUs:")] {
            let line = format!("  {variant} on {cpus}");
            assert!(
                boots.iter().any(|l| l.starts_with(&line)),
                "{line} in {lines:?}"
            );
        }
        // GOOD: hackbench 2 and 4, 3 measured runs + 1 warm-up each.
        assert!(
            boots[0].contains("hackbench 2 (3 measured + 1 warm-up), hackbench 4"),
            "{lines:?}"
        );
        assert!(lines.last().unwrap().contains("about ×1.2 a timed boot"));

        let tmp = tempfile::tempdir().unwrap();
        let earlier = EarlierRun {
            seconds_per_boot: 50.0,
            dir: tmp.path(),
            under_model: false,
        };
        let lines = describe(&s, Some(earlier));
        assert!(lines[1].ends_with(", about 60 s"), "{lines:?}");
        assert!(
            lines.last().unwrap().contains("4.0 min (×1.2 the 50 s"),
            "{lines:?}"
        );

        // The earlier run's own profiled boots are better evidence.
        let boots: Vec<ProfileBoot> = units(&s)
            .iter()
            .map(|u| ProfileBoot {
                variant: u.variant.clone(),
                side: u.side,
                cpus: u.cpus,
                guest_seed: None,
                end: crate::record::BootEnd::Completed,
                wall_s: 30.0 * u.cpus as f64,
                console_log: String::new(),
                file: String::new(),
                model_file: None,
                points: Vec::new(),
            })
            .collect();
        Manifest {
            plugin: "k".into(),
            icount_shift: 4,
            boots,
        }
        .write(tmp.path())
        .unwrap();
        let lines = describe(&s, Some(earlier));
        let two = lines.iter().find(|l| l.contains("on 2 CPUs")).unwrap();
        assert!(two.ends_with(", about 60 s"), "{lines:?}");
        let one = lines.iter().find(|l| l.contains("on 1 CPU:")).unwrap();
        assert!(one.ends_with(", about 30 s"), "{lines:?}");
        assert!(
            lines.last().unwrap().contains("3.0 min (as they took in"),
            "{lines:?}"
        );
    }

    #[test]
    fn under_the_model_a_profiled_boot_costs_the_models_factor_too_and_a_long_one_is_warned_of() {
        let text = format!(
            "model = \"cycles\"\nboot_timeout_s = 200\n{}",
            crate::stages::suite::tests::GOOD
        );
        let model = Suite::parse(
            Path::new("t.toml"),
            &text,
            &crate::stages::suite::tests::lookup(),
        )
        .unwrap();
        assert!(model.model.is_some());
        let factor = crate::base::cycle_model::WALL_TIME_FACTOR;
        // No earlier run: the factors, no figure to warn of.
        let lines = describe(&suite(true), None);
        assert!(
            lines.iter().all(|l| !l.contains("cycle model")),
            "{lines:?}"
        );
        let profiled = Suite {
            profile: true,
            ..model.clone()
        };
        let lines = describe(&profiled, None);
        let last = lines.last().unwrap();
        assert!(
            last.contains(&format!(
                "about ×{:.1} a timed boot without the model",
                SLOWDOWN * factor
            )),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.starts_with("warning")), "{lines:?}");

        // An earlier run of 30 s boots without the model: ×factor ×SLOWDOWN.
        let tmp = tempfile::tempdir().unwrap();
        let without = EarlierRun {
            seconds_per_boot: 30.0,
            dir: tmp.path(),
            under_model: false,
        };
        let estimate = 30.0 * factor * SLOWDOWN;
        assert!(estimate < 200.0);
        let lines = describe(&profiled, Some(without));
        assert!(
            lines[1].ends_with(&format!(", about {estimate:.0} s")),
            "{lines:?}"
        );
        assert!(
            lines.last().unwrap().contains(&format!(
                "×{factor} for the cycle model, which it ran without"
            )),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.starts_with("warning")), "{lines:?}");
        assert_eq!(without.timed_boot_s(&profiled), 30.0 * factor);
        // An earlier run under the model already paid its cost.
        let under = EarlierRun {
            under_model: true,
            ..without
        };
        assert_eq!(under.timed_boot_s(&profiled), 30.0);
        let lines = describe(&profiled, Some(under));
        assert!(
            lines[1].ends_with(&format!(", about {:.0} s", 30.0 * SLOWDOWN)),
            "{lines:?}"
        );

        // Boots of 50 s: a profiled one under the model outlasts 200 s.
        let longer = EarlierRun {
            seconds_per_boot: 50.0,
            ..without
        };
        let lines = describe(&profiled, Some(longer));
        let warning = lines.last().unwrap();
        assert!(
            warning.starts_with(&format!(
                "warning: the profiled boot of off on 2 CPUs under the cycle model is estimated \
                 at {:.0} s, above the suite's boot_timeout_s = 200 s",
                50.0 * factor * SLOWDOWN
            )),
            "{lines:?}"
        );
        // Without the model no such warning: the timeout is the suite's own business.
        let plain = describe(&suite(true), Some(longer));
        assert!(!plain.iter().any(|l| l.starts_with("warning")), "{plain:?}");
        assert_eq!(timeout_warning(&suite(true), "a timed boot", 1e6), None);
        assert!(timeout_warning(&model, "a timed boot", 201.0)
            .unwrap()
            .contains("a timed boot under the cycle model is estimated at 201 s"));
        assert_eq!(timeout_warning(&model, "a timed boot", 200.0), None);
    }
}
