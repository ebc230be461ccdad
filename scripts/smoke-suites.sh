#!/usr/bin/env bash
# Runs every shipped suite (or the suites named) at its smallest scale under
# the default timing, and fails when any run fails: a suite that errors, or
# a boot that fails (compare's exit status 3). Prints each suite's result,
# its boots and its wall time.
#
#   scripts/smoke-suites.sh [--dry-run] [SUITE.toml ...]
#
# Smallest scale: 2 boots a side, 1 measured iteration (after the suite's
# warm-up), every workload's work scaled by 0.05 (hackbench loops, ping
# packets, micro-benchmark loops; periods and seconds never below 1), the
# kernel compile's subset scope (kernel/locking/ through the objects
# driver). ia64-2008 runs its smallest group count (50) at each of its CPU
# counts. Every suite keeps its own CPU counts, kernels and timing.
#
# Reports go to $SMOKE_REPORTS (default: a new temporary directory), one
# directory per suite with its compare log beside it. $MARKBENCH names the
# markbench binary (default: this checkout's, through cargo run --release).
# --dry-run prints each suite's plan with these options instead of running it.
set -uo pipefail

dry_run=()
if [[ ${1:-} == --dry-run ]]; then
  dry_run=(--dry-run)
  shift
fi
suites=()
for suite in "$@"; do
  suites+=("$(realpath -- "$suite")") || exit 2
done
reports=${SMOKE_REPORTS:-$(mktemp -d -t markbench-smoke.XXXXXX)}
mkdir -p "$reports" && reports=$(realpath -- "$reports") || exit 2
cd "$(dirname "$0")/.." || exit 2
if [[ ${#suites[@]} -eq 0 ]]; then
  suites=(suites/*.toml)
fi
if [[ -n ${MARKBENCH:-} ]]; then
  markbench=("$MARKBENCH")
else
  markbench=(cargo run --release --quiet --)
fi

smallest_scale() {
  local args=(--boots 2 --iterations 1 --scale 0.05 --compile-scope subset)
  case "$(basename "$1" .toml)" in
    ia64-2008) args+=(--params 50) ;;
  esac
  printf '%s\n' "${args[@]}"
}

failed=0
summary=()
for suite in "${suites[@]}"; do
  name=$(basename "$suite" .toml)
  mapfile -t args < <(smallest_scale "$suite")
  log="$reports/$name.log"
  echo "== $name: markbench compare --suite $suite ${args[*]} ${dry_run[*]}"
  start=$(date +%s)
  "${markbench[@]}" compare --suite "$suite" --reports "$reports/$name" \
    "${args[@]}" "${dry_run[@]}" >"$log" 2>&1
  status=$?
  seconds=$(($(date +%s) - start))
  boots=$(grep -E '^[0-9]+ boots, [0-9]+ failed' "$log" | tail -n 1 | cut -d, -f1,2)
  if [[ $status -eq 0 ]]; then
    result=PASS
  else
    result="FAIL (exit $status)"
    failed=$((failed + 1))
    tail -n 20 "$log" | sed 's/^/    /'
  fi
  summary+=("| $name | $result | ${boots:-–} | $((seconds / 60)) min $((seconds % 60)) s |")
done

echo
echo "Reports and logs: $reports"
echo
echo "| suite | result | boots | wall time |"
echo "|---|---|---|---:|"
printf '%s\n' "${summary[@]}"
if [[ $failed -gt 0 ]]; then
  echo "$failed of ${#suites[@]} suite(s) failed"
  exit 1
fi
echo "all ${#suites[@]} suite(s) passed"
