# Sourced by the scripts that boot a guest by hand, without markbench.
#
# guest_initrd SUITE KERNEL_NAME WORK RUNS LOOPS PACKETS: sets $kernel to
# the cached bzImage of KERNEL_NAME in SUITE (built on first use) and
# writes WORK/initrd: markbench's base initramfs and a job file
# (src/base/protocol.rs) that brings loopback up, then runs `hackbench -g 2
# -l LOOPS` and a PACKETS-packet ping flood RUNS times each.
guest_initrd() {
  local suite=$1 name=$2 work=$3 runs=$4 loops=$5 packets=$6 images base t=$'\t'
  images=$(cargo run --quiet --release -- images --suite "$suite")
  kernel=$(awk -v k="$name" '$1 == "kernel" && $2 == k { print $3 }' <<<"$images")
  base=$(awk '$1 == "initramfs" { print $2 }' <<<"$images")
  [ -n "$kernel" ] || { echo "no kernel $name in $suite" >&2; exit 2; }
  mkdir -p "$work/root"
  cat >"$work/root/job" <<JOB
markbench-job 1
setup${t}/bin/busybox${t}ip${t}link${t}set${t}lo${t}up
run${t}hackbench${t}${runs}${t}/usr/bin/hackbench${t}-g${t}2${t}-l${t}${loops}${t}-f${t}20${t}-s${t}100
run${t}ping${t}${runs}${t}/usr/bin/ping${t}-f${t}-q${t}-n${t}-c${t}${packets}${t}-s${t}56${t}127.0.0.1
JOB
  # A fixed time: cpio records it, and a different initrd is a different boot.
  touch -d @1577836800 "$work/root/job" "$work/root"
  (cd "$work/root" && printf '.\n./job\n' | cpio --quiet -o -H newc -R 0:0 --reproducible >"$work/job.cpio")
  cat "$base" "$work/job.cpio" >"$work/initrd"
}
