//! Lines markbench writes to stderr for a person: every one begins with the
//! program's name, and that prefix is written here alone.

use std::fmt::Display;

/// `text` as a line of markbench's (without the newline).
pub fn line(text: impl Display) -> String {
    format!("markbench: {text}")
}

/// Writes `text` to stderr as a line of markbench's.
pub fn note(text: impl Display) {
    eprintln!("{}", line(text));
}

/// Writes `text` to stderr as a warning of markbench's.
pub fn warning(text: impl Display) {
    note(format_args!("WARNING: {text}"));
}

/// Writes `text` to stderr as an error of markbench's.
pub fn error(text: impl Display) {
    note(format_args!("error: {text}"));
}
