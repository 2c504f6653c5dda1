# shellcheck shell=bash
# Logging and errors. Logs go to stderr with a UTC timestamp; stdout is kept
# for data (ids, JSON), so a script's output can be piped.
# log: a step being taken; info: a fact found; warn: something to look at;
# skip: nothing to do, and why. (printf's own clock: no `date` per line.)

mvp::log::step()  { TZ=UTC0 printf '%(%FT%TZ)T -----> %s\n' -1 "$*" >&2; }
mvp::log::info() { TZ=UTC0 printf '%(%FT%TZ)T        %s\n' -1 "$*" >&2; }
mvp::log::warn() { TZ=UTC0 printf '%(%FT%TZ)T  !     %s\n' -1 "$*" >&2; }
mvp::log::skip() { TZ=UTC0 printf '%(%FT%TZ)T SKIP: %s\n' -1 "$*" >&2; }
mvp::log::die()  { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# An unexpected failure names the command and where it failed; expected
# failures go through mvp::log::die (or the helper's ERROR line) with a message of
# their own.
# Decided by exit code and call site, never by the command's text: a call
# that returned 1 after its own ERROR line was printed (mvp::log::reported, as
# mvp::helper::run does for the helper's clean answer) gets nothing added; any
# other failure, and a crash (other codes) of that call, gets the frames.
mvp::log::on_err() {
  local rc=$? i
  [[ $rc == 1 && ${MVP_REPORTED_AT:-} == "${BASH_SOURCE[1]:-}:${BASH_LINENO[0]}" ]] && return 0
  printf 'ERROR: command failed (exit %s): %s\n' "$rc" "$BASH_COMMAND" >&2
  for ((i = 1; i < ${#FUNCNAME[@]}; i++)); do
    printf '  at %s (%s:%s)\n' "${FUNCNAME[$i]}" "${BASH_SOURCE[$i]##*/}" "${BASH_LINENO[$((i - 1))]}" >&2
  done
}
trap mvp::log::on_err ERR

# mvp::log::reported RC: called by a function just before it returns RC; when
# RC is 1 (a failure whose ERROR line is already out), marks the line that
# called that function, so mvp::log::on_err adds nothing when the call fails
# there. Any other RC clears the mark.
mvp::log::reported() {
  MVP_REPORTED_AT=""
  [[ $1 == 1 ]] && MVP_REPORTED_AT="${BASH_SOURCE[2]:-}:${BASH_LINENO[1]}"
  return 0
}
