//! A run's points beside the published table its suite names
//! ([`crate::record::ReferenceTable`]): for each point markbench measured,
//! the table's relative difference at the same CPU count and parameter
//! (or none, where the table has no such point), markbench's own with its
//! interval and verdict, and the loops each ran.

use super::{Analysis, TableKey};
use crate::base::stats::{PointAnalysis, Verdict};
use crate::guest::workloads::{kind_of_label, WorkloadKind};
use crate::record::{Recorded, ReferenceRow, ReferenceTable, RunMeta};

/// The run's points beside the table, in the report's order of tables.
#[derive(Debug)]
pub struct Beside<'a> {
    pub table: ReferenceTable,
    /// The comparison set beside the table: the first candidate against
    /// the baseline, as the table sets its "with" against its "without".
    pub comparison: usize,
    pub rows: Vec<BesideRow<'a>>,
}

/// One point markbench measured, beside the table's figure there.
#[derive(Debug)]
pub struct BesideRow<'a> {
    pub cpus: u32,
    pub param: u64,
    /// The loops each of markbench's runs of the point made, when the run
    /// recorded its workload as data.
    pub loops: Option<u64>,
    /// The table's row at the same CPU count and parameter.
    pub reference: Option<ReferenceRow>,
    /// markbench's statistics of the point (none when the analysis failed).
    pub measured: Option<&'a PointAnalysis>,
}

/// Whether markbench's difference points the way the table's does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sign {
    /// markbench's whole interval lies on the table's side of zero.
    Agrees,
    /// markbench's whole interval lies on the other side.
    Opposite,
    /// markbench's interval holds zero: its point estimate's sign is not
    /// a finding, so it neither agrees nor disagrees.
    Undecided,
}

/// What markbench's statistics resolve at a point, where the table gives
/// one figure a side and so no interval to judge its difference by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// A difference: the corrected test rejects equality.
    Difference(Verdict),
    /// No difference beyond the run's margin (TOST).
    WithinMargin,
    /// Neither: the interval is too wide to decide.
    Unresolved,
    /// Fewer than two boots a side, or no statistics.
    TooFewBoots,
}

impl BesideRow<'_> {
    /// markbench's relative difference (candidate over baseline, less one).
    pub fn measured_diff(&self) -> Option<f64> {
        self.measured.and_then(|a| a.relative_difference)
    }

    /// Whether markbench's difference and the table's have the same sign,
    /// judged by markbench's 95% interval; none where the table's figure
    /// is missing or exactly zero, or markbench has no interval.
    pub fn sign(&self) -> Option<Sign> {
        let reference = self.reference.as_ref()?.diff_percent()?;
        let ci = self.measured?.relative_difference_ci.as_ref()?;
        if reference == 0.0 {
            return None;
        }
        Some(if ci.lower <= 0.0 && ci.upper >= 0.0 {
            Sign::Undecided
        } else if (reference > 0.0) == (ci.lower > 0.0) {
            Sign::Agrees
        } else {
            Sign::Opposite
        })
    }

    pub fn resolution(&self) -> Resolution {
        match self.measured.map(|a| a.verdict) {
            Some(v @ (Verdict::Regression | Verdict::Improvement)) => Resolution::Difference(v),
            Some(Verdict::Equivalent) => Resolution::WithinMargin,
            Some(Verdict::NoSignificantDifference) => Resolution::Unresolved,
            Some(Verdict::InsufficientData) | None => Resolution::TooFewBoots,
        }
    }

    /// Whether markbench ran other loops than the table's runs did.
    pub fn loops_differ(&self, table: ReferenceTable) -> bool {
        self.loops.is_some_and(|l| l != table.loops())
    }
}

/// The run's points beside its suite's reference table; none when the
/// suite named none or the run measured no point of the table's workload.
pub fn beside<'a>(meta: &RunMeta, analysis: &'a Analysis) -> Option<Beside<'a>> {
    let table = meta.reference?;
    let (kind, metric) = table.workload();
    let reference = table.rows();
    let comparison = 0;
    let mut rows = Vec::new();
    for (key, points) in analysis
        .tables
        .iter()
        .filter(|(k, _)| kind_of_label(&k.workload) == kind && k.metric == metric)
    {
        let analyses = analysis.results_of(comparison, key);
        let loops = loops_of(meta, key);
        for (j, p) in points.iter().enumerate() {
            rows.push(BesideRow {
                cpus: key.cpus,
                param: p.param,
                loops,
                reference: reference
                    .iter()
                    .find(|r| r.cpus == key.cpus && r.param == p.param)
                    .cloned(),
                measured: analyses.and_then(|a| a.get(j)),
            });
        }
    }
    if rows.is_empty() {
        return None;
    }
    Some(Beside {
        table,
        comparison,
        rows,
    })
}

/// The hackbench loops of the workload a table measures, as the run
/// recorded it (after `--scale`).
fn loops_of(meta: &RunMeta, key: &TableKey) -> Option<u64> {
    meta.workloads.iter().find_map(|w| match w {
        Recorded::Data(spec) if spec.label() == key.workload => match &spec.kind {
            WorkloadKind::Hackbench(h) => Some(h.loops),
            _ => None,
        },
        _ => None,
    })
}

/// How many of the rows fall in each class: what the report's summary says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Points the table has.
    pub in_table: usize,
    pub agree: usize,
    pub opposite: usize,
    /// Where markbench's interval holds zero.
    pub undecided: usize,
    /// Of the points the table has: a difference resolved, no difference
    /// beyond the margin, neither, too few boots.
    pub difference: usize,
    pub within_margin: usize,
    pub unresolved: usize,
    pub too_few: usize,
    /// Points the table does not have.
    pub not_in_table: usize,
}

impl Beside<'_> {
    pub fn tally(&self) -> Tally {
        let mut t = Tally::default();
        for row in &self.rows {
            if row.reference.is_none() {
                t.not_in_table += 1;
                continue;
            }
            t.in_table += 1;
            match row.sign() {
                Some(Sign::Agrees) => t.agree += 1,
                Some(Sign::Opposite) => t.opposite += 1,
                Some(Sign::Undecided) => t.undecided += 1,
                None => {}
            }
            match row.resolution() {
                Resolution::Difference(_) => t.difference += 1,
                Resolution::WithinMargin => t.within_margin += 1,
                Resolution::Unresolved => t.unresolved += 1,
                Resolution::TooFewBoots => t.too_few += 1,
            }
        }
        t
    }

    /// The loops markbench's runs made where they differ from the table's,
    /// each once.
    pub fn other_loops(&self) -> Vec<u64> {
        let mut loops: Vec<u64> = self
            .rows
            .iter()
            .filter(|r| r.loops_differ(self.table))
            .filter_map(|r| r.loops)
            .collect();
        loops.sort_unstable();
        loops.dedup();
        loops
    }
}
