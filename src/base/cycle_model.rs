//! The cycle model as markbench drives it: the settings it hands the
//! plugin (`plugin/src/model/` simulates the caches and the branch
//! predictor), the counts the plugin writes per timed run, and the points
//! they become beside each workload's own metric. docs/cycle-model.md says
//! what the model is and where its default figures come from.

use crate::base::error::InputError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The one model there is, as `--model` and a suite's `model` name it.
pub const MODEL_NAME: &str = "cycles";

/// The file in a run directory that records the model's settings, present
/// only in runs made with the model.
pub const SETTINGS_FILE: &str = "cycle-model.toml";

/// One setting markbench passes the plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub name: &'static str,
    /// The figure a run uses unless its suite sets another.
    pub default: u64,
    /// For a part of the model that can be turned off: the value that
    /// turns it off, which a run recorded before the setting existed ran
    /// with (its `cycle-model.toml` lacks the key) and which a suite may
    /// set. `None`: the setting is a size or a cost, and 0 is refused.
    pub off: Option<u64>,
    pub what: &'static str,
}

const fn setting(name: &'static str, default: u64, what: &'static str) -> Setting {
    Setting {
        name,
        default,
        off: None,
        what,
    }
}

const fn part(name: &'static str, default: u64, off: u64, what: &'static str) -> Setting {
    Setting {
        name,
        default,
        off: Some(off),
        what,
    }
}

/// Every setting, its default (a current x86 server core) and what it is.
/// markbench passes all of them to the plugin, so these are the figures a
/// run uses whatever the plugin's own defaults.
pub const SETTINGS: &[Setting] = &[
    setting(
        "l1i-bytes",
        32 << 10,
        "L1 instruction cache per vCPU, bytes",
    ),
    setting("l1i-ways", 8, "its associativity"),
    setting("l1d-bytes", 32 << 10, "L1 data cache per vCPU, bytes"),
    setting("l1d-ways", 8, "its associativity"),
    setting("l2-bytes", 1 << 20, "unified L2 per vCPU, bytes"),
    setting("l2-ways", 16, "its associativity"),
    setting(
        "llc-bytes",
        4 << 20,
        "last-level cache shared by all vCPUs, bytes",
    ),
    setting("llc-ways", 16, "its associativity"),
    setting(
        "gshare-bits",
        14,
        "log2 of the gshare table's 2-bit counters",
    ),
    setting("btb-bits", 12, "log2 of the branch target buffer's entries"),
    setting("l2-cycles", 14, "cycles of an L1 miss served by the L2"),
    setting(
        "llc-cycles",
        50,
        "cycles of an access served by the last level",
    ),
    setting("memory-cycles", 200, "cycles of an access served by memory"),
    setting(
        "coherence-cycles",
        70,
        "cycles of a coherence miss (served by another core)",
    ),
    setting("mispredict-cycles", 17, "cycles of a mispredicted branch"),
    part(
        "rsb-depth",
        32,
        0,
        "return stack buffer entries per vCPU (0: returns predicted by the BTB)",
    ),
    part(
        "skip-entries",
        1,
        0,
        "1: an indirect branch into a kernel entry (an interrupt, a system call) is no \
         prediction to score",
    ),
    // Read only while string-bytes-per-cycle is above 0: a run recorded
    // before strings were modelled ran with them off, whatever this is.
    setting(
        "string-startup-cycles",
        35,
        "cycles a rep-prefixed string instruction takes to start",
    ),
    part(
        "string-bytes-per-cycle",
        32,
        0,
        "bytes a string instruction moves a cycle (0: one instruction per iteration)",
    ),
    part(
        "string-nontemporal",
        0,
        0,
        "1: string stores bypass the caches",
    ),
    part(
        "prefetch-streams",
        32,
        0,
        "streams the L2's prefetcher follows per vCPU (0: no prefetcher)",
    ),
    part(
        "llc-victim",
        1,
        0,
        "1: the LLC is filled by the L2s' evictions; 0: on every L2 miss",
    ),
    part(
        "issue-width",
        4,
        0,
        "instructions the core issues a cycle: each block costs its throughput and its \
         register chains (0: one cycle an instruction)",
    ),
    // Read only while issue-width is above 0.
    setting(
        "load-cycles",
        4,
        "cycles of a load the L1d serves, within a block's own cost",
    ),
    // Read only while issue-width is above 0.
    part(
        "special-costs",
        1,
        0,
        "1: privileged and serializing instructions (swapgs, sysret, iret, wrmsr, CR3 \
         writes, fences, cpuid, rdtsc) cost their class in a block, a serializing one ending \
         the overlap",
    ),
    part(
        "tlb-walk-cycles",
        30,
        0,
        "cycles of a page walk (an access that missed both TLB levels; 0: no TLB)",
    ),
    // Read only while tlb-walk-cycles is above 0. Intel's Skylake server
    // core (the Optimization Reference Manual's TLB table); Ice Lake and
    // later have a 2048-entry STLB.
    setting("dtlb-entries", 64, "first-level data TLB entries per vCPU"),
    setting("dtlb-ways", 4, "its associativity"),
    setting(
        "itlb-entries",
        128,
        "first-level instruction TLB entries per vCPU",
    ),
    setting("itlb-ways", 8, "its associativity"),
    setting(
        "stlb-entries",
        1536,
        "second-level TLB entries per vCPU, data and instructions",
    ),
    setting("stlb-ways", 12, "its associativity"),
    // The next four act on several vCPUs only, under the weave.
    part(
        "weave-cycles",
        1,
        0,
        "1: the weave orders the vCPUs' accesses by their estimated cycles, each \
         vCPU's misses delaying its later ones; 0: by their instructions",
    ),
    part(
        "burst-ownership",
        1,
        0,
        "1: a line another vCPU holds modified comes a transfer after the request, \
         the holder's accesses until then still hitting; a load of a line the vCPU \
         stored to within that time needs no line",
    ),
    part(
        "locked-rfo",
        1,
        0,
        "1: a locked read-modify-write is one read for ownership, not a load and a store",
    ),
    part(
        "weave-span",
        0,
        0,
        "the most a round of the weave spans of each vCPU's progress, in cycles with \
         weave-cycles, else instructions (0: no bound)",
    ),
];

/// The setting named `key`.
pub fn setting_named(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == key)
}

/// A timed boot's wall time under the model over the same boot's without
/// it: the most a boot of the quick suite took on a quiet host
/// (docs/cycle-model.md, "What it costs": ×4.65–×4.71 a 1-vCPU boot,
/// ×5.46–×5.52 a 2-vCPU one), so that what the dry run estimates from a
/// run without the model errs long rather than short.
pub const WALL_TIME_FACTOR: f64 = 5.5;

/// The model's settings, by name, and the calibrated profile they were
/// taken from, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CycleModel {
    pub settings: BTreeMap<String, u64>,
    /// The profile of a CPU measured natively whose settings these are
    /// (`markbench calibrate`); `None`: the generic core of the defaults,
    /// or a suite's own settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileNote>,
}

/// Where a run's calibrated profile came from, as its record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ProfileNote {
    /// The CPU measured, the host it was measured on and when (RFC 3339).
    pub cpu: String,
    pub host: String,
    pub measured: String,
    /// The profile's file as the run found it.
    pub file: String,
    /// The profile's check against its CPU, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<ProfileCheck>,
}

/// A calibrated profile held against the CPU it was measured on: a set of
/// programs apart from calibration's, timed natively and under the model
/// with the profile's settings (`scripts/cycle-model-check/check.py
/// --native --profile FILE --record`, which writes it as the profile's
/// `[check]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ProfileCheck {
    /// The geometric-mean error exp(mean |ln(model / CPU)|) - 1 over the
    /// programs that run on one vCPU, as a fraction, and their number.
    pub error: f64,
    pub patterns: u32,
    /// The same over those and the sharing pair (two vCPUs), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_with_sharing: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patterns_with_sharing: Option<u32>,
    /// The one-vCPU program the model is furthest from, and its model / CPU.
    pub worst_pattern: String,
    pub worst_ratio: f64,
    /// The false-sharing ratio (one line / a line apart) on the CPU (the
    /// median over native runs) and in the model, when the pair ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing_cpu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing_model: Option<f64>,
    /// When (RFC 3339, UTC), by what command and at which commit of
    /// markbench the check ran.
    pub checked: String,
    pub command: String,
    pub commit: String,
}

// The figures are finite (a check writes no NaN), so equality is total:
// a run's model compares whole, its profile's check with it.
impl Eq for ProfileCheck {}

impl Default for CycleModel {
    fn default() -> Self {
        CycleModel {
            settings: SETTINGS
                .iter()
                .map(|s| (s.name.to_string(), s.default))
                .collect(),
            profile: None,
        }
    }
}

impl CycleModel {
    /// Sets one setting; an unknown name is refused with the valid names,
    /// a zero unless it turns a part of the model off.
    pub fn set(&mut self, key: &str, value: u64) -> Result<(), String> {
        let Some(setting) = setting_named(key) else {
            let names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
            return Err(format!(
                "unknown model setting {key:?}; the settings are {}",
                names.join(", ")
            ));
        };
        if value == 0 && setting.off != Some(0) {
            return Err(format!("model setting {key} must be above 0"));
        }
        self.settings.insert(key.to_string(), value);
        Ok(())
    }

    pub fn get(&self, key: &str) -> u64 {
        self.settings.get(key).copied().unwrap_or_default()
    }

    /// Checks what the plugin would refuse at load time (a cache whose
    /// sets are not a power of two, a table too large), so a bad suite
    /// fails before any boot.
    pub fn check(&self) -> Result<(), String> {
        for level in ["l1i", "l1d", "l2", "llc"] {
            let bytes = self.get(&format!("{level}-bytes"));
            let ways = self.get(&format!("{level}-ways"));
            let per_set = 64 * ways;
            if !bytes.is_multiple_of(per_set) || !(bytes / per_set).is_power_of_two() {
                return Err(format!(
                    "model: {level}-bytes = {bytes} with {level}-ways = {ways} does not make a \
                     power-of-two number of sets of 64-byte lines"
                ));
            }
        }
        for key in ["gshare-bits", "btb-bits"] {
            if self.get(key) > 24 {
                return Err(format!("model: {key} = {} is above 24", self.get(key)));
            }
        }
        for level in ["dtlb", "itlb", "stlb"] {
            let entries = self.get(&format!("{level}-entries"));
            let ways = self.get(&format!("{level}-ways"));
            if !entries.is_multiple_of(ways) || !(entries / ways).is_power_of_two() {
                return Err(format!(
                    "model: {level}-entries = {entries} with {level}-ways = {ways} does not \
                     make a power-of-two number of sets"
                ));
            }
        }
        // The plugin's own bounds: it refuses more, and a suite should be
        // told before any boot.
        for (key, most) in [("rsb-depth", 1024), ("prefetch-streams", 256)] {
            if self.get(key) > most {
                return Err(format!("model: {key} = {} is above {most}", self.get(key)));
            }
        }
        for key in [
            "skip-entries",
            "string-nontemporal",
            "llc-victim",
            "special-costs",
            "weave-cycles",
            "burst-ownership",
            "locked-rfo",
        ] {
            if self.get(key) > 1 {
                return Err(format!(
                    "model: {key} = {} is neither 0 (off) nor 1 (on)",
                    self.get(key)
                ));
            }
        }
        Ok(())
    }

    /// The plugin's arguments that turn the model on with these settings,
    /// without the per-address profile (a timed boot needs none, and
    /// counting it costs time).
    pub fn plugin_args(&self) -> Vec<String> {
        [format!("model={MODEL_NAME}"), "profile=off".to_string()]
            .into_iter()
            .chain(self.settings.iter().map(|(k, v)| format!("{k}={v}")))
            .collect()
    }

    /// The plugin's arguments for a profiled boot: the model with these
    /// settings beside the per-address profile, whose buckets then get the
    /// model's counts too.
    pub fn profile_plugin_args(&self) -> Vec<String> {
        self.plugin_args()
            .into_iter()
            .filter(|a| a != "profile=off")
            .collect()
    }

    /// Whether rep-prefixed string instructions are modelled as moves of
    /// bytes (and counted) rather than one instruction per iteration.
    pub fn models_strings(&self) -> bool {
        self.get("string-bytes-per-cycle") > 0
    }

    /// Whether each block costs its throughput on a core of an issue width
    /// (the `base-cycles` count) rather than one cycle an instruction.
    pub fn models_throughput(&self) -> bool {
        self.get("issue-width") > 0
    }

    /// Whether each vCPU has TLBs whose page walks cost (the `tlb-misses`
    /// count).
    pub fn models_tlb(&self) -> bool {
        self.get("tlb-walk-cycles") > 0
    }

    /// The estimate's formula with this model's figures, for the report;
    /// with `several_vcpus` the reads for ownership too (one vCPU has none).
    pub fn formula(&self, several_vcpus: bool) -> String {
        let own = if self.models_throughput() {
            "base cycles"
        } else {
            "instructions"
        };
        let instructions = if self.models_strings() {
            format!(
                "{own} − string iterations + {}·string instructions + ceil(string bytes / {})",
                self.get("string-startup-cycles"),
                self.get("string-bytes-per-cycle")
            )
        } else {
            own.to_string()
        };
        let mut text = format!(
            "estimated-cycles = {instructions} + {}·(L1 misses − coherence misses − L2 misses) \
             + {}·(L2 misses − LLC misses) + {}·LLC misses + {}·coherence misses + {}·branch \
             mispredicts",
            self.get("l2-cycles"),
            self.get("llc-cycles"),
            self.get("memory-cycles"),
            self.get("coherence-cycles"),
            self.get("mispredict-cycles")
        );
        if self.models_tlb() {
            text.push_str(&format!(" + {}·TLB misses", self.get("tlb-walk-cycles")));
        }
        if several_vcpus {
            text.push_str(&format!(
                " + {}·reads for ownership",
                self.get("coherence-cycles")
            ));
        }
        text
    }

    /// These settings with the costs of [`SECOND_WEIGHTS`] in place of
    /// their own.
    pub fn second_weights(&self) -> CycleModel {
        let mut other = self.clone();
        for (key, cycles) in SECOND_WEIGHTS {
            // A part the run was without stays off.
            if setting_named(key).and_then(|s| s.off) == Some(self.get(key)) {
                continue;
            }
            other.settings.insert(key.to_string(), *cycles);
        }
        other
    }

    /// The second weights in words, for the report.
    pub fn second_weights_text() -> String {
        let of = |key: &str| {
            SECOND_WEIGHTS
                .iter()
                .find(|(k, _)| *k == key)
                .map_or(0, |(_, v)| *v)
        };
        format!(
            "an access served by the L2 or the LLC {}, by memory {}, by another core {}, a \
             branch mispredict {}",
            of("l2-cycles"),
            of("memory-cycles"),
            of("coherence-cycles"),
            of("mispredict-cycles")
        )
    }

    /// What the second weights charge the parts of this model that a run
    /// may lack, in words after [`CycleModel::second_weights_text`]'s
    /// (empty when it has none of them).
    pub fn second_weights_parts_text(&self) -> String {
        let walk = SECOND_WEIGHTS
            .iter()
            .find(|(k, _)| *k == "tlb-walk-cycles")
            .map_or(0, |(_, v)| *v);
        if self.models_tlb() {
            format!(", a page walk {walk}")
        } else {
            String::new()
        }
    }

    /// The estimate under these settings' costs from the points of one
    /// timed run (or part) as [`metrics`] names them: `point` gives each
    /// point's value, `None` where the run has none. `None` when a point
    /// every run has is missing.
    pub fn estimate(&self, point: impl Fn(&str) -> Option<f64>) -> Option<f64> {
        let c = |key: &str| self.get(key) as f64;
        let optional = |name: &str| point(name).unwrap_or(0.0);
        let l1 = point("l1i-misses")? + point("l1d-misses")?;
        let (l2, llc, coherence) = (
            point("l2-misses")?,
            point("llc-misses")?,
            point("coherence-misses")?,
        );
        let strings = if self.models_strings() {
            c("string-startup-cycles") * optional("string-instructions")
                + (optional("string-bytes") / c("string-bytes-per-cycle")).ceil()
                - optional("string-iterations")
        } else {
            0.0
        };
        // With an issue width the blocks' own cycles stand for the
        // instructions; a run without the count ran without the part.
        let own = match point("base-cycles") {
            Some(cycles) if self.models_throughput() => cycles,
            _ => point("instructions")?,
        };
        Some(
            own + strings
                + c("l2-cycles") * (l1 - coherence - l2)
                + c("llc-cycles") * (l2 - llc)
                + c("memory-cycles") * llc
                + c("coherence-cycles") * (coherence + optional("rfo-misses"))
                + c("mispredict-cycles") * point("branch-mispredicts")?
                + c("tlb-walk-cycles") * optional("tlb-misses"),
        )
    }

    /// The caches in a few words, for the report.
    pub fn geometry(&self) -> String {
        let size = |bytes: u64| {
            if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
                format!("{} MiB", bytes >> 20)
            } else {
                format!("{} KiB", bytes >> 10)
            }
        };
        let mut text = format!(
            "per vCPU L1i {} {}-way, L1d {} {}-way, L2 {} {}-way; LLC {} {}-way shared; \
             64-byte lines, LRU; gshare of 2^{} counters, BTB of 2^{} entries",
            size(self.get("l1i-bytes")),
            self.get("l1i-ways"),
            size(self.get("l1d-bytes")),
            self.get("l1d-ways"),
            size(self.get("l2-bytes")),
            self.get("l2-ways"),
            size(self.get("llc-bytes")),
            self.get("llc-ways"),
            self.get("gshare-bits"),
            self.get("btb-bits")
        );
        if self.models_tlb() {
            text.push_str(&format!(
                "; per vCPU L1 dTLB {} entries {}-way, iTLB {} {}-way, STLB {} {}-way, a page \
                 walk {} cycles",
                self.get("dtlb-entries"),
                self.get("dtlb-ways"),
                self.get("itlb-entries"),
                self.get("itlb-ways"),
                self.get("stlb-entries"),
                self.get("stlb-ways"),
                self.get("tlb-walk-cycles")
            ));
        }
        text
    }

    /// Writes the settings into a run directory.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let text = toml::to_string(self).map_err(std::io::Error::other)?;
        std::fs::write(dir.join(SETTINGS_FILE), text)
    }

    /// The settings a run directory records, if it was made with the model.
    pub fn read(dir: &Path) -> crate::base::error::Result<Option<CycleModel>> {
        let path = dir.join(SETTINGS_FILE);
        let Some(text) = crate::base::input_file::read_text_if_present(
            &path,
            crate::base::input_file::Bound::Text,
        )?
        else {
            return Ok(None);
        };
        let mut model: CycleModel =
            crate::base::input_file::parse_toml(&path, &text, "cycle-model settings")?;
        // A setting the run's markbench did not have yet: the part it
        // names was not in the model that run ran.
        for s in SETTINGS {
            model
                .settings
                .entry(s.name.to_string())
                .or_insert(s.off.unwrap_or(s.default));
        }
        Ok(Some(model))
    }
}

/// The points the model adds to each workload point: (metric, unit).
/// Each sums user space and kernel.
pub const METRICS: &[(&str, &str)] = &[
    ("estimated-cycles", "cycles"),
    ("instructions", "instructions"),
    ("l1i-misses", "misses"),
    ("l1d-misses", "misses"),
    ("l2-misses", "misses"),
    ("llc-misses", "misses"),
    ("coherence-misses", "misses"),
    ("branch-mispredicts", "mispredicts"),
];

/// The points the model adds on several vCPUs only: a store that takes a
/// line from another vCPU's cache (a read for ownership). A region without
/// the count (every 1-vCPU region) has no such point.
pub const SMP_METRICS: &[(&str, &str)] = &[("rfo-misses", "misses")];

/// The points of parts of the model that can be turned off, which the
/// plugin counts only while their part is on: rep-prefixed string
/// instructions, their iterations and the bytes they move (with
/// `string-bytes-per-cycle` above 0), and the lines the L2's prefetcher
/// brought (with `prefetch-streams` above 0), and the blocks' own cycles (with
/// `issue-width` above 0), and the page walks (with `tlb-walk-cycles` above
/// 0). A region without a count has no such point.
pub const PART_METRICS: &[(&str, &str)] = &[
    ("string-instructions", "instructions"),
    ("string-iterations", "iterations"),
    ("string-bytes", "bytes"),
    ("l2-prefetches", "prefetches"),
    ("base-cycles", "cycles"),
    ("tlb-misses", "misses"),
];

/// The points a region has only where the plugin wrote their counts.
fn optional_metrics() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    SMP_METRICS.iter().chain(PART_METRICS)
}

/// Whether a metric is one the model adds.
pub fn is_model_metric(metric: &str) -> bool {
    METRICS
        .iter()
        .chain(optional_metrics())
        .any(|(m, _)| *m == metric)
}

/// The second set of weights the report recomputes every estimate under
/// (docs/cycle-model.md, "Reading a verdict on the estimate: the second
/// weights", says where each figure comes from): an L1 miss served by the L2 or the LLC costs what
/// iai-callgrind's estimate gives a last-level hit, one served by memory
/// what it gives a RAM access, one served by another core the same as
/// memory (that estimate knows no other core), a misprediction what
/// KCachegrind's cycle estimate gives one, a page walk its four levels of
/// paging entries each at a cached access's weight (4·5). Strings keep the
/// model's figures.
pub const SECOND_WEIGHTS: &[(&str, u64)] = &[
    ("l2-cycles", 5),
    ("llc-cycles", 5),
    ("memory-cycles", 35),
    ("coherence-cycles", 35),
    ("mispredict-cycles", 10),
    ("tlb-walk-cycles", 20),
];

/// The point of [`METRICS`] that a count of the plugin's goes to (both
/// kinds of misprediction to `branch-mispredicts`); `None` for counts that
/// are no point (instructions, which the profile counts itself, and the
/// branches).
pub fn metric_of_count(count: &str) -> Option<&'static str> {
    match count {
        "conditional-mispredicts" | "indirect-mispredicts" => Some("branch-mispredicts"),
        "instructions" => None,
        other => METRICS
            .iter()
            .chain(optional_metrics())
            .map(|(m, _)| *m)
            .find(|m| *m == other),
    }
}

/// One timed region's counts as the plugin writes them, by name
/// (`user:l1d-misses`, `kernel:estimated-cycles`, …).
pub type RegionCounts = BTreeMap<String, u64>;

/// A region's value of each of [`METRICS`], user space and kernel summed.
pub fn metrics(region: &RegionCounts) -> Vec<(&'static str, &'static str, u64)> {
    let both = |name: &str| {
        ["user", "kernel"]
            .iter()
            .map(|mode| region.get(&format!("{mode}:{name}")).copied().unwrap_or(0))
            .sum::<u64>()
    };
    let present = |name: &str| {
        ["user", "kernel"]
            .iter()
            .any(|mode| region.contains_key(&format!("{mode}:{name}")))
    };
    METRICS
        .iter()
        .chain(optional_metrics().filter(|(m, _)| present(m)))
        .map(|&(metric, unit)| {
            let value = match metric {
                "branch-mispredicts" => {
                    both("conditional-mispredicts") + both("indirect-mispredicts")
                }
                name => both(name),
            };
            (metric, unit, value)
        })
        .collect()
}

/// The prefix of a part's counts in a region: `part4/kernel:l1d-misses`.
const PART_PREFIX: &str = "part";

/// The parts a region's counts hold, by number: the guest may mark pieces
/// of a timed run (the micro workload's kernel code marks each timed loop),
/// and the plugin writes each part's counts beside the region's, their
/// names prefixed with `partN/`. Each part's counts are named as a region's
/// are, so [`metrics`] reads them. A region without parts gives none.
pub fn parts(region: &RegionCounts) -> BTreeMap<u8, RegionCounts> {
    let mut out: BTreeMap<u8, RegionCounts> = BTreeMap::new();
    for (name, value) in region {
        let Some((part, count)) = name
            .strip_prefix(PART_PREFIX)
            .and_then(|rest| rest.split_once('/'))
        else {
            continue;
        };
        if let Ok(part) = part.parse::<u8>() {
            out.entry(part)
                .or_default()
                .insert(count.to_string(), *value);
        }
    }
    out
}

/// The model's counts of every region in the plugin's output (version 2,
/// with the model): its `model` lines, region by region. `file` names it in
/// errors.
pub fn parse_regions(text: &str, file: &Path) -> Result<Vec<RegionCounts>, InputError> {
    let at = |line: usize, what: &str| InputError::at_line(file, line + 1, what);
    // Version 3 adds the counts per block, which other kinds of line carry.
    let first = text.lines().next();
    if first != Some("# markbench-profile 2") && first != Some("# markbench-profile 3") {
        return Err(at(
            0,
            "not a profile of markbench's plugin with the cycle model \
             (expected \"# markbench-profile 2\")",
        ));
    }
    let mut regions: Vec<RegionCounts> = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        if line.starts_with('#') || line.starts_with("region\t") {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let [region, kind, name, value] = fields[..] else {
            return Err(at(n, "expected 4 tab-separated fields"));
        };
        let region: usize = region
            .parse()
            .map_err(|_| at(n, &format!("bad region {region:?}")))?;
        if region > regions.len() {
            return Err(at(
                n,
                &format!("region {region} before region {}", regions.len()),
            ));
        }
        if region == regions.len() {
            regions.push(RegionCounts::new());
        }
        if kind != "model" {
            continue;
        }
        let value: u64 = value
            .parse()
            .map_err(|_| at(n, &format!("bad count {value:?}")))?;
        regions[region].insert(name.to_string(), value);
    }
    Ok(regions)
}

/// Reads [`parse_regions`] from the plugin's output file.
pub fn read_regions(path: &Path) -> crate::base::error::Result<Vec<RegionCounts>> {
    let text = crate::base::input_file::read_text(path, crate::base::input_file::Bound::Text)?;
    Ok(parse_regions(&text, path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_settings_are_input_at_their_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(SETTINGS_FILE),
            "[settings]\nl2-cycles = x\n",
        )
        .unwrap();
        let Err(crate::base::error::Error::Input(e)) = CycleModel::read(dir.path()) else {
            panic!("not input")
        };
        assert_eq!(e.file, Some(dir.path().join(SETTINGS_FILE)));
        assert_eq!((e.line, e.col), (Some(2), Some(13)), "{e}");
    }

    const RAW: &str = "# markbench-profile 2
# model cycles: …
region\tkind\taddress\tinstructions
0\tuser\t-\t100
0\tmodel\tuser:estimated-cycles\t400
0\tmodel\tuser:conditional-mispredicts\t3
0\tmodel\tkernel:estimated-cycles\t50
0\tmodel\tkernel:indirect-mispredicts\t2
0\tkernel\tffffffff81000000\t5
1\tuser\t-\t7
1\tmodel\tkernel:l1d-misses\t9
";

    #[test]
    fn each_region_sums_user_and_kernel_counts_into_the_model_points() {
        let regions = parse_regions(RAW, Path::new("raw.tsv")).unwrap();
        assert_eq!(regions.len(), 2);
        let m = metrics(&regions[0]);
        assert_eq!(m.len(), METRICS.len());
        let value =
            |m: &[(&str, &str, u64)], name: &str| m.iter().find(|(n, _, _)| *n == name).unwrap().2;
        assert_eq!(value(&m, "estimated-cycles"), 450);
        assert_eq!(value(&m, "branch-mispredicts"), 5);
        assert_eq!(value(&metrics(&regions[1]), "l1d-misses"), 9);
    }

    #[test]
    fn parts_are_read_apart_from_their_region_and_sum_as_regions_do() {
        let raw = format!(
            "{RAW}1\tmodel\tpart3/kernel:estimated-cycles\t70\n\
             1\tmodel\tpart3/user:estimated-cycles\t1\n\
             1\tmodel\tpart3/kernel:conditional-mispredicts\t4\n\
             1\tmodel\tpart12/kernel:l1d-misses\t6\n"
        );
        let regions = parse_regions(&raw, Path::new("raw.tsv")).unwrap();
        assert!(parts(&regions[0]).is_empty());
        let parts = parts(&regions[1]);
        assert_eq!(parts.keys().copied().collect::<Vec<_>>(), [3, 12]);
        let m = metrics(&parts[&3]);
        let value = |name: &str| m.iter().find(|(n, _, _)| *n == name).unwrap().2;
        assert_eq!(value("estimated-cycles"), 71);
        assert_eq!(value("branch-mispredicts"), 4);
        assert_eq!(value("l1d-misses"), 0);
        // The region's own counts leave its parts out.
        assert_eq!(metrics(&regions[1])[3], ("l1d-misses", "misses", 9));
    }

    #[test]
    fn a_profile_without_the_model_or_a_bad_line_is_an_error_naming_the_line() {
        let e = parse_regions("# markbench-profile 1\n", Path::new("p.tsv")).unwrap_err();
        assert!(e.to_string().starts_with("p.tsv:1: "), "{}", e.to_string());
        let bad = RAW.replace("\t400", "\tmany");
        let e = parse_regions(&bad, Path::new("p.tsv")).unwrap_err();
        assert!(
            e.to_string().starts_with("p.tsv:5: bad count"),
            "{}",
            e.to_string()
        );
    }

    #[test]
    fn the_counts_per_block_of_version_3_leave_the_regions_counts_alone() {
        let blocks = RAW
            .replace("# markbench-profile 2", "# markbench-profile 3")
            .replace(
                "0\tkernel\tffffffff81000000\t5\n",
                "0\tkernel\tffffffff81000000\t5\n0\tkernel:l1d-misses\tffffffff81000000\t9\n",
            );
        assert_eq!(
            parse_regions(&blocks, Path::new("raw.tsv")).unwrap(),
            parse_regions(RAW, Path::new("raw.tsv")).unwrap()
        );
        assert_eq!(
            metric_of_count("indirect-mispredicts"),
            Some("branch-mispredicts")
        );
        assert_eq!(metric_of_count("llc-misses"), Some("llc-misses"));
        assert_eq!(metric_of_count("instructions"), None);
        assert_eq!(metric_of_count("conditional-branches"), None);
        let args = CycleModel::default().profile_plugin_args();
        assert_eq!(args[0], "model=cycles");
        assert_eq!(args.len(), 1 + SETTINGS.len());
    }

    #[test]
    fn settings_are_checked_and_passed_to_the_plugin_whole() {
        let mut m = CycleModel::default();
        assert!(m.check().is_ok());
        let args = m.plugin_args();
        assert_eq!(args[..2], ["model=cycles", "profile=off"]);
        assert_eq!(args.len(), 2 + SETTINGS.len());
        assert!(args.contains(&"llc-cycles=50".to_string()));
        assert!(m.set("l4-bytes", 1).unwrap_err().contains("l2-cycles"));
        assert!(m.set("l2-cycles", 0).is_err());
        m.set("l2-bytes", 3 << 20).unwrap();
        assert!(m.check().unwrap_err().contains("l2-bytes"));
        assert!(CycleModel::default()
            .formula(false)
            .contains("+ 200·LLC misses"));
        assert!(!CycleModel::default().formula(false).contains("ownership"));
        assert!(CycleModel::default()
            .formula(true)
            .ends_with("·reads for ownership"));
    }

    #[test]
    fn a_part_of_the_model_can_be_turned_off_with_a_zero_and_a_cost_cannot() {
        let mut m = CycleModel::default();
        for s in SETTINGS.iter().filter(|s| s.off.is_some()) {
            m.set(s.name, 0).unwrap();
        }
        assert!(m.check().is_ok());
        for key in ["string-startup-cycles", "memory-cycles", "l1d-bytes"] {
            assert!(m.set(key, 0).is_err(), "{key}");
        }
        m.set("llc-victim", 2).unwrap();
        assert!(m.check().unwrap_err().contains("llc-victim"));
        let mut m = CycleModel::default();
        m.set("prefetch-streams", 257).unwrap();
        assert!(m.check().unwrap_err().contains("prefetch-streams"));
        let args = CycleModel::default().plugin_args();
        for expected in ["rsb-depth=32", "string-bytes-per-cycle=32", "llc-victim=1"] {
            assert!(args.contains(&expected.to_string()), "{args:?}");
        }
    }

    #[test]
    fn a_run_recorded_before_the_parts_existed_reads_with_them_off() {
        let dir = tempfile::tempdir().unwrap();
        // The file such a run wrote: today's settings without the parts'.
        let mut before = CycleModel::default();
        let new = |s: &Setting| s.off.is_some() || s.name.starts_with("string-");
        before
            .settings
            .retain(|k, _| !new(setting_named(k).unwrap()));
        assert!(before.settings.len() < SETTINGS.len());
        before.write(dir.path()).unwrap();
        let read = CycleModel::read(dir.path()).unwrap().unwrap();
        assert_eq!(read.settings.len(), SETTINGS.len());
        for s in SETTINGS.iter().filter(|s| new(s)) {
            assert_eq!(read.get(s.name), s.off.unwrap_or(s.default), "{}", s.name);
        }
        assert!(!read.models_strings());
        // Its formula is the one its report gave.
        for several in [false, true] {
            let formula = read.formula(several);
            assert!(formula.starts_with("estimated-cycles = instructions + 14·"));
            assert!(!formula.contains("string"), "{formula}");
            assert!(!formula.contains("TLB"), "{formula}");
        }
        assert!(!read.models_tlb());
        assert!(!read.second_weights().models_tlb());
        assert_eq!(read.second_weights_parts_text(), "");
        assert!(CycleModel::default()
            .formula(false)
            .ends_with(" + 30·TLB misses"));
        let strings = CycleModel::default().formula(false);
        assert!(
            strings.starts_with(
                "estimated-cycles = base cycles − string iterations + 35·string instructions \
                 + ceil(string bytes / 32) + 14·"
            ),
            "{strings}"
        );
    }

    #[test]
    fn the_counts_of_a_part_are_points_only_where_the_plugin_wrote_them() {
        let off = parse_regions(RAW, Path::new("raw.tsv")).unwrap();
        assert!(metrics(&off[0])
            .iter()
            .all(|(m, _, _)| !m.starts_with("string-")));
        let on = format!(
            "{RAW}1\tmodel\tkernel:string-instructions\t2\n\
             1\tmodel\tkernel:string-iterations\t64\n\
             1\tmodel\tuser:string-bytes\t512\n"
        );
        let regions = parse_regions(&on, Path::new("raw.tsv")).unwrap();
        let m = metrics(&regions[1]);
        assert_eq!(m.len(), METRICS.len() + 3);
        assert!(m.contains(&("string-bytes", "bytes", 512)));
        assert!(!m.iter().any(|(n, _, _)| *n == "l2-prefetches"));
        assert!(is_model_metric("l2-prefetches"));
        assert_eq!(
            metric_of_count("string-iterations"),
            Some("string-iterations")
        );
    }

    #[test]
    fn the_estimate_recomputed_under_the_models_weights_is_the_plugins() {
        let points: BTreeMap<&str, f64> = [
            ("instructions", 10_000.0),
            ("l1i-misses", 40.0),
            ("l1d-misses", 300.0),
            ("l2-misses", 60.0),
            ("llc-misses", 7.0),
            ("coherence-misses", 5.0),
            ("rfo-misses", 3.0),
            ("branch-mispredicts", 90.0),
            ("string-instructions", 4.0),
            ("string-iterations", 400.0),
            ("string-bytes", 3_200.0),
        ]
        .into();
        let point = |name: &str| points.get(name).copied();
        let m = CycleModel::default();
        let c = |key: &str| m.get(key) as f64;
        // The plugin's formula, term by term (docs/cycle-model.md).
        let strings = -400.0
            + c("string-startup-cycles") * 4.0
            + (3_200.0 / c("string-bytes-per-cycle")).ceil();
        let memory = c("l2-cycles") * (340.0 - 5.0 - 60.0)
            + c("llc-cycles") * (60.0 - 7.0)
            + c("memory-cycles") * 7.0
            + c("coherence-cycles") * (5.0 + 3.0)
            + c("mispredict-cycles") * 90.0;
        assert_eq!(m.estimate(point), Some(10_000.0 + strings + memory));
        // The page walks where the run counted them.
        let walked = |name: &str| match name {
            "tlb-misses" => Some(11.0),
            other => point(other),
        };
        assert_eq!(
            m.estimate(walked),
            Some(10_000.0 + strings + memory + c("tlb-walk-cycles") * 11.0)
        );
        assert_eq!(
            m.second_weights().estimate(walked).unwrap()
                - m.second_weights().estimate(point).unwrap(),
            20.0 * 11.0
        );
        // Strings off: each iteration an instruction, as the counts say.
        let mut off = m.clone();
        off.set("string-bytes-per-cycle", 0).unwrap();
        assert_eq!(off.estimate(point), Some(10_000.0 + memory));
        // The second weights price the same counts otherwise, strings alike.
        let second = m.second_weights();
        assert_eq!(second.get("memory-cycles"), 35);
        assert_eq!(
            second.get("string-startup-cycles"),
            m.get("string-startup-cycles")
        );
        assert!(second.estimate(point).unwrap() < m.estimate(point).unwrap());
        // A run without a point every run has gives no estimate.
        assert_eq!(
            m.estimate(|n| (n != "l2-misses").then(|| point(n)).flatten()),
            None
        );
    }

    #[test]
    fn the_settings_round_trip_through_the_run_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(CycleModel::read(dir.path()).unwrap(), None);
        let mut m = CycleModel::default();
        m.set("memory-cycles", 300).unwrap();
        m.write(dir.path()).unwrap();
        assert_eq!(CycleModel::read(dir.path()).unwrap(), Some(m));
    }

    #[test]
    fn a_runs_profile_keeps_its_check_and_one_recorded_without_reads_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let note = ProfileNote {
            cpu: "Intel(R) Xeon(R) Processor".into(),
            host: "vm".into(),
            measured: "2026-12-07T19:00:00Z".into(),
            file: "p.toml".into(),
            check: None,
        };
        // As a run recorded it before profiles had a check.
        let mut m = CycleModel {
            profile: Some(note.clone()),
            ..CycleModel::default()
        };
        m.write(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(SETTINGS_FILE)).unwrap();
        assert!(
            text.contains("[profile]") && !text.contains("check"),
            "{text}"
        );
        assert_eq!(CycleModel::read(dir.path()).unwrap(), Some(m.clone()));
        m.profile = Some(ProfileNote {
            check: Some(ProfileCheck {
                error: 0.25,
                patterns: 13,
                error_with_sharing: None,
                patterns_with_sharing: None,
                worst_pattern: "chase 32768".into(),
                worst_ratio: 0.5,
                sharing_cpu: None,
                sharing_model: None,
                checked: "2026-12-07T20:40:00Z".into(),
                command: "scripts/cycle-model-check/check.py --native --record".into(),
                commit: "0123456789ab".into(),
            }),
            ..note
        });
        m.write(dir.path()).unwrap();
        assert_eq!(CycleModel::read(dir.path()).unwrap(), Some(m));
    }

    #[test]
    fn settings_that_cannot_be_read_are_an_error_not_a_run_without_the_model() {
        use crate::base::exit::ExitStatus;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SETTINGS_FILE);
        crate::base::input_file::link_to_failing_read(&path);
        let e = CycleModel::read(dir.path()).unwrap_err();
        assert_eq!(ExitStatus::of_error(&e, false), ExitStatus::Machinery);
        assert!(
            format!("{e:#}").contains("cycle-model.toml: cannot be read: Input/output error"),
            "{e:#}"
        );
        // A stat that fails otherwise than "not found" (here ENOTDIR: the
        // run's directory is a file) is no absence either.
        let file = dir.path().join("run");
        std::fs::write(&file, "").unwrap();
        let e = CycleModel::read(&file).unwrap_err();
        assert!(
            format!("{e:#}").contains("run/cycle-model.toml: cannot be read: Not a directory"),
            "{e:#}"
        );
        // A link to nothing is a damaged run, not one made without the model.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone"), &path).unwrap();
        let e = CycleModel::read(dir.path()).unwrap_err();
        assert!(
            format!("{e:#}").contains("cycle-model.toml: cannot be read"),
            "{e:#}"
        );
    }
}
