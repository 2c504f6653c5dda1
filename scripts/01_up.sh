#!/usr/bin/env bash
# 01_up.sh: brings the nodes up: the containers of docker-compose.yaml
# (compose) or one namespace per node on this host (local). Ray is started
# in them by 20_start_head.sh and 21_start_workers.sh. On ssh the platform
# owns the containers: nothing to create (SKIP).
#
# Safe to re-run: nodes that are up are left alone (SKIP).
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

main() {
  mvp::config::init "$@"
  mvp::rt::up
}

main "$@"
