//! Expands a suite into units (one unit = one boot of one variant at one CPU
//! count) and decides their order.
//!
//! Boots are interleaved in blocks: each block holds one boot of each variant
//! at one CPU count, and the order inside a block alternates A,B / B,A
//! (ABBA; with more variants A,B,C / C,B,A), starting from a side chosen by
//! the suite's seed, or is drawn from the seed. Never all A then
//! all B: slow drifts of the host (thermal, other tenants) then hit both
//! sides alike instead of masquerading as a difference.

use crate::base::protocol::Directive;
use crate::stages::suite::{RunOrder, Suite};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One boot: a variant at a CPU count, running every step in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    /// Position in the run order, from 0.
    pub index: usize,
    /// Index into the suite's variants: 0 the baseline, then each candidate.
    pub side: usize,
    pub variant: String,
    pub cpus: u32,
    /// Boot number of this variant at this CPU count, from 0.
    pub boot: u32,
    pub steps: Vec<Step>,
}

/// One (workload, parameter) point measured inside a boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Index into the suite's workloads.
    pub workload: usize,
    pub param: u64,
    /// Iterations run, warm-up included; the first `warmup` are marked so.
    pub iterations: u32,
    pub warmup: u32,
}

impl Step {
    pub fn id(&self) -> StepId {
        StepId {
            workload: self.workload,
            param: self.param,
        }
    }
}

/// Which step of a boot a run belongs to: a workload of the suite (by its
/// index, so two workloads of one kind stay apart) at one parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StepId {
    /// Index into the suite's workloads.
    pub workload: usize,
    pub param: u64,
}

impl StepId {
    /// The id as the guest's job file and results lines carry it,
    /// `INDEX:LABEL/PARAM` (e.g. `0:hackbench/2`): the label is for people
    /// reading a console log; [`StepId::parse`] reads the index and param.
    pub fn to_wire(self, suite: &Suite) -> String {
        format!(
            "{}:{}/{}",
            self.workload,
            suite.workloads[self.workload].label(),
            self.param
        )
    }

    /// The step id of a results line's id, if it is one.
    pub fn parse(wire: &str) -> Option<StepId> {
        let (index, rest) = wire.split_once(':')?;
        let (_, param) = rest.rsplit_once('/')?;
        Some(StepId {
            workload: index.parse().ok()?,
            param: param.parse().ok()?,
        })
    }
}

impl Unit {
    /// The step of this boot a results line's id names, if any.
    pub fn step(&self, wire_id: &str) -> Option<&Step> {
        let id = StepId::parse(wire_id)?;
        self.steps.iter().find(|s| s.id() == id)
    }
}

/// Steps run in every boot with `cpus` vCPUs: every workload that runs at
/// that count, at every parameter.
pub(crate) fn steps(suite: &Suite, cpus: u32) -> Vec<Step> {
    let mut steps = Vec::new();
    for (w, spec) in suite.workloads.iter().enumerate() {
        if !spec.runs_at(cpus) {
            continue;
        }
        let (iterations, warmup) = spec.iterations_in(suite.iterations, suite.warmup);
        for &param in &spec.params {
            steps.push(Step {
                workload: w,
                param,
                iterations: warmup + iterations,
                warmup,
            });
        }
    }
    steps
}

/// The order of the variants in block `block`: alternating (`abba`: the
/// variants forward, then backward, starting from a side chosen by the
/// seed) or a permutation drawn from the seed (`shuffled`).
fn block_order(
    order: RunOrder,
    seed: u64,
    block: usize,
    n: usize,
    rng: &mut impl Rng,
) -> Vec<usize> {
    let forward: Vec<usize> = (0..n).collect();
    match order {
        RunOrder::Abba => {
            if (block + (seed as usize & 1)).is_multiple_of(2) {
                forward
            } else {
                forward.into_iter().rev().collect()
            }
        }
        // Two variants draw one side, as runs always have: the same seed
        // gives the same order as before there could be more.
        RunOrder::Shuffled if n == 2 => {
            let first = rng.random_range(0..2);
            vec![first, 1 - first]
        }
        RunOrder::Shuffled => {
            let mut sides = forward;
            rand::seq::SliceRandom::shuffle(sides.as_mut_slice(), rng);
            sides
        }
    }
}

/// The whole run, in order: blocks of one boot of every variant at one CPU
/// count. A shard runs a selection of it (see `shard::select`).
pub fn expand(suite: &Suite) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut block = 0usize;
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(suite.seed);
    for boot in 0..suite.boots {
        for &cpus in &suite.cpus {
            let order = block_order(
                suite.order,
                suite.seed,
                block,
                suite.variants.len(),
                &mut rng,
            );
            for side in order {
                units.push(Unit {
                    index: units.len(),
                    side,
                    variant: suite.variants[side].name.clone(),
                    cpus,
                    boot,
                    steps: steps(suite, cpus),
                });
            }
            block += 1;
        }
    }
    units
}

/// A block of one boot of each variant at `cpus`, added after the planned
/// boots by a run with a precision target. Its steps are those of the run's
/// own units at that count (a shard's are its own pieces'); its boot number
/// is `boot`, its units' indices follow `next_index`, and its order is the
/// one block number `block` of the suite's order gets (drawn from the seed
/// and the block, so a resumed run draws it again the same).
pub fn added_block(
    suite: &Suite,
    units: &[Unit],
    cpus: u32,
    boot: u32,
    block: usize,
    next_index: usize,
) -> Vec<Unit> {
    let Some(template) = units.iter().find(|u| u.cpus == cpus) else {
        return Vec::new();
    };
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(suite.seed);
    rng.set_stream(block as u64);
    block_order(
        suite.order,
        suite.seed,
        block,
        suite.variants.len(),
        &mut rng,
    )
    .into_iter()
    .enumerate()
    .map(|(i, side)| Unit {
        index: next_index + i,
        side,
        variant: suite.variants[side].name.clone(),
        cpus,
        boot,
        steps: template.steps.clone(),
    })
    .collect()
}

/// The units of a run's recorded order that are not among `planned`: the
/// blocks a run with a precision target added, rebuilt for its resume with
/// the steps of the planned units at their CPU count.
pub fn recorded_additions(
    suite: &Suite,
    planned: &[Unit],
    order: &[crate::record::UnitRecord],
) -> Vec<Unit> {
    order
        .iter()
        .filter(|r| {
            !planned
                .iter()
                .any(|u| u.variant == r.variant && u.cpus == r.cpus && u.boot == r.boot)
        })
        .filter_map(|r| {
            let side = suite.variants.iter().position(|v| v.name == r.variant)?;
            let template = planned.iter().find(|u| u.cpus == r.cpus)?;
            Some(Unit {
                index: r.index,
                side,
                variant: r.variant.clone(),
                cpus: r.cpus,
                boot: r.boot,
                steps: template.steps.clone(),
            })
        })
        .collect()
}

/// A unit as a run's recorded order holds it.
pub fn record_of(u: &Unit) -> crate::record::UnitRecord {
    crate::record::UnitRecord {
        index: u.index,
        variant: u.variant.clone(),
        cpus: u.cpus,
        boot: u.boot,
        shard: None,
    }
}

/// What a run with a precision target does when a slot is free and every
/// boot so far has started.
#[derive(Debug, Clone, PartialEq)]
pub enum Addition {
    /// Boot these units (a balanced block), because of these points.
    Block {
        units: Vec<Unit>,
        unresolved: Vec<UnresolvedPoint>,
    },
    /// Add nothing now: the boots under way may resolve what is left, so
    /// the next decision waits until one of them has ended.
    Wait,
    /// Add nothing more.
    Stop(crate::record::PrecisionStop),
}

/// A point not yet within a run's precision target, where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct UnresolvedPoint {
    /// The point, as `bisect --point` names it.
    pub point: crate::record::PointKey,
    /// The candidate it compares, when a run has several.
    pub candidate: Option<String>,
    pub precision: crate::base::stats::sequential::PointPrecision,
    pub target: crate::base::stats::sequential::FixedWidth,
}

/// The directives one unit's guest runs.
pub fn job_for(suite: &Suite, unit: &Unit) -> Vec<Directive> {
    let mut directives: Vec<Directive> = Vec::new();
    for spec in &suite.workloads {
        for d in spec.setup() {
            if !directives.contains(&d) {
                directives.push(d);
            }
        }
    }
    for step in &unit.steps {
        if let Some(argv) = suite.workloads[step.workload].before() {
            directives.push(Directive::Before {
                id: step.id().to_wire(suite),
                argv,
            });
        }
        directives.push(Directive::Run {
            id: step.id().to_wire(suite),
            iterations: step.iterations,
            argv: suite.workloads[step.workload].command(step.param),
        });
    }
    directives
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::suite::tests::lookup;
    use std::path::Path;

    fn suite(boots: u32, cpus: &str, seed: u64) -> Suite {
        let text = crate::stages::suite::tests::GOOD
            .replace("boots = 2", &format!("boots = {boots}\nseed = {seed}"))
            .replace("cpus = [2]", &format!("cpus = {cpus}"))
            .replace("params = [2, 4]", "params = [2, 4, 8]");
        Suite::parse(
            Path::new("t.toml"),
            &text,
            &crate::stages::suite::tests::lookup(),
        )
        .unwrap()
    }

    #[test]
    fn recorded_additions_of_a_variant_whose_name_has_spaces_are_kept() {
        let text = crate::stages::suite::tests::GOOD
            .replace("name = \"on\"", "name = \"markers  on\"")
            .replace("cpus = [2]", "cpus = [1, 2]");
        let suite = Suite::parse(Path::new("t.toml"), &text, &lookup()).unwrap();
        let planned = expand(&suite);
        let added = added_block(&suite, &planned, 1, 2, planned.len() / 2, planned.len());
        let order: Vec<_> = planned.iter().chain(&added).map(record_of).collect();
        assert!(
            order
                .iter()
                .any(|r| r.variant == "markers  on" && r.cpus == 1 && r.boot == 2),
            "{order:?}"
        );
        assert_eq!(recorded_additions(&suite, &planned, &order), added);
    }

    #[test]
    fn every_variant_gets_every_boot_at_every_cpu_count() {
        let units = expand(&suite(3, "[1, 2]", 0));
        assert_eq!(units.len(), 3 * 2 * 2);
        for side in 0..2 {
            for cpus in [1, 2] {
                let mut boots: Vec<u32> = units
                    .iter()
                    .filter(|u| u.side == side && u.cpus == cpus)
                    .map(|u| u.boot)
                    .collect();
                boots.sort();
                assert_eq!(boots, vec![0, 1, 2]);
            }
        }
        for (i, u) in units.iter().enumerate() {
            assert_eq!(u.index, i);
            assert_eq!(u.steps.len(), 3);
            assert!(u.steps.iter().all(|s| s.iterations == 4 && s.warmup == 1));
        }
    }

    #[test]
    fn order_is_abba_never_all_a_then_all_b() {
        let sides: Vec<usize> = expand(&suite(4, "[2]", 0)).iter().map(|u| u.side).collect();
        assert_eq!(sides, vec![0, 1, 1, 0, 0, 1, 1, 0]);
        let sides: Vec<usize> = expand(&suite(4, "[2]", 1)).iter().map(|u| u.side).collect();
        assert_eq!(sides, vec![1, 0, 0, 1, 1, 0, 0, 1]);
    }

    #[test]
    fn shuffled_blocks_are_balanced_and_reproducible_from_the_seed() {
        let order = |seed| {
            let mut s = suite(16, "[2]", seed);
            s.order = RunOrder::Shuffled;
            expand(&s).iter().map(|u| u.side).collect::<Vec<_>>()
        };
        let a = order(11);
        assert_eq!(a, order(11));
        assert!(a.chunks(2).all(|b| b[0] != b[1]));
        assert!((0..6).map(order).any(|o| o != a));
        // Not simply ABBA: some neighbouring blocks start with the same side.
        assert!(a
            .chunks(2)
            .zip(a.chunks(2).skip(1))
            .any(|(x, y)| x[0] == y[0]));
    }

    #[test]
    fn step_ids_read_back_from_the_wire_and_keep_workloads_of_one_kind_apart() {
        let text = crate::stages::suite::tests::GOOD.replace(
            "loops = 10\n",
            "loops = 10\n[[workload]]\nkind = \"hackbench\"\nname = \"threads\"\nparams = [2]\nmode = \"thread\"\n",
        );
        let s = Suite::parse(
            Path::new("t.toml"),
            &text,
            &crate::stages::suite::tests::lookup(),
        )
        .unwrap();
        let unit = &expand(&s)[0];
        let wires: Vec<String> = unit.steps.iter().map(|st| st.id().to_wire(&s)).collect();
        assert_eq!(
            wires,
            ["0:hackbench/2", "0:hackbench/4", "1:hackbench:threads/2"]
        );
        for (step, wire) in unit.steps.iter().zip(&wires) {
            assert_eq!(StepId::parse(wire), Some(step.id()));
            assert_eq!(unit.step(wire), Some(step));
        }
        assert_eq!(StepId::parse("hackbench/2"), None);
        assert_eq!(unit.step("7:hackbench/2"), None);
    }

    #[test]
    fn both_variants_alternate_within_each_block() {
        let units = expand(&suite(2, "[1, 2, 4]", 7));
        for block in units.chunks(2) {
            assert_ne!(block[0].side, block[1].side);
            assert_eq!(block[0].cpus, block[1].cpus);
            assert_eq!(block[0].boot, block[1].boot);
        }
    }

    #[test]
    fn three_variants_fill_every_block_forward_then_backward() {
        let text = crate::stages::suite::tests::GOOD.replace(
            "[[variant]]\nname = \"on\"\n",
            "[[variant]]\nname = \"generic\"\nkernel = \"markers-generic\"\n[[variant]]\nname = \"on\"\n",
        );
        let mut s = Suite::parse(
            Path::new("t.toml"),
            &text,
            &crate::stages::suite::tests::lookup(),
        )
        .unwrap();
        let sides: Vec<usize> = expand(&s).iter().map(|u| u.side).collect();
        assert_eq!(sides, vec![0, 1, 2, 2, 1, 0]);
        s.order = RunOrder::Shuffled;
        s.boots = 12;
        let units = expand(&s);
        for block in units.chunks(3) {
            let mut sides: Vec<usize> = block.iter().map(|u| u.side).collect();
            sides.sort();
            assert_eq!(sides, vec![0, 1, 2], "{block:?}");
        }
        let firsts: std::collections::BTreeSet<usize> =
            units.chunks(3).map(|b| b[0].side).collect();
        assert!(
            firsts.len() > 1,
            "every shuffled block starts with the same variant"
        );
    }

    #[test]
    fn shipped_suites_parse_and_plan() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let suite = Suite::load(&path, &lookup()).unwrap_or_else(|e| panic!("{e}"));
                let units = crate::stages::plan::expand(&suite);
                let boots = suite.boots as usize * suite.cpus.len();
                for side in 0..2 {
                    let on_side = units.iter().filter(|u| u.side == side).count();
                    assert_eq!(on_side, boots, "{}", path.display());
                }
                assert!(units.iter().all(|u| !u.steps.is_empty()));
                seen.push(suite.name);
            }
        }
        seen.sort();
        for name in [
            "active-tracing",
            "ia64-2008",
            "micro-2006",
            "noise-icount",
            "quick",
            "x86-2006",
        ] {
            assert!(
                seen.iter().any(|s| s == name),
                "{name} missing from {seen:?}"
            );
        }
    }
}
