# shellcheck shell=bash
# Running commands: dry-run, bounded waits and locks.

# Runs a command given as words, or only prints it under --dry-run.
mvp::run::cmd() {
  if [[ $MVP_DRY_RUN == 1 ]]; then
    printf 'DRY-RUN:'; printf ' %q' "$@"; printf '\n'
    return 0
  fi
  "$@"
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
