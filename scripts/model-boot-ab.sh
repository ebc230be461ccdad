#!/usr/bin/env bash
# Boots one quick-suite-shaped guest (hackbench -g 2 -l 5 and a ping flood,
# the quick suite's baseline kernel, icount with a fixed seed) under the
# cycle model once per plugin variant given, and prints for each the host
# CPU time of the boot (which other work on the host inflates: time
# variants against each other on a quiet host, e.g. with farm-bench) and whether its model counts are byte for byte those
# of the first variant. Under icount the guest repeats exactly, so any
# difference in the counts comes from the plugin.
#
#   scripts/model-boot-ab.sh VARIANT…
#
# A VARIANT is a comma-separated list of extra plugin arguments, optionally
# after a plugin library and a colon:
#
#   scripts/model-boot-ab.sh linear=off ''                  # one plugin, two settings
#   scripts/model-boot-ab.sh /tmp/old.so: ''                # an older build against this one
#   scripts/model-boot-ab.sh 'rsb-depth=0,skip-entries=0' ''
#
# Environment: CPUS (vCPUs, default 1), RUNS (runs of each workload, default
# 3), KERNEL (markers-off or markers-on), KEEP (a directory to keep the
# model files in), QEMU (the binary, e.g. a wrapper that profiles it). The plugin is built from plugin/ (release) unless a
# variant names one; the kernel and initramfs come from markbench's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
cpus=${CPUS:-1}
runs=${RUNS:-3}
kernel_name=${KERNEL:-markers-off}

(cd plugin && cargo build --quiet --release)
own=$PWD/plugin/target/release/libmarkbench_profile_plugin.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. scripts/guest-job.sh
guest_initrd suites/quick.toml "$kernel_name" "$work" "$runs" 5 2000

# A two-vCPU guest runs on markbench's own QEMU where it is cached.
qemu=${QEMU:-qemu-system-x86_64}
if [ "$cpus" -gt 1 ]; then
  own_qemu=$(ls -d "${MARKBENCH_CACHE:-$HOME/.cache/markbench}"/qemu-builds/*/qemu-system-x86_64 2>/dev/null | head -1)
  [ -n "$own_qemu" ] && qemu=$own_qemu
fi

n=0
for variant in "$@"; do
  n=$((n + 1))
  plugin=$own
  extra=$variant
  if [[ $variant == *:* ]]; then
    plugin=${variant%%:*}
    extra=${variant#*:}
  fi
  args="out=$work/model-$n.tsv,model=cycles,profile=off${extra:+,$extra}"
  /usr/bin/time -f '%U %S %e' -o "$work/time-$n" \
    "$qemu" -nodefaults -no-user-config -display none -no-reboot -accel tcg \
    -cpu max -smp "$cpus" -m 512 -kernel "$kernel" -initrd "$work/initrd" \
    -append "console=ttyS0 panic=-1 oops=panic rdinit=/init" \
    -serial "file:$work/console-$n.log" -chardev stdio,id=results,signal=off \
    -serial chardev:results -monitor none -icount shift=4,sleep=off \
    -rtc base=2020-01-01T00:00:00,clock=vm -seed 0 \
    -plugin "file=$plugin,$args" </dev/null >"$work/out-$n" 2>"$work/err-$n" || true
  grep -q $'\tdone$' "$work/out-$n" || { echo "variant $n ($variant): the guest did not finish; see:" >&2; tail -5 "$work/console-$n.log" "$work/err-$n" >&2; exit 1; }
  # The model's counts, without the comment naming the plugin's settings.
  grep -v '^# model cycles' "$work/model-$n.tsv" >"$work/counts-$n"
  read -r user sys wall <"$work/time-$n"
  same=$(cmp -s "$work/counts-1" "$work/counts-$n" && echo "same counts as variant 1" || echo "COUNTS DIFFER from variant 1")
  printf '%-40s host CPU %7.1f s (wall %6.1f s)  %s\n' \
    "${variant:-(defaults)}" "$(echo "$user + $sys" | bc)" "$wall" "$same"
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP" && cp "$work/model-$n.tsv" "$KEEP/model-$n.tsv"
  fi
done
