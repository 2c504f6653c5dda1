# shellcheck shell=bash
# Running commands: dry-run, what a command run in a node gets of this
# host's environment, bounded waits and locks.

# Runs a command given as words, or only prints it under --dry-run.
mvp::run::cmd() {
  if [[ $MVP_DRY_RUN == 1 ]]; then
    printf 'DRY-RUN:'; printf ' %q' "$@"; printf '\n'
    return 0
  fi
  "$@"
}

# mvp::run::node_env_names: the names of this host's exported variables
# that reach commands run in a node, one a line: fault injection of the
# tests, Ray's token auth, the Hugging Face cache/hub (not its token), and whether Ray hides
# GPUs from a process given none
# (RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=1 is Ray's default before 2.60; the
# tests start nodes with it to meet what verl's SFT driver meets there).
# Everything else of the operator's shell stays out of the nodes (and so
# out of Ray's daemons and every job).
# One `case` of globs, not a regex per name: this runs for every command run
# in a node, and Bash compiles a regex anew each time it is used.
mvp::run::node_env_names() {
  local name
  while IFS= read -r name; do
    case $name in
      # HF_TOKEN is private (a secret name, helpers/mvp/worker/redact.py): it reaches 30's
      # helper on stdin only, never a node's argv or environment (and so no job).
      HF_*TOKEN*|HF_*KEY*|HF_*SECRET*|HF_*PASSWORD*) ;;
      MVP_FAULT_?*|RAY_AUTH_?*|HF_?*|RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO) echo "$name" ;;
    esac
  done < <(compgen -e)
}

# mvp::run::wait_for SECONDS WHAT CMD...: polls CMD every 0.1 s.
mvp::run::wait_for() {
  local seconds=$1 what=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    ((SECONDS < deadline)) || { mvp::log::warn "timed out after ${seconds}s waiting for $what"; return 1; }
    sleep 0.1
  done
}

# mvp::run::with_lock FILE CMD...: runs CMD holding an exclusive lock on FILE;
# returns 75 at once, running nothing, when another process holds it.
# flock -o keeps the lock out of CMD's children: Ray daemons started by a
# locked run must not hold the lock after the run ends.
MVP_LOCKED_EXIT=75
mvp::run::with_lock() {
  local file=$1; shift
  mkdir -p "$(dirname "$file")"
  flock -n -o -E "$MVP_LOCKED_EXIT" "$file" "$@"
}
