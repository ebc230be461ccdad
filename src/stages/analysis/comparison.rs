//! Which variant is compared with which.

use crate::record::RunMeta;
use serde::Serialize;

/// What each candidate is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Against {
    /// Every candidate against the first kernel: a baseline and its alternatives.
    Baseline,
    /// Every kernel against the one before it: the cost of each commit of a
    /// patch series.
    Previous,
}

/// One comparison: two variants of the run, by their position in
/// [`variant_names`] (and in [`super::Point::sides`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Comparison {
    pub baseline: usize,
    pub candidate: usize,
}

impl Comparison {
    /// The comparisons among `variants` variants (baseline first): one per
    /// candidate, so none with fewer than two variants.
    pub fn all(variants: usize, against: Against) -> Vec<Comparison> {
        (1..variants)
            .map(|candidate| Comparison {
                baseline: match against {
                    Against::Baseline => 0,
                    Against::Previous => candidate - 1,
                },
                candidate,
            })
            .collect()
    }
}

/// The run's variants, baseline first. A run records at least two; runs
/// that somehow hold fewer get stand-in names, so their report still renders.
pub fn variant_names(meta: &RunMeta) -> Vec<String> {
    let mut names: Vec<String> = meta.kernels.iter().map(|k| k.variant.clone()).collect();
    for stand_in in ["A", "B"].iter().skip(names.len()) {
        names.push(stand_in.to_string());
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::KernelMeta;

    #[test]
    fn each_candidate_is_compared_once_with_the_baseline_or_its_predecessor() {
        let pairs = |against| -> Vec<(usize, usize)> {
            Comparison::all(4, against)
                .iter()
                .map(|c| (c.baseline, c.candidate))
                .collect()
        };
        assert_eq!(pairs(Against::Baseline), [(0, 1), (0, 2), (0, 3)]);
        assert_eq!(pairs(Against::Previous), [(0, 1), (1, 2), (2, 3)]);
        assert!(Comparison::all(1, Against::Baseline).is_empty());
    }

    #[test]
    fn variant_names_follow_the_kernels_and_stand_in_for_missing_ones() {
        let meta = |names: &[&str]| RunMeta {
            kernels: names
                .iter()
                .map(|n| KernelMeta {
                    variant: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        assert_eq!(variant_names(&meta(&[])), ["A", "B"]);
        assert_eq!(variant_names(&meta(&["off"])), ["off", "B"]);
        assert_eq!(
            variant_names(&meta(&["off", "on", "generic"])),
            ["off", "on", "generic"]
        );
    }
}
