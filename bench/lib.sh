# shellcheck shell=bash
# Shared by the benchmarks: an isolated local cluster (its own addresses,
# ports and shared root, like the tests) and small statistics helpers.

BENCH_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bench::isolate() {
  local dir=$1
  export MVP_CONFIG=$BENCH_REPO/tests/fixtures/empty.env MVP_RUNTIME=local
  # MVP_BENCH_SLOT (0-9) moves addresses and ports, as MVP_TEST_SLOT does for tests.
  local slot=${MVP_BENCH_SLOT:-0}
  export MVP_STATE_DIR=$dir/state SHARED_ROOT=$dir/shared MVP_HEAD_IP=127.0.$((20 + slot)).2 MVP_WORKER_IPS=""
  export MVP_GCS_PORT=$((26379 + slot)) MVP_DASHBOARD_PORT=$((28265 + slot)) MVP_CLIENT_PORT=$((29001 + slot))
  export MVP_NODE_PORT_BASE=$((40000 + 2500 * slot))
  export MVP_VERL_SRC=.mvp/cache/verl-0.9.1-standin MVP_MODEL_SOURCE=$BENCH_REPO/tests/fixtures/model_standin
  export MVP_MODEL_ID=mvp-fixtures/model-standin MVP_GSM8K_SOURCE=${MVP_BENCH_GSM8K:-$BENCH_REPO/../shared/data/gsm8k}
  mkdir -p "$SHARED_ROOT"
}

# bench::cluster_env: a temp work dir and isolated settings, the runbook's
# library loaded, and the cluster stopped and the work dir removed on exit.
bench::cluster_env() {
  BENCH_WORK=$(mktemp -d)
  bench::isolate "$BENCH_WORK"
  # shellcheck source=scripts/lib/common.sh
  source "$BENCH_REPO/scripts/lib/common.sh"
  MVP_QUIET_CONFIG=1 mvp::config::init --runtime local
  trap '"$BENCH_REPO/scripts/02_down.sh" >/dev/null 2>&1; rm -rf "$BENCH_WORK"' EXIT
}

# bench::standin_cluster: the isolated cluster up, the data and model
# prepared and a stand-in code snapshot (CODE_ID=bench) taken, quietly.
bench::standin_cluster() {
  local s
  for s in "${MVP_BRINGUP_STEPS[@]}" 30_prepare_data_and_model; do
    "$BENCH_REPO/scripts/$s.sh" >/dev/null 2>&1
  done
  CODE_ID=bench "$BENCH_REPO/scripts/31_snapshot_verl_code.sh" >/dev/null 2>&1
}

# Milliseconds since the epoch.
bench::now() { date +%s%3N; }

# bench::time VAR CMD...: runs CMD (output discarded), appends its wall time in ms to array VAR.
bench::time() {
  local -n acc=$1; shift
  local t0
  t0=$(bench::now)
  "$@" >/dev/null 2>"$BENCH_WORK/last.err" || { echo "bench: command failed: $*" >&2; tail -n 5 "$BENCH_WORK/last.err" >&2; return 1; }
  acc+=($(($(bench::now) - t0)))
}

bench::median() {
  printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

bench::ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# bench::pair_ratio A B: the median of the round-by-round ratios A[i]/B[i] of
# two arrays (by name) timed in alternating rounds. Each pair ran at the same
# moment's machine speed, so a busy machine slows both sides of a pair and the
# ratio holds where a ratio of medians would drift.
bench::pair_ratio() {
  local -n num=$1 den=$2
  local i
  for i in "${!num[@]}"; do awk -v a="${num[i]}" -v b="${den[i]}" 'BEGIN {printf "%.6f\n", a / b}'; done |
    sort -g | awk '{r[NR] = $1} END {printf "%.2f", (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2}'
}

# bench::row WHAT GOAL RATIO DETAIL: one row of `make bench`'s table (bench/table.sh),
# appended as JSON to $MVP_BENCH_TABLE when it is set. GOAL is the largest
# ratio that meets it (e.g. 1.1); RATIO the measured one.
bench::row() {
  [[ -n ${MVP_BENCH_TABLE:-} ]] || return 0
  jq -nc --arg what "$1" --argjson goal "$2" --argjson ratio "$3" --arg detail "$4" \
    '{what: $what, goal: $goal, ratio: $ratio, detail: $detail}' >>"$MVP_BENCH_TABLE"
}
