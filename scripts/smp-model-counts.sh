#!/bin/sh
# The cycle model on the quick suite's SMP hackbench point (2 groups, 5
# loops, 12 runs) at each vCPU count given, one boot of each kernel: with
# `--model cycles` and without, the host CPU time and the largest resident
# set (QEMU's, with the plugin's model in it) of each, and the model's
# counts per run. Needs the quick suite's kernels and markbench's QEMU in
# the cache.
#
#   scripts/smp-model-counts.sh [MARKBENCH] [OUT_DIR] [CPUS]
#
# CPUS defaults to 2,4,8.
set -eu
. "$(dirname "$0")/smp-point-suite.sh"
markbench=${1:-target/release/markbench}
out=${2:-$(mktemp -d)}
cpus_list=${3:-2,4,8}
mkdir -p "$out"
suite=$out/smp-model.toml
smp_point_suite "$suite" smp-model "$cpus_list"
: >"$out/times"
for model in cycles none; do
    for cpus in $(echo "$cpus_list" | tr ',' ' '); do
        dir=$out/$model-$cpus
        set -- --cpus "$cpus" --jobs 1 --reports "$dir"
        [ "$model" = cycles ] && set -- "$@" --model cycles
        # A verdict is an exit status of its own: only a run that wrote no
        # report failed.
        /usr/bin/time -f "%U %S %M" -o "$dir.time" "$markbench" compare --suite "$suite" "$@" \
            >"$dir.log" 2>&1 || true
        if ! ls "$dir"/*/report.md >/dev/null 2>&1; then
            echo "markbench failed at $cpus vCPUs, model $model (see $dir.log)" >&2
            exit 1
        fi
        echo "$model $cpus $(cat "$dir.time")" >>"$out/times"
    done
done
python3 - "$out" <<'PY'
import collections, csv, glob, statistics, sys
out = sys.argv[1]
cost = {}
for line in open(f"{out}/times"):
    model, cpus, user, sys_, rss = line.split()
    cost[(model, int(cpus))] = (float(user) + float(sys_), int(rss) / 1024)
counts = sorted({c for _, c in cost})
print("| | " + " | ".join(f"{c} vCPUs" for c in counts) + " |")
print("|---|" + "---:|" * len(counts))
def row(name, cells):
    print(f"| {name} | " + " | ".join(cells) + " |")
row("host CPU a boot, model / none", [f"{cost[('cycles', c)][0] / 2:.1f} s / {cost[('none', c)][0] / 2:.1f} s" for c in counts])
row("largest resident set, model / none", [f"{cost[('cycles', c)][1]:.0f} / {cost[('none', c)][1]:.0f} MiB" for c in counts])
means = {}
for c in counts:
    by = collections.defaultdict(list)
    for r in csv.DictReader(open(glob.glob(f"{out}/cycles-{c}/*/samples.csv")[0])):
        if r["warmup"] not in ("true", "1"):
            by[(r["metric"], r["variant"])].append(float(r["value"]))
    means[c] = {k: statistics.mean(v) for k, v in by.items()}
for metric in ["instructions", "estimated-cycles", "coherence-misses", "rfo-misses", "tlb-misses"]:
    row(f"{metric} a run (markers-off / markers-on)", [
        " / ".join(f"{means[c][(metric, v)]:,.0f}".replace(",", " ") for v in ("markers-off", "markers-on"))
        for c in counts])
PY
