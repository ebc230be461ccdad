//! A point's key: which of a run's measurements a point is, written
//! `WORKLOAD/METRIC@CPUS=PARAM` (`hackbench/time@2=4`), the syntax
//! `bisect --point` takes written in full.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// One point of a sweep: a workload's metric at a CPU count and parameter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PointKey {
    /// The workload's label: its kind, or `command:NAME` for a named one.
    pub workload: String,
    pub metric: String,
    pub cpus: u32,
    pub param: u64,
}

/// What is wrong with a point's key as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MalformedPointKey {
    NoWorkload,
    NoMetric,
    NoCpus,
    CpusNotWhole,
    NoParam,
    ParamNotWhole,
}

impl fmt::Display for MalformedPointKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MalformedPointKey::NoWorkload => "WORKLOAD is missing",
            MalformedPointKey::NoMetric => "/METRIC is missing",
            MalformedPointKey::NoCpus => "@CPUS is missing",
            MalformedPointKey::CpusNotWhole => "CPUS is a whole number",
            MalformedPointKey::NoParam => "=PARAM is missing",
            MalformedPointKey::ParamNotWhole => "PARAM is a whole number",
        })
    }
}

impl std::error::Error for MalformedPointKey {}

impl fmt::Display for PointKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}@{}={}",
            self.workload, self.metric, self.cpus, self.param
        )
    }
}

impl FromStr for PointKey {
    type Err = MalformedPointKey;

    fn from_str(text: &str) -> Result<PointKey, MalformedPointKey> {
        let (rest, param) = text.rsplit_once('=').ok_or(MalformedPointKey::NoParam)?;
        let param = param
            .parse()
            .map_err(|_| MalformedPointKey::ParamNotWhole)?;
        let (rest, cpus) = rest.rsplit_once('@').ok_or(MalformedPointKey::NoCpus)?;
        let cpus = cpus.parse().map_err(|_| MalformedPointKey::CpusNotWhole)?;
        let (workload, metric) = rest.split_once('/').ok_or(MalformedPointKey::NoMetric)?;
        if workload.is_empty() {
            return Err(MalformedPointKey::NoWorkload);
        }
        if metric.is_empty() {
            return Err(MalformedPointKey::NoMetric);
        }
        Ok(PointKey {
            workload: workload.to_string(),
            metric: metric.to_string(),
            cpus,
            param,
        })
    }
}

impl Serialize for PointKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PointKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PointKey, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(|e| {
            serde::de::Error::custom(format_args!(
                "point {text:?}: {e}; write it WORKLOAD/METRIC@CPUS=PARAM"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_reads_back_as_it_is_written() {
        for text in [
            "hackbench/time@2=4",
            "command:mine/ops@8=1",
            "perf-bench/usecs-per-op@1=5000",
        ] {
            let key: PointKey = text.parse().unwrap();
            assert_eq!(key.to_string(), text);
        }
        let key: PointKey = "hackbench/time@2=4".parse().unwrap();
        assert_eq!(
            key,
            PointKey {
                workload: "hackbench".into(),
                metric: "time".into(),
                cpus: 2,
                param: 4,
            }
        );
    }

    #[test]
    fn a_malformed_key_says_which_part_is_wrong() {
        for (text, wrong) in [
            ("hackbench/time@1", MalformedPointKey::NoParam),
            ("hackbench/time=2", MalformedPointKey::NoCpus),
            ("hackbench@1=2", MalformedPointKey::NoMetric),
            ("hackbench/@1=2", MalformedPointKey::NoMetric),
            ("/time@1=2", MalformedPointKey::NoWorkload),
            ("hackbench/time@x=2", MalformedPointKey::CpusNotWhole),
            ("hackbench/time@1=two", MalformedPointKey::ParamNotWhole),
            ("hackbench:time@1cpu:2", MalformedPointKey::NoParam),
        ] {
            assert_eq!(text.parse::<PointKey>(), Err(wrong), "{text}");
        }
    }

    #[test]
    fn a_key_is_stored_as_its_string() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Kept {
            point: PointKey,
        }
        let kept = Kept {
            point: "hackbench/time@1=2".parse().unwrap(),
        };
        let text = toml::to_string(&kept).unwrap();
        assert_eq!(text, "point = \"hackbench/time@1=2\"\n");
        assert_eq!(toml::from_str::<Kept>(&text).unwrap(), kept);
        let e = toml::from_str::<Kept>("point = \"hackbench/time\"\n").unwrap_err();
        assert!(e.to_string().contains("=PARAM is missing"), "{e}");
    }
}
