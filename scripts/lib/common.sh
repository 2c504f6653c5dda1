# shellcheck shell=bash
# The runbook's shared library: logging, errors, configuration, dry-run, the
# runtime (compose | local) and the Python helper. Every numbered script sources
# it; functions live under the mvp:: prefix so tests can call them one by one.

MVP_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MVP_DRY_RUN=${MVP_DRY_RUN:-0}
# cron gives PATH=/usr/bin:/bin; the tools we call also live in these.
PATH="$PATH:/usr/local/bin:/usr/sbin:/sbin"

# ---------------------------------------------------------------- logging --
# Logs go to stderr with a UTC timestamp; stdout is kept for data (ids, JSON).
# log: a step being taken; info: a fact found; skip: nothing to do, and why.
# (printf's own clock: no `date` process per line.)
mvp::log()  { TZ=UTC0 printf '%(%FT%TZ)T -----> %s\n' -1 "$*" >&2; }
mvp::info() { TZ=UTC0 printf '%(%FT%TZ)T        %s\n' -1 "$*" >&2; }
mvp::warn() { TZ=UTC0 printf '%(%FT%TZ)T  !     %s\n' -1 "$*" >&2; }
mvp::skip() { TZ=UTC0 printf '%(%FT%TZ)T SKIP: %s\n' -1 "$*" >&2; }
mvp::die()  { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# An unexpected failure names the command and where it failed; expected
# failures go through mvp::die with a message of their own.
mvp::on_err() {
  local rc=$? i
  printf 'ERROR: command failed (exit %s): %s\n' "$rc" "$BASH_COMMAND" >&2
  for ((i = 1; i < ${#FUNCNAME[@]}; i++)); do
    printf '  at %s (%s:%s)\n' "${FUNCNAME[$i]}" "${BASH_SOURCE[$i]##*/}" "${BASH_LINENO[$((i - 1))]}" >&2
  done
}
trap mvp::on_err ERR

# Prints the calling script's header comment (its usage), without the '# '.
mvp::usage() {
  sed -n '2,/^[^#]/{/^#/!q;s/^# \{0,1\}//;p}' "$0"
}

# Runs a command given as words, or only prints it under --dry-run.
mvp::run() {
  if [[ $MVP_DRY_RUN == 1 ]]; then
    printf 'DRY-RUN:'; printf ' %q' "$@"; printf '\n'
    return 0
  fi
  "$@"
}

# mvp::wait_for SECONDS WHAT CMD...: polls CMD every 0.1 s.
mvp::wait_for() {
  local seconds=$1 what=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    ((SECONDS < deadline)) || { mvp::warn "timed out after ${seconds}s waiting for $what"; return 1; }
    sleep 0.1
  done
}

# ---------------------------------------------------------- configuration --
# Precedence, lowest first: config/defaults.env, the config file
# (--config, MVP_CONFIG or config/local.env), the environment, the flags.
MVP_SETTINGS_PATTERN='^(MVP_[A-Z0-9_]+|SHARED_ROOT|CODE_ID)$'

# mvp::parse_flags "$@": takes the flags every script has and leaves the
# others, in order, in MVP_ARGS.
mvp::parse_flags() {
  MVP_ARGS=()
  MVP_FLAG_SETTINGS=()
  while (($#)); do
    case $1 in
      -h|--help) mvp::usage; exit 0 ;;
      --dry-run) MVP_DRY_RUN=1 ;;
      --config) (($# > 1)) || mvp::die "--config needs a file"; MVP_FLAG_SETTINGS+=("MVP_CONFIG=$2"); shift ;;
      --runtime) (($# > 1)) || mvp::die "--runtime needs compose or local"; MVP_FLAG_SETTINGS+=("MVP_RUNTIME=$2"); shift ;;
      --shared-root) (($# > 1)) || mvp::die "--shared-root needs a path"; MVP_FLAG_SETTINGS+=("SHARED_ROOT=$2"); shift ;;
      *) MVP_ARGS+=("$1") ;;
    esac
    shift
  done
}

mvp::config::source_file() {
  local file=$1 line
  [[ -f $file && -r $file ]] || mvp::die "config file $file is missing or unreadable; fix the path in MVP_CONFIG or --config"
  # Only NAME=value lines: a config file is settings, not a program.
  while IFS= read -r line || [[ -n $line ]]; do
    [[ $line =~ ^[[:space:]]*(#.*)?$ ]] && continue
    [[ $line =~ ^[A-Z_][A-Z0-9_]*= ]] || mvp::die "$file: '$line' is not a NAME=value line"
  done <"$file"
  # shellcheck disable=SC1090  # the file is the user's config, checked above
  source "$file"
}

mvp::config::load() {
  local name
  local -A from_env=()
  while IFS= read -r name; do
    [[ $name =~ $MVP_SETTINGS_PATTERN ]] && from_env[$name]=${!name}
  done < <(compgen -e)

  mvp::config::source_file "$MVP_REPO/config/defaults.env"
  local file=${from_env[MVP_CONFIG]:-} setting
  for setting in "${MVP_FLAG_SETTINGS[@]}"; do [[ $setting == MVP_CONFIG=* ]] && file=${setting#MVP_CONFIG=}; done
  [[ -z $file && -f $MVP_REPO/config/local.env ]] && file=$MVP_REPO/config/local.env
  if [[ -n $file ]]; then
    mvp::config::source_file "$file"
    MVP_CONFIG_LOADED=$file
  else
    MVP_CONFIG_LOADED="$MVP_REPO/config/defaults.env (no local.env)"
  fi
  for name in "${!from_env[@]}"; do printf -v "$name" '%s' "${from_env[$name]}"; done
  for setting in "${MVP_FLAG_SETTINGS[@]}"; do printf -v "${setting%%=*}" '%s' "${setting#*=}"; done
  mvp::config::derive
}

# Fills the settings whose empty value means "derived" and checks the rest.
mvp::config::derive() {
  case $MVP_RUNTIME in
    local|compose) ;;
    *) mvp::die "MVP_RUNTIME='$MVP_RUNTIME' is not a runtime; set it to compose or local" ;;
  esac
  [[ $MVP_WORKERS =~ ^[1-9][0-9]?$ ]] || mvp::die "MVP_WORKERS='$MVP_WORKERS' must be a whole number from 1 to 99"
  [[ $MVP_GPUS_PER_WORKER =~ ^[0-9]+$ ]] || mvp::die "MVP_GPUS_PER_WORKER='$MVP_GPUS_PER_WORKER' must be a whole number"
  MVP_DEFAULT_SHARED=$MVP_REPO/.mvp/shared
  MVP_STATE_DIR=${MVP_STATE_DIR:-$MVP_REPO/.mvp/state}
  MVP_VERL_DIR=${MVP_VERL_DIR:-$MVP_REPO/verl}
  MVP_VENV=$MVP_REPO/.venv
  if [[ $MVP_RUNTIME == local ]]; then
    SHARED_ROOT=${SHARED_ROOT:-$MVP_DEFAULT_SHARED}
    MVP_HOST_SHARED_DIR=$SHARED_ROOT
    MVP_HEAD_IP=${MVP_HEAD_IP:-127.0.0.2}
    MVP_NODE_REPO=$MVP_REPO
    MVP_NODE_VERL_DIR=$MVP_VERL_DIR
    MVP_PYTHON=$MVP_VENV/bin/python
    MVP_HOST_PYTHON=$MVP_PYTHON
  else
    SHARED_ROOT=${SHARED_ROOT:-/private}
    MVP_HOST_SHARED_DIR=${MVP_HOST_SHARED_DIR:-$MVP_DEFAULT_SHARED}
    MVP_HEAD_IP=${MVP_HEAD_IP:-172.28.0.2}
    MVP_NODE_REPO=/workspace/mvp
    MVP_NODE_VERL_DIR=/workspace/verl
    MVP_PYTHON=python3
    MVP_HOST_PYTHON=python3
  fi
  [[ $SHARED_ROOT == /* ]] || mvp::die "SHARED_ROOT='$SHARED_ROOT' must be an absolute path"
  [[ $MVP_HEAD_IP =~ ^([0-9]+\.){3}[0-9]+$ ]] || mvp::die "MVP_HEAD_IP='$MVP_HEAD_IP' is not an IPv4 address"
  if [[ -z $MVP_WORKER_IPS ]]; then
    local prefix=${MVP_HEAD_IP%.*} last=${MVP_HEAD_IP##*.} i
    for ((i = 1; i <= MVP_WORKERS; i++)); do MVP_WORKER_IPS+="${MVP_WORKER_IPS:+ }$prefix.$((last + i))"; done
  fi
  read -r -a MVP_WORKER_IP_LIST <<<"$MVP_WORKER_IPS"
  ((${#MVP_WORKER_IP_LIST[@]} == MVP_WORKERS)) ||
    mvp::die "MVP_WORKER_IPS has ${#MVP_WORKER_IP_LIST[@]} addresses for MVP_WORKERS=$MVP_WORKERS; give one per worker or leave it empty"
  # The source tree to snapshot, as the head node sees it.
  local src=${MVP_VERL_SRC:-}
  if [[ -z $src ]]; then
    MVP_NODE_VERL_SRC=$MVP_NODE_VERL_DIR
  elif [[ $src == /* ]]; then
    MVP_NODE_VERL_SRC=$src
  else
    MVP_NODE_VERL_SRC=$MVP_NODE_REPO/$src
  fi
  MVP_DASHBOARD_URL=http://$MVP_HEAD_IP:$MVP_DASHBOARD_PORT
  MVP_HOST_DASHBOARD_URL=$MVP_DASHBOARD_URL
  if [[ $MVP_RUNTIME == compose ]]; then
    MVP_DASHBOARD_URL=http://127.0.0.1:8265
    MVP_HOST_DASHBOARD_URL=http://127.0.0.1:$MVP_DASHBOARD_PORT
  fi
  MVP_HEAD_NODE=mvp11-ray-head
  MVP_NODES=("$MVP_HEAD_NODE")
  local i
  for ((i = 0; i < MVP_WORKERS; i++)); do MVP_NODES+=("mvp11-ray-worker-$i"); done
}

# Settings the Python helper reads, as the nodes see them.
mvp::helper_env() {
  local -a env=(
    "SHARED_ROOT=$SHARED_ROOT" "MVP_RUNTIME=$MVP_RUNTIME"
    "MVP_DASHBOARD_URL=$MVP_DASHBOARD_URL" "MVP_HEAD_IP=$MVP_HEAD_IP" "MVP_WORKER_IPS=$MVP_WORKER_IPS"
    "MVP_WORKERS=$MVP_WORKERS" "MVP_GPUS_PER_WORKER=$MVP_GPUS_PER_WORKER"
    "MVP_JOB_TIMEOUT=$MVP_JOB_TIMEOUT" "MVP_NODES_TIMEOUT=$MVP_NODES_TIMEOUT"
    "CODE_ID=$CODE_ID" "MVP_VERL_SRC=$MVP_NODE_VERL_SRC"
    "MVP_GSM8K_SOURCE=$MVP_GSM8K_SOURCE" "MVP_MODEL_ID=$MVP_MODEL_ID"
    "MVP_MODEL_SOURCE=$MVP_MODEL_SOURCE" "MVP_SKIP_MODEL=$MVP_SKIP_MODEL"
    "MVP_DRY_RUN=$MVP_DRY_RUN" "PYTHONPATH=$MVP_NODE_REPO/helpers"
  )
  printf '%s\0' "${env[@]}"
}

# mvp::helper ARGS...: the Python helper inside the head node.
mvp::helper() {
  local -a env=()
  mapfile -d '' env < <(mvp::helper_env)
  mvp::rt::exec "$MVP_HEAD_NODE" env "${env[@]}" "$MVP_PYTHON" -m mvp "$@"
}

# mvp::helper_host ARGS...: the helper on this host, for what must work while
# the cluster is down (status, waiting for nodes). Standard library only.
mvp::helper_host() {
  local -a env=()
  mapfile -d '' env < <(mvp::helper_env)
  env "${env[@]}" "SHARED_ROOT=$MVP_HOST_SHARED_DIR" "MVP_DASHBOARD_URL=$MVP_HOST_DASHBOARD_URL" \
    "PYTHONPATH=$MVP_REPO/helpers" "$MVP_HOST_PYTHON" -m mvp "$@"
}

# mvp::helper_data ARGS...: the helper where the data tools are: the project
# venv for local (same paths as the nodes), the head container for compose.
mvp::helper_data() {
  if [[ $MVP_RUNTIME == local ]]; then mvp::helper_host "$@"; else mvp::helper "$@"; fi
}

# ------------------------------------------------------------- submitting --
# mvp::submit cli|sdk JOBSPEC RAY_CONFIG|"" [HELPER ARGS...]: validates, makes
# (an empty RAY_CONFIG is templates/configs/dev.yaml)
# the job directory and submits from the head. Takes --wait and
# --override KEY=VALUE from MVP_ARGS; prints the submission id last on stdout.
mvp::submit() {
  local via=$1 spec=$2 cfg=${3:-$MVP_REPO/templates/configs/dev.yaml} arg; shift 3
  local -a args=(submit --via "$via") rest=()
  set -- "$@" "${MVP_ARGS[@]}"
  while (($#)); do
    case $1 in
      --wait) args+=(--wait) ;;
      --override) (($# > 1)) || mvp::die "--override needs KEY=VALUE"; args+=(--override "$2"); shift ;;
      --model) args+=(--model "$2"); shift ;;
      -*) mvp::die "unknown option '$1'; see --help" ;;
      *) rest+=("$1") ;;
    esac
    shift
  done
  ((${#rest[@]} == 0)) || mvp::die "unexpected argument '${rest[0]}'; see --help"
  for arg in "$spec" "$cfg"; do
    [[ -f $arg && -r $arg ]] || mvp::die "$arg does not exist or is not readable"
  done
  args+=(--jobspec-name "$spec" --jobspec-text "$(<"$spec")")
  args+=(--ray-config-name "$cfg" --ray-config-text "$(<"$cfg")")
  [[ -n $CODE_ID ]] && args+=(--code-id "$CODE_ID")
  [[ $MVP_DRY_RUN == 1 ]] && args+=(--check-only)
  mvp::rt::node_is_up "$MVP_HEAD_NODE" || mvp::die "the head node is not up; run scripts/01_up.sh and 20_start_head.sh"
  mvp::helper "${args[@]}"
}

# ---------------------------------------------------------------- Ray --
# mvp::ray_start_args INDEX: the `ray start` words of node INDEX (0 = head).
mvp::ray_start_args() {
  local index=$1
  MVP_RAY_ARGS=(ray start --disable-usage-stats)
  if ((index == 0)); then
    local dashboard_host=$MVP_HEAD_IP dashboard_port=$MVP_DASHBOARD_PORT
    # compose: 8265 inside the container, published on the host as
    # 127.0.0.1:MVP_DASHBOARD_PORT only (docker-compose.yaml).
    [[ $MVP_RUNTIME == compose ]] && dashboard_host=0.0.0.0 dashboard_port=8265
    MVP_RAY_ARGS+=(--head --num-cpus=0 --num-gpus=0 "--node-ip-address=$MVP_HEAD_IP"
      "--port=$MVP_GCS_PORT" "--dashboard-host=$dashboard_host" "--dashboard-port=$dashboard_port"
      "--ray-client-server-port=$MVP_CLIENT_PORT")
  else
    MVP_RAY_ARGS+=("--address=$MVP_HEAD_IP:$MVP_GCS_PORT" "--node-ip-address=${MVP_WORKER_IP_LIST[$((index - 1))]}"
      "--num-gpus=$MVP_GPUS_PER_WORKER" '--resources={"worker_node": 100}')
    [[ $MVP_RUNTIME == local && -n $MVP_WORKER_CPUS ]] && MVP_RAY_ARGS+=("--num-cpus=$MVP_WORKER_CPUS")
  fi
  if [[ $MVP_RUNTIME == local ]]; then
    # Nodes share the host's network, so every port a node opens is pinned.
    local base=$((MVP_NODE_PORT_BASE + 1000 * index))
    MVP_RAY_ARGS+=("--node-manager-port=$base" "--object-manager-port=$((base + 1))"
      "--dashboard-agent-listen-port=$((base + 2))" "--dashboard-agent-grpc-port=$((base + 3))"
      "--metrics-export-port=$((base + 4))" "--runtime-env-agent-port=$((base + 5))"
      "--min-worker-port=$((base + 100))" "--max-worker-port=$((base + 299))"
      "--object-store-memory=$MVP_OBJECT_STORE_BYTES")
  fi
}

# Ports node INDEX listens on, for the prerequisite check.
mvp::node_ports() {
  local index=$1
  if ((index == 0)); then
    echo "$MVP_GCS_PORT $MVP_DASHBOARD_PORT $MVP_CLIENT_PORT"
  fi
  if [[ $MVP_RUNTIME == local ]]; then
    local base=$((MVP_NODE_PORT_BASE + 1000 * index))
    echo "$base $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) $((base + 5))"
  fi
}

mvp::node_ip() {
  local index=$1
  if ((index == 0)); then echo "$MVP_HEAD_IP"; else echo "${MVP_WORKER_IP_LIST[$((index - 1))]}"; fi
}

# Is Ray's raylet (and, on the head, the GCS) running inside the node?
mvp::ray_running_in() {
  local node=$1
  mvp::rt::exec "$node" pgrep -x raylet >/dev/null 2>&1 || return 1
  [[ $node != "$MVP_HEAD_NODE" ]] || mvp::rt::exec "$node" pgrep -x gcs_server >/dev/null 2>&1
}

# Processes of an earlier Ray inside the node (a head or worker that died
# half-way), which would hold its ports. Checked first: `ray stop` costs a
# second of Python start-up.
mvp::ray_leftovers_in() {
  mvp::rt::exec "$1" pgrep -f '/ray/(core|dashboard|_private|autoscaler|util)/' >/dev/null 2>&1
}

# mvp::ray_stop_leftovers NODE: `ray stop` inside NODE, only when needed.
mvp::ray_stop_leftovers() {
  if mvp::ray_leftovers_in "$1"; then
    mvp::log "stopping what is left of an earlier Ray in $1"
    mvp::run mvp::rt::exec "$1" ray stop --force >/dev/null 2>&1 || true
  fi
}

# --------------------------------------------------------------- locks --
# mvp::with_lock FILE CMD...: runs CMD holding an exclusive lock on FILE;
# returns 75 at once, running nothing, when another process holds it.
# flock -o keeps the lock out of CMD's children: Ray daemons started by a
# locked run must not hold the lock after the run ends.
MVP_LOCKED_EXIT=75
mvp::with_lock() {
  local file=$1; shift
  mkdir -p "$(dirname "$file")"
  flock -n -o -E "$MVP_LOCKED_EXIT" "$file" "$@"
}

# ------------------------------------------------------------ bootstrap --
# mvp::init "$@": every script's first call.
mvp::init() {
  mvp::parse_flags "$@"
  mvp::config::load
  # shellcheck source=runtime_local.sh
  source "$MVP_REPO/scripts/lib/runtime_$MVP_RUNTIME.sh"
  [[ ${MVP_QUIET_CONFIG:-0} == 1 ]] || mvp::info "config: $MVP_CONFIG_LOADED (runtime $MVP_RUNTIME, shared root $SHARED_ROOT)"
}
