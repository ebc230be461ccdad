//! Booting guests. The QEMU boundary sits behind [`Runner`], so planning,
//! sample handling and reporting are tested with a fake runner, and the real
//! one ([`qemu::QemuRunner`]) is the only thing that starts processes.

pub mod accel;
pub mod fake;
pub mod qemu;

use crate::base::protocol::Message;
/// The accelerator's recorded form belongs to the run directory (`record`).
pub use crate::record::Accel;
use crate::record::TimingDecision;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Set by Ctrl-C while a job watches for it ([`watch_interrupts`]): the
/// running guest is stopped, every sample so far is kept, and the run ends
/// with a report marked partial.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// What Ctrl-C does at one moment. A process has one handler (the `ctrlc`
/// crate takes no second), installed where it starts; which job is under
/// way decides what a press means, so each job's words are the ones shown
/// (a night's bisection is not told it is writing a partial report).
struct CtrlC {
    /// The words of the job watching for Ctrl-C, if one is.
    watching: Mutex<Option<&'static str>>,
}

/// Ctrl-C's meaning for this process.
static CTRL_C: CtrlC = CtrlC::new();

impl CtrlC {
    const fn new() -> CtrlC {
        CtrlC {
            watching: Mutex::new(None),
        }
    }

    /// Until the returned value is dropped, a press of Ctrl-C stops the
    /// job rather than end the process ([`CtrlC::pressed`]), and shows
    /// `what` the job does then.
    fn watch(&self, what: &'static str) -> Watching<'_> {
        let previous = self.words().replace(what);
        Watching {
            ctrl_c: self,
            previous,
        }
    }

    /// A press of Ctrl-C: with a job watching, `flag` set and the job's
    /// words; without one, `None` (the process is to end, as Ctrl-C ends a
    /// process that does not catch it).
    fn pressed(&self, flag: &AtomicBool) -> Option<&'static str> {
        let what = *self.words();
        if what.is_some() {
            flag.store(true, Ordering::SeqCst);
        }
        what
    }

    fn words(&self) -> std::sync::MutexGuard<'_, Option<&'static str>> {
        // The words are a plain value: one left by a panicking thread holds.
        self.watching
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A job's watch for Ctrl-C; dropped, Ctrl-C means what it meant before.
#[must_use = "Ctrl-C is watched for only while this value lives"]
pub struct Watching<'a> {
    ctrl_c: &'a CtrlC,
    previous: Option<&'static str>,
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        *self.ctrl_c.words() = self.previous;
    }
}

/// While the returned value lives, Ctrl-C sets [`INTERRUPTED`] instead of
/// ending the process, and says `what` the job does about it: the job
/// that boots guests watches for it, stops them and keeps what they
/// measured.
pub fn watch_interrupts(what: &'static str) -> Watching<'static> {
    CTRL_C.watch(what)
}

/// The process's Ctrl-C handler: while a job watches, it marks the job
/// interrupted and says what the job does; otherwise the process ends at
/// once, as if it caught no Ctrl-C (a shell sees it ended by SIGINT).
pub fn on_ctrl_c() {
    match CTRL_C.pressed(&INTERRUPTED) {
        Some(what) => {
            eprintln!();
            crate::base::message::note(format_args!("interrupted: {what}"));
        }
        None => {
            // SAFETY: restoring SIGINT's default action and sending it to
            // this process touch no memory of Rust's.
            unsafe {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::kill(libc::getpid(), libc::SIGINT);
            }
            std::process::exit(130);
        }
    }
}

/// What every boot of a run is made with, decided once before the first:
/// the QEMU binary, the accelerator and how guest time runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub qemu: qemu::QemuBinary,
    pub accel: accel::AccelDecision,
    pub timing: TimingDecision,
    /// The QEMU SMP guests boot with under icount, when it is not `qemu`.
    pub smp: Option<SmpQemu>,
}

/// markbench's own QEMU and the turn it gives each vCPU: what boots of
/// more than one vCPU under icount are made with (1-vCPU boots and wall
/// time keep the distribution's).
#[derive(Debug, Clone, PartialEq)]
pub struct SmpQemu {
    pub qemu: qemu::QemuBinary,
    pub build: crate::guest::images::qemu_build::BuildRecord,
    /// The longest round-robin turn of one vCPU, in instructions (0: until
    /// the next timer deadline, as upstream).
    pub turn: u32,
    /// What the which-vCPU trial saw, when the run needed it (the cycle
    /// model on more than one vCPU).
    pub which_vcpu: Option<crate::record::Recorded<crate::record::WhichVcpuTrial>>,
}

impl Machine {
    /// Points `request` at the QEMU its vCPU count and timing boot with.
    pub fn place(&self, request: &mut BootRequest) {
        if let Some(smp) = self.smp.as_ref() {
            if request.cpus > 1 && request.icount_shift.is_some() {
                request.qemu = Some(smp.qemu.path.clone());
                request.rr_turn = Some(smp.turn);
            }
        }
    }
}

/// Everything needed to boot one guest.
#[derive(Debug, Clone)]
pub struct BootRequest {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// Appended to markbench's own kernel command line.
    pub extra_cmdline: String,
    pub cpus: u32,
    pub memory_mib: u32,
    pub accel: Accel,
    /// `Some(shift)`: guest time counts instructions (`-icount shift=N,sleep=off`, TCG only).
    pub icount_shift: Option<u32>,
    /// QEMU's `-seed`: the random numbers QEMU hands the guest (RDRAND and
    /// RDSEED of `-cpu max`) come from this seed instead of the host's. With
    /// icount nothing else of the host reaches the guest, so a boot with the
    /// same seed repeats bit for bit; `None` leaves them to the host.
    pub guest_seed: Option<u64>,
    /// The boot is killed and recorded as failed when it runs longer.
    pub deadline: Duration,
    /// Where the guest's kernel console (ttyS0) is written.
    pub console_log: PathBuf,
    /// A TCG plugin QEMU loads for this boot (profiled boots, and every
    /// boot of a run with the cycle model).
    pub plugin: Option<PluginLoad>,
    /// The host CPU the guest's QEMU is bound to, when boots run side by
    /// side: one guest a core, so the host's scheduler never piles two on
    /// one core while another idles. `None`: wherever the host puts it.
    pub host_cpu: Option<usize>,
    /// The QEMU binary of this boot, when it is not the runner's own.
    pub qemu: Option<PathBuf>,
    /// `-accel tcg,rr-turn=N`: the longest round-robin turn of one vCPU
    /// under icount, which only markbench's own QEMU knows.
    pub rr_turn: Option<u32>,
    /// The guest's architecture: its machine, CPU model and console.
    pub arch: crate::base::arch::Arch,
}

/// A TCG plugin and the file it writes when QEMU exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginLoad {
    pub library: PathBuf,
    pub output: PathBuf,
    /// More `key=value` arguments for the plugin (the cycle model's).
    pub args: Vec<String>,
}

/// How a boot ended: recorded in `meta.toml`, so it is part of the run
/// directory's schema.
pub use crate::record::BootEnd;

/// What a boot produced besides its messages.
#[derive(Debug, Clone)]
pub struct BootOutcome {
    pub end: BootEnd,
    pub wall: Duration,
}

/// The `-seed` of one boot: distinct for every unit and attempt (so the
/// boots of a run, A/A sides included, are independent draws of the guest's
/// random state: layout, hash keys, stack canaries), and the same for the
/// same run seed (so a run repeats exactly). SplitMix64 of the three, cut
/// to 63 bits because meta.toml records it and TOML integers are signed.
pub fn boot_seed(run_seed: u64, unit: usize, attempt: u32) -> u64 {
    let mut z = run_seed
        .wrapping_add((unit as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(u64::from(attempt).wrapping_mul(0xd1b5_4a32_d192_ed03));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) >> 1
}

/// Boots guests. `on_message` sees each agent message as it arrives, so
/// samples are written while the guest is still running. One runner boots
/// several guests at once (one per slot of the boot loop), each call on a
/// thread of its own.
pub trait Runner: Sync {
    fn boot(&self, request: &BootRequest, on_message: &mut dyn FnMut(Message)) -> BootOutcome;

    /// How many of the host's cores work other than markbench's own and
    /// its guests' keeps busy, taken just before and just after each boot.
    /// On a real host it is measured over half a second.
    fn load_beside_own(&self) -> f64 {
        crate::base::host::load()
    }
}

#[cfg(test)]
mod tests {
    use super::{boot_seed, CtrlC};
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn ctrl_c_stops_the_job_watching_in_its_words_and_ends_the_process_otherwise() {
        let (ctrl_c, flag) = (CtrlC::new(), AtomicBool::new(false));
        assert_eq!(ctrl_c.pressed(&flag), None);
        assert!(!flag.load(Ordering::SeqCst));
        {
            let _night = ctrl_c.watch("writing a partial report");
            {
                // A night's bisection after its run: the bisection's words.
                let _bisection = ctrl_c.watch("continue with bisect --resume");
                assert_eq!(ctrl_c.pressed(&flag), Some("continue with bisect --resume"));
                assert!(flag.load(Ordering::SeqCst));
            }
            assert_eq!(ctrl_c.pressed(&flag), Some("writing a partial report"));
        }
        flag.store(false, Ordering::SeqCst);
        assert_eq!(ctrl_c.pressed(&flag), None);
        assert!(!flag.load(Ordering::SeqCst));
    }

    #[test]
    fn boot_seeds_differ_per_unit_and_attempt_and_repeat_per_run_seed() {
        let seeds: std::collections::BTreeSet<u64> = (0..20)
            .flat_map(|unit| (0..2).map(move |attempt| boot_seed(7, unit, attempt)))
            .collect();
        assert_eq!(seeds.len(), 40);
        assert!(seeds.iter().all(|&s| s <= i64::MAX as u64));
        assert_eq!(boot_seed(7, 3, 0), boot_seed(7, 3, 0));
        assert_ne!(boot_seed(7, 3, 0), boot_seed(8, 3, 0));
    }
}
