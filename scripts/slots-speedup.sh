#!/bin/sh
# Wall time of the quick suite's planned boots one guest at a time against
# the default slots (one guest per host core under icount), and whether
# the samples are the same row for row (they must be: under icount a
# guest's time is its instruction count, whatever runs beside it).
# Needs the quick suite's kernels in the cache: it stops, without
# building, if markbench starts building a kernel. Arguments after the
# output directory go to both runs (e.g. --model cycles).
#
#   scripts/slots-speedup.sh [MARKBENCH] [OUT_DIR] [COMPARE_ARGS…]
set -eu
markbench=${1:-target/release/markbench}
out=${2:-$(mktemp -d)}
[ $# -ge 2 ] && shift 2 || shift $#
. "$(dirname "$0")/cached-compare.sh"
# The planned boots only (two of each kernel at each CPU count): no
# precision blocks, so both runs boot the same units.
run() {
    dir=$1; shift
    cached_compare "$dir" "$markbench" compare --suite suites/quick.toml --max-boots 8 "$@"
}
run "$out/one" --jobs 1 "$@"
run "$out/slots" "$@"
python3 - "$(rundir "$out/one")" "$(rundir "$out/slots")" <<'PY'
import csv, sys, tomllib
one, slots = sys.argv[1:]
def meta(d):
    return tomllib.load(open(f"{d}/meta.toml", "rb"))
def rows(d):
    with open(f"{d}/samples.csv") as f:
        rows = [tuple(v for k, v in r.items() if k != "started_at") for r in csv.DictReader(f)]
    return sorted(rows)
m1, m2 = meta(one), meta(slots)
jobs = m2.get("slots", {}).get("jobs", 1)
w1, w2 = m1["wall_s"], m2["wall_s"]
print(f"{len(m1['boots'])} boots one at a time: {w1:.0f} s; {len(m2['boots'])} boots {jobs} at once: {w2:.0f} s; x{w2 / w1:.2f}")
r1, r2 = rows(one), rows(slots)
same = r1 == r2
print(f"samples: {len(r1)} one at a time, {len(r2)} side by side: {'identical' if same else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY
