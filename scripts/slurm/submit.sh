#!/usr/bin/env bash
# Submits a suite as a Slurm array job of N shards and, depending on it, the
# merge job; prints both job ids. Options after RESULTS go to run-shard.
#
#   scripts/slurm/submit.sh N RESULTS [--suite FILE] [--boots 2 …]
#
# Extra sbatch options (e.g. --exclusive, --partition=…) come from
# $MARKBENCH_SBATCH_OPTS. The merged report ends up in RESULTS/merged/report.md,
# each job's output in RESULTS/slurm-*.out.
#
# The binary is $MARKBENCH, else markbench on PATH, taken by its absolute
# path here so every job runs this one whatever its node's PATH. The jobs
# start in this directory (--chdir): a relative --suite, and the fragments
# beside the suite or in ./vm-images, mean what they mean here (the
# directory must be on a file system the nodes share).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 N RESULTS [run-shard options]" >&2
  exit 2
fi
shards=$1 results=$2
shift 2
here=$(dirname "$(readlink -f "$0")")
if ! binary=$(command -v "${MARKBENCH:-markbench}"); then
  echo "$0: no markbench binary ${MARKBENCH:+at $MARKBENCH }(set MARKBENCH, or install it on PATH:" \
    "cargo install --path . --bin markbench)" >&2
  exit 2
fi
export MARKBENCH
MARKBENCH=$(readlink -f "$binary")
mkdir -p "$results"
results=$(readlink -f "$results")
read -r -a extra <<<"${MARKBENCH_SBATCH_OPTS:-}"
array=$(sbatch --parsable --chdir="$PWD" "${extra[@]}" --array="0-$((shards - 1))" \
  --output="$results/slurm-%A_%a.out" \
  "$here/shard.sbatch" "$shards" "$results" "$@")
array=${array%%;*}
# afterok: the merge runs only when every shard succeeded; if one fails, the
# merge job is cancelled instead of waiting forever.
merge=$(sbatch --parsable --chdir="$PWD" "${extra[@]}" --dependency="afterok:$array" --kill-on-invalid-dep=yes \
  --output="$results/slurm-%j-merge.out" \
  "$here/merge.sbatch" "$shards" "$results")
merge=${merge%%;*}
echo "array job $array (shards 0-$((shards - 1))), merge job $merge"
