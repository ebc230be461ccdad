//! A run's events as a person watching it sees them: progress bars with
//! an ETA on a terminal, one self-contained line per thing that happened in
//! a log (CI). The events carry values; every word of these lines is made
//! here.

use crate::base::error::Result;
use crate::base::progress::Progress;
use crate::record::{BootEnd, BootRecord, PrecisionStop};
use crate::stages::events::{RunEvent, RunObserver};
use crate::stages::plan::{Unit, UnresolvedPoint};
use std::io::Write;

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What a person watching the run sees: progress bars with an ETA on a
/// terminal, self-contained lines in a log (CI).
pub struct Terminal {
    /// From the first boot to the last timed one: the bars, or `Lines`.
    display: Option<BootsDisplay>,
    /// Where the lines go when no bars are drawn: stderr, or a test's buffer.
    log: Box<dyn Write>,
    /// Whether bars may be drawn (stderr is a terminal).
    bars: bool,
    /// Guests at once: lines name their slot when there are several.
    jobs: usize,
}

/// How the timed boots are shown.
enum BootsDisplay {
    Bars(Progress),
    Lines,
}

impl Default for Terminal {
    fn default() -> Self {
        Terminal {
            display: None,
            log: Box::new(std::io::stderr()),
            bars: true,
            jobs: 1,
        }
    }
}

/// A point not yet within the target, as the terminal names it: its key,
/// its candidate when there are several, and where it stands.
pub fn unresolved_point(p: &UnresolvedPoint) -> String {
    let mut point = p.point.to_string();
    if let Some(candidate) = &p.candidate {
        point.push_str(&format!(" ({candidate})"));
    }
    match p.precision.half_width {
        Some(h) if h <= p.target.half_width => format!(
            "{point} ±{:.2}% on {} boots a side (stops from {})",
            h * 100.0,
            p.precision.boots,
            p.target.min_boots
        ),
        Some(h) => format!("{point} ±{:.2}% > ±{}%", h * 100.0, p.target.percent()),
        None => format!("{point} (no interval yet)"),
    }
}

/// The note that no suite was named and `cwd` holds no default suite:
/// the copy built into markbench is measured.
pub fn built_in_suite(cwd: &std::path::Path) -> String {
    format!(
        "no {} in {}: running markbench's built-in copy of it",
        crate::stages::suite::DEFAULT_SUITE,
        cwd.display()
    )
}

/// The machine a run boots with, in one line.
pub fn machine_line(machine: &crate::stages::vm::Machine, max_cpus: u32) -> String {
    format!(
        "QEMU: {}; accelerator: {} ({}); timing: {}",
        machine.qemu.version,
        machine.accel.accel.as_str(),
        machine.accel.reason,
        machine.timing.describe(max_cpus)
    )
}

/// Where a run goes and the machine it boots with, before its first boot.
pub fn run_starting(
    dir: &std::path::Path,
    machine: &crate::stages::vm::Machine,
    max_cpus: u32,
) -> String {
    format!(
        "run directory: {}\nQEMU: {} ({})\naccelerator: {} ({})\ntiming: {}\n",
        dir.display(),
        machine.qemu.version,
        machine.qemu.path.display(),
        machine.accel.accel.as_str(),
        machine.accel.reason,
        machine.timing.describe(max_cpus)
    )
}

/// The warning that a resumed run continues with another QEMU.
pub fn qemu_changed(
    recorded_version: &str,
    recorded_path: &str,
    now: &crate::stages::vm::qemu::QemuBinary,
) -> String {
    format!(
        "the run started with {recorded_version} ({recorded_path}); it continues with {} ({})",
        now.version,
        now.path.display()
    )
}

/// How a run ended: where its report is, its boots and its time.
pub fn run_ended(report: &std::path::Path, meta: &crate::record::RunMeta, seconds: f64) -> String {
    format!(
        "report: {}\n{} boots, {} failed, {seconds:.0} s in all\n",
        report.display(),
        meta.boots.len(),
        failed_boots(meta),
    )
}

fn failed_boots(meta: &crate::record::RunMeta) -> usize {
    meta.boots.iter().filter(|b| !b.ok()).count()
}

/// The note after a run that is not complete: how to continue it, or
/// where its failed boots are told; `None` for a complete run.
pub fn run_not_complete(dir: &std::path::Path, meta: &crate::record::RunMeta) -> Option<String> {
    let failed = failed_boots(meta);
    if !meta.complete {
        Some(format!(
            "the run is partial; continue it with: markbench compare --resume {}",
            dir.display()
        ))
    } else if failed > 0 {
        Some(format!(
            "{failed} boot(s) failed; see the Boots table in the report"
        ))
    } else {
        None
    }
}

impl Terminal {
    /// Lines only, as in a CI log, written to `log`.
    pub fn plain(log: Box<dyn Write>) -> Terminal {
        Terminal {
            display: None,
            log,
            bars: false,
            jobs: 1,
        }
    }

    /// A line that stays: above the bars, or in the log. A log that cannot
    /// be written is not worth stopping a run for.
    fn say(&mut self, text: impl std::fmt::Display) {
        match &self.display {
            Some(BootsDisplay::Bars(progress)) => progress.note(&text.to_string()),
            _ => {
                let _ = writeln!(self.log, "{}", crate::base::message::line(text));
            }
        }
    }

    /// ", slot 2" when guests run side by side, else nothing.
    fn in_slot(&self, slot: usize) -> String {
        if self.jobs > 1 {
            format!(", slot {}", slot + 1)
        } else {
            String::new()
        }
    }

    fn began(&mut self, total: usize, done: usize, jobs: usize) {
        self.jobs = jobs;
        let bars = if self.bars {
            Progress::new(total, done, jobs)
        } else {
            None
        };
        self.display = Some(bars.map_or(BootsDisplay::Lines, BootsDisplay::Bars));
        if jobs > 1 {
            self.say(format_args!(
                "{} boots to go, {jobs} guests at once",
                total.saturating_sub(done)
            ));
        }
    }

    fn unit_started(&mut self, unit: &Unit, total: usize, slot: usize) {
        let text = format!(
            "boot {}/{total}: {} on {} CPU{}, boot {}{}",
            unit.index + 1,
            unit.variant,
            unit.cpus,
            plural(unit.cpus),
            unit.boot,
            self.in_slot(slot)
        );
        match &self.display {
            Some(BootsDisplay::Bars(progress)) => progress.start_boot(slot, &text),
            Some(BootsDisplay::Lines) => self.say(format_args!("{text} …")),
            None => {}
        }
    }

    fn retrying(&mut self, first: &BootEnd) {
        if self.display.is_some() {
            self.say(format_args!("  {}; retrying once", first.describe()));
        }
    }

    fn unit_ended(&mut self, unit: &Unit, total: usize, record: &BootRecord, slot: usize) {
        let text = format!(
            "boot {}/{total} ({} on {} CPU{}, boot {}{}): {} in {:.1} s, {} samples, other load {:.1} → {:.1} cores",
            unit.index + 1,
            unit.variant,
            unit.cpus,
            plural(unit.cpus),
            unit.boot,
            self.in_slot(slot),
            record.status(),
            record.wall_s,
            record.samples,
            record.host_load_before,
            record.host_load_after
        );
        match &self.display {
            Some(BootsDisplay::Bars(progress)) => progress.finish_boot(slot, &text),
            Some(BootsDisplay::Lines) => self.say(text),
            None => {}
        }
    }

    fn block_added(&mut self, units: &[Unit], unresolved: &[UnresolvedPoint], total: usize) {
        if let Some(BootsDisplay::Bars(progress)) = &self.display {
            progress.grow(total);
        }
        let cpus = units.first().map_or(0, |u| u.cpus);
        let points: Vec<String> = unresolved.iter().map(unresolved_point).collect();
        self.say(format_args!(
            "precision: {} more boot{} on {cpus} CPU{} (now {total}) for {}",
            units.len(),
            if units.len() == 1 { "" } else { "s" },
            plural(cpus),
            points.join("; ")
        ));
    }

    fn additions_stopped(&mut self, why: PrecisionStop) {
        self.say(format_args!("precision: no more boots: {}", why.describe()))
    }

    fn boots_ended(&mut self) {
        if let Some(BootsDisplay::Bars(progress)) = self.display.take() {
            progress.finish();
        }
    }

    fn profiled_boot_started(&mut self, n: usize, total: usize, unit: &Unit) {
        self.say(format_args!(
            "profiled boot {}/{total}: {} on {} CPU{}",
            n + 1,
            unit.variant,
            unit.cpus,
            plural(unit.cpus)
        ))
    }

    fn profiled_boot_ended(&mut self, n: usize, total: usize, end: &BootEnd, wall_s: f64) {
        self.say(format_args!(
            "profiled boot {}/{total}: {} in {wall_s:.1} s",
            n + 1,
            end.describe()
        ))
    }
}

impl RunObserver for Terminal {
    fn on(&mut self, event: &RunEvent<'_>) -> Result<()> {
        match *event {
            RunEvent::Began { total, done, jobs } => self.began(total, done, jobs),
            RunEvent::Resumed {
                done,
                total,
                dropped_samples,
            } => self.say(format_args!(
                "resuming: {done} of {total} boots already done; dropped {dropped_samples} samples of unfinished boots"
            )),
            RunEvent::UnitStarted { unit, total, slot } => self.unit_started(unit, total, slot),
            RunEvent::Warned { warning } => self.say(format_args!("WARNING: {warning}")),
            RunEvent::SampleWritten { .. } => {}
            RunEvent::Retrying { first, .. } => self.retrying(first),
            RunEvent::UnitEnded {
                unit,
                total,
                record,
                slot,
            } => self.unit_ended(unit, total, record, slot),
            RunEvent::BlockAdded {
                units,
                unresolved,
                total,
            } => self.block_added(units, unresolved, total),
            RunEvent::AdditionsStopped { why } => self.additions_stopped(why),
            RunEvent::BootsEnded { .. } => self.boots_ended(),
            RunEvent::ProfiledBootStarted { n, total, unit } => {
                self.profiled_boot_started(n, total, unit)
            }
            RunEvent::ProfiledBootEnded {
                n,
                total,
                end,
                wall_s,
            } => self.profiled_boot_ended(n, total, end, wall_s),
            RunEvent::Finished { .. } => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::stats::sequential::{FixedWidth, PointPrecision};
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A log the test reads back.
    #[derive(Clone, Default)]
    struct Log(Rc<RefCell<Vec<u8>>>);

    impl Write for Log {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Log {
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.0.borrow().clone())
                .unwrap()
                .lines()
                .map(String::from)
                .collect()
        }
    }

    fn unit(index: usize, variant: &str, cpus: u32, boot: u32) -> Unit {
        Unit {
            index,
            side: usize::from(variant == "on"),
            variant: variant.into(),
            cpus,
            boot,
            steps: Vec::new(),
        }
    }

    #[test]
    fn a_log_gets_one_self_contained_line_per_thing_that_happened() {
        let log = Log::default();
        let mut terminal = Terminal::plain(Box::new(log.clone()));
        let first = unit(0, "off", 1, 0);
        let added = [unit(2, "on", 2, 1), unit(3, "off", 2, 1)];
        let hang = BootEnd::TimedOut { after_s: 60 };
        let record = BootRecord {
            end: BootEnd::Completed,
            retried_after: Some(hang.clone()),
            wall_s: 12.34,
            samples: 40,
            host_load_before: 0.5,
            host_load_after: 1.04,
            ..BootRecord::default()
        };
        let unresolved = [UnresolvedPoint {
            point: "hackbench/time@2=8".parse().unwrap(),
            candidate: None,
            precision: PointPrecision {
                half_width: Some(0.008),
                boots: 4,
                resolved: false,
                boots_needed: Some(9),
            },
            target: FixedWidth::percent_target(0.5),
        }];
        let events = [
            RunEvent::Resumed {
                done: 1,
                total: 2,
                dropped_samples: 3,
            },
            // Before the boot loop begins, a boot starting shows nothing.
            RunEvent::UnitStarted {
                unit: &first,
                total: 2,
                slot: 0,
            },
            RunEvent::Began {
                total: 2,
                done: 0,
                jobs: 1,
            },
            RunEvent::UnitStarted {
                unit: &first,
                total: 2,
                slot: 0,
            },
            RunEvent::Retrying {
                unit: &first,
                first: &hang,
            },
            RunEvent::UnitEnded {
                unit: &first,
                total: 2,
                record: &record,
                slot: 0,
            },
            RunEvent::BlockAdded {
                units: &added,
                unresolved: &unresolved,
                total: 4,
            },
            RunEvent::UnitStarted {
                unit: &added[0],
                total: 4,
                slot: 0,
            },
            RunEvent::AdditionsStopped {
                why: PrecisionStop::Budget,
            },
            RunEvent::BootsEnded { interrupted: false },
            // After the timed boots, their progress is over.
            RunEvent::UnitEnded {
                unit: &added[0],
                total: 4,
                record: &record,
                slot: 0,
            },
            RunEvent::ProfiledBootStarted {
                n: 0,
                total: 2,
                unit: &added[0],
            },
            RunEvent::ProfiledBootEnded {
                n: 0,
                total: 2,
                end: &BootEnd::Completed,
                wall_s: 30.0,
            },
            RunEvent::Finished { interrupted: false },
        ];
        for event in &events {
            terminal.on(event).unwrap();
        }
        assert_eq!(
            log.lines(),
            [
                "markbench: resuming: 1 of 2 boots already done; dropped 3 samples of unfinished boots",
                "markbench: boot 1/2: off on 1 CPU, boot 0 …",
                "markbench:   timed out after 60 s; killed; retrying once",
                "markbench: boot 1/2 (off on 1 CPU, boot 0): completed (retried after: timed out after 60 s; killed) in 12.3 s, 40 samples, other load 0.5 → 1.0 cores",
                "markbench: precision: 2 more boots on 2 CPUs (now 4) for hackbench/time@2=8 ±0.80% > ±0.5%",
                "markbench: boot 3/4: on on 2 CPUs, boot 1 …",
                "markbench: precision: no more boots: the budget: the next block would have ended after it",
                "markbench: profiled boot 1/2: on on 2 CPUs",
                "markbench: profiled boot 1/2: completed in 30.0 s",
            ]
        );
    }

    #[test]
    fn one_added_boot_on_one_cpu_is_said_in_the_singular() {
        let log = Log::default();
        let mut terminal = Terminal::plain(Box::new(log.clone()));
        let added = [unit(4, "on", 1, 2)];
        terminal
            .on(&RunEvent::BlockAdded {
                units: &added,
                unresolved: &[UnresolvedPoint {
                    point: "ping-flood/rtt@1=0".parse().unwrap(),
                    candidate: Some("b".into()),
                    precision: PointPrecision {
                        half_width: None,
                        boots: 1,
                        resolved: false,
                        boots_needed: None,
                    },
                    target: FixedWidth::percent_target(0.5),
                }],
                total: 5,
            })
            .unwrap();
        assert_eq!(
            log.lines(),
            ["markbench: precision: 1 more boot on 1 CPU (now 5) for ping-flood/rtt@1=0 (b) (no interval yet)"]
        );
    }

    #[test]
    fn a_point_within_its_width_too_early_says_when_it_may_stop() {
        let point = UnresolvedPoint {
            point: "hackbench/time@1=4".parse().unwrap(),
            candidate: None,
            precision: PointPrecision {
                half_width: Some(0.004),
                boots: 3,
                resolved: false,
                boots_needed: Some(3),
            },
            target: FixedWidth::percent_target(0.5),
        };
        assert_eq!(
            unresolved_point(&point),
            "hackbench/time@1=4 ±0.40% on 3 boots a side (stops from 5)"
        );
    }

    #[test]
    fn a_run_that_is_not_complete_says_how_to_go_on() {
        let failed = BootRecord {
            end: BootEnd::TimedOut { after_s: 60 },
            ..BootRecord::default()
        };
        let ok = BootRecord {
            end: BootEnd::Completed,
            ..BootRecord::default()
        };
        let dir = std::path::Path::new("reports/r");
        let mut meta = crate::record::RunMeta {
            boots: vec![ok.clone(), failed],
            complete: false,
            ..crate::record::RunMeta::default()
        };
        assert_eq!(
            run_ended(&dir.join("report.md"), &meta, 61.4),
            "report: reports/r/report.md\n2 boots, 1 failed, 61 s in all\n"
        );
        assert_eq!(
            run_not_complete(dir, &meta).unwrap(),
            "the run is partial; continue it with: markbench compare --resume reports/r"
        );
        meta.complete = true;
        assert_eq!(
            run_not_complete(dir, &meta).unwrap(),
            "1 boot(s) failed; see the Boots table in the report"
        );
        meta.boots = vec![ok];
        assert_eq!(run_not_complete(dir, &meta), None);
    }
}
