# shellcheck shell=bash
# Shared by every test file: bats-support/bats-assert, the repo's location,
# an isolated configuration, and helpers for clusters and the PATH stubs.

bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

MVP_REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
export MVP_REPO
# The real GSM8K files that ship beside the repo (no download at test time).
MVP_TEST_GSM8K=${MVP_TEST_GSM8K:-$(cd "$MVP_REPO/../shared/data/gsm8k" 2>/dev/null && pwd)}

# mvp_isolate DIR: settings for a cluster of the tests' own, away from a
# developer's demo cluster (other addresses and ports) and their local.env.
# SHARED_ROOT has a space in it to catch quoting bugs. MVP_TEST_SLOT (0-9)
# moves addresses and ports, so that two checkouts can run tests at once.
# Files that bats runs side by side (bats --jobs 2, by hand: tests/run keeps
# the cluster tiers one file at a time) sit two slots apart, by GNU
# parallel's job slot.
mvp_isolate() {
  local dir=$1 slot=$(((${MVP_TEST_SLOT:-0} + 2 * (${PARALLEL_JOBSLOT:-1} - 1)) % 10))
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env
  export MVP_RUNTIME=local MVP_STATE_DIR="$dir/state" SHARED_ROOT="$dir/shared root"
  export MVP_TEST_NET=127.0.$((10 + slot))
  export MVP_HEAD_IP=$MVP_TEST_NET.2 MVP_WORKER_IPS="" MVP_WORKERS=2 MVP_GPUS_PER_WORKER=4
  export MVP_GCS_PORT=$((16379 + slot)) MVP_DASHBOARD_PORT=$((18265 + slot)) MVP_CLIENT_PORT=$((19001 + slot))
  # Node ports below the kernel's ephemeral range (32768-60999), where an
  # outgoing connection can hold a pinned port first (a head's dashboard
  # agent once found its port taken and the cluster took no job): four
  # windows of 3000 (nodes k=0..2 use base+1000k+{0..5,100..299}) clear of
  # the fixed ports above and of the compose tier's 28265, one per slot
  # modulo 4, so the slots a suite runs at once (0 and 2, their second clusters 5
  # and 7) never share one.
  export MVP_NODE_PORT_BASE=$((19500 + 3000 * (slot % 4)))
  # Real verl 0.9.1 with the CPU stand-in over its entrypoints (tests/fixtures/real_verl.sh).
  export MVP_VERL_SRC=.mvp/cache/verl-0.9.1-standin MVP_MODEL_SOURCE=$MVP_REPO/tests/fixtures/model_standin
  export MVP_MODEL_ID=mvp-fixtures/model-standin
  export MVP_GSM8K_SOURCE=$MVP_TEST_GSM8K MVP_NODES_TIMEOUT=120 MVP_JOB_TIMEOUT=300
  export MVP_DASHBOARD="http://$MVP_HEAD_IP:$MVP_DASHBOARD_PORT"
  mkdir -p "$SHARED_ROOT"
}

# Runs a numbered script, its log appended to $MVP_TEST_LOG.
mvp_script() {
  local name=$1; shift
  "$MVP_REPO/scripts/$name.sh" "$@" 2>>"${MVP_TEST_LOG:-/dev/null}"
}

# shellcheck source=../../scripts/lib/steps.sh
source "$MVP_REPO/scripts/lib/steps.sh"

mvp_cluster_up() {
  local s
  for s in "${MVP_BRINGUP_STEPS[@]}"; do
    mvp_script "$s" >/dev/null || { cat "$MVP_TEST_LOG" >&3; return 1; }
  done
}

mvp_cluster_down() {
  "$MVP_REPO/scripts/02_down.sh" >/dev/null 2>&1
}

# The data, model and a code snapshot every job needs.
mvp_prepare_inputs() {
  mvp_script 30_prepare_data_and_model >/dev/null && CODE_ID=${1:-standin} mvp_script 31_snapshot_verl_code >/dev/null
}

# Host PIDs of every process inside this cluster's node namespaces.
mvp_node_processes() {
  local pidfile init ns pid
  for pidfile in "$MVP_STATE_DIR"/nodes/*/init.pid; do
    [[ -f $pidfile ]] || continue
    init=$(<"$pidfile")
    ns=$(readlink "/proc/$init/ns/pid" 2>/dev/null) || continue
    for pid in /proc/[0-9]*; do
      [[ $(readlink "$pid/ns/pid" 2>/dev/null) == "$ns" ]] && echo "${pid#/proc/}"
    done
  done
  return 0
}

# jq over a job directory's JSON file.
job_json() {
  local id=$1 file=$2 filter=$3
  jq -r "$filter" "$SHARED_ROOT/jobs/$id/$file"
}

# expect_env_lines LOG NAME: how many of the stand-in's +mvp_standin.expect_env
# lines for NAME a driver log has (2 when NAME reached the driver and the
# TaskRunner actor, a Ray worker process).
expect_env_lines() {
  grep -c -E "mvp_standin: $2 is set in the (driver|TaskRunner actor) " "$1"
}

# A digest of every file (path and content) under a directory.
tree_digest() {
  (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
}

# The last stdout line of `run`: the submission id of the submit scripts.
# shellcheck disable=SC2154  # $output is set by bats' run
last_line() {
  printf '%s\n' "$output" | tail -n 1
}

# mvp_use_stubs: puts tests/test_helper/stubs first on PATH; they record
# their argv in $MVP_STUB_LOG.
mvp_use_stubs() {
  export MVP_STUB_LOG=$BATS_TEST_TMPDIR/stub.log MVP_STUB_DIR=$BATS_TEST_TMPDIR/stubstate
  mkdir -p "$MVP_STUB_DIR"
  : >"$MVP_STUB_LOG"
  PATH="$MVP_REPO/tests/test_helper/stubs:$PATH"
}

# For unit tests: code snapshots whose verl/ is the real verl 0.9.1 tree (made
# by `make setup`), so the preflight checks against verl's own config.
MVP_REAL_VERL=$MVP_REPO/.mvp/cache/verl-0.9.1/verl

# mvp_preflight_facts DIR: the preflight's facts of real verl 0.9.1's two
# entrypoints, derived once into DIR (a Hydra compose each).
mvp_preflight_facts() {
  local dir=$1 module
  [[ -f $MVP_REAL_VERL/trainer/config/ppo_trainer.yaml ]] || { echo "no $MVP_REAL_VERL; run make setup" >&2; return 1; }
  for module in verl.trainer.main_ppo verl.trainer.sft_trainer_ray; do
    PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -m mvp.jobs.planning.preflight "${MVP_REAL_VERL%/verl}" "$module" \
      --cache-dir "$dir" 2>/dev/null || return 1
  done
}

# mvp_real_verl_snapshot SNAPSHOT FACTS_DIR: SNAPSHOT/verl links to real verl
# 0.9.1 and the shared root's preflight cache holds FACTS_DIR's facts.
# mvp_model_files DIR: the files real verl's preflight asks of a model
# directory (config, weights, a chat template), empty: for tests that only
# validate and render, never train.
mvp_model_files() {
  mkdir -p "$1"
  echo '{}' >"$1/config.json"
  : >"$1/model.safetensors"
  echo '{{ messages }}' >"$1/chat_template.jinja"
}

# mvp_dataset_files ROOT [CACHE]: small real GSM8K-shaped parquet (RL
# datasets/gsm8k/{train,test}, SFT datasets/gsm8k_sft/{train,val}, 8 rows
# each) under the shared root ROOT, made by the runbook's own gsm8k rows
# (what the preflight reads); made once into CACHE when given, then copied.
mvp_dataset_files() {
  local root=$1 cache=${2:-$1}
  if [[ ! -f $cache/datasets/gsm8k_sft/val.parquet ]]; then
    PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$cache" <<'PY' || return 1
import sys
from pathlib import Path
import pyarrow as pa
import pyarrow.parquet as pq
from mvp.data import gsm8k
base = Path(sys.argv[1]) / "datasets"
for d in ("gsm8k", "gsm8k_sft"):
    (base / d).mkdir(parents=True, exist_ok=True)
for split, sft_name in (("train", "train"), ("test", "val")):
    rows = gsm8k.synthetic(split, 8)
    pq.write_table(pa.Table.from_pylist(gsm8k.rl_rows(split, rows, "openai/gsm8k")[0], schema=gsm8k.rl_schema()),
                   base / "gsm8k" / f"{split}.parquet")
    pq.write_table(pa.Table.from_pylist(gsm8k.sft_rows(rows), schema=gsm8k.sft_schema()),
                   base / "gsm8k_sft" / f"{sft_name}.parquet")
PY
  fi
  [[ $cache == "$root" ]] && return 0
  mkdir -p "$root/datasets"
  cp -r "$cache/datasets/gsm8k" "$cache/datasets/gsm8k_sft" "$root/datasets/"
}

mvp_real_verl_snapshot() {
  local snap=$1 facts=$2
  mkdir -p "$snap" "$SHARED_ROOT/common/code/preflight"
  ln -s "$MVP_REAL_VERL" "$snap/verl"
  cp "$facts"/*.json "$SHARED_ROOT/common/code/preflight/"
}

# mvp_check_root MODEL PREFLIGHT DATA: $SHARED_ROOT as `submit --check-only`
# reads it: real verl 0.9.1 as snapshot codeA (its marker and manifest, the
# preflight facts from PREFLIGHT), a model under common/models/MODEL and the
# GSM8K parquet (made once in DATA). Sets SNAP to the snapshot's directory.
mvp_check_root() {
  SNAP="$SHARED_ROOT/common/code/verl/codeA"
  mvp_real_verl_snapshot "$SNAP" "$2"
  echo 'MARKER = "codeA"' >"$SNAP/mvp_marker.py"
  echo '{"created_at": "2026-01-01T00:00:00+00:00", "files": {}}' >"$SNAP/MANIFEST.json"
  mvp_model_files "$SHARED_ROOT/common/models/$1"
  mvp_dataset_files "$SHARED_ROOT" "$3"
}

# mvp_dashboard_get PATH: GET PATH from the test cluster's dashboard.
mvp_dashboard_get() { curl -fsS "$MVP_DASHBOARD$1"; }

# mvp_close_inherited_fds: closes every descriptor above stderr in this
# shell; call it in the subshell that then execs a command. bats ends a file
# only when every holder of its pipes has closed them, and podman hands what
# it inherited to the daemons it leaves running (aardvark-dns, the podman API
# service): holding bats' pipes, they hang the run after the tier's last test.
mvp_close_inherited_fds() {
  local fd
  for fd in /proc/self/fd/*; do
    fd=${fd##*/}
    ((fd > 2)) && exec {fd}>&-
  done
  return 0
}

# process_tree PID: the host PIDs of PID and all its descendants, each
# parent before its children (what the kill tests SIGKILL).
process_tree() {
  local -a todo=("$1") out=() c
  local p
  while ((${#todo[@]})); do
    p=${todo[0]} todo=("${todo[@]:1}")
    out+=("$p")
    read -r -a c < <(cat "/proc/$p/task/"*/children 2>/dev/null; echo)
    todo+=("${c[@]}")
  done
  echo "${out[@]}"
}

# driver_ip_when_running ID [GET]: waits (60 s) until job ID runs and prints
# its driver's address, as Ray reports it; GET is how the dashboard is asked
# (default mvp_dashboard_get; the ssh tier asks from the head over ssh).
driver_ip_when_running() {
  local get=${2:-mvp_dashboard_get} i job
  for ((i = 0; i < 300; i++)); do
    job=$("$get" "/api/jobs/$1" 2>/dev/null) || job='{}'
    if [[ $(jq -r '.status // empty' <<<"$job") == RUNNING && $(jq -r '.driver_info.node_ip_address // empty' <<<"$job") ]]; then
      jq -r .driver_info.node_ip_address <<<"$job"
      return 0
    fi
    sleep 0.2
  done
  return 1
}

# mvp_wait_until SECONDS WHAT CMD...: polls CMD (every 0.2 s) until it
# succeeds; when SECONDS pass first, says which condition never came and
# fails, so a test waits on its condition and never on a fixed time.
mvp_wait_until() {
  local limit=$1 what=$2 deadline=$((SECONDS + $1))
  shift 2
  until "$@"; do
    ((SECONDS < deadline)) || { echo "# not within ${limit} s: $what" >&2; return 1; }
    sleep 0.2
  done
}

# mvp_job_log_has ID PATTERN: 51_logs.sh shows a line of job ID matching
# PATTERN (grep -E); for mvp_wait_until.
mvp_job_log_has() { grep -qE "$2" <("$MVP_REPO/scripts/51_logs.sh" "$1" 2>/dev/null); }

# mvp_eval NAME DIR IMPORTS EXPR: prints, as JSON, the Python expression EXPR
# evaluated after IMPORTS, with helpers/ and tests/test_helper/ on the path
# and NAME a pathlib.Path of DIR (the unit tests' simulations of the nightly
# and of fingerprints).
mvp_eval() {
  PYTHONPATH=$MVP_REPO/helpers:$MVP_REPO/tests/test_helper "$MVP_REPO/.venv/bin/python" -c '
import json, sys
from pathlib import Path
exec(sys.argv[3])
globals()[sys.argv[1]] = Path(sys.argv[2])
print(json.dumps(eval(sys.argv[4])))' "$@"
}
