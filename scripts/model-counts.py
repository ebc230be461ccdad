#!/usr/bin/env python3
"""The cycle model's counts per run of two run directories side by side.

For every point (workload, parameter, vCPUs) and variant both runs have,
prints the mean per timed run (warm-ups left out) of each model count of
the first run (BEFORE), of the second (AFTER), and the change. Made for a
model change measured on the same suite and kernels: under icount the
guest's work is the same, so the counts move only with the model.

    scripts/model-counts.py BEFORE_RUN_DIR AFTER_RUN_DIR [VARIANT]
"""
import csv
import sys
from collections import defaultdict

# Counts the model writes, in the order of docs/cycle-model.md; the
# workloads' own metrics (time, rate, …) are left out.
MODEL = [
    "instructions", "l1i-misses", "l1d-misses", "l2-misses", "llc-misses",
    "coherence-misses", "rfo-misses", "branch-mispredicts", "string-instructions",
    "string-iterations", "string-bytes", "l2-prefetches", "estimated-cycles",
]


def means(run_dir, variant):
    sums = defaultdict(lambda: [0.0, 0])
    with open(f"{run_dir}/samples.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["warmup"] == "true" or r["metric"] not in MODEL:
                continue
            if variant and r["variant"] != variant:
                continue
            key = (r["workload"], r["param"], r["cpus"], r["variant"], r["metric"])
            sums[key][0] += float(r["value"])
            sums[key][1] += 1
    return {k: s / n for k, (s, n) in sums.items()}


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    variant = sys.argv[3] if len(sys.argv) == 4 else None
    before, after = means(sys.argv[1], variant), means(sys.argv[2], variant)
    points = sorted({k[:4] for k in before} & {k[:4] for k in after})
    if not points:
        sys.exit("the two runs have no point and variant with model counts in common")
    for point in points:
        workload, param, cpus, var = point
        print(f"\n{workload} {param}, {cpus} vCPU, {var}\n")
        print("| count per run | before | after | change |")
        print("|---|---:|---:|---:|")
        for metric in MODEL:
            b, a = before.get(point + (metric,)), after.get(point + (metric,))
            if b is None and a is None:
                continue
            change = f"{(a - b) / b * 100:+.1f}%" if a is not None and b else "–"
            fmt = lambda v: "–" if v is None else f"{v:,.0f}"
            print(f"| {metric} | {fmt(b)} | {fmt(a)} | {change} |")


main()
