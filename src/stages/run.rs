//! The boot loop of a run: each unit of the plan booted in order, up to
//! one guest a slot at once, samples appended as they arrive, and what happens emitted as typed events
//! ([`events`]): the terminal's progress and `meta.toml`'s boot records
//! (rewritten after every boot, so an interrupted run leaves a directory
//! `markbench report` can read) are their consumers. It takes the images
//! (`run_images`) and the machine as decided, and returns the run's
//! metadata; `compare` renders the report from the directory after.

use crate::base::error::{Context, Result};
use crate::base::protocol::{Message, RunRecord};
use crate::base::run_dir::RunDir;
use crate::guest::images::size::SizeRecord;
use crate::guest::workloads::Measurement;
use crate::record::{BootKey, BootRecord, RunMeta, Sample, SampleWriter};
use crate::stages::events::{MetaRecord, Observers, RunEvent, RunObserver};
use crate::stages::plan::{Addition, Unit};
use crate::stages::run_images::Images;
use crate::stages::slots::Slots;
use crate::stages::suite::Suite;
use crate::stages::vm::{BootEnd, BootOutcome, BootRequest, Machine, Runner};
use std::path::{Path, PathBuf};

pub use crate::stages::events::now;

/// The cycle model every boot of a run is made under: the plugin that
/// runs it and the arguments that turn it on with the suite's settings.
#[derive(Debug, Clone)]
pub struct ModelPlugin {
    pub library: PathBuf,
    pub args: Vec<String>,
}

/// What every boot of a run is made with, and where it is recorded.
struct BootLoop<'a> {
    suite: &'a Suite,
    images: &'a Images,
    machine: &'a Machine,
    dir: &'a Path,
    model: Option<&'a ModelPlugin>,
}

/// A timed run as the guest reported it, for pairing with the model's
/// region of it once the boot is over.
struct TimedRun {
    workload: String,
    param: u64,
    iteration: u32,
    warmup: bool,
    /// The suite's workload (its index) and the run's record, kept when
    /// the model runs: the workload reads the counts of the run's parts
    /// with its output.
    measured: Option<(usize, RunRecord)>,
}

/// One attempt at booting a unit, under way in a slot: what it was
/// launched with and what its messages have given so far.
struct Attempt {
    unit: Unit,
    /// Retries of the unit before this one (0 first).
    number: u32,
    request: BootRequest,
    log_name: String,
    model_output: PathBuf,
    /// How the first attempt ended, when this one is its retry.
    first: Option<BootEnd>,
    samples: usize,
    /// Kernel release, online CPUs and version, from the agent's hello.
    guest: (String, String, String),
    hello_s: Option<f64>,
    sample_error: Option<String>,
    write_error: Option<crate::base::error::Error>,
    timed_runs: Vec<TimedRun>,
}

impl BootLoop<'_> {
    /// The request that boots attempt `number` of `unit` (its initrd
    /// written), on host CPU `host_cpu` if one is given.
    fn launch(&self, unit: &Unit, number: u32, host_cpu: Option<usize>) -> Result<Attempt> {
        let (suite, dir) = (self.suite, self.dir);
        let log_name = format!(
            "logs/unit-{:03}-{}-{}cpu-boot{}.log",
            unit.index, unit.variant, unit.cpus, unit.boot
        );
        let initrd = dir.join(format!("logs/unit-{:03}.initrd", unit.index));
        self.images.write_unit_initrd(suite, unit, &initrd)?;
        let timing = self.machine.timing.icount_shift;
        let model_output = dir.join(format!("logs/unit-{:03}-model.tsv", unit.index));
        let mut request = BootRequest {
            plugin: self.model.map(|m| crate::stages::vm::PluginLoad {
                library: m.library.clone(),
                output: model_output.clone(),
                args: m.args.clone(),
            }),
            icount_shift: timing,
            // Only icount keeps the host out of the guest otherwise; the retry of
            // a hang gets a seed of its own, since the same one would hang again.
            guest_seed: timing
                .map(|_| crate::stages::vm::boot_seed(suite.seed, unit.index, number)),
            host_cpu,
            ..self.images.boot_request(
                suite,
                unit,
                self.machine.accel.accel,
                initrd,
                dir.join(&log_name),
            )
        };
        self.machine.place(&mut request);
        Ok(Attempt {
            unit: unit.clone(),
            number,
            request,
            log_name,
            model_output,
            first: None,
            samples: 0,
            guest: Default::default(),
            hello_s: None,
            sample_error: None,
            write_error: None,
            timed_runs: Vec::new(),
        })
    }

    /// What one message of the guest gives the attempt: its samples
    /// appended to samples.csv (a [`RunEvent::SampleWritten`] for each) as
    /// they arrive. `since_launch` is how long the guest had run.
    fn on_message(
        &self,
        attempt: &mut Attempt,
        message: Message,
        since_launch: std::time::Duration,
        writer: &mut SampleWriter,
        events: &mut dyn RunObserver,
    ) {
        let suite = self.suite;
        let unit = &attempt.unit;
        match message {
            Message::Hello {
                kernel_release,
                kernel_version,
                online_cpus,
                ..
            } => {
                attempt.hello_s = Some(tenths(since_launch));
                attempt.guest = (kernel_release, online_cpus, kernel_version)
            }
            Message::Run(record) => {
                let Some(step) = unit.step(&record.id) else {
                    attempt.sample_error.get_or_insert(format!(
                        "the guest reported an unknown step {:?}",
                        record.id
                    ));
                    return;
                };
                let spec = &suite.workloads[step.workload];
                attempt.timed_runs.push(TimedRun {
                    workload: spec.label(),
                    param: step.param,
                    iteration: record.iteration,
                    warmup: record.iteration < step.warmup,
                    measured: self.model.map(|_| (step.workload, record.clone())),
                });
                match spec.measure(&record) {
                    Ok(measurements) => {
                        for m in measurements {
                            let sample = Sample {
                                suite: suite.name.clone(),
                                workload: spec.label(),
                                metric: m.metric,
                                unit: m.unit,
                                higher_is_better: m.higher_is_better,
                                param: step.param,
                                cpus: unit.cpus,
                                variant: unit.variant.clone(),
                                boot: unit.boot,
                                iteration: record.iteration,
                                warmup: record.iteration < step.warmup,
                                value: m.value,
                                started_at: now(),
                            };
                            let written = writer.append(&sample).and_then(|()| {
                                events.on(&RunEvent::SampleWritten {
                                    unit,
                                    sample: &sample,
                                })
                            });
                            match written {
                                Ok(()) => attempt.samples += 1,
                                Err(e) => {
                                    attempt.write_error.get_or_insert(e);
                                }
                            }
                        }
                    }
                    Err(e) => {
                        attempt.sample_error.get_or_insert(e.to_string());
                    }
                }
            }
            _ => {}
        }
    }

    /// The attempt's boot record, once its guest is gone: the model's
    /// counts added as samples, and how the boot ended all told.
    fn finish(
        &self,
        attempt: Attempt,
        outcome: BootOutcome,
        writer: &mut SampleWriter,
        events: &mut dyn RunObserver,
    ) -> Result<BootRecord> {
        let Attempt {
            unit,
            request,
            log_name,
            model_output,
            mut samples,
            guest,
            hello_s,
            mut sample_error,
            write_error,
            timed_runs,
            ..
        } = attempt;
        let _ = std::fs::remove_file(&request.initrd);
        if let Some(e) = write_error {
            return Err(e.context("writing samples.csv"));
        }
        if self.model.is_some() && outcome.end.is_ok() && sample_error.is_none() {
            match self.write_model_samples(&unit, &timed_runs, &model_output, writer, events) {
                Ok(n) => {
                    samples += n;
                    let _ = std::fs::remove_file(&model_output);
                }
                Err(ModelError::Samples(e)) => return Err(e.context("writing samples.csv")),
                Err(ModelError::Counts(message)) => sample_error = Some(message),
            }
        }
        let end = unit_end(&unit, outcome.end, sample_error, &guest.1);
        let retryable = matches!(
            end,
            BootEnd::TimedOut { .. } | BootEnd::QemuFailed { .. } | BootEnd::Vanished { .. }
        );
        let record = BootRecord {
            guest_seed: request.guest_seed,
            retryable,
            host_load_before: 0.0,
            host_load_after: 0.0,
            unit: unit.index,
            variant: unit.variant.clone(),
            cpus: unit.cpus,
            boot: unit.boot,
            wall_s: tenths(outcome.wall),
            samples,
            console_log: log_name,
            guest_kernel: guest.0,
            guest_cpus: guest.1,
            guest_version: guest.2,
            end,
            retried_after: None,
            hello_s,
            host_cpu: request.host_cpu,
        };
        Ok(record)
    }

    /// Appends the model's counts of each timed run (the plugin's regions,
    /// one per run in the order the guest ran them) as samples of their
    /// own, each count a metric beside the workload's, and what the
    /// workload makes of the counts of the run's parts, if the guest marked
    /// any; returns how many.
    fn write_model_samples(
        &self,
        unit: &Unit,
        runs: &[TimedRun],
        output: &Path,
        writer: &mut SampleWriter,
        events: &mut dyn RunObserver,
    ) -> Result<usize, ModelError> {
        let regions = crate::base::cycle_model::read_regions(output)
            .map_err(|e| ModelError::Counts(format!("no counts from the cycle model: {e}")))?;
        if regions.len() != runs.len() {
            return Err(ModelError::Counts(format!(
                "the cycle model counted {} timed regions but the agent reported {} runs",
                regions.len(),
                runs.len()
            )));
        }
        let mut written = 0;
        for (run, region) in runs.iter().zip(&regions) {
            let mut points: Vec<Measurement> = crate::base::cycle_model::metrics(region)
                .into_iter()
                .map(|(metric, unit, value)| Measurement {
                    metric: metric.into(),
                    unit: unit.into(),
                    higher_is_better: false,
                    value: value as f64,
                })
                .collect();
            let parts = crate::base::cycle_model::parts(region);
            if let (false, Some((workload, record))) = (parts.is_empty(), &run.measured) {
                let spec = &self.suite.workloads[*workload];
                points.extend(spec.model_parts(record, &parts).map_err(|e| {
                    ModelError::Counts(format!("the cycle model's counts per part: {e}"))
                })?);
            }
            for point in points {
                let sample = Sample {
                    suite: self.suite.name.clone(),
                    workload: run.workload.clone(),
                    metric: point.metric,
                    unit: point.unit,
                    higher_is_better: point.higher_is_better,
                    param: run.param,
                    cpus: unit.cpus,
                    variant: unit.variant.clone(),
                    boot: unit.boot,
                    iteration: run.iteration,
                    warmup: run.warmup,
                    value: point.value,
                    started_at: now(),
                };
                writer
                    .append(&sample)
                    .and_then(|()| {
                        events.on(&RunEvent::SampleWritten {
                            unit,
                            sample: &sample,
                        })
                    })
                    .map_err(ModelError::Samples)?;
                written += 1;
            }
        }
        Ok(written)
    }
}

/// Why a boot's model counts did not become samples.
enum ModelError {
    /// The plugin's file is missing, unreadable, or does not pair with the runs.
    Counts(String),
    /// samples.csv could not be written.
    Samples(crate::base::error::Error),
}

/// Seconds to a tenth, as boot records keep them.
fn tenths(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// How a unit's boot ended, all told: the runner's ending, unless the host
/// could not read a run's figures (its reading says more than the agent's)
/// or the guest saw other CPUs than the unit asked for.
fn unit_end(unit: &Unit, end: BootEnd, sample_error: Option<String>, guest_cpus: &str) -> BootEnd {
    // The host's reading of a failed run ("exited with status 3: …") says
    // more than the agent's ("command failed"), so it wins.
    let end = match (end, sample_error) {
        (BootEnd::Completed | BootEnd::AgentError { .. }, Some(message)) => {
            BootEnd::AgentError { message }
        }
        (end, _) => end,
    };
    let expected_cpus = if unit.cpus == 1 {
        "0".to_string()
    } else {
        format!("0-{}", unit.cpus - 1)
    };
    if end.is_ok() && guest_cpus != expected_cpus {
        return BootEnd::AgentError {
            message: format!("guest saw CPUs {guest_cpus:?}, expected {expected_cpus:?}"),
        };
    }
    end
}

/// A lock file that stops two runs writing into one directory. A lock left
/// by a process that no longer exists (killed with SIGKILL) is taken over.
pub struct RunLock {
    path: PathBuf,
    dir: PathBuf,
}

impl RunLock {
    pub fn acquire(dir: &Path) -> Result<RunLock> {
        let path = RunDir::new(dir).lock();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    use std::io::Write;
                    write!(f, "{}", std::process::id())?;
                    return Ok(RunLock {
                        path,
                        dir: dir.to_path_buf(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(&path).unwrap_or_default();
                    let alive = holder
                        .trim()
                        .parse::<u32>()
                        .is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
                    if alive {
                        return Err(crate::base::error::InputError::in_file(
                            dir,
                            format!(
                                "another markbench (pid {}) is writing into this run directory",
                                holder.trim()
                            ),
                        )
                        .into());
                    }
                    std::fs::remove_file(&path)?;
                }
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
    }
}

impl RunLock {
    /// The run directory this lock holds.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The boot a unit makes, as its samples and boot record name it.
fn unit_key(unit: &Unit) -> BootKey {
    BootKey {
        variant: unit.variant.clone(),
        cpus: unit.cpus,
        boot: unit.boot,
    }
}

/// How a run starts: new, with its metadata as it begins, or as the
/// continuation of an interrupted run, with the metadata that run left.
pub enum Start {
    New(RunMeta),
    Resume(RunMeta),
}

/// What runs after the timed boots of a run that was not interrupted (the
/// profiled boots), with the run's runner, its slots and its events'
/// consumers.
pub type AfterBoots<'a> =
    &'a mut dyn FnMut(&dyn Runner, &Slots, &mut dyn RunObserver) -> Result<()>;

/// What a run with a precision target asks when a slot is free and every
/// unit so far has started (those that ended recorded in the run directory
/// by then): given the units so far and those still under way, the next
/// block to boot, or why none, or to wait for the boots under way.
pub type MoreBoots<'a> = &'a mut dyn FnMut(&[Unit], &[Unit]) -> Result<Addition>;

/// What a slot's thread tells the boot loop.
enum FromSlot {
    /// The guest said this, so long after its QEMU started.
    Message(Message, std::time::Duration),
    /// The guest is gone; the load beside markbench's own before and after.
    Ended(BootOutcome, f64, f64),
}

/// Boots one attempt's guest on a thread of its own, sending what happens
/// to the boot loop tagged with its slot.
fn start_in_slot<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    runner: &'scope dyn Runner,
    slot: usize,
    request: BootRequest,
    to_loop: std::sync::mpsc::Sender<(usize, FromSlot)>,
) {
    scope.spawn(move || {
        let load_before = runner.load_beside_own();
        let launched = std::time::Instant::now();
        // The loop waits for every slot's end: a runner that panics still
        // ends its boot, as a failure of the machinery.
        let booted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runner.boot(&request, &mut |message| {
                let _ = to_loop.send((slot, FromSlot::Message(message, launched.elapsed())));
            })
        }));
        let outcome = booted.unwrap_or_else(|_| BootOutcome {
            end: BootEnd::QemuFailed {
                detail: "the thread that watched the guest panicked".into(),
            },
            wall: launched.elapsed(),
        });
        let load_after = runner.load_beside_own();
        let _ = to_loop.send((slot, FromSlot::Ended(outcome, load_before, load_after)));
    });
}

/// Which free slot boots a unit of `variant`: the one that has booted it
/// least so far, so that no variant runs only on one kind of slot (one
/// core, the host's first); the lowest such slot.
fn slot_for(free: &[usize], variant: &str, booted: &[(String, usize)]) -> Option<usize> {
    free.iter().copied().min_by_key(|&slot| {
        let here = booted
            .iter()
            .filter(|(v, s)| v == variant && *s == slot)
            .count();
        (here, slot)
    })
}

/// Runs every unit in order into the directory `lock` holds, up to
/// `slots.jobs` guests at once, and returns the run's metadata as written
/// last; the caller renders the report. Units start in the plan's order
/// and each is recorded as it ends, so a block's boots may run side by
/// side; under icount that changes nothing of a boot's samples.
/// With [`Start::Resume`], boots that finished are kept and skipped, the
/// partial samples of any other are dropped, and the rest run as planned.
/// With `more_boots`, the units it adds as slots free up run after the
/// others, until it says to stop. `terminal` is what a person watching
/// sees of the events.
#[allow(clippy::too_many_arguments)]
pub fn execute(
    suite: &Suite,
    units: &[Unit],
    start: Start,
    images: &Images,
    machine: &Machine,
    runner: &dyn Runner,
    slots: &Slots,
    lock: &RunLock,
    model: Option<&ModelPlugin>,
    after_boots: Option<AfterBoots>,
    mut more_boots: Option<MoreBoots>,
    terminal: &mut dyn RunObserver,
) -> Result<RunMeta> {
    let dir = lock.dir();
    let (meta, resumed) = begin(suite, units.len(), start, images, dir)?;
    let mut record = MetaRecord::new(meta, dir)?;
    let done: std::collections::BTreeSet<BootKey> = record
        .meta
        .boots
        .iter()
        .filter(|b| b.ok())
        .map(BootRecord::key)
        .collect();
    let mut events = Observers(vec![terminal, &mut record]);
    if let Some(event) = resumed {
        events.on(&event)?;
    }
    events.on(&RunEvent::Began {
        total: units.len(),
        done: done.len(),
        jobs: slots.jobs,
    })?;
    let boots = BootLoop {
        suite,
        images,
        machine,
        dir,
        model,
    };
    let mut writer = SampleWriter::open(dir)?;
    let mut queue: Vec<Unit> = units.to_vec();
    let interrupted = std::thread::scope(|scope| {
        let run = Slotted {
            boots: &boots,
            runner,
            slots,
            done: &done,
        };
        let ended = run.boot_all(
            scope,
            &mut queue,
            &mut writer,
            &mut events,
            more_boots.as_mut(),
        );
        if ended.is_err() {
            // The guests under way must not outlive the run: stop them as
            // Ctrl-C would (the scope waits for their threads).
            crate::stages::vm::INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        ended
    })?;
    let mut interrupted = interrupted;
    events.on(&RunEvent::BootsEnded { interrupted })?;
    if let Some(after_boots) = after_boots.filter(|_| !interrupted) {
        after_boots(runner, slots, &mut events)?;
        interrupted = crate::stages::vm::interrupted();
    }
    events.on(&RunEvent::Finished { interrupted })?;
    drop(events);
    Ok(record.meta)
}

/// The boot loop's slots at work: which unit each runs, and the units
/// that finished before this process (a resumed run's).
struct Slotted<'a> {
    boots: &'a BootLoop<'a>,
    runner: &'a dyn Runner,
    slots: &'a Slots,
    done: &'a std::collections::BTreeSet<BootKey>,
}

impl<'a> Slotted<'a> {
    /// Starts `attempt`'s guest in slot `slot`; the attempt, under way.
    fn start<'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        slot: usize,
        attempt: Attempt,
        to_loop: &std::sync::mpsc::Sender<(usize, FromSlot)>,
    ) -> Attempt
    where
        'a: 'scope,
    {
        start_in_slot(
            scope,
            self.runner,
            slot,
            attempt.request.clone(),
            to_loop.clone(),
        );
        attempt
    }

    /// Boots the queue (and what `more_boots` adds to it) until it is done
    /// or interrupted; returns whether it was interrupted.
    fn boot_all<'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        queue: &mut Vec<Unit>,
        writer: &mut SampleWriter,
        events: &mut dyn RunObserver,
        mut more_boots: Option<&mut MoreBoots>,
    ) -> Result<bool>
    where
        'a: 'scope,
    {
        let jobs = self.slots.jobs.max(1);
        let (to_loop, from_slots) = std::sync::mpsc::channel::<(usize, FromSlot)>();
        let mut state = SlotsState {
            under_way: (0..jobs).map(|_| None).collect(),
            booted: Vec::new(),
            next: 0,
            interrupted: false,
            adding: more_boots.is_some(),
            waiting: false,
        };
        loop {
            self.fill_slots(scope, &mut state, queue, events, &mut more_boots, &to_loop)?;
            if state.under_way.iter().all(Option::is_none) {
                break;
            }
            let (slot, said) = from_slots
                .recv()
                .map_err(|_| anyhow::anyhow!("the boot loop lost its slots' threads"))?;
            match said {
                FromSlot::Message(message, since_launch) => {
                    let attempt = state.under_way[slot]
                        .as_mut()
                        .expect("a slot that speaks boots something");
                    self.boots
                        .on_message(attempt, message, since_launch, writer, events)
                }
                FromSlot::Ended(outcome, load_before, load_after) => {
                    let attempt = state.under_way[slot]
                        .take()
                        .expect("a slot that speaks boots something");
                    let ended = Ended {
                        slot,
                        outcome,
                        loads: (load_before, load_after),
                    };
                    match self.end_attempt(attempt, ended, queue.len(), writer, events)? {
                        Some(retry) => {
                            state.under_way[slot] = Some(self.start(scope, slot, retry, &to_loop))
                        }
                        // A slot is free: the precision rule may have more to say.
                        None => state.waiting = false,
                    }
                }
            }
        }
        Ok(state.interrupted)
    }

    /// Starts the plan's next units in the free slots, in the plan's order;
    /// with the queue used up, asks the precision rule for more.
    fn fill_slots<'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        state: &mut SlotsState,
        queue: &mut Vec<Unit>,
        events: &mut dyn RunObserver,
        more_boots: &mut Option<&mut MoreBoots>,
        to_loop: &std::sync::mpsc::Sender<(usize, FromSlot)>,
    ) -> Result<()>
    where
        'a: 'scope,
    {
        loop {
            state.interrupted |= crate::stages::vm::interrupted();
            if state.interrupted {
                return Ok(());
            }
            let free: Vec<usize> = (0..state.under_way.len())
                .filter(|&s| state.under_way[s].is_none())
                .collect();
            if free.is_empty() {
                return Ok(());
            }
            if let Some(unit) = queue.get(state.next) {
                state.next += 1;
                if self.done.contains(&unit_key(unit)) {
                    continue;
                }
                let slot = slot_for(&free, &unit.variant, &state.booted).expect("a free slot");
                state.booted.push((unit.variant.clone(), slot));
                let attempt = self.boots.launch(unit, 0, self.slots.host_cpu(slot))?;
                events.on(&RunEvent::UnitStarted {
                    unit,
                    total: queue.len(),
                    slot,
                })?;
                state.under_way[slot] = Some(self.start(scope, slot, attempt, to_loop));
                continue;
            }
            let Some(more) = more_boots
                .as_mut()
                .filter(|_| state.adding && !state.waiting)
            else {
                return Ok(());
            };
            let running: Vec<Unit> = state
                .under_way
                .iter()
                .flatten()
                .map(|a| a.unit.clone())
                .collect();
            // Every sample and boot record of the boots that ended is on
            // disk by now (each is written as it arrives), so the decision
            // reads the run from its directory.
            match more(queue, &running)? {
                Addition::Block { units, unresolved } => {
                    let total = queue.len() + units.len();
                    events.on(&RunEvent::BlockAdded {
                        units: &units,
                        unresolved: &unresolved,
                        total,
                    })?;
                    queue.extend(units);
                }
                Addition::Wait => state.waiting = true,
                Addition::Stop(why) => {
                    events.on(&RunEvent::AdditionsStopped { why })?;
                    state.adding = false;
                }
            }
        }
    }

    /// Records an attempt whose guest is gone; returns its retry when the
    /// first attempt failed in a way the host may have caused.
    fn end_attempt(
        &self,
        attempt: Attempt,
        ended: Ended,
        total: usize,
        writer: &mut SampleWriter,
        events: &mut dyn RunObserver,
    ) -> Result<Option<Attempt>> {
        let (unit, number, first) = (attempt.unit.clone(), attempt.number, attempt.first.clone());
        let mut record = self.boots.finish(attempt, ended.outcome, writer, events)?;
        (record.host_load_before, record.host_load_after) = ended.loads;
        if number == 0 && record.retryable && !crate::stages::vm::interrupted() {
            // The first attempt's failure may be the host's (a hang, a QEMU
            // failure): whatever it measured is dropped and the unit boots
            // once more, in its slot.
            events.on(&RunEvent::Retrying {
                unit: &unit,
                first: &record.end,
            })?;
            let key = unit_key(&unit);
            crate::record::retain_samples(self.boots.dir, |s| s.boot_key() != key)?;
            *writer = SampleWriter::open(self.boots.dir)?;
            let mut retry = self
                .boots
                .launch(&unit, 1, self.slots.host_cpu(ended.slot))?;
            retry.first = Some(record.end);
            return Ok(Some(retry));
        }
        record.retried_after = first;
        events.on(&RunEvent::UnitEnded {
            unit: &unit,
            total,
            record: &record,
            slot: ended.slot,
        })?;
        Ok(None)
    }
}

/// The boot loop's slots: the attempt each one runs, and where the loop
/// stands in the plan and with the precision rule.
struct SlotsState {
    under_way: Vec<Option<Attempt>>,
    /// (variant, slot) of every boot started, for the slots' balance.
    booted: Vec<(String, usize)>,
    /// The queue's next unit to start.
    next: usize,
    interrupted: bool,
    /// Whether the precision rule may still add blocks, and whether it
    /// waits for the boots under way before it says more.
    adding: bool,
    waiting: bool,
}

/// A slot's guest that is gone: how its boot ended and the host's load
/// beside markbench's own before and after it.
struct Ended {
    slot: usize,
    outcome: BootOutcome,
    loads: (f64, f64),
}

/// The run's metadata as the boot loop starts, with the directory ready: a
/// new run's files written, or a resumed run's unfinished boots dropped (and
/// the event that says so).
fn begin(
    suite: &Suite,
    total: usize,
    start: Start,
    images: &Images,
    dir: &Path,
) -> Result<(RunMeta, Option<RunEvent<'static>>)> {
    let layout = RunDir::new(dir);
    match start {
        Start::Resume(mut meta) => {
            meta.boots.retain(|b| b.ok());
            let done: std::collections::BTreeSet<_> =
                meta.boots.iter().map(BootRecord::key).collect();
            let dropped_samples =
                crate::record::retain_samples(dir, |s| done.contains(&s.boot_key()))?;
            meta.complete = false;
            // A run begun before sizes were recorded gets them now: the
            // kernels are the ones it started with.
            if SizeRecord::read(dir)?.is_none() {
                images.sizes.write(dir)?;
            }
            let event = RunEvent::Resumed {
                done: meta.boots.len(),
                total,
                dropped_samples,
            };
            Ok((meta, Some(event)))
        }
        Start::New(meta) => {
            std::fs::write(layout.diffconfig(), &images.diffconfig)?;
            if !images.source_diff.is_empty() {
                std::fs::write(layout.source_diff(), &images.source_diff)?;
            }
            images.sizes.write(dir)?;
            std::fs::write(layout.suite_copy(), &suite.text)
                .with_context(|| format!("keeping a copy of the suite in {}", dir.display()))?;
            keep_fragments(images, dir)?;
            Ok((meta, None))
        }
    }
}

fn keep_fragments(images: &Images, dir: &Path) -> Result<()> {
    let copies = RunDir::new(dir).fragments_copy();
    std::fs::create_dir_all(&copies).with_context(|| format!("creating {}", copies.display()))?;
    for f in images.fragments.iter().flatten() {
        let path = copies.join(&f.file_name);
        std::fs::write(&path, &f.text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn unit(variant: &str, cpus: u32, boot: u32) -> Unit {
        Unit {
            index: 0,
            side: 0,
            variant: variant.into(),
            cpus,
            boot,
            steps: Vec::new(),
        }
    }

    #[test]
    fn a_boot_record_keeps_seconds_to_a_tenth() {
        assert_eq!(tenths(Duration::from_millis(1_249)), 1.2);
        assert_eq!(tenths(Duration::from_millis(1_250)), 1.3);
        assert_eq!(tenths(Duration::ZERO), 0.0);
    }

    #[test]
    fn the_hosts_reading_of_a_failed_run_wins_over_the_agents() {
        let one = unit("on", 1, 0);
        let error = |message: &str| BootEnd::AgentError {
            message: message.into(),
        };
        assert_eq!(
            unit_end(&one, BootEnd::Completed, None, "0"),
            BootEnd::Completed
        );
        let host = Some("exited with status 3: no such file".to_string());
        assert_eq!(
            unit_end(&one, BootEnd::Completed, host.clone(), "0"),
            error("exited with status 3: no such file")
        );
        assert_eq!(
            unit_end(&one, error("command failed"), host.clone(), "0"),
            error("exited with status 3: no such file")
        );
        // A boot that never got so far keeps its own ending.
        let timed_out = BootEnd::TimedOut { after_s: 60 };
        assert_eq!(unit_end(&one, timed_out.clone(), host, "0"), timed_out);
    }

    #[test]
    fn a_guest_that_saw_other_cpus_than_asked_for_failed() {
        assert_eq!(
            unit_end(&unit("on", 4, 0), BootEnd::Completed, None, "0-3"),
            BootEnd::Completed
        );
        let BootEnd::AgentError { message } =
            unit_end(&unit("on", 4, 0), BootEnd::Completed, None, "0-1")
        else {
            panic!("a guest on 2 CPUs of 4 completed");
        };
        assert_eq!(message, r#"guest saw CPUs "0-1", expected "0-3""#);
        assert!(!unit_end(&unit("on", 1, 0), BootEnd::Completed, None, "0-1").is_ok());
        // A boot that failed is not also blamed for its CPUs.
        let panic = BootEnd::KernelPanic {
            detail: "oops".into(),
        };
        assert_eq!(unit_end(&unit("on", 2, 0), panic.clone(), None, ""), panic);
    }

    #[test]
    fn a_unit_names_its_boot() {
        assert_eq!(
            unit_key(&unit("markers-on", 2, 3)),
            BootKey {
                variant: "markers-on".into(),
                cpus: 2,
                boot: 3,
            }
        );
    }

    #[test]
    fn a_variant_boots_in_the_free_slot_that_booted_it_least() {
        assert_eq!(slot_for(&[], "on", &[]), None);
        assert_eq!(slot_for(&[2, 0, 1], "on", &[]), Some(0));
        let booted = [("on".to_string(), 0), ("off".to_string(), 1)];
        assert_eq!(slot_for(&[0, 1], "on", &booted), Some(1));
        assert_eq!(slot_for(&[0, 1], "off", &booted), Some(0));
        // Every free slot booted it as often: the lowest.
        let twice = [("on".to_string(), 0), ("on".to_string(), 1)];
        assert_eq!(slot_for(&[1, 0], "on", &twice), Some(0));
        assert_eq!(slot_for(&[1], "on", &twice), Some(1));
    }

    #[test]
    fn a_run_directory_has_one_writer_at_a_time() {
        let tmp = tempfile::tempdir().unwrap();
        let held = RunLock::acquire(tmp.path()).unwrap();
        assert_eq!(held.dir(), tmp.path());
        assert!(RunLock::acquire(tmp.path()).is_err());
        drop(held);
        assert!(!RunDir::new(tmp.path()).lock().exists());
        // A lock whose process is gone is taken over.
        std::fs::write(RunDir::new(tmp.path()).lock(), "4294967295").unwrap();
        assert!(RunLock::acquire(tmp.path()).is_ok());
    }
}
