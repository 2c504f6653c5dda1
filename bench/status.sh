#!/usr/bin/env bash
# Status cost against the size of the job archive: 50_status.sh --json on a
# shared root holding 10 job directories and on one holding 10,000 (made the
# way submissions make them: jobdir.claim, a job_spec.json and a result.json
# each), alternately, against the same live cluster. Target: 10,000 within
# 1.2x of 10. The plain `ray status` of the same cluster is measured in the
# same rounds for scale.
#
# Usage: bench/status.sh [ROUNDS]   (default 9). Starts and stops its own cluster.
set -Eeuo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds=${1:-9}
bench::cluster_env

for s in "${MVP_BRINGUP_STEPS[@]}"; do "$BENCH_REPO/scripts/$s.sh" >/dev/null 2>&1; done

# make_archive ROOT N: N finished jobs under ROOT/jobs, as the runbook leaves them.
make_archive() {
  PYTHONPATH=$BENCH_REPO/helpers "$MVP_PYTHON" - "$1" "$2" <<'PY'
import json, sys
from pathlib import Path
from mvp.worker import fsutil, jobdir
root, n = Path(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    jd = jobdir.JobDir(jobdir.claim(root / "jobs" / f"ppo-bench-{i:05d}"))
    fsutil.write_text(jd.spec, json.dumps({"resolved": {"workload": "ppo"}}))
    jd.write_result({"status": "SUCCEEDED", "start_time_ms": 1700000000000 + i,
                     "driver_node_ip": "127.0.20.3", "driver_on_head": False})
PY
}
small=$BENCH_WORK/small-root big=$BENCH_WORK/big-root
make_archive "$small" 10
make_archive "$big" 10000

status_of() { "$BENCH_REPO/scripts/50_status.sh" --json --shared-root "$1"; }
plain_status() { mvp::rt::exec "$MVP_HEAD_NODE" ray status --address "$MVP_HEAD_IP:$MVP_GCS_PORT"; }
few=() many=() plain=()
for ((r = 1; r <= rounds; r++)); do
  bench::time few status_of "$small"
  bench::time many status_of "$big"
  bench::time plain plain_status
  echo "round $r: 10 dirs ${few[-1]} ms, 10,000 dirs ${many[-1]} ms, ray status ${plain[-1]} ms" >&2
done
f=$(bench::median "${few[@]}") m=$(bench::median "${many[@]}")
ratio=$(bench::pair_ratio many few)
echo "status, median of $rounds: 10 job dirs ${f} ms ($(bench::pair_ratio few plain)x ray status);" \
  "10,000 job dirs ${m} ms = ${ratio}x of 10 (median of the rounds' ratios; target <= 1.2x)"
bench::row "50_status --json, 10,000 job dirs vs 10" 1.2 "$ratio" "same live cluster, $rounds alternating rounds; 50 with 10 dirs is $(bench::pair_ratio few plain)x a plain ray status"
