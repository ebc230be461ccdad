//! markbench's exit statuses, named once: scripts and CI jobs branch on
//! them, so each code has one meaning, the same in every command. A
//! failure of the machinery (1) never shares a code with a verdict (3 to
//! 7): a script can tell "markbench could not answer" from "the answer is
//! no". docs/commands.md ("Exit status") shows the same table.

use crate::base::error::Error;

/// How a markbench command ended, as its exit status tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything ran and no verdict went against it.
    Success,
    /// The machinery failed: a kernel that does not build, QEMU missing,
    /// a file that cannot be written. Nothing was decided.
    Machinery,
    /// Input the user must fix: a bad suite, option, patch or directory.
    Input,
    /// The run finished but did not measure everything: a boot failed, or
    /// a merged shard did not finish.
    Incomplete,
    /// `nightly`: a significant regression beyond the suite's margin.
    Regression,
    /// `bisect`: GOOD and BAD do not differ by a regression to bisect.
    NoRegression,
    /// `noise-floor`: a noise or resolution target was missed.
    TargetMissed,
    /// `cache --verify`: an entry of the cache is damaged.
    CacheDamaged,
    /// Interrupted (Ctrl-C): what was measured is kept; `--resume` continues.
    Interrupted,
}

impl ExitStatus {
    /// Every status, in the order of their codes.
    pub const ALL: [ExitStatus; 9] = [
        ExitStatus::Success,
        ExitStatus::Machinery,
        ExitStatus::Input,
        ExitStatus::Incomplete,
        ExitStatus::Regression,
        ExitStatus::NoRegression,
        ExitStatus::TargetMissed,
        ExitStatus::CacheDamaged,
        ExitStatus::Interrupted,
    ];

    /// The process's exit code.
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Machinery => 1,
            ExitStatus::Input => 2,
            ExitStatus::Incomplete => 3,
            ExitStatus::Regression => 4,
            ExitStatus::NoRegression => 5,
            ExitStatus::TargetMissed => 6,
            ExitStatus::CacheDamaged => 7,
            // 128 + SIGINT, what a shell reports for a process Ctrl-C ended.
            ExitStatus::Interrupted => 130,
        }
    }

    /// What the code means, in one line: how its row of docs/commands.md's
    /// table begins (`tests/exit_table.rs` holds the two together).
    pub fn meaning(self) -> &'static str {
        match self {
            ExitStatus::Success => "success",
            ExitStatus::Machinery => "the machinery failed, nothing was decided",
            ExitStatus::Input => "input to fix",
            ExitStatus::Incomplete => "the run finished but did not measure everything",
            ExitStatus::Regression => "a significant regression beyond the suite's margin",
            ExitStatus::NoRegression => "no regression to bisect",
            ExitStatus::TargetMissed => "a noise-floor target was missed",
            ExitStatus::CacheDamaged => "a cache entry is damaged",
            ExitStatus::Interrupted => "interrupted (Ctrl-C)",
        }
    }

    /// Whether the status is a verdict on what was measured or checked
    /// (as opposed to success, or a command that could not finish).
    #[cfg(test)]
    fn is_verdict(self) -> bool {
        matches!(
            self,
            ExitStatus::Incomplete
                | ExitStatus::Regression
                | ExitStatus::NoRegression
                | ExitStatus::TargetMissed
                | ExitStatus::CacheDamaged
        )
    }

    /// The status of a command that finished with `self`: interrupted when
    /// Ctrl-C was pressed while it ran (`interrupted`), whatever it had
    /// decided by then, so that Ctrl-C is 130 in every command.
    pub fn or_interrupted(self, interrupted: bool) -> ExitStatus {
        if interrupted {
            ExitStatus::Interrupted
        } else {
            self
        }
    }

    /// The status a command that failed with `e` ends with: its variant's,
    /// or interrupted whatever the error when Ctrl-C was pressed
    /// (`interrupted`), since a failure after Ctrl-C is its doing.
    pub fn of_error(e: &Error, interrupted: bool) -> ExitStatus {
        if interrupted {
            return ExitStatus::Interrupted;
        }
        match e {
            Error::Input(_) => ExitStatus::Input,
            Error::Machinery(_) => ExitStatus::Machinery,
            Error::Interrupted(_) => ExitStatus::Interrupted,
        }
    }
}

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.code(), self.meaning())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::{Context, InputError, Interrupted};

    #[test]
    fn each_code_has_one_meaning() {
        let mut codes: Vec<i32> = ExitStatus::ALL.iter().map(|s| s.code()).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        assert_eq!(codes, sorted, "ALL is in the order of the codes");
        codes.dedup();
        assert_eq!(
            codes.len(),
            ExitStatus::ALL.len(),
            "two statuses share a code"
        );
        let mut meanings: Vec<&str> = ExitStatus::ALL.iter().map(|s| s.meaning()).collect();
        meanings.sort_unstable();
        meanings.dedup();
        assert_eq!(meanings.len(), ExitStatus::ALL.len());
    }

    #[test]
    fn the_codes_scripts_knew_keep_their_meaning() {
        assert_eq!(ExitStatus::Success.code(), 0);
        assert_eq!(ExitStatus::Machinery.code(), 1);
        assert_eq!(ExitStatus::Input.code(), 2);
        assert_eq!(ExitStatus::Incomplete.code(), 3);
        assert_eq!(ExitStatus::Interrupted.code(), 130);
    }

    #[test]
    fn a_machinery_failure_never_shares_a_code_with_a_verdict() {
        for status in ExitStatus::ALL {
            if status.is_verdict() {
                assert_ne!(status.code(), ExitStatus::Machinery.code(), "{status}");
                assert_ne!(status.code(), ExitStatus::Input.code(), "{status}");
                assert_ne!(status.code(), ExitStatus::Success.code(), "{status}");
            }
        }
        assert!(!ExitStatus::Machinery.is_verdict());
        assert!(!ExitStatus::Interrupted.is_verdict());
    }

    #[test]
    fn each_variant_ends_with_its_code() {
        let input = Error::from(InputError::new("unknown key"));
        assert_eq!(ExitStatus::of_error(&input, false).code(), 2);
        let stopped = Error::from(Interrupted::new("the round was interrupted"));
        assert_eq!(ExitStatus::of_error(&stopped, false).code(), 130);
        let broken = Error::msg("make exited with status 2");
        assert_eq!(ExitStatus::of_error(&broken, false).code(), 1);
        let io = Error::from(std::io::Error::from_raw_os_error(libc::EIO));
        assert_eq!(ExitStatus::of_error(&io, false).code(), 1);
        // A failure after Ctrl-C is the interruption's doing.
        for e in [input, stopped, broken] {
            assert_eq!(ExitStatus::of_error(&e, true), ExitStatus::Interrupted);
        }
    }

    #[test]
    fn context_added_on_the_way_up_keeps_the_class() {
        let read = || -> crate::base::error::Result<()> {
            Err(InputError::at_line(
                std::path::Path::new("suite.toml"),
                3,
                "unknown key",
            ))?
        };
        let wrapped = read()
            .context("reading the suite")
            .context("comparing")
            .unwrap_err();
        assert_eq!(ExitStatus::of_error(&wrapped, false), ExitStatus::Input);
        assert_eq!(
            format!("{wrapped:#}"),
            "comparing: reading the suite: suite.toml:3: unknown key"
        );
        assert_eq!(wrapped.to_string(), "comparing");

        let stopped = Err::<(), _>(Error::from(Interrupted::new("the round was interrupted")))
            .context("bisecting")
            .unwrap_err();
        assert_eq!(
            ExitStatus::of_error(&stopped, false),
            ExitStatus::Interrupted
        );
        assert_eq!(
            format!("{stopped:#}"),
            "bisecting: the round was interrupted"
        );

        let broken = Err::<(), _>(std::io::Error::from_raw_os_error(libc::EIO))
            .context("reading samples.csv")
            .unwrap_err();
        assert_eq!(ExitStatus::of_error(&broken, false), ExitStatus::Machinery);
        assert!(
            format!("{broken:#}").starts_with("reading samples.csv: Input/output error"),
            "{broken:#}"
        );
        let none = None::<()>.context("no slots").unwrap_err();
        assert_eq!(ExitStatus::of_error(&none, false), ExitStatus::Machinery);
    }

    #[test]
    fn ctrl_c_ends_every_command_as_interrupted() {
        for status in ExitStatus::ALL {
            assert_eq!(status.or_interrupted(true), ExitStatus::Interrupted);
            assert_eq!(status.or_interrupted(false), status);
        }
    }

    #[test]
    fn the_status_shows_its_code_and_meaning() {
        assert_eq!(
            ExitStatus::Regression.to_string(),
            "4 (a significant regression beyond the suite's margin)"
        );
    }
}
