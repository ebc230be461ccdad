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
            .map(|b| b.wall_s)
            .or_else(|| earlier.map(|e| e.seconds_per_boot * SLOWDOWN));
        total = total.zip(seconds).map(|(t, s)| t + s);
        lines.push(format!(
            "  {} on {} CPU{}: {}{}",
            unit.variant,
            unit.cpus,
            if unit.cpus == 1 { "" } else { "s" },
            points.join(", "),
            seconds.map_or(String::new(), |s| format!(", about {s:.0} s"))
        ));
    }
    lines.push(match (total, earlier) {
        (Some(t), Some(e)) if !profiled.boots.is_empty() => format!(
            "estimated time of the profiled boots: {:.1} min (as they took in {})",
            t / 60.0,
            e.dir.display()
        ),
        (Some(t), Some(e)) => format!(
            "estimated time of the profiled boots: {:.1} min (×{SLOWDOWN} the {:.0} s of a timed \
             boot in {}: the plugin's slow-down)",
            t / 60.0,
            e.seconds_per_boot,
            e.dir.display()
        ),
        _ => format!(
            "estimated time of the profiled boots: about ×{SLOWDOWN} a timed boot each (the \
             plugin's slow-down)"
        ),
    });
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
}
