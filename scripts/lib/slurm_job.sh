#!/usr/bin/env bash
# What the sbatch script of scripts/70_render_sbatch.sh runs on the head node
# of its heterogeneous job: starts Ray on every node of the job (the head,
# control plane only, on component 0; the GPU workers on component 1), runs
# one runbook script there with MVP_RUNTIME=slurm (a submit script with --wait,
# or the nightly), stops this job's Ray, and exits with that script's code:
# for a job, 0 only when it SUCCEEDED.
#
# Usage (inside the job): scripts/lib/slurm_job.sh SCRIPT [ARGS...]
#   SCRIPT  a file name in scripts/, e.g. 43_submit_jobspec.sh
set -Eeuo pipefail
export MVP_RUNTIME=slurm
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

main() {
  case ${1:-} in
    -h|--help) mvp::usage; return 0 ;;
    "") mvp::usage >&2; return 2 ;;
  esac
  local script=$MVP_REPO/scripts/$1; shift
  [[ -x $script ]] || mvp::die "no runbook script $script"
  # No flags of our own: SCRIPT's arguments are left for SCRIPT.
  # shellcheck disable=SC2119  # deliberately no arguments
  mvp::init
  mvp::slurm::in_job || mvp::die "not inside a heterogeneous Slurm job; submit the script of scripts/70_render_sbatch.sh with sbatch"
  mvp::info "Slurm job $SLURM_JOB_ID: head $MVP_HEAD_NODE ($MVP_HEAD_IP), workers ${MVP_NODES[*]:1} (${MVP_WORKER_IPS})"
  trap 'mvp::rt::down' EXIT
  mvp::slurm::start_ray
  local rc=0
  "$script" "$@" || rc=$?
  mvp::info "${script##*/} exited $rc"
  mvp::rt::down
  trap - EXIT
  # exit, not return: a failing return would fire the ERR trap's report.
  exit "$rc"
}

main "$@"
