# Sourced by the scripts that boot the quick suite's SMP hackbench point
# alone (2 groups, 5 loops, 12 runs, one boot of each kernel).
#
# smp_point_suite FILE NAME CPUS: writes the suite NAME at the CPU counts
# CPUS (comma-separated) to FILE.
smp_point_suite() {
    cat >"$1" <<TOML
name = "$2"
description = "the quick suite's SMP hackbench point alone, one boot a side"
boots = 1
iterations = 12
warmup = 1
cpus = [$3]
memory_mib = 512
boot_timeout_s = 1800
seed = 48
[[variant]]
name = "markers-off"
kernel = "markers-off"
[[variant]]
name = "markers-on"
kernel = "markers-on"
[[workload]]
kind = "hackbench"
params = [2]
loops = 5
TOML
}
