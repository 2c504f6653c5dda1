#!/usr/bin/env bash
# 43_submit_jobspec.sh: validates a JobSpec and its overrides against the snapshot's
# verl config (the preflight), creates <shared_root>/jobs/<id>/
# (config/job_spec.json, runtime_env.json, submit_cmd.txt; logs/, checkpoints/,
# debug/) and runs `ray job submit` inside the head node with the driver forced
# onto a worker (--entrypoint-resources '{"worker_node": 1}').
#
# --dry-run validates and preflights, prints the job_spec.json and command
# and submits nothing.
# Prints the submission id as the last line on stdout (--porcelain: as a
# submission_id=ID line, key=value for programs).
# Never overwrites: an id that exists (in Ray or as a directory) is refused.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "JOBSPEC  the JobSpec to submit (YAML, templates/jobspecs/ shows its fields)" "${MVP_SUBMIT_FLAGS[@]}"

main() {
  mvp::config::init "$@"
  ((${#MVP_ARGS[@]} >= 1)) || mvp::log::die "missing JOBSPEC; usage: scripts/43_submit_jobspec.sh JOBSPEC.yaml [--wait]"
  local spec=${MVP_ARGS[0]}
  MVP_ARGS=("${MVP_ARGS[@]:1}")
  mvp::submit::run cli "$spec" ""
}

main "$@"
