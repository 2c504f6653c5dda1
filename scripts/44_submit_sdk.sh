#!/usr/bin/env bash
# 44_submit_sdk.sh: the same submission as 43_submit_jobspec.sh through Ray's
# Python SDK (JobSubmissionClient) in one process, from the head node, with a
# Ray base config (address, entrypoint resources, runtime_env defaults).
#
# Before anything is written: the overrides are checked against the snapshot's
# verl config (the preflight), and the GPUs the job needs must be free.
# Prints the submission id as the last line on stdout (--porcelain: as a
# submission_id=ID line, key=value for programs). Never overwrites a job.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "RAY_CONFIG  a Ray base config (YAML: address, entrypoint resources, runtime_env defaults)" \
  "JOBSPEC  the JobSpec to submit (YAML)" "${MVP_SUBMIT_FLAGS[@]}"

main() {
  mvp::config::init "$@"
  ((${#MVP_ARGS[@]} >= 2)) || mvp::log::die "missing arguments; usage: scripts/44_submit_sdk.sh RAY_CONFIG.yaml JOBSPEC.yaml [--wait]"
  local cfg=${MVP_ARGS[0]} spec=${MVP_ARGS[1]}
  MVP_ARGS=("${MVP_ARGS[@]:2}")
  mvp::submit::run sdk "$spec" "$cfg"
}

main "$@"
