#!/usr/bin/env bash
# 12_install_py_deps.sh: installs the Python packages where they run: for
# local, the project venv .venv/, which the local nodes run too: the helper's
# (helpers/requirements.txt) and the trainer environment real verl 0.9.1 needs
# (helpers/trainer/requirements.lock, hashes required, torch==2.13.0 first; a
# CUDA package in it is refused); for compose, each container (PyYAML and
# pyarrow, when the image lacks them: the image brings its own verl and torch).
#
# Usage: scripts/12_install_py_deps.sh [--runtime compose|local] [--dry-run] [--help]
# Safe to re-run: a venv built from the same requirements is a SKIP.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

install_venv() {
  local req=$MVP_REPO/helpers/requirements.txt lock=$MVP_REPO/helpers/trainer/requirements.lock
  local stamp=$MVP_VENV/.mvp-requirements.sha256 want
  want=$(cat -- "$req" "$lock" | sha256sum | cut -d' ' -f1)
  if [[ -x $MVP_PYTHON && -f $stamp && $(<"$stamp") == "$want" ]]; then
    mvp::log::skip "python venv $MVP_VENV (built from the current helpers/requirements.txt and trainer lock)"
    return 0
  fi
  mvp::log::step "building $MVP_VENV from helpers/requirements.txt and helpers/trainer/requirements.lock"
  mvp::run::cmd python3 -m venv "$MVP_VENV"
  mvp::run::cmd "$MVP_PYTHON" -m pip install --quiet --disable-pip-version-check -r "$req"
  # torch first and exactly: installed later, as a dependency, pip could take
  # the CUDA build. The lock then installs the files it names, by hash.
  mvp::run::cmd "$MVP_PYTHON" -m pip install --quiet --disable-pip-version-check torch==2.13.0
  mvp::run::cmd "$MVP_PYTHON" -m pip install --quiet --disable-pip-version-check --require-hashes -r "$lock"
  # One line and a failed setup if CUDA packages got in after all.
  mvp::run::cmd "$MVP_PYTHON" "$MVP_REPO/helpers/trainer/no_cuda.py" || exit 1
  [[ $MVP_DRY_RUN == 1 ]] || echo "$want" >"$stamp"
}

install_in_containers() {
  local node
  for node in "${MVP_NODES[@]}"; do
    mvp::rt::node_is_up "$node" || mvp::log::die "container $node is not running; run scripts/01_up.sh first"
    if mvp::rt::exec "$node" python3 -c 'import yaml, pyarrow' 2>/dev/null; then
      mvp::log::skip "python packages in $node (PyYAML and pyarrow import)"
    else
      mvp::log::step "installing PyYAML and pyarrow in $node"
      mvp::run::cmd mvp::rt::exec "$node" python3 -m pip install --quiet PyYAML pyarrow
    fi
  done
}

main() {
  MVP_QUIET_CONFIG=1 mvp::config::init "$@"
  if [[ $MVP_RUNTIME == local ]]; then install_venv; else install_in_containers; fi
}

main "$@"
