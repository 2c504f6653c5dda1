#!/usr/bin/env bats
# Configuration: defaults (config/settings.contract), precedence (defaults < file < environment < flags),
# derived values and bad input. No cluster: the library is sourced directly.

setup() {
  load ../test_helper/common
  unset MVP_RUNTIME SHARED_ROOT MVP_HEAD_IP MVP_WORKER_IPS MVP_WORKERS MVP_CONFIG MVP_DASHBOARD_PORT MVP_CLUSTER_NAME
}

# Loads the configuration the way every script does and prints what it resolved.
resolve() {
  bash -c 'source "$1/scripts/lib/common.sh"; shift; mvp::flags::parse "$@"; mvp::config::load
    echo "runtime=$MVP_RUNTIME"; echo "shared=$SHARED_ROOT"; echo "head=$MVP_HEAD_IP"
    echo "workers=$MVP_WORKER_IPS"; echo "dashboard=$MVP_DASHBOARD_URL"; echo "gcs=$MVP_GCS_PORT"
    echo "loaded=$MVP_CONFIG_LOADED"; echo "nodes=${MVP_NODES[*]}"; echo "cluster=$MVP_CLUSTER_NAME"' _ "$MVP_REPO" "$@"
}

@test "config: local defaults are head 127.0.0.2, dashboard :8265, GCS :6379, workers .3 and .4" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env
  run resolve
  assert_success
  assert_line "runtime=local"
  assert_line "head=127.0.0.2"
  assert_line "dashboard=http://127.0.0.2:8265"
  assert_line "gcs=6379"
  assert_line "workers=127.0.0.3 127.0.0.4"
  assert_line "shared=$MVP_REPO/.mvp/shared"
  assert_line "nodes=mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1"
}

@test "config: compose defaults put the shared root at /private and the dashboard at 127.0.0.1:8265 inside the head" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=compose
  run resolve
  assert_success
  assert_line "shared=/private"
  assert_line "dashboard=http://127.0.0.1:8265"
}

@test "config: the config file overrides defaults, the environment overrides the file, flags override all" {
  local file=$BATS_TEST_TMPDIR/my.env
  printf 'MVP_RUNTIME=compose\nMVP_HEAD_IP=10.9.0.2\nMVP_GCS_PORT=7000\n' >"$file"
  export MVP_CONFIG=$file
  run resolve
  assert_line "runtime=compose"
  assert_line "head=10.9.0.2"
  assert_line "gcs=7000"
  assert_line "loaded=$file"
  MVP_HEAD_IP=10.8.0.2 run resolve
  assert_line "head=10.8.0.2"
  assert_line "runtime=compose"
  MVP_RUNTIME=compose run resolve --runtime local
  assert_line "runtime=local"
}

@test "config: --config beats MVP_CONFIG from the environment" {
  printf 'MVP_GCS_PORT=7001\n' >"$BATS_TEST_TMPDIR/env.env"
  printf 'MVP_GCS_PORT=7002\n' >"$BATS_TEST_TMPDIR/flag.env"
  MVP_CONFIG=$BATS_TEST_TMPDIR/env.env run resolve --config "$BATS_TEST_TMPDIR/flag.env"
  assert_success
  assert_line "gcs=7002"
  assert_line "loaded=$BATS_TEST_TMPDIR/flag.env"
}

# logged_or_ended LOG PID: LOG has the config line, or PID is gone.
logged_or_ended() { grep -qF "config: $MVP_CONFIG (runtime compose" "$1" || ! kill -0 "$2" 2>/dev/null; }

@test "config: every numbered script logs which config file it loaded, but 12, 50, 51 and 52, whose stderr is their answer (MVP_QUIET_CONFIG)" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env SHARED_ROOT=$BATS_TEST_TMPDIR/shared MVP_STATE_DIR=$BATS_TEST_TMPDIR/state
  mvp_use_stubs
  local script log pid silent=()
  for script in "$MVP_REPO"/scripts/[0-9][0-9]_*.sh; do
    log=$BATS_TEST_TMPDIR/${script##*/}.err
    : >"$log"
    # timeout leads a process group of its own, stopped once the line is
    # there: what comes after the configuration (a dry run's plan) is not this test's.
    timeout 60 "$script" --dry-run --runtime compose </dev/null >/dev/null 2>"$log" &
    pid=$!
    mvp_wait_until 30 "${script##*/} logging its config or ending" logged_or_ended "$log" "$pid"
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    grep -qF "config: $MVP_CONFIG (runtime compose, shared root $SHARED_ROOT)" "$log" || silent+=("${script##*/}")
  done
  assert_equal "${silent[*]}" "12_install_py_deps.sh 50_status.sh 51_logs.sh 52_stop.sh"
}

@test "config: an unknown runtime is one clear line and a non-zero exit" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env
  run resolve --runtime kubernetes
  assert_failure
  assert_output "ERROR: MVP_RUNTIME='kubernetes' must be local, compose, ssh, slurm or kuberay; fix it where it is set: config file, environment or flag (config/settings.contract: type one-of local compose ssh slurm kuberay)"
}

@test "config: the cluster's name is <runtime>@<host name> unless set; one that cannot be a file name is one line" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env
  run resolve
  assert_line "cluster=local@$(uname -n)"
  MVP_CLUSTER_NAME=team-a.gpu@rack1 run resolve --runtime compose
  assert_line "cluster=team-a.gpu@rack1"
  MVP_CLUSTER_NAME=../jobs run resolve
  assert_failure
  assert_output "ERROR: MVP_CLUSTER_NAME='../jobs' must be 1-128 letters, digits, '.', '_', '@' or '-', starting with a letter or digit; fix it where it is set: config file, environment or flag (config/settings.contract: type name)"
}

@test "config: a config file line that is not NAME=value is refused, not run" {
  local file=$BATS_TEST_TMPDIR/bad.env
  printf 'MVP_WORKERS=2\ntouch %s/pwned\n' "$BATS_TEST_TMPDIR" >"$file"
  MVP_CONFIG=$file run resolve
  assert_failure
  assert_output --partial "is not a NAME=value line"
  [[ ! -e $BATS_TEST_TMPDIR/pwned ]]
}

@test "config: a worker address list that does not match MVP_WORKERS is refused" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env
  MVP_WORKER_IPS="127.0.0.3" run resolve
  assert_failure
  assert_output --partial "MVP_WORKER_IPS has 1 addresses for MVP_WORKERS=2"
}

@test "config: a missing config file is reported with the fix" {
  MVP_CONFIG=$BATS_TEST_TMPDIR/nope.env run resolve
  assert_failure
  assert_output --partial "config file $BATS_TEST_TMPDIR/nope.env is missing or unreadable"
}

@test "config: a secret-named variable matched by MVP_JOB_ENV_PASSTHROUGH is one line (it would ride on a command line); plain matches pass" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_JOB_ENV_PASSTHROUGH="NCCL_* WANDB_*"
  NCCL_IB_DISABLE=1 WANDB_PROJECT=mvp run resolve
  assert_success
  NCCL_IB_DISABLE=1 WANDB_API_KEY=k WANDB_PROJECT=mvp run resolve
  assert_failure
  assert_output "ERROR: MVP_JOB_ENV_PASSTHROUGH matches WANDB_API_KEY, a secret by its name; it would sit on a command line, so put it in the JobSpec's env_vars instead"
}

@test "config: MVP_RAY_AUTH=off is said to Ray (RAY_AUTH_MODE=disabled), token gives the mode and the token's path" {
  run bash -c 'source "$1/scripts/lib/common.sh"; MVP_CONFIG=$1/tests/fixtures/empty.env mvp::config::load
    mvp::ray::auth_env | tr "\0" "\n"; MVP_RAY_AUTH=token; mvp::ray::auth_env | tr "\0" "\n"' _ "$MVP_REPO"
  assert_success
  assert_output "RAY_AUTH_MODE=disabled
RAY_AUTH_MODE=token
RAY_AUTH_TOKEN_PATH=$MVP_REPO/.mvp/shared/secrets/ray_auth_token"
}

@test "layout: shared-layout.txt is exactly what helpers/mvp/core/layout.py generates" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'from mvp.core import layout; print(layout.render(), end="")'
  assert_success
  [[ $output == "$(<"$MVP_REPO/shared-layout.txt")" ]]
}

@test "layout: mvp::config::layout NAME gives the host path of a shared-root directory; an unknown name is one line" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env SHARED_ROOT=$BATS_TEST_TMPDIR/root
  run bash -c 'source "$1/scripts/lib/common.sh"; MVP_QUIET_CONFIG=1 mvp::config::init; mvp::config::layout snapshots; mvp::config::layout nope' _ "$MVP_REPO"
  assert_failure 1
  assert_line --index 0 "$BATS_TEST_TMPDIR/root/common/code/verl"
  assert_line --index 1 "ERROR: shared-layout.txt names no directory 'nope'"
}

@test "config: config/local.env.example loads as every script loads a config file, and so does each commented setting in it once uncommented" {
  run resolve --config "$MVP_REPO/config/local.env.example"
  assert_success
  assert_line "runtime=compose"
  assert_line "loaded=$MVP_REPO/config/local.env.example"
  # The commented settings, uncommented: each one a line the loader takes, of a declared name and type.
  sed -E 's/^# ([A-Z_][A-Z0-9_]*=)/\1/' "$MVP_REPO/config/local.env.example" >"$BATS_TEST_TMPDIR/all.env"
  (($(grep -cE '^[A-Z_]+=' "$BATS_TEST_TMPDIR/all.env") > $(grep -cE '^[A-Z_]+=' "$MVP_REPO/config/local.env.example")))
  MVP_RUNTIME=ssh run resolve --config "$BATS_TEST_TMPDIR/all.env"
  assert_success
  assert_line "workers=10.0.0.11 10.0.0.12"
  local name
  while read -r name; do
    [[ $name == NCCL_* ]] || grep -qx "$name" "$MVP_REPO/config/settings.contract" || { echo "# $name is no setting of the contract" >&2; false; }
  done < <(grep -oE '^[A-Z_][A-Z0-9_]*' "$BATS_TEST_TMPDIR/all.env")
}
