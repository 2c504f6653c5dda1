#!/usr/bin/env bash
# 21_start_workers.sh: starts Ray on every worker node that lacks it, each with
# its GPUs and the custom resource worker_node=100 (what job drivers ask for),
# then waits until every worker is registered with the head (MVP_NODES_TIMEOUT).
#
# Usage: scripts/21_start_workers.sh [--runtime compose|local] [--config FILE] [--dry-run] [--help]
# Safe to re-run: workers whose raylet runs are a SKIP; a dead one is restarted.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

main() {
  mvp::init "$@"
  mvp::ray_running_in "$MVP_HEAD_NODE" || mvp::die "the Ray head is not running; run scripts/20_start_head.sh first"
  local i node ip old_ids=
  for ((i = 1; i < ${#MVP_NODES[@]}; i++)); do
    node=${MVP_NODES[$i]}
    ip=$(mvp::node_ip "$i")
    mvp::rt::node_is_up "$node" || mvp::die "node $node is not up; run scripts/01_up.sh first"
    if mvp::ray_running_in "$node"; then
      mvp::skip "Ray worker on $node (raylet running)"
      continue
    fi
    # The head may still list the dead raylet at this address for a while;
    # its id tells the wait below not to count it.
    old_ids+=${old_ids:+,}$(mvp::helper_host node-ids "$ip")
    mvp::ray_start_args "$i"
    mvp::ray_stop_leftovers "$node"
    mvp::log "starting the Ray worker on $node ($ip, $MVP_GPUS_PER_WORKER GPUs)"
    mvp::run mvp::rt::exec "$node" "${MVP_RAY_ARGS[@]}" >/dev/null
  done
  [[ $MVP_DRY_RUN == 1 ]] && return 0
  mvp::helper_host cluster-wait --replaced "${old_ids:-}"
}

main "$@"
