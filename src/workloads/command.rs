//! A command of the suite's own, run in the guest and timed: for a
//! micro-benchmark that is not built in, and for the fault tests (a command
//! that crashes the kernel through sysrq, hangs, or fails). Metric: `time`,
//! seconds of the agent's CLOCK_MONOTONIC, lower is better. The parameter is
//! substituted for `{param}` in the arguments.

use super::{Guest, Measurement, Refusal, Workload};
use crate::protocol::RunRecord;
use serde::{Deserialize, Serialize};

/// The command's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// Absolute path of a program in the guest image, then its arguments.
    pub argv: Vec<String>,
}

impl Workload for CommandSpec {
    const PARAM_LABEL: &'static str = "param";

    fn check(&self, _params: &[u64], _guest: Guest<'_>) -> Result<(), Refusal> {
        // The agent's job file is one line per directive, tab-separated.
        if self.argv.first().is_none_or(|a| !a.starts_with('/'))
            || self.argv.iter().any(|a| a.contains(['\t', '\n', '\r']))
        {
            return Err(
                "command: argv must start with an absolute path and hold no tabs or newlines"
                    .to_string()
                    .into(),
            );
        }
        Ok(())
    }

    /// What the command does with its parameter is its own: nothing to scale.
    fn scale(&mut self, _params: &mut Vec<u64>, _factor: f64) {}

    fn command(&self, param: u64) -> Vec<String> {
        self.argv
            .iter()
            .map(|a| a.replace("{param}", &param.to_string()))
            .collect()
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, String> {
        Ok(vec![Measurement::elapsed_time(record)])
    }

    fn describe(&self, params: &str) -> String {
        let text = self.argv.join(" ");
        if text.contains("{param}") {
            format!("{text} with {{param}} = {params}")
        } else {
            format!("{text} (param {params})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_is_substituted() {
        let spec = CommandSpec {
            argv: vec!["/bin/busybox".into(), "sleep".into(), "{param}".into()],
        };
        assert_eq!(spec.command(3), ["/bin/busybox", "sleep", "3"]);
        assert_eq!(
            spec.describe("{1, 3}"),
            "/bin/busybox sleep {param} with {param} = {1, 3}"
        );
    }
}
