#!/bin/sh
# What a short series costs to build: scripts/series-repo.sh's repository
# (the kernel source committed once, then a comment commit and a busy-loop
# commit, each touching one .c file), each commit built as the markers-off
# kernel with `markbench images --revs A,B` (A is cached by then), and each
# kernel's build time and rebuilt file count printed from its kernel.toml.
# With a fresh MARKBENCH_CACHE (ccache shared through MARKBENCH_CCACHE_DIR)
# the first is a build from ccache into an empty workspace and the next two
# rebuild in it. Run from the checkout:
#   MARKBENCH=target/release/markbench scripts/series-build-times.sh
set -eu
MARKBENCH=${MARKBENCH:-markbench}
CACHE=${MARKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/markbench}
REPO=$(sh "$(dirname "$0")/series-repo.sh")
GIT="git -C $REPO"

SUITE_DIR=$(mktemp -d)
trap 'rm -rf "$SUITE_DIR"' EXIT
SUITE=$SUITE_DIR/series.toml
# Both variants on the markers-off fragment: --revs builds each commit once.
sed 's/kernel = "markers-on"/kernel = "markers-off"/' suites/quick.toml > "$SUITE"
cp vm-images/base.config vm-images/markers-off.config "$SUITE_DIR/"

for revs in HEAD~2,HEAD~1 HEAD~1,HEAD; do
    "$MARKBENCH" images --suite "$SUITE" --kernel-source "$REPO" --revs "$revs"
done
for rev in HEAD~2 HEAD~1 HEAD; do
    commit=$($GIT rev-parse "$rev")
    record=$(grep -l "commit = \"$commit\"" "$CACHE"/kernels/*/kernel.toml | head -n 1)
    printf '%s %s: %s s\n' "$(echo "$commit" | cut -c1-12)" \
        "$($GIT log -1 --format=%s "$commit")" \
        "$(sed -n 's/^build_seconds = //p' "$record")"
    printf '  source files rebuilt: %s\n' "$(sed -n 's/^source_files_rebuilt = //p' "$record")"
done
