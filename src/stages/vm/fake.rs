//! A runner that boots nothing, for tests of everything around the VM: it
//! reads the job appended to the initrd and answers as the guest agent would,
//! with deterministic timings. Never used by the shipped commands.

use super::{BootEnd, BootOutcome, BootRequest, Runner};
use crate::base::protocol::{Directive, Message, RunRecord, JOB_HEADER};
use std::time::Duration;

/// Where the fake guest's kernel text starts: its profiles count
/// instructions at this address and 0x40 past it.
pub const FAKE_TEXT: u64 = 0xffff_ffff_8100_0000;

/// What the fake guest does.
#[derive(Debug, Default)]
pub struct FakeRunner {
    /// Seconds each run "takes": base + 0.01 × param, times this factor for
    /// boots whose command line contains `slow` (1 when 0).
    pub slow_factor: f64,
    /// Under the cycle model, accesses to memory per kernel instruction
    /// that boots whose command line contains `slow` make beside the
    /// others, each a miss of the L1d, the L2 and the LLC. With it set,
    /// every estimate is the model's formula with the figures the plugin
    /// was given, rather than twice the instructions.
    pub slow_memory_accesses: Option<f64>,
    /// Stop answering after this many boots, as a host killed mid-run would.
    pub crash_after_boots: Option<usize>,
    /// Boots (counted from 1) that hang after their first sample and time out.
    pub hanging_boots: Vec<usize>,
    /// Every boot hangs before the agent starts, as an SMP guest under
    /// icount does with QEMU 7.2, and times out.
    pub hang_before_agent: bool,
    /// QEMU cannot start (a missing binary): the error it gives.
    pub fail_to_start: Option<String>,
    /// The CPUs the guest reports online, instead of all it was given.
    pub online_cpus: Option<String>,
    /// Every request, in the order the boots started (several at once
    /// when the boot loop runs them side by side).
    pub log: std::sync::Mutex<Vec<BootRequest>>,
    /// Relative spread of a boot's timings: each boot's runs are scaled by
    /// one factor in [1 − noise, 1 + noise], drawn from its console log's
    /// name (unit, variant, boot), so the same unit gives the same figures
    /// when a run is resumed.
    pub boot_noise: f64,
    /// The wall time each completed boot reports (10 ms when unset), for
    /// tests of what a budget of wall time allows.
    pub boot_wall: Option<Duration>,
    /// Boots (counted from 1) whose runner panics after the guest's first
    /// sample, as a bug in a runner would.
    pub panicking_boots: Vec<usize>,
    /// Real time each boot takes before its guest says `done`, so that
    /// boots started side by side are under way together.
    pub hold: Option<Duration>,
    /// Guests under way now, and the most that ever were at once.
    pub at_once: std::sync::Mutex<(usize, usize)>,
    /// The load beside markbench's own each boot sees before and after,
    /// given rather than measured (a real probe waits half a second).
    pub other_load: f64,
}

/// Counts a guest under way for as long as it lives.
struct UnderWay<'a>(&'a std::sync::Mutex<(usize, usize)>);

impl<'a> UnderWay<'a> {
    fn enter(count: &'a std::sync::Mutex<(usize, usize)>) -> UnderWay<'a> {
        let mut c = count.lock().unwrap_or_else(|e| e.into_inner());
        c.0 += 1;
        c.1 = c.1.max(c.0);
        UnderWay(count)
    }
}

impl Drop for UnderWay<'_> {
    fn drop(&mut self) {
        let mut c = self.0.lock().unwrap_or_else(|e| e.into_inner());
        c.0 -= 1;
    }
}

/// A number in [−1, 1] drawn from `text` (FNV-1a, then SplitMix64's finaliser).
fn spread_of(text: &str) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// The job text inside an initrd (the appended archive holds it verbatim).
pub fn job_in_initrd(bytes: &[u8]) -> Option<String> {
    let start = bytes
        .windows(JOB_HEADER.len())
        .rposition(|w| w == JOB_HEADER.as_bytes())?;
    let end = bytes[start..]
        .iter()
        .position(|&b| b == 0)
        .map_or(bytes.len(), |e| start + e);
    Some(String::from_utf8_lossy(&bytes[start..end]).into_owned())
}

/// The micro workload's kernel code as the fake plays it: its command's
/// iteration counts, the instructions per loop of each (loop, marker) in
/// the order it numbers its parts (empty, memcpy × none, dormant,
/// enabled), and one L1d miss per memcpy loop.
struct FakeMicro {
    empty: u64,
    copies: u64,
}

const FAKE_MICRO_LOOPS: [(&str, &str, u64); 6] = [
    ("empty", "none", 3),
    ("empty", "dormant", 4),
    ("empty", "enabled", 20),
    ("memcpy", "none", 520),
    ("memcpy", "dormant", 521),
    ("memcpy", "enabled", 537),
];

/// The micro workload's command (`echo EMPTY MEMCPY > /proc/markbench_micro
/// && cat …`), if `argv` is one.
fn fake_micro(argv: &[String]) -> Option<FakeMicro> {
    let script = argv.iter().find(|a| a.contains("/proc/markbench_micro"))?;
    let mut counts = script
        .strip_prefix("echo ")?
        .split_whitespace()
        .map(|n| n.parse::<u64>());
    Some(FakeMicro {
        empty: counts.next()?.ok()?,
        copies: counts.next()?.ok()?,
    })
}

impl FakeMicro {
    fn iterations(&self, l: &str) -> u64 {
        if l == "empty" {
            self.empty
        } else {
            self.copies
        }
    }

    /// What reading /proc/markbench_micro prints, the TSC at 16 a
    /// instruction (icount shift 4).
    fn output(&self) -> String {
        let mut text = String::from("markbench-micro jump_label=y\n");
        for (l, marker, instructions) in FAKE_MICRO_LOOPS {
            let n = self.iterations(l);
            text.push_str(&format!(
                "markbench-micro loop={l} marker={marker} iterations={n} cycles={}\n",
                16 * instructions * n
            ));
        }
        text
    }

    /// The model's lines of each loop's part of region `region`.
    fn parts(&self, region: usize) -> String {
        let mut text = String::new();
        for (part, (l, _, instructions)) in FAKE_MICRO_LOOPS.into_iter().enumerate() {
            let n = self.iterations(l);
            let l1d = if l == "memcpy" { n } else { 0 };
            for (name, value) in [
                ("instructions", instructions * n),
                ("l1d-misses", l1d),
                ("conditional-mispredicts", 0),
                ("estimated-cycles", instructions * n + 14 * l1d),
            ] {
                text.push_str(&format!(
                    "{region}\tmodel\tpart{part}/kernel:{name}\t{value}\n"
                ));
            }
        }
        text
    }
}

/// What the plugin would write for one timed run of `instructions`: all
/// but a fixed 1500 (user space and the second function) in the first
/// function of the kernel text; with the cycle model (`model` is whether
/// the profile is on too) its counts, in the kernel a miss of each level
/// per 50, 500 and 5000 instructions and a misprediction per 200, the
/// estimate twice the instructions, and, with the profile, the same per
/// block, the kernel's all in the first function.
fn fake_region(
    region: usize,
    instructions: u64,
    model: Option<bool>,
    micro: Option<&FakeMicro>,
    shape: Option<&FakeCounts>,
) -> String {
    let mut out = String::new();
    out.push_str(&format!("{region}\tuser\t-\t1000\n"));
    let mut blocks = String::new();
    if let Some(model_blocks) = model {
        let kernel = instructions.saturating_sub(1000);
        for (mode, n, misses) in [("user", 1000, 0), ("kernel", kernel, kernel)] {
            let memory = shape.map_or(0, |s| (s.memory_per_instruction * misses as f64) as u64);
            let (l1i, l1d, l2, llc, mispredicts) = (
                misses / 100,
                misses / 50 + memory,
                misses / 500 + memory,
                misses / 5000 + memory,
                misses / 200,
            );
            let estimate = match shape {
                Some(s) => {
                    let cost = |key: &str| s.cost(key);
                    n + cost("l2-cycles") * (l1i + l1d - l2)
                        + cost("llc-cycles") * (l2 - llc)
                        + cost("memory-cycles") * llc
                        + cost("mispredict-cycles") * mispredicts
                }
                None => 2 * n,
            };
            for (name, value) in [
                ("instructions", n),
                ("l1i-misses", l1i),
                ("l1d-misses", l1d),
                ("l2-misses", l2),
                ("llc-misses", llc),
                ("coherence-misses", 0),
                ("conditional-mispredicts", mispredicts),
                ("estimated-cycles", estimate),
            ] {
                out.push_str(&format!("{region}\tmodel\t{mode}:{name}\t{value}\n"));
                let at = if mode == "user" {
                    "-".to_string()
                } else {
                    format!("{FAKE_TEXT:016x}")
                };
                if model_blocks && value != 0 && name != "instructions" {
                    blocks.push_str(&format!("{region}\t{mode}:{name}\t{at}\t{value}\n"));
                }
            }
        }
        if let Some(micro) = &micro {
            out.push_str(&micro.parts(region));
        }
    }
    out.push_str(&format!(
        "{region}\tkernel\t{:016x}\t{}\n{region}\tkernel\t{:016x}\t500\n",
        FAKE_TEXT,
        instructions.saturating_sub(1500),
        FAKE_TEXT + 0x40
    ));
    out.push_str(&blocks);
    out
}

/// The counts of a fake run shaped by [`FakeRunner::slow_memory_accesses`].
struct FakeCounts {
    /// Accesses to memory per kernel instruction beside the others.
    memory_per_instruction: f64,
    /// The plugin's arguments, whose figures price the estimate.
    costs: Vec<String>,
}

impl FakeCounts {
    /// The figure `key=N` of the plugin's arguments (0 without it).
    fn cost(&self, key: &str) -> u64 {
        self.costs
            .iter()
            .find_map(|a| a.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
            .unwrap_or(0)
    }
}

impl FakeRunner {
    /// Boots started so far.
    pub fn boots(&self) -> usize {
        self.requests().len()
    }

    /// Every request so far, in the order the boots started.
    pub fn requests(&self) -> Vec<BootRequest> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The most guests that were ever under way at once.
    pub fn most_at_once(&self) -> usize {
        self.at_once.lock().map_or(0, |c| c.1)
    }
}

impl FakeRunner {
    /// A boot that ends before the agent speaks, as asked: QEMU cannot
    /// start, the host was killed, or the guest hangs in its kernel.
    fn end_before_the_agent(&self, number: usize, r: &BootRequest) -> Option<BootOutcome> {
        if let Some(error) = &self.fail_to_start {
            return Some(BootOutcome {
                end: BootEnd::QemuFailed {
                    detail: format!("cannot start qemu: {error}"),
                },
                wall: Duration::ZERO,
            });
        }
        if self.crash_after_boots.is_some_and(|n| number > n) {
            return Some(BootOutcome {
                end: BootEnd::Interrupted,
                wall: Duration::ZERO,
            });
        }
        let _ = std::fs::write(&r.console_log, "Linux version 6.1.0-fake\n");
        self.hang_before_agent.then_some(BootOutcome {
            end: BootEnd::TimedOut {
                after_s: r.deadline.as_secs(),
            },
            wall: r.deadline,
        })
    }

    /// The agent's first message: the fake kernel, and the CPUs the guest
    /// sees (the boot's, unless the runner is told otherwise).
    fn hello(&self, r: &BootRequest) -> Message {
        Message::Hello {
            kernel_release: "6.1.0-fake".into(),
            kernel_version: "#1 fake".into(),
            online_cpus: if let Some(cpus) = &self.online_cpus {
                cpus.clone()
            } else if r.cpus == 1 {
                "0".into()
            } else {
                format!("0-{}", r.cpus - 1)
            },
            cmdline: r.extra_cmdline.clone(),
        }
    }

    /// What every run of this boot's time is multiplied by: the slow
    /// factor for `slow` boots, and the boot's own spread.
    fn timing_factor(&self, r: &BootRequest, slow: bool) -> f64 {
        let name = r
            .console_log
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let slow_factor = if slow && self.slow_factor > 0.0 {
            self.slow_factor
        } else {
            1.0
        };
        slow_factor * (1.0 + self.boot_noise * spread_of(&name))
    }
}

/// Whether the plugin runs the cycle model, and whether it profiles blocks
/// beside it.
fn plugin_output_kind(r: &BootRequest) -> (bool, bool) {
    let has = |arg: &str| {
        r.plugin
            .as_ref()
            .is_some_and(|p| p.args.iter().any(|a| a == arg))
    };
    let model = has("model=cycles");
    (model, model && !has("profile=off"))
}

/// The plugin file's header: version 2 with the cycle model, 3 with the
/// profile on as well.
fn regions_header(model: bool, model_blocks: bool) -> String {
    let mut regions = if model_blocks {
        String::from("# markbench-profile 3\n# model cycles: fake\n")
    } else if model {
        String::from("# markbench-profile 2\n# model cycles: fake\n")
    } else {
        String::from("# markbench-profile 1\n")
    };
    regions.push_str("region\tkind\taddress\tinstructions\n");
    regions
}

/// What a timed run prints: the micro-benchmark's counts, or hackbench's
/// time and a ping flood's summary (each workload's parser finds its own).
fn run_output(micro: Option<&FakeMicro>, seconds: f64) -> String {
    match micro {
        Some(micro) => micro.output(),
        None => format!(
            "Time: {seconds:.3}\n2000 packets transmitted, 2000 received, 0% packet loss, time 1ms\n"
        ),
    }
}

/// The plugin's file as the plugin would write it: one region per timed
/// run, with as many instructions as icount's 16 ns each give the run's
/// time (`fake_region`); version 2 with the cycle model, 3 with the
/// profile on as well.
struct PluginFile {
    text: String,
    /// The next region's number.
    next: usize,
    model: bool,
    model_blocks: bool,
    /// A `slow` boot (its command line says so).
    slow: bool,
    shape: Option<FakeCounts>,
}

impl PluginFile {
    /// The file of boot `r`; with `slow_memory_accesses`, its counts
    /// shaped as [`FakeCounts`] says.
    fn for_boot(r: &BootRequest, slow_memory_accesses: Option<f64>) -> PluginFile {
        let (model, model_blocks) = plugin_output_kind(r);
        let slow = r.extra_cmdline.contains("slow");
        PluginFile {
            text: regions_header(model, model_blocks),
            next: 0,
            model,
            model_blocks,
            slow,
            shape: slow_memory_accesses.map(|per_instruction| FakeCounts {
                memory_per_instruction: if slow { per_instruction } else { 0.0 },
                costs: r
                    .plugin
                    .as_ref()
                    .map(|p| p.args.clone())
                    .unwrap_or_default(),
            }),
        }
    }

    /// The region of a run that took `seconds`.
    fn push(&mut self, seconds: f64, micro: Option<&FakeMicro>) {
        let instructions = (seconds * 1e9 / 16.0) as u64;
        self.text.push_str(&fake_region(
            self.next,
            instructions,
            self.model.then_some(self.model_blocks),
            micro,
            self.shape.as_ref(),
        ));
        self.next += 1;
    }
}

impl Runner for FakeRunner {
    fn load_beside_own(&self) -> f64 {
        self.other_load
    }

    fn boot(&self, r: &BootRequest, on_message: &mut dyn FnMut(Message)) -> BootOutcome {
        // This boot's number, counted from 1 in the order boots started.
        let number = {
            let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            log.push(r.clone());
            log.len()
        };
        let _under_way = UnderWay::enter(&self.at_once);
        if let Some(ended) = self.end_before_the_agent(number, r) {
            return ended;
        }
        let job = std::fs::read(&r.initrd)
            .ok()
            .and_then(|b| job_in_initrd(&b))
            .unwrap_or_default();
        on_message(self.hello(r));
        let hangs = self.hanging_boots.contains(&number);
        let mut plugin_file = PluginFile::for_boot(r, self.slow_memory_accesses);
        let factor = self.timing_factor(r, plugin_file.slow);
        for line in job.lines() {
            match Directive::parse_line(line) {
                Ok(Some(Directive::Run {
                    id,
                    iterations,
                    argv,
                })) => {
                    let micro = fake_micro(&argv);
                    let param: f64 = id
                        .rsplit('/')
                        .next()
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(1.0);
                    for iteration in 0..iterations {
                        let seconds =
                            (0.5 + 0.01 * param) * factor * (1.0 + 0.001 * iteration as f64);
                        on_message(Message::Run(RunRecord {
                            id: id.clone(),
                            iteration,
                            status: 0,
                            elapsed_ns: (seconds * 1e9) as u64,
                            user_ns: 0,
                            sys_ns: 0,
                            output: run_output(micro.as_ref(), seconds),
                        }));
                        plugin_file.push(seconds, micro.as_ref());
                        if self.panicking_boots.contains(&number) {
                            panic!("the fake runner's boot {number} panics, as asked");
                        }
                        if hangs {
                            return BootOutcome {
                                end: BootEnd::TimedOut {
                                    after_s: r.deadline.as_secs(),
                                },
                                wall: r.deadline,
                            };
                        }
                    }
                }
                Ok(Some(Directive::Setup { .. })) => on_message(Message::Setup {
                    status: 0,
                    output: String::new(),
                }),
                _ => {}
            }
        }
        if let Some(hold) = self.hold {
            std::thread::sleep(hold);
        }
        on_message(Message::Done);
        if let Some(plugin) = &r.plugin {
            let _ = std::fs::write(&plugin.output, plugin_file.text);
        }
        BootOutcome {
            end: BootEnd::Completed,
            wall: self.boot_wall.unwrap_or(Duration::from_millis(10)),
        }
    }
}
