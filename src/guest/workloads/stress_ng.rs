//! stress-ng (Debian's `/usr/bin/stress-ng`): one stressor (`cpu`,
//! `switch`, `futex`, `pipe`, …) run by `workers` processes until together
//! they have done the parameter's count of bogo operations:
//!
//! ```text
//! stress-ng --switch 1 --switch-ops 20000 --metrics-brief --no-rand-seed
//! ```
//!
//! A bogo operation is one turn of the stressor's own loop (for `switch`,
//! one message passed between two processes; for `cpu`, one round of its
//! computations): a unit of work of that stressor and stress-ng version,
//! not comparable across either. stress-ng gives each worker the count
//! divided by the workers, rounded up, so a count that is a multiple of the
//! workers is done exactly.
//!
//! `--metrics-brief` prints a table line for the stressor at the end. Metric:
//! `bogo-ops-per-sec`, its "bogo ops/s (real time)" column (the bogo
//! operations over the workers' mean wall time, guest seconds), higher is
//! better. The "usr+sys time" column beside it is left out: it is CPU time
//! the kernel accounts at tick resolution, coarse for runs of a second.
//!
//! `--no-rand-seed` seeds stress-ng's random numbers with a constant, so the
//! stressors that pick sizes, offsets or methods at random do the same work
//! in every run. Scratch files go to stress-ng's default, the current
//! directory, which the guest agent sets to its tmpfs `/tmp`. Without
//! `--timeout` stress-ng stops a stressor after a day at most; the bogo-op
//! count ends every normal run long before.
//!
//! Under QEMU's icount (the default here) guest time advances with executed
//! instructions (2^shift ns each), so bogo ops per second count the
//! instructions of a bogo operation, its code path length: not cycles or
//! cache effects as real hardware would show them.

use super::{Guest, Measurement, OutputError, Refusal, Workload};
use crate::base::protocol::RunRecord;
use serde::{Deserialize, Serialize};

pub const PROGRAM: &str = "/usr/bin/stress-ng";

/// The largest `--<stressor>-ops` stress-ng 0.15 takes: it refuses more.
pub const MAX_OPS: u64 = 100_000_000;

/// The most workers of one stressor a run may start.
pub const MAX_WORKERS: u64 = 1024;

/// stress-ng's settings. The sweep parameter is the count of bogo
/// operations a run does, over all its workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StressNgSpec {
    /// The stressor, as its option names it (`switch` for `--switch`).
    pub stressor: String,
    /// Worker processes of the stressor (`--<stressor> N`; stress-ng's 0,
    /// one per online CPU, is not taken: the count is the suite's to say).
    #[serde(default = "default_workers")]
    pub workers: u64,
}

fn default_workers() -> u64 {
    1
}

/// The "bogo ops/s (real time)" of `stressor`'s line in a `--metrics-brief`
/// table:
///
/// ```text
/// stress-ng: metrc: [29609] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
/// stress-ng: metrc: [29609]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
/// stress-ng: metrc: [29609] switch            20000      0.13      0.01      0.12    152328.21      152339.17
/// stress-ng: metrc: [29609] switch              6507.86 nanosecs per context switch (pipe method) …
/// ```
///
/// The stressor's line is its name then six numbers (bogo ops, real, usr
/// and sys seconds, the two rates; later versions add columns after them);
/// the "miscellaneous metrics" lines that also start with its name do not
/// have them.
pub fn bogo_ops_per_sec(output: &str, stressor: &str) -> Option<f64> {
    output.lines().find_map(|l| {
        let (_, row) = l.split_once("metrc:")?.1.split_once(']')?;
        let mut words = row.split_whitespace();
        if words.next()? != stressor {
            return None;
        }
        let numbers: Vec<f64> = words.map_while(|w| w.parse().ok()).collect();
        (numbers.len() >= 6).then(|| numbers[4])
    })
}

impl Workload for StressNgSpec {
    const PARAM_LABEL: &'static str = "bogo ops";

    fn check(&self, params: &[u64], _guest: Guest<'_>) -> Result<(), Refusal> {
        let s = &self.stressor;
        // stress-ng's stressors are all named so; anything else would be
        // another option or none.
        if !s.starts_with(|c: char| c.is_ascii_lowercase())
            || !s
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(format!(
                "stress-ng: stressor {s:?} must be a stressor's name as its option spells it \
                 (lowercase letters, digits and -, starting with a letter: \"cpu\", \"switch\")"
            )
            .into());
        }
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            return Err(format!("stress-ng: workers must be 1 to {MAX_WORKERS}").into());
        }
        if let Some(p) = params.iter().find(|&&p| p > MAX_OPS) {
            return Err(format!(
                "stress-ng: params must be at most {MAX_OPS} bogo ops (stress-ng's limit \
                 of --{s}-ops); {p} given"
            )
            .into());
        }
        Ok(())
    }

    /// A run's work is its bogo-op count, the parameter itself.
    fn scale(&mut self, params: &mut Vec<u64>, factor: f64) {
        super::scale_work_params(params, factor, MAX_OPS);
    }

    fn programs(&self) -> Vec<String> {
        vec![PROGRAM.to_string()]
    }

    fn command(&self, ops: u64) -> Vec<String> {
        let mut argv = vec![PROGRAM.to_string()];
        argv.extend(self.args(&ops.to_string()));
        argv
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
        let value = bogo_ops_per_sec(&record.output, &self.stressor).ok_or_else(|| {
            OutputError::new(
                "stress-ng",
                format!("no --metrics-brief line for the {} stressor", self.stressor),
            )
            .with_output(super::output_tail(&record.output))
        })?;
        if !value.is_finite() || value <= 0.0 {
            return Err(OutputError::new(
                "stress-ng",
                format!(
                    "the {} stressor printed {value} bogo ops/s; give it more bogo ops",
                    self.stressor
                ),
            ));
        }
        Ok(vec![Measurement {
            metric: "bogo-ops-per-sec".into(),
            unit: "bogo ops/s".into(),
            higher_is_better: true,
            value,
        }])
    }

    fn describe(&self, params: &str) -> String {
        format!("stress-ng {}", self.args(params).join(" "))
    }
}

impl StressNgSpec {
    /// stress-ng's arguments, the bogo-op count written as `ops`.
    fn args(&self, ops: &str) -> Vec<String> {
        let s = &self.stressor;
        vec![
            format!("--{s}"),
            self.workers.to_string(),
            format!("--{s}-ops"),
            ops.to_string(),
            "--metrics-brief".into(),
            "--no-rand-seed".into(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Output of Debian's stress-ng 0.15.06-2 (`stress-ng, version 0.15.06`)
    // on a Debian 12 host, stdout and stderr together (it logs to stderr).

    /// `stress-ng --cpu 1 --cpu-ops 200 --metrics-brief`
    const CPU: &str = "\
stress-ng: info:  [29606] defaulting to a 86400 second (1 day, 0.00 secs) run per stressor
stress-ng: info:  [29606] dispatching hogs: 1 cpu
stress-ng: metrc: [29606] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [29606]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [29606] cpu                 200      0.17      0.16      0.00      1186.77        1187.08
stress-ng: info:  [29606] successful run completed in 0.17s
";

    /// `stress-ng --switch 1 --switch-ops 20000 --metrics-brief`
    const SWITCH: &str = "\
stress-ng: info:  [29609] defaulting to a 86400 second (1 day, 0.00 secs) run per stressor
stress-ng: info:  [29609] dispatching hogs: 1 switch
stress-ng: metrc: [29609] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [29609]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [29609] switch            20000      0.13      0.01      0.12    152328.21      152339.17
stress-ng: metrc: [29609] miscellaneous metrics:
stress-ng: metrc: [29609] switch              6507.86 nanosecs per context switch (pipe method) (geometic mean of 1 instances)
stress-ng: info:  [29609] successful run completed in 0.13s
";

    /// `stress-ng --nosuch 1 --nosuch-ops 5 --metrics-brief`
    const UNKNOWN: &str = "\
stress-ng: unrecognized option '--nosuch'
Try 'stress-ng --help' for more information.
";

    const GUEST: Guest<'static> = Guest {
        cpus: &[1, 2],
        memory_mib: 1024,
    };

    fn spec(toml_text: &str) -> StressNgSpec {
        toml::from_str(toml_text).unwrap()
    }

    fn record(output: &str) -> RunRecord {
        crate::guest::workloads::finished_run("stress-ng/200", output, 1)
    }

    #[test]
    fn command_and_description_name_the_stressor() {
        let s = spec("stressor = \"switch\"");
        assert_eq!(
            s.command(20000),
            [
                "/usr/bin/stress-ng",
                "--switch",
                "1",
                "--switch-ops",
                "20000",
                "--metrics-brief",
                "--no-rand-seed"
            ]
        );
        let s = spec("stressor = \"cpu\"\nworkers = 2");
        assert_eq!(
            s.describe("{200, 400}"),
            "stress-ng --cpu 2 --cpu-ops {200, 400} --metrics-brief --no-rand-seed"
        );
        assert_eq!(s.programs(), ["/usr/bin/stress-ng"]);
        assert!(toml::from_str::<StressNgSpec>("stressor = \"cpu\"\nops = 3").is_err());
    }

    #[test]
    fn the_stressors_line_gives_its_real_time_rate() {
        let m = spec("stressor = \"cpu\"").measure(&record(CPU)).unwrap();
        assert_eq!(
            m,
            [Measurement {
                metric: "bogo-ops-per-sec".into(),
                unit: "bogo ops/s".into(),
                higher_is_better: true,
                value: 1186.77,
            }]
        );
        // The miscellaneous line that also starts with `switch` is not it.
        assert_eq!(bogo_ops_per_sec(SWITCH, "switch"), Some(152328.21));
        assert_eq!(bogo_ops_per_sec(SWITCH, "cpu"), None);
        assert_eq!(bogo_ops_per_sec(CPU, "stressor"), None);
    }

    #[test]
    fn output_without_the_line_is_an_error_showing_its_end() {
        let e = spec("stressor = \"nosuch\"")
            .measure(&record(UNKNOWN))
            .unwrap_err().to_string();
        assert!(
            e.starts_with("stress-ng: no --metrics-brief line for the nosuch stressor")
                && e.ends_with("Try 'stress-ng --help' for more information."),
            "{e}"
        );
        let e = spec("stressor = \"pipe\"")
            .measure(&record(SWITCH))
            .unwrap_err().to_string();
        assert!(e.contains("successful run completed in 0.13s"), "{e}");
    }

    #[test]
    fn silly_settings_are_refused() {
        let refused =
            |text: &str, params: &[u64]| spec(text).check(params, GUEST).unwrap_err().message;
        for bad in ["", "-cpu", "cpu --quiet", "cpu_x", "CPU", "1cpu"] {
            let e = refused(&format!("stressor = {bad:?}"), &[1]);
            assert!(e.starts_with("stress-ng: stressor"), "{bad}: {e}");
        }
        let e = refused("stressor = \"cpu\"\nworkers = 0", &[1]);
        assert!(e.starts_with("stress-ng: workers must be 1 to"), "{e}");
        let e = refused("stressor = \"cpu\"", &[200, 200_000_000]);
        assert!(
            e.contains("at most 100000000") && e.contains("--cpu-ops"),
            "{e}"
        );
        assert!(spec("stressor = \"dev-shm\"\nworkers = 4")
            .check(&[100, MAX_OPS], GUEST)
            .is_ok());
    }

    #[test]
    fn scaling_scales_the_bogo_ops_within_the_limit() {
        let mut params = vec![200, 400, MAX_OPS];
        spec("stressor = \"cpu\"").scale(&mut params, 0.5);
        assert_eq!(params, [100, 200, MAX_OPS / 2]);
        let mut params = vec![MAX_OPS / 2, MAX_OPS];
        spec("stressor = \"cpu\"").scale(&mut params, 4.0);
        assert_eq!(params, [MAX_OPS]);
    }
}
