//! What is wrong with the output of a timed run that exited 0, as its
//! workload's parser found it: the workload, the line of the guest's output
//! it failed on (when one line is to blame) and what was wrong or expected
//! there. A sample that cannot be trusted is not a sample, so the run loop
//! records this instead, worded once here.

/// A workload's output that does not read as a successful run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct OutputError {
    /// The workload's kind, as a suite names it (`hackbench`, `micro`).
    pub workload: &'static str,
    /// The line of the output the parser failed on, when one is to blame.
    pub line: Option<OutputLine>,
    /// What was wrong, or what was expected and not found.
    pub problem: String,
    /// The output (or its end) shown after the problem, when no one line
    /// says enough.
    pub output: Option<String>,
}

/// One line of a run's output.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputLine {
    /// Its number in the output, from 1.
    pub number: usize,
    /// Its text.
    pub text: String,
}

impl OutputError {
    /// `problem` with the output as a whole (something missing from it).
    pub fn new(workload: &'static str, problem: impl Into<String>) -> Self {
        OutputError {
            workload,
            line: None,
            problem: problem.into(),
            output: None,
        }
    }

    /// `problem` on line `number` (from 1) of the output, whose text is `text`.
    pub fn at_line(
        workload: &'static str,
        number: usize,
        text: &str,
        problem: impl Into<String>,
    ) -> Self {
        OutputError {
            line: Some(OutputLine {
                number,
                text: text.to_string(),
            }),
            ..OutputError::new(workload, problem)
        }
    }

    /// The same error, showing `output` after it.
    pub fn with_output(self, output: impl Into<String>) -> Self {
        OutputError {
            output: Some(output.into()),
            ..self
        }
    }
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.workload)?;
        match &self.line {
            Some(line) => write!(
                f,
                "line {} of the output: {}: {:?}",
                line.number, self.problem, line.text
            )?,
            None => f.write_str(&self.problem)?,
        }
        if let Some(output) = &self.output {
            if output.contains('\n') {
                write!(f, "; the output ends:\n{output}")?;
            } else {
                write!(f, "; output: {output}")?;
            }
        }
        Ok(())
    }
}

/// The line of `output` holding byte `offset`: its number (from 1) and text.
pub fn line_at(output: &str, offset: usize) -> (usize, &str) {
    let offset = offset.min(output.len());
    let start = output[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = output[offset..]
        .find('\n')
        .map_or(output.len(), |i| offset + i);
    let number = output[..offset].matches('\n').count() + 1;
    (number, &output[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_the_workload_the_line_and_what_was_wrong() {
        let e = OutputError::at_line("micro", 3, "markbench-micro loop=x", "unknown loop \"x\"");
        assert_eq!(
            e.to_string(),
            "micro: line 3 of the output: unknown loop \"x\": \"markbench-micro loop=x\""
        );
        let e = OutputError::new("hackbench", "no `Time:` line").with_output("oops");
        assert_eq!(e.to_string(), "hackbench: no `Time:` line; output: oops");
    }

    #[test]
    fn line_at_counts_from_one() {
        let text = "a\nbb\ncc";
        assert_eq!(line_at(text, 0), (1, "a"));
        assert_eq!(line_at(text, 3), (2, "bb"));
        assert_eq!(line_at(text, 6), (3, "cc"));
    }
}
