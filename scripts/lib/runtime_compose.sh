# shellcheck shell=bash disable=SC2034  # mvp::rt::derive sets settings that config.sh, helper.sh and the scripts read
# Runtime "compose": the nodes are the containers of docker-compose.yaml and
# commands run in them through `docker exec`, as the seed's v1.1 does.

MVP_COMPOSE_PROJECT=mvp-v11

# Defaults of the settings whose empty value means "derived": the nodes see
# the shared directory at /private and the repo at /workspace/mvp.
mvp::rt::derive() {
  SHARED_ROOT=${SHARED_ROOT:-/private}
  MVP_HOST_SHARED_DIR=${MVP_HOST_SHARED_DIR:-$MVP_DEFAULT_SHARED}
  MVP_HOST_SEES_NODE_FILES=0
  MVP_HEAD_IP=${MVP_HEAD_IP:-172.28.0.2}
  MVP_NODE_REPO=/workspace/mvp
  MVP_NODE_VERL_DIR=/workspace/verl
  MVP_PYTHON=python3
  MVP_HOST_PYTHON=python3
  # Inside the head container the dashboard is 8265; the host reaches it
  # where docker-compose.yaml publishes it (127.0.0.1 only).
  MVP_DASHBOARD_URL=http://127.0.0.1:8265
  MVP_HOST_DASHBOARD_URL=http://127.0.0.1:$MVP_DASHBOARD_PORT
}

# The containers' /tmp/ray is not visible from this host.
mvp::rt::node_ray_dirs() { MVP_NODE_RAY_DIRS=""; }

# Each container has its own network namespace: Ray's default ports do not
# collide, and the dashboard listens on all interfaces inside the head
# (docker-compose.yaml publishes it on the host's loopback only).
mvp::rt::ray_start_args() { :; }
mvp::rt::dashboard_bind() { echo "0.0.0.0 8265"; }

# "IP PORT" lines of what Ray will bind on this host's network: nothing, each
# container has its own (the published dashboard port is checked by prereq).
mvp::rt::node_ports() { :; }

# The settings docker-compose.yaml interpolates.
mvp::rt::compose() {
  local i
  local -a gpu_ids=()
  read -r -a gpu_ids <<<"$MVP_WORKER_GPU_IDS"
  local -a env=(
    "MVP_IMAGE=$MVP_IMAGE" "MVP_SHM_SIZE=$MVP_SHM_SIZE" "MVP_REPO_DIR=$MVP_REPO"
    "MVP_HOST_SHARED_DIR=$MVP_HOST_SHARED_DIR" "MVP_VERL_DIR=$MVP_VERL_DIR"
    "MVP_DASHBOARD_PORT=$MVP_DASHBOARD_PORT" "MVP_COMPOSE_SUBNET=$MVP_COMPOSE_SUBNET"
    "MVP_HEAD_IP=$MVP_HEAD_IP"
  )
  for ((i = 0; i < MVP_WORKERS; i++)); do
    env+=("MVP_WORKER${i}_IP=${MVP_WORKER_IP_LIST[$i]}" "MVP_WORKER${i}_GPUS=${gpu_ids[$i]:-}")
  done
  mvp::run env "${env[@]}" docker compose -f "$MVP_REPO/docker-compose.yaml" -p "$MVP_COMPOSE_PROJECT" "$@"
}

mvp::rt::node_is_up() {
  [[ $(docker inspect -f '{{.State.Running}}' "$1" 2>/dev/null) == true ]]
}

# mvp::rt::exec NODE CMD...: `docker exec`, handing over the variables that
# tests and users pass through by name (values never appear in argv).
mvp::rt::exec() {
  local node=$1 name; shift
  local -a pass=()
  while IFS= read -r name; do
    [[ $name =~ $MVP_NODE_ENV_PASS ]] && pass+=(-e "$name")
  done < <(compgen -e)
  docker exec -i "${pass[@]}" -w / "$node" "$@"
}

mvp::rt::prereq() {
  if ! mvp::rt::node_is_up "$MVP_HEAD_NODE" && (: <"/dev/tcp/127.0.0.1/$MVP_DASHBOARD_PORT") 2>/dev/null; then
    MVP_PROBLEMS+=("port 127.0.0.1:$MVP_DASHBOARD_PORT (for $MVP_HEAD_NODE: its dashboard, published) is in use; stop what listens there or change MVP_DASHBOARD_PORT")
  fi
  command -v docker >/dev/null || { MVP_PROBLEMS+=("docker is missing; install Docker Engine with the compose plugin"); return 0; }
  docker compose version >/dev/null 2>&1 || MVP_PROBLEMS+=("docker compose is missing; install the docker-compose-plugin package")
  docker info >/dev/null 2>&1 || MVP_PROBLEMS+=("the Docker engine does not answer; start it (systemctl start docker) or check your permissions")
  ((MVP_WORKERS == 2)) || MVP_PROBLEMS+=("docker-compose.yaml defines 2 workers but MVP_WORKERS=$MVP_WORKERS; set MVP_WORKERS=2 or add services to docker-compose.yaml")
  if ! command -v nvidia-smi >/dev/null; then
    MVP_PROBLEMS+=("nvidia-smi is missing: the compose runtime needs NVIDIA GPUs and the NVIDIA container toolkit; use MVP_RUNTIME=local without them")
    return 0
  fi
  local have need=$((MVP_WORKERS * MVP_GPUS_PER_WORKER))
  have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  if ((have < need)); then
    MVP_PROBLEMS+=("nvidia-smi lists $have GPUs, the cluster needs $need ($MVP_WORKERS workers x $MVP_GPUS_PER_WORKER); lower MVP_GPUS_PER_WORKER or MVP_WORKER_GPU_IDS")
  else
    mvp::info "GPUs: $have visible, $need assigned ($MVP_WORKER_GPU_IDS)"
  fi
}

mvp::rt::up() {
  local node all_up=1
  for node in "${MVP_NODES[@]}"; do mvp::rt::node_is_up "$node" || all_up=0; done
  if ((all_up)); then
    mvp::skip "containers ${MVP_NODES[*]} (already running)"
    return 0
  fi
  mvp::run mkdir -p "$MVP_HOST_SHARED_DIR"
  mvp::rt::compose up -d
}

# Ends every process in the container and starts it empty.
mvp::rt::reset_node() { mvp::run docker restart "$1" >/dev/null; }

mvp::rt::down() {
  local node any=0
  for node in "${MVP_NODES[@]}"; do
    docker inspect "$node" >/dev/null 2>&1 && any=1
  done
  if ((!any)); then
    mvp::skip "containers ${MVP_NODES[*]} (none exist)"
    return 0
  fi
  mvp::rt::compose down
}
