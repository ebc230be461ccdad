//! What happens during a run, as typed events, and their consumers. The boot
//! loop and the profiled boots only emit events; what a person sees (bars
//! on a terminal, one line per boot in a CI log) and what `meta.toml`
//! records are the consumers' business, so neither formats text for the
//! other and nothing reads text back.

use crate::base::error::Result;
use crate::base::progress::Progress;
use crate::record::{BootEnd, BootRecord, RunMeta, Sample};
use crate::stages::plan::Unit;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Now, as the run's records write times.
pub fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One thing that happened in a run.
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// The boot loop begins: `total` boots in the run, `done` of them
    /// finished before (a resumed run), `jobs` guests at once.
    Began {
        total: usize,
        done: usize,
        jobs: usize,
    },
    /// A resumed run dropped the samples of boots that had not finished.
    Resumed {
        done: usize,
        total: usize,
        dropped_samples: usize,
    },
    /// A unit's guest starts in slot `slot` (from 0).
    UnitStarted {
        unit: &'a Unit,
        total: usize,
        slot: usize,
    },
    /// A sample is in samples.csv.
    SampleWritten { unit: &'a Unit, sample: &'a Sample },
    /// The unit's first attempt ended with `first`, which may be the host's
    /// doing; it runs once more.
    Retrying { unit: &'a Unit, first: &'a BootEnd },
    UnitEnded {
        unit: &'a Unit,
        total: usize,
        record: &'a BootRecord,
        slot: usize,
    },
    /// A run with a precision target adds a block of boots after the
    /// ones it had (now `total`), for the points in `unresolved`.
    BlockAdded {
        units: &'a [Unit],
        unresolved: &'a [String],
        total: usize,
    },
    /// A run with a precision target adds no more boots, for this reason.
    AdditionsStopped { why: crate::record::PrecisionStop },
    /// The timed boots are over (`interrupted`: stopped by Ctrl-C).
    BootsEnded { interrupted: bool },
    /// A profiled boot (`n` of `total`, from 0) starts or has ended.
    ProfiledBootStarted {
        n: usize,
        total: usize,
        unit: &'a Unit,
    },
    ProfiledBootEnded {
        n: usize,
        total: usize,
        status: &'a str,
        wall_s: f64,
    },
    /// The run is over: everything it will measure is on disk.
    Finished { interrupted: bool },
}

/// A consumer of a run's events.
pub trait RunObserver {
    fn on(&mut self, event: &RunEvent<'_>) -> Result<()>;
}

/// Several consumers, each given every event in turn.
pub struct Observers<'a>(pub Vec<&'a mut dyn RunObserver>);

impl RunObserver for Observers<'_> {
    fn on(&mut self, event: &RunEvent<'_>) -> Result<()> {
        for observer in &mut self.0 {
            observer.on(event)?;
        }
        Ok(())
    }
}

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
    shown: Option<Shown>,
    /// Where the lines go when no bars are drawn: stderr, or a test's buffer.
    log: Box<dyn Write>,
    /// Whether bars may be drawn (stderr is a terminal).
    bars: bool,
    /// Guests at once: lines name their slot when there are several.
    jobs: usize,
}

/// How the timed boots are shown.
enum Shown {
    Bars(Progress),
    Lines,
}

impl Default for Terminal {
    fn default() -> Self {
        Terminal {
            shown: None,
            log: Box::new(std::io::stderr()),
            bars: true,
            jobs: 1,
        }
    }
}

impl Terminal {
    /// Lines only, as in a CI log, written to `log`.
    pub fn plain(log: Box<dyn Write>) -> Terminal {
        Terminal {
            shown: None,
            log,
            bars: false,
            jobs: 1,
        }
    }

    /// A line that stays: above the bars, or in the log. A log that cannot
    /// be written is not worth stopping a run for.
    fn say(&mut self, text: impl std::fmt::Display) {
        match &self.shown {
            Some(Shown::Bars(progress)) => progress.note(&text.to_string()),
            _ => {
                let _ = writeln!(self.log, "{}", crate::base::message::line(text));
            }
        }
    }
}

impl Terminal {
    /// ", slot 2" when guests run side by side, else nothing.
    fn in_slot(&self, slot: usize) -> String {
        if self.jobs > 1 {
            format!(", slot {}", slot + 1)
        } else {
            String::new()
        }
    }
}

impl RunObserver for Terminal {
    fn on(&mut self, event: &RunEvent<'_>) -> Result<()> {
        match *event {
            RunEvent::Began { total, done, jobs } => {
                self.jobs = jobs;
                let bars = if self.bars {
                    Progress::new(total, done, jobs)
                } else {
                    None
                };
                self.shown = Some(bars.map_or(Shown::Lines, Shown::Bars));
                if jobs > 1 {
                    self.say(format_args!(
                        "{} boots to go, {jobs} guests at once",
                        total.saturating_sub(done)
                    ));
                }
            }
            RunEvent::Resumed {
                done,
                total,
                dropped_samples,
            } => self.say(format_args!(
                "resuming: {done} of {total} boots already done; dropped {dropped_samples} samples of unfinished boots"
            )),
            RunEvent::UnitStarted { unit, total, slot } => {
                let text = format!(
                    "boot {}/{total}: {} on {} CPU{}, boot {}{}",
                    unit.index + 1,
                    unit.variant,
                    unit.cpus,
                    plural(unit.cpus),
                    unit.boot,
                    self.in_slot(slot)
                );
                match &self.shown {
                    Some(Shown::Bars(progress)) => progress.start_boot(slot, &text),
                    Some(Shown::Lines) => self.say(format_args!("{text} …")),
                    None => {}
                }
            }
            RunEvent::SampleWritten { .. } => {}
            RunEvent::Retrying { first, .. } => {
                if self.shown.is_some() {
                    self.say(format_args!("  {}; retrying once", first.describe()));
                }
            }
            RunEvent::UnitEnded {
                unit,
                total,
                record,
                slot,
            } => {
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
                match &self.shown {
                    Some(Shown::Bars(progress)) => progress.finish_boot(slot, &text),
                    Some(Shown::Lines) => self.say(text),
                    None => {}
                }
            }
            RunEvent::BlockAdded {
                units,
                unresolved,
                total,
            } => {
                if let Some(Shown::Bars(progress)) = &self.shown {
                    progress.grow(total);
                }
                self.say(format_args!(
                    "precision: {} more boot{} on {} CPU{} (now {total}) for {}",
                    units.len(),
                    if units.len() == 1 { "" } else { "s" },
                    units.first().map_or(0, |u| u.cpus),
                    plural(units.first().map_or(0, |u| u.cpus)),
                    unresolved.join("; ")
                ));
            }
            RunEvent::AdditionsStopped { why } => {
                self.say(format_args!("precision: no more boots: {}", why.describe()))
            }
            RunEvent::BootsEnded { .. } => {
                if let Some(Shown::Bars(progress)) = self.shown.take() {
                    progress.finish();
                }
            }
            RunEvent::ProfiledBootStarted { n, total, unit } => self.say(format_args!(
                "profiled boot {}/{total}: {} on {} CPU{}",
                n + 1,
                unit.variant,
                unit.cpus,
                plural(unit.cpus)
            )),
            RunEvent::ProfiledBootEnded {
                n,
                total,
                status,
                wall_s,
            } => self.say(format_args!(
                "profiled boot {}/{total}: {status} in {wall_s:.1} s",
                n + 1
            )),
            RunEvent::Finished { .. } => {}
        }
        Ok(())
    }
}

/// `meta.toml` as the run goes: every boot's record written as the boot
/// ends, so an interrupted run leaves metadata `markbench report` can read,
/// and the run's end stamped when it finishes.
pub struct MetaRecord<'a> {
    pub meta: RunMeta,
    dir: &'a Path,
    /// Wall time of the run before this process continued it.
    previous_wall: f64,
    started: Instant,
}

impl<'a> MetaRecord<'a> {
    /// Starts recording `meta` into `dir`, writing it at once.
    pub fn new(meta: RunMeta, dir: &'a Path) -> Result<MetaRecord<'a>> {
        let record = MetaRecord {
            previous_wall: meta.wall_s,
            meta,
            dir,
            started: Instant::now(),
        };
        record.meta.write(dir)?;
        Ok(record)
    }

    fn wall_s(&self) -> f64 {
        self.previous_wall + self.started.elapsed().as_secs_f64().round()
    }
}

impl RunObserver for MetaRecord<'_> {
    fn on(&mut self, event: &RunEvent<'_>) -> Result<()> {
        match event {
            RunEvent::UnitEnded { record, .. } => {
                // In the plan's order, whichever slot ended first: the
                // record of a run does not depend on how many ran at once.
                let at = self.meta.boots.partition_point(|b| b.unit <= record.unit);
                self.meta.boots.insert(at, (*record).clone());
                self.meta.wall_s = self.wall_s();
                self.meta.write(self.dir)
            }
            RunEvent::BlockAdded { units, .. } => {
                self.meta
                    .order
                    .extend(units.iter().map(crate::stages::plan::record_of));
                if let Some(p) = self.meta.precision.as_mut() {
                    p.added_boots += units.len();
                    p.stopped = None;
                }
                self.meta.write(self.dir)
            }
            RunEvent::AdditionsStopped { why } => {
                if let Some(p) = self.meta.precision.as_mut() {
                    p.stopped = Some(*why);
                }
                self.meta.write(self.dir)
            }
            RunEvent::Finished { interrupted } => {
                self.meta.complete = !interrupted;
                self.meta.finished_at = now();
                self.meta.wall_s = self.wall_s();
                self.meta.write(self.dir)
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::PrecisionStop;
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
        let unresolved = ["hackbench on 2 CPUs, groups 8: ±0.8%".to_string()];
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
                status: "completed",
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
                "markbench: precision: 2 more boots on 2 CPUs (now 4) for hackbench on 2 CPUs, groups 8: ±0.8%",
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
                unresolved: &["ping-flood on 1 CPU".to_string()],
                total: 5,
            })
            .unwrap();
        assert_eq!(
            log.lines(),
            ["markbench: precision: 1 more boot on 1 CPU (now 5) for ping-flood on 1 CPU"]
        );
    }
}
