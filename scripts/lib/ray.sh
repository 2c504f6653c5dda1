# shellcheck shell=bash
# Ray on the nodes: `ray start` arguments, addresses, and what runs where.

# mvp::ray::start_args INDEX: the `ray start` words of node INDEX (0 = head)
# in MVP_RAY_ARGS; the runtime adds what it needs (mvp::rt::ray_start_args).
mvp::ray::start_args() {
  local index=$1
  MVP_RAY_ARGS=(ray start --disable-usage-stats)
  if ((index == 0)); then
    local dashboard_host dashboard_port
    read -r dashboard_host dashboard_port < <(mvp::rt::dashboard_bind)
    MVP_RAY_ARGS+=(--head --num-cpus=0 --num-gpus=0 "--node-ip-address=$MVP_HEAD_IP" "--port=$MVP_GCS_PORT"
      "--dashboard-host=$dashboard_host" "--dashboard-port=$dashboard_port" "--ray-client-server-port=$MVP_CLIENT_PORT")
  else
    MVP_RAY_ARGS+=("--address=$MVP_HEAD_IP:$MVP_GCS_PORT" "--node-ip-address=$(mvp::ray::node_ip "$index")"
      "--num-gpus=$MVP_GPUS_PER_WORKER" '--resources={"worker_node": 100}')
  fi
  mvp::rt::ray_start_args "$index"
}

# The one place of the pinned-port arithmetic: node INDEX's Ray ports at
# MVP_NODE_PORT_BASE + 1000*INDEX, as FLAG=PORT words of `ray start` in
# MVP_PINNED_PORTS (its own +0..+5, worker processes +100..+299). The local
# and slurm runtimes (nodes that share a network namespace) and ssh (several
# nodes on one host, firewalls that want known ports) all use it.
mvp::ray::pinned_port_words() {
  local base=$((MVP_NODE_PORT_BASE + 1000 * $1))
  MVP_PINNED_PORTS=("node-manager-port=$base" "object-manager-port=$((base + 1))"
    "dashboard-agent-listen-port=$((base + 2))" "dashboard-agent-grpc-port=$((base + 3))"
    "metrics-export-port=$((base + 4))" "runtime-env-agent-port=$((base + 5))"
    "min-worker-port=$((base + 100))" "max-worker-port=$((base + 299))")
}

# mvp::ray::pinned_port_args INDEX: a worker's --num-cpus (MVP_WORKER_CPUS)
# and every pinned port of node INDEX, appended to MVP_RAY_ARGS.
mvp::ray::pinned_port_args() {
  local word
  (($1 > 0)) && [[ -n $MVP_WORKER_CPUS ]] && MVP_RAY_ARGS+=("--num-cpus=$MVP_WORKER_CPUS")
  mvp::ray::pinned_port_words "$1"
  for word in "${MVP_PINNED_PORTS[@]}"; do MVP_RAY_ARGS+=("--$word"); done
}

# For runtimes whose nodes share a network namespace with others (local,
# slurm): the pinned ports and the object store's size.
mvp::ray::pinned_args() {
  mvp::ray::pinned_port_args "$1"
  MVP_RAY_ARGS+=("--object-store-memory=$MVP_OBJECT_STORE_BYTES")
}

# "IP PORT" lines of the ports mvp::ray::pinned_port_words gives node INDEX
# (not the worker processes' range), and the head's GCS, dashboard and
# client ports.
mvp::ray::pinned_ports() {
  local index=$1 ip word
  ip=$(mvp::ray::node_ip "$index")
  ((index == 0)) && echo "$ip $MVP_GCS_PORT" && echo "$ip $MVP_DASHBOARD_PORT" && echo "$ip $MVP_CLIENT_PORT"
  mvp::ray::pinned_port_words "$index"
  for word in "${MVP_PINNED_PORTS[@]}"; do
    [[ $word == *-worker-port=* ]] || echo "$ip ${word#*=}"
  done
}

mvp::ray::node_ip() {
  local index=$1
  if ((index == 0)); then echo "$MVP_HEAD_IP"; else echo "${MVP_WORKER_IP_LIST[$((index - 1))]}"; fi
}

# mvp::ray::ports_taken INDEX: "IP:PORT" of each port node INDEX's Ray will bind
# on this host's network (mvp::rt::node_ports) that something answers on
# already: ray start would fail on it, or worse, carry on without its
# dashboard and leave 20 waiting.
mvp::ray::ports_taken() {
  local ip port
  while read -r ip port; do
    if (: <"/dev/tcp/$ip/$port") 2>/dev/null; then echo "$ip:$port"; fi
  done < <(mvp::rt::node_ports "$1")
  return 0
}

mvp::ray::ports_free() { [[ -z $(mvp::ray::ports_taken "$1") ]]; }

# Is Ray's raylet (and, on the head, the GCS) running inside the node?
mvp::ray::running_in() {
  local node=$1
  mvp::rt::exec "$node" pgrep -x raylet >/dev/null 2>&1 || return 1
  [[ $node != "$MVP_HEAD_NODE" ]] || mvp::rt::exec "$node" pgrep -x gcs_server >/dev/null 2>&1
}

# Processes of an earlier Ray inside the node (a head or worker that died
# half-way), which would hold its ports. Checked first: `ray stop` costs a
# second of Python start-up.
mvp::ray::leftovers_in() {
  mvp::rt::exec "$1" pgrep -f '/ray/(core|dashboard|_private|autoscaler|util)/' >/dev/null 2>&1
}

# Ray token auth (MVP_RAY_AUTH=token): every node, the Ray CLI and SDK and the
# helper's HTTP calls read the token from its file (RAY_AUTH_TOKEN_PATH); it
# is never printed, put in argv or copied. These are the variables a process
# in a node needs, NUL-separated. Off is said explicitly too: with
# RAY_AUTH_MODE unset, Ray 2.60 turns token auth on whenever it finds a
# token (~/.ray/auth_token, which any local ray.init now creates), and the
# runbook's calls would then be refused.
mvp::ray::auth_env() {
  if [[ $MVP_RAY_AUTH == token ]]; then
    printf '%s\0' RAY_AUTH_MODE=token "RAY_AUTH_TOKEN_PATH=$MVP_RAY_TOKEN_FILE"
  else
    printf '%s\0' RAY_AUTH_MODE=disabled
  fi
}

# Creates the token once, through this host's view of the shared storage:
# 256 random bits, mode 0600 in a 0700 directory, never overwritten.
mvp::ray::auth_token() {
  local file=$MVP_HOST_RAY_TOKEN_FILE token
  [[ $MVP_RAY_AUTH == token && ! -s $file ]] || return 0
  if [[ $MVP_DRY_RUN == 1 ]]; then echo "DRY-RUN: create the Ray auth token $file (mode 0600)"; return 0; fi
  [[ -d $MVP_HOST_SHARED_DIR ]] ||
    mvp::log::die "cannot create the Ray auth token: $MVP_HOST_SHARED_DIR does not exist on this host; mount the shared storage there (MVP_HOST_SHARED_DIR)"
  token=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
  # noclobber: of two runs at once, one writes and the other keeps its file.
  (umask 077 && mkdir -p "${file%/*}" && set -C && printf '%s' "$token" >"$file") 2>/dev/null || [[ -s $file ]] ||
    mvp::log::die "cannot write the Ray auth token $file; check the shared storage's permissions"
  mvp::log::step "created the Ray auth token $file (mode 0600, shown nowhere)"
}

# mvp::ray::start NODE INDEX: `ray start` inside NODE, after stopping what an
# earlier Ray left there (only inside that node: its own namespace).
mvp::ray::start() {
  local node=$1 index=$2
  local -a auth=()
  mapfile -d '' auth < <(mvp::ray::auth_env)
  ((index > 0)) || mvp::ray::auth_token
  mvp::ray::start_args "$index"
  ((${#auth[@]} == 0)) || MVP_RAY_ARGS=(env "${auth[@]}" "${MVP_RAY_ARGS[@]}")
  if mvp::ray::leftovers_in "$node"; then
    mvp::log::step "stopping what is left of an earlier Ray in $node"
    mvp::run::cmd mvp::rt::exec "$node" ray stop --force >/dev/null 2>&1 || true
  fi
  # Ports an earlier Ray just let go of may take a moment to close.
  local taken
  taken=$(mvp::ray::ports_taken "$index" | xargs)
  if [[ -n $taken ]] && ! mvp::run::wait_for 5 "ports $taken to be free" mvp::ray::ports_free "$index" 2>/dev/null; then
    mvp::log::die "port(s) $taken of $node are in use by something else; stop it or change MVP_*_PORT / MVP_NODE_PORT_BASE"
  fi
  # Ray gives a new raylet a fixed 30 s to register with the GCS
  # (ray/_private/node.py:428, no setting); a loaded host misses it now and
  # then, twice in a row once (a head started while four jobs trained
  # beside it, 2026-11-28). That failure, and no other, is tried again in a
  # clean node, up to 3 starts in all.
  local err rc attempt
  err=$(mktemp) || mvp::log::die "cannot create a temporary file for ray start's output; check \$TMPDIR"
  for attempt in 1 2 3; do
    rc=0
    mvp::run::cmd mvp::rt::exec "$node" "${MVP_RAY_ARGS[@]}" >/dev/null 2>"$err" || rc=$?
    if ((rc == 0 || attempt == 3)) || ! grep -q "timed out during startup" "$err"; then break; fi
    mvp::log::warn "$node: Ray's raylet did not register within Ray's 30 s (a loaded host); stopping it and starting it again (start $((attempt + 1)) of 3)"
    mvp::rt::exec "$node" ray stop --force >/dev/null 2>&1 || true
    mvp::run::wait_for 5 "ports of $node to be free" mvp::ray::ports_free "$index" 2>/dev/null || true
  done
  cat "$err" >&2
  rm -f "$err"
  return "$rc"
}
