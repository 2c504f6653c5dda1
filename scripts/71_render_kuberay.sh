#!/usr/bin/env bash
# 71_render_kuberay.sh: writes KubeRay resources from the same settings as
# every runtime: the RayCluster (head control plane only, num-cpus "0"; a GPU
# worker group with worker_node; the shared ReadWriteMany claim at /private;
# token auth when MVP_K8S_AUTH=1), a RayJob for one JobSpec, or the nightly:
# that RayCluster and a Kubernetes CronJob (batch/v1, MVP_K8S_SCHEDULE) whose
# pod runs 60_nightly_regression.sh against it (runtime kuberay), one night's
# jobs one after another on the one cluster. A RayJob's submitter pod and the
# nightly's pod run the runbook's own submit path, so /private/jobs/<id>/ is
# laid out as on every other runtime. Every file starts with the claim, so
# `kubectl apply -f FILE` creates it before any pod that mounts it.
#
# Then: kubectl apply -f FILE. The pods' image: scripts/72_build_image.sh. A JobSpec is validated against SHARED_ROOT here
# (its code snapshot, data and model must exist), as 43 does before submitting.
# Settings: MVP_K8S_* and MVP_KUBERAY_VERSION (the operator's release: what it
# cannot honour is refused) in config/settings.contract, MVP_WORKERS, MVP_GPUS_PER_WORKER.
# Safe to re-run: it writes only FILE (or stdout); each `job` gets a new id.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "cluster|job|nightly  what to write: the RayCluster, a RayJob for JOBSPEC, or the nightly's CronJob" \
  "[JOBSPEC]  with job: the JobSpec (YAML)" \
  "--override KEY=VALUE  with job: one more trainer override (repeatable)" \
  "--out FILE  write FILE (replaced whole) instead of stdout"

main() {
  mvp::config::init "$@"
  local out=${MVP_FLAG[--out]:-} what=${MVP_ARGS[0]:-} spec=${MVP_ARGS[1]:-} i
  local -a args=()
  # The overrides go on to the renderer, in order (--out is this script's;
  # every flag here takes a value, so the words are pairs).
  for ((i = 0; i < ${#MVP_FLAG_WORDS[@]}; i += 2)); do
    if [[ ${MVP_FLAG_WORDS[i]} == --override ]]; then args+=(--override "${MVP_FLAG_WORDS[i + 1]}"); fi
  done
  case $what in
    cluster|nightly) [[ -z $spec ]] || mvp::log::die "'$what' takes no JOBSPEC" ;;
    job)
      [[ -n $spec ]] || mvp::log::die "missing JOBSPEC; usage: scripts/71_render_kuberay.sh job JOBSPEC.yaml"
      [[ -f $spec && -r $spec ]] || mvp::log::die "$spec does not exist or is not readable"
      args+=(--jobspec-name "$spec") ;;
    "") mvp::log::die "missing what to render; use cluster, job JOBSPEC or nightly" ;;
    *) mvp::log::die "'$what' is not something to render; use cluster, job JOBSPEC or nightly" ;;
  esac
  args+=(--ray-config-text "$(<"$MVP_REPO/templates/configs/dev.yaml")")
  # The renderer reads its settings as every helper command does: those the
  # contract marks `helper` (the MVP_K8S_* ones, MVP_K8S_POD_SETTINGS' list,
  # every MVP_NIGHTLY_*), passed by mvp::helper::run.
  local tmp
  tmp=$(mktemp "${out:-${TMPDIR:-/tmp}/mvp-kuberay}.XXXXXX")
  MVP_RENDER_TMP=$tmp
  trap 'rm -f -- "$MVP_RENDER_TMP"' EXIT
  # The helper has said what is wrong, in one line.
  # A JobSpec goes on stdin, as to 43: never on argv (size limit, ps).
  mvp::helper::run render-kuberay "$what" "${args[@]}" <"${spec:-/dev/null}" >"$tmp" || exit 1
  if [[ -n $out ]]; then
    mv "$tmp" "$out"
    mvp::log::info "wrote $out; apply it with: kubectl apply -f $out"
  else
    cat "$tmp"
  fi
}

main "$@"
