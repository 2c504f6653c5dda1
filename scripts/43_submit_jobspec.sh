#!/usr/bin/env bash
# 43_submit_jobspec.sh: validates a JobSpec and its overrides against the snapshot's
# verl config (the preflight), creates <shared_root>/jobs/<id>/
# (config/job_spec.json, runtime_env.json, submit_cmd.txt; logs/, checkpoints/,
# debug/) and runs `ray job submit` inside the head node with the driver forced
# onto a worker (--entrypoint-resources '{"worker_node": 1}').
#
# Usage: scripts/43_submit_jobspec.sh JOBSPEC.yaml [--wait] [--queue] [--override KEY=VALUE]...
#                                     [--dry-run] [--help]
#   --wait      wait for the job (at most MVP_JOB_TIMEOUT s); exit 0 only if it SUCCEEDED
#   --queue     GPUs held by other jobs: wait for them (at most MVP_JOB_TIMEOUT s), not refuse
#   --retry N   with --wait: a job that ends FAILED or LOST goes on from its chain's newest
#               checkpoint in a new job, at most N times, until one makes no progress
#   --dry-run   validate and print the job_spec.json and command; submit nothing
# Prints the submission id as the last line on stdout (--porcelain: as a
# submission_id=ID line, key=value for programs).
# Never overwrites: an id that exists (in Ray or as a directory) is refused.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags (mvp::flags::parse).
mvp::flags::spec JOBSPEC "${MVP_SUBMIT_FLAGS[@]}"

main() {
  mvp::config::init "$@"
  ((${#MVP_ARGS[@]} >= 1)) || mvp::log::die "missing JOBSPEC; usage: scripts/43_submit_jobspec.sh JOBSPEC.yaml [--wait]"
  local spec=${MVP_ARGS[0]}
  MVP_ARGS=("${MVP_ARGS[@]:1}")
  mvp::submit::run cli "$spec" ""
}

main "$@"
