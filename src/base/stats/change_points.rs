//! Change points of a series of runs: E-Divisive means (Matteson & James,
//! "A Nonparametric Approach for Multiple Change Point Analysis of
//! Multivariate Data", JASA 2014) with a permutation test of each split, as
//! MongoDB's performance CI uses it (Daly et al., "The Use of Change Point
//! Detection to Identify Software Performance Regressions in a Continuous
//! Integration System", ICPE 2020).
//!
//! For a split of a segment into a left part X (m values) and a right part
//! Y (k values) the divergence is
//!
//! ```text
//! Q = m·k/(m+k) · ( 2/(m·k) Σ|Xi−Yj| − 1/C(m,2) Σ|Xi−Xi'| − 1/C(k,2) Σ|Yj−Yj'| )
//! ```
//!
//! (the energy distance with exponent 1). The split with the largest Q over
//! every segment found so far is tested: its Q is set against the largest Q
//! of `permutations` random orders of the same segment's values, and the
//! split is kept when the share of orders at least as divergent is at most
//! `alpha`. Then the search repeats on the pieces until a test fails.
//!
//! Nothing is divided by a spread: a segment of identical values has Q = 0
//! and no split (every order is as divergent), while an exact step in a
//! series without noise (icount runs of the same kernels repeat exactly) has
//! the largest Q of all orders and is found. A minimum segment length keeps
//! a single outlying run from being called a change.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// How change points are searched and tested.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePointConfig {
    /// The fewest runs on each side of a change point (at least 2).
    pub min_segment: usize,
    /// The permutation test's level: a split is kept when its p-value is at most this.
    pub alpha: f64,
    /// Random orders per test; the smallest p-value is 1/(permutations+1).
    pub permutations: usize,
    /// Seed of the permutations, so the same series gives the same answer.
    pub seed: u64,
}

impl Default for ChangePointConfig {
    fn default() -> Self {
        ChangePointConfig {
            // Three runs a side: one odd night (a host hiccup, a boot that
            // drew badly) and its neighbour cannot make a change by themselves.
            min_segment: 3,
            // MongoDB tests at 0.05 on long series; a nightly page is read
            // point by point, so each point's false alarms are kept rarer.
            alpha: 0.01,
            permutations: 199,
            // "markcpts" in ASCII: any fixed value reproduces.
            seed: 0x6d61_726b_6370_7473,
        }
    }
}

/// A change point: the series changed between `index − 1` and `index`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// The first value after the change.
    pub index: usize,
    /// The divergence of the split.
    pub q: f64,
    /// The permutation test's p-value.
    pub p_value: f64,
}

/// The best split of `values` with at least `min` values a side:
/// `(split, Q)`, `split` being the first value of the right part. `None`
/// when the segment is too short.
pub fn best_split(values: &[f64], min: usize) -> Option<(usize, f64)> {
    let min = min.max(2);
    let n = values.len();
    if n < 2 * min {
        return None;
    }
    // Sums of distances for the split at `min`, then updated as each value
    // moves from the right part to the left: O(n²) for all splits.
    let dist = |i: usize, j: usize| (values[i] - values[j]).abs();
    let (mut between, mut left, mut right) = (0.0, 0.0, 0.0);
    for i in 0..n {
        for j in i + 1..n {
            match (i < min, j < min) {
                (true, true) => left += dist(i, j),
                (true, false) => between += dist(i, j),
                _ => right += dist(i, j),
            }
        }
    }
    let mut best: Option<(usize, f64)> = None;
    for tau in min..=n - min {
        if tau > min {
            // Value tau − 1 has just moved from the right part to the left.
            let moved = tau - 1;
            let to_left: f64 = (0..moved).map(|i| dist(i, moved)).sum();
            let to_right: f64 = (tau..n).map(|j| dist(moved, j)).sum();
            between += to_right - to_left;
            left += to_left;
            right -= to_right;
        }
        let (m, k) = (tau as f64, (n - tau) as f64);
        let energy =
            2.0 * between / (m * k) - left / (m * (m - 1.0) / 2.0) - right / (k * (k - 1.0) / 2.0);
        let q = m * k / (m + k) * energy;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// The change points of `values`, in order.
pub fn e_divisive(values: &[f64], config: &ChangePointConfig) -> Vec<ChangePoint> {
    let mut bounds = vec![0, values.len()];
    let mut found = Vec::new();
    loop {
        // The most divergent split of any current segment.
        let candidate = bounds
            .windows(2)
            .filter_map(|w| {
                best_split(&values[w[0]..w[1]], config.min_segment)
                    .map(|(tau, q)| (w[0], w[1], w[0] + tau, q))
            })
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((start, end, index, q)) = candidate else {
            break;
        };
        let p_value = permutation_p_value(&values[start..end], q, config, start);
        if !(q > 0.0 && p_value <= config.alpha) {
            break;
        }
        found.push(ChangePoint { index, q, p_value });
        bounds.push(index);
        bounds.sort_unstable();
    }
    found.sort_by_key(|c| c.index);
    found
}

/// The share of random orders of `segment` whose best split is at least as
/// divergent as `q`, the observed order counted among them.
fn permutation_p_value(segment: &[f64], q: f64, config: &ChangePointConfig, start: usize) -> f64 {
    // One stream per segment, so a segment's test does not depend on which
    // other segments were tested before it.
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    rng.set_stream(((start as u64) << 32) | segment.len() as u64);
    let mut shuffled = segment.to_vec();
    // Sums in another order round differently: a permutation that only
    // reorders within the parts is as divergent, not more.
    let tolerance = q.abs() * 1e-9;
    let mut as_divergent = 0usize;
    for _ in 0..config.permutations {
        shuffled.shuffle(&mut rng);
        if best_split(&shuffled, config.min_segment).is_some_and(|(_, qp)| qp >= q - tolerance) {
            as_divergent += 1;
        }
    }
    (as_divergent + 1) as f64 / (config.permutations + 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(before: usize, after: usize, low: f64, high: f64) -> Vec<f64> {
        let mut v = vec![low; before];
        v.extend(std::iter::repeat_n(high, after));
        v
    }

    #[test]
    fn identical_values_have_no_change_point() {
        assert!(e_divisive(&[7.0; 20], &ChangePointConfig::default()).is_empty());
        assert_eq!(best_split(&[7.0; 20], 3).map(|(_, q)| q), Some(0.0));
    }

    #[test]
    fn an_exact_step_without_noise_is_found_where_it_is() {
        let found = e_divisive(&step(7, 6, 100.0, 103.0), &ChangePointConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 7);
        assert!(found[0].p_value <= 0.01);
    }

    #[test]
    fn two_steps_are_both_found() {
        // The first split tested leaves a mixture on one side, so each
        // level needs more runs than a single step does.
        let mut v = step(8, 8, 100.0, 103.0);
        v.extend([99.0; 8]);
        let found: Vec<usize> = e_divisive(&v, &ChangePointConfig::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(found, [8, 16]);
    }

    #[test]
    fn a_single_spike_is_no_change_point() {
        let mut v = vec![
            100.0, 100.1, 99.9, 100.0, 100.2, 99.8, 100.0, 100.1, 99.9, 100.0,
        ];
        v[5] = 110.0;
        assert!(e_divisive(&v, &ChangePointConfig::default()).is_empty());
    }

    #[test]
    fn too_short_a_series_has_no_split() {
        assert_eq!(best_split(&[1.0, 2.0, 3.0, 4.0, 5.0], 3), None);
        assert!(e_divisive(&[], &ChangePointConfig::default()).is_empty());
    }

    #[test]
    fn the_incremental_sums_agree_with_the_definition() {
        let v = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0];
        let direct = |tau: usize| {
            let (x, y) = v.split_at(tau);
            let pairs = |a: &[f64], b: &[f64]| -> f64 {
                a.iter()
                    .flat_map(|p| b.iter().map(move |q| (p - q).abs()))
                    .sum()
            };
            let (m, k) = (x.len() as f64, y.len() as f64);
            let e = 2.0 * pairs(x, y) / (m * k)
                - pairs(x, x) / (m * (m - 1.0))
                - pairs(y, y) / (k * (k - 1.0));
            m * k / (m + k) * e
        };
        let best = (3..=7)
            .map(|t| (t, direct(t)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let (tau, q) = best_split(&v, 3).unwrap();
        assert_eq!(tau, best.0);
        assert!((q - best.1).abs() < 1e-9, "{q} against {}", best.1);
    }
}
