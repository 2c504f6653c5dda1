#!/usr/bin/env bash
# 03_cleanup_v1_legacy.sh: best-effort removal of the v1 runbook's containers
# (mvp-ray-head, mvp-ray-worker-N), which hold the same ports as v1.1.
#
# Safe to re-run: a no-op (SKIP) when no v1 container exists or Docker is absent.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

main() {
  mvp::config::init "$@"
  if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
    mvp::log::skip "v1 cleanup (no Docker engine answers on this host, so no v1 containers run here)"
    return 0
  fi
  local -a legacy=()
  mapfile -t legacy < <(docker ps -a --format '{{.Names}}' | grep -E '^mvp-ray-(head|worker-[0-9]+)$' || true)
  if ((${#legacy[@]} == 0)); then
    mvp::log::skip "v1 cleanup (no v1 containers)"
    return 0
  fi
  mvp::log::step "removing v1 containers: ${legacy[*]}"
  mvp::run::cmd docker rm -f "${legacy[@]}"
}

main "$@"
