#!/usr/bin/env python3
"""How many runs a boot a run to a stated precision should make.

Reads a run directory (samples.csv, meta.toml) and, for every point of its
1-vCPU (or --cpus N) boots, splits the variance of the boot means into a
part between boots and a part within a boot, and times each workload's run
from the samples' arrival times. Then, for a grid of runs a boot, it
predicts each point's 95% half-width at the stopping rule's minimum of
boots a side and the wall time of those boots, so the sizing that reaches
the target soonest can be read off.

    scripts/sizing.py RUN_DIR [--cpus 1] [--target 0.5] [--boots 5]

The model: a boot mean's relative variance is b^2 + w^2/r (b the boot
effect, w the spread of one run within a boot, r the runs a boot); the
half-width is t(0.975, 2n-2) * sqrt(2 (b^2 + w^2/r) / n). A boot costs its
fixed part (QEMU's start to the agent's hello, the warm-ups, the gaps) plus
r times each workload's seconds a run.
"""
import argparse
import csv
import math
import statistics
import sys
import tomllib
from collections import defaultdict
from datetime import datetime

T975 = {4: 2.776, 6: 2.447, 8: 2.306, 10: 2.228, 12: 2.179, 14: 2.145, 16: 2.120, 18: 2.101}


def seconds(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--cpus", type=int, default=1)
    ap.add_argument("--target", type=float, default=0.5)
    ap.add_argument("--boots", type=int, default=5)
    a = ap.parse_args()
    with open(f"{a.run}/meta.toml", "rb") as f:
        meta = tomllib.load(f)
    boots = [b for b in meta["boots"] if b["cpus"] == a.cpus and b.get("ok", True)]
    by_point = defaultdict(lambda: defaultdict(list))  # point -> (variant, boot) -> values
    stamps = defaultdict(lambda: defaultdict(list))  # workload -> (variant, boot) -> times
    with open(f"{a.run}/samples.csv") as f:
        for s in csv.DictReader(f):
            if int(s["cpus"]) != a.cpus:
                continue
            key = (s["variant"], int(s["boot"]))
            stamps[s["workload"]][key].append(seconds(s["started_at"]))
            if s["warmup"] == "true":
                continue
            point = f'{s["workload"]}/{s["metric"]}={s["param"]}'
            by_point[point][key].append(float(s["value"]))
    runs = {}
    components = {}
    for point, cells in sorted(by_point.items()):
        means, within = [], []
        r = statistics.median(len(v) for v in cells.values())
        per_variant = defaultdict(list)
        for (variant, _), values in cells.items():
            per_variant[variant].append(values)
        bs, ws = [], []
        for variant, boots_values in per_variant.items():
            grand = statistics.mean(v for vs in boots_values for v in vs)
            m = [statistics.mean(vs) / grand for vs in boots_values]
            w2 = statistics.mean(statistics.variance([v / grand for v in vs]) for vs in boots_values)
            b2 = max(0.0, statistics.variance(m) - w2 / r) if len(m) > 1 else float("nan")
            bs.append(b2)
            ws.append(w2)
        components[point] = (statistics.mean(bs), statistics.mean(ws), r)
        print(
            f"{point}: {len(cells)} boots, {r:.0f} runs a boot; between boots {100*math.sqrt(components[point][0]):.3f}%, "
            f"one run within a boot {100*math.sqrt(components[point][1]):.3f}%"
        )
    # Seconds a run of each workload: the span of a boot's samples over
    # their count (the first sample marks the end of the first run).
    for workload, cells in stamps.items():
        rates = [(max(t) - min(t)) / (len(t) - 1) for t in cells.values() if len(t) > 2]
        runs[workload] = statistics.median(rates)
    walls = [b["wall_s"] for b in boots]
    print("seconds a run: " + ", ".join(f"{w} {s:.2f}" for w, s in runs.items()))
    n_runs = {w: statistics.median(len(t) for t in cells.values()) for w, cells in stamps.items()}
    fixed = statistics.median(walls) - sum(runs[w] * n_runs[w] for w in runs)
    print(f"boot wall {min(walls):.1f}-{max(walls):.1f} s (median {statistics.median(walls):.1f}), of which fixed about {fixed:.1f} s")
    t = T975.get(2 * a.boots - 2, 2.0)
    workloads = sorted(runs)
    print(f"\nat {a.boots} boots a side, target ±{a.target}%:")
    print("runs a boot (" + ", ".join(workloads) + ") | boot [s] | " + " | ".join(by_point) + " | 2n boots [s]")
    grid = [4, 6, 8, 10, 12, 15, 20, 25, 30]
    for counts in ((x, y) for x in grid for y in grid) if len(workloads) == 2 else ((x,) for x in grid):
        r_of = dict(zip(workloads, counts))
        boot = fixed + sum(runs[w] * (r_of[w] + 1) for w in workloads)
        widths = []
        for point, (b2, w2, _) in components.items():
            r = r_of[point.split("/")[0]]
            widths.append(100 * t * math.sqrt(2 * (b2 + w2 / r) / a.boots))
        mark = "  <- all within" if all(h <= a.target for h in widths) else ""
        print(
            " ".join(str(c) for c in counts)
            + f" | {boot:.1f} | "
            + " | ".join(f"±{h:.2f}%" for h in widths)
            + f" | {2 * a.boots * boot:.0f}{mark}"
        )


if __name__ == "__main__":
    sys.exit(main())
