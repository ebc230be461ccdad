//! What a command can end with when it cannot finish, as one closed type:
//! input the user must fix (a bad suite, an unknown workload, a missing
//! kernel source; exit status 2), a failure of the machinery (1) with its
//! source, or a stop by Ctrl-C (130). `exit::ExitStatus::of_error` maps
//! each variant to its status by a match.
//!
//! The class is carried by type from where an error is made to the
//! command, never found afterwards by looking inside: neither [`Error`]
//! nor [`InputError`] nor [`Interrupted`] is a `std::error::Error`, so none
//! can be boxed into an `anyhow::Error` by `?` and lose its class on the
//! way up. Every function on a path from input to a job returns
//! [`Result`]; [`Context`] adds what was being done and keeps the variant.
//! `anyhow` stays inside the machinery: any `std::error::Error` or
//! `anyhow::Error` becomes [`Error::Machinery`] with `?`.
//!
//! A verdict (exit 3 to 7: a boot failed, a regression, no regression to
//! bisect, a missed target, a damaged cache entry) is not an error: it is
//! the answer of a command that finished, returned as `Ok(ExitStatus)`, so
//! `?` never passes one off as a failure and a failure never as a verdict.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a command could not finish.
pub enum Error {
    /// Input the user must fix (exit status 2).
    Input(InputError),
    /// The machinery failed (exit status 1): a kernel that does not build,
    /// QEMU missing, a disk that fails a read. The source is kept, with the
    /// context added on the way up.
    Machinery(anyhow::Error),
    /// The user pressed Ctrl-C (exit status 130).
    Interrupted(Interrupted),
}

/// A result whose error is the closed [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A failure of the machinery saying `message`.
    pub fn msg(message: impl fmt::Display + fmt::Debug + Send + Sync + 'static) -> Error {
        Error::Machinery(anyhow::Error::msg(message))
    }

    /// The error with `context` (what was being done) in front of it; the
    /// variant is kept.
    pub fn context(self, context: impl fmt::Display + Send + Sync + 'static) -> Error {
        match self {
            Error::Input(mut e) => {
                e.context.push(context.to_string());
                Error::Input(e)
            }
            Error::Machinery(e) => Error::Machinery(e.context(context)),
            Error::Interrupted(mut e) => {
                e.context.push(context.to_string());
                Error::Interrupted(e)
            }
        }
    }

    /// The failure of the machinery inside, if this is one (to look at its
    /// source).
    pub fn machinery(&self) -> Option<&anyhow::Error> {
        match self {
            Error::Machinery(e) => Some(e),
            _ => None,
        }
    }
}

/// Rendered as `anyhow` renders an error: `{}` the outermost context (or
/// the error when there is none), `{:#}` the whole chain joined by `: `.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(e) => fmt::Display::fmt(e, f),
            Error::Machinery(e) => fmt::Display::fmt(e, f),
            Error::Interrupted(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(e) => write!(f, "Input({e:#})"),
            Error::Machinery(e) => write!(f, "Machinery({e:?})"),
            Error::Interrupted(e) => write!(f, "Interrupted({e:#})"),
        }
    }
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Input(e)
    }
}

impl From<Interrupted> for Error {
    fn from(e: Interrupted) -> Self {
        Error::Interrupted(e)
    }
}

/// Any error of a library or the system (anything `anyhow` takes, and an
/// `anyhow::Error` itself) is the machinery's; input is recognised where
/// it is read (`input_file::io_failure`), never here.
impl<E: Into<anyhow::Error>> From<E> for Error {
    fn from(e: E) -> Self {
        Error::Machinery(e.into())
    }
}

/// `.context(…)` and `.with_context(|| …)` on a result or an option: what
/// was being done, in front of the error. A [`Result`] keeps its variant;
/// a `std::error::Error` or a `None` becomes a failure of the machinery.
pub trait Context<T> {
    fn context<C>(self, context: C) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static;

    fn with_context<C, F>(self, context: F) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C;
}

impl<T> Context<T> for Result<T> {
    fn context<C>(self, context: C) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        self.map_err(|e| e.context(context))
    }

    fn with_context<C, F>(self, context: F) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.map_err(|e| e.context(context()))
    }
}

impl<T> Context<T> for Result<T, InputError> {
    fn context<C>(self, context: C) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        self.map_err(|e| Error::Input(e).context(context))
    }

    fn with_context<C, F>(self, context: F) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.map_err(|e| Error::Input(e).context(context()))
    }
}

impl<T, E: Into<anyhow::Error>> Context<T> for Result<T, E> {
    fn context<C>(self, context: C) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        self.map_err(|e| Error::Machinery(e.into().context(context)))
    }

    fn with_context<C, F>(self, context: F) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.map_err(|e| Error::Machinery(e.into().context(context())))
    }
}

impl<T> Context<T> for Option<T> {
    fn context<C>(self, context: C) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        self.ok_or_else(|| Error::Machinery(anyhow::Error::msg(context.to_string())))
    }

    fn with_context<C, F>(self, context: F) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.ok_or_else(|| Error::Machinery(anyhow::Error::msg(context().to_string())))
    }
}

/// Returns early with a failure of the machinery worded as `format!` words
/// it.
macro_rules! bail {
    ($($arg:tt)*) => {
        return ::std::result::Result::Err($crate::base::error::Error::Machinery(
            ::anyhow::anyhow!($($arg)*),
        ))
    };
}
pub(crate) use bail;

/// Renders `base` after the contexts (outermost last in `context`) the way
/// `anyhow` renders its chain: `{}` the outermost alone, `{:#}` all.
fn fmt_chain(
    f: &mut fmt::Formatter<'_>,
    context: &[String],
    base: impl FnOnce(&mut fmt::Formatter<'_>) -> fmt::Result,
) -> fmt::Result {
    match context.last() {
        Some(outermost) if !f.alternate() => f.write_str(outermost),
        _ => {
            for c in context.iter().rev() {
                write!(f, "{c}: ")?;
            }
            base(f)
        }
    }
}

/// A problem with what the user asked for, as opposed to a failure of the
/// machinery. The file and the position in it, where known, are kept apart
/// from the message (a caller may point at them), and rendered in front of
/// it: `file:line:col: message`.
#[derive(Debug)]
pub struct InputError {
    /// The file the problem is in, when it is in one.
    pub file: Option<PathBuf>,
    /// Where in the file, when known: the 1-based line, and the column in
    /// characters where that is known too.
    pub line: Option<usize>,
    pub col: Option<usize>,
    /// What is wrong, without the file and position.
    pub message: String,
    /// What was being done when it was found, innermost first (rendered
    /// outermost first, in front of the file).
    pub context: Vec<String>,
}

impl InputError {
    /// An error in no one file (an option, a name given on the command line).
    pub fn new(message: impl Into<String>) -> Self {
        InputError {
            file: None,
            line: None,
            col: None,
            message: message.into(),
            context: Vec::new(),
        }
    }

    /// An error about the file `path` as a whole, rendered `file: message`.
    pub fn in_file(path: &Path, message: impl fmt::Display) -> Self {
        InputError {
            file: Some(path.to_path_buf()),
            ..InputError::new(message.to_string())
        }
    }

    /// An error on a line (1-based) of `path`, rendered `file:line: message`.
    pub fn at_line(path: &Path, line: usize, message: impl fmt::Display) -> Self {
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
        message: impl fmt::Display,
    ) -> Self {
        InputError {
            col: Some(col),
            ..InputError::at_line(path, line, message)
        }
    }

    /// An error located in a file at a byte offset, rendered `file:line:col: message`.
    pub fn at(path: &Path, text: &str, offset: usize, message: impl fmt::Display) -> Self {
        InputError::at_line_col(path, line_col(text, offset), message)
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_chain(f, &self.context, |f| {
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
        })
    }
}

/// The user stopped the work with Ctrl-C: what was measured is kept, and
/// the message says how to continue.
#[derive(Debug)]
pub struct Interrupted {
    pub message: String,
    /// What was being done, innermost first, as [`InputError::context`].
    pub context: Vec<String>,
}

impl Interrupted {
    pub fn new(message: impl Into<String>) -> Self {
        Interrupted {
            message: message.into(),
            context: Vec::new(),
        }
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_chain(f, &self.context, |f| f.write_str(&self.message))
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
