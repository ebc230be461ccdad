# markbench's everyday commands; each is the same command a user could type.

# Compare the default suite's two kernels (builds, boots, measures, reports).
compare *ARGS:
    cargo run --release -- compare {{ARGS}}

# Print the plan of a suite without running it.
plan SUITE="suites/quick.toml":
    cargo run --release -- compare --dry-run --suite {{SUITE}}

# Install the prerequisites (QEMU, busybox, hackbench, ping, kernel source, build tools).
setup:
    cargo run --release -- setup

# Build the default suite's kernels and initramfs into the cache.
images:
    cargo run --release -- images

# Re-render a run's report from its samples.
report DIR:
    cargo run --release -- report {{DIR}}

test:
    cargo test

lint:
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings

# Run the suite, compare with the newest earlier run, exit 4 on a regression
# beyond the suite's margin (0 none; every code: docs/commands.md#exit-status).
nightly *ARGS:
    cargo run --release -- nightly {{ARGS}}

# Every run in reports/, point by point, with its change points:
# reports/history/history.html and history.md.
history:
    cargo run --release -- history reports --out reports/history

# The noise floor and resolution of icount timing: an A/A and an A/B run of
# the noise-icount suite, then their figures against the 0.5% targets
# (markbench noise-floor AA_DIR AB_DIR; exit 6 when a target is missed).
noise-floor *ARGS:
    #!/usr/bin/env bash
    set -euo pipefail
    cargo run --release -- compare --suite suites/noise-icount.toml --aa {{ARGS}}
    aa=$(readlink -f reports/latest)
    cargo run --release -- compare --suite suites/noise-icount.toml {{ARGS}}
    ab=$(readlink -f reports/latest)
    cargo run --release -- noise-floor "$aa" "$ab"
