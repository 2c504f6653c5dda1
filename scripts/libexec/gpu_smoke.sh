#!/usr/bin/env bash
# gpu_smoke.sh: on a host with an NVIDIA GPU, trains 2 GRPO steps of the tiny
# model with real verl 0.9.1 on that GPU and prints seconds per step and peak
# GPU memory. The cluster is one node of the local runtime: a head with 0 CPU
# and 0 GPU and one worker holding one GPU, on this host; the job is 41's,
# with MVP_TRAINER_PROFILE=gpu-smoke (templates/profiles/gpu-smoke.yaml:
# FSDP2 on CUDA, NCCL, the hf rollout; no vLLM). It has its own shared root
# and state (.mvp/gpu-smoke/) and stops its cluster when it ends, pass or
# fail. Without a GPU it refuses in one line, before anything is done.
#
# With --bundle DIR (written by `make gpu-bundle` for an air-gapped host, see
# docs/first-gpu-night.md) it first checks the parts against SHA256SUMS,
# joins split parts, installs the wheels into .venv (made with python3 and
# --system-site-packages plus python3's own site-packages, so the host's own CUDA torch is the one
# used; pip --no-index --no-deps: nothing is downloaded) and puts verl 0.9.1,
# the tiny model and the data where the smoke reads them. --install-only
# stops there (no GPU needed); --venv DIR installs into DIR instead.
#
# --report FILE prints the verdict line from FILE (verl's step metrics as
# `51_logs.sh ID --steps --json` gives them) and does nothing else.
#
# Usage: scripts/libexec/gpu_smoke.sh [--bundle DIR] [--install-only] [--venv DIR] [--steps N]
#          [--report FILE] [--help]
# Safe to re-run: an installed bundle (the same SHA256SUMS) is a SKIP.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
mvp::flags::spec --bundle=DIR --install-only --venv=DIR --steps=N --report=FILE

SMOKE_DIR=$MVP_REPO/.mvp/gpu-smoke
# The smoke's log: global, since the EXIT trap that stops the cluster runs
# after smoke() has returned (a local there was unbound: exit 1 after a PASS).
SMOKE_LOG=$SMOKE_DIR/smoke.log

# One line and exit 1 when this host has no NVIDIA GPU the driver answers for.
need_gpu() {
  command -v nvidia-smi >/dev/null ||
    mvp::log::die "no NVIDIA GPU here (nvidia-smi is not installed); make gpu-smoke needs a host with one (make demo trains on CPU)"
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  ((gpus > 0)) || mvp::log::die "no NVIDIA GPU here (nvidia-smi lists none); make gpu-smoke needs a host with one (make demo trains on CPU)"
  nvidia-smi -L | head -n 1 | sed 's/ (UUID.*//'
}

# unpack BUNDLE NAME DEST: NAME.tar.xz (or its parts, joined in order) into DEST.
unpack() {
  local bundle=$1 name=$2 dest=$3
  local -a parts=()
  if [[ -f $bundle/$name.tar.xz ]]; then
    parts=("$bundle/$name.tar.xz")
  else
    mapfile -t parts < <(find "$bundle" -maxdepth 1 -name "$name.tar.xz.[0-9][0-9]" | sort)
  fi
  ((${#parts[@]})) || mvp::log::die "$bundle has no $name.tar.xz (nor its parts $name.tar.xz.00, ...); copy the whole bundle directory"
  mkdir -p "$dest"
  cat "${parts[@]}" | xz -dc | tar -C "$dest" -xf -
}

# make_venv VENV: a venv over python3's packages, the host's torch among them.
# --system-site-packages reaches the base interpreter's only: a python3 that
# is itself a venv or a conda env (the GPU images' usual torch) keeps torch in
# its own site-packages, so a .pth file adds python3's after the venv's own
# (the bundle's wheels still come first). Without ensurepip in the base
# (Debian's python3-venv missing), the venv gets no pip of its own and uses
# python3's.
make_venv() {
  local venv=$1 site
  mvp::log::step "making $venv (python3 -m venv --system-site-packages, and python3's own site-packages: the host's torch is used)"
  python3 -m venv --system-site-packages "$venv" 2>/dev/null || python3 -m venv --without-pip --system-site-packages "$venv" ||
    mvp::log::die "python3 -m venv could not make $venv; install your distribution's python3-venv, or give --venv DIR a venv that holds torch"
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  python3 -c 'import site; print("\n".join(site.getsitepackages()))' >"$site/mvp-host-site-packages.pth"
}

# install_bundle BUNDLE VENV: the bundle's wheels into VENV, verl and the
# model and data where the smoke reads them.
install_bundle() {
  local bundle=$1 venv=$2 stamp
  [[ -f $bundle/SHA256SUMS ]] || mvp::log::die "$bundle has no SHA256SUMS; it is not a bundle of make gpu-bundle (or not all of it was copied)"
  stamp=$(sha256sum <"$bundle/SHA256SUMS" | cut -c1-16)
  if [[ -f $venv/.mvp-bundle && $(<"$venv/.mvp-bundle") == "$stamp" ]]; then
    mvp::log::skip "installing the bundle (installed in $venv)"
    return 0
  fi
  (cd "$bundle" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1) ||
    mvp::log::die "a part of $bundle does not match its SHA256SUMS (a copy cut short?); copy the bundle again"
  local work=$SMOKE_DIR/bundle
  rm -rf "$work"
  mvp::log::step "unpacking $bundle"
  unpack "$bundle" wheels "$work"
  unpack "$bundle" verl-0.9.1 "$work"
  unpack "$bundle" model-data "$work"
  [[ -x $venv/bin/python ]] || make_venv "$venv"
  mvp::log::step "installing $(find "$work/wheels" -name '*.whl' | wc -l) wheels into $venv (pip --no-index --no-deps)"
  "$venv/bin/python" -m pip install -q --no-index --no-deps "$work"/wheels/*.whl ||
    mvp::log::die "pip could not install the bundle's wheels into $venv; was the bundle made for this Python ($("$venv/bin/python" -V 2>&1))? make gpu-bundle PYTHON_VERSION=X.Y"
  mkdir -p "$MVP_REPO/.mvp/cache" "$SMOKE_DIR/shared"
  rm -rf "$MVP_REPO/.mvp/cache/verl-0.9.1"
  mv "$work/verl-0.9.1" "$MVP_REPO/.mvp/cache/verl-0.9.1"
  cp -a "$work/shared/." "$SMOKE_DIR/shared/"
  rm -rf "$work"
  echo "$stamp" >"$venv/.mvp-bundle"
}

# The smoke's settings: the local runtime, one worker with one GPU, the
# gpu-smoke profile, the tiny model, its own shared root and state.
SMOKE_ENV=(MVP_CONFIG="$MVP_REPO/tests/fixtures/empty.env" MVP_RUNTIME=local MVP_WORKERS=1 MVP_GPUS_PER_WORKER=1
  MVP_TRAINER_PROFILE=gpu-smoke MVP_MODEL_SOURCE=tiny MVP_MODEL_ID=mvp-tiny/qwen2 MVP_GSM8K_SOURCE=synthetic
  MVP_VERL_SRC=.mvp/cache/verl-0.9.1 CODE_ID=verl-0.9.1 SHARED_ROOT="$SMOKE_DIR/shared"
  MVP_STATE_DIR="$SMOKE_DIR/state" MVP_CLUSTER_NAME=gpu-smoke)

smoke_run() { env "${SMOKE_ENV[@]}" "$MVP_REPO/scripts/$1.sh" "${@:2}"; }

# timed LOG STEP ARGS...: runs a numbered script of the smoke, its log lines
# to LOG; prints its seconds.
timed() {
  local log=$1 start=$SECONDS
  shift
  smoke_run "$@" >>"$log.out" 2>>"$log" || { tail -n 5 "$log" >&2; mvp::log::die "$1 failed during the GPU smoke; its log: $log"; }
  echo $((SECONDS - start))
}

# report STEPS_JSON GPU BRINGUP JOB: the smoke's one-line verdict.
report() {
  local json=$1 gpu=$2 bringup=$3 job=$4
  jq -r --arg gpu "$gpu" --arg up "$bringup" --arg job "$job" '
    def num: if type == "number" then . else empty end;
    def peak(k): [.[] | to_entries[] | select(.key | endswith(k)) | .value | num] | max;
    ([.[] | .["timing_s/step"] | num]) as $t
    | "GPU SMOKE PASS: \(length) GRPO steps of mvp-tiny/qwen2 on \($gpu): "
      + "\(if ($t | length) > 0 then ($t | add / length * 100 | round / 100) else "?" end) s/step "
      + "(steps: \($t | map(. * 100 | round / 100) | join(", ")) s), "
      + "peak GPU memory \(peak("max_memory_allocated_gb") // "?" | if type == "number" then (. * 100 | round / 100) else . end) GiB allocated, "
      + "\(peak("max_memory_reserved_gb") // "?" | if type == "number" then (. * 100 | round / 100) else . end) GiB reserved by torch; "
      + "bring-up \($up) s, job \($job) s"' <<<"$json"
}

smoke() {
  local gpu=$1 steps=$2 log=$SMOKE_LOG up=0 s t
  mkdir -p "$SMOKE_DIR/shared/user/code"
  : >"$log"
  trap 'smoke_run 02_down >>"$SMOKE_LOG" 2>&1 || true' EXIT
  mvp::log::step "GPU smoke on $gpu: the cluster (00, 01, 20, 21 of the local runtime), the log in $log"
  for s in "${MVP_BRINGUP_STEPS[@]}" 30_prepare_data_and_model 31_snapshot_verl_code; do
    t=$(timed "$log" "$s")
    mvp::log::info "$s: ${t} s"
    up=$((up + t))
  done
  cp "$MVP_REPO/templates/rewards/shaped_gsm8k.py" "$SMOKE_DIR/shared/user/code/"
  mvp::log::step "41 --wait: $steps GRPO steps on the GPU"
  local start=$SECONDS id out rc=0
  local -A answer=()
  out=$(smoke_run 41_submit_grpo_epoch1 --porcelain --wait --reward-fn user/code/shaped_gsm8k.py \
    --override "trainer.total_training_steps=$steps" 2>>"$log") || rc=$?
  mvp::kv::read answer <<<"$out" || mvp::log::die "41's answer: $MVP_KV_ERROR; the log: $log"
  id=${answer[submission_id]:-}
  ((rc == 0)) ||
    { tail -n 5 "$log" >&2; mvp::log::die "the smoke's job ${id:-(not submitted)} did not succeed (exit $rc); its directory: $SMOKE_DIR/shared/jobs/$id, the log: $log"; }
  local job=$((SECONDS - start)) json
  json=$(smoke_run 51_logs "$id" --steps --json 2>>"$log")
  [[ $(jq length <<<"$json") -ge 1 ]] || mvp::log::die "job $id succeeded but its log has no verl step line; see $SMOKE_DIR/shared/jobs/$id/logs"
  report "$json" "$gpu" "$up" "$job"
}

main() {
  mvp::flags::parse "$@"
  local steps=${MVP_FLAG[--steps]:-2} venv=${MVP_FLAG[--venv]:-$MVP_REPO/.venv} gpu=""
  [[ $steps =~ ^[1-9][0-9]?$ ]] || mvp::log::die "--steps '$steps' must be a whole number from 1 to 99"
  if [[ -n ${MVP_FLAG[--report]:-} ]]; then
    local json=""
    [[ ! -r ${MVP_FLAG[--report]} ]] || json=$(<"${MVP_FLAG[--report]}")
    jq -e 'type == "array" and length > 0' <<<"$json" >/dev/null 2>&1 ||
      mvp::log::die "--report ${MVP_FLAG[--report]}: not the JSON of 51_logs.sh ID --steps --json (a list of steps)"
    report "$json" "(the GPU of that job)" "?" "?"
    return 0
  fi
  [[ -n ${MVP_FLAG[--install-only]:-} ]] || gpu=$(need_gpu) || exit 1  # its one ERROR line said why
  if [[ -n ${MVP_FLAG[--bundle]:-} ]]; then
    install_bundle "${MVP_FLAG[--bundle]}" "$venv"
  fi
  [[ -z ${MVP_FLAG[--install-only]:-} ]] || return 0
  "$venv/bin/python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    mvp::log::die "torch in $venv sees no CUDA GPU (a CPU build, or a driver it does not match); install the CUDA build of torch there, or give --bundle a bundle and run with the host's torch"
  [[ -f $MVP_REPO/.mvp/cache/verl-0.9.1/verl/__init__.py ]] ||
    mvp::log::die "no verl 0.9.1 tree at .mvp/cache/verl-0.9.1; run make setup, or make gpu-smoke BUNDLE=DIR with a bundle"
  smoke "$gpu" "$steps"
}

main "$@"
