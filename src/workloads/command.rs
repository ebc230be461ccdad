//! A command of the suite's own, run in the guest and timed: for a
//! micro-benchmark that is not built in, and for the fault tests (a command
//! that crashes the kernel through sysrq, hangs, or fails). Metric: `time`,
//! seconds of the agent's CLOCK_MONOTONIC, lower is better. The parameter is
//! substituted for `{param}` in the arguments.

use super::Measurement;
use crate::protocol::RunRecord;
use crate::suite::CommandSpec;

pub fn command(spec: &CommandSpec, param: u64) -> Vec<String> {
    spec.argv
        .iter()
        .map(|a| a.replace("{param}", &param.to_string()))
        .collect()
}

pub fn measure(record: &RunRecord) -> Result<Vec<Measurement>, String> {
    Ok(vec![Measurement::elapsed_time(record)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_is_substituted() {
        let spec = CommandSpec {
            params: vec![3],
            argv: vec!["/bin/busybox".into(), "sleep".into(), "{param}".into()],
            iterations: None,
            warmup: None,
            cpus: None,
        };
        assert_eq!(command(&spec, 3), ["/bin/busybox", "sleep", "3"]);
    }
}
