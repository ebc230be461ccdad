//! Progress of a run: indicatif bars for the whole run (with ETA) and the
//! current boot when stderr is a terminal; plain, self-contained log lines
//! otherwise (CI logs), one when a boot starts and one when it ends.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

pub enum Progress {
    Bars {
        _multi: MultiProgress,
        overall: ProgressBar,
        current: ProgressBar,
    },
    Plain,
}

impl Progress {
    /// `total` boots in the run, `done` of them already finished (a resume).
    pub fn new(total: usize, done: usize) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress::Plain;
        }
        let multi = MultiProgress::new();
        let overall = multi.add(ProgressBar::new(total as u64));
        overall.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} boots  {elapsed_precise} elapsed, ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        overall.set_position(done as u64);
        let current = multi.add(ProgressBar::new_spinner());
        current.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        current.enable_steady_tick(Duration::from_millis(200));
        Progress::Bars {
            _multi: multi,
            overall,
            current,
        }
    }

    /// The run now has `total` boots (a run with a precision target adds some).
    pub fn grow(&self, total: usize) {
        if let Progress::Bars { overall, .. } = self {
            overall.set_length(total as u64);
        }
    }

    pub fn start_boot(&self, text: &str) {
        match self {
            Progress::Bars { current, .. } => {
                current.reset_elapsed();
                current.set_message(text.to_string());
            }
            Progress::Plain => crate::message::note(format_args!("{text} …")),
        }
    }

    /// A line that stays (above the bars on a terminal).
    pub fn note(&self, text: &str) {
        match self {
            Progress::Bars { overall, .. } => overall.println(crate::message::line(text)),
            Progress::Plain => crate::message::note(format_args!("{text}")),
        }
    }

    pub fn finish_boot(&self, text: &str) {
        self.note(text);
        if let Progress::Bars { overall, .. } = self {
            overall.inc(1);
        }
    }

    pub fn finish(&self) {
        if let Progress::Bars {
            overall, current, ..
        } = self
        {
            current.finish_and_clear();
            overall.finish();
        }
    }
}
