#!/usr/bin/env python3
"""Checks markbench's cycle model against cachegrind (docs/cycle-model.md).

Builds patterns.c (static), runs each pattern on the host under
`valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes` with the
model's default geometry and in a guest (a cached markbench kernel, the
program as /init) under the plugin with model=cycles, and prints, for the
timed region, cachegrind's and the model's user-space L1d misses, LL(C)
misses and branch mispredicts side by side.

    scripts/cycle-model-check/check.py [--kernel BZIMAGE] [--plugin SO] [--qemu QEMU] [--set KEY=VALUE ...] [PATTERN ...]

`--set KEY=VALUE` passes a model setting to the plugin (repeatable), e.g.
`--set prefetch-streams=0 --set llc-victim=0` for the model closest to
cachegrind's caches (no prefetcher, a last level filled on every miss).

`--sharing` instead boots the sharing cases, two processes pinned to
vCPUs of their own: each incrementing its own counter 8 bytes apart in
one line (false sharing, `shared`) or a line apart (`apart`), and both
adding to one counter with a locked add (true sharing, `true`), on the
vCPU counts of `--cpus` (1 and 2 by default), and prints the model's
coherence misses, reads for ownership and estimated cycles, and the
ratios to `apart` (cachegrind runs threads one at a time and models no
coherence: it has nothing to say here). On 4 vCPUs or more it runs a
pair for each two vCPUs (at most 4 pairs), pair p on vCPUs 2p and 2p + 1
with lines of its own, four lines from the next pair's: two pairs on 4
vCPUs. `--rr-turn N[,N...]` boots the cases on several vCPUs once per
cap of a vCPU's round-robin turn (`-accel tcg,rr-turn=N`, a QEMU that has it: see
docs/cycle-model.md; 0 leaves turns uncapped; `--firmware DIR` for one
run from its build tree), `--weave off` has the
plugin count the vCPUs' turns one after the other instead of interleaved.

`--profile FILE` passes a calibrated profile's settings
(`markbench calibrate --out FILE`) to the plugin.

`--native` instead holds the model's estimated cycles against this
machine's own CPU: each pattern (and the sharing pair, with `--qemu` a
QEMU that runs 2 vCPUs under icount, markbench's own) is timed natively
and booted under the model. Natively each run times its own clock: the
program runs short add chains (one cycle an add on any current x86 core)
just before and after its region, in the same process; runs are
real-time FIFO where allowed (`chrt`; `--no-realtime` not), the one-vCPU
patterns pinned to `--cpu`, in `--repeats` rounds of every pattern. It
prints each pattern's cycles per operation on the CPU (the least over the
rounds, their min-max and median) and in the model, their ratio, and the
geometric-mean error exp(mean |ln(model / CPU)|) - 1 over the patterns;
the sharing pair adds the false-sharing ratio (one line / a line apart)
on the CPU (the median over the rounds where the two processes counted
side by side) and in the model. `--cpu-only` times the native side
alone. `--record` (with `--profile FILE`) writes the figures into FILE as
its `[check]` table, which runs under the profile then record and the
report states. Natively the sharing cases are the one pair on 2 CPUs:
the two pairs of 4 vCPUs need 4 host CPUs, so they are checked in a
guest only.

Also: `--plain` boots each pattern a second time without the plugin and
checks the guest time of the region is the same (icount: the plugin does
not change what the guest measures), and prints both boots' wall times.
"""
import argparse, glob, math, os, re, struct, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEOMETRY = {"l1i": (32768, 8), "l1d": (32768, 8), "llc": (4194304, 16)}
PATTERNS = [
    ["chase", "16"], ["chase", "128"], ["chase", "512"], ["chase", "2048"],
    ["chase", "16384"], ["sweep", "16"], ["sweep", "2048"], ["sweep", "16384"],
    ["memcpy"], ["random"], ["periodic"], ["taken"],
]


def newc(entries):
    """A newc cpio archive of (name, mode, data, rdev_major, rdev_minor)."""
    out = b""
    for ino, (name, mode, data, major, minor) in enumerate(entries, 1):
        n = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, major, minor, len(n), 0]
        head = b"070701" + b"".join(b"%08x" % f for f in fields)
        out += head + n + b"\0" * ((4 - (len(head) + len(n)) % 4) % 4)
        out += data + b"\0" * ((4 - len(data) % 4) % 4)
    trailer = b"TRAILER!!!\0"
    head = b"070701" + b"".join(b"%08x" % f for f in [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, len(trailer), 0])
    out += head + trailer + b"\0" * ((4 - (len(head) + len(trailer)) % 4) % 4)
    return out


def cachegrind(binary, args, tmp):
    out = os.path.join(tmp, "cg.out")
    (l1s, l1w), (lls, llw) = GEOMETRY["l1d"], GEOMETRY["llc"]
    subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
         f"--I1={GEOMETRY['l1i'][0]},{GEOMETRY['l1i'][1]},64", f"--D1={l1s},{l1w},64",
         f"--LL={lls},{llw},64", f"--cachegrind-out-file={out}", binary, *args],
        check=True, capture_output=True)
    events, region = None, {}
    fn = None
    for line in open(out):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line[:1].isdigit() and fn == "region":
            values = [int(v) for v in line.split()[1:]]
            for e, v in zip(events, values):
                region[e] = region.get(e, 0) + v
    g = lambda k: region.get(k, 0)
    return {
        "instructions": g("Ir"),
        "l1d": g("D1mr") + g("D1mw"),
        "ll": g("DLmr") + g("DLmw"),
        "cond": g("Bc"), "cond-miss": g("Bcm"),
        "mispredicts": g("Bcm") + g("Bim"),
    }


def boot(kernel, initrd, args, plugin, out, shift=4, cpus=1, qemu="qemu-system-x86_64",
         rr_turn=None, weave=None, firmware=(), sets=()):
    accel = "tcg" if rr_turn is None else f"tcg,rr-turn={rr_turn}"
    cmd = [qemu, *[a for d in firmware for a in ("-L", d)], "-nodefaults", "-no-user-config", "-display", "none",
           "-no-reboot", "-accel", accel, "-cpu", "max", "-smp", str(cpus), "-m", "256",
           "-kernel", kernel, "-initrd", initrd,
           "-append", "console=ttyS0 panic=-1 rdinit=/init quiet -- " + " ".join(args),
           "-serial", "stdio", "-monitor", "none",
           "-icount", f"shift={shift},sleep=off", "-rtc", "base=2020-01-01T00:00:00,clock=vm",
           "-seed", "1"]
    if plugin:
        # Settings given later win: the plugin takes the last of a key.
        settings = ",".join([f"{k}-bytes={b},{k}-ways={w}" for k, (b, w) in GEOMETRY.items()] + list(sets))
        extra = "" if weave is None else f",weave={weave}"
        cmd += ["-plugin", f"file={plugin},out={out},model=cycles,profile=off,{settings}{extra}"]
    started = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - started
    m = re.search(r"region (\d+) ns", p.stdout)
    if not m:
        sys.exit(f"guest gave no region time: {p.stdout[-2000:]} {p.stderr[-2000:]}")
    boot.stdout = p.stdout
    return int(m.group(1)), wall


def model_counts(out):
    counts = {}
    turn = rounds = None
    for line in open(out):
        m = re.match(r"# model weave: (\d+) rounds, (\d+) turns, (\d+) instructions", line)
        if m and int(m.group(2)):
            turn = int(m.group(3)) // int(m.group(2))
            rounds = int(m.group(1))
        f = line.rstrip("\n").split("\t")
        if len(f) == 4 and f[1] == "model" and f[0] == "0":
            counts[f[2]] = int(f[3])
    u = lambda k: counts.get("user:" + k, 0)
    both = lambda k: u(k) + counts.get("kernel:" + k, 0)
    return {
        "turn": turn,
        "rounds": rounds,
        "all-coherence": both("coherence-misses"),
        "all-rfo": both("rfo-misses"),
        "all-cycles": both("estimated-cycles"),
        "cycles": u("estimated-cycles"),
        "rfo": u("rfo-misses"),
        "instructions": u("instructions"),
        "l1d": u("l1d-misses"),
        "l2": u("l2-misses"),
        "prefetches": u("l2-prefetches"),
        "ll": u("llc-misses"),
        "cond": u("conditional-branches"), "cond-miss": u("conditional-mispredicts"),
        "mispredicts": u("conditional-mispredicts") + u("indirect-mispredicts"),
        "kernel-instructions": counts.get("kernel:instructions", 0),
        "coherence": u("coherence-misses"),
        "kernel-coherence": counts.get("kernel:coherence-misses", 0),
    }


# The patterns the native check times, and the operations each region
# performs (patterns.c's counts), for cycles per operation.
NATIVE = [
    (["adds"], 16_000_000), (["wide"], 16_000_000),
    (["chase", "16"], 400_000), (["chase", "256"], 400_000),
    (["chase", "2048"], 400_000), (["chase", "32768"], 2_097_152),
    (["sweep", "16"], 2_097_152), (["sweep", "32768"], 4_194_304),
    (["taken"], 200_000), (["random"], 200_000), (["periodic"], 200_000),
    (["memcpy"], 20_000), (["mixed"], 12_000),
]
SHARING_OPS = 200_000


# `chrt -f 10`: natively the patterns run first-in first-out in real
# time where the script may (root, or CAP_SYS_NICE), so that the host's
# other processes do not interrupt them (a VM's host still can).
REALTIME = ["chrt", "-f", "10"]


def realtime_allowed():
    return subprocess.run([*REALTIME, "true"], capture_output=True).returncode == 0


def native_run(binary, args, cpu, realtime=False):
    """One native run of a pattern: the region's time and the cycle's
    length (ns an add) from the add chains the program runs just before
    and just after the region (the least of several short chains each
    side; the mean of the two sides). On `cpu` when it is not None."""
    pin = [] if cpu is None else ["taskset", "-c", str(cpu)]
    p = subprocess.run([*(REALTIME if realtime else []), *pin, binary, *args], capture_output=True, text=True, check=True,
                       env={**os.environ, "PATTERNS_CLOCK": "1"})
    region = int(re.search(r"region (\d+) ns", p.stdout).group(1))
    m = re.search(r"clock: (\d+) adds (\d+) ns before, (\d+) ns after", p.stdout)
    adds, before, after = (int(g) for g in m.groups())
    # The sharing pair: the longer of the two processes' counting, the
    # fork and the wait around it left out (the model's figure is user
    # space's, where they cost little), and how much of it the two spent
    # counting at the same time.
    counted = [(int(c), int(n), int(f)) for c, n, f in re.findall(
        r"process \d+ counted (\d+) in (\d+) ns, from (\d+)", p.stdout)]
    if len(counted) == 2:
        # Natively the pair counts more than in a guest: per increment.
        region = max(n for _, n, _ in counted) / counted[0][0]
        together = min(f + n for _, n, f in counted) - max(f for _, _, f in counted)
        return region, (before + after) / 2 / adds, max(together, 0) / max(n for _, n, _ in counted)
    return region, (before + after) / 2 / adds, None


def native_rounds(binary, patterns, rounds, cpu, realtime):
    """Each pattern's cycles per operation over `rounds` native runs,
    by pattern: every round runs each pattern once, so that a spell of
    other work on the host falls on one round of every pattern rather
    than on every round of one."""
    cycles = {" ".join(args): [] for args, _ in patterns}
    clocks = []
    for _ in range(rounds):
        for args, ops in patterns:
            region, ns_an_add, _ = native_run(binary, args, cpu, realtime)
            cycles[" ".join(args)].append(region / ns_an_add / ops)
            clocks.append(1 / ns_an_add)
    return cycles, clocks


def spread(values):
    return f"{min(values):.2f}-{max(values):.2f}"


def native_sharing(binary, rounds, realtime):
    """The sharing pair's cycles per increment by round (the program
    pins its two processes to CPUs 0 and 1 itself), and the false-sharing
    ratio (one line / apart) of each round. Only the rounds where the two
    processes counted side by side for at least half the time, in both
    cases, count (all of them where none did, said so)."""
    runs = {"shared": [], "apart": []}
    for _ in range(rounds):
        for pattern in runs:
            region, ns_an_add, together = native_run(binary, [pattern], None, realtime)
            runs[pattern].append((region / ns_an_add, together))
    both = [i for i in range(rounds) if all(runs[p][i][1] >= 0.5 for p in runs)]
    said = (f"the two processes counted side by side (half the time or more) in {len(both)} "
            f"of {rounds} rounds" + ("" if both else "; all rounds kept"))
    both = both or list(range(rounds))
    cycles = {p: [runs[p][i][0] for i in both] for p in runs}
    ratios = [s / a for s, a in zip(cycles["shared"], cycles["apart"])]
    return cycles, ratios, said


def median(values):
    v = sorted(values)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def native(a, binary, initrd, out):
    """Prints the model against this CPU, pattern by pattern, and returns
    the figures `--record` keeps."""
    wanted = [p.split() for p in a.pattern]
    patterns = [(args, ops) for args, ops in NATIVE if not wanted or args in wanted]
    with_sharing = not wanted and (a.cpu_only or a.qemu != "qemu-system-x86_64")
    realtime = a.realtime and realtime_allowed()
    cpu, clocks = native_rounds(binary, patterns, a.repeats, a.cpu, realtime)
    if with_sharing:
        shared, ratios, side_by_side = native_sharing(binary, a.repeats, realtime)
    print(f"native: {a.repeats} rounds, each pattern once a round"
          f"{'' if a.cpu is None else f' on CPU {a.cpu}'}"
          f"{', real-time FIFO (chrt)' if realtime else ', at normal priority'}; a run's cycles from add chains "
          f"timed in its own process just before and after its region (the clock "
          f"{min(clocks):.3f}-{max(clocks):.3f} GHz over the runs); the CPU's figure is the "
          f"least over rounds (other work on the host only slows a run), min-max the spread")
    print(f"{'pattern':14} {'CPU cyc/op':>11} {'min-max':>15} {'median':>9} "
          f"{'model cyc/op':>12} {'model/CPU':>10}")
    rows = []
    for args, ops in patterns:
        name = " ".join(args)
        line = f"{name:14} {min(cpu[name]):>11.2f} {spread(cpu[name]):>15} {median(cpu[name]):>9.2f}"
        if a.cpu_only:
            print(line, flush=True)
            continue
        boot(a.kernel, initrd, args, a.plugin, out, sets=a.set)
        model = model_counts(out)["cycles"] / ops
        rows.append((name, model / min(cpu[name])))
        print(f"{line} {model:>12.2f} {model / min(cpu[name]):>9.2f}x", flush=True)
    one_vcpu = len(rows)
    if with_sharing:
        model = {}
        for pattern in ("shared", "apart"):
            values = shared[pattern]
            line = f"{pattern:14} {median(values):>11.2f} {spread(values):>15} {median(values):>9.2f}"
            if a.cpu_only:
                print(line + "  (median; 2 CPUs, pinned apart)", flush=True)
                continue
            boot(a.kernel, initrd, [pattern], a.plugin, out, cpus=2, qemu=a.qemu,
                 firmware=a.firmware, sets=a.set)
            model[pattern] = model_counts(out)["cycles"] / 2 / SHARING_OPS
            rows.append((pattern, model[pattern] / median(values)))
            print(f"{line} {model[pattern]:>12.2f} {rows[-1][1]:>9.2f}x  (median; 2 vCPUs)",
                  flush=True)
        model_ratio = model["shared"] / model["apart"] if model else None
        print(f"false sharing, one line / apart: CPU x{median(ratios):.2f} (median of "
              f"{len(ratios)} rounds, x{spread(ratios)}; {side_by_side})"
              + ("" if model_ratio is None else f", model x{model_ratio:.2f}"))
    if not rows:
        return None
    figures = summary(rows, one_vcpu)
    if with_sharing:
        figures["sharing-cpu"] = median(ratios)
        figures["sharing-model"] = model_ratio
    return figures


def summary(rows, one_vcpu):
    """Prints the geometric-mean errors and returns the figures of the check."""
    def error(rows):
        return math.exp(sum(abs(math.log(r)) for _, r in rows) / len(rows)) - 1
    def line(rows, what):
        worst = max(rows, key=lambda r: abs(math.log(r[1])))
        print(f"geometric-mean error over {len(rows)} {what}: {error(rows) * 100:.0f}% "
              f"(x{error(rows) + 1:.2f}); the worst {worst[0]}, x{worst[1]:.2f}")
    line(rows[:one_vcpu], "one-vCPU patterns")
    if len(rows) > one_vcpu:
        line(rows, "patterns with the sharing pair")
    # The sharing pair has figures of its own: the worst kept is the
    # one-vCPU patterns', whose error it is.
    worst = max(rows[:one_vcpu], key=lambda r: abs(math.log(r[1])))
    figures = {"error": error(rows[:one_vcpu]), "patterns": one_vcpu,
               "worst-pattern": worst[0], "worst-ratio": worst[1]}
    if len(rows) > one_vcpu:
        figures["error-with-sharing"] = error(rows)
        figures["patterns-with-sharing"] = len(rows)
    return figures


def refuse_record(a):
    """`--record` keeps the figure of the profile's own check only: the
    whole set of patterns, the profile's settings alone, under the model."""
    if not (a.native and a.profile) or a.cpu_only:
        sys.exit("--record needs --native and --profile FILE, and a model (not --cpu-only)")
    if a.pattern or a.set:
        sys.exit("--record keeps the check of the whole set under the profile's own settings: "
                 "no patterns named, no --set")
    import tomllib
    with open(a.profile, "rb") as f:
        cpu = tomllib.load(f).get("cpu")
    here = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                 if l.startswith("model name")), "unknown")
    if cpu != here:
        sys.exit(f"--record: the profile is of the {cpu}, this host's CPU is the {here}")


def toml_value(v):
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def record(path, figures):
    """Writes the check's figures into the profile as its [check] table,
    in place of any earlier one (the rest of the file kept as it is)."""
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty", "--abbrev=12"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    table = {
        **{k: v for k, v in figures.items() if v is not None},
        "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["scripts/cycle-model-check/check.py", *sys.argv[1:]]),
        "commit": commit,
    }
    kept, inside = [], False
    for line in open(path).read().splitlines():
        if line.strip().startswith("["):
            inside = line.strip() == "[check]"
        if not inside:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    kept += ["", "[check]"] + [f"{k} = {toml_value(v)}" for k, v in table.items()]
    partial = path + ".partial"
    with open(partial, "w") as f:
        f.write("\n".join(kept) + "\n")
    os.replace(partial, path)
    print(f"recorded in {path}: [check] error = {figures['error']:.4f} over "
          f"{figures['patterns']} patterns")


# The most pairs patterns.c runs (its MAX_PAIRS).
MAX_PAIRS = 4


def sharing_pairs(cpus):
    """Pairs of processes for the sharing cases on `cpus` vCPUs: one on 1
    to 3 (on one vCPU the pair shares it), one for each two vCPUs from 4."""
    return min(max(cpus // 2, 1), MAX_PAIRS)


def sharing(a, initrd, out):
    """Boots the sharing cases and prints a row per boot, then the ratios."""
    turns = [None] if a.rr_turn is None else [int(t) for t in a.rr_turn.split(",")]
    print(f"{'case':7} {'vCPUs':>5} {'pairs':>5} {'rr-turn':>7} {'coherence':>10} {'rfo':>9} "
          f"{'est. cycles':>12} {'user: coh':>9} {'rfo':>8} {'est. cycles':>12} {'guest ms':>8} {'turn':>7} {'rounds':>7} {'wall s':>6}")
    # The turn (instructions a turn) and rounds are the weave's over the
    # whole boot, which a span bounds: its rounds, not the region's.
    for cpus in [int(c) for c in a.cpus.split(",")]:
        pairs = sharing_pairs(cpus)
        for turn in (turns if cpus > 1 else [turns[0]]):
            rows = {}
            for pattern in ("shared", "apart", "true"):
                # One pair is named as it always was (no count), so that
                # its boot is the same as before pairs could be more.
                args = [pattern] if pairs == 1 else [pattern, str(pairs)]
                ns, wall = boot(a.kernel, initrd, args, a.plugin, out, cpus=cpus,
                                qemu=a.qemu, rr_turn=turn, weave=a.weave, firmware=a.firmware,
                                sets=a.set)
                where = re.findall(r"process (\d+) pinned (yes|no), on cpu (\d+)", boot.stdout)
                on = {int(who): int(cpu) for who, _, cpu in where}
                if cpus > 1 and on != {i: i for i in range(2 * pairs)}:
                    sys.exit(f"{pattern}: the processes ran on {on} (process: vCPU), "
                             f"not each process i on vCPU i")
                c = model_counts(out)
                rows[pattern] = c
                print(f"{pattern:7} {cpus:>5} {pairs:>5} {'-' if turn is None else turn:>7} "
                      f"{c['all-coherence']:>10} {c['all-rfo']:>9} {c['all-cycles']:>12} "
                      f"{c['coherence']:>9} {c['rfo']:>8} {c['cycles']:>12} {ns / 1e6:>8.2f} {c['turn'] or '-':>7} {c['rounds'] or '-':>7} {wall:>6.0f}",
                      flush=True)
            apart = rows["apart"]
            for pattern in ("shared", "true"):
                r = rows[pattern]
                ratio = lambda k: r[k] / apart[k] if apart[k] else float("inf")
                # Per increment, so that one pair and two compare.
                increments = 2 * pairs * SHARING_OPS
                print(f"  {pattern}/apart: coherence misses x{ratio('all-coherence'):.1f}, "
                      f"estimated cycles x{ratio('all-cycles'):.2f} (user x{ratio('cycles'):.2f}); "
                      f"user coherence misses {r['coherence'] / increments:.3f} an increment, "
                      f"user estimated cycles {r['cycles'] / increments:.2f} an increment "
                      f"(apart {apart['cycles'] / increments:.2f})",
                      flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", help="a bzImage (default: the newest cached markers-off kernel)")
    ap.add_argument("--plugin", default=os.path.join(ROOT, "plugin/target/release/libmarkbench_profile_plugin.so"))
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--sharing", action="store_true")
    ap.add_argument("--native", action="store_true",
                    help="hold the model's cycles against this CPU's, timed natively (of the sharing "
                    "cases the one pair on 2 CPUs: two pairs need 4, and are checked in a "
                    "guest only)")
    ap.add_argument("--repeats", type=int, default=9, help="native rounds (runs of each pattern)")
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)),
                    help="the CPU the one-vCPU patterns run on natively (taskset; -1: any; "
                    "default: the highest this process may use)")
    ap.add_argument("--no-realtime", dest="realtime", action="store_false",
                    help="natively, run at normal priority (by default FIFO real time where "
                    "allowed, so other processes on the host do not interrupt a run)")
    ap.add_argument("--cpu-only", action="store_true",
                    help="with --native: time the patterns natively only, no guest")
    ap.add_argument("--record", action="store_true",
                    help="with --native --profile FILE: write the check's figures into FILE "
                    "as its [check] table")
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--rr-turn", help="caps of a vCPU's round-robin turn, comma-separated "
                    "(the boots on several vCPUs)")
    ap.add_argument("--weave", choices=["on", "off"])
    ap.add_argument("--firmware", action="append", default=[],
                    help="a directory of firmware for QEMU (-L), for a QEMU run from its build tree")
    ap.add_argument("--cpus", default="1,2", help="vCPU counts for --sharing, comma-separated: "
                    "one pair of processes on 1 to 3 vCPUs, from 4 a pair for each two (pair p "
                    "on vCPUs 2p and 2p + 1; two pairs on 4), at most 4 pairs")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a model setting for the plugin (repeatable)")
    ap.add_argument("--profile", help="a calibrated profile (`markbench calibrate --out FILE`): "
                    "its settings for the plugin, before any --set")
    ap.add_argument("pattern", nargs="*")
    a = ap.parse_args()
    a.cpu = None if a.cpu < 0 else a.cpu
    if a.record:
        refuse_record(a)
    if a.kernel is None and not a.cpu_only:
        # The cache's directories are the kernel's name and a key's
        # first 16 hex digits: `markers-off-*` alone would also take other
        # kernels whose names begin so (`markers-off-generic`) and builds
        # still under way (`.partial-*`), and the last by name is not the
        # newest.
        kernels = sorted((k for k in glob.glob(os.path.expanduser(
            "~/.cache/markbench/kernels/markers-off-*/bzImage"))
            if re.fullmatch(r"markers-off-[0-9a-f]{16}", os.path.basename(os.path.dirname(k)))),
            key=os.path.getmtime)
        if not kernels:
            sys.exit("no cached markers-off kernel: name one with --kernel")
        a.kernel = kernels[-1]
        print(f"kernel: {a.kernel}", flush=True)
    if a.profile:
        import tomllib
        with open(a.profile, "rb") as f:
            settings = tomllib.load(f)["settings"]
        a.set = [f"{k}={v}" for k, v in settings.items()] + a.set
    patterns = [p.split() for p in a.pattern] or PATTERNS
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "patterns")
        subprocess.run(["gcc", "-O2", "-static", "-o", binary, os.path.join(HERE, "patterns.c")], check=True)
        data = open(binary, "rb").read()
        initrd = os.path.join(tmp, "initrd")
        out = os.path.join(tmp, "model.tsv")
        open(initrd, "wb").write(newc([
            ("dev", 0o40755, b"", 0, 0), ("dev/console", 0o20600, b"", 5, 1),
            ("init", 0o100755, data, 0, 0)]))
        if a.sharing:
            sharing(a, initrd, out)
            return
        if a.native:
            figures = native(a, binary, initrd, out)
            if a.record:
                record(a.profile, figures)
            return
        print(f"{'pattern':16} {'':4} {'instr':>10} {'L1d miss':>10} {'LL miss':>10} {'cond br':>10} {'mispred':>10}")
        for args in patterns:
            host = cachegrind(binary, args, tmp)
            guest_ns, wall = boot(a.kernel, initrd, args, a.plugin, out, sets=a.set)
            guest = model_counts(out)
            name = " ".join(args)
            for who, c in (("cg", host), ("qemu", guest)):
                print(f"{name:16} {who:4} {c['instructions']:>10} {c['l1d']:>10} {c['ll']:>10} {c['cond']:>10} {c['mispredicts']:>10}")
            rel = lambda k: (guest[k] - host[k]) / host[k] * 100 if host[k] else float("nan")
            print(f"{'':16} diff {rel('instructions'):>+9.1f}% {rel('l1d'):>+9.1f}% {rel('ll'):>+9.1f}% {rel('cond'):>+9.1f}% {rel('mispredicts'):>+9.1f}%"
                  f"   (kernel instructions in the region: {guest['kernel-instructions']}; "
                  f"model L2 misses {guest['l2']}, L2 prefetches {guest['prefetches']}; boot {wall:.0f} s)",
                  flush=True)
            if a.plain:
                plain_ns, plain_wall = boot(a.kernel, initrd, args, None, None)
                same = "same" if plain_ns == guest_ns else "DIFFERENT"
                print(f"{'':16} guest time {guest_ns} ns with the model, {plain_ns} ns without: {same}; "
                      f"boot wall {wall:.1f} s with, {plain_wall:.1f} s without (x{wall / plain_wall:.2f})")


if __name__ == "__main__":
    main()
