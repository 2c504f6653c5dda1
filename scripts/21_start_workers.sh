#!/usr/bin/env bash
# 21_start_workers.sh: starts Ray on every worker node that lacks it, each with
# its GPUs and the custom resource worker_node=100 (what job drivers ask for),
# then waits until every worker is registered with the head (MVP_NODES_TIMEOUT).
#
# A worker node that is down (namespace or container gone) is brought back
# first, as 01 makes it.
# Safe to re-run: workers whose raylet runs are a SKIP; a dead one is restarted.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# start_workers INDEX...: starts Ray on those nodes of MVP_NODES, all at once,
# and waits for every start; one that failed is an ERROR.
start_workers() {
  local i node pid failed=0
  local -a pids=()
  # Each `ray start` is a second or more of Python start-up: in parallel.
  for i in "$@"; do
    node=${MVP_NODES[$i]}
    mvp::log::step "starting the Ray worker on $node ($(mvp::ray::node_ip "$i"), $MVP_GPUS_PER_WORKER GPUs)"
    mvp::ray::start "$node" "$i" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  ((failed == 0)) || mvp::log::die "a worker's ray start failed; see its output above"
}

main() {
  mvp::config::init "$@"
  mvp::ray::running_in "$MVP_HEAD_NODE" || mvp::log::die "the Ray head is not running; run scripts/20_start_head.sh first"
  local i node ip old_ids="" out
  local -A answer=()
  local -a starting=() down=()
  for node in "${MVP_NODES[@]:1}"; do mvp::rt::node_is_up "$node" || down+=("$node"); done
  if ((${#down[@]})); then
    # A worker node that died (namespace or container) comes back as 01 makes it.
    mvp::log::step "bringing back worker node(s) that are down: ${down[*]}"
    mvp::rt::up
  fi
  for ((i = 1; i < ${#MVP_NODES[@]}; i++)); do
    node=${MVP_NODES[$i]}
    mvp::rt::node_is_up "$node" || mvp::log::die "node $node is down and the $MVP_RUNTIME runtime could not bring it back; see 00_prereq_check.sh"
    if mvp::ray::running_in "$node"; then
      mvp::log::skip "Ray worker on $node (raylet running)"
      continue
    fi
    starting+=("$i")
  done
  ((${#starting[@]})) || return 0
  ip=$(for i in "${starting[@]}"; do mvp::ray::node_ip "$i"; done)
  # The head may still list a dead raylet at these addresses for a while;
  # their ids tell the wait below not to count them.
  # shellcheck disable=SC2086  # one address per word
  out=$(mvp::helper::run node-ids $ip)
  mvp::kv::read answer <<<"$out" || mvp::log::die "the helper's node-ids answer: $MVP_KV_ERROR"
  old_ids=${answer[node_ids]:-}
  start_workers "${starting[@]}"
  [[ $MVP_DRY_RUN == 1 ]] && return 0
  mvp::helper::run cluster-wait --replaced "$old_ids"
}

main "$@"
