# shellcheck shell=bash
# The compose tier's container engine: Debian's podman, driven through its
# Docker-API socket by the `docker` CLI and the compose CLI, as a Docker host
# would be. Started by the tier itself and stopped by PID when it ends.
#
# The engine's own configuration (CONTAINERS_CONF, a file of the tier's) and
# not the project's compose files adapts it to these machines: the runc
# runtime (crun refuses their hybrid cgroup setup) and lowered default
# ulimits (nofile 1024, nproc 4096: the defaults fail with "error setting
# rlimit" here). The compose files the tier runs are the users' files.

MVP_COMPOSE_PROJECT_LABEL=com.docker.compose.project=mvp-v11

# mvp_engine_start: a podman API service on a socket under a new directory
# (short path: a socket path is limited to 108 bytes); exports DOCKER_HOST.
mvp_engine_start() {
  command -v podman >/dev/null || { echo "podman is missing; run make setup" >&3; return 1; }
  MVP_ENGINE_DIR=$(mktemp -d /tmp/mvp-engine.XXXXXX)
  export MVP_ENGINE_DIR
  # exit_command_delay: each `docker exec` leaves a conmon waiting this long
  # (300 s by default) after the command ended; the tier should leave none.
  printf '%s\n' '[containers]' 'default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]' \
    '[engine]' 'runtime = "runc"' 'exit_command_delay = 1' >"$MVP_ENGINE_DIR/containers.conf"
  # Every descriptor but stdout and stderr (the log) closed: bats waits for
  # whatever holds fd 3 or the pipes behind its own output, and an engine
  # (or a conmon of it) left holding one would hang the run after the tier.
  (
    mvp_close_inherited_fds
    CONTAINERS_CONF=$MVP_ENGINE_DIR/containers.conf exec podman system service --time=0 "unix://$MVP_ENGINE_DIR/podman.sock"
  ) </dev/null >"$MVP_ENGINE_DIR/engine.log" 2>&1 &
  echo $! >"$MVP_ENGINE_DIR/engine.pid"
  export DOCKER_HOST=unix://$MVP_ENGINE_DIR/podman.sock
  local i
  for ((i = 0; i < 100; i++)); do
    docker version >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "the podman API service did not answer on $DOCKER_HOST; its log:" >&3
  cat "$MVP_ENGINE_DIR/engine.log" >&3
  return 1
}

# The containers and networks of the compose project (its label), by id.
mvp_engine_leftovers() {
  docker ps -aq --filter "label=$MVP_COMPOSE_PROJECT_LABEL"
  docker network ls -q --filter "label=$MVP_COMPOSE_PROJECT_LABEL"
}

# mvp_engine_stop: removes every container and network of the project, even
# when a test failed half-way, then stops the service it started.
mvp_engine_stop() {
  [[ -n ${MVP_ENGINE_DIR:-} && -f $MVP_ENGINE_DIR/engine.pid ]] || return 0
  local -a ids=()
  # Bounded: an engine that no longer answers must not hold the run (CI
  # was once cut off right after this tier's last test).
  mapfile -t ids < <(timeout 60 docker ps -aq --filter "label=$MVP_COMPOSE_PROJECT_LABEL" 2>/dev/null)
  ((${#ids[@]} == 0)) || timeout 120 docker rm -f "${ids[@]}" >/dev/null 2>&1
  mapfile -t ids < <(timeout 60 docker network ls -q --filter "label=$MVP_COMPOSE_PROJECT_LABEL" 2>/dev/null)
  ((${#ids[@]} == 0)) || timeout 60 docker network rm "${ids[@]}" >/dev/null 2>&1
  local pid
  pid=$(<"$MVP_ENGINE_DIR/engine.pid")
  kill "$pid" 2>/dev/null
  local i
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "# the podman API service (pid $pid) did not stop within 10 s of SIGTERM; SIGKILL" >&3
    kill -9 "$pid" 2>/dev/null
  fi
  rm -rf "$MVP_ENGINE_DIR"
}

# mvp_compose_isolate DIR: settings of the tier's cluster: the compose
# runtime with logical GPUs, on a subnet and dashboard port of its own
# (MVP_TEST_SLOT moves them), the shared root a directory of the test's
# (with a space, to catch quoting bugs) mounted at /private.
mvp_compose_isolate() {
  local dir=$1 slot=${MVP_TEST_SLOT:-0}
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=compose MVP_COMPOSE_GPUS=logical
  unset SHARED_ROOT
  export MVP_HOST_SHARED_DIR="$dir/shared root" MVP_STATE_DIR=$dir/state
  export MVP_COMPOSE_SUBNET=172.31.$slot.0/24 MVP_HEAD_IP=172.31.$slot.2 MVP_WORKER_IPS="" MVP_WORKERS=2 MVP_GPUS_PER_WORKER=4
  export MVP_DASHBOARD_PORT=$((28265 + slot))
  export MVP_DASHBOARD=http://127.0.0.1:$MVP_DASHBOARD_PORT
  # Real verl 0.9.1 with the CPU stand-in over its entrypoints (tests/fixtures/real_verl.sh).
  export MVP_VERL_DIR=$MVP_REPO/.mvp/cache/verl-0.9.1-standin MVP_VERL_SRC=.mvp/cache/verl-0.9.1-standin
  export MVP_MODEL_ID=mvp-fixtures/model-standin MVP_MODEL_SOURCE=/workspace/mvp/tests/fixtures/model_standin
  export MVP_NODES_TIMEOUT=120 MVP_JOB_TIMEOUT=300
  # The real GSM8K files, where the head (which prepares the data) sees them.
  [[ -f ${MVP_TEST_GSM8K:-}/train.jsonl ]] || { echo "no GSM8K files at '${MVP_TEST_GSM8K:-}'; set MVP_TEST_GSM8K" >&3; return 1; }
  mkdir -p "$MVP_HOST_SHARED_DIR/input/gsm8k"
  cp "$MVP_TEST_GSM8K/train.jsonl" "$MVP_TEST_GSM8K/test.jsonl" "$MVP_HOST_SHARED_DIR/input/gsm8k/"
  export MVP_GSM8K_SOURCE=/private/input/gsm8k
}
