//! Splitting a suite over several hosts (`plan --shards N`, `run-shard K`).
//!
//! The work of a suite is a set of *pieces*: one (CPU count, workload point)
//! group and a range of boot numbers. Every piece holds every variant's boots
//! for its point, so each A/B comparison a shard makes is made on one host:
//! never A from one host against B from another.
//!
//! Granularity. With N no larger than the number of groups (CPU counts ×
//! workload points), each shard gets whole groups, consecutive ones, so a
//! shard's points at one CPU count share its boots and every point is
//! measured on a single host: its statistics are those of a single-machine
//! run. Splitting points apart costs boots (a point moved to another shard
//! needs boots of its own), which is the price of running in parallel. With
//! more shards than groups, each group's boots are split into consecutive
//! boot blocks (a block is one boot of each variant, as in the plan's run
//! order) over the group's shards; a point's boots then come from several
//! hosts and the host becomes a blocking factor in the statistics (see
//! `stats::blocked`). More shards than groups × boots would leave shards with
//! nothing to do; that is refused, so every array task of a scheduler does
//! work and no empty result directory has to be explained.

use crate::base::error::InputError;
pub use crate::record::ShardSel;
use crate::stages::plan::{self, Unit};
use crate::stages::suite::Suite;
use serde::{Deserialize, Serialize};

/// One point at one CPU count, for a consecutive range of boot numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece {
    pub cpus: u32,
    /// Index into the suite's workloads.
    pub workload: usize,
    /// The workload's kind, for people reading a plan.
    pub kind: String,
    pub param: u64,
    /// First boot number of the range.
    pub first_boot: u32,
    /// One past the last boot number.
    pub end_boot: u32,
}

impl Piece {
    fn has(&self, cpus: u32, boot: u32, workload: usize, param: u64) -> bool {
        self.cpus == cpus
            && self.workload == workload
            && self.param == param
            && (self.first_boot..self.end_boot).contains(&boot)
    }

    /// E.g. `hackbench 4 on 2 CPUs, boots 0-2`.
    pub fn describe(&self) -> String {
        let boots = if self.end_boot - self.first_boot == 1 {
            format!("boot {}", self.first_boot)
        } else {
            format!("boots {}-{}", self.first_boot, self.end_boot - 1)
        };
        format!(
            "{} {} on {} CPU{}, {boots}",
            self.kind,
            self.param,
            self.cpus,
            if self.cpus == 1 { "" } else { "s" }
        )
    }
}

/// One shard: its pieces and how many boots (of every variant) it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub boots: usize,
    pub pieces: Vec<Piece>,
}

/// A suite's split, as `plan --shards N --out FILE` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardPlan {
    pub suite: String,
    pub suite_sha256: crate::base::sha256::Digest,
    pub overrides: Vec<String>,
    pub count: u32,
    /// Boots of the whole suite on one machine, for comparison with the shards' sum.
    pub single_machine_boots: usize,
    pub shards: Vec<Shard>,
}

/// The (CPU count, step) groups of a suite, in the plan's order.
fn groups(suite: &Suite) -> Vec<(u32, plan::Step)> {
    suite
        .cpus
        .iter()
        .flat_map(|&cpus| plan::steps(suite, cpus).into_iter().map(move |s| (cpus, s)))
        .collect()
}

/// Splits `suite` into `count` shards. Errors when `count` is 0 or exceeds
/// the pieces there are (groups × boots).
pub fn split(suite: &Suite, count: u32) -> Result<Vec<Shard>, InputError> {
    let groups = groups(suite);
    let (g, b, n) = (groups.len(), suite.boots as usize, count as usize);
    if count == 0 {
        return Err(InputError::new("--shards must be at least 1"));
    }
    if n > g * b {
        return Err(InputError::in_file(
            &suite.path,
            format_args!(
                "{count} shards, but this suite has only {} pieces of work ({g} (CPU count, \
                 point) groups × {b} boots); use --shards {} or fewer",
                g * b,
                g * b
            ),
        ));
    }
    let piece = |(cpus, step): &(u32, plan::Step), first_boot: u32, end_boot: u32| Piece {
        cpus: *cpus,
        workload: step.workload,
        kind: suite.workloads[step.workload].kind().to_string(),
        param: step.param,
        first_boot,
        end_boot,
    };
    let mut shards: Vec<Vec<Piece>> = Vec::with_capacity(n);
    if n <= g {
        // Consecutive whole groups, sizes differing by at most one.
        for k in 0..n {
            shards.push(
                groups[k * g / n..(k + 1) * g / n]
                    .iter()
                    .map(|grp| piece(grp, 0, suite.boots))
                    .collect(),
            );
        }
    } else {
        // Every group gets n / g shards, the first n % g one more; each
        // group's boots are cut into that many consecutive blocks. n ≤ g × b,
        // so no group gets more shards than it has boots.
        for (i, grp) in groups.iter().enumerate() {
            let mine = n / g + usize::from(i < n % g);
            for j in 0..mine {
                let (first, end) = (j * b / mine, (j + 1) * b / mine);
                shards.push(vec![piece(grp, first as u32, end as u32)]);
            }
        }
    }
    let whole = plan::expand(suite);
    Ok(shards
        .into_iter()
        .enumerate()
        .map(|(k, pieces)| {
            let mut shard = Shard {
                index: k as u32,
                boots: 0,
                pieces,
            };
            shard.boots = select_units(&whole, &shard).len();
            shard
        })
        .collect())
}

/// The split as a document (for `plan --shards N`).
pub fn plan(suite: &Suite, overrides: &[String], count: u32) -> Result<ShardPlan, InputError> {
    let shards = split(suite, count)?;
    Ok(ShardPlan {
        suite: suite.name.clone(),
        suite_sha256: suite.sha256.clone(),
        overrides: overrides.to_vec(),
        count,
        single_machine_boots: plan::expand(suite).len(),
        shards,
    })
}

/// The units of the whole run order `whole` that carry a piece of `shard`,
/// each keeping only its steps in the shard, renumbered from 0. The
/// blocks of the whole order stay intact: a shard boots every variant of a
/// (CPU count, boot number) in the order the whole run would.
fn select_units(whole: &[Unit], shard: &Shard) -> Vec<Unit> {
    let mut out = Vec::new();
    for unit in whole {
        let mut unit = unit.clone();
        unit.steps.retain(|s| {
            shard
                .pieces
                .iter()
                .any(|p| p.has(unit.cpus, unit.boot, s.workload, s.param))
        });
        if !unit.steps.is_empty() {
            unit.index = out.len();
            out.push(unit);
        }
    }
    out
}

/// The units shard `sel` runs, selected from the whole run order `whole`
/// of `suite`; empty when the selection does not fit the suite (checked
/// with [`check`] when the selection is made).
pub fn select(whole: &[Unit], suite: &Suite, sel: ShardSel) -> Vec<Unit> {
    match split(suite, sel.count) {
        Ok(shards) => shards
            .get(sel.index as usize)
            .map(|s| select_units(whole, s))
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// The pieces shard `sel` runs, for its metadata.
pub fn pieces(suite: &Suite, sel: ShardSel) -> Vec<Piece> {
    split(suite, sel.count)
        .ok()
        .and_then(|s| s.into_iter().nth(sel.index as usize))
        .map(|s| s.pieces)
        .unwrap_or_default()
}

/// Checks a selection against a suite: a count the suite can be split into,
/// an index below it.
pub fn check(suite: &Suite, sel: ShardSel) -> Result<(), InputError> {
    split(suite, sel.count)?;
    if sel.index >= sel.count {
        return Err(InputError::new(format!(
            "shard {} does not exist: shards are numbered 0 to {}",
            sel.index,
            sel.count - 1
        )));
    }
    Ok(())
}

/// What `plan --shards N` prints.
pub fn describe(plan: &ShardPlan) -> String {
    use std::fmt::Write as _;
    let mut t = String::new();
    let total: usize = plan.shards.iter().map(|s| s.boots).sum();
    let _ = writeln!(
        t,
        "suite {} split into {} shard{} ({} boots in all; {} on one machine); each shard boots every variant of its points",
        plan.suite,
        plan.count,
        if plan.count == 1 { "" } else { "s" },
        total,
        plan.single_machine_boots
    );
    if !plan.overrides.is_empty() {
        let _ = writeln!(t, "overrides: {}", plan.overrides.join(", "));
    }
    for s in &plan.shards {
        let _ = writeln!(t, "shard {}: {} boots", s.index, s.boots);
        for p in &s.pieces {
            let _ = writeln!(t, "  {}", p.describe());
        }
    }
    let split_points = plan.shards.len() > 1
        && plan
            .shards
            .iter()
            .any(|s| s.pieces.iter().any(|p| p.first_boot > 0));
    if split_points {
        let _ = writeln!(
            t,
            "note: some points' boots are split over several shards; where those shards run on \
             different hosts, merge treats the host as a blocking factor"
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::Path;

    fn units(s: &Suite, sel: ShardSel) -> Vec<Unit> {
        select(&plan::expand(s), s, sel)
    }

    fn suite(boots: u32, cpus: &str, params: &str) -> Suite {
        let text = crate::stages::suite::tests::GOOD
            .replace("boots = 2", &format!("boots = {boots}"))
            .replace("cpus = [2]", &format!("cpus = {cpus}"))
            .replace("params = [2, 4]", &format!("params = {params}"));
        Suite::parse(
            Path::new("t.toml"),
            &text,
            &crate::stages::suite::tests::lookup(),
        )
        .unwrap()
    }

    /// (variant, cpus, boot, workload, param) → how many shards run it.
    fn coverage(s: &Suite, count: u32) -> BTreeMap<(String, u32, u32, usize, u64), usize> {
        let mut seen = BTreeMap::new();
        for index in 0..count {
            for u in units(s, ShardSel { index, count }) {
                for step in &u.steps {
                    *seen
                        .entry((u.variant.clone(), u.cpus, u.boot, step.workload, step.param))
                        .or_insert(0) += 1;
                }
            }
        }
        seen
    }

    #[test]
    fn every_unit_of_work_is_in_exactly_one_shard() {
        for (boots, cpus, params) in [(3, "[1, 2]", "[2, 4, 8]"), (4, "[1]", "[2, 4]")] {
            let s = suite(boots, cpus, params);
            let whole = coverage(&s, 1);
            let most = (whole.len() / 2) as u32; // groups × boots
            for count in 1..=most {
                let cov = coverage(&s, count);
                assert_eq!(
                    cov.keys().collect::<Vec<_>>(),
                    whole.keys().collect::<Vec<_>>(),
                    "{count} shards"
                );
                assert!(cov.values().all(|&n| n == 1), "{count} shards: {cov:?}");
            }
        }
    }

    #[test]
    fn each_shard_boots_both_variants_of_its_points() {
        let s = suite(3, "[1, 2]", "[2, 4, 8]");
        for count in 1..=18 {
            for index in 0..count {
                let units = units(&s, ShardSel { index, count });
                assert!(!units.is_empty(), "shard {index} of {count} is empty");
                // Per (cpus, boot, point): one unit of each side.
                let mut sides: BTreeMap<(u32, u32, usize, u64), Vec<usize>> = BTreeMap::new();
                for u in &units {
                    for st in &u.steps {
                        sides
                            .entry((u.cpus, u.boot, st.workload, st.param))
                            .or_default()
                            .push(u.side);
                    }
                }
                for (k, v) in sides {
                    let mut v = v;
                    v.sort();
                    assert_eq!(v, vec![0, 1], "shard {index}/{count} {k:?}");
                }
                // Blocks stay interleaved: sides alternate in pairs.
                for pair in units.chunks(2) {
                    assert_ne!(pair[0].side, pair[1].side);
                }
            }
        }
    }

    #[test]
    fn up_to_the_group_count_every_point_stays_on_one_shard() {
        let s = suite(3, "[1, 2]", "[2, 4, 8]"); // 6 groups
        for count in 1..=6 {
            let shards = split(&s, count).unwrap();
            assert!(shards
                .iter()
                .flat_map(|sh| &sh.pieces)
                .all(|p| p.first_boot == 0 && p.end_boot == 3));
            let sizes: Vec<usize> = shards.iter().map(|sh| sh.pieces.len()).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        }
        // Beyond it, boots are split into blocks: 9 shards over 6 groups.
        let shards = split(&s, 9).unwrap();
        assert!(shards.iter().all(|sh| sh.pieces.len() == 1));
        assert_eq!(
            shards[0].pieces[0].end_boot - shards[0].pieces[0].first_boot,
            1
        );
        assert_eq!(shards[1].pieces[0].first_boot, 1);
    }

    #[test]
    fn impossible_counts_are_refused_with_the_largest_possible() {
        let s = suite(2, "[1]", "[2, 4]");
        let e = split(&s, 0).unwrap_err().to_string();
        assert!(e.contains("at least 1"), "{e}");
        let e = split(&s, 5).unwrap_err().to_string();
        assert!(
            e.contains("t.toml") && e.contains("--shards 4 or fewer"),
            "{e}"
        );
        let e = check(&s, ShardSel { index: 4, count: 4 })
            .unwrap_err()
            .to_string();
        assert!(e.contains("0 to 3"), "{e}");
    }
}
