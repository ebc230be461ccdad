#!/bin/sh
# What the cap on a vCPU's turn costs the host: the quick suite's SMP
# hackbench point alone (2 groups), one boot of each kernel at a time,
# booted with markbench's own QEMU at each vCPU count and turn given,
# ROUNDS times in turn, and the host CPU time (user + system) of markbench
# and its QEMU per boot, which a loaded host inflates less than wall time.
# Needs the quick suite's kernels and markbench's QEMU in the cache.
#
#   scripts/smp-turn-cost.sh [MARKBENCH] [OUT_DIR] [TURNS] [ROUNDS] [CPUS]
#
# TURNS defaults to 0,10000,1000 (0: turns to the next timer deadline),
# CPUS to 2 (e.g. 2,4,8).
set -eu
. "$(dirname "$0")/smp-point-suite.sh"
markbench=${1:-target/release/markbench}
out=${2:-$(mktemp -d)}
turns=${3:-0,10000,1000}
rounds=${4:-2}
cpus_list=${5:-2}
mkdir -p "$out"
suite=$out/smp-point.toml
smp_point_suite "$suite" smp-point "$cpus_list"
round=1
while [ "$round" -le "$rounds" ]; do
    for cpus in $(echo "$cpus_list" | tr ',' ' '); do
        for turn in $(echo "$turns" | tr ',' ' '); do
            dir=$out/r$round-$cpus-$turn
            # A verdict is an exit status of its own (3 to 7): only a run
            # that wrote no report failed.
            /usr/bin/time -f "%e %U %S" -o "$dir.time" "$markbench" compare --suite "$suite" \
                --cpus "$cpus" --smp-turn "$turn" --jobs 1 --reports "$dir" >"$dir.log" 2>&1 || true
            if ! ls "$dir"/*/report.md >/dev/null 2>&1; then
                echo "markbench failed at $cpus vCPUs, turn $turn (see $dir.log)" >&2
                exit 1
            fi
            echo "$cpus $turn $(cat "$dir.time")" >>"$out/times"
        done
    done
    round=$((round + 1))
done
python3 - "$out/times" <<'PY'
import collections, statistics, sys
by = collections.defaultdict(list)
for line in open(sys.argv[1]):
    cpus, turn, wall, user, sys_ = line.split()
    by[(int(cpus), turn)].append((float(wall), float(user) + float(sys_)))
print("| vCPUs | turn | runs | host CPU time a boot (min–max) | against turns to the deadline | wall time a boot |")
print("|---:|---|---:|---:|---:|---:|")
for (cpus, turn), v in sorted(by.items()):
    # Each run boots one guest of each kernel: halve for a boot.
    cpu = [c / 2 for _, c in v]
    wall = statistics.mean(w for w, _ in v) / 2
    uncapped = by.get((cpus, "0"))
    base = statistics.mean(c for _, c in uncapped) / 2 if uncapped else None
    rel = f"{statistics.mean(cpu) / base - 1:+.1%}" if base else "–"
    print(f"| {cpus} | {turn} | {len(v)} | {statistics.mean(cpu):.1f} s ({min(cpu):.1f}–{max(cpu):.1f}) | {rel} | {wall:.1f} s |")
PY
