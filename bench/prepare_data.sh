#!/usr/bin/env bash
# GSM8K preparation cost: a full build (--force: RL and SFT parquet, both
# splits, from the local jsonl) and the skip path of 30_prepare_data_and_model.sh,
# median over several runs; next to it, the same build the way verl's example
# preprocessing does it (the `datasets` library: load json, map, to_parquet),
# when `datasets` is installed in .mvp/bench-venv (bench/prepare_data.sh --install).
# Targets: skip path under 0.3 s; a full build faster than the datasets way.
#
# Usage: bench/prepare_data.sh [--install] [ROUNDS]   (default 5)
set -Eeuo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_venv=$BENCH_REPO/.mvp/bench-venv
if [[ ${1:-} == --install ]]; then
  python3 -m venv "$bench_venv" && "$bench_venv/bin/pip" install --quiet datasets
  shift
fi
rounds=${1:-5}
# bench::time keeps each command's stderr in $BENCH_WORK.
work=$(mktemp -d) BENCH_WORK=$work
trap 'rm -rf "$work"' EXIT
bench::isolate "$work"
export MVP_SKIP_MODEL=1
src=$MVP_GSM8K_SOURCE
rows=$(( $(cat "$src/train.jsonl" "$src/test.jsonl" | wc -l) * 2 ))

build=() skip=() hf=()
"$BENCH_REPO/scripts/30_prepare_data_and_model.sh" >/dev/null 2>&1
for ((r = 1; r <= rounds; r++)); do
  bench::time build "$BENCH_REPO/scripts/30_prepare_data_and_model.sh" --force
  bench::time skip "$BENCH_REPO/scripts/30_prepare_data_and_model.sh"
  if [[ -x $bench_venv/bin/python ]]; then
    bench::time hf "$bench_venv/bin/python" "$BENCH_REPO/bench/gsm8k_with_datasets.py" "$src" "$work/hf-out"
  fi
done
b=$(bench::median "${build[@]}") s=$(bench::median "${skip[@]}")
line="prepare, median of $rounds: full build ${b} ms ($(awk -v r="$rows" -v t="$b" 'BEGIN {printf "%.0f", r / t * 1000}') rows/s, $rows rows); skip path ${s} ms"
if ((${#hf[@]})); then
  h=$(bench::median "${hf[@]}")
  line+="; datasets library ${h} ms (runbook = $(bench::pair_ratio build hf)x of it)"
  bench::row "30 full GSM8K build vs the datasets library" 1.0 "$(bench::pair_ratio build hf)" "verl's example preprocessing way, $rounds alternating rounds"
else
  line+="; datasets library not measured (run with --install)"
fi
echo "$line"
