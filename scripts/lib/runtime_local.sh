# shellcheck shell=bash disable=SC2034  # mvp::rt::derive sets settings that config.sh, helper.sh and the scripts read
# Runtime "local": each node is a PID + mount + UTS namespace on this host
# with its own loopback address, its own /tmp/ray and pinned ports. Separate
# PID namespaces matter: a job driver finds the raylet to join by scanning the
# processes it can see, so without them every driver would join the head's.

# The nodes see this host's files and venv, so paths are the host's: every
# value of the runtime is the contract's default.local or default.*
# (config/settings.contract); nothing is left to compute here.
mvp::rt::derive() { :; }

# "IP=DIR" words: where this host sees each node's /tmp/ray (its Ray logs
# outlive the node's raylet). Needs the node addresses: config.sh calls it.
mvp::rt::node_ray_dirs() {
  local i
  MVP_NODE_RAY_DIRS=""
  for ((i = 0; i < ${#MVP_NODES[@]}; i++)); do
    MVP_NODE_RAY_DIRS+="${MVP_NODE_RAY_DIRS:+ }$(mvp::ray::node_ip "$i")=$(mvp::rt::node_dir "${MVP_NODES[$i]}")/tmp-ray"
  done
}

# Nodes share the host's network, so every port a node opens is pinned:
# node k's at MVP_NODE_PORT_BASE + 1000*k.
mvp::rt::ray_start_args() { mvp::ray::pinned_args "$1"; }

# "HOST PORT" the head's dashboard binds to.
mvp::rt::dashboard_bind() { echo "$MVP_HEAD_IP $MVP_DASHBOARD_PORT"; }

# "IP PORT" lines: what node INDEX will listen on, for the prerequisite check.
mvp::rt::node_ports() { mvp::ray::pinned_ports "$1"; }

mvp::rt::node_dir() { echo "$MVP_STATE_DIR/nodes/$1"; }

# NAME=value words (NUL-separated) of the variables a node's processes may
# get from this host: the basics of a login, and mvp::run::node_env_names.
mvp::rt::allowed_env() {
  local name
  while IFS= read -r name; do
    case $name in HOME|USER|LOGNAME|LANG|LC_?*|TZ|TMPDIR) printf '%s=%s\0' "$name" "${!name}" ;; esac
  done < <(compgen -e)
  while IFS= read -r name; do printf '%s=%s\0' "$name" "${!name}"; done < <(mvp::run::node_env_names)
  return 0
}

# The host PID of the node's init (PID 1 inside), or nothing when it is down.
mvp::rt::node_pid() {
  local node=$1 pid
  local pidfile
  pidfile="$(mvp::rt::node_dir "$node")/init.pid"
  [[ -r $pidfile ]] || return 1
  pid=$(<"$pidfile")
  # A recycled PID is not our node: the init carries the node's name.
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 1
  local -a argv=()
  mapfile -d '' argv <"/proc/$pid/cmdline" 2>/dev/null || return 1
  [[ ${argv[1]:-} == */local_node_init.sh && ${argv[2]:-} == "$node" ]] || return 1
  # A killed init stays in /proc while the kernel ends the rest of its PID
  # namespace (Ray's processes: seconds on a loaded host): it is not up.
  mvp::rt::exiting "$pid" && return 1
  echo "$pid"
}

# mvp::rt::exiting PID: the process is on its way out: PF_EXITING (0x4 in
# the flags field of /proc/PID/stat, the 7th after the command's closing ')'),
# or, before the kernel sets that flag, a SIGKILL pending (bit 0x100 of SigPnd
# or ShdPnd in /proc/PID/status). kill(2) returns with the signal queued, and
# on a loaded host the target may not run for a while: a rehearsal's fault
# test killed the head's init, and 01 found it up in that window while 20,
# a moment later, found it exiting ("not up").
mvp::rt::exiting() {
  local stat line
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  local -a f
  read -ra f <<<"${stat##*) }"
  ((${f[6]:-0} & 4)) && return 0
  while read -r line; do
    case $line in
      SigPnd:* | ShdPnd:*) ((16#${line##*[[:space:]]} & 0x100)) && return 0 ;;
    esac
  done 2>/dev/null <"/proc/$1/status"
  return 1
}

mvp::rt::node_is_up() { mvp::rt::node_pid "$1" >/dev/null; }

# mvp::rt::exec NODE CMD...: runs CMD inside the node from a neutral directory
# with the project venv first on PATH, in an environment built from an
# allow-list (mvp::rt::allowed_env): Ray daemons started here pass their environment
# to every job, so nothing else of the operator's shell may reach them.
mvp::rt::exec() {
  local node=$1 pid; shift
  pid=$(mvp::rt::node_pid "$node") || mvp::log::die "node $node is not up; run scripts/01_up.sh"
  local -a env=() userns=()
  mapfile -d '' env < <(mvp::rt::allowed_env)
  # Not root: the node's namespaces belong to its user namespace (up_node), so
  # that one is entered first; --preserve-credentials, as setgroups is denied
  # there (--map-root-user), and this user is the namespace's root anyway.
  ((EUID == 0)) || userns=(--user --preserve-credentials)
  nsenter -t "$pid" "${userns[@]}" --pid --mount --uts --wd=/ -- env -i "${env[@]}" "PATH=$MVP_VENV/bin:$PATH" "$@"
}

mvp::rt::prereq() {
  local tool
  for tool in unshare nsenter flock; do
    command -v "$tool" >/dev/null || MVP_PROBLEMS+=("$tool is missing; install util-linux (apt-get install util-linux)")
  done
  if ((EUID != 0)) && ! unshare --user --map-root-user true 2>/dev/null; then
    MVP_PROBLEMS+=("user namespaces are disabled for non-root users; run as root or enable kernel.unprivileged_userns_clone")
  fi
  if command -v nvidia-smi >/dev/null; then
    mvp::log::info "GPUs: local runtime gives each worker $MVP_GPUS_PER_WORKER logical GPUs (nvidia-smi is present but not used)"
  else
    mvp::log::info "GPUs: none on this host; each worker gets $MVP_GPUS_PER_WORKER logical GPUs"
  fi
}

mvp::rt::up_node() {
  local node=$1 dir
  dir=$(mvp::rt::node_dir "$node")
  if mvp::rt::node_is_up "$node"; then
    mvp::log::skip "node $node (namespace already up, pid $(mvp::rt::node_pid "$node"))"
    return 0
  fi
  local old
  old=$(cat "$dir/init.pid" 2>/dev/null) || old=""
  if [[ $old =~ ^[0-9]+$ && $MVP_DRY_RUN != 1 ]] && mvp::rt::exiting "$old"; then
    mvp::run::wait_for 60 "the killed node $node (pid $old) to finish exiting" mvp::rt::pid_gone "$old" ||
      mvp::log::die "node $node (pid $old) was killed but has not exited in 60 s; see ps -o pid,stat,cmd --ppid $old"
  fi
  mvp::log::step "starting node $node"
  [[ $MVP_DRY_RUN == 1 ]] || { mkdir -p "$dir/tmp-ray"; rm -f "$dir/ready"; }
  local -a userns=()
  ((EUID == 0)) || userns=(--user --map-root-user)
  local -a cmd=(env "PATH=$MVP_VENV/bin:$PATH" setsid unshare "${userns[@]}" --pid --fork --mount-proc --uts --propagation private
    bash "$MVP_REPO/scripts/libexec/local_node_init.sh" "$node" "$dir/tmp-ray" "$dir/ready")
  if [[ $MVP_DRY_RUN == 1 ]]; then mvp::run::cmd "${cmd[@]}"; return 0; fi
  "${cmd[@]}" </dev/null >>"$dir/init.log" 2>&1 &
  local unshare_pid=$!
  mvp::run::wait_for 10 "node $node to start" test -s "$dir/ready" || mvp::log::die "node $node did not start; see $dir/init.log"
  # The init is unshare's only child; its host PID is what nsenter needs.
  local child
  child=$(<"/proc/$unshare_pid/task/$unshare_pid/children")
  echo "${child%% *}" >"$dir/init.pid.tmp" && mv "$dir/init.pid.tmp" "$dir/init.pid"
}

mvp::rt::up() {
  local node
  for node in "${MVP_NODES[@]}"; do mvp::rt::up_node "$node"; done
}

mvp::rt::down_node() {
  local node=$1 pid dir
  dir=$(mvp::rt::node_dir "$node")
  if ! pid=$(mvp::rt::node_pid "$node"); then
    mvp::log::skip "node $node (not up)"
    rm -f "$dir/init.pid"
    return 0
  fi
  mvp::log::step "stopping node $node (pid $pid)"
  # The init exits on SIGTERM, and the kernel SIGKILLs whatever is left in
  # its PID namespace (Ray's processes, as `ray stop --force` would).
  mvp::run::cmd kill -TERM "$pid"
  [[ $MVP_DRY_RUN == 1 ]] && return 0
  if ! mvp::run::wait_for 30 "node $node to stop" mvp::rt::pid_gone "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    mvp::run::wait_for 5 "node $node to die" mvp::rt::pid_gone "$pid" || mvp::log::die "node $node (pid $pid) would not stop"
  fi
  rm -f "$dir/init.pid"
}

# Ends every process in the node (its PID namespace) and starts it empty.
mvp::rt::reset_node() { mvp::rt::down_node "$1" && mvp::rt::up_node "$1"; }

mvp::rt::pid_gone() { [[ ! -e /proc/$1 ]]; }

mvp::rt::down() {
  local i pid rc=0
  local -a pids=()
  # The workers at once, then the head, so it does not watch them die.
  for ((i = ${#MVP_NODES[@]} - 1; i >= 1; i--)); do
    mvp::rt::down_node "${MVP_NODES[$i]}" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  ((rc == 0)) || return 1
  mvp::rt::down_node "${MVP_NODES[0]}"
}
