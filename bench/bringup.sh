#!/usr/bin/env bash
# Bring-up cost: the runbook's 20+21 on fresh namespaces and its idempotent
# re-run of 00->21, against the same `ray start` commands typed by hand (the
# head, then the workers in parallel, as a person with a terminal per host
# would), measured alternately in one session. Goal: 20+21 <= 1.1x by hand:
# the runbook's checks and waits cost at most 10 %.
#
# Usage: bench/bringup.sh [ROUNDS]   (default 5). Starts and stops its own cluster.
set -Eeuo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds=${1:-5}
bench::cluster_env

# By hand means the same words with the same auth setting: with RAY_AUTH_MODE
# unset, Ray 2.60 turns token auth on in a node that finds ~/.ray/auth_token
# (any local ray.init makes one) and its peers are refused.
plain_start() {
  local i rc=0
  local -a pids=() auth=()
  mapfile -d '' auth < <(mvp::ray::auth_env)
  mvp::ray::start_args 0
  mvp::rt::exec "${MVP_NODES[0]}" env "${auth[@]}" "${MVP_RAY_ARGS[@]}" || return
  for ((i = 1; i < ${#MVP_NODES[@]}; i++)); do
    mvp::ray::start_args "$i"
    mvp::rt::exec "${MVP_NODES[$i]}" env "${auth[@]}" "${MVP_RAY_ARGS[@]}" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  return "$rc"
}

runbook_start() { "$BENCH_REPO/scripts/20_start_head.sh" && "$BENCH_REPO/scripts/21_start_workers.sh"; }
rerun() { local s; for s in "${MVP_BRINGUP_STEPS[@]}"; do "$BENCH_REPO/scripts/$s.sh"; done; }

# Each start gets fresh namespaces (no Ray ever ran in them), and the two
# take turns going first: the second of a pair would otherwise meet what the
# first left behind (ports closing, the page cache warmed by it).
by_hand() { bench::time namespaces "$BENCH_REPO/scripts/01_up.sh" && bench::time plain plain_start; }
by_runbook() {
  "$BENCH_REPO/scripts/01_up.sh" >/dev/null 2>&1
  bench::time runbook runbook_start && bench::time again rerun
}

plain=() runbook=() again=() namespaces=()
"$BENCH_REPO/scripts/12_install_py_deps.sh" >/dev/null 2>&1
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order=(by_hand by_runbook); else order=(by_runbook by_hand); fi
  for step in "${order[@]}"; do
    "$step"
    "$BENCH_REPO/scripts/02_down.sh" >/dev/null 2>&1
  done
  echo "round $r (${order[0]} first): namespaces ${namespaces[-1]} ms, plain ray start ${plain[-1]} ms, 20+21 ${runbook[-1]} ms, re-run 00->21 ${again[-1]} ms" >&2
done
p=$(bench::median "${plain[@]}") b=$(bench::median "${runbook[@]}") a=$(bench::median "${again[@]}") n=$(bench::median "${namespaces[@]}")
rb=$(bench::pair_ratio runbook plain) ra=$(bench::pair_ratio again plain)
echo "bring-up, median of $rounds (ratios: median of the rounds' ratios): by hand (head, then workers in parallel) ${p} ms;" \
  "20+21 ${b} ms (${rb}x by hand); re-run of 00->21 ${a} ms (${ra}x by hand); 01_up (namespaces) ${n} ms"
bench::row "20+21 bring-up (head + 2 workers)" 1.1 "$rb" "vs the same ray start commands by hand, head then workers in parallel, $rounds alternating rounds"
