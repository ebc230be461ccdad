#!/bin/sh
# What the cap on a vCPU's turn costs the host: the quick suite's 2-vCPU
# point alone (scripts/smp-turns.sh writes the suite), one boot of each
# kernel at a time, booted with markbench's own QEMU at each turn given,
# ROUNDS times in turn, and the host CPU time (user + system) of markbench
# and its QEMU per boot, which a loaded host inflates less than wall time.
# Needs the quick suite's kernels and markbench's QEMU in the cache.
#
#   scripts/smp-turn-cost.sh [MARKBENCH] [OUT_DIR] [TURNS] [ROUNDS]
#
# TURNS defaults to 0,10000,1000 (0: turns to the next timer deadline).
set -eu
markbench=${1:-target/release/markbench}
out=${2:-$(mktemp -d)}
turns=${3:-0,10000,1000}
rounds=${4:-2}
mkdir -p "$out"
suite=$out/smp-point.toml
cat >"$suite" <<'TOML'
name = "smp-point"
description = "the quick suite's 2-vCPU hackbench point alone, one boot a side"
boots = 1
iterations = 12
warmup = 1
cpus = [2]
memory_mib = 512
boot_timeout_s = 1800
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
round=1
while [ "$round" -le "$rounds" ]; do
    for turn in $(echo "$turns" | tr ',' ' '); do
        dir=$out/r$round-$turn
        /usr/bin/time -f "%e %U %S" -o "$dir.time" "$markbench" compare --suite "$suite" \
            --smp-turn "$turn" --jobs 1 --out "$dir" >"$dir.log" 2>&1
        echo "$turn $(cat "$dir.time")" >>"$out/times"
    done
    round=$((round + 1))
done
python3 - "$out/times" <<'PY'
import collections, statistics, sys
by = collections.defaultdict(list)
for line in open(sys.argv[1]):
    turn, wall, user, sys_ = line.split()
    by[turn].append((float(wall), float(user) + float(sys_)))
base = statistics.mean(c for _, c in by["0"]) / 2 if "0" in by else None
print("| turn | runs | host CPU time a boot | against turns to the deadline | wall time a boot |")
print("|---|---:|---:|---:|---:|")
for turn, v in by.items():
    cpu = statistics.mean(c for _, c in v) / 2
    wall = statistics.mean(w for w, _ in v) / 2
    rel = f"{cpu / base - 1:+.1%}" if base else "–"
    print(f"| {turn} | {len(v)} | {cpu:.1f} s | {rel} | {wall:.1f} s |")
PY
