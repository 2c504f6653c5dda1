#!/usr/bin/env bash
# 12_install_py_deps.sh: installs the Python packages the helper needs where
# it runs: the project venv .venv/ for local (pinned, helpers/requirements.txt),
# each container for compose (PyYAML and pyarrow, when the image lacks them).
#
# Usage: scripts/12_install_py_deps.sh [--runtime compose|local] [--dry-run] [--help]
# Safe to re-run: a venv built from the same requirements is a SKIP.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

install_venv() {
  local req=$MVP_REPO/helpers/requirements.txt stamp=$MVP_VENV/.mvp-requirements.sha256 want
  want=$(sha256sum "$req" | cut -d' ' -f1)
  if [[ -x $MVP_PYTHON && -f $stamp && $(<"$stamp") == "$want" ]]; then
    mvp::skip "python venv $MVP_VENV (built from the current helpers/requirements.txt)"
    return 0
  fi
  mvp::log "building $MVP_VENV from helpers/requirements.txt"
  mvp::run python3 -m venv "$MVP_VENV"
  mvp::run "$MVP_PYTHON" -m pip install --quiet --disable-pip-version-check -r "$req"
  [[ $MVP_DRY_RUN == 1 ]] || echo "$want" >"$stamp"
}

install_in_containers() {
  local node
  for node in "${MVP_NODES[@]}"; do
    mvp::rt::node_is_up "$node" || mvp::die "container $node is not running; run scripts/01_up.sh first"
    if mvp::rt::exec "$node" python3 -c 'import yaml, pyarrow' 2>/dev/null; then
      mvp::skip "python packages in $node (PyYAML and pyarrow import)"
    else
      mvp::log "installing PyYAML and pyarrow in $node"
      mvp::run mvp::rt::exec "$node" python3 -m pip install --quiet PyYAML pyarrow
    fi
  done
}

main() {
  MVP_QUIET_CONFIG=1 mvp::init "$@"
  if [[ $MVP_RUNTIME == local ]]; then install_venv; else install_in_containers; fi
}

main "$@"
