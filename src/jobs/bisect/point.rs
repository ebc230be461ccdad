//! `--point WORKLOAD[/METRIC][@CPUS][=PARAM]`: the one point of a suite a
//! bisection measures. Every part the suite leaves no choice in may be left
//! out; `hackbench@1` is the quick suite's 1-vCPU hackbench point.

use crate::base::error::InputError;
use crate::base::error::Result;
use crate::record::{PointKey, Sample};
use crate::stages::suite::Suite;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The point bisected when neither a suite nor a point is given.
pub const QUICK_DEFAULT: &str = "hackbench@1";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PointSpec {
    /// The workload's label: its kind, or `command:NAME` for a named one.
    pub workload: Option<String>,
    /// Needed only where a workload measures several metrics.
    pub metric: Option<String>,
    pub cpus: Option<u32>,
    pub param: Option<u64>,
}

impl std::fmt::Display for PointSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(w) = &self.workload {
            write!(f, "{w}")?;
        }
        if let Some(m) = &self.metric {
            write!(f, "/{m}")?;
        }
        if let Some(c) = self.cpus {
            write!(f, "@{c}")?;
        }
        if let Some(p) = self.param {
            write!(f, "={p}")?;
        }
        Ok(())
    }
}

/// A point named in full, as a pattern that matches it alone.
impl From<&PointKey> for PointSpec {
    fn from(key: &PointKey) -> PointSpec {
        PointSpec {
            workload: Some(key.workload.clone()),
            metric: Some(key.metric.clone()),
            cpus: Some(key.cpus),
            param: Some(key.param),
        }
    }
}

/// A resolved point is kept as `--point` writes it (`bisect.toml`).
impl Serialize for PointSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PointSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PointSpec, D::Error> {
        let text = String::deserialize(deserializer)?;
        PointSpec::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl PointSpec {
    pub fn parse(text: &str) -> Result<PointSpec, InputError> {
        let bad = |why: &str| {
            InputError::new(format!(
                "--point {text:?}: {why}; write it WORKLOAD[/METRIC][@CPUS][=PARAM], e.g. \
                 hackbench@1 or hackbench@2=4"
            ))
        };
        let (rest, param) = match text.rsplit_once('=') {
            Some((rest, p)) => (
                rest,
                Some(
                    p.parse::<u64>()
                        .map_err(|_| bad("PARAM is a whole number"))?,
                ),
            ),
            None => (text, None),
        };
        let (rest, cpus) = match rest.rsplit_once('@') {
            Some((rest, c)) => (
                rest,
                Some(
                    c.parse::<u32>()
                        .map_err(|_| bad("CPUS is a whole number"))?,
                ),
            ),
            None => (rest, None),
        };
        let (workload, metric) = match rest.split_once('/') {
            Some((w, m)) if !m.is_empty() => (w, Some(m.to_string())),
            Some(_) => return Err(bad("METRIC is empty")),
            None => (rest, None),
        };
        Ok(PointSpec {
            workload: (!workload.is_empty()).then(|| workload.to_string()),
            metric,
            cpus,
            param,
        })
    }

    /// Every point of `suite` (workload index and the point, fully written).
    fn candidates(suite: &Suite) -> Vec<(usize, PointSpec)> {
        let mut out = Vec::new();
        for (i, w) in suite.workloads.iter().enumerate() {
            for &cpus in suite.cpus.iter().filter(|&&c| w.runs_at(c)) {
                for &param in &w.params {
                    out.push((
                        i,
                        PointSpec {
                            workload: Some(w.label()),
                            metric: None,
                            cpus: Some(cpus),
                            param: Some(param),
                        },
                    ));
                }
            }
        }
        out
    }

    fn matches(&self, other: &PointSpec) -> bool {
        self.workload
            .as_ref()
            .is_none_or(|w| other.workload.as_ref() == Some(w))
            && self.cpus.is_none_or(|c| other.cpus == Some(c))
            && self.param.is_none_or(|p| other.param == Some(p))
    }

    /// The one point of `suite` this names, written out in full (the metric
    /// as given: a suite does not say which metrics a workload measures);
    /// an error listing the suite's points when it names none or several.
    pub fn resolve(&self, suite: &Suite) -> Result<PointSpec, InputError> {
        let all = PointSpec::candidates(suite);
        let found: Vec<&PointSpec> = all
            .iter()
            .map(|(_, p)| p)
            .filter(|p| self.matches(p))
            .collect();
        let listed = |points: &[&PointSpec]| {
            points
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match found[..] {
            [one] => Ok(PointSpec {
                metric: self.metric.clone(),
                ..one.clone()
            }),
            [] => Err(InputError::in_file(
                &suite.path,
                format!(
                    "no point matches --point {self}; its points are {}",
                    listed(&all.iter().map(|(_, p)| p).collect::<Vec<_>>())
                ),
            )),
            _ => Err(InputError::in_file(
                &suite.path,
                format!(
                    "{} points match{}; pick one with --point: {}",
                    found.len(),
                    if self == &PointSpec::default() {
                        String::new()
                    } else {
                        format!(" --point {self}")
                    },
                    listed(&found)
                ),
            )),
        }
    }

    /// `suite` measuring this point alone (it must be resolved).
    pub fn restrict(&self, suite: &Suite) -> Result<Suite, InputError> {
        let resolved = self.resolve(suite)?;
        let (index, _) = PointSpec::candidates(suite)
            .into_iter()
            .find(|(_, p)| resolved.matches(p))
            .expect("resolved against these candidates");
        let (cpus, param) = (resolved.cpus.unwrap_or(1), resolved.param.unwrap_or(1));
        let mut out = suite.clone();
        let mut workload = suite.workloads[index].clone();
        workload.params = vec![param];
        workload.cpus = Some(vec![cpus]);
        out.workloads = vec![workload];
        out.cpus = vec![cpus];
        Ok(out)
    }

    /// The measured samples of this (resolved) point.
    pub fn pick<'s>(&self, samples: &'s [Sample]) -> Result<Vec<&'s Sample>, String> {
        let at: Vec<&Sample> = samples
            .iter()
            .filter(|s| {
                !s.warmup
                    && self.workload.as_deref() == Some(s.workload.as_str())
                    && self.cpus == Some(s.cpus)
                    && self.param == Some(s.param)
            })
            .collect();
        let mut metrics: Vec<&str> = at.iter().map(|s| s.metric.as_str()).collect();
        metrics.sort_unstable();
        metrics.dedup();
        match (&self.metric, &metrics[..]) {
            (Some(m), _) if metrics.contains(&m.as_str()) => {
                Ok(at.into_iter().filter(|s| &s.metric == m).collect())
            }
            (Some(m), _) => Err(format!(
                "no samples of metric {m:?} at {self} (measured: {})",
                metrics.join(", ")
            )),
            (None, [_] | []) => Ok(at),
            (None, several) => Err(format!(
                "the point measures {} metrics ({}); name one as --point {}/METRIC…",
                several.len(),
                several.join(", "),
                self.workload.as_deref().unwrap_or_default()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::suite::FragmentLookup;

    fn quick() -> Suite {
        let text = include_str!("../../../suites/quick.toml");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.toml");
        std::fs::write(&path, text).unwrap();
        Suite::load(
            &path,
            &FragmentLookup::FromCwd {
                cwd: dir.path().to_path_buf(),
            },
        )
        .unwrap()
    }

    #[test]
    fn a_point_is_written_with_only_the_parts_it_needs() {
        let p = PointSpec::parse("perf-bench/usecs-per-op@1=5000").unwrap();
        assert_eq!(p.workload.as_deref(), Some("perf-bench"));
        assert_eq!(p.metric.as_deref(), Some("usecs-per-op"));
        assert_eq!((p.cpus, p.param), (Some(1), Some(5000)));
        assert_eq!(p.to_string(), "perf-bench/usecs-per-op@1=5000");
        assert_eq!(PointSpec::parse("@2").unwrap().cpus, Some(2));
        assert_eq!(
            PointSpec::parse("command:mine@1")
                .unwrap()
                .workload
                .as_deref(),
            Some("command:mine")
        );
        for bad in ["hackbench@x", "hackbench=two", "hackbench/@1"] {
            let e = PointSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains("WORKLOAD[/METRIC][@CPUS][=PARAM]"), "{e}");
        }
    }

    #[test]
    fn a_plan_keeps_its_point_as_point_writes_it() {
        #[derive(Debug, Serialize, Deserialize)]
        struct Kept {
            point: PointSpec,
        }
        for text in ["hackbench@1=2", "hackbench/time@2=4"] {
            let kept: Kept = toml::from_str(&format!("point = {text:?}\n")).unwrap();
            assert_eq!(kept.point, PointSpec::parse(text).unwrap());
            let written = toml::to_string(&kept).unwrap();
            assert_eq!(written, format!("point = {text:?}\n"));
        }
        let key: PointKey = "hackbench/time@2=4".parse().unwrap();
        assert_eq!(PointSpec::from(&key).to_string(), key.to_string());
        let e = toml::from_str::<Kept>("point = \"hackbench@x\"\n").unwrap_err();
        assert!(e.to_string().contains("CPUS is a whole number"), "{e}");
    }

    #[test]
    fn the_quick_default_names_its_one_vcpu_hackbench_point() {
        let suite = quick();
        let p = PointSpec::parse(QUICK_DEFAULT)
            .unwrap()
            .resolve(&suite)
            .unwrap();
        assert_eq!(p.to_string(), "hackbench@1=2");
        let only = p.restrict(&suite).unwrap();
        assert_eq!(only.workloads.len(), 1);
        assert_eq!(only.cpus, [1]);
        assert_eq!(only.workloads[0].iterations, suite.workloads[0].iterations);
    }

    #[test]
    fn an_ambiguous_or_unknown_point_lists_the_suites_points() {
        let suite = quick();
        let e = PointSpec::parse("hackbench")
            .unwrap()
            .resolve(&suite)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("2 points match") && e.contains("hackbench@2=2"),
            "{e}"
        );
        let e = PointSpec::default()
            .resolve(&suite)
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 points match"), "{e}");
        let e = PointSpec::parse("hackbench@4")
            .unwrap()
            .resolve(&suite)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no point matches") && e.contains("ping-flood@1=2000"),
            "{e}"
        );
    }
}
