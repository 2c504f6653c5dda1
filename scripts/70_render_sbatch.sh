#!/usr/bin/env bash
# 70_render_sbatch.sh: writes, from the same settings as every runtime, an
# sbatch script for a heterogeneous Slurm job that runs one runbook script:
# component 0 (one CPU-only node) starts the Ray head, control plane only;
# component 1 (MVP_WORKERS nodes, MVP_SLURM_GPUS_PER_NODE GPUs each) the
# workers with worker_node; then SCRIPT runs on the head with MVP_RUNTIME=slurm
# (the runbook's own submit path: driver on a worker, job directory under
# SHARED_ROOT/jobs/, --wait), Ray is stopped on every node (this job's steps
# only) and the job's exit code is SCRIPT's: for a job, 0 only if it SUCCEEDED.
# Submit scripts always get --wait (the job ends with the Ray job).
#
# Then: sbatch FILE (or sbatch --wait FILE: its exit code is the job's).
# Settings: MVP_SLURM_* in config/settings.contract, MVP_WORKERS, MVP_GPUS_PER_WORKER.
# Safe to re-run: it only writes FILE (or stdout); nothing is submitted.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "SCRIPT  40, 41, 42, 43, 44 or 60 (or the file name, 43_submit_jobspec.sh)" \
  "[ARGS...]  SCRIPT's own, e.g. \`43 my.yaml --override K=V\` or \`60 --only ppo,sft\`" \
  "--out FILE  write FILE (replaced whole) instead of printing the script" \
  "--test-only  first ask Slurm (sbatch --test-only) whether it could ever run it"

# Settings the job gets as they are here: every setting of the contract,
# but those the allocation decides.
baked_settings() {
  local name
  for name in "${MVP_CONTRACT_SETTINGS[@]}"; do
    case $name in MVP_RUNTIME|MVP_CONFIG|MVP_HEAD_IP|MVP_WORKER_IPS) continue ;; esac
    printf 'export %s=%q\n' "$name" "${!name}"
  done
}

# resolve_script NAME: the file name in scripts/ of 40..44 or 60.
resolve_script() {
  local want=$1 f
  [[ $want =~ ^(4[0-4]|60)(_[a-z0-9_]+\.sh)?$ ]] ||
    mvp::log::die "SCRIPT '$want' cannot run in a Slurm job; use 40, 41, 42, 43, 44 or 60"
  for f in "$MVP_REPO"/scripts/"${BASH_REMATCH[1]}"_*.sh; do echo "${f##*/}"; return 0; done
  mvp::log::die "no script $want in scripts/"
}

sbatch_line() { printf '#SBATCH %s\n' "$1"; }

# slurm_minutes JOBS: the default --time, in minutes (MVP_JOB_TIMEOUT is
# seconds, a fraction of one counting as a whole one).
slurm_minutes() {
  local s=${MVP_JOB_TIMEOUT%.*}
  [[ $s == "$MVP_JOB_TIMEOUT" ]] || ((++s))
  echo $(((${1} * s + 59) / 60 + 15))
}

# sbatch_directives NAME JOBS OUT_DIR GPUS: the #SBATCH lines, the head's
# component, then hetjob and the workers'.
sbatch_directives() {
  local name=$1 jobs=$2 out_dir=$3 gpus=$4
  sbatch_line "--job-name=mvp-$name"
  sbatch_line "--output=\"$out_dir/%x-%j.out\""
  sbatch_line "--time=${MVP_SLURM_TIME:-$(slurm_minutes "$jobs")}"
  [[ -n $MVP_SLURM_ACCOUNT ]] && sbatch_line "--account=$MVP_SLURM_ACCOUNT"
  [[ -n $MVP_SLURM_HEAD_PARTITION ]] && sbatch_line "--partition=$MVP_SLURM_HEAD_PARTITION"
  sbatch_line "--nodes=1"
  sbatch_line "--ntasks=1"
  sbatch_line "--cpus-per-task=$MVP_SLURM_HEAD_CPUS"
  sbatch_line "hetjob"
  [[ -n $MVP_SLURM_PARTITION ]] && sbatch_line "--partition=$MVP_SLURM_PARTITION"
  sbatch_line "--nodes=$MVP_WORKERS"
  sbatch_line "--ntasks-per-node=1"
  ((gpus > 0)) && sbatch_line "--gpus-per-node=$gpus"
  [[ -n $MVP_SLURM_WORKER_CPUS ]] && sbatch_line "--cpus-per-task=$MVP_SLURM_WORKER_CPUS"
  [[ $MVP_SLURM_EXCLUSIVE == 1 ]] && sbatch_line "--exclusive"
  return 0
}

# render SCRIPT ARG...: the sbatch file that runs scripts/SCRIPT ARG... in a
# heterogeneous Slurm job, on stdout.
render() {
  local script=$1; shift
  local -a args=("$@")
  local jobs=1 name=${script%%_*} gpus=$MVP_SLURM_GPUS_PER_NODE
  if [[ $script == 60_* ]]; then
    jobs=4
  elif [[ " ${args[*]} " != *" --wait "* ]]; then
    args+=(--wait)
  fi
  local i
  # Files named on the command line are read inside the job, from another directory.
  for i in "${!args[@]}"; do
    [[ ${args[$i]} != -* && -f ${args[$i]} ]] && args[i]=$(realpath "${args[$i]}")
  done
  local out_dir
  out_dir=$(mvp::config::layout slurm)
  # Slurm does not create the --output directory.
  mkdir -p "$out_dir"

  echo "#!/usr/bin/env bash"
  echo "# Rendered by scripts/70_render_sbatch.sh at $(date -u +%FT%TZ) from $MVP_CONFIG_LOADED."
  echo "# Runs: scripts/$script${args[*]:+ ${args[*]}}"
  echo "# Submit: sbatch THIS_FILE (sbatch --wait THIS_FILE exits with the job's code)."
  echo "# Component 0: the Ray head, control plane only; component 1: $MVP_WORKERS GPU workers."
  sbatch_directives "$name" "$jobs" "$out_dir" "$gpus"
  echo "set -euo pipefail"
  echo "# The settings as they were when this file was rendered."
  baked_settings
  printf 'exec %q' "$MVP_REPO/scripts/libexec/slurm_job.sh"
  printf ' %q' "$script" "${args[@]}"
  printf '\n'
}

# test_only FILE: one line naming why Slurm would refuse the job.
test_only() {
  local file=$1 out
  if out=$(sbatch --test-only "$file" 2>&1); then
    mvp::log::info "sbatch --test-only: ${out##*sbatch: }"
    return 0
  fi
  out=$(grep -m1 -i 'error' <<<"$out" || echo "$out" | head -n 1)
  out=${out##*error: }
  mvp::log::die "Slurm would not run this job: $out (head: 1 node, $MVP_SLURM_HEAD_CPUS CPUs, partition ${MVP_SLURM_HEAD_PARTITION:-default}; workers: $MVP_WORKERS nodes x $MVP_SLURM_GPUS_PER_NODE GPUs, partition ${MVP_SLURM_PARTITION:-default}); change MVP_WORKERS, MVP_GPUS_PER_WORKER or MVP_SLURM_* and render again"
}

main() {
  mvp::config::init "$@"
  local out=${MVP_FLAG[--out]:-} check=${MVP_FLAG[--test-only]:-0}
  local -a rest=("${MVP_ARGS[@]}")
  ((${#rest[@]})) || mvp::log::die "missing SCRIPT; usage: scripts/70_render_sbatch.sh [--out FILE] SCRIPT [ARGS...]"
  local script
  script=$(resolve_script "${rest[0]}")
  local tmp
  tmp=$(mktemp "${out:-${TMPDIR:-/tmp}/mvp-sbatch}.XXXXXX")
  MVP_RENDER_TMP=$tmp
  trap 'rm -f -- "$MVP_RENDER_TMP"' EXIT
  render "$script" "${rest[@]:1}" >"$tmp"
  ((check == 0)) || test_only "$tmp"
  if [[ -n $out ]]; then
    chmod 0755 "$tmp"
    mv "$tmp" "$out"
    mvp::log::info "wrote $out: scripts/$script as a heterogeneous Slurm job; submit it with: sbatch $out"
  else
    cat "$tmp"
  fi
}

main "$@"
