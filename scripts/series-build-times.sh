#!/bin/sh
# What a short series costs to build: the kernel source markbench unpacked
# into its cache, made a git repository (committed once, kept in the cache
# as series-repo/), and two commits on top, each touching one .c file:
#   1. a comment above schedule() in kernel/sched/core.c (changes no code),
#   2. a busy loop in unix_stream_sendmsg (net/unix/af_unix.c), a path
#      hackbench drives: a cost a benchmark must see.
# Each commit is built as the markers-off kernel with
# `markbench images --revs A,B` (A is cached by then), and each kernel's
# build time is printed from its kernel.toml. Run from the checkout:
#   MARKBENCH=target/release/markbench scripts/series-build-times.sh
set -eu
MARKBENCH=${MARKBENCH:-markbench}
CACHE=${MARKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/markbench}
REPO=${SERIES_REPO:-$CACHE/series-repo/linux}
GIT="git -C $REPO -c user.name=markbench -c user.email=markbench@localhost"

if [ ! -f "$REPO/.markbench-series" ]; then
    SRC=$(ls -d "$CACHE"/src/*/linux-source-6.1 | head -n 1)
    rm -rf "$REPO"
    mkdir -p "$REPO"
    (cd "$SRC" && tar --exclude='./.markbench-*' -cf - .) | tar -C "$REPO" -xf -
    $GIT init -q -b series
    # Debian's .gitignore ignores everything at the top level: add by force.
    $GIT add -f -A
    $GIT commit -q -m "linux-source-6.1 as Debian ships it"
    sed -i 's|^asmlinkage __visible void __sched schedule(void)$|/* The scheduler'"'"'s main entry point (a comment only). */\n&|' \
        "$REPO/kernel/sched/core.c"
    $GIT commit -q -am "sched: comment schedule()"
    awk '
        /^static int unix_stream_sendmsg\(struct socket \*sock/ { inside = 1 }
        { print }
        inside && /wait_for_unix_gc\(scm.fp\);/ {
            print ""
            print "\t{"
            print "\t\tvolatile unsigned int spin;"
            print ""
            print "\t\tfor (spin = 0; spin < 200; spin++)"
            print "\t\t\t;"
            print "\t}"
            inside = 0
        }' "$REPO/net/unix/af_unix.c" > "$REPO/af_unix.c.new"
    mv "$REPO/af_unix.c.new" "$REPO/net/unix/af_unix.c"
    $GIT commit -q -am "af_unix: spin in unix_stream_sendmsg"
    : > "$REPO/.markbench-series"
fi

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
done
