#!/usr/bin/env bash
# 20_start_head.sh: starts the Ray head inside the head node as control plane
# only (--num-cpus=0 --num-gpus=0), with the dashboard on the head's address.
#
# Usage: scripts/20_start_head.sh [--runtime compose|local] [--config FILE] [--dry-run] [--help]
# Safe to re-run: a healthy head (GCS and raylet running, dashboard answering) is a SKIP.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

main() {
  mvp::init "$@"
  local head=$MVP_HEAD_NODE
  mvp::rt::node_is_up "$head" || mvp::die "node $head is not up; run scripts/01_up.sh first"
  if mvp::ray_running_in "$head" && mvp::helper cluster-wait --head --timeout 5 2>/dev/null; then
    mvp::skip "Ray head on $head (running, dashboard $MVP_HOST_DASHBOARD_URL answers)"
    return 0
  fi
  mvp::log "starting the Ray head on $head ($MVP_HEAD_IP)"
  mvp::ray_start "$head" 0
  [[ $MVP_DRY_RUN == 1 ]] && return 0
  mvp::helper cluster-wait --head
  mvp::info "head up: dashboard $MVP_HOST_DASHBOARD_URL, GCS $MVP_HEAD_IP:$MVP_GCS_PORT"
}

main "$@"
