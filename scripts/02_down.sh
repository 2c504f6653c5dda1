#!/usr/bin/env bash
# 02_down.sh: stops Ray and removes the nodes (containers or namespaces).
# Leaves no Ray process of this cluster behind; touches nothing else. On ssh
# it stops Ray inside each node and leaves the containers to the platform.
#
# Safe to re-run: nodes that are down are skipped. Shared storage is kept.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

main() {
  mvp::config::init "$@"
  mvp::rt::down
}

main "$@"
