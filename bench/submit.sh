#!/usr/bin/env bash
# Submission cost: 43_submit_jobspec.sh (ray job submit inside the head, with
# validation, the job directory and a debug bundle) and 44_submit_sdk.sh
# (JobSubmissionClient) against a bare `ray job submit --no-wait` of the same
# entrypoint and runtime_env from the head, measured alternately. Each job is
# left to finish, and the cluster a second to settle (untimed), before the next
# submission, so all of them see the same quiet cluster. Targets:
# 40 and 43 <= 1.1x bare, 43 with a private variable <= 1.25x, 44 <= 1.0x. Also reported: the preflight's share of 43 (the
# overrides checked against the snapshot's verl config; budget 0.3 s), read
# from 43's own log line, and 43 with a private (secret-named) variable, which
# adds the GCS store (Ray's GCS client import, a put, the sweep of ended jobs),
# and the admission step's share of 43 (lock, GPU view, claim; target 0.1 s),
# read from 43's "admitted: ... (N ms)" line.
#
# Usage: bench/submit.sh [ROUNDS]   (default 9). Starts and stops its own cluster.
set -Eeuo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds=${1:-9}
bench::cluster_env

bench::standin_cluster
spec=$BENCH_WORK/spec.yaml
sed -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" -e 's|^  data.train_batch_size: 256|  data.train_batch_size: 4096|' \
  "$BENCH_REPO/templates/jobspecs/ppo.yaml" >"$spec"
secret_spec=$BENCH_WORK/spec-secret.yaml
sed 's/^env_vars: {}/env_vars: {BENCH_API_TOKEN: bench-value}/' "$spec" >"$secret_spec"

wait_done() {
  local id=$1 i
  for ((i = 0; i < 600; i++)); do
    if [[ $(curl -fsS "$MVP_HOST_DASHBOARD_URL/api/jobs/$id" | jq -r .status) =~ ^(SUCCEEDED|FAILED|STOPPED)$ ]]; then
      sleep 1
      return 0
    fi
    sleep 0.2
  done
  return 1
}

# The bare call: the same entrypoint and runtime_env as a runbook job, for a
# job directory that does not exist (its driver exits at once).
bare_submit() {
  local id=$1 env_json
  env_json=$(jq -c . "$SHARED_ROOT/jobs/$REF/config/runtime_env.json")
  mvp::rt::exec "$MVP_HEAD_NODE" ray job submit --address "$MVP_DASHBOARD_URL" --submission-id "$id" \
    --entrypoint-num-cpus 1 --entrypoint-resources '{"worker_node": 1}' --runtime-env-json "$env_json" --no-wait \
    -- python3 "$BENCH_REPO/helpers/mvp/worker/launch.py" "$SHARED_ROOT/jobs/$id"
}

REF=$("$BENCH_REPO/scripts/43_submit_jobspec.sh" "$spec" --wait 2>/dev/null | tail -n 1)
bare=() cli=() sdk=() pre=() sec=() adm=() tpl=()
for ((r = 1; r <= rounds; r++)); do
  id=bare-$r-$RANDOM
  bench::time bare bare_submit "$id" && wait_done "$id"
  t0=$(bench::now); id=$("$BENCH_REPO/scripts/43_submit_jobspec.sh" "$spec" 2>"$BENCH_WORK/43.err" | tail -n 1); cli+=($(($(bench::now) - t0)))
  pre+=("$(sed -nE 's/.*preflight: .*accepts every override \(cached keys, ([0-9]+) ms\).*/\1/p' "$BENCH_WORK/43.err")")
  [[ -n ${pre[-1]} ]] || { echo "bench: 43 logged no cached preflight" >&2; cat "$BENCH_WORK/43.err" >&2; exit 1; }
  adm+=("$(sed -nE 's/.* admitted: .* \(([0-9]+) ms\)$/\1/p' "$BENCH_WORK/43.err")")
  [[ -n ${adm[-1]} ]] || { echo "bench: 43 logged no admission" >&2; cat "$BENCH_WORK/43.err" >&2; exit 1; }
  wait_done "$id"
  t0=$(bench::now); id=$("$BENCH_REPO/scripts/44_submit_sdk.sh" "$BENCH_REPO/templates/configs/dev.yaml" "$spec" 2>/dev/null | tail -n 1); sdk+=($(($(bench::now) - t0)))
  wait_done "$id"
  t0=$(bench::now); id=$("$BENCH_REPO/scripts/43_submit_jobspec.sh" "$secret_spec" 2>/dev/null | tail -n 1); sec+=($(($(bench::now) - t0)))
  wait_done "$id"
  t0=$(bench::now); id=$("$BENCH_REPO/scripts/40_submit_ppo_epoch1.sh" --override data.train_batch_size=4096 2>"$BENCH_WORK/40.err" | tail -n 1); tpl+=($(($(bench::now) - t0)))
  wait_done "$id"
  # 40's own shares, as 43's: where a template's submission spends what 43's does not.
  tpre=$(sed -nE 's/.*preflight: .*accepts every override \((.*), ([0-9]+) ms\).*/\2 ms, \1/p' "$BENCH_WORK/40.err")
  tadm=$(sed -nE 's/.* admitted: .* \(([0-9]+) ms\)$/\1/p' "$BENCH_WORK/40.err")
  echo "round $r: bare ${bare[-1]} ms, 43 ${cli[-1]} ms (preflight ${pre[-1]} ms, admission ${adm[-1]} ms), 44 ${sdk[-1]} ms, 43 with a secret ${sec[-1]} ms, 40 ${tpl[-1]} ms (preflight ${tpre:-none logged}, admission ${tadm:-none logged} ms)" >&2
done
b=$(bench::median "${bare[@]}") c=$(bench::median "${cli[@]}") s=$(bench::median "${sdk[@]}") p=$(bench::median "${pre[@]}")
k=$(bench::median "${sec[@]}") a=$(bench::median "${adm[@]}") t=$(bench::median "${tpl[@]}")
rc=$(bench::pair_ratio cli bare) rs=$(bench::pair_ratio sdk bare) rk=$(bench::pair_ratio sec bare) rt=$(bench::pair_ratio tpl bare)
echo "submit, median of $rounds (ratios: median of the rounds' ratios): bare ray job submit ${b} ms; 43 (cli) ${c} ms = ${rc}x;" \
  "44 (sdk) ${s} ms = ${rs}x; 40 (template) ${t} ms = ${rt}x; preflight in 43 ${p} ms = $(bench::ratio "$p" "$b")x bare (budget 300 ms);" \
  "admission in 43 ${a} ms = $(bench::ratio "$a" "$b")x bare (target 100 ms); 43 with a secret ${k} ms = ${rk}x"
how="vs a bare ray job submit --no-wait of the same entrypoint and runtime_env, $rounds alternating rounds"
bench::row "43_submit_jobspec.sh (CLI)" 1.1 "$rc" "$how"
bench::row "40_submit_ppo_epoch1.sh (CLI, template)" 1.1 "$rt" "$how"
bench::row "43 with a private env var" 1.25 "$rk" "$how"
bench::row "44_submit_sdk.sh (SDK)" 1.0 "$rs" "$how"
