//! The errors a caller branches on: input the user must fix (bad suite,
//! unknown workload, missing kernel source; exit status 2) and a stop by
//! Ctrl-C (130). Every other error is a failure of the machinery (1);
//! `exit::ExitStatus::of_error` is the one mapping.

use std::path::Path;

/// A problem with what the user asked for, as opposed to a failure of the
/// machinery. The message names the file and the position where known.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct InputError {
    pub message: String,
}

impl InputError {
    pub fn new(message: impl Into<String>) -> Self {
        InputError {
            message: message.into(),
        }
    }

    /// An error located in a file at a byte offset, rendered `file:line:col: message`.
    pub fn at(path: &Path, text: &str, offset: usize, message: impl std::fmt::Display) -> Self {
        let (line, col) = line_col(text, offset);
        InputError::new(format!("{}:{line}:{col}: {message}", path.display()))
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
}
