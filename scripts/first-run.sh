#!/bin/bash
# The README's first command as a new user runs it: a clean clone of this
# checkout's HEAD, an empty cache, `cargo run --release -- compare`, every
# line of its output stamped with the seconds since the start, and the
# exit status and the whole time at the end. What the machine lacks the
# command installs itself (as root or with password-less sudo); for a
# machine state like a new one, remove markbench's apt source files
# (/etc/apt/sources.list.d/markbench-*) and purge what it installed first.
#
#   scripts/first-run.sh [OUT_DIR]
#
# OUT_DIR (default: a new temporary directory) gets the clone, the cache
# and first-run.log.
set -uo pipefail
out=${1:-$(mktemp -d)}
mkdir -p "$out"
log="$out/first-run.log"
git clone -q "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)" "$out/clone" || exit 1
cd "$out/clone" || exit 1
export MARKBENCH_CACHE="$out/cache"
start=$(date +%s)
echo "start $(date -u +%FT%TZ) at $(git log -1 --format=%h)" | tee "$log"
cargo run --release -- compare 2>&1 | while IFS= read -r line; do
    printf '%5d %s\n' $(($(date +%s) - start)) "$line"
done | tee -a "$log"
status=${PIPESTATUS[0]}
echo "exit $status after $(($(date +%s) - start)) s" | tee -a "$log"
exit "$status"
