#!/usr/bin/env bash
# Bring-up cost: the runbook's 20+21 on fresh namespaces and its idempotent
# re-run of 00->21, against the plain `ray start` sequence (head + workers)
# with the same arguments, measured alternately in one session.
#
# Usage: bench/bringup.sh [ROUNDS]   (default 3). Starts and stops its own cluster.
set -Eeuo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds=${1:-3}
bench::cluster_env

plain_start() {
  local i
  for ((i = 0; i < ${#MVP_NODES[@]}; i++)); do
    mvp::ray_start_args "$i"
    mvp::rt::exec "${MVP_NODES[$i]}" "${MVP_RAY_ARGS[@]}"
  done
}

stop_ray() {
  local i
  for ((i = ${#MVP_NODES[@]} - 1; i >= 0; i--)); do mvp::rt::exec "${MVP_NODES[$i]}" ray stop --force; done
}

runbook_start() { "$BENCH_REPO/scripts/20_start_head.sh" && "$BENCH_REPO/scripts/21_start_workers.sh"; }
rerun() { local s; for s in "${MVP_BRINGUP_STEPS[@]}"; do "$BENCH_REPO/scripts/$s.sh"; done; }

plain=() runbook=() again=() namespaces=()
"$BENCH_REPO/scripts/12_install_py_deps.sh" >/dev/null 2>&1
for ((r = 1; r <= rounds; r++)); do
  bench::time namespaces "$BENCH_REPO/scripts/01_up.sh"
  bench::time plain plain_start
  stop_ray >/dev/null 2>&1
  bench::time runbook runbook_start
  bench::time again rerun
  "$BENCH_REPO/scripts/02_down.sh" >/dev/null 2>&1
  echo "round $r: namespaces ${namespaces[-1]} ms, plain ray start ${plain[-1]} ms, 20+21 ${runbook[-1]} ms, re-run 00->21 ${again[-1]} ms" >&2
done
p=$(bench::median "${plain[@]}") b=$(bench::median "${runbook[@]}") a=$(bench::median "${again[@]}") n=$(bench::median "${namespaces[@]}")
echo "bring-up, median of $rounds: plain ray start x3 ${p} ms; 20+21 ${b} ms ($(bench::ratio "$b" "$p")x plain);" \
  "re-run of 00->21 ${a} ms ($(bench::ratio "$a" "$p")x plain); 01_up (namespaces) ${n} ms"
