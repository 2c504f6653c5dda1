# shellcheck shell=bash
# Downloads that survive a bad minute of a package mirror or registry: every
# download of setup and of the test tiers (apt, mmdebstrap, pip) goes through
# this one function. Needs log.sh.

# mvp::retry::download WHAT CMD...: runs CMD; when it fails, runs it again
# after each delay of MVP_DOWNLOAD_RETRY_DELAYS in turn (seconds; empty:
# "30 90", so 3 tries in all), saying so in one line per retry. Returns CMD's
# last exit status. CMD must be safe to run again from the start.
mvp::retry::download() {
  local what=$1 try=1 rc delay
  shift
  local -a delays
  read -ra delays <<<"${MVP_DOWNLOAD_RETRY_DELAYS:-30 90}"
  while true; do
    "$@" && return 0
    rc=$?
    ((try > ${#delays[@]})) && return "$rc"
    delay=${delays[try - 1]}
    [[ $delay =~ ^[0-9]+$ ]] || mvp::log::die "MVP_DOWNLOAD_RETRY_DELAYS='${MVP_DOWNLOAD_RETRY_DELAYS:-}' is not whole seconds apart by spaces; set it like '30 90'"
    mvp::log::warn "$what failed (exit $rc, try $try of $((${#delays[@]} + 1))); trying again in $delay s"
    sleep "$delay"
    try=$((try + 1))
  done
}
