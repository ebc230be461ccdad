# Sourced by the scripts that time runs of the quick suite on cached kernels.
#
# cached_compare DIR COMMAND…: runs COMMAND… --reports DIR, its output in
# DIR.log, and exits 1 if it fails or starts building a kernel (the
# figures are of boots, not builds).
cached_compare() {
    dir=$1; shift
    mkdir -p "$dir"
    "$@" --reports "$dir" >"$dir.log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if grep -q "building kernel\|building the kernel" "$dir.log" 2>/dev/null; then
            kill "$pid"
            echo "markbench started building a kernel; stopped (see $dir.log)" >&2
            exit 1
        fi
        sleep 2
    done
    wait "$pid" || { echo "markbench failed (see $dir.log)" >&2; exit 1; }
}

# The run directory compare made in the --reports directory DIR.
rundir() { find "$1" -mindepth 1 -maxdepth 1 -type d ! -name latest; }
