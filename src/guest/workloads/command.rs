//! A command of the suite's own, run in the guest: a test program of the
//! user's, a benchmark markbench does not know, and the fault tests (a
//! command that crashes the kernel through sysrq, hangs, or fails). The
//! parameter is substituted for `{param}` in the arguments.
//!
//! The programs it names (`programs`) are copied into the guest image with
//! their shared libraries, and the files it names (`files`) are carried to
//! their guest paths. Without `[[workload.metric]]` it measures `time`,
//! seconds of the agent's CLOCK_MONOTONIC, lower is better; each metric
//! declared is a regular expression over the run's output whose one capture
//! group is the value, and each is a point of its own. A run whose output
//! lacks a declared metric is a failed run, never a zero.

use super::{
    check_guest_path, output_tail, Guest, GuestFile, Measurement, OutputError, Refusal, Workload,
};
use crate::base::cycle_model::is_model_metric;
use crate::base::protocol::RunRecord;
use serde::{Deserialize, Serialize};

/// The command's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// Absolute path of a program in the guest image, then its arguments.
    pub argv: Vec<String>,
    /// Host programs (absolute paths) copied into the guest image at the
    /// same paths, with their shared libraries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<String>,
    /// Host files carried into the guest image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<GuestFile>,
    /// What a run's output yields (`[[workload.metric]]`); none: its time.
    #[serde(default, rename = "metric", skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<OutputMetric>,
}

/// One number read from a run's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputMetric {
    /// Names the metric in samples, tables and verdicts.
    pub name: String,
    /// A regular expression (Rust's `regex` syntax) with exactly one
    /// capture group, the value; its first match in the output counts.
    pub pattern: String,
    pub unit: String,
    pub higher_is_better: bool,
}

/// The workload's kind, as a suite names it and its errors begin.
const KIND: &str = "command";

impl OutputMetric {
    /// The metric's pattern compiled; else what is wrong with it (without
    /// the workload's name, which the caller's error adds).
    fn regex(&self) -> Result<regex::Regex, String> {
        let re = regex::Regex::new(&self.pattern).map_err(|e| {
            format!(
                "metric {:?}: pattern {:?} does not compile: {e}",
                self.name, self.pattern
            )
        })?;
        if re.captures_len() != 2 {
            return Err(format!(
                "metric {:?}: pattern {:?} has {} capture groups; it needs exactly \
                 one, around the value (make others non-capturing: `(?:…)`)",
                self.name,
                self.pattern,
                re.captures_len() - 1
            ));
        }
        Ok(re)
    }

    /// The value in `output`: the capture of the pattern's first match.
    pub fn read(&self, output: &str) -> Result<f64, OutputError> {
        // The suite's check compiled the pattern already; a pattern that
        // does not is told as the suite's error, here as the output's.
        let re = self.regex().map_err(|e| OutputError::new(KIND, e))?;
        let Some(captured) = re.captures(output).and_then(|c| c.get(1)) else {
            return Err(OutputError::new(
                KIND,
                format!(
                    "metric {:?}: pattern {:?} matched nothing in the output",
                    self.name, self.pattern
                ),
            )
            .with_output(output_tail(output)));
        };
        let text = captured.as_str().trim();
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| {
                let (number, line) = super::output::line_at(output, captured.start());
                OutputError::at_line(
                    KIND,
                    number,
                    line,
                    format!(
                        "metric {:?}: pattern {:?} captured {text:?}, not a number",
                        self.name, self.pattern
                    ),
                )
            })
    }
}

impl CommandSpec {
    fn check_metrics(&self) -> Result<(), Refusal> {
        for (i, m) in self.metrics.iter().enumerate() {
            if m.name.is_empty()
                || !m
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                return Err(Refusal::near(
                    format!(
                        "command: metric name {:?} must be letters, digits, _ - or .",
                        m.name
                    ),
                    "name",
                    &m.name,
                ));
            }
            if is_model_metric(&m.name) {
                return Err(Refusal::near(
                    format!(
                        "command: metric name {:?} is one the cycle model adds to every \
                         workload (--model cycles); choose another",
                        m.name
                    ),
                    "name",
                    &m.name,
                ));
            }
            if self.metrics[..i].iter().any(|o| o.name == m.name) {
                return Err(Refusal::near(
                    format!("command: two metrics are named {:?}", m.name),
                    "name",
                    &m.name,
                ));
            }
            if m.unit.contains(['\t', '\n', '\r']) {
                return Err(Refusal::near(
                    format!("command: metric {:?}: unit must be one line", m.name),
                    "unit",
                    &m.unit,
                ));
            }
            m.regex()
                .map_err(|e| Refusal::near(format!("{KIND}: {e}"), "pattern", &m.pattern))?;
        }
        Ok(())
    }
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
        for p in &self.programs {
            check_guest_path(p).map_err(|e| {
                Refusal::near(
                    format!("command: program {p:?}: {e} (a host program keeps its path in the guest)"),
                    "programs",
                    p,
                )
            })?;
        }
        for (i, f) in self.files.iter().enumerate() {
            check_guest_path(&f.to)
                .map_err(|e| Refusal::near(format!("command: files: {e}"), "files", &f.to))?;
            if self.files[..i].iter().any(|o| o.to == f.to) || self.programs.contains(&f.to) {
                return Err(Refusal::near(
                    format!("command: files: {:?} is carried twice", f.to),
                    "files",
                    &f.to,
                ));
            }
        }
        self.check_metrics()
    }

    /// What the command does with its parameter is its own: nothing to scale.
    fn scale(&mut self, _params: &mut Vec<u64>, _factor: f64) {}

    fn programs(&self) -> Vec<String> {
        self.programs.clone()
    }

    fn files(&self) -> Vec<GuestFile> {
        self.files.clone()
    }

    fn command(&self, param: u64) -> Vec<String> {
        self.argv
            .iter()
            .map(|a| a.replace("{param}", &param.to_string()))
            .collect()
    }

    fn measure(&self, record: &RunRecord) -> Result<Vec<Measurement>, OutputError> {
        if self.metrics.is_empty() {
            return Ok(vec![Measurement::elapsed_time(record)]);
        }
        self.metrics
            .iter()
            .map(|m| {
                Ok(Measurement {
                    metric: m.name.clone(),
                    unit: m.unit.clone(),
                    higher_is_better: m.higher_is_better,
                    value: m.read(&record.output)?,
                })
            })
            .collect()
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

    const GUEST: Guest<'static> = Guest {
        cpus: &[1],
        memory_mib: 512,
    };

    fn spec(text: &str) -> CommandSpec {
        toml::from_str(text).unwrap()
    }

    fn record(output: &str) -> RunRecord {
        crate::guest::workloads::finished_run("command/1", output, 2_000_000_000)
    }

    /// The `--metrics-brief` lines of stress-ng 0.15.06, as it prints them.
    const STRESS_NG: &str = "\
stress-ng: info:  [212] setting to a 0 secs run per stressor
stress-ng: info:  [212] dispatching hogs: 1 cpu
stress-ng: info:  [212] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: info:  [212]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: info:  [212] cpu                2000      2.13      2.12      0.00       939.02         943.40
stress-ng: info:  [212] successful run completed in 2.14s
";

    #[test]
    fn param_is_substituted() {
        let spec = spec("argv = [\"/bin/busybox\", \"sleep\", \"{param}\"]");
        assert_eq!(spec.command(3), ["/bin/busybox", "sleep", "3"]);
        assert_eq!(
            spec.describe("{1, 3}"),
            "/bin/busybox sleep {param} with {param} = {1, 3}"
        );
    }

    #[test]
    fn without_metrics_a_run_measures_its_time() {
        let m = spec("argv = [\"/bin/true\"]")
            .measure(&record("anything"))
            .unwrap();
        assert_eq!((m[0].metric.as_str(), m[0].value), ("time", 2.0));
    }

    #[test]
    fn declared_metrics_are_read_from_the_output_each_its_own() {
        let spec = spec(
            r#"
argv = ["/usr/bin/stress-ng", "--cpu", "1", "--cpu-ops", "{param}", "--metrics-brief"]
programs = ["/usr/bin/stress-ng"]
[[metric]]
name = "bogo-ops"
pattern = 'cpu\s+\d+\s+\S+\s+\S+\s+\S+\s+([0-9.]+)'
unit = "ops/s"
higher_is_better = true
[[metric]]
name = "completed-in"
pattern = 'completed in ([0-9.]+)s'
unit = "s"
higher_is_better = false
"#,
        );
        spec.check(&[2000], GUEST).unwrap();
        let m = spec.measure(&record(STRESS_NG)).unwrap();
        let got: Vec<(&str, f64, bool)> = m
            .iter()
            .map(|m| (m.metric.as_str(), m.value, m.higher_is_better))
            .collect();
        assert_eq!(
            got,
            [("bogo-ops", 939.02, true), ("completed-in", 2.14, false)]
        );
        assert_eq!(m[0].unit, "ops/s");
    }

    #[test]
    fn output_without_a_declared_metric_fails_the_run_with_its_tail() {
        let spec = spec(
            "argv = [\"/bin/x\"]\n[[metric]]\nname = \"rate\"\npattern = 'rate: (\\d+)'\nunit = \"1/s\"\nhigher_is_better = true\n",
        );
        let e = spec
            .measure(&record("line 1\nsegmentation fault\n"))
            .unwrap_err().to_string();
        assert!(e.contains("\"rate\"") && e.contains("matched nothing"), "{e}");
        assert!(e.ends_with("line 1\nsegmentation fault"), "{e}");
        let e = spec.measure(&record("rate: \n")).unwrap_err().to_string();
        assert!(e.contains("matched nothing"), "{e}");
    }

    #[test]
    fn a_captured_value_that_is_no_number_names_its_line() {
        let spec = spec(
            "argv = [\"/bin/x\"]\n[[metric]]\nname = \"rate\"\npattern = 'rate: (\\S+)'\nunit = \"1/s\"\nhigher_is_better = true\n",
        );
        let e = spec
            .measure(&record("starting\nrate: many\ndone\n"))
            .unwrap_err();
        assert_eq!(e.workload, "command");
        let line = e.line.as_ref().expect("the error names its line");
        assert_eq!((line.number, line.text.as_str()), (2, "rate: many"));
        assert_eq!(
            e.to_string(),
            "command: line 2 of the output: metric \"rate\": pattern \"rate: (\\\\S+)\" captured \
             \"many\", not a number: \"rate: many\""
        );
    }

    #[test]
    fn bad_patterns_and_paths_are_refused_near_their_value() {
        let metric = |pattern: &str| {
            spec(&format!(
                "argv = [\"/bin/x\"]\n[[metric]]\nname = \"m\"\npattern = '{pattern}'\nunit = \"s\"\nhigher_is_better = false\n"
            ))
        };
        let r = metric("rate: ([0-9.]+").check(&[1], GUEST).unwrap_err();
        assert!(r.message.contains("does not compile"), "{}", r.message);
        assert_eq!(r.near, Some(("pattern", "rate: ([0-9.]+".to_string())));
        let r = metric("rate: [0-9.]+").check(&[1], GUEST).unwrap_err();
        assert!(r.message.contains("has 0 capture groups"), "{}", r.message);
        let r = metric("(a)(b)").check(&[1], GUEST).unwrap_err();
        assert!(r.message.contains("has 2 capture groups"), "{}", r.message);
        assert!(metric("(?:a)(b)").check(&[1], GUEST).is_ok());
        let named = |name: &str| {
            spec(&format!(
                "argv = [\"/bin/x\"]\n[[metric]]\nname = \"{name}\"\npattern = '(a)'\nunit = \"s\"\nhigher_is_better = false\n"
            ))
        };
        let r = named("llc-misses").check(&[1], GUEST).unwrap_err();
        assert!(r.message.contains("the cycle model adds"), "{}", r.message);
        assert_eq!(r.near, Some(("name", "llc-misses".to_string())));
        assert!(named("llc-misses-per-op").check(&[1], GUEST).is_ok());

        let files = |to: &str| {
            spec(&format!(
                "argv = [\"/bin/x\"]\nfiles = [{{ from = \"in.bin\", to = \"{to}\" }}]\n"
            ))
        };
        for outside in ["data/in.bin", "/proc/x", "/sys", "/init", "/a/../b", "/"] {
            let r = files(outside).check(&[1], GUEST).unwrap_err();
            assert_eq!(r.near, Some(("files", outside.to_string())), "{}", r.message);
        }
        assert!(files("/data/in.bin").check(&[1], GUEST).is_ok());
        let r = spec("argv = [\"/bin/x\"]\nprograms = [\"stress-ng\"]\n")
            .check(&[1], GUEST)
            .unwrap_err();
        assert!(r.message.contains("must be absolute"), "{}", r.message);
    }
}
