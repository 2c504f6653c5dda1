#!/usr/bin/env bash
# What the sbatch script of scripts/70_render_sbatch.sh runs on the head node
# of its heterogeneous job: starts Ray on every node of the job (the head,
# control plane only, on component 0; the GPU workers on component 1), runs
# one runbook script there with MVP_RUNTIME=slurm (a submit script with --wait,
# or the nightly), stops this job's Ray, and exits with that script's code:
# for a job, 0 only when it SUCCEEDED.
#
# Usage (inside the job): scripts/libexec/slurm_job.sh SCRIPT [ARGS...]
#   SCRIPT  a file name in scripts/, e.g. 43_submit_jobspec.sh
set -Eeuo pipefail
export MVP_RUNTIME=slurm
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

# start_ray: the head on component 0, then every worker on
# component 1, each a `ray start --block` step started in the background
# (mvp::rt::ray_step: a second step when a raylet missed Ray's 30 s);
# returns when every node registered with the head.
start_ray() {
  local i node
  local log_dir
  log_dir=$(mvp::config::layout slurm)/$SLURM_JOB_ID
  mkdir -p "$log_dir"
  mvp::ray::auth_token
  local -a auth=()
  mapfile -d '' auth < <(mvp::ray::auth_env)
  for i in "${!MVP_NODES[@]}"; do
    node=${MVP_NODES[$i]}
    mvp::ray::start_args "$i"
    local -a step_env=(env -u PYTHONPATH "PATH=$MVP_VENV/bin:$PATH" "${auth[@]}")
    if ((i > 0)); then
      [[ -n $MVP_SLURM_NCCL_IFNAME ]] && step_env+=("NCCL_SOCKET_IFNAME=$MVP_SLURM_NCCL_IFNAME")
      local gloo=$MVP_SLURM_GLOO_IFNAME
      [[ -n $gloo ]] && step_env+=("GLOO_SOCKET_IFNAME=$gloo")
    fi
    mvp::log::step "starting Ray on $node ($(mvp::ray::node_ip "$i"), component $(mvp::rt::het_group "$node")); log $log_dir/ray-$node.log"
    : >"$log_dir/ray-$node.log"
    mvp::rt::ray_step "$log_dir/ray-$node.log" srun --overlap --quiet --het-group="$(mvp::rt::het_group "$node")" \
      --nodes=1 --ntasks=1 --nodelist="$node" --chdir=/ --kill-on-bad-exit=1 "${step_env[@]}" "${MVP_RAY_ARGS[@]}" --block &
    MVP_SLURM_RAY_STEPS+=($!)
    if ((i == 0)); then
      mvp::helper::run cluster-wait --head || mvp::log::die "the Ray head did not start on $node; see $log_dir/ray-$node.log"
    fi
  done
  mvp::helper::run cluster-wait || mvp::log::die "not every Ray worker registered; see $log_dir/ray-*.log"
}

main() {
  case ${1:-} in
    -h|--help) mvp::flags::usage; return 0 ;;
    "") mvp::flags::usage >&2; return 2 ;;
  esac
  local script=$MVP_REPO/scripts/$1; shift
  [[ -x $script ]] || mvp::log::die "no runbook script $script"
  # No flags of our own: SCRIPT's arguments are left for SCRIPT.
  # shellcheck disable=SC2119  # deliberately no arguments
  mvp::config::init
  mvp::rt::in_job || mvp::log::die "not inside a heterogeneous Slurm job; submit the script of scripts/70_render_sbatch.sh with sbatch"
  mvp::log::info "Slurm job $SLURM_JOB_ID: head $MVP_HEAD_NODE ($MVP_HEAD_IP), workers ${MVP_NODES[*]:1} (${MVP_WORKER_IPS})"
  trap 'mvp::rt::down' EXIT
  start_ray
  local rc=0
  "$script" "$@" || rc=$?
  mvp::log::info "${script##*/} exited $rc"
  mvp::rt::down
  trap - EXIT
  # exit, not return: a failing return would fire the ERR trap's report.
  exit "$rc"
}

main "$@"
