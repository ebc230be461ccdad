//! The errors a caller branches on: input the user must fix (bad suite,
//! unknown workload, missing kernel source; exit status 2) and a stop by
//! Ctrl-C (130). Every other error is a failure of the machinery (1);
//! `exit::ExitStatus::of_error` is the one mapping.

use std::path::{Path, PathBuf};

/// A problem with what the user asked for, as opposed to a failure of the
/// machinery. The file and the position in it, where known, are kept apart
/// from the message (a caller may point at them), and rendered in front of
/// it: `file:line:col: message`.
#[derive(Debug, thiserror::Error)]
pub struct InputError {
    /// The file the problem is in, when it is in one.
    pub file: Option<PathBuf>,
    /// Where in the file, when known: the 1-based line, and the column in
    /// characters where that is known too.
    pub line: Option<usize>,
    pub col: Option<usize>,
    /// What is wrong, without the file and position.
    pub message: String,
}

impl InputError {
    /// An error in no one file (an option, a name given on the command line).
    pub fn new(message: impl Into<String>) -> Self {
        InputError {
            file: None,
            line: None,
            col: None,
            message: message.into(),
        }
    }

    /// An error about the file `path` as a whole, rendered `file: message`.
    pub fn in_file(path: &Path, message: impl std::fmt::Display) -> Self {
        InputError {
            file: Some(path.to_path_buf()),
            ..InputError::new(message.to_string())
        }
    }

    /// An error on a line (1-based) of `path`, rendered `file:line: message`.
    pub fn at_line(path: &Path, line: usize, message: impl std::fmt::Display) -> Self {
        InputError {
            line: Some(line),
            ..InputError::in_file(path, message)
        }
    }

    /// An error at a line and column (1-based) of `path`, rendered
    /// `file:line:col: message`.
    pub fn at_line_col(
        path: &Path,
        (line, col): (usize, usize),
        message: impl std::fmt::Display,
    ) -> Self {
        InputError {
            col: Some(col),
            ..InputError::at_line(path, line, message)
        }
    }

    /// An error located in a file at a byte offset, rendered `file:line:col: message`.
    pub fn at(path: &Path, text: &str, offset: usize, message: impl std::fmt::Display) -> Self {
        InputError::at_line_col(path, line_col(text, offset), message)
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(col) = self.col {
                    write!(f, ":{col}")?;
                }
            }
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}

/// The user stopped the work with Ctrl-C: what was measured is kept, and
/// the message says how to continue.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Interrupted {
    pub message: String,
}

impl Interrupted {
    pub fn new(message: impl Into<String>) -> Self {
        Interrupted {
            message: message.into(),
        }
    }
}

/// `value` when it is at least 1; else why not, naming `what` (a suite
/// key, a command-line option): the one wording of a count that must not be
/// zero, wherever it is given.
pub fn at_least_one<T: Copy + PartialOrd + From<u8>>(value: T, what: &str) -> Result<T, String> {
    if value >= T::from(1) {
        Ok(value)
    } else {
        Err(format!("{what} must be at least 1"))
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit_once('\n')
        .map_or(before, |(_, tail)| tail)
        .chars()
        .count()
        + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 9), (2, 4));
    }

    #[test]
    fn the_file_and_position_are_data_rendered_before_the_message() {
        let path = Path::new("suites/quick.toml");
        let e = InputError::at(path, "a = 1\nbb = x\n", 11, "not a number");
        assert_eq!(e.file.as_deref(), Some(path));
        assert_eq!((e.line, e.col), (Some(2), Some(6)));
        assert_eq!(e.message, "not a number");
        assert_eq!(e.to_string(), "suites/quick.toml:2:6: not a number");
        assert_eq!(
            InputError::at_line(path, 3, "bad").to_string(),
            "suites/quick.toml:3: bad"
        );
        assert_eq!(
            InputError::in_file(path, "empty").to_string(),
            "suites/quick.toml: empty"
        );
        assert_eq!(
            InputError::new("no such kernel").to_string(),
            "no such kernel"
        );
    }
}
