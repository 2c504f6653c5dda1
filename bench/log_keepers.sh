#!/usr/bin/env bash
# What keeping a job's logs while it runs costs: the same
# short stand-in job, 43 --wait from submission to its archived result, with
# the keepers at the default interval (MVP_LOG_SYNC_SECONDS=30: the driver
# log's copier, the dispatcher's Ray connection, one 0-CPU actor per node)
# against MVP_LOG_SYNC_SECONDS=0 (no keeper at all), in alternating rounds.
# A short job shows the fixed cost at its largest: the dispatcher's ray.init
# and each node's actor are Python start-ups on the same 2 cores as the job.
# Goal: <= 1.1x (the keepers cost at most a tenth of a short job's time).
#
# Usage: bench/log_keepers.sh [ROUNDS]   (default 7). Starts and stops its own cluster.
set -Eeuo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds=${1:-7}
bench::cluster_env

bench::standin_cluster
spec=$BENCH_WORK/spec.yaml
sed -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" "$BENCH_REPO/templates/jobspecs/ppo.yaml" >"$spec"

job() { MVP_LOG_SYNC_SECONDS=$1 "$BENCH_REPO/scripts/43_submit_jobspec.sh" "$spec" --wait --override +mvp_standin.step_seconds=0.5; }

job 30 >/dev/null 2>&1 # warm: the snapshot's first import, Ray's worker pool
without=() with=()
for ((r = 1; r <= rounds; r++)); do
  bench::time without job 0
  bench::time with job 30
  echo "round $r: without keepers ${without[-1]} ms, with ${with[-1]} ms" >&2
done
w=$(bench::median "${with[@]}") o=$(bench::median "${without[@]}") ratio=$(bench::pair_ratio with without)
echo "log keepers, median of $rounds: a short job (43 --wait) ${o} ms without keepers, ${w} ms with = ${ratio}x"
bench::row "a short job with its log keepers" 1.1 "$ratio" "43 --wait, MVP_LOG_SYNC_SECONDS=30 vs 0, $rounds alternating rounds"
