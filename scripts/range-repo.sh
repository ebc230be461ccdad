#!/bin/sh
# A range of twelve commits to bisect, made once: a clone of
# scripts/series-repo.sh's repository (objects shared) with a branch
# `range` from its base, each commit a kind of change a bisection steps
# over: a comment in one file, a comment at the end of every kernel/*.c
# (99 files), a line of documentation, the busy loop in
# unix_stream_sendmsg (the first bad commit, 6th of 12), a rename, a mode
# change. Prints the repository's path.
#   scripts/step-overhead.py -- target/release/markbench bisect \
#       --kernel-source "$(scripts/range-repo.sh)" --good range~12 --bad range \
#       --suite tests/fixtures/series.toml --boots 2 --iterations 6
set -eu
CACHE=${MARKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/markbench}
SERIES=$(sh "$(dirname "$0")/series-repo.sh")
REPO=${RANGE_REPO:-$CACHE/range-repo/linux}
if [ ! -f "$REPO/.git/markbench-range" ]; then
    rm -rf "$REPO"
    mkdir -p "$(dirname "$REPO")"
    git clone -q -s -b series "$SERIES" "$REPO"
    cd "$REPO"
    G="git -c user.name=markbench -c user.email=markbench@localhost -c commit.gpgsign=false"
    c() { $G commit -q -a -m "$1"; }
    git checkout -q -b range "$(git rev-list --max-parents=0 HEAD)"
    printf '\n/* a comment */\n' >> mm/memory.c && c "mm: a comment"
    for f in kernel/*.c; do printf '\n/* A comment at the end of this file. */\n' >> "$f"; done
    c "kernel: a comment at the end of every file"
    printf '\nA line.\n' >> Documentation/admin-guide/README.rst && c "docs: a line"
    printf '\n/* a comment */\n' >> fs/namei.c && c "namei: a comment"
    printf '\n/* a comment */\n' >> net/core/sock.c && c "sock: a comment"
    git diff series~1 series -- net/unix/af_unix.c | $G apply
    c "af_unix: spin in unix_stream_sendmsg"
    printf '\n/* a comment */\n' >> kernel/fork.c && c "fork: a comment"
    $G mv Documentation/admin-guide/README.rst Documentation/admin-guide/README-renamed.rst
    c "docs: rename a file"
    printf '\n/* a comment */\n' >> lib/string.c && c "string: a comment"
    printf '\n/* a comment */\n' >> kernel/exit.c && c "exit: a comment"
    printf '\nA line.\n' >> README && c "README: a line"
    chmod +x scripts/Kbuild.include
    $G update-index --chmod=+x scripts/Kbuild.include
    $G commit -q -m "scripts: a mode change"
    : > .git/markbench-range
fi
echo "$REPO"
