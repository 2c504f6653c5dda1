#!/usr/bin/env bash
# 51_logs.sh: prints a job's driver log (secrets masked); --follow keeps
# printing until the job ends; --steps prints verl's step metrics instead, as
# a table (loss, reward, gradient norm, seconds per step), --steps --json as
# JSON, --steps --follow a line per step as verl logs it. A job Ray no longer knows is read from its archived copy,
# <shared_root>/jobs/<id>/logs/driver.log; while the cluster does not answer
# (its head or GCS gone), any job is read from the copies kept in its
# directory (driver.log, else driver.live.log, then the nodes' worker logs),
# after one WARN line saying when they were last synced (--steps too).
#
# Read-only, except that a job found ended is archived (result.json).
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "SUBMISSION_ID  the job (its submission id)" \
  "--follow  keep printing until the job ends" \
  "--steps  verl's step metrics as a table, not the log" \
  "--json  with --steps: every metric of every step, as JSON"

main() {
  MVP_QUIET_CONFIG=1 MVP_HEAD_ONLY=1 mvp::config::init "$@"
  ((${#MVP_ARGS[@]} == 1)) || mvp::log::die "give exactly one SUBMISSION_ID; see --help"
  mvp::helper::run logs "${MVP_FLAG_WORDS[@]}" "${MVP_ARGS[0]}"
}

main "$@"
