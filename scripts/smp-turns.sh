#!/bin/sh
# What the turn of a vCPU does to an SMP point under icount: the quick
# suite's 2-vCPU point (markers-off against markers-on) booted with the
# host's QEMU and with markbench's own at each turn given, and for each the
# spread of the boot means, the half-width of the 95% interval of the
# relative difference, the boots a side that ±0.5% would need, and the
# wall time of a boot. Needs the quick suite's kernels in the cache (it
# stops if markbench starts building one); builds markbench's QEMU if the
# cache has none. Arguments after the turns go to every run.
#
#   scripts/smp-turns.sh [MARKBENCH] [OUT_DIR] [TURNS] [COMPARE_ARGS…]
#
# With SWEEP=1 it boots instead the Aoki 2008 sweep's shape, reduced to
# what TCG on a few cores takes: hackbench -g 50 -l 5 (the ia64-2008 suite
# at --scale 0.05 and its smallest group count) on 2, 4 and 8 vCPUs, 3
# runs + 1 warm-up a boot, 3 boots a side, an A/A of the quick pair's
# baseline kernel (the suite's own kernels are two more builds).
#
# TURNS is a comma-separated list of `host` (the host's QEMU, stock turns)
# and turns in instructions (0: to the next timer deadline); default
# host,0,100000,10000,1000. Each run boots the quick suite's 2-vCPU point
# alone (hackbench -g 2 -l 5, 12 runs + 1 warm-up a boot), 6 boots a side.
set -eu
markbench=${1:-target/release/markbench}
out=${2:-$(mktemp -d)}
turns=${3:-host,0,100000,10000,1000}
[ $# -ge 3 ] && shift 3 || shift $#
. "$(dirname "$0")/cached-compare.sh"
mkdir -p "$out"
suite=$out/smp-point.toml
if [ "${SWEEP:-0}" = 1 ]; then
cat >"$suite" <<'TOML'
name = "smp-sweep"
description = "the Aoki 2008 hackbench sweep's shape, reduced: -g 50 -l 5 on 2, 4 and 8 vCPUs, A/A"
boots = 3
iterations = 3
warmup = 1
cpus = [2, 4, 8]
memory_mib = 2048
boot_timeout_s = 3600
seed = 2008
[[variant]]
name = "markers-off"
kernel = "markers-off"
[[variant]]
name = "markers-off-again"
kernel = "markers-off"
[[workload]]
kind = "hackbench"
params = [50]
loops = 5
TOML
else
cat >"$suite" <<'TOML'
name = "smp-point"
description = "the quick suite's 2-vCPU hackbench point alone"
boots = 6
iterations = 12
warmup = 1
cpus = [2]
memory_mib = 512
boot_timeout_s = 900
seed = 48
[[variant]]
name = "markers-off"
kernel = "markers-off"
[[variant]]
name = "markers-on"
kernel = "markers-on"
[[workload]]
kind = "hackbench"
params = [2]
loops = 5
TOML
fi
dirs=""
for turn in $(echo "$turns" | tr ',' ' '); do
    case $turn in
        host) setting="--qemu $(command -v qemu-system-x86_64)" ;;
        *) setting="--smp-turn $turn" ;;
    esac
    # shellcheck disable=SC2086
    cached_compare "$out/$turn" "$markbench" compare --suite "$suite" $setting "$@"
    dirs="$dirs $turn=$(rundir "$out/$turn")"
done
# shellcheck disable=SC2086
python3 - $dirs <<'PY'
import csv, math, statistics, sys, tomllib
print("| QEMU, turn | vCPUs | boots a side | CoV of the boot means (A / B) | difference | half-width | boots a side for ±0.5% | wall time a boot |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for arg in sys.argv[1:]:
    turn, d = arg.split("=", 1)
    meta = tomllib.load(open(f"{d}/meta.toml", "rb"))
    boots = {}
    with open(f"{d}/samples.csv") as f:
        for r in csv.DictReader(f):
            if r["workload"] != "hackbench" or r["metric"] != "time" or r["warmup"] == "true":
                continue
            boots.setdefault(int(r["cpus"]), {}).setdefault(r["variant"], {}).setdefault(r["boot"], []).append(float(r["value"]))
    names = [k["variant"] for k in meta["kernels"]]
    label = "host's, stock turns" if turn == "host" else ("own, to the deadline" if turn == "0" else f"own, {int(turn):_} instructions".replace("_", " "))
    for cpus in sorted(boots):
        means = {v: [statistics.mean(x) for x in boots[cpus][v].values()] for v in names}
        cov = [statistics.stdev(means[v]) / statistics.mean(means[v]) for v in names]
        a, b = (means[v] for v in names)
        ma, mb = statistics.mean(a), statistics.mean(b)
        diff = mb / ma - 1
        # Welch on the boot means, as the report tests them; the delta
        # method for the ratio.
        se = math.sqrt(statistics.variance(a) / len(a) / ma**2 + statistics.variance(b) / len(b) / mb**2) * mb / ma
        half = 1.96 * se
        n = min(len(a), len(b))
        need = math.ceil(n * (half / 0.005) ** 2)
        walls = [b_["wall_s"] for b_ in meta["boots"] if b_["cpus"] == cpus]
        print(f"| {label} | {cpus} | {n} | {cov[0]*100:.2f}% / {cov[1]*100:.2f}% | {diff*100:+.2f}% | ±{half*100:.2f}% | {need} | {statistics.mean(walls):.1f} s |")
PY
