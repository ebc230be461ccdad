//! Where a point's difference goes: both kernels' instructions per run by
//! function, their difference, and each function's share of the total
//! difference. Pure arithmetic on counts; exact, since the counts are.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One function's instructions per run on each side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDiff {
    pub function: String,
    /// Instructions per run: baseline, candidate.
    pub per_run: [f64; 2],
    /// Candidate − baseline, instructions per run.
    pub difference: f64,
    /// `difference` over the point's total difference (the shares of all
    /// functions add up to 1); `None` when the total difference is zero.
    pub share: Option<f64>,
    /// `Some(side)` when only that side's kernel has the function.
    pub only_in: Option<usize>,
}

/// One point's breakdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Breakdown {
    /// Measured runs counted on each side.
    pub runs: [u64; 2],
    /// All instructions per run on each side.
    pub per_run: [f64; 2],
    pub difference: f64,
    /// Every function that ran on either side, largest |difference| first
    /// (then by name), the user-space bucket among them.
    pub functions: Vec<FunctionDiff>,
}

/// Compares two sides' counts (function → instructions summed over `runs`
/// runs). `only_in[side]` lists the functions only that side's kernel has.
pub fn compare(
    counts: [&BTreeMap<String, u64>; 2],
    runs: [u64; 2],
    only_in: [&BTreeSet<String>; 2],
) -> Breakdown {
    let per = |side: usize, n: u64| n as f64 / runs[side].max(1) as f64;
    let per_run = [0, 1].map(|s| per(s, counts[s].values().sum()));
    let difference = per_run[1] - per_run[0];
    let names: BTreeSet<&String> = counts[0].keys().chain(counts[1].keys()).collect();
    let mut functions: Vec<FunctionDiff> = names
        .into_iter()
        .map(|name| {
            let side = [0, 1].map(|s| per(s, counts[s].get(name).copied().unwrap_or(0)));
            let d = side[1] - side[0];
            FunctionDiff {
                function: name.clone(),
                per_run: side,
                difference: d,
                share: (difference != 0.0).then(|| d / difference),
                only_in: [0, 1].into_iter().find(|&s| only_in[s].contains(name)),
            }
        })
        .collect();
    functions.sort_by(|a, b| {
        b.difference
            .abs()
            .total_cmp(&a.difference.abs())
            .then_with(|| a.function.cmp(&b.function))
    });
    Breakdown {
        runs,
        per_run,
        difference,
        functions,
    }
}

impl Breakdown {
    /// The functions whose counts differ at all.
    pub fn differing(&self) -> impl Iterator<Item = &FunctionDiff> {
        self.functions.iter().filter(|f| f.difference != 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn the_difference_is_split_by_function_and_the_shares_add_up() {
        let a = counts(&[("schedule", 200), ("[user space]", 100), ("memcpy", 40)]);
        let b = counts(&[
            ("schedule", 260),
            ("[user space]", 100),
            ("memcpy", 20),
            ("trace_sched_switch", 80),
        ]);
        let only = [BTreeSet::new(), ["trace_sched_switch".to_string()].into()];
        let d = compare([&a, &b], [2, 2], [&only[0], &only[1]]);
        assert_eq!(d.per_run, [170.0, 230.0]);
        assert_eq!(d.difference, 60.0);
        let names: Vec<&str> = d.functions.iter().map(|f| f.function.as_str()).collect();
        assert_eq!(
            names,
            ["trace_sched_switch", "schedule", "memcpy", "[user space]"]
        );
        assert_eq!(d.functions[0].per_run, [0.0, 40.0]);
        assert_eq!(d.functions[0].only_in, Some(1));
        assert_eq!(d.functions[2].difference, -10.0);
        let shares: f64 = d.functions.iter().filter_map(|f| f.share).sum();
        assert!((shares - 1.0).abs() < 1e-12, "{shares}");
        assert_eq!(d.differing().count(), 3);
    }

    #[test]
    fn identical_sides_differ_nowhere() {
        let a = counts(&[("schedule", 200), ("[user space]", 100)]);
        let none = BTreeSet::new();
        let d = compare([&a, &a], [3, 3], [&none, &none]);
        assert_eq!(d.difference, 0.0);
        assert_eq!(d.differing().count(), 0);
        assert!(d.functions.iter().all(|f| f.share.is_none()));
    }
}
