//! The profiled boots of a run: one per variant per CPU count, with the
//! plugin loaded, each turned into counts per function as it ends.

use super::raw::{self, Region};
use super::store::{self, Counts, Manifest, ModelCounts, PointTotals, ProfileBoot};
use super::symbols::SymbolMap;
use crate::base::error::bail;
use crate::base::error::InputError;
use crate::base::error::{Context, Result};
use crate::base::protocol::{Message, RunRecord};
use crate::guest::images::kernel::KernelImage;
use crate::guest::images::plugin::ProfilePlugin;
use crate::stages::events::{RunEvent, RunObserver};
use crate::stages::plan::Unit;
use crate::stages::run_images::Images;
use crate::stages::suite::Suite;
use crate::stages::vm::{BootEnd, BootRequest, Machine, PluginLoad, Runner};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Mixed into the run seed for the profiled boots' guest seed, so they draw
/// apart from the timed boots.
const SEED_SALT: u64 = 0x7072_6f66_696c_6521;

/// What profiled boots are made with, checked before any boot runs.
#[derive(Debug, Clone)]
pub struct Profiler {
    pub plugin: ProfilePlugin,
    pub icount_shift: u32,
}

/// For a suite that profiles: checks that guest time counts instructions
/// (without icount the counts would not be the timed runs' own, and the
/// guest would not repeat) and builds the plugin, so neither fails only
/// after hours of timed boots.
pub fn prepare(suite: &Suite, machine: &Machine) -> Result<Option<Profiler>> {
    if !suite.profile {
        return Ok(None);
    }
    let Some(icount_shift) = machine.timing.icount_shift else {
        return Err(InputError::in_file(
            &suite.path,
            format_args!(
                "profiles need instruction-count timing (icount, under TCG), and this run \
                 times on the wall clock ({}); run with --timing icount, or without --profile",
                machine.timing.reason
            ),
        )
        .into());
    };
    let plugin = crate::guest::images::plugin::ensure_plugin()?;
    Ok(Some(Profiler {
        plugin,
        icount_shift,
    }))
}

/// The units profiled: the first of the plan for each CPU count and side,
/// so a shard profiles what it times.
pub fn units(suite: &Suite) -> Vec<Unit> {
    let mut seen = BTreeSet::new();
    crate::stages::plan::expand(suite)
        .into_iter()
        .filter(|u| seen.insert((u.cpus, u.side)))
        .collect()
}

/// The guest seed of a profiled boot: the same for both sides at a CPU
/// count, so that an A/A profile runs the same guest twice.
pub fn guest_seed(suite: &Suite, cpus: u32) -> u64 {
    crate::stages::vm::boot_seed(suite.seed ^ SEED_SALT, cpus as usize, 0)
}

pub fn system_map(kernel: &KernelImage) -> PathBuf {
    kernel.dir.join("build").join("System.map")
}

fn unit_name(unit: &Unit) -> String {
    format!("{}-{}cpu", unit.variant, unit.cpus)
}

/// Writes, for each candidate against the baseline, the functions only
/// one of the two kernels has (by their symbol maps `maps`, in the
/// suite's order of variants) into the profiles' directory under `dir`.
fn write_only_in(suite: &Suite, maps: &[SymbolMap], dir: &Path) -> Result<()> {
    let names: Vec<BTreeSet<String>> = maps
        .iter()
        .map(|m| {
            m.names()
                .map(|n| super::symbols::function_name(n).to_string())
                .collect()
        })
        .collect();
    std::fs::create_dir_all(store::dir(dir))?;
    // Each candidate is compared with the baseline.
    let variants: Vec<String> = suite.variants.iter().map(|v| v.name.clone()).collect();
    for candidate in 1..names.len() {
        let files = store::only_in_files(&variants, candidate);
        for (file, (side, other)) in files.iter().zip([(0, candidate), (candidate, 0)]) {
            let only: BTreeSet<String> = names[side].difference(&names[other]).cloned().collect();
            store::write_names(&store::dir(dir).join(file), &only)?;
        }
    }
    Ok(())
}

/// The profiled boots `manifest` does not hold a completed one of, with
/// their numbers among `units`.
fn pending<'u>(units: &'u [Unit], manifest: &Manifest) -> Vec<(usize, &'u Unit)> {
    units
        .iter()
        .enumerate()
        .filter(|(_, unit)| {
            !manifest
                .boots
                .iter()
                .any(|b| b.ok() && b.variant == unit.variant && b.cpus == unit.cpus)
        })
        .collect()
}

impl Profiler {
    /// Runs every profiled boot not yet in `dir`'s manifest, as many at
    /// once as the run has slots.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        suite: &Suite,
        images: &Images,
        machine: &Machine,
        runner: &dyn Runner,
        slots: &crate::stages::slots::Slots,
        events: &mut dyn RunObserver,
        dir: &Path,
    ) -> Result<()> {
        let maps: Vec<SymbolMap> = images
            .kernels
            .iter()
            .map(|k| SymbolMap::read(&system_map(k)))
            .collect::<Result<_, _>>()?;
        let mut manifest = Manifest::read(dir)?.unwrap_or_default();
        manifest.plugin = self.plugin.key.clone();
        manifest.icount_shift = self.icount_shift;
        write_only_in(suite, &maps, dir)?;
        let units = units(suite);
        let pending = pending(&units, &manifest);
        // Profiled boots count instructions, whatever runs beside them:
        // they share the timed boots' slots.
        for side_by_side in pending.chunks(slots.jobs.max(1)) {
            if crate::stages::vm::interrupted() {
                break;
            }
            for &(n, unit) in side_by_side {
                events.on(&RunEvent::ProfiledBootStarted {
                    n,
                    total: units.len(),
                    unit,
                })?;
            }
            let maps = &maps;
            let boots: Vec<Result<ProfileBoot>> = std::thread::scope(|scope| {
                let started: Vec<_> = side_by_side
                    .iter()
                    .enumerate()
                    .map(|(slot, &(_, unit))| {
                        let host_cpu = slots.host_cpu(slot);
                        scope.spawn(move || {
                            self.boot(
                                suite,
                                unit,
                                images,
                                machine,
                                runner,
                                (dir, host_cpu),
                                &maps[unit.side],
                            )
                        })
                    })
                    .collect();
                started
                    .into_iter()
                    .map(|thread| {
                        thread.join().unwrap_or_else(|_| {
                            Err(anyhow::anyhow!("a profiled boot's thread panicked").into())
                        })
                    })
                    .collect()
            });
            for (&(n, unit), boot) in side_by_side.iter().zip(boots) {
                let boot = boot?;
                events.on(&RunEvent::ProfiledBootEnded {
                    n,
                    total: units.len(),
                    end: &boot.end,
                    wall_s: boot.wall_s,
                })?;
                manifest
                    .boots
                    .retain(|b| !(b.variant == unit.variant && b.cpus == unit.cpus));
                manifest.boots.push(boot);
                manifest.write(dir)?;
            }
        }
        manifest.write(dir)
    }

    #[allow(clippy::too_many_arguments)]
    fn boot(
        &self,
        suite: &Suite,
        unit: &Unit,
        images: &Images,
        machine: &Machine,
        runner: &dyn Runner,
        (dir, host_cpu): (&Path, Option<usize>),
        map: &SymbolMap,
    ) -> Result<ProfileBoot> {
        let name = unit_name(unit);
        let console_log = format!("logs/profile-{name}.log");
        let initrd = dir.join(format!("logs/profile-{name}.initrd"));
        images.write_unit_initrd(suite, unit, &initrd)?;
        let output = store::dir(dir).join(format!("raw-{name}.tsv"));
        let _ = std::fs::remove_file(&output);
        let mut request = BootRequest {
            icount_shift: Some(self.icount_shift),
            guest_seed: Some(guest_seed(suite, unit.cpus)),
            plugin: Some(PluginLoad {
                library: self.plugin.path.clone(),
                output: output.clone(),
                // Under the cycle model the profile's buckets get its counts too.
                args: suite
                    .model
                    .as_ref()
                    .map(|m| m.profile_plugin_args())
                    .unwrap_or_default(),
            }),
            host_cpu,
            ..images.boot_request(
                suite,
                unit,
                machine.accel.accel,
                initrd.clone(),
                dir.join(&console_log),
            )
        };
        machine.place(&mut request);
        let started = Instant::now();
        let mut runs: Vec<RunRecord> = Vec::new();
        let outcome = runner.boot(&request, &mut |message| {
            if let Message::Run(record) = message {
                runs.push(record);
            }
        });
        let _ = std::fs::remove_file(&initrd);
        let wall_s = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
        if let BootEnd::PluginFailed { detail } = &outcome.end {
            bail!("QEMU could not load the profile plugin {detail}");
        }
        let mut record = ProfileBoot {
            variant: unit.variant.clone(),
            side: unit.side,
            cpus: unit.cpus,
            guest_seed: request.guest_seed,
            end: outcome.end.clone(),
            wall_s,
            console_log,
            file: store::counts_file(&unit.variant, unit.cpus),
            model_file: None,
            points: Vec::new(),
        };
        if !outcome.end.is_ok() {
            return Ok(record);
        }
        let regions = match raw::read(&output) {
            Ok(r) => r,
            Err(e) => {
                record.end = BootEnd::NoProfile {
                    detail: e.to_string(),
                };
                return Ok(record);
            }
        };
        match attribute_runs(suite, unit, &runs, &regions, map) {
            Ok((counts, model, points)) => {
                store::write_counts(&store::dir(dir).join(&record.file), &counts)?;
                if let Some(model) = model {
                    let file = store::model_counts_file(&unit.variant, unit.cpus);
                    store::write_model_counts(&store::dir(dir).join(&file), &model)?;
                    record.model_file = Some(file);
                }
                record.points = points;
            }
            Err(detail) => record.end = BootEnd::ProfileMismatch { detail },
        }
        std::fs::remove_file(&output).with_context(|| format!("removing {}", output.display()))?;
        Ok(record)
    }
}

/// Pairs the plugin's regions with the agent's runs (one region per timed
/// run, in order), drops the warm-ups, and sums each point's measured runs
/// by function: the instructions, and the cycle model's counts as its
/// points (`llc-misses`, …) when the plugin wrote them.
pub fn attribute_runs(
    suite: &Suite,
    unit: &Unit,
    runs: &[RunRecord],
    regions: &[Region],
    map: &SymbolMap,
) -> Result<(Counts, Option<ModelCounts>, Vec<PointTotals>), String> {
    if runs.len() != regions.len() {
        return Err(format!(
            "the plugin counted {} timed regions but the agent reported {} runs",
            regions.len(),
            runs.len()
        ));
    }
    let mut counts = Counts::new();
    let with_model = regions
        .iter()
        .any(|r| !r.model_user.is_empty() || !r.model_kernel.is_empty());
    let mut model = ModelCounts::new();
    let mut totals: BTreeMap<(String, u64), PointTotals> = BTreeMap::new();
    for (record, region) in runs.iter().zip(regions) {
        let step = unit
            .step(&record.id)
            .ok_or_else(|| format!("the guest reported an unknown step {:?}", record.id))?;
        if record.iteration < step.warmup {
            continue;
        }
        let key = (suite.workloads[step.workload].label(), step.param);
        raw::attribute(region, map, counts.entry(key.clone()).or_default());
        if with_model {
            let mut by_count = BTreeMap::new();
            raw::attribute_model(region, map, &mut by_count);
            let point = model.entry(key.clone()).or_default();
            for (function, named) in by_count {
                for (count, n) in named {
                    if let Some(metric) = crate::base::cycle_model::metric_of_count(&count) {
                        *point
                            .entry(function.clone())
                            .or_default()
                            .entry(metric.to_string())
                            .or_default() += n;
                    }
                }
            }
        }
        let t = totals.entry(key.clone()).or_insert_with(|| PointTotals {
            workload: key.0.clone(),
            param: key.1,
            runs: 0,
            elapsed_ns: 0,
            instructions: 0,
        });
        t.runs += 1;
        t.elapsed_ns += record.elapsed_ns;
        t.instructions += region.total();
    }
    Ok((
        counts,
        with_model.then_some(model),
        totals.into_values().collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn suite() -> Suite {
        let text = crate::stages::suite::tests::GOOD.replace("cpus = [2]", "cpus = [1, 2]");
        Suite::parse(
            Path::new("t.toml"),
            &text,
            &crate::stages::suite::tests::lookup(),
        )
        .unwrap()
    }

    fn run(id: &str, iteration: u32, elapsed_ns: u64) -> RunRecord {
        RunRecord {
            id: id.into(),
            iteration,
            status: 0,
            elapsed_ns,
            user_ns: 0,
            sys_ns: 0,
            output: String::new(),
        }
    }

    #[test]
    fn each_side_and_cpu_count_is_profiled_once_with_one_seed_per_cpu_count() {
        let s = suite();
        let units = units(&s);
        let mut seen: Vec<(u32, usize)> = units.iter().map(|u| (u.cpus, u.side)).collect();
        seen.sort();
        assert_eq!(seen, [(1, 0), (1, 1), (2, 0), (2, 1)]);
        assert_eq!(guest_seed(&s, 1), guest_seed(&s, 1));
        assert_ne!(guest_seed(&s, 1), guest_seed(&s, 2));
    }

    #[test]
    fn regions_pair_with_runs_in_order_and_warmups_are_left_out() {
        let s = suite();
        let unit = &units(&s)[0];
        // GOOD: hackbench 2 and 4, 1 warm-up + 3 measured iterations each.
        let map = SymbolMap::parse(
            "ffffffff81000000 T schedule\nffffffff81000100 T _etext\n",
            Path::new("System.map"),
        )
        .unwrap();
        let mut runs = Vec::new();
        let mut regions = Vec::new();
        for param in [2u64, 4] {
            for iteration in 0..4u32 {
                runs.push(run(&format!("0:hackbench/{param}"), iteration, 1000));
                regions.push(Region {
                    // The warm-up counts far more, so leaving it in would show.
                    user: if iteration == 0 { 1_000_000 } else { 10 },
                    kernel: vec![(0xffffffff81000010, param * 100)],
                    ..Region::default()
                });
            }
        }
        let (counts, model, points) = attribute_runs(&s, unit, &runs, &regions, &map).unwrap();
        assert_eq!(model, None, "no model, no model counts");
        let two = &counts[&("hackbench".to_string(), 2)];
        assert_eq!(two["schedule"], 600);
        assert_eq!(two[raw::USER_SPACE], 30);
        assert_eq!(points.len(), 2);
        assert_eq!(points[1].param, 4);
        assert_eq!(points[1].runs, 3);
        assert_eq!(points[1].elapsed_ns, 3000);
        assert_eq!(points[1].instructions, 3 * (400 + 10));

        // With the model's counts per block: summed like the instructions,
        // both kinds of misprediction into one point, branches left out.
        for (n, region) in regions.iter_mut().enumerate() {
            let warmup = n % 4 == 0;
            region.model_user = [("llc-misses".to_string(), if warmup { 1000 } else { 1 })].into();
            region.model_kernel = [
                ("llc-misses".to_string(), vec![(0xffffffff81000010, 3)]),
                (
                    "conditional-mispredicts".into(),
                    vec![(0xffffffff81000010, 2)],
                ),
                ("indirect-mispredicts".into(), vec![(0xffffffff81000020, 1)]),
                (
                    "conditional-branches".into(),
                    vec![(0xffffffff81000020, 50)],
                ),
            ]
            .into();
        }
        let (again, model, _) = attribute_runs(&s, unit, &runs, &regions, &map).unwrap();
        assert_eq!(again, counts, "the instructions do not move");
        let model = model.unwrap();
        let two = &model[&("hackbench".to_string(), 2)];
        assert_eq!(two["schedule"]["llc-misses"], 9);
        assert_eq!(two["schedule"]["branch-mispredicts"], 9);
        assert_eq!(two[raw::USER_SPACE]["llc-misses"], 3);
        assert_eq!(two["schedule"].len(), 2, "{two:?}");

        let e = attribute_runs(&s, unit, &runs[1..], &regions, &map).unwrap_err();
        assert!(
            e.contains("8 timed regions but the agent reported 7 runs"),
            "{e}"
        );
    }
}
