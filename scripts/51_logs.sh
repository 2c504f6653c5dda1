#!/usr/bin/env bash
# 51_logs.sh: prints a job's driver log (secrets masked); --follow keeps
# printing until the job ends; --steps prints verl's step metrics instead, as
# a table (loss, reward, gradient norm, seconds per step), --steps --json as
# JSON, --steps --follow a line per step as verl logs it. A job Ray no longer knows is read from its archived copy,
# <shared_root>/jobs/<id>/logs/driver.log.
#
# Usage: scripts/51_logs.sh SUBMISSION_ID [--follow] [--steps [--json]] [--help]
# Read-only, except that a job found ended is archived (result.json).
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

main() {
  MVP_QUIET_CONFIG=1 MVP_HEAD_ONLY=1 mvp::init "$@"
  local -a args=(logs) ids=()
  local arg
  for arg in "${MVP_ARGS[@]}"; do
    case $arg in
      --follow|--steps|--json) args+=("$arg") ;;
      -*) mvp::die "unknown option '$arg'; see --help" ;;
      *) ids+=("$arg") ;;
    esac
  done
  ((${#ids[@]} == 1)) || mvp::die "give exactly one SUBMISSION_ID; see --help"
  mvp::helper "${args[@]}" "${ids[0]}"
}

main "$@"
