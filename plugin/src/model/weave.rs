//! The weave of several vCPUs' cache events: each vCPU's turn held back
//! and the round's turns replayed side by side.

use super::caches::{Lookup, EMPTY};
use super::coherence::OWNED_SLOTS;
use super::{Config, Counts, Mode, Model};
use crate::throughput::PARTS;

/// How far apart the instructions the vCPUs ran in a round may be for it
/// to close: a quarter of the most, or this many where that is less.
const SLACK: u64 = 1024;

/// Events a round holds at most: a vCPU that runs on alone (the others
/// idle, so no turn changes) has its events replayed in rounds of this
/// many rather than kept without bound.
const ROUND_EVENTS: usize = 1 << 20;

/// Events a vCPU's buffer keeps room for after a long round (24 bytes
/// each): beyond it, a buffer a round used a quarter of at most shrinks.
const KEEP_EVENTS: usize = 1 << 14;

/// What a held-back event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Kind {
    Fetch,
    Load,
    Store,
    /// A string store that claims its line without reading it.
    Claim,
    /// A string store that bypasses the caches.
    Bypass,
}

/// One cache event of a vCPU's turn, held back for the weave.
#[derive(Debug, Clone, Copy)]
struct Event {
    /// The vCPU's progress in the round before the block it is of
    /// started (its instructions, or with `Config::weave_cycles` its
    /// blocks' cycles in `throughput::PARTS`): where the event falls.
    time: u64,
    /// Its line, or a block's first line.
    line: u64,
    /// The block it is of, as [`Model::tag`] set it, for the attribution.
    tag: u32,
    /// A block's lines from `line` on (0 for a data access).
    lines: u16,
    kind: Kind,
    mode: Mode,
}

/// The counts one replayed event made on a vCPU, for the attribution.
#[derive(Debug, Clone, Copy)]
pub struct Replayed {
    pub vcpu: usize,
    pub tag: u32,
    pub counts: [Counts; 2],
}

/// Bound and weave, after ZSim (Sanchez and Kozyrakis, ISCA 2013),
/// adapted to round-robin TCG. Round-robin TCG runs one vCPU's whole turn,
/// then the next one's, so a line two vCPUs write in their turns would
/// change hands once a turn instead of at every write as it does when the
/// cores run at once. So each vCPU's cache events (instruction fetches,
/// loads, stores) are held back, stamped with the vCPU's instructions since
/// the round began, and the round's events of all vCPUs are replayed
/// through the caches merged by that stamp, as if the vCPUs had run side by
/// side. A round closes when a vCPU that ran in it begins another turn and
/// the vCPUs that ran in it have run about as many instructions each
/// ([`SLACK`]): QEMU's turns are not all alike (a long turn of one vCPU
/// often comes with a turn of a few instructions of the other, then the
/// other way round), and closing at every vCPU's second turn would pair a
/// long turn with a short one. Instructions and branch prediction, each
/// vCPU's own, are counted at once.
///
/// With `Config::weave_cycles` the stamps are the vCPU's blocks' cycles
/// and each vCPU's misses delay its later events at the replay (ZSim's
/// weave delays a core by its contention); with `Config::burst_ownership`
/// a line another vCPU holds modified comes a transfer after it is asked
/// for; with `Config::weave_span` a round closes once a vCPU's progress in
/// it reaches the span.
#[derive(Debug, Clone)]
pub(super) struct Weave {
    /// The vCPU whose turn it is, `usize::MAX` before the first.
    current: usize,
    /// Per vCPU: whether it had a turn in the round.
    taken: Vec<bool>,
    /// Per vCPU: its instructions so far in the round.
    pub(super) clock: Vec<u64>,
    /// Per vCPU: whether its last block ended in `hlt` or `mwait`: it
    /// sleeps, and holds no round open.
    pub(super) asleep: Vec<bool>,
    /// Per vCPU: the stamp of its running block's events.
    pub(super) now: Vec<u64>,
    /// Per vCPU: the running block's tag.
    tags: Vec<u32>,
    /// Per vCPU: its events of the round, in its order.
    events: Vec<Vec<Event>>,
    held: usize,
    /// Per vCPU: how far the replay has come in its events.
    at: Vec<usize>,
    /// Whether replayed events' counts are kept for [`Model::drain_replayed`].
    record: bool,
    replayed: Vec<Replayed>,
    /// Rounds replayed, turns begun, instructions run while weaving.
    rounds: u64,
    turns: u64,
    pub(super) instructions: u64,
    /// Whether the clock counts estimated cycles, in `throughput::PARTS`
    /// of a cycle (`Config::weave_cycles`), rather than instructions; and
    /// then whether the blocks' costs advance it (an issue width) or their
    /// instructions do, at a cycle each.
    pub(super) cycles: bool,
    pub(super) costed: bool,
    /// How far apart the vCPUs' clocks may be for a round to close even,
    /// at least ([`SLACK`] in the clock's unit).
    slack: u64,
    /// The most a vCPU's clock runs in a round (`u64::MAX`: no bound).
    span: u64,
    /// Per vCPU, at the replay: its stall so far in the round (the misses
    /// charged to it, with `cycles`, and the transfers it waited for), in
    /// the clock's unit, which its events' stamps are ordered by with.
    stall: Vec<u64>,
    /// A line's transfer from another core, in the clock's unit, when a
    /// line stays with its writer for a burst (`Config::burst_ownership`).
    burst: Option<u64>,
    /// Per vCPU, at the replay: the stall its next event already waited
    /// for its line (0 where it has not been put off).
    prepaid: Vec<u64>,
    /// Per vCPU, at the replay: the line of its last store and when, for
    /// its store buffer.
    stored: Vec<(u64, u64)>,
    /// The latest stamp of any event replayed.
    pub(super) widest: u64,
}

impl Weave {
    fn new(vcpus: usize, config: &Config) -> Weave {
        let cycles = config.weave_cycles == 1;
        let unit = if cycles { PARTS } else { 1 };
        Weave {
            current: usize::MAX,
            taken: vec![false; vcpus],
            clock: vec![0; vcpus],
            asleep: vec![false; vcpus],
            now: vec![0; vcpus],
            tags: vec![u32::MAX; vcpus],
            events: vec![Vec::new(); vcpus],
            held: 0,
            at: vec![0; vcpus],
            record: false,
            replayed: Vec::new(),
            rounds: 0,
            turns: 0,
            instructions: 0,
            cycles,
            costed: config.issue_width > 0,
            slack: SLACK * unit,
            span: match config.weave_span {
                0 => u64::MAX,
                span => span.saturating_mul(unit),
            },
            stall: vec![0; vcpus],
            burst: (config.burst_ownership == 1 && config.coherence_cycles > 0)
                .then_some(config.coherence_cycles * unit),
            prepaid: vec![0; vcpus],
            stored: vec![(EMPTY, 0); vcpus],
            widest: 0,
        }
    }

    /// `v` begins a turn. One that slept woke during the turn of the vCPU
    /// before it (QEMU skips a sleeping vCPU's turns without a word): its
    /// events follow that vCPU's so far, which may have woken it.
    fn begin(&mut self, v: usize) {
        if self.asleep[v] {
            self.asleep[v] = false;
            if let Some(&before) = self.clock.get(self.current) {
                // Within the round's span, which the vCPU before it may
                // have reached.
                self.clock[v] = self.clock[v].max(before).min(self.span - 1);
            }
        }
        self.taken[v] = true;
        self.now[v] = self.clock[v];
        self.current = v;
    }

    /// Whether the vCPUs awake that ran in the round ran about as many
    /// instructions each.
    fn balanced(&self) -> bool {
        let ran = || {
            (0..self.clock.len())
                .filter(|&v| self.taken[v] && !self.asleep[v])
                .map(|v| self.clock[v])
        };
        let (most, least) = (ran().max().unwrap_or(0), ran().min().unwrap_or(0));
        most - least <= (most / 4).max(self.slack)
    }

    #[inline(always)]
    pub(super) fn hold(&mut self, v: usize, line: u64, lines: u16, kind: Kind, mode: Mode) {
        self.events[v].push(Event {
            time: self.now[v],
            line,
            tag: self.tags[v],
            lines,
            kind,
            mode,
        });
        self.held += 1;
    }
}

/// How much the weave did: rounds replayed, turns begun, instructions run
/// while weaving.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WeaveStats {
    pub rounds: u64,
    pub turns: u64,
    pub instructions: u64,
}

impl Model {
    pub(super) fn hold_data(&mut self, v: usize, first: u64, last: u64, store: bool) {
        self.turn(v);
        let mode = self.cores[v].mode;
        let kind = if store { Kind::Store } else { Kind::Load };
        let Some(w) = self.weave.as_mut() else { return };
        w.hold(v, first, 0, kind, mode);
        if last != first {
            w.hold(v, last, 0, kind, mode);
        }
    }

    /// Holds back every vCPU's cache events from now on and replays them
    /// interleaved, round by round (see [`Weave`]), when `on` and there
    /// are several vCPUs; counts every event at once otherwise (what is
    /// held is replayed first).
    pub fn set_weave(&mut self, on: bool) {
        self.flush();
        self.weave = (on && self.cores.len() > 1)
            .then(|| Box::new(Weave::new(self.cores.len(), &self.config)));
    }

    /// Whether events are held back for the weave.
    pub fn weaving(&self) -> bool {
        self.weave.is_some()
    }

    /// Keeps each replayed event's counts, with its vCPU and the tag of its
    /// block, for [`Model::drain_replayed`].
    pub fn record_replayed(&mut self, on: bool) {
        if let Some(w) = self.weave.as_mut() {
            w.record = on;
        }
    }

    /// The events `vcpu` holds back from now on belong to the block `tag`.
    #[inline]
    pub fn tag(&mut self, vcpu: usize, tag: u32) {
        let v = self.index(vcpu);
        if let Some(w) = self.weave.as_mut() {
            w.tags[v] = tag;
        }
    }

    /// Gives `f` every replayed event's counts kept since the last call,
    /// in the order of the replay.
    pub fn drain_replayed(&mut self, mut f: impl FnMut(&Replayed)) {
        if let Some(w) = self.weave.as_mut() {
            let kept = w.replayed.len();
            for r in w.replayed.drain(..) {
                f(&r);
            }
            if w.replayed.capacity() > KEEP_EVENTS && kept < w.replayed.capacity() / 4 {
                w.replayed.shrink_to(KEEP_EVENTS.max(2 * kept));
            }
        }
    }

    /// How much the weave did so far.
    pub fn weave_stats(&self) -> Option<WeaveStats> {
        self.weave.as_ref().map(|w| WeaveStats {
            rounds: w.rounds,
            turns: w.turns,
            instructions: w.instructions,
        })
    }

    /// `vcpu` is about to make an event: a vCPU other than the last one
    /// begins its turn, and the round closes first if that vCPU had a turn
    /// in it already and the vCPUs are even (or the round holds too many
    /// events). Called by
    /// every event; a caller that must see the replayed counts before an
    /// event (the attribution) calls it before.
    #[inline(always)]
    pub fn turn(&mut self, vcpu: usize) {
        let v = self.index(vcpu);
        if let Some(w) = self.weave.as_ref() {
            if w.current != v || w.held >= ROUND_EVENTS || w.clock[v] >= w.span {
                self.next_turn(v);
            }
        }
    }

    #[inline(never)]
    fn next_turn(&mut self, v: usize) {
        let Some(w) = self.weave.as_mut() else { return };
        if w.current != v {
            let spent = w.clock.iter().any(|&c| c >= w.span);
            if w.taken[v] && w.balanced() || spent {
                self.replay_round();
            }
            let w = self.weave.as_mut().expect("weaving");
            w.begin(v);
            w.turns += 1;
        } else {
            // A vCPU alone with too many events, or past the round's span:
            // its turn goes on in a new round.
            self.replay_round();
            self.weave.as_mut().expect("weaving").begin(v);
        }
    }

    /// Replays every event held back: before counts are read. The vCPU
    /// running goes on as if beginning a turn.
    pub fn flush(&mut self) {
        if self.weave.is_none() {
            return;
        }
        self.replay_round();
        let w = self.weave.as_mut().expect("weaving");
        if w.current < w.taken.len() {
            let v = w.current;
            w.begin(v);
        }
    }

    /// Replays the round's events of every vCPU merged by their stamps
    /// (the lower vCPU first where they are equal), each vCPU's stamps
    /// moved on by its stall so far, then begins a new round.
    fn replay_round(&mut self) {
        let Some(mut w) = self.weave.take() else {
            return;
        };
        if w.held > 0 {
            w.rounds += 1;
        }
        let n = w.events.len();
        for v in 0..n {
            w.at[v] = 0;
            w.stall[v] = 0;
            w.prepaid[v] = 0;
            w.stored[v] = (EMPTY, 0);
            if let Some(last) = w.events[v].last() {
                w.widest = w.widest.max(last.time);
            }
        }
        let timed = w.cycles || w.burst.is_some();
        loop {
            // The vCPU with the earliest next event, and the next earliest
            // of the others: the first one's events are replayed in a run
            // until they pass the second's (a vCPU's stall only grows as
            // its own events are replayed).
            let mut first: Option<(u64, usize)> = None;
            let mut second: Option<(u64, usize)> = None;
            for v in 0..n {
                let Some(e) = w.events[v].get(w.at[v]) else {
                    continue;
                };
                let key = (e.time + w.stall[v], v);
                if first.is_none_or(|f| key < f) {
                    second = first;
                    first = Some(key);
                } else if second.is_none_or(|s| key < s) {
                    second = Some(key);
                }
            }
            let Some((_, v)) = first else { break };
            let events = std::mem::take(&mut w.events[v]);
            let mut i = w.at[v];
            while let Some(&e) = events.get(i) {
                let at = e.time + w.stall[v];
                if second.is_some_and(|s| (at, v) > s) {
                    break;
                }
                if !timed {
                    self.replay(v, e, &mut w);
                } else if !self.replay_timed(v, e, at, &mut w) {
                    // Put off until its line comes: the others go first.
                    break;
                }
                i += 1;
            }
            w.at[v] = i;
            w.events[v] = events;
        }
        for events in &mut w.events {
            let held = events.len();
            events.clear();
            // A long round's buffer is given back once rounds are short.
            if events.capacity() > KEEP_EVENTS && held < events.capacity() / 4 {
                events.shrink_to(KEEP_EVENTS.max(2 * held));
            }
        }
        w.taken.iter_mut().for_each(|t| *t = false);
        w.clock.iter_mut().for_each(|c| *c = 0);
        w.held = 0;
        self.weave = Some(w);
    }

    /// One held-back event of vCPU `v` at `at` (its stamp and its stall so
    /// far), through the caches, with the cycles of its misses added to
    /// the vCPU's stall; `false` where it is put off instead: a data
    /// access to a line another vCPU holds modified waits for the line's
    /// transfer, while that vCPU's own accesses go on.
    fn replay_timed(&mut self, v: usize, e: Event, at: u64, w: &mut Weave) -> bool {
        let data = matches!(e.kind, Kind::Load | Kind::Store | Kind::Claim);
        if let (Some(transfer), true) = (w.burst, data) {
            let (line, when) = w.stored[v];
            if e.kind == Kind::Load && line == e.line && at < when + transfer {
                // Served by the store buffer: the store is waiting for
                // its line still, or just was.
                return true;
            }
            if w.prepaid[v] == 0 && self.modified_elsewhere(v, e.line) {
                w.stall[v] += transfer;
                w.prepaid[v] = transfer;
                return false;
            }
        }
        let mode = e.mode as usize;
        let before = w
            .cycles
            .then(|| self.cores[v].counts[mode].miss_cycles(&self.config));
        self.replay(v, e, w);
        if let Some(before) = before {
            let after = self.cores[v].counts[mode].miss_cycles(&self.config);
            let charged = after.wrapping_sub(before) * PARTS;
            w.stall[v] += charged.saturating_sub(w.prepaid[v]);
        }
        w.prepaid[v] = 0;
        if matches!(e.kind, Kind::Store | Kind::Claim) {
            // From when the store had its line, the vCPU having waited.
            w.stored[v] = (e.line, e.time + w.stall[v]);
        }
        true
    }

    /// Whether a vCPU other than `v` holds `line` modified: it stored to
    /// the line and no other vCPU has brought it in since (as far as the
    /// table of the lines each vCPU owns remembers).
    fn modified_elsewhere(&self, v: usize, line: u64) -> bool {
        let slot = line as usize % OWNED_SLOTS;
        self.cores
            .iter()
            .enumerate()
            .any(|(other, core)| other != v && core.owned[slot] == line)
    }

    /// One held-back event of vCPU `v`, through the caches.
    #[inline(always)]
    fn replay(&mut self, v: usize, e: Event, w: &mut Weave) {
        let before = w.record.then(|| self.cores[v].counts);
        let mode = e.mode as usize;
        match e.kind {
            Kind::Fetch => {
                for line in e.line..e.line + u64::from(e.lines) {
                    if self.cores[v].l1i.access(line) != Lookup::Hit {
                        self.fetch_miss(v, line, mode);
                    }
                }
            }
            kind => self.string_line(v, e.line, kind, mode),
        }
        if let Some(before) = before {
            let after = self.cores[v].counts;
            if after != before {
                w.replayed.push(Replayed {
                    vcpu: v,
                    tag: e.tag,
                    counts: [after[0].since(&before[0]), after[1].since(&before[1])],
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::*;
    use crate::model::{lines, BlockEnd, Config};
    use std::ops::Range;

    /// Two vCPUs each increment a counter (a load and a store) once per
    /// block of 5 instructions, `increments` times in turns of `turn`
    /// blocks, round-robin; the counters at `a` and `b`.
    fn counters(m: &mut Model, a: u64, b: u64, increments: u64, turn: u64) {
        let end = BlockEnd::Conditional {
            pc: 0x1010,
            target: 0x1000,
            next: 0x1012,
        };
        let lines = lines(0x1000, 0x12);
        let mut done = 0;
        while done < increments {
            for (v, address) in [(0, a), (1, b)] {
                for _ in done..(done + turn).min(increments) {
                    m.block(v, 0x1000, Mode::User, 5, lines.clone(), end);
                    if m.config.issue_width > 0 {
                        m.block_cost(v, 5 * PARTS);
                    }
                    m.data(v, address, 8, false);
                    m.data(v, address, 8, true);
                }
            }
            done += turn;
        }
        m.flush();
    }

    #[test]
    fn woven_turns_bounce_a_shared_line_at_every_write_and_apart_lines_never() {
        let woven = |a, b| {
            let mut m = user_model(small(), 2);
            m.set_weave(true);
            counters(&mut m, a, b, 10_000, 1000);
            user(&m)
        };
        let shared = woven(0x4000, 0x4008);
        let apart = woven(0x4000, 0x4040);
        // Side by side every increment finds the line taken by the other
        // vCPU's last store.
        assert!(shared.coherence_misses >= 19_000, "{shared:?}");
        assert!(shared.coherence_misses + shared.rfo_misses >= 2 * 19_000);
        assert_eq!((apart.coherence_misses, apart.rfo_misses), (0, 0));
        // Turn after turn, the line changes hands once a turn.
        let mut m = user_model(small(), 2);
        counters(&mut m, 0x4000, 0x4008, 10_000, 1000);
        let one_by_one = user(&m);
        assert!(one_by_one.coherence_misses <= 40, "{one_by_one:?}");
        // The same instructions and branches either way.
        assert_eq!(shared.instructions, one_by_one.instructions);
        assert_eq!(
            shared.conditional_mispredicts,
            one_by_one.conditional_mispredicts
        );
        let c = Config::default();
        assert!(shared.estimated_cycles(&c) > 10 * apart.estimated_cycles(&c));
    }

    /// `small` with the weave's parts as given: by cycles (with blocks
    /// costed, so `block_cost` moves the clock), a line kept for a burst,
    /// and a round's span.
    fn timed(cycles: bool, burst: bool, span: u64) -> Config {
        Config {
            issue_width: if cycles { 4 } else { 0 },
            weave_cycles: u32::from(cycles),
            burst_ownership: u32::from(burst),
            weave_span: span,
            ..small()
        }
    }

    #[test]
    fn a_vcpu_a_miss_stalls_falls_behind_the_others_in_the_weave() {
        // vCPU 0 loads a line from memory, then stores the line vCPU 1
        // reads in each of its blocks; every block a cycle.
        let ran = |cycles| {
            let mut m = user_model(timed(cycles, false, 0), 2);
            m.set_weave(true);
            // vCPU 1 has the line, in a round before (the round vCPU 0
            // goes on in).
            m.data(1, 0x4000, 8, false);
            m.data(0, 0x8000, 8, false);
            m.flush();
            let block = |m: &mut Model, v| {
                m.block(v, 0x1000, Mode::User, 1, 0..0, BlockEnd::Other);
                m.block_cost(v, PARTS);
            };
            block(&mut m, 0);
            m.data(0, 0x10_0000, 8, false);
            block(&mut m, 0);
            m.data(0, 0x4000, 8, true);
            for _ in 0..10 {
                block(&mut m, 1);
                m.data(1, 0x4000, 8, false);
            }
            m.flush();
            m.vcpu_counts(1)[Mode::User as usize]
        };
        // By instructions the store comes at vCPU 1's second read, which
        // finds its copy gone.
        assert_eq!(ran(false).coherence_misses, 1);
        // By cycles the store waits for the memory's 200 cycles: vCPU 1
        // reads the line ten times before it, all hits.
        let c = ran(true);
        assert_eq!((c.coherence_misses, c.l1d_misses), (0, 1), "{c:?}");
    }

    #[test]
    fn a_line_stays_with_its_writer_for_the_accesses_before_the_request_arrives() {
        // Side by side, each vCPU's increments of its counter in the shared
        // line go on hitting while the other's request is on its way: a
        // transfer a burst (of 70 cycles, at 5 a block: 14 increments),
        // not an increment.
        for cycles in [false, true] {
            let woven = |a, b| {
                let mut m = user_model(timed(cycles, true, 0), 2);
                m.set_weave(true);
                counters(&mut m, a, b, 10_000, 1000);
                user(&m)
            };
            let shared = woven(0x4000, 0x4008);
            let transfers = shared.coherence_misses + shared.rfo_misses;
            assert!((200..=20_000 / 14).contains(&transfers), "{shared:?}");
            let apart = woven(0x4000, 0x4040);
            assert_eq!((apart.coherence_misses, apart.rfo_misses), (0, 0));
        }
    }

    #[test]
    fn a_load_of_a_line_just_stored_is_served_by_the_store_buffer() {
        // vCPU 0 stores the line at 0 and 50 and loads it at `load`;
        // vCPU 1 stores it at 0, and has it from 70 on (a transfer later).
        let coherence = |load: u64| {
            let mut m = user_model(timed(false, true, 0), 2);
            m.set_weave(true);
            for (n, store) in [(50, true), (load - 50, true), (1, false)] {
                m.block(0, 0x1000, Mode::User, n, 0..0, BlockEnd::Other);
                m.data(0, 0x4000, 8, store);
            }
            m.block(1, 0x1000, Mode::User, 1, 0..0, BlockEnd::Other);
            m.data(1, 0x4000, 8, true);
            m.flush();
            m.vcpu_counts(0)[Mode::User as usize].coherence_misses
        };
        // Within a transfer of its store at 50, the load needs no line.
        assert_eq!(coherence(100), 0);
        // Later it waits for the line vCPU 1 took.
        assert_eq!(coherence(121), 1);
    }

    #[test]
    fn a_long_turn_is_woven_with_the_others_long_turn_across_short_ones() {
        // As QEMU's turns often come: vCPU 0 long, vCPU 1 a few blocks,
        // vCPU 0 a few, vCPU 1 long; the long turns run side by side.
        let mut m = user_model(small(), 2);
        m.set_weave(true);
        let end = BlockEnd::Other;
        let (a, b) = (0x4000, 0x4008);
        for _ in 0..10 {
            for (v, address, blocks) in [(0, a, 1000), (1, b, 3), (0, a, 3), (1, b, 1000)] {
                for _ in 0..blocks {
                    m.block(v, 0x1000, Mode::User, 5, lines(0x1000, 0x10), end);
                    m.data(v, address, 8, false);
                    m.data(v, address, 8, true);
                }
            }
        }
        m.flush();
        let c = user(&m);
        assert!(c.coherence_misses > 19_000, "{c:?}");
    }

    #[test]
    fn a_vcpu_that_wakes_follows_what_the_vcpu_before_it_did() {
        let mut m = user_model(small(), 2);
        m.set_weave(true);
        let run = |m: &mut Model, v, end| {
            m.block(v, 0x1000, Mode::User, 5, lines(0x1000, 0x10), end);
        };
        // vCPU 1 reads the line, then sleeps; vCPU 0 goes on.
        run(&mut m, 1, BlockEnd::Other);
        m.data(1, 0x4000, 8, false);
        run(&mut m, 1, BlockEnd::Halt);
        run(&mut m, 0, BlockEnd::Other);
        // A new round, vCPU 0's alone so far (a marker's replay).
        m.flush();
        // A long turn of vCPU 0 that writes the line at its end, then
        // vCPU 1 wakes (say to the interrupt vCPU 0 sent) and reads it.
        for _ in 0..100 {
            run(&mut m, 0, BlockEnd::Other);
        }
        m.data(0, 0x4000, 8, true);
        run(&mut m, 1, BlockEnd::Other);
        m.data(1, 0x4000, 8, false);
        m.flush();
        // The read comes after the write, as it did: a coherence miss
        // (stamped from its turn's start it would have come first, a hit).
        let c = m.vcpu_counts(1)[Mode::User as usize];
        assert_eq!(c.coherence_misses, 1, "{c:?}");
    }

    /// A random stream of turns of 4 or 8 vCPUs, long and short, some
    /// sleeping, each block costed: the counts, and the latest stamp of a
    /// round.
    fn random_turns(config: Config, vcpus: usize) -> ([Counts; 2], u64) {
        let mut m = Model::new(config, vcpus).unwrap();
        m.set_weave(true);
        let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ vcpus as u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..3000 {
            let v = (next() % vcpus as u64) as usize;
            let blocks = if next() % 4 == 0 {
                next() % 300
            } else {
                next() % 20
            };
            for _ in 0..blocks {
                let pc = 0xc000 + next() % 0x4000;
                let end = if next() % 50 == 0 {
                    BlockEnd::Halt
                } else {
                    BlockEnd::Other
                };
                let n = 1 + next() % 30;
                m.block(v, pc, Mode::User, n, lines(pc, 3 * n), end);
                m.block_cost(v, n * PARTS / 2 + next() % PARTS);
                for _ in 0..next() % 4 {
                    let address = match next() % 4 {
                        // Lines every vCPU reads and writes.
                        0 | 1 => 0x1_0000 + next() % 0x400,
                        _ => next() % 0x10_0000,
                    };
                    m.data(v, address, 8, next() % 3 == 0);
                }
            }
        }
        m.flush();
        (m.counts(), m.weave.as_ref().unwrap().widest)
    }

    #[test]
    fn rounds_bounded_in_span_stay_within_it_and_the_same_stream_counts_the_same() {
        let span = 2000;
        for vcpus in [4, 8] {
            for (cycles, burst) in [(false, false), (true, false), (true, true)] {
                let (counts, widest) = random_turns(timed(cycles, burst, span), vcpus);
                let unit = if cycles { PARTS } else { 1 };
                assert!(widest < span * unit, "{vcpus} vCPUs: {widest}");
                // Same stream, same counts.
                assert_eq!(random_turns(timed(cycles, burst, span), vcpus).0, counts);
                assert!(counts[0].coherence_misses > 0);
                // Unbounded, the rounds run further.
                let (_, unbounded) = random_turns(timed(cycles, burst, 0), vcpus);
                assert!(unbounded >= span * unit, "{vcpus} vCPUs: {unbounded}");
            }
        }
    }

    #[test]
    fn a_weave_on_one_vcpu_or_off_changes_nothing() {
        let mut m = user_model(small(), 1);
        m.set_weave(true);
        assert!(!m.weaving());
        let mut m = user_model(small(), 2);
        m.set_weave(true);
        assert!(m.weaving());
        m.data(0, 0x4000, 8, true);
        assert_eq!(user(&m).l1d_misses, 0, "held back");
        m.set_weave(false);
        assert_eq!(user(&m).l1d_misses, 1, "replayed when the weave stops");
        m.data(1, 0x4000, 8, true);
        assert_eq!(user(&m).coherence_misses, 0);
        assert_eq!(user(&m).rfo_misses, 1);
    }

    /// Random turns of random events on 1 to 4 vCPUs (and a vCPU index
    /// beyond them), now and then a flush in a turn (as a marker makes):
    /// the woven model counts what the model taking every event at once
    /// counts when given each round's events sorted by their vCPU's
    /// instructions in the round, the lower vCPU first where equal.
    #[test]
    fn the_weave_counts_what_the_rounds_merged_by_hand_count() {
        // As the model was, and with the prefetcher and the victim last
        // level, which work at the replay.
        let memory_side = Config {
            prefetch_streams: 4,
            llc_victim: true,
            ..small()
        };
        for (vcpus, config) in (1..=4).flat_map(|v| [(v, small()), (v, memory_side.clone())]) {
            let mut woven = Model::new(config.clone(), vcpus).unwrap();
            woven.set_weave(true);
            let prefetching = config.prefetch_streams > 0;
            let mut by_hand = Model::new(config, vcpus).unwrap();
            let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ vcpus as u64;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            // (stamp, vCPU, order of arrival, event): the round so far.
            #[derive(Clone)]
            enum Op {
                Block(u64, Mode, u64, Range<u64>, BlockEnd),
                Data(u64, u64, bool),
                String(u64, u64, bool),
            }
            let mut round: Vec<(u64, usize, usize, Op)> = Vec::new();
            let mut taken = vec![false; vcpus];
            let mut clock = vec![0u64; vcpus];
            let mut asleep = vec![false; vcpus];
            let mut now = vec![0u64; vcpus];
            let mut ends = vec![BlockEnd::Other; vcpus];
            let mut seq = 0;
            let replay = |round: &mut Vec<(u64, usize, usize, Op)>, m: &mut Model| {
                round.sort_by_key(|(t, v, s, _)| (*t, *v, *s));
                for (_, v, _, op) in round.drain(..) {
                    match op {
                        Op::Block(pc, mode, n, lines, end) => m.block(v, pc, mode, n, lines, end),
                        Op::Data(a, size, store) => m.data(v, a, size, store),
                        Op::String(a, size, store) => {
                            m.string_data(v, a, size, store, translate);
                        }
                    }
                }
            };
            let mut current = usize::MAX;
            for _ in 0..2000 {
                // A turn: a vCPU (now and then one beyond those announced,
                // which shares the last core), sometimes the same again;
                // short and long ones, so that rounds close both even and
                // after uneven turns have evened out.
                let asked = (next() % (vcpus as u64 + 1)) as usize;
                let v = asked.min(vcpus - 1);
                let events = if next() % 4 == 0 {
                    next() % 600
                } else {
                    next() % 60
                };
                for _ in 0..events {
                    // The model sees a turn begin with its first event.
                    if v != current {
                        let ran = || {
                            (0..vcpus)
                                .filter(|&u| taken[u] && !asleep[u])
                                .map(|u| clock[u])
                        };
                        let (most, least) = (ran().max().unwrap_or(0), ran().min().unwrap_or(0));
                        if taken[v] && most - least <= (most / 4).max(SLACK) {
                            replay(&mut round, &mut by_hand);
                            taken.iter_mut().for_each(|t| *t = false);
                            clock.iter_mut().for_each(|c| *c = 0);
                        }
                        // A vCPU that slept woke during the last one's turn.
                        if asleep[v] {
                            asleep[v] = false;
                            if current < vcpus {
                                clock[v] = clock[v].max(clock[current]);
                            }
                        }
                        taken[v] = true;
                        now[v] = clock[v];
                        current = v;
                    }
                    let op = if next() % 10 < 3 {
                        let pc = match (ends[v], next() % 3) {
                            (BlockEnd::Conditional { target, .. }, 0) => target,
                            (BlockEnd::Conditional { next, .. }, 1) => next,
                            _ => 0xc000 + next() % 0x8000,
                        };
                        let bytes = 1 + next() % 200;
                        let end = match next() % 3 {
                            0 => BlockEnd::Conditional {
                                pc: pc + bytes - 2,
                                target: 0xc000 + next() % 0x8000,
                                next: pc + bytes,
                            },
                            1 => BlockEnd::Indirect { pc: pc + bytes - 1 },
                            2 if next() % 2 == 0 => BlockEnd::String { pc: pc + bytes - 1 },
                            // Now and then the vCPU goes to sleep.
                            _ if next() % 3 == 0 => BlockEnd::Halt,
                            _ => BlockEnd::Other,
                        };
                        ends[v] = end;
                        if end == BlockEnd::Halt {
                            asleep[v] = true;
                        }
                        let mode = if next() % 2 == 0 {
                            Mode::User
                        } else {
                            Mode::Kernel
                        };
                        let n = 1 + bytes / 3;
                        now[v] = clock[v];
                        clock[v] += n;
                        woven.block(asked, pc, mode, n, lines(pc, bytes), end);
                        Op::Block(pc, mode, n, lines(pc, bytes), end)
                    } else if matches!(ends[v], BlockEnd::String { .. }) && next() % 2 == 0 {
                        // A string element, at a hot line now and then.
                        let address = 0x1_0000 + next() % 0x400;
                        let size = 1 << (next() % 4);
                        let store = next() % 2 == 0;
                        woven.string_data(asked, address, size, store, translate);
                        Op::String(address, size, store)
                    } else {
                        let address = match next() % 10 {
                            0..=5 => 0x1_0000 + next() % 0x200,
                            6..=8 => next() % 0x1_0000,
                            _ => next() % 0x40_0000,
                        };
                        let size = 1 << (next() % 5);
                        let store = next() % 5 < 2;
                        woven.data(asked, address, size, store);
                        Op::Data(address, size, store)
                    };
                    round.push((now[v], v, seq, op));
                    seq += 1;
                    // A marker: by the vCPU running, after an event of its.
                    if next() % 200 == 0 {
                        woven.flush();
                        replay(&mut round, &mut by_hand);
                        taken.iter_mut().for_each(|t| *t = false);
                        clock.iter_mut().for_each(|c| *c = 0);
                        taken[v] = true;
                        asleep[v] = false;
                        now[v] = 0;
                        assert_eq!(woven.counts(), by_hand.counts());
                    }
                }
            }
            woven.flush();
            replay(&mut round, &mut by_hand);
            assert_eq!(woven.counts(), by_hand.counts());
            let [user, kernel] = woven.counts();
            assert!(user.l1d_misses > 0 && kernel.l1i_misses > 0);
            assert_eq!(
                vcpus > 1,
                user.coherence_misses + kernel.coherence_misses > 0
            );
            assert_eq!(prefetching, user.l2_prefetches + kernel.l2_prefetches > 0);
        }
    }
}
