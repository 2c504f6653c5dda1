#!/usr/bin/env bash
# 52_stop.sh: stops a job, waits until Ray reports it ended and archives it
# (driver log, final debug bundle, result.json).
#
# Safe to re-run: a job that already ended is a SKIP.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "SUBMISSION_ID  the job (its submission id)"

main() {
  MVP_QUIET_CONFIG=1 MVP_HEAD_ONLY=1 mvp::config::init "$@"
  ((${#MVP_ARGS[@]} == 1)) || mvp::log::die "give exactly one SUBMISSION_ID; see --help"
  if [[ $MVP_DRY_RUN == 1 ]]; then
    mvp::run::cmd mvp::helper::run stop "${MVP_ARGS[0]}"
    return 0
  fi
  mvp::helper::run stop "${MVP_ARGS[0]}"
}

main "$@"
