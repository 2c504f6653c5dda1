#!/usr/bin/env bash
# record.sh: grows the nightly detector's corpus with REAL verl runs (a
# benchmark: never in CI). On its own local cluster of CPU-only nodes (the CPU
# profile, the tiny model, real verl 0.9.1's tree) it runs, ROUNDS times:
#   - a same-code night: 60_nightly_regression.sh --only JOBS on verl 0.9.1
#     as released (default learn,grpo,sft: the CPU nights' jobs with a learning
#     signal; ppo: ppo1 and ppo2, the second interrupted and resumed);
#   - a planted night: 60 --only JOB on one commit of a fork with a planted
#     regression (bench/detector/plant.sh), the kinds taken in turn, each on
#     the job whose figures should show it.
# Every job of every night becomes one record (bench/detector/harvest.py),
# appended to a new file tests/fixtures/detector/corpus/<start>-<host>.jsonl
# (gzipped at the end): a re-run adds a file and never rewrites an old one. Jobs go through the
# runbook's own path (60 -> 41, 42, 43 -> ray job submit); the load average is
# sampled every 5 s beside them.
#
# Usage: bench/detector/record.sh [--rounds N] [--kinds K,K...] [--source SOURCE]
#   --rounds N   rounds of one same-code and one planted night (default 20)
#   --kinds      the planted kinds taken in turn (default zeroed,flip,backwards,slow,leak;
#                tests/fixtures/verl_plants.sh lists them; none: only same-code nights)
#   --jobs JOBS  the same-code nights' jobs, as 60's --only takes them (default learn,grpo,sft)
#   --minutes M  start no night after M minutes (default: no limit)
#   --planted-only  the planted nights only (no same-code night in a round)
#   --source     MVP_GSM8K_SOURCE of the nights: synthetic, hf, or a directory
#                (default: the real GSM8K files in ../shared/data/gsm8k)
#   --corpus DIR the corpus directory written to (default tests/fixtures/detector/corpus)
#        bench/detector/record.sh --from-history HISTORY_JSON [--label NAME] [--corpus DIR]
#                a team's own nights: each job of each good night of their
#                regressions/history.json (with the curves its report.json or
#                history.json kept) as a same-code record (bench/detector/from_history.py)
# Starts and stops its own cluster. On a quiet 2-core machine a same-code
# night takes about 5 minutes, a planted run 2.5 (the slow step, on two jobs, 5);
# a PPO night (--jobs ppo) 4.5; a night of the probe alone on synthetic data 2.
set -Eeuo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/../lib.sh"
rounds=20 minutes=0 kinds=zeroed,flip,backwards,slow,leak jobs=learn,grpo,sft source="" history="" label="" same_code=1
corpus=$BENCH_REPO/tests/fixtures/detector/corpus
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --kinds) kinds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --planted-only) same_code=0; shift ;;
    --from-history) history=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -E/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "ERROR: unknown argument $1; see bench/detector/record.sh --help" >&2; exit 2 ;;
  esac
done
mkdir -p "$corpus"
out=$corpus/$(date -u +%Y%m%dT%H%M%SZ)-$(hostname -s).jsonl
python=$BENCH_REPO/.venv/bin/python

if [[ -n $history ]]; then
  PYTHONPATH=$BENCH_REPO/helpers "$python" "$here/from_history.py" "$history" --label "${label:-history}" --out "$out"
  exit 0
fi
[[ $rounds =~ ^[0-9]+$ && $minutes =~ ^[0-9]+$ ]] || { echo "ERROR: --rounds and --minutes take whole numbers" >&2; exit 2; }

# The job whose figures should show each kind (plant.sh says what each does).
# A slow step slows every job: it is planted on GRPO (3 steps) and the probe (10).
# A resume one step off shows on the night's interrupted job, ppo2.
declare -A job_of=([zeroed]=learn [flip]=learn [backwards]=learn [slow]="grpo,learn" [leak]=learn [nokl]=grpo
  [resume]=ppo)
[[ $kinds != none ]] || kinds=""
IFS=, read -ra kind_list <<<"$kinds"
for k in "${kind_list[@]}"; do
  [[ -n ${job_of[$k]:-} ]] || { echo "ERROR: --kinds: $k is no planted kind; use ${!job_of[*]}" >&2; exit 2; }
done

# A record is a night's first runs: the replay draws a failed regression's
# rerun from the nights recorded after it, so the recording night reruns nothing.
export MVP_TRAINER_PROFILE=cpu MVP_GPUS_PER_WORKER=1 MVP_JOB_TIMEOUT=900 MVP_NIGHTLY_KEEP=100000 MVP_NIGHTLY_RERUN=0
bench::cluster_env
export MVP_VERL_SRC=$BENCH_REPO/.mvp/cache/verl-0.9.1 MVP_MODEL_SOURCE=tiny MVP_MODEL_ID=mvp-tiny/qwen2
[[ -z $source ]] || export MVP_GSM8K_SOURCE=$source
real=$MVP_VERL_SRC

# The load average every 5 s, and the CPU's steal and total ticks, for each record's `load`.
while :; do
  echo "$(date +%s) $(cut -d' ' -f1 /proc/loadavg) $(awk '/^cpu /{print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat)"
  sleep 5
done >"$BENCH_WORK/load" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null; "$BENCH_REPO/scripts/02_down.sh" >/dev/null 2>&1; rm -rf "$BENCH_WORK"' EXIT

fork=$BENCH_WORK/fork
"$here/plant.sh" "$real" "$fork"
for k in "${kind_list[@]}"; do
  git -C "$fork" worktree add -q "$BENCH_WORK/code-$k" "$k"
done

regressions=$SHARED_ROOT/regressions
# night ONLY CODE_ID SRC [KIND]: one night of 60, harvested.
night() {
  local only=$1 code=$2 src=$3 kind=${4:-} run commit=""
  ((minutes == 0 || SECONDS - t0 < 60 * minutes)) || return 0
  run=$(CODE_ID=$code MVP_VERL_SRC=$src "$BENCH_REPO/scripts/60_nightly_regression.sh" --only "$only" 2>/dev/null |
    sed -n '1s/: log .*//p') || true
  [[ -n $run && -f $regressions/$run/report.json ]] || { echo "record: the night ($only on $code) left no report" >&2; return 1; }
  [[ -z $kind ]] || commit=$(git -C "$fork" rev-parse "$kind")
  PYTHONPATH=$BENCH_REPO/helpers "$python" "$here/harvest.py" --run-dir "$regressions/$run" --jobs-dir "$SHARED_ROOT/jobs" \
    --suite "$BENCH_REPO/config/nightly.yaml" --load "$BENCH_WORK/load" --out "$out" --planted "$kind" \
    --plant-commit "$commit" --source "${MVP_GSM8K_SOURCE}"
}

t0=$SECONDS
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds ($((SECONDS - t0)) s)" >&2
  if ((same_code)); then
    night "$jobs" verl-0.9.1 "$real" || true
    echo "  same-code night done ($((SECONDS - t0)) s)" >&2
  fi
  if ((${#kind_list[@]})); then
    k=${kind_list[(r - 1) % ${#kind_list[@]}]}
    night "${job_of[$k]}" "plant-$k" "$BENCH_WORK/code-$k" "$k" || true
  fi
done
[[ -s $out ]] || { echo "ERROR: no night left a record" >&2; exit 1; }
gzip -9 "$out"
echo "record: $(zcat "$out.gz" | wc -l) records in $out.gz, $(du -k "$out.gz" | cut -f1) KiB ($((SECONDS - t0)) s)" >&2
