#!/bin/sh
# Wall time of the quick suite's boots with the cycle model against without
# it, boot by boot, and whether guest time is the same sample for sample
# (under icount the model must not change what the guest measures).
# Needs the quick suite's kernels in the cache: it stops, without
# building, if markbench starts building a kernel.
#
#   scripts/cycle-model-slowdown.sh [MARKBENCH] [OUT_DIR]
set -eu
markbench=${1:-target/release/markbench}
out=${2:-$(mktemp -d)}
. "$(dirname "$0")/cached-compare.sh"
# One boot per variant and CPU count, no precision blocks.
run() {
    dir=$1; shift
    cached_compare "$dir" nice -n 19 "$markbench" compare --suite suites/quick.toml \
        --boots 1 --budget 1s "$@"
}
run "$out/plain"
run "$out/model" --model cycles
python3 - "$(rundir "$out/plain")" "$(rundir "$out/model")" <<'PY'
import csv, sys, tomllib
plain, model = sys.argv[1:]
def boots(d):
    return {(b["variant"], b["cpus"], b["boot"]): b["wall_s"]
            for b in tomllib.load(open(f"{d}/meta.toml", "rb"))["boots"]}
def times(d):
    with open(f"{d}/samples.csv") as f:
        # Sorted: the rows of boots side by side interleave as they arrive.
        return sorted((r["variant"], r["cpus"], r["boot"], r["workload"], r["param"], r["metric"], r["iteration"], r["value"])
                      for r in csv.DictReader(f) if r["metric"] in ("time", "rate"))
p, m = boots(plain), boots(model)
total_p = total_m = 0.0
for key in sorted(p):
    total_p += p[key]; total_m += m[key]
    print(f"{key[0]:12} {key[1]} CPU  plain {p[key]:6.1f} s  model {m[key]:6.1f} s  x{m[key] / p[key]:.2f}")
print(f"all boots: plain {total_p:.1f} s, model {total_m:.1f} s, x{total_m / total_p:.2f}")
tp, tm = times(plain), times(model)
same = tp == tm
print(f"guest-time samples: {len(tp)} plain, {len(tm)} with the model: {'identical' if same else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY
