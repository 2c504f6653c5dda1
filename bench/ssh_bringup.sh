#!/usr/bin/env bash
# Worker bring-up on the ssh runtime, 2 and 3 workers: the runbook's
# 21_start_workers.sh (parallel `ray start` over ssh, then the wait for
# registration) against the plain `ray start` over ssh with the same
# arguments, one worker after another and all at once, each until the head
# lists every worker alive. Rounds alternate the order; medians reported.
# The nodes are the ssh test tier's (namespaces with a real sshd each).
#
# Usage: bench/ssh_bringup.sh [ROUNDS]   (default 3). Root only; starts and
# stops its own nodes (addresses 127.0.(10+MVP_TEST_SLOT).40-43).
set -Eeuo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds=${1:-3}
MVP_REPO=$BENCH_REPO
# shellcheck source=tests/test_helper/ssh_nodes.bash
source "$BENCH_REPO/tests/test_helper/ssh_nodes.bash"
BENCH_WORK=$(mktemp -d)
ssh_nodes_isolate "$BENCH_WORK"
ssh_inventory 3
trap 'ssh_nodes_stop_all; rm -rf "$BENCH_WORK"' EXIT
trap 'exit 1' TERM INT
for i in 0 1 2 3; do ssh_node_start "$i"; done
# shellcheck source=scripts/lib/common.sh
source "$BENCH_REPO/scripts/lib/common.sh"
MVP_QUIET_CONFIG=1 mvp::config::init
"$BENCH_REPO/scripts/20_start_head.sh" >/dev/null 2>&1
all_workers=$MVP_SSH_WORKERS

# alive_workers: how many workers the head lists alive.
alive_workers() {
  ssh_nodes_json | jq '[.[] | select(.is_head_node | not)] | length'
}

wait_workers() {
  local n=$1 deadline=$((SECONDS + 300))
  until [[ $(alive_workers) == "$n" ]]; do
    ((SECONDS < deadline)) || { echo "bench: $n workers not alive after 300 s" >&2; return 1; }
    sleep 0.1
  done
}

# The runbook's own `ray start` words for worker i, through its own ssh.
plain_one() {
  local i=$1 auth=()
  mapfile -d '' auth < <(mvp::ray::auth_env)
  mvp::ray::start_args "$i"
  mvp::rt::exec "${MVP_NODES[$i]}" env "${auth[@]}" "${MVP_RAY_ARGS[@]}"
}

plain_sequential() {
  local n=$1 i
  for ((i = 1; i <= n; i++)); do plain_one "$i" || return 1; done
  wait_workers "$n"
}

plain_parallel() {
  local n=$1 i pids=()
  for ((i = 1; i <= n; i++)); do plain_one "$i" & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || return 1; done
  wait_workers "$n"
}

# 21's log of the last run is kept in BENCH_LOG: bench::time discards output.
BENCH_LOG=${TMPDIR:-/tmp}/ssh_bringup.21.log
runbook() {
  local n=$1
  MVP_WORKER_IPS="" MVP_SSH_WORKERS=$(cut -d' ' -f1-"$n" <<<"$all_workers") "$BENCH_REPO/scripts/21_start_workers.sh" 2>"$BENCH_LOG"
}

stop_workers() {
  local i pids=()
  for ((i = 1; i <= 3; i++)); do mvp::rt::exec "${MVP_NODES[$i]}" ray stop --force >/dev/null 2>&1 & pids+=($!); done
  wait "${pids[@]}" || true
  wait_workers 0
}

for n in 2 3; do
  declare -a "seq_$n=()" "par_$n=()" "rb_$n=()"
  for ((r = 1; r <= rounds; r++)); do
    order=(seq par rb)
    ((r % 2)) || order=(rb par seq)
    for mode in "${order[@]}"; do
      case $mode in
        seq) bench::time "seq_$n" plain_sequential "$n" ;;
        par) bench::time "par_$n" plain_parallel "$n" ;;
        rb) bench::time "rb_$n" runbook "$n" ;;
      esac
      stop_workers || exit 1
    done
    declare -n s=seq_$n p=par_$n b=rb_$n
    echo "workers $n round $r: plain sequential ${s[-1]} ms, plain parallel ${p[-1]} ms, 21_start_workers ${b[-1]} ms" >&2
    unset -n s p b
  done
done
"$BENCH_REPO/scripts/02_down.sh" >/dev/null 2>&1 || true
for n in 2 3; do
  declare -n s=seq_$n p=par_$n b=rb_$n
  ms=$(bench::median "${s[@]}") mp=$(bench::median "${p[@]}") mb=$(bench::median "${b[@]}")
  echo "ssh bring-up of $n workers, median of $rounds (until all registered): plain ray start sequential ${ms} ms," \
    "parallel ${mp} ms (sequential/parallel $(bench::ratio "$ms" "$mp")x); 21_start_workers ${mb} ms ($(bench::ratio "$mb" "$mp")x plain parallel)"
  unset -n s p b
done
