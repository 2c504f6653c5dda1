#!/usr/bin/env bash
# 12_install_py_deps.sh: installs the Python packages where they run: for
# local, the project venv .venv/, which the local nodes run too: the helper's
# (helpers/requirements.txt) and the trainer environment real verl 0.9.1 needs
# (helpers/trainer/requirements.lock, hashes required, after torch==2.13.0:
# the CPU build from the first place of MVP_TORCH_SOURCES that has one, else
# pip's default build with one warning; MVP_TORCH_CPU_ONLY=1, CI's rule,
# refuses a CUDA package); for compose, each container (PyYAML and pyarrow,
# when the image lacks them: the image brings its own verl and torch).
# Every download is tried again with backoff (MVP_DOWNLOAD_RETRY_DELAYS).
#
# Safe to re-run: a venv built from the same requirements is a SKIP.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# The interpreter and machine must be among the lock's platforms.
check_platform() {
  local lock=$1 want have
  want=$(sed -n 's/^# platforms: \([^(]*\).*/\1/p' "$lock")
  have=$("$MVP_PYTHON" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')-$(uname -m)
  [[ " $want " == *" $have "* ]] ||
    mvp::log::die "helpers/trainer/requirements.lock has hashes for $want, not for $have (Python $("$MVP_PYTHON" -c 'import platform; print(platform.python_version())') on $(uname -m)); run make setup with python3 pointing at Python 3.10-3.13, or regenerate the lock (make lock-trainer)"
}

# torch_source_args SOURCE: pip's options for one place of MVP_TORCH_SOURCES.
torch_source_args() {
  local place=$1
  case $place in
    pip) TORCH_ARGS=() ;;
    http://*|https://*|file://*) TORCH_ARGS=(--index-url "$place") ;;
    /*|./*|../*) [[ -d $place ]] || return 1; TORCH_ARGS=(--no-index --find-links "$place") ;;
    *) mvp::log::die "MVP_TORCH_SOURCES: '$place' is not pip, an index URL or a wheel directory (an absolute or ./ path)" ;;
  esac
}

# torch_offered SPEC: the build (cpu or cuda) and version of SPEC that the
# place in TORCH_ARGS offers, from pip's dry run (metadata only, nothing installed).
torch_offered() {
  local report rc=0
  report=$(mktemp)
  "$MVP_PYTHON" -m pip install --quiet --disable-pip-version-check --dry-run --ignore-installed --no-deps \
    --report "$report" "${TORCH_ARGS[@]}" "$1" >/dev/null 2>&1 &&
    "$MVP_PYTHON" "$MVP_REPO/helpers/trainer/torch_build.py" kind "$report" || rc=1
  rm -f "$report"
  return "$rc"
}

# install_torch SPEC: the CPU build from the first place of MVP_TORCH_SOURCES
# that has one (without its dependencies: the lock brings those); else
# pip's default build, with its CUDA packages and one warning that says so.
install_torch() {
  local spec=$1 source build version
  local -a TORCH_ARGS=() sources ask
  read -ra sources <<<"$MVP_TORCH_SOURCES"
  for source in "${sources[@]}"; do
    torch_source_args "$source" || { mvp::log::info "torch: no wheel directory $source; trying the next place"; continue; }
    # A directory is no download; an index may have a bad minute.
    ask=(mvp::retry::download "asking $source for $spec")
    [[ -d $source ]] && ask=()
    # `|| :`: a place that gave no answer is no error (the ERR trap would call it one).
    read -r build version < <("${ask[@]}" torch_offered "$spec" || :) || build=none
    if [[ $build == cpu ]]; then
      mvp::log::step "installing torch $version (CPU build) from $source"
      mvp::retry::download "downloading torch $version from $source" mvp::run::cmd "$MVP_PYTHON" -m pip install \
        --quiet --disable-pip-version-check --no-deps "${TORCH_ARGS[@]}" "$spec"
      return 0
    fi
    if [[ $build == cuda ]]; then
      mvp::log::info "torch: $source offers the CUDA build of $spec here; trying the next place"
    else
      mvp::log::info "torch: no $spec from $source (pip found none there, or could not reach it); trying the next place"
    fi
  done
  mvp::log::step "installing $spec, the default build of pip's index (no CPU build in MVP_TORCH_SOURCES='$MVP_TORCH_SOURCES')"
  mvp::retry::download "downloading $spec" mvp::run::cmd "$MVP_PYTHON" -m pip install --quiet --disable-pip-version-check "$spec"
  [[ $MVP_DRY_RUN == 1 ]] ||
    mvp::log::warn "torch is the default build with CUDA: $("$MVP_PYTHON" "$MVP_REPO/helpers/trainer/torch_build.py" size) MB in $MVP_VENV (torch, nvidia-*, triton); it trains on CPU as well (a CPU build: put its index or wheel directory in MVP_TORCH_SOURCES)"
}

install_venv() {
  local req=$MVP_REPO/helpers/requirements.txt lock=$MVP_REPO/helpers/trainer/requirements.lock
  local stamp=$MVP_VENV/.mvp-requirements.sha256 want torch
  want=$(cat -- "$req" "$lock" | sha256sum | cut -d' ' -f1)
  if [[ -x $MVP_PYTHON && -f $stamp && $(<"$stamp") == "$want" ]]; then
    mvp::log::skip "python venv $MVP_VENV (built from the current helpers/requirements.txt and trainer lock)"
    return 0
  fi
  mvp::log::step "building $MVP_VENV from helpers/requirements.txt and helpers/trainer/requirements.lock"
  mvp::run::cmd python3 -m venv "$MVP_VENV"
  [[ $MVP_DRY_RUN == 1 ]] || check_platform "$lock"
  mvp::retry::download "pip install -r helpers/requirements.txt" mvp::run::cmd "$MVP_PYTHON" -m pip install \
    --quiet --disable-pip-version-check -r "$req"
  # torch first and exactly, as requirements.in pins it: the lock leaves it
  # out, so that each place may offer its own build. The lock then installs
  # the files it names, by hash.
  torch=$(grep -m1 '^torch==' "$MVP_REPO/helpers/trainer/requirements.in")
  install_torch "$torch"
  mvp::retry::download "pip install --require-hashes -r helpers/trainer/requirements.lock" mvp::run::cmd \
    "$MVP_PYTHON" -m pip install --quiet --disable-pip-version-check --require-hashes -r "$lock"
  # CI's rule alone (MVP_TORCH_CPU_ONLY=1 in .ci/run): no CUDA package in the venv.
  if [[ $MVP_TORCH_CPU_ONLY == 1 ]]; then
    mvp::run::cmd "$MVP_PYTHON" "$MVP_REPO/helpers/trainer/no_cuda.py" || exit 1
  fi
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
      mvp::retry::download "pip install PyYAML pyarrow in $node" mvp::run::cmd mvp::rt::exec "$node" python3 -m pip install --quiet PyYAML pyarrow
    fi
  done
}

main() {
  MVP_QUIET_CONFIG=1 mvp::config::init "$@"
  if [[ $MVP_RUNTIME == local ]]; then install_venv; else install_in_containers; fi
}

main "$@"
