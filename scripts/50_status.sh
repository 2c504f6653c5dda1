#!/usr/bin/env bash
# 50_status.sh: the cluster's nodes (head must have CPU 0 and GPU 0; workers
# their GPUs and worker_node), recent jobs with status and driver node (from
# Ray and from the job archive, so history survives a restart) and the shared
# root's usage. Jobs that ended since the last look are archived on the way.
# While the cluster does not answer (its head or GCS gone), the jobs come from
# the shared root alone, each with its last known state (RUNNING? as of the
# newest log its nodes kept, SUBMITTED?), and the exit code is 1.
#
# Exit code: 0 when the cluster is up and shaped as configured, 1 otherwise.
#
# With a SUBMISSION_ID, that job's status alone, in `ray job status ID`'s
# words (Job 'ID' succeeded / failed / was stopped, Status for job 'ID':
# RUNNING, then Status message:), from one HTTP call to the dashboard; a job
# Ray no longer knows answers from its archive (result.json), with the
# cluster down from its last known state (exit 1, as above). Exit 0 with its
# status, whatever it is; an id neither Ray nor the archive knows is one
# ERROR line, exit 1.
# Read-only but for archiving ended jobs; one Python process, HTTP to the dashboard.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "[SUBMISSION_ID]  only that job's status, as ray job status ID answers it" \
  "--json  the same report as JSON, for programs" \
  "--porcelain  with SUBMISSION_ID: key=value lines (submission_id, status, source, message, ...) for programs"

main() {
  MVP_QUIET_CONFIG=1 mvp::config::init "$@"
  [[ -x $MVP_HOST_PYTHON ]] || command -v "$MVP_HOST_PYTHON" >/dev/null ||
    mvp::log::die "$MVP_HOST_PYTHON is missing; run scripts/12_install_py_deps.sh (or make setup)"
  [[ -n ${MVP_ARGS[0]:-} || -z ${MVP_FLAG[--porcelain]:-} ]] ||
    mvp::log::die "--porcelain answers for one job: give its SUBMISSION_ID (the cluster's report for programs is --json)"
  mvp::helper::run status "${MVP_FLAG_WORDS[@]}" ${MVP_ARGS[@]+"${MVP_ARGS[@]}"}
}

main "$@"
