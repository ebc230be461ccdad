#!/usr/bin/env python3
"""What each kernel build costs before `make` starts, and in all.

Runs a markbench command (anything that builds kernels: bisect, compare,
images), stamps every line it prints with the seconds since the start,
and then prints one line per kernel built: the time from the step's first
line about its tree ("the files of … at …", "…: N path(s) differ …", "…:
comparing the whole tree") to "building kernel", and the build's own time.

    scripts/step-overhead.py -- target/release/markbench bisect \\
        --kernel-source ~/.cache/markbench/series-repo/linux \\
        --good series~2 --bad bisect --suite tests/fixtures/series.toml \\
        --boots 2 --iterations 6

The stamped output is kept in step-overhead.log (or --log FILE).
"""
import argparse
import re
import subprocess
import sys
import time

TREE = re.compile(r"the files of |path\(s\) differ between|comparing the whole tree|"
                  r"holds no record of its tree")
BUILDING = re.compile(r"building kernel (\S+) from (.*?); log:")
BUILT = re.compile(r"built kernel \S+ in (\d+) s \((\d+) objects compiled\)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log", default="step-overhead.log")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the markbench command after --")
    start = time.time()
    steps, tree_at, current = [], None, None
    with open(args.log, "w") as log, subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as child:
        for line in child.stdout:
            now = time.time() - start
            log.write(f"{now:8.1f} {line}")
            log.flush()
            if TREE.search(line) and tree_at is None:
                tree_at = now
            m = BUILDING.search(line)
            if m:
                current = {"what": m.group(2), "overhead": now - (tree_at if tree_at is not None else now)}
                steps.append(current)
                tree_at = None
            m = BUILT.search(line)
            if m and current:
                current["build"] = int(m.group(1))
                current["objects"] = int(m.group(2))
                current = None
    total = time.time() - start
    for s in steps:
        print(f"{s['overhead']:6.1f} s before make, built in {s.get('build', '–')} s "
              f"({s.get('objects', '–')} objects): {s['what']}")
    print(f"{total:.0f} s in all, exit {child.returncode}")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
