//! What happens during a run, as typed events of values, and the consumer
//! that records them. The boot loop and the profiled boots only emit
//! events; what a person sees (bars on a terminal, one line per boot in a
//! CI log: `report::terminal`) and what `meta.toml` records are the
//! consumers' business, so neither formats text for the other and nothing
//! reads text back.

use crate::base::error::Result;
use crate::record::{BootEnd, BootRecord, RunMeta, Sample};
use crate::stages::plan::Unit;
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
    /// Something the run records as a warning, said before its first boot.
    Warned { warning: &'a crate::record::Warning },
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
        unresolved: &'a [crate::stages::plan::UnresolvedPoint],
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
        end: &'a BootEnd,
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
