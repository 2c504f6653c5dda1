#!/usr/bin/env bash
# 20_start_head.sh: starts the Ray head inside the head node as control plane
# only (--num-cpus=0 --num-gpus=0), with the dashboard on the head's address.
#
# A new head resets workers still running the old cluster's Ray (their job
# drivers would keep writing into job directories) and archives the jobs the
# old cluster took with it as LOST. Ports held by something else fail it at once.
# Safe to re-run: a healthy head (GCS and raylet running, dashboard answering) is a SKIP.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# A new head means Ray still running on a worker belongs to the cluster that
# went away, and its job drivers may still be writing into job directories:
# those nodes are reset (every process in them ends); 21 starts them afresh.
# A raylet that gave up on the old head by itself (Ray's GCS reconnect
# timeout, 60 s) leaves daemons such as its log monitor behind: any process
# of Ray counts, not the raylet alone.
reset_orphaned_workers() {
  local node
  for node in "${MVP_NODES[@]:1}"; do
    if mvp::rt::node_is_up "$node" && mvp::ray::leftovers_in "$node"; then
      mvp::log::step "resetting $node: its Ray (and any job driver) belongs to the head that went away"
      mvp::rt::reset_node "$node"
    fi
  done
}

main() {
  mvp::config::init "$@"
  local head=$MVP_HEAD_NODE
  mvp::rt::node_is_up "$head" || mvp::log::die "node $head is not up; run scripts/01_up.sh first"
  if mvp::ray::running_in "$head" && mvp::helper::run cluster-wait --head --timeout 5 2>/dev/null; then
    mvp::log::skip "Ray head on $head (running, dashboard $MVP_HOST_DASHBOARD_URL answers)"
    return 0
  fi
  mvp::log::step "starting the Ray head on $head ($MVP_HEAD_IP)"
  mvp::ray::start "$head" 0
  [[ $MVP_DRY_RUN == 1 ]] && return 0
  mvp::helper::run cluster-wait --head
  mvp::log::info "head up: dashboard $MVP_HOST_DASHBOARD_URL, GCS $MVP_HEAD_IP:$MVP_GCS_PORT"
  reset_orphaned_workers
  # Jobs that were running when the old head went away get a record saying so.
  mvp::helper::run reconcile
}

main "$@"
