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

# mvp::helper::run COMMAND ARGS...: runs `python -m mvp COMMAND ARGS...` where the
# command belongs. The one rule:
# - host: commands that only speak HTTP to the dashboard and read the shared
#   root (status, cluster-wait, node-ids, logs, stop, wait, reconcile), and
#   notify (this host's sendmail and webhook URL file), nightly-suite
#   (the suite file, read before any node exists) and bisect (61's steps:
#   this host's git checkout, the shared root's job directories), run on
#   this host with the standard library, so they work, and a wait survives,
#   while the head is down;
# - data: commands that need pyarrow/PyYAML (prepare, snapshot, nightly) run
#   on this host when the runtime's nodes see this host's files and venv
#   (MVP_HOST_SEES_NODE_FILES=1, local), else on the head;
# - head: everything else (submit) runs on the head: jobs are submitted
#   from the head, as the seed requires.
mvp::helper::run() {
  local place=head
  case $1 in
    status|cluster-wait|node-ids|logs|stop|wait|reconcile|render-kuberay|notify|nightly-suite|bisect) place=host ;;
    prepare|snapshot|nightly) [[ $MVP_HOST_SEES_NODE_FILES == 1 ]] && place=host ;;
  esac
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
