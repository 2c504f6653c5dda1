#!/usr/bin/env bash
# Real verl through the runbook against the same job submitted raw: one GRPO
# job of the CPU profile (real verl 0.9.1 on CPU-only nodes, the tiny model,
# the shaped reward) through 41_submit_grpo_epoch1.sh, and the same entrypoint
# as verl's docs submit it: `ray job submit --runtime-env-json ... -- python3
# -m verl.trainer.main_ppo <the same overrides>`, from the head, on the same
# cluster, in alternating rounds. Measured per job, from the moment the
# submitting command starts: the time to verl's first step line in the
# driver's log (polled over the dashboard's HTTP API every 0.5 s) and the
# time until Ray reports the job ended. Goal: the runbook <= 1.05x raw.
# (The raw job gets the runbook's entrypoint resource too, so both drivers run
# on a worker and the comparison is of the same work.)
#
# Usage: bench/real_verl.sh [ROUNDS]   (default 3; each round is two ~1-2 min jobs).
# Starts and stops its own cluster.
set -Eeuo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds=${1:-3}
export MVP_TRAINER_PROFILE=cpu MVP_GPUS_PER_WORKER=1 MVP_JOB_TIMEOUT=900
bench::cluster_env
export MVP_VERL_SRC=.mvp/cache/verl-0.9.1 MVP_MODEL_SOURCE=tiny MVP_MODEL_ID=mvp-tiny/qwen2

for s in "${MVP_BRINGUP_STEPS[@]}" 30_prepare_data_and_model; do
  "$BENCH_REPO/scripts/$s.sh" >/dev/null 2>&1
done
CODE_ID=verl-0.9.1 "$BENCH_REPO/scripts/31_snapshot_verl_code.sh" >/dev/null 2>&1
mkdir -p "$SHARED_ROOT/user/code"
cp "$BENCH_REPO/templates/rewards/shaped_gsm8k.py" "$SHARED_ROOT/user/code/"
runbook_args=(--reward-fn user/code/shaped_gsm8k.py)

status_of() { curl -fsS "$MVP_HOST_DASHBOARD_URL/api/jobs/$1" | jq -r .status; }

# watch_job T0 ID: "FIRST_STEP_MS TOTAL_MS" of job ID, both from T0 (ms).
watch_job() {
  local t0=$1 id=$2 first="" status
  while :; do
    if [[ -z $first ]] && curl -fsS "$MVP_HOST_DASHBOARD_URL/api/jobs/$id/logs" | jq -r .logs | grep -qE 'step:1 - '; then
      first=$(($(bench::now) - t0))
    fi
    status=$(status_of "$id")
    [[ $status =~ ^(SUCCEEDED|FAILED|STOPPED)$ ]] && break
    sleep 0.5
  done
  [[ $status == SUCCEEDED && -n $first ]] || { echo "bench: job $id ended $status (first step: ${first:-never})" >&2; return 1; }
  echo "$first $(($(bench::now) - t0))"
}

# The runbook's job, once first, untimed: its resolved overrides and
# runtime_env are what the raw submissions send.
REF=$("$BENCH_REPO/scripts/41_submit_grpo_epoch1.sh" --wait "${runbook_args[@]}" 2>"$BENCH_WORK/ref.err" | tail -n 1) ||
  { tail -n 5 "$BENCH_WORK/ref.err" >&2; exit 1; }
mapfile -t raw_overrides < <(jq -r '.resolved.trainer_overrides | to_entries[]
  | select(.key != "trainer.default_local_dir" and .key != "hydra.run.dir" and .key != "trainer.experiment_name")
  | "\(.key)=\(.value)"' "$SHARED_ROOT/jobs/$REF/config/job_spec.json")
raw_env=$(jq -c . "$SHARED_ROOT/jobs/$REF/config/runtime_env.json")

raw_submit() {
  local id=$1 out=$BENCH_WORK/raw/$1
  mvp::rt::exec "$MVP_HEAD_NODE" ray job submit --address "$MVP_DASHBOARD_URL" --submission-id "$id" \
    --entrypoint-num-cpus 1 --entrypoint-resources '{"worker_node": 1}' --runtime-env-json "$raw_env" --no-wait \
    -- python3 -m verl.trainer.main_ppo "${raw_overrides[@]}" "trainer.default_local_dir=$out/checkpoints" \
    "hydra.run.dir=$out/hydra" "trainer.experiment_name=$id"
}

runbook=() raw=() runbook_first=() raw_first=()
for ((r = 1; r <= rounds; r++)); do
  t0=$(bench::now)
  id=$("$BENCH_REPO/scripts/41_submit_grpo_epoch1.sh" "${runbook_args[@]}" 2>/dev/null | tail -n 1)
  read -r f t < <(watch_job "$t0" "$id")
  runbook_first+=("$f") runbook+=("$t")
  t0=$(bench::now)
  id=raw-$r-$RANDOM
  raw_submit "$id" >/dev/null 2>&1
  read -r f t < <(watch_job "$t0" "$id")
  raw_first+=("$f") raw+=("$t")
  echo "round $r: 41 first step ${runbook_first[-1]} ms, done ${runbook[-1]} ms; raw first step ${raw_first[-1]} ms, done ${raw[-1]} ms" >&2
done
rf=$(bench::median "${runbook_first[@]}") xf=$(bench::median "${raw_first[@]}")
rt=$(bench::median "${runbook[@]}") xt=$(bench::median "${raw[@]}")
echo "real verl GRPO (CPU profile), median of $rounds alternating rounds: time to first step 41 ${rf} ms vs raw ${xf} ms = $(bench::ratio "$rf" "$xf")x; until ended 41 ${rt} ms vs raw ${xt} ms = $(bench::ratio "$rt" "$xt")x (goal <= 1.05x)"
bench::row "41 real verl GRPO, submit to ended" 1.05 "$(bench::pair_ratio runbook raw)" "vs the same overrides through a raw ray job submit, $rounds alternating rounds"
