#!/usr/bin/env bash
# Boots the noise-icount suite's baseline kernel TIMES times with the same
# QEMU timing options and prints, per boot, the guest-timed nanoseconds of
# RUNS runs of `hackbench -g 2 -l LOOPS` and of a PACKETS-packet ping flood. Equal
# lines mean the options leave nothing of the host in the guest: the boot
# repeats exactly. This is how the settings in docs/measurements.md's "What makes icount
# repeatable" table were told apart.
#
#   scripts/icount-replay.sh [QEMU timing options …]
#   scripts/icount-replay.sh -icount shift=4,sleep=off -rtc base=2020-01-01T00:00:00,clock=vm -seed 1
#
# Environment: TIMES (boots, default 2), RUNS (runs of each workload per
# boot, default 6), LOOPS (hackbench loops, default 20), PACKETS (ping
# packets, default 2000), CMDLINE (extra kernel arguments, e.g. norandmaps),
# KERNEL (markers-off or markers-on, default markers-off).
# Each boot takes about 20 s on an idle 2-core machine; the kernels and the
# initramfs come from markbench's cache (built on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
times=${TIMES:-2}
runs=${RUNS:-6}
kernel_name=${KERNEL:-markers-off}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. scripts/guest-job.sh
guest_initrd suites/noise-icount.toml "$kernel_name" "$work" "$runs" "${LOOPS:-20}" "${PACKETS:-2000}"

for boot in $(seq 1 "$times"); do
  # The same machine markbench boots (src/stages/vm/qemu.rs), without its timing options.
  qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot -accel tcg \
    -cpu max -smp 1 -m 512 -kernel "$kernel" -initrd "$work/initrd" \
    -append "console=ttyS0 panic=-1 oops=panic rdinit=/init ${CMDLINE:-}" \
    -serial "file:$work/console.log" -chardev stdio,id=results,signal=off \
    -serial chardev:results -monitor none "$@" </dev/null >"$work/out" 2>"$work/err" || true
  for id in hackbench ping; do
    printf 'boot %s %-9s ' "$boot" "$id"
    awk -F'\t' -v id="$id" '$2 == "run" && $3 == id { printf " %s", $6 } END { print "" }' "$work/out"
  done
done
