#!/usr/bin/env bash
# 00_prereq_check.sh: checks this host can run the cluster and creates the
# shared layout of shared-layout.txt under SHARED_ROOT.
#
# Checks tools, GPUs, Python dependencies, free ports, the verl source and a
# writable SHARED_ROOT, and reports every problem found, not only the first.
# On ssh it checks every node: ssh and its host key, python3 and Ray (the
# head's version), the same shared storage (a file written here is read
# there), GPUs, free ports; it warns when NCCL/GLOO interfaces are not set.
# Safe to re-run: directories that exist are left alone.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

check_shared_root() {
  local dir=$MVP_HOST_SHARED_DIR
  if [[ ! -d $dir ]]; then
    if [[ $dir == "$MVP_DEFAULT_SHARED" ]]; then
      mvp::run::cmd mkdir -p "$dir"
    else
      MVP_PROBLEMS+=("shared root $dir does not exist; mount the NFS share there or set SHARED_ROOT to a directory that exists")
      return 1
    fi
  fi
  if [[ $MVP_DRY_RUN != 1 && ! -w $dir ]]; then
    MVP_PROBLEMS+=("shared root $dir is not writable by $(id -un); fix its permissions or set SHARED_ROOT")
    return 1
  fi
}

create_layout() {
  local dir=$MVP_HOST_SHARED_DIR name rel mode missing=() private=() i
  while read -r name rel mode _; do
    [[ -z $name || $name == \#* || -d $dir/$rel ]] && continue
    # A mode before the comment: a directory others may not enter (secrets).
    if [[ $mode =~ ^0[0-7]{3}$ ]]; then private+=("$mode" "$dir/$rel"); else missing+=("$dir/$rel"); fi
  done <"$MVP_REPO/shared-layout.txt"
  if ((${#missing[@]} + ${#private[@]} == 0)); then
    mvp::log::skip "shared layout under $dir (all directories exist)"
    return 0
  fi
  mvp::log::step "creating $((${#missing[@]} + ${#private[@]} / 2)) directories of the shared layout under $dir"
  ((${#missing[@]} == 0)) || mvp::run::cmd mkdir -p "${missing[@]}"
  for ((i = 0; i < ${#private[@]}; i += 2)); do
    mvp::run::cmd mkdir -p -m "${private[i]}" "${private[i + 1]}"
  done
}

check_python() {
  case $MVP_RUNTIME in
    compose) mvp::log::info "python: checked inside the containers by scripts/12_install_py_deps.sh"; return 0 ;;
    ssh) return 0 ;;  # checked in every node by the runtime's probe
  esac
  if [[ ! -x $MVP_PYTHON ]] ||
    ! "$MVP_PYTHON" -c 'import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ("ray", "yaml", "pyarrow")))'; then
    MVP_PROBLEMS+=("the project venv $MVP_VENV lacks ray, pyyaml or pyarrow; run scripts/12_install_py_deps.sh (or make setup)")
  fi
}

check_verl_source() {
  [[ $MVP_RUNTIME == ssh ]] && return 0  # checked in the head by the runtime's probe
  local src=$MVP_NODE_VERL_SRC
  [[ $MVP_RUNTIME == compose ]] && src=$MVP_HOST_VERL_SRC
  [[ $MVP_RUNTIME == compose && $src != /* ]] && src=$MVP_REPO/$src
  if [[ ! -f $src/verl/__init__.py ]]; then
    MVP_PROBLEMS+=("no verl source at $src; git clone https://github.com/volcengine/verl.git $MVP_VERL_DIR, or set MVP_VERL_SRC=.mvp/cache/verl-0.9.1-standin for the CPU stand-in (made by make setup)")
  fi
}

# A port someone answers on is taken. Nodes of ours that are up are skipped:
# their ports are taken by us. (A runtime that checks inside its nodes lists none.)
check_ports() {
  local i node taken
  for ((i = 0; i < ${#MVP_NODES[@]}; i++)); do
    node=${MVP_NODES[$i]}
    [[ -n $(mvp::rt::node_ports "$i") ]] || continue
    if mvp::rt::node_is_up "$node"; then
      mvp::log::skip "port check for $node (it is up already)"
      continue
    fi
    for taken in $(mvp::ray::ports_taken "$i"); do
      MVP_PROBLEMS+=("port $taken (for $node) is in use; stop what listens there or change MVP_*_PORT / MVP_NODE_PORT_BASE")
    done
  done
}

main() {
  mvp::config::init "$@"
  MVP_PROBLEMS=()
  mvp::rt::prereq
  check_python
  check_verl_source
  check_ports
  if check_shared_root; then create_layout; fi
  if ((${#MVP_PROBLEMS[@]})); then
    local p
    for p in "${MVP_PROBLEMS[@]}"; do printf 'PROBLEM: %s\n' "$p" >&2; done
    mvp::log::die "${#MVP_PROBLEMS[@]} problem(s) found; fix them and run this again"
  fi
  mvp::log::info "prerequisites OK for the $MVP_RUNTIME runtime"
}

main "$@"
