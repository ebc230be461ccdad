//! The published tables a suite can set its run's figures beside: what a
//! seed's mail printed, kept in markbench so a report can show both. A
//! suite names one (`reference = "aoki-2008"`); the run records the name
//! in `meta.toml` and the report reads the table from here.

use serde::{Deserialize, Serialize};

/// A published table of one workload's figures, without and with markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReferenceTable {
    /// Aoki 2008's ia64 hackbench table: 50 to 800 groups on 2, 4 and 8
    /// CPUs, each cell the average of 5 runs of 100 loops.
    #[serde(rename = "aoki-2008")]
    Aoki2008,
}

/// One row of a reference table: one CPU count and parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceRow {
    pub cpus: u32,
    pub param: u64,
    /// The mail's mean without markers and with them, in its unit.
    pub without: f64,
    pub with: f64,
    /// The relative difference as the mail printed it ("+1.27", "-3.6"),
    /// computed from unrounded means: not always what the rounded means give.
    pub diff_pct: String,
}

impl ReferenceRow {
    /// The printed relative difference, in percent.
    pub fn diff_percent(&self) -> Option<f64> {
        self.diff_pct.parse().ok()
    }
}

/// Aoki 2008's table, transcribed row by row (`cpus,param,without_s,with_s,
/// diff_s,diff_pct`).
const AOKI_2008: &str = include_str!("../../tests/fixtures/hackbench-ia64-2008.csv");

impl ReferenceTable {
    /// Every table markbench knows, for the suite's error message.
    pub const ALL: &'static [ReferenceTable] = &[ReferenceTable::Aoki2008];

    /// The name a suite and `meta.toml` give it.
    pub fn name(self) -> &'static str {
        match self {
            ReferenceTable::Aoki2008 => "aoki-2008",
        }
    }

    /// Who published it: the report's heading calls the table by it.
    pub fn author(self) -> &'static str {
        match self {
            ReferenceTable::Aoki2008 => "Aoki 2008",
        }
    }

    /// The workload kind whose tables it sits beside, and their metric.
    pub fn workload(self) -> (&'static str, &'static str) {
        match self {
            ReferenceTable::Aoki2008 => ("hackbench", "time"),
        }
    }

    /// The loops (hackbench's `-l`) of every run the table averages.
    pub fn loops(self) -> u64 {
        match self {
            ReferenceTable::Aoki2008 => 100,
        }
    }

    /// What it measured, on what, in one sentence.
    pub fn source(self) -> &'static str {
        match self {
            ReferenceTable::Aoki2008 => {
                "Hideo Aoki's 2008 mail \"Kernel marker has no performance impact on ia64\" \
                 gave hackbench's time on an ia64 server without and with markers, each \
                 cell the average of 5 runs of 100 loops"
            }
        }
    }

    /// Its rows, in the order it printed them.
    pub fn rows(self) -> Vec<ReferenceRow> {
        let text = match self {
            ReferenceTable::Aoki2008 => AOKI_2008,
        };
        text.lines().skip(1).filter_map(parse_row).collect()
    }
}

fn parse_row(line: &str) -> Option<ReferenceRow> {
    let cells: Vec<&str> = line.trim().split(',').collect();
    match cells.as_slice() {
        [cpus, param, without, with, _diff_s, diff_pct] => Some(ReferenceRow {
            cpus: cpus.parse().ok()?,
            param: param.parse().ok()?,
            without: without.parse().ok()?,
            with: with.parse().ok()?,
            diff_pct: diff_pct.to_string(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aoki_2008_has_every_row_of_the_mail_and_each_diff_agrees_with_its_means() {
        let rows = ReferenceTable::Aoki2008.rows();
        assert_eq!(rows.len(), 48);
        for cpus in [2, 4, 8] {
            let params: Vec<u64> = rows
                .iter()
                .filter(|r| r.cpus == cpus)
                .map(|r| r.param)
                .collect();
            assert_eq!(params, (1..=16).map(|i| i * 50).collect::<Vec<u64>>());
        }
        for r in &rows {
            let from_means = (r.with / r.without - 1.0) * 100.0;
            // The mail rounded its means and its percentages apart.
            let printed = r.diff_percent().unwrap();
            assert!((from_means - printed).abs() < 0.03, "{r:?}");
        }
    }

    #[test]
    fn the_name_reads_back_as_the_table() {
        #[derive(Deserialize, Serialize)]
        struct Holder {
            reference: ReferenceTable,
        }
        let text = toml::to_string(&Holder {
            reference: ReferenceTable::Aoki2008,
        })
        .unwrap();
        assert_eq!(text.trim(), "reference = \"aoki-2008\"");
        let back: Holder = toml::from_str(&text).unwrap();
        assert_eq!(back.reference.name(), "aoki-2008");
        assert!(toml::from_str::<Holder>("reference = \"aoki-2009\"").is_err());
    }
}
