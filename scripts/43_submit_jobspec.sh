#!/usr/bin/env bash
# 43_submit_jobspec.sh: validates a JobSpec, or a verl command line (the words
# after --, as verl's docs write them: python3 -m MODULE [--config-name NAME]
# KEY=VALUE..., any module of the code snapshot), and its overrides against the
# snapshot's verl config (the preflight), creates <shared_root>/jobs/<id>/
# (config/job_spec.json, runtime_env.json, submit_cmd.txt; logs/, checkpoints/,
# debug/) and runs `ray job submit` inside the head node with the driver forced
# onto a worker (--entrypoint-resources '{"worker_node": 1}').
#
# With a command line the JobSpec is optional (it gives what the line does
# not: resources, env_vars, retries, submission_id, code_path); the runbook
# sets where the job writes and the cluster's shape (docs/jobs.md).
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
mvp::flags::spec "[JOBSPEC]  the JobSpec to submit (YAML, templates/jobspecs/ shows its fields); optional with a command line" \
  "${MVP_SUBMIT_FLAGS[@]}" \
  "-- COMMAND...  a verl command line as verl's docs write it: python3 -m MODULE [--config-name NAME] KEY=VALUE..."

main() {
  mvp::config::init "$@"
  ((${#MVP_ARGS[@]} + ${#MVP_COMMAND[@]} >= 1)) ||
    mvp::log::die "missing JOBSPEC or a command line; usage: scripts/43_submit_jobspec.sh [JOBSPEC.yaml] [--wait] [-- python3 -m MODULE KEY=VALUE...]"
  mvp::submit::run cli "${MVP_ARGS[0]:-}" ""
}

main "$@"
