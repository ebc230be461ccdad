//! Progress of a run on a terminal: indicatif bars for the whole run (with
//! ETA) and the current boot. Where stderr is not a terminal (CI logs) the
//! run's observer (`report::terminal::Terminal`) writes plain lines instead.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

pub struct Progress {
    _multi: MultiProgress,
    overall: ProgressBar,
    /// One line per slot: the boot it runs.
    slots: Vec<ProgressBar>,
}

impl Progress {
    /// The bars of a run of `total` boots, `done` of them already finished
    /// (a resume), booted `jobs` at once; `None` when stderr is not a
    /// terminal.
    pub fn new(total: usize, done: usize, jobs: usize) -> Option<Progress> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let multi = MultiProgress::new();
        let overall = multi.add(ProgressBar::new(total as u64));
        overall.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} boots{msg}  {elapsed_precise} elapsed, ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        overall.set_position(done as u64);
        let slots = (0..jobs.max(1))
            .map(|_| {
                let slot = multi.add(ProgressBar::new_spinner());
                slot.set_style(
                    ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                slot.enable_steady_tick(Duration::from_millis(200));
                slot
            })
            .collect();
        Some(Progress {
            _multi: multi,
            overall,
            slots,
        })
    }

    /// The run now has `total` boots (a run with a precision target adds some).
    pub fn grow(&self, total: usize) {
        self.overall.set_length(total as u64);
    }

    /// Slot `slot` boots what `text` says.
    pub fn start_boot(&self, slot: usize, text: &str) {
        if let Some(bar) = self.slots.get(slot) {
            bar.reset_elapsed();
            bar.set_message(text.to_string());
        }
        self.show_running();
    }

    /// "(2 running)" beside the count, when boots run side by side.
    fn show_running(&self) {
        if self.slots.len() > 1 {
            let running = self
                .slots
                .iter()
                .filter(|b| !b.message().is_empty())
                .count();
            self.overall.set_message(format!(", {running} running"));
        }
    }

    /// A line that stays, above the bars.
    pub fn note(&self, text: &str) {
        self.overall.println(crate::base::message::line(text));
    }

    /// Slot `slot`'s boot ended as `text` says.
    pub fn finish_boot(&self, slot: usize, text: &str) {
        self.note(text);
        if let Some(bar) = self.slots.get(slot) {
            bar.set_message(String::new());
        }
        self.overall.inc(1);
        self.show_running();
    }

    pub fn finish(&self) {
        for bar in &self.slots {
            bar.finish_and_clear();
        }
        self.overall.finish();
    }
}

/// One long step of preparing a run (a kernel build, unpacking or
/// mirroring a source tree): on a terminal a bar of items done out of the
/// expected count with the elapsed time and an estimate, elsewhere (a CI
/// log) a line about every minute. Without an expected count it shows the
/// count and the elapsed time only.
pub struct Step {
    label: String,
    unit: &'static str,
    expected: Option<u64>,
    started: std::time::Instant,
    bar: Option<ProgressBar>,
    log_every: Duration,
    last_line: std::time::Instant,
    done: u64,
}

impl Step {
    /// How often a step says where it is when stderr is not a terminal.
    pub const LOG_EVERY: Duration = Duration::from_secs(60);

    /// Starts a step; a bar when stderr is a terminal, lines otherwise.
    pub fn start(label: impl Into<String>, unit: &'static str, expected: Option<u64>) -> Step {
        let target = if std::io::stderr().is_terminal() {
            Some(indicatif::ProgressDrawTarget::stderr())
        } else {
            None
        };
        Step::with_target(label, unit, expected, target, Step::LOG_EVERY)
    }

    /// A step drawn on `target` (a bar), or without one logging a line
    /// every `log_every`.
    pub fn with_target(
        label: impl Into<String>,
        unit: &'static str,
        expected: Option<u64>,
        target: Option<indicatif::ProgressDrawTarget>,
        log_every: Duration,
    ) -> Step {
        let label = label.into();
        let bar = target.map(|target| {
            let bar = match expected {
                Some(n) => ProgressBar::with_draw_target(Some(n), target),
                None => ProgressBar::with_draw_target(None, target),
            };
            let template = match expected {
                Some(_) => format!(
                    "{{spinner}} {label}: {{bar:25}} {{pos}}/~{{len}} {unit}  {{elapsed}}, about {{eta}} left"
                ),
                None => format!("{{spinner}} {label}: {{pos}} {unit}  {{elapsed}}"),
            };
            bar.set_style(
                ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        let now = std::time::Instant::now();
        Step {
            label,
            unit,
            expected,
            started: now,
            bar,
            log_every,
            last_line: now,
            done: 0,
        }
    }

    /// `done` items of the step are finished.
    pub fn set(&mut self, done: u64) {
        self.done = done;
        match &self.bar {
            Some(bar) => {
                // The estimate may be short: the bar grows rather than
                // stopping at a count it has passed.
                if self.expected.is_some_and(|n| done > n) {
                    bar.set_length(done);
                }
                bar.set_position(done);
            }
            None => {
                if self.last_line.elapsed() >= self.log_every {
                    self.last_line = std::time::Instant::now();
                    crate::base::message::note(format_args!("{}", self.line()));
                }
            }
        }
    }

    /// Where the step is, as one line: "building kernel markers-off: 412
    /// of about 1100 objects (37%), 3 min 10 s, about 5 min 23 s left".
    pub fn line(&self) -> String {
        let elapsed = self.started.elapsed();
        let mut text = format!("{}: {}", self.label, self.done);
        match self.expected {
            Some(expected) if self.done < expected => {
                text.push_str(&format!(
                    " of about {expected} {} ({}%), {}",
                    self.unit,
                    self.done * 100 / expected.max(1),
                    minutes(elapsed)
                ));
                if self.done > 0 {
                    let left = elapsed.mul_f64((expected - self.done) as f64 / self.done as f64);
                    text.push_str(&format!(", about {} left", minutes(left)));
                }
            }
            _ => text.push_str(&format!(" {}, {}", self.unit, minutes(elapsed))),
        }
        text
    }

    /// The step is over: the bar is cleared (the caller says how it ended).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// The bar, for tests that draw it.
    pub fn bar(&self) -> Option<&ProgressBar> {
        self.bar.as_ref()
    }
}

/// A duration as a person reads it in a log: "45 s", "3 min 10 s".
pub fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s} s")
    } else {
        format!("{} min {} s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_line_gives_the_count_the_share_and_an_estimate() {
        let mut step = Step::with_target(
            "building kernel k",
            "objects",
            Some(1000),
            None,
            Duration::MAX,
        );
        step.started -= Duration::from_secs(100);
        step.set(250);
        let line = step.line();
        assert!(
            line.starts_with("building kernel k: 250 of about 1000 objects (25%), 1 min 40 s"),
            "{line}"
        );
        // A quarter done in 100 s: three quarters more take about 300 s.
        assert!(
            line.contains("about 5 min 0 s left") || line.contains("about 5 min 1 s left"),
            "{line}"
        );
    }

    #[test]
    fn past_its_estimate_or_without_one_a_step_counts_and_times() {
        let mut step = Step::with_target("unpacking", "files", None, None, Duration::MAX);
        step.set(42);
        assert_eq!(step.line(), "unpacking: 42 files, 0 s");
        let mut step = Step::with_target(
            "building kernel k",
            "objects",
            Some(10),
            None,
            Duration::MAX,
        );
        step.set(12);
        assert_eq!(step.line(), "building kernel k: 12 objects, 0 s");
    }

    #[test]
    fn on_a_terminal_the_bar_follows_the_count_and_grows_past_a_short_estimate() {
        let mut step = Step::with_target(
            "building kernel k",
            "objects",
            Some(100),
            Some(indicatif::ProgressDrawTarget::hidden()),
            Step::LOG_EVERY,
        );
        step.set(40);
        let bar = step.bar().expect("a bar on a terminal");
        assert_eq!((bar.position(), bar.length()), (40, Some(100)));
        step.set(130);
        let bar = step.bar().unwrap();
        assert_eq!((bar.position(), bar.length()), (130, Some(130)));
        step.finish();
        assert!(step.bar().unwrap().is_finished());
    }

    #[test]
    fn minutes_read_as_a_person_reads_them() {
        assert_eq!(minutes(Duration::from_secs(45)), "45 s");
        assert_eq!(minutes(Duration::from_secs(190)), "3 min 10 s");
    }
}
