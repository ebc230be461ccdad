//! A run with a precision target: after the planned boots, which block of
//! boots comes next, read from the run directory after every block.
//!
//! Each CPU count whose points are not yet within the target is a
//! candidate for one more block (one boot of each variant). The candidate
//! that needs the fewest boots still (by the model of each point's
//! variance) goes first, so a point that is nearly resolved is resolved
//! before the budget goes to one that needs many more boots than it can
//! get. A block starts only when its boots fit under the cap and its
//! expected wall time (the mean of the boots at that CPU count so far)
//! fits in what is left of the budget, counted from the first boot.

use crate::base::error::Result;
use crate::base::stats::sequential::FixedWidth;
use crate::record::{PrecisionStop, RunMeta};
use crate::stages::analysis::precision::{standings, Standing};
use crate::stages::analysis::Analysis;
use crate::stages::plan::{self, Addition, Unit, UnresolvedPoint};
use crate::stages::suite::Suite;
use std::path::Path;

/// One CPU count's standing: what it still needs and what a block of it costs.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub cpus: u32,
    /// Its points not yet within the target.
    pub unresolved: Vec<UnresolvedPoint>,
    /// The most boots a side any of its points still needs by the model of
    /// its variance (`usize::MAX` where a point has no interval yet).
    pub boots_short: usize,
    /// Expected wall time of one block, in seconds.
    pub block_s: f64,
}

/// The next block's CPU count, or why there is none: every group resolved,
/// or the first group that needs a block fits neither the boots left nor
/// the time left, and no other does either.
pub fn choose(
    groups: &[Group],
    variants: usize,
    boots_left: usize,
    time_left_s: Option<f64>,
) -> Result<u32, PrecisionStop> {
    let mut wanting: Vec<&Group> = groups.iter().filter(|g| !g.unresolved.is_empty()).collect();
    if wanting.is_empty() {
        return Err(PrecisionStop::Resolved);
    }
    wanting.sort_by_key(|g| (g.boots_short, g.cpus));
    if boots_left < variants {
        return Err(PrecisionStop::MaxBoots);
    }
    wanting
        .iter()
        .find(|g| time_left_s.is_none_or(|left| left > 0.0 && g.block_s <= left))
        .map(|g| g.cpus)
        .ok_or(PrecisionStop::Budget)
}

/// Where an unresolved point stands, by its key (the syntax of
/// `bisect --point`) and, when there are several, its candidate.
fn unresolved_point(analysis: &Analysis, s: &Standing, rule: FixedWidth) -> UnresolvedPoint {
    let candidate = (analysis.comparisons.len() > 1).then(|| {
        let [_, candidate] = analysis.names(&analysis.comparisons[s.comparison]);
        candidate.to_string()
    });
    UnresolvedPoint {
        point: crate::record::PointKey {
            workload: s.key.workload.clone(),
            metric: s.key.metric.clone(),
            cpus: s.key.cpus,
            param: s.param,
        },
        candidate,
        precision: s.precision,
        target: rule,
    }
}

/// The groups of a run as its directory holds it: the CPU counts its units
/// boot at, each with its unresolved points and the cost of a block.
pub fn groups(analysis: &Analysis, meta: &RunMeta, units: &[Unit], rule: FixedWidth) -> Vec<Group> {
    let standings = standings(analysis, rule);
    let mut cpu_counts: Vec<u32> = units.iter().map(|u| u.cpus).collect();
    cpu_counts.sort_unstable();
    cpu_counts.dedup();
    let variants = analysis.variants.len().max(1);
    cpu_counts
        .into_iter()
        .map(|cpus| {
            let here: Vec<&Standing> = standings.iter().filter(|s| s.key.cpus == cpus).collect();
            let unresolved: Vec<&Standing> = here
                .iter()
                .copied()
                .filter(|s| !s.precision.resolved)
                .collect();
            let boots_short = unresolved
                .iter()
                .map(|s| match s.precision.boots_needed {
                    Some(needed) => needed.saturating_sub(s.precision.boots),
                    None => usize::MAX,
                })
                .max()
                .unwrap_or(0);
            let walls: Vec<f64> = meta
                .boots
                .iter()
                .filter(|b| b.cpus == cpus && b.ok())
                .map(|b| b.wall_s)
                .collect();
            let boot_s = if walls.is_empty() {
                0.0
            } else {
                walls.iter().sum::<f64>() / walls.len() as f64
            };
            Group {
                cpus,
                unresolved: unresolved
                    .iter()
                    .map(|s| unresolved_point(analysis, s, rule))
                    .collect(),
                boots_short,
                block_s: boot_s * variants as f64,
            }
        })
        .collect()
}

/// Counts the boots under way towards their groups: a group whose boots
/// under way give it what it still needs wants no block now, and a block's
/// expected time is its boots' shared among `jobs` slots. Returns whether
/// a group is left waiting for its boots under way.
fn count_running(groups: &mut [Group], running: &[Unit], variants: usize, jobs: usize) -> bool {
    let mut covered = false;
    for group in groups.iter_mut() {
        let under_way = running.iter().filter(|u| u.cpus == group.cpus).count();
        let blocks = under_way.div_ceil(variants.max(1));
        if group.boots_short != usize::MAX {
            group.boots_short = group.boots_short.saturating_sub(blocks);
        }
        if !group.unresolved.is_empty() && group.boots_short == 0 && blocks > 0 {
            group.unresolved.clear();
            covered = true;
        }
        // One boot of each variant, side by side as the slots allow.
        let deep = variants.max(1).div_ceil(jobs.max(1));
        group.block_s = group.block_s / variants.max(1) as f64 * deep as f64;
    }
    covered
}

/// What decides a run's added blocks: its suite, its rule and bounds, and
/// the shard whose groups it adds to.
pub struct Additions<'a> {
    pub suite: &'a Suite,
    pub dir: &'a Path,
    pub rule: FixedWidth,
    /// The most boots the run may have, planned and added.
    pub cap: usize,
    /// The budget, if there is one, in seconds of wall time from the
    /// first boot: kernel builds, image preparation and trial boots before
    /// it do not spend it, so a cold run gets the same boots as a warm one.
    pub budget_s: Option<f64>,
    /// When this process's first boot started.
    pub first_boot: std::time::Instant,
    /// Wall time a resumed run's earlier boots spent.
    pub already_s: f64,
    /// This run's shard (index, count); (0, 1) for a whole run. Shards of
    /// one sweep number their added boots apart, so they never collide
    /// when merged.
    pub shard: (u32, u32),
    /// Guests booted at once: a block's boots share the slots, and the
    /// boots' wall times add up to that many times the clock's.
    pub jobs: usize,
}

impl Additions<'_> {
    /// The next block after `units`, from the run directory as it stands,
    /// with the boots of `running` under way (their samples so far are
    /// left out; each counts towards what its group still needs).
    pub fn next(&self, units: &[Unit], running: &[Unit]) -> Result<Addition> {
        let meta = RunMeta::read(self.dir)?;
        if meta
            .boots
            .iter()
            .any(|b| !b.ok() && b.boot >= self.suite.boots)
        {
            return Ok(Addition::Stop(PrecisionStop::FailedBoots));
        }
        let ended: std::collections::BTreeSet<_> = meta.boots.iter().map(|b| b.key()).collect();
        let mut samples = crate::record::read_samples(self.dir)?;
        samples.retain(|s| ended.contains(&s.boot_key()));
        let analysis = crate::stages::analysis::analyse_unbootstrapped(&meta, &samples);
        let variants = self.suite.variants.len();
        let mut groups = groups(&analysis, &meta, units, self.rule);
        let covered = count_running(&mut groups, running, variants, self.jobs);
        // The clock since the first boot, which counts the gaps between
        // boots too; never less than the boots' own recorded wall time
        // shared by the slots (which is all a guest that reports its time,
        // as the fake one does, has spent).
        let booted: f64 = meta.boots.iter().map(|b| b.wall_s).sum::<f64>() / self.jobs as f64;
        let spent = (self.already_s + self.first_boot.elapsed().as_secs_f64()).max(booted);
        let time_left = self.budget_s.map(|budget| budget - spent);
        let cpus = match choose(
            &groups,
            variants,
            self.cap.saturating_sub(units.len()),
            time_left,
        ) {
            Ok(cpus) => cpus,
            Err(PrecisionStop::Resolved) if covered => return Ok(Addition::Wait),
            Err(why) => return Ok(Addition::Stop(why)),
        };
        let (index, count) = self.shard;
        let added_here = units
            .iter()
            .filter(|u| u.cpus == cpus && u.boot >= self.suite.boots)
            .count()
            / variants;
        let boot = self.suite.boots + index + count * added_here as u32;
        let block = units.len() / variants;
        let next_index = units.iter().map(|u| u.index + 1).max().unwrap_or(0);
        let unresolved = groups
            .into_iter()
            .find(|g| g.cpus == cpus)
            .map(|g| g.unresolved)
            .unwrap_or_default();
        Ok(Addition::Block {
            units: plan::added_block(self.suite, units, cpus, boot, block, next_index),
            unresolved,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn point(key: &str) -> UnresolvedPoint {
        UnresolvedPoint {
            point: key.parse().unwrap(),
            candidate: None,
            precision: crate::base::stats::sequential::PointPrecision {
                half_width: None,
                boots: 2,
                boots_needed: None,
                resolved: false,
            },
            target: FixedWidth::percent_target(0.5),
        }
    }

    fn group(cpus: u32, unresolved: usize, boots_short: usize, block_s: f64) -> Group {
        Group {
            cpus,
            unresolved: (0..unresolved)
                .map(|i| point(&format!("w/m@{cpus}={i}")))
                .collect(),
            boots_short,
            block_s,
        }
    }

    #[test]
    fn the_group_nearest_its_target_gets_the_next_block() {
        let groups = [group(1, 1, 3, 40.0), group(2, 1, 200, 50.0)];
        assert_eq!(choose(&groups, 2, 100, None), Ok(1));
        // Once it is resolved, what is left goes to the other.
        let groups = [group(1, 0, 0, 40.0), group(2, 1, 200, 50.0)];
        assert_eq!(choose(&groups, 2, 100, Some(60.0)), Ok(2));
    }

    #[test]
    fn a_point_without_an_interval_waits_behind_one_with_a_model() {
        let groups = [group(1, 1, usize::MAX, 40.0), group(2, 1, 9, 50.0)];
        assert_eq!(choose(&groups, 2, 100, None), Ok(2));
    }

    #[test]
    fn every_point_resolved_stops_the_run() {
        let groups = [group(1, 0, 0, 40.0), group(2, 0, 0, 50.0)];
        assert_eq!(choose(&groups, 2, 100, None), Err(PrecisionStop::Resolved));
    }

    #[test]
    fn a_block_that_would_end_after_the_budget_does_not_start() {
        let groups = [group(1, 1, 3, 40.0), group(2, 1, 200, 50.0)];
        assert_eq!(
            choose(&groups, 2, 100, Some(30.0)),
            Err(PrecisionStop::Budget)
        );
        // A cheaper block that fits still runs when the first does not.
        let groups = [group(2, 1, 3, 50.0), group(1, 1, 200, 40.0)];
        assert_eq!(choose(&groups, 2, 100, Some(45.0)), Ok(1));
    }

    #[test]
    fn a_block_that_would_pass_the_cap_does_not_start() {
        let groups = [group(1, 1, 3, 40.0)];
        assert_eq!(choose(&groups, 2, 1, None), Err(PrecisionStop::MaxBoots));
        assert_eq!(choose(&groups, 2, 2, None), Ok(1));
    }
}

#[cfg(test)]
mod running_tests {
    use super::*;
    use crate::stages::plan::Unit;

    fn group(cpus: u32, boots_short: usize) -> Group {
        Group {
            cpus,
            unresolved: vec![super::tests::point("w/m@1=1")],
            boots_short,
            block_s: 60.0,
        }
    }

    fn unit(cpus: u32) -> Unit {
        Unit {
            index: 0,
            side: 0,
            variant: "a".into(),
            cpus,
            boot: 5,
            steps: Vec::new(),
        }
    }

    #[test]
    fn a_group_whose_boots_under_way_give_what_it_needs_waits_for_them() {
        let mut groups = [group(1, 1), group(2, 5)];
        let covered = count_running(&mut groups, &[unit(1), unit(1)], 2, 2);
        assert!(covered);
        assert!(groups[0].unresolved.is_empty());
        assert_eq!(groups[1].boots_short, 5);
        // Two variants on two slots: a block takes one boot's time.
        assert_eq!(groups[1].block_s, 30.0);
        // The other group still wants a block, so the next one is its.
        assert_eq!(choose(&groups, 2, 100, None), Ok(2));
        // Nothing under way: nothing waits, and one slot takes both boots.
        let mut groups = [group(1, 1)];
        assert!(!count_running(&mut groups, &[], 2, 1));
        assert_eq!((groups[0].boots_short, groups[0].block_s), (1, 60.0));
    }

    #[test]
    fn a_group_without_a_model_yet_keeps_wanting_blocks() {
        let mut groups = [group(2, usize::MAX)];
        assert!(!count_running(&mut groups, &[unit(2), unit(2)], 2, 2));
        assert_eq!(choose(&groups, 2, 100, None), Ok(2));
    }
}
