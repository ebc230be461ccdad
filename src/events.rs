//! What happens during a run, as typed events, and their consumers. The boot
//! loop and the profiled boots only emit events; what a person sees (bars
//! on a terminal, one line per boot in a CI log) and what `meta.toml`
//! records are the consumers' business, so neither formats text for the
//! other and nothing reads text back.

use crate::plan::Unit;
use crate::progress::Progress;
use crate::samples::{BootEnd, BootRecord, RunMeta, Sample};
use anyhow::Result;
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
    /// finished before (a resumed run).
    Began {
        total: usize,
        done: usize,
    },
    /// A resumed run dropped the samples of boots that had not finished.
    Resumed {
        done: usize,
        total: usize,
        dropped_samples: usize,
    },
    UnitStarted {
        unit: &'a Unit,
        total: usize,
    },
    /// A sample is in samples.csv.
    SampleWritten {
        unit: &'a Unit,
        sample: &'a Sample,
    },
    /// The unit's first attempt ended with `first`, which may be the host's
    /// doing; it runs once more.
    Retrying {
        unit: &'a Unit,
        first: &'a BootEnd,
    },
    UnitEnded {
        unit: &'a Unit,
        total: usize,
        record: &'a BootRecord,
    },
    /// A run with a precision target adds a block of boots after the
    /// ones it had (now `total`), for the points in `unresolved`.
    BlockAdded {
        units: &'a [Unit],
        unresolved: &'a [String],
        total: usize,
    },
    /// A run with a precision target adds no more boots, for this reason.
    AdditionsStopped {
        why: crate::samples::PrecisionStop,
    },
    /// The timed boots are over (`interrupted`: stopped by Ctrl-C).
    BootsEnded {
        interrupted: bool,
    },
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
    Finished {
        interrupted: bool,
    },
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
#[derive(Default)]
pub struct Terminal {
    progress: Option<Progress>,
}

impl RunObserver for Terminal {
    fn on(&mut self, event: &RunEvent<'_>) -> Result<()> {
        match *event {
            RunEvent::Began { total, done } => self.progress = Some(Progress::new(total, done)),
            RunEvent::Resumed {
                done,
                total,
                dropped_samples,
            } => crate::message::note(format_args!(
                "resuming: {done} of {total} boots already done; dropped {dropped_samples} samples of unfinished boots"
            )),
            RunEvent::UnitStarted { unit, total } => {
                if let Some(progress) = &self.progress {
                    progress.start_boot(&format!(
                        "boot {}/{total}: {} on {} CPU{}, boot {}",
                        unit.index + 1,
                        unit.variant,
                        unit.cpus,
                        plural(unit.cpus),
                        unit.boot
                    ));
                }
            }
            RunEvent::SampleWritten { .. } => {}
            RunEvent::Retrying { first, .. } => {
                if let Some(progress) = &self.progress {
                    progress.note(&format!("  {}; retrying once", first.describe()));
                }
            }
            RunEvent::UnitEnded {
                unit,
                total,
                record,
            } => {
                if let Some(progress) = &self.progress {
                    progress.finish_boot(&format!(
                        "boot {}/{total} ({} on {} CPU{}, boot {}): {} in {:.1} s, {} samples, host load {:.1} → {:.1}",
                        unit.index + 1,
                        unit.variant,
                        unit.cpus,
                        plural(unit.cpus),
                        unit.boot,
                        record.status,
                        record.wall_s,
                        record.samples,
                        record.host_load_before,
                        record.host_load_after
                    ));
                }
            }
            RunEvent::BlockAdded {
                units,
                unresolved,
                total,
            } => {
                let text = format!(
                    "precision: {} more boot{} on {} CPU{} (now {total}) for {}",
                    units.len(),
                    if units.len() == 1 { "" } else { "s" },
                    units.first().map_or(0, |u| u.cpus),
                    plural(units.first().map_or(0, |u| u.cpus)),
                    unresolved.join("; ")
                );
                match &self.progress {
                    Some(progress) => {
                        progress.grow(total);
                        progress.note(&text);
                    }
                    None => crate::message::note(format_args!("{text}")),
                }
            }
            RunEvent::AdditionsStopped { why } => {
                crate::message::note(format_args!("precision: no more boots: {}", why.describe()))
            }
            RunEvent::BootsEnded { .. } => {
                if let Some(progress) = self.progress.take() {
                    progress.finish();
                }
            }
            RunEvent::ProfiledBootStarted { n, total, unit } => crate::message::note(format_args!(
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
            } => crate::message::note(format_args!(
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
                self.meta.boots.push((*record).clone());
                self.meta.wall_s = self.wall_s();
                self.meta.write(self.dir)
            }
            RunEvent::BlockAdded { units, .. } => {
                self.meta
                    .order
                    .extend(units.iter().map(crate::plan::describe_unit));
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
