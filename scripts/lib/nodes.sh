# shellcheck shell=bash
# The nodes as this host knows them: their names, and where a path of this
# host is on them. Every runtime and script asks here; config.sh names the
# nodes through it, the ssh runtime once more after its inventory's count.

# MVP_HEAD_NODE and MVP_NODES (head first) for MVP_WORKERS workers: the one
# rule of the nodes' names (a runtime whose nodes have names of their own,
# slurm, sets its own).
mvp::nodes::name_all() {
  local i
  MVP_HEAD_NODE=mvp11-ray-head
  MVP_NODES=("$MVP_HEAD_NODE")
  for ((i = 0; i < MVP_WORKERS; i++)); do MVP_NODES+=("mvp11-ray-worker-$i"); done
}

# mvp::nodes::shared_name HOST_PATH [VAR]: a path under this host's shared dir
# as its name relative to the shared root (regressions/<run id>), the form the
# helper takes and resolves on whichever side it runs. mvp::nodes::path
# [--outside-as-is] HOST_PATH [VAR]: the same path as the nodes see it; a path
# outside the shared dir is refused, or with --outside-as-is kept as it is (the
# nodes have it too, or 00_prereq_check.sh says they do not). Both answer into
# VAR when given (no subshell at every script's start). The one host<->node
# mapping: mvp::nodes::shared_rel decides what is under the shared dir.
mvp::nodes::shared_name() {
  if ! mvp::nodes::shared_rel "$1" || [[ -z $REPLY ]]; then
    mvp::log::die "$1 is not under the shared root $MVP_HOST_SHARED_DIR"
  fi
  mvp::config::answer "$REPLY" "${2-}"
}
mvp::nodes::path() {
  local _mvp_as_is=0
  [[ $1 != --outside-as-is ]] || { _mvp_as_is=1; shift; }
  if mvp::nodes::shared_rel "$1"; then
    mvp::config::answer "${SHARED_ROOT%/}${REPLY:+/$REPLY}" "${2-}"
  elif ((_mvp_as_is)); then
    mvp::config::answer "$1" "${2-}"
  else
    mvp::log::die "$1 is not under the shared root $MVP_HOST_SHARED_DIR"
  fi
}

# REPLY: HOST_PATH relative to this host's shared dir (empty for the dir
# itself); 1 when it is outside. A trailing / of the dir is no part of it.
mvp::nodes::shared_rel() {
  local dir=${MVP_HOST_SHARED_DIR%/}
  REPLY=""
  [[ $1 == "$dir" ]] && return 0
  [[ $1 == "$dir"/* ]] || return 1
  REPLY=${1#"$dir"/}
  REPLY=${REPLY#/}
}
