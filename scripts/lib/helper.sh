# shellcheck shell=bash disable=SC2034  # MVP_JOB_ENV_NAMES is passed by name, from the contract
# The bridge to the Python helper (python -m mvp): which settings it gets and
# where each of its commands runs.

# Settings the Python helper reads (helpers/mvp/core/settings.py), as the node
# that runs it sees them: those with `helper` in config/settings.contract.
# Every one is passed; the helper has no defaults.
mvp::helper::env() {
  # MVP_JOB_ENV_NAMES (mvp::config::job_env_names) are the variables every
  # job's runtime_env gets (NCCL_*, GLOO_* ...).
  local name pair
  local -a env=("PYTHONPATH=$MVP_NODE_REPO/helpers")
  for pair in "${MVP_CONTRACT_HELPER[@]}"; do
    name=${pair#*=}
    env+=("${pair%%=*}=${!name}")
  done
  for name in $MVP_JOB_ENV_NAMES; do env+=("$name=${!name}"); done
  printf '%s\0' "${env[@]}"
  mvp::ray::auth_env
}

# mvp::helper::place COMMAND [VAR]: where the helper's COMMAND runs, host or
# head, into VAR when given. Each command declares its place beside its
# add_parser in helpers/mvp/__main__.py; helpers/mvp/places.txt is the table
# made of them, read here with bash alone (no Python starts to learn a place:
# the submit path is benchmarked). The one rule:
# - host: commands that only speak HTTP to the dashboard and read the shared
#   root (status, cluster-wait, node-ids, logs, stop, wait, reconcile) run on
#   this host with the standard library, so they work, and a wait survives,
#   while the head is down; those that read this host's own files run here
#   too: render-kuberay (71's manifests), notify (this host's sendmail and
#   webhook URL file), nightly-suite (the suite file, read before any node
#   exists) and bisect (61's steps: this host's git checkout, the shared
#   root's job directories);
# - data: commands that need pyarrow/PyYAML (prepare, snapshot, nightly) run
#   on this host when the runtime's nodes see this host's files and venv
#   (MVP_HOST_SEES_NODE_FILES=1, local), else on the head;
# - head: submit (jobs are submitted from the head, as the seed requires);
#   the commands no script runs through here (retry-from, resumed, layout,
#   settings, detector: run by hand or by make) are placed there too.
# A command the table does not name is an error, never a guess.
mvp::helper::place() {
  local name at
  while read -r name at; do
    [[ $name == "$1" ]] || continue
    case $at in
      host|head) ;;
      data) if [[ $MVP_HOST_SEES_NODE_FILES == 1 ]]; then at='host'; else at='head'; fi ;;
      *) break ;;
    esac
    mvp::config::answer "$at" "${2-}"
    return 0
  done <"$MVP_REPO/helpers/mvp/places.txt"
  mvp::log::die "helpers/mvp/places.txt gives the helper's command '$1' no place; declare it beside its add_parser in helpers/mvp/__main__.py, then make helpers/mvp/places"
}

# mvp::helper::run COMMAND ARGS...: runs `python -m mvp COMMAND ARGS...` where
# the command belongs (mvp::helper::place).
mvp::helper::run() {
  local place
  mvp::helper::place "$1" place
  local -a env=()
  mapfile -d '' env < <(mvp::helper::env)
  local helper_rc=0
  if [[ $place == host ]]; then
    [[ $MVP_RAY_AUTH == token ]] && env+=("RAY_AUTH_TOKEN_PATH=$MVP_HOST_RAY_TOKEN_FILE")
    env "${env[@]}" "SHARED_ROOT=$MVP_HOST_SHARED_DIR" "MVP_DASHBOARD_URL=$MVP_HOST_DASHBOARD_URL" \
      "PYTHONPATH=$MVP_REPO/helpers" "$MVP_HOST_PYTHON" -m mvp "$@" || helper_rc=$?
  else
    mvp::rt::exec "$MVP_HEAD_NODE" env "${env[@]}" "$MVP_PYTHON" -m mvp "$@" || helper_rc=$?
  fi
  # Exit 1 is the helper's clean answer (its one ERROR line, or a verdict
  # such as "cluster DOWN"): mvp::log::on_err adds nothing to it.
  mvp::log::reported "$helper_rc"
  return "$helper_rc"
}
