# shellcheck shell=bash
# Logging and errors. Logs go to stderr with a UTC timestamp; stdout is kept
# for data (ids, JSON), so a script's output can be piped.
# log: a step being taken; info: a fact found; warn: something to look at;
# skip: nothing to do, and why. (printf's own clock: no `date` per line.)

mvp::log()  { TZ=UTC0 printf '%(%FT%TZ)T -----> %s\n' -1 "$*" >&2; }
mvp::info() { TZ=UTC0 printf '%(%FT%TZ)T        %s\n' -1 "$*" >&2; }
mvp::warn() { TZ=UTC0 printf '%(%FT%TZ)T  !     %s\n' -1 "$*" >&2; }
mvp::skip() { TZ=UTC0 printf '%(%FT%TZ)T SKIP: %s\n' -1 "$*" >&2; }
mvp::die()  { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# An unexpected failure names the command and where it failed; expected
# failures go through mvp::die (or the helper's ERROR line) with a message of
# their own.
mvp::on_err() {
  local rc=$? i
  # The helper's clean answer (exit 1) said all there is; a crash (other
  # codes) gets the frames.
  # shellcheck disable=SC2016  # the text of mvp::helper's last line
  [[ $BASH_COMMAND == 'return "$helper_rc"' && $rc == 1 ]] && return 0
  printf 'ERROR: command failed (exit %s): %s\n' "$rc" "$BASH_COMMAND" >&2
  for ((i = 1; i < ${#FUNCNAME[@]}; i++)); do
    printf '  at %s (%s:%s)\n' "${FUNCNAME[$i]}" "${BASH_SOURCE[$i]##*/}" "${BASH_LINENO[$((i - 1))]}" >&2
  done
}
trap mvp::on_err ERR

# Prints the calling script's header comment (its usage), without the '# '.
mvp::usage() {
  sed -n '2,/^[^#]/{/^#/!q;s/^# \{0,1\}//;p}' "$0"
}
