#!/bin/sh
# A short series to measure, made once and kept in the cache: the kernel
# source markbench unpacked into its cache (the tarball of Debian's
# linux-source-6.1), committed as a git repository (series-repo/linux), and
# two commits on top, each touching one .c file:
#   1. a comment above schedule() in kernel/sched/core.c (changes no code;
#      the lines after it move, so WARN/BUG line numbers differ),
#   2. a busy loop in unix_stream_sendmsg (net/unix/af_unix.c), a path
#      hackbench drives: a cost a benchmark must see.
# A branch `bisect` goes on from there with six commits a bisection has to
# walk: a comment at the end of kernel/fork.c, a typo that breaks the build
# of kernel/sched/core.c and the commit that mends it, a line in the admin
# guide, another comment in kernel/fork.c and a line in the README. From
# the base, its first bad commit for hackbench is the busy loop (2 of 8).
# The repository stays on the series' branch.
# Prints the repository's path. Needs the unpacked source: any markbench
# command that built a kernel from the default source made it.
set -eu
CACHE=${MARKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/markbench}
REPO=${SERIES_REPO:-$CACHE/series-repo/linux}
GIT="git -C $REPO -c user.name=markbench -c user.email=markbench@localhost -c commit.gpgsign=false"

if [ ! -f "$REPO/.markbench-series" ]; then
    SRC=$(ls -d "$CACHE"/src/*/linux-source-6.1 2>/dev/null | head -n 1)
    if [ -z "$SRC" ]; then
        echo "series-repo.sh: no unpacked kernel source in $CACHE/src; run \`markbench images\` first" >&2
        exit 1
    fi
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

if [ ! -f "$REPO/.markbench-bisect" ]; then
    $GIT branch -f bisect series
    $GIT checkout -q bisect
    printf '\n/* The end of fork.c (a comment only). */\n' >> "$REPO/kernel/fork.c"
    $GIT commit -q -am "fork: a comment at the end"
    printf '\nint markbench_typo = ;\n' >> "$REPO/kernel/sched/core.c"
    $GIT commit -q -am "sched: a typo that breaks the build"
    sed -i '$d' "$REPO/kernel/sched/core.c"
    sed -i '$d' "$REPO/kernel/sched/core.c"
    $GIT commit -q -am "sched: mend the build"
    printf '\nA line added to the admin guide.\n' >> "$REPO/Documentation/admin-guide/README.rst"
    $GIT commit -q -am "docs: a line in the admin guide"
    printf '\n/* Another comment at the end of fork.c. */\n' >> "$REPO/kernel/fork.c"
    $GIT commit -q -am "fork: another comment"
    printf '\nA line added to the README.\n' >> "$REPO/README"
    $GIT commit -q -am "README: a line"
    $GIT checkout -q series
    : > "$REPO/.markbench-bisect"
fi

echo "$REPO"
