# shellcheck shell=bash disable=SC2034  # mvp::rt::derive sets settings that config.sh, helper.sh and the scripts read
# Runtime "ssh": the nodes are containers (or hosts) the compute platform
# created; the runbook only reaches them over SSH to start Ray, submit jobs
# and collect results (the v1.1 runbook spec, point 13: docs/spec.md). Every node sees the shared
# storage at SHARED_ROOT, and so does the host that runs the runbook (the head
# itself or a bastion), at MVP_HOST_SHARED_DIR.
#
# "Run in node X" is one `ssh -o BatchMode=yes -o StrictHostKeyChecking=yes`
# whose remote command is built from words each quoted for a POSIX shell, so
# arguments with spaces, quotes and `$` arrive intact. Secrets never travel:
# the Ray token is created on the shared storage (0600) and read there.

# The runtime's derived values (the settings' defaults, per runtime, are in
# config/settings.contract).
mvp::rt::derive() {
  mvp::rt::parse_inventory
  # Under the host's view of the shared storage a path moves to SHARED_ROOT;
  # anything else is the same path on the nodes.
  mvp::nodes::path --outside-as-is "$MVP_REPO" MVP_NODE_REPO
  mvp::nodes::path --outside-as-is "$MVP_VERL_DIR" MVP_NODE_VERL_DIR
}

# MVP_SSH_HEAD and MVP_SSH_WORKERS ([user@]host[:port]) into the ssh target
# and port of each node (index 0 = head); the inventory sets MVP_WORKERS.
# A node's Ray address defaults to its host part when that is an IPv4 address.
mvp::rt::parse_inventory() {
  local -a workers=()
  read -r -a workers <<<"$MVP_SSH_WORKERS"
  [[ -n $MVP_SSH_HEAD ]] || mvp::log::die "MVP_SSH_HEAD is empty; set it to the head node as [user@]host[:port] (and MVP_SSH_WORKERS to the workers)"
  ((${#workers[@]})) || mvp::log::die "MVP_SSH_WORKERS is empty; list the worker nodes as [user@]host[:port], space separated"
  ((${#workers[@]} <= 99)) || mvp::log::die "MVP_SSH_WORKERS lists ${#workers[@]} nodes; at most 99 are supported"
  MVP_WORKERS=${#workers[@]}
  MVP_SSH_TARGETS=() MVP_SSH_PORTS=()
  local entry host port ips=() i=0 known_ips
  read -r -a known_ips <<<"$MVP_WORKER_IPS"
  for entry in "$MVP_SSH_HEAD" "${workers[@]}"; do
    [[ $entry =~ ^(([A-Za-z0-9._-]+)@)?([A-Za-z0-9.-]+)(:([0-9]{1,5}))?$ ]] ||
      mvp::log::die "'$entry' in MVP_SSH_HEAD/MVP_SSH_WORKERS is not [user@]host[:port]; fix your inventory"
    host=${BASH_REMATCH[3]} port=${BASH_REMATCH[5]}
    MVP_SSH_TARGETS+=("${BASH_REMATCH[1]}$host")
    MVP_SSH_PORTS+=("$port")
    if ((i == 0)); then
      if [[ -z $MVP_HEAD_IP ]]; then
        [[ $host =~ ^([0-9]+\.){3}[0-9]+$ ]] ||
          mvp::log::die "MVP_SSH_HEAD names host '$host'; set MVP_HEAD_IP to the head's Ray address (IPv4)"
        MVP_HEAD_IP=$host
      fi
    elif [[ -z $MVP_WORKER_IPS ]]; then
      [[ $host =~ ^([0-9]+\.){3}[0-9]+$ ]] ||
        mvp::log::die "MVP_SSH_WORKERS names host '$host'; set MVP_WORKER_IPS to every worker's Ray address (IPv4), in the same order"
      ips+=("$host")
    fi
    i=$((i + 1))
  done
  [[ -n $MVP_WORKER_IPS ]] || MVP_WORKER_IPS=${ips[*]}
  # config.sh named the nodes from MVP_WORKERS before this count.
  mvp::nodes::name_all
}

# The index of a node (0 = head) in the inventory.
mvp::rt::index() {
  local node=$1 i
  for ((i = 0; i < ${#MVP_NODES[@]}; i++)); do
    [[ ${MVP_NODES[$i]} == "$node" ]] && { echo "$i"; return 0; }
  done
  mvp::log::die "no node named $node in this cluster"
}

# "node (user@host:port)", for messages.
mvp::rt::describe() {
  local i=$1
  echo "${MVP_NODES[$i]} (${MVP_SSH_TARGETS[$i]}${MVP_SSH_PORTS[$i]:+:${MVP_SSH_PORTS[$i]}})"
}

# MVP_SSH_ARGV: the ssh command for node INDEX, up to the remote command.
# Host keys are checked strictly: an unknown or changed key is refused.
mvp::rt::ssh_argv() {
  local i=$1
  MVP_SSH_ARGV=(ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=10
    -o ServerAliveInterval=15 -o ServerAliveCountMax=4 -o LogLevel=ERROR)
  [[ -z $MVP_SSH_CONFIG ]] || MVP_SSH_ARGV+=(-F "$MVP_SSH_CONFIG")
  [[ -z $MVP_SSH_IDENTITY ]] || MVP_SSH_ARGV+=(-i "$MVP_SSH_IDENTITY" -o IdentitiesOnly=yes)
  # The contract's default is ssh's own file: as an option it would override
  # an ssh_config's UserKnownHostsFile. ssh splits option values on spaces
  # unless they are double-quoted.
  [[ -n ${MVP_CONTRACT_FILLED[MVP_SSH_KNOWN_HOSTS]-} ]] || MVP_SSH_ARGV+=(-o "UserKnownHostsFile=\"$MVP_SSH_KNOWN_HOSTS\"")
  [[ -z ${MVP_SSH_PORTS[$i]} ]] || MVP_SSH_ARGV+=(-p "${MVP_SSH_PORTS[$i]}")
  MVP_SSH_ARGV+=("${MVP_SSH_TARGETS[$i]}")
}

# mvp::rt::quote WORD: WORD single-quoted for any POSIX shell (the remote
# login shell may be dash), appended to MVP_SSH_REMOTE.
mvp::rt::quote() {
  local q="'\\''"
  MVP_SSH_REMOTE+=" '${1//\'/$q}'"
}

# mvp::rt::exec NODE CMD...: CMD in the node from /, with MVP_SSH_PATH first
# on PATH and no PYTHONPATH or CUDA_VISIBLE_DEVICES from the login
# environment. stdin reaches CMD; ssh's own failures exit 255. SSH_CLIENT and
# SSH_CONNECTION go too: with them bash believes sshd started it and reads
# ~/.bashrc, so every `bash -c` of Ray (job drivers, runtime_env workers)
# would get the login's PATH (pyenv, conda init) in front of MVP_SSH_PATH.
mvp::rt::exec() {
  local i word name
  i=$(mvp::rt::index "$1") || exit 1
  shift
  MVP_SSH_REMOTE="cd / && exec env -u PYTHONPATH -u CUDA_VISIBLE_DEVICES -u SSH_CLIENT -u SSH_CONNECTION -u SSH2_CLIENT -u SSH_TTY"
  # shellcheck disable=SC2016  # $PATH is the remote shell's to expand
  [[ -z $MVP_SSH_PATH ]] || { mvp::rt::quote "PATH=$MVP_SSH_PATH"; MVP_SSH_REMOTE+=':"$PATH"'; }
  # Fault injection switches of the tests, by value (never secrets).
  while IFS= read -r name; do
    [[ $name =~ ^MVP_FAULT_[A-Z0-9_]+$ ]] && mvp::rt::quote "$name=${!name}"
  done < <(compgen -e MVP_FAULT_ || true)
  for word; do mvp::rt::quote "$word"; done
  mvp::rt::ssh_argv "$i"
  "${MVP_SSH_ARGV[@]}" "$MVP_SSH_REMOTE"
}

# mvp::rt::reach INDEX: exit 0 when node INDEX answers over ssh; otherwise one
# line on stdout saying why (ssh's own multi-line banners are not shown).
mvp::rt::reach() {
  local i=$1 err
  mvp::rt::ssh_argv "$i"
  if err=$("${MVP_SSH_ARGV[@]}" true 2>&1 </dev/null >/dev/null); then return 0; fi
  local where known=$MVP_SSH_KNOWN_HOSTS
  where=$(mvp::rt::describe "$i")
  local host=${MVP_SSH_TARGETS[$i]#*@} port=${MVP_SSH_PORTS[$i]:-22}
  case $err in
    *"IDENTIFICATION HAS CHANGED"*)
      echo "$where: its host key has CHANGED (it differs from $known); ssh refused to connect. If the node was rebuilt, check the new key, then: ssh-keygen -R '[$host]:$port' -f $known" ;;
    *"Host key verification failed"*|*"No "*"host key is known"*)
      echo "$where: its host key is not in $known; ssh refused to connect. Add it once checked: ssh-keyscan -p $port $host >> $known" ;;
    *"Connection refused"*)
      echo "$where: connection refused; is sshd running on $host:$port?" ;;
    *"Permission denied"*)
      echo "$where: ssh login refused (Permission denied); check the user, MVP_SSH_IDENTITY and the node's authorized_keys" ;;
    *)
      err=${err//$'\r'/}
      echo "$where: ssh failed: ${err%%$'\n'*}" ;;
  esac
  return 1
}

# A node is up when it answers over ssh; why not is a warning line, once
# per node and script however often it is asked.
declare -gA MVP_SSH_WARNED=()
mvp::rt::node_is_up() {
  local i why
  i=$(mvp::rt::index "$1") || exit 1
  why=$(mvp::rt::reach "$i") && return 0
  [[ -n ${MVP_SSH_WARNED[$i]:-} ]] || mvp::log::warn "$why"
  MVP_SSH_WARNED[$i]=1
  return 1
}

# The platform's nodes share no network namespace with each other, but
# several may run on one host (and firewalls want known ports): every Ray
# port of node k is pinned as on the local runtime.
mvp::rt::ray_start_args() {
  local extra=()
  mvp::ray::pinned_port_args "$1"
  read -r -a extra <<<"$MVP_SSH_RAY_ARGS"
  MVP_RAY_ARGS+=("${extra[@]}")
}

# The dashboard listens on the head's Ray address; with token auth (the
# default here) every request must carry the token.
mvp::rt::dashboard_bind() { echo "$MVP_HEAD_IP $MVP_DASHBOARD_PORT"; }

# "IP PORT" lines node INDEX will listen on. 00 checks them inside each node
# (mvp::rt::prereq), so the host's own check gets none.
mvp::rt::ray_ports() { mvp::ray::pinned_ports "$1"; }
mvp::rt::node_ports() { :; }

# The nodes' /tmp/ray is not visible from this host: the helper reads a
# driver's log there over ssh instead (mvp::rt::node_log_ssh).
mvp::rt::node_ray_dirs() {
  MVP_NODE_RAY_DIRS=""
  mvp::rt::node_log_ssh
}

# MVP_NODE_SSH: key=value lines (the output contract's), for each node I its
# Ray address (nodeI_ip) and the argv of mvp::rt::ssh_argv that enters it, as
# words (nodeI_argc, nodeI_arg_N: mvp::kv::emit_words). When a job's driver
# node lost its Ray but still answers over ssh, the helper
# (helpers/mvp/jobs/after_sending/node_access.py reads them, archive.py runs them) reads the
# driver's log from the node's own Ray log directory: the ssh rule stays here.
mvp::rt::node_log_ssh() {
  local i ip
  MVP_NODE_SSH=""
  for ((i = 0; i < ${#MVP_NODES[@]}; i++)); do
    mvp::rt::ssh_argv "$i"
    ip=$(mvp::ray::node_ip "$i")
    MVP_NODE_SSH+="$(mvp::kv::emit "node${i}_ip" "$ip" && mvp::kv::emit_words "node${i}_" "${MVP_SSH_ARGV[@]}")"$'\n'
  done
}

# A worker still running an old head's Ray: the container is the platform's,
# so what ends is Ray in it (and with it the job drivers Ray started).
mvp::rt::reset_node() { mvp::run::cmd mvp::rt::exec "$1" ray stop --force >/dev/null 2>&1 || true; }

mvp::rt::up() {
  mvp::log::skip "creating nodes ${MVP_NODES[*]} (the platform owns the containers; the ssh runtime only reaches them)"
}

# Stops this cluster's Ray inside each node (workers first, in parallel),
# never the node itself. A node that cannot be reached is named, and the
# script fails after trying the others.
mvp::rt::down() {
  local i pid failed=0
  local -a pids=()
  for ((i = 1; i < ${#MVP_NODES[@]}; i++)); do
    mvp::rt::down_node "$i" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  mvp::rt::down_node 0 || failed=1
  ((failed == 0)) || mvp::log::die "Ray could not be stopped on every node (see above); the nodes that answered are stopped"
}

mvp::rt::down_node() {
  local i=$1 node=${MVP_NODES[$1]} why
  if ! why=$(mvp::rt::reach "$i"); then
    mvp::log::warn "$why"
    return 1
  fi
  if ! mvp::ray::leftovers_in "$node"; then
    mvp::log::skip "Ray on $node (not running)"
    return 0
  fi
  mvp::log::step "stopping Ray on $node (the node itself stays)"
  mvp::run::cmd mvp::rt::exec "$node" ray stop --force >/dev/null 2>&1
}

# What the platform image of a node must hold besides sshd (which answered):
# python3 with Ray at the host client's version (helpers/requirements.txt),
# its CLI, and the modules the helpers and verl's data need; distribution ->
# module, the probe's NEEDS argument.
declare -gA MVP_SSH_NEEDS=([pyyaml]=yaml [pyarrow]=pyarrow [hydra-core]=hydra)
mvp::rt::needs_arg() {
  local d
  for d in "${!MVP_SSH_NEEDS[@]}"; do printf '%s:%s ' "$d" "${MVP_SSH_NEEDS[$d]}"; done
}

# "name==version" of distribution NAME as helpers/requirements.txt pins it
# (a machine-read file: one requirement a line).
mvp::rt::pin() {
  local name=$1 line re="^${1}(\[[^]]*\])?==([^[:space:];#]+)"
  while IFS= read -r line; do
    [[ ${line,,} =~ $re ]] && { echo "$name==${BASH_REMATCH[2]}"; return 0; }
  done <"$MVP_REPO/helpers/requirements.txt"
  echo "$name"
}

# mvp::rt::prereq_node_image WHERE RAY RAY_CLI LACKS: one PROBLEM line naming
# everything the node's image lacks (Ray at the wrong version counts) and
# the one pip command that brings it.
mvp::rt::prereq_node_image() {
  local where=$1 ray=$2 ray_cli=$3 d want
  local -a lacks=() install=()
  read -r -a lacks <<<"$4"
  want=$(mvp::rt::pin ray)
  want=${want#ray==}
  if [[ $ray == missing ]]; then
    lacks=("ray (none installed)" "${lacks[@]}")
  elif [[ $ray != "$want" ]]; then
    lacks=("ray $want (it has $ray)" "${lacks[@]}")
  elif [[ $ray_cli == missing ]]; then
    lacks=("the ray CLI on PATH" "${lacks[@]}")
  fi
  ((${#lacks[@]})) || return 0
  [[ $ray == "$want" && $ray_cli != missing ]] || install+=("'ray[default]==$want'")
  for d in "${lacks[@]}"; do
    [[ -n ${MVP_SSH_NEEDS[$d]:-} ]] && install+=("'$(mvp::rt::pin "$d")'")
  done
  local what
  what=$(printf '%s, ' "${lacks[@]}")
  MVP_PROBLEMS+=("$where: the node image lacks ${what%, }; install in the image: pip install ${install[*]} (or set MVP_SSH_PATH to an environment that has them)")
}

# 00 on ssh: every node is probed at once (one ssh each, the probe on
# stdin) and every problem of every node is reported.
mvp::rt::prereq() {
  command -v ssh >/dev/null || { MVP_PROBLEMS+=("ssh is missing; install openssh-client"); return 0; }
  local dir nonce="" nonce_name="" i gpus=0
  dir=$(mktemp -d)
  # shellcheck disable=SC2064  # the directory is known now
  trap "rm -rf '$dir'" RETURN
  # The nonce is written through this host's view of the shared storage and
  # must be read back on every node: the same filesystem everywhere.
  if [[ -d $MVP_HOST_SHARED_DIR && -w $MVP_HOST_SHARED_DIR && $MVP_DRY_RUN != 1 ]]; then
    nonce=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    nonce_name=.mvp-nonce-$nonce
    printf '%s\n' "$nonce" >"$MVP_HOST_SHARED_DIR/$nonce_name"
  fi
  ((MVP_SSH_LOGICAL_GPUS == 1)) || gpus=$MVP_GPUS_PER_WORKER
  mvp::rt::prereq_launch "$dir" "$nonce_name" "$gpus"
  [[ -z $nonce_name ]] || rm -f "$MVP_HOST_SHARED_DIR/$nonce_name"
  local -A seen_ifaces=()
  for ((i = 0; i < ${#MVP_NODES[@]}; i++)); do
    mvp::rt::prereq_judge "$i" "$dir" "$nonce" "$gpus"
  done
  if ((MVP_SSH_LOGICAL_GPUS == 1)); then
    mvp::log::info "GPUs: each worker advertises $MVP_GPUS_PER_WORKER logical GPUs (MVP_SSH_LOGICAL_GPUS=1; nvidia-smi not asked)"
  fi
  if [[ -z ${NCCL_SOCKET_IFNAME:-} && -z ${GLOO_SOCKET_IFNAME:-} ]]; then
    local names
    names=$(printf '%s\n' "${!seen_ifaces[@]}" | sort | tr '\n' ' ')
    names=${names% }
    mvp::log::warn "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are not set: a multi-host job may pick the wrong network; set them in your config to the nodes' cluster interface (the nodes have: ${names:-none seen})"
  fi
}

# mvp::rt::prereq_launch DIR NONCE_NAME GPUS: runs the probe on every node at
# once and waits for all; node I's answer is DIR/I.out (its stderr I.err),
# I.why when ssh cannot reach it, I.fail when the probe itself failed.
mvp::rt::prereq_launch() {
  local dir=$1 nonce_name=$2 gpus=$3 probe=$MVP_REPO/scripts/libexec/ssh_probe.sh i
  local -a pids=() ports=()
  for ((i = 0; i < ${#MVP_NODES[@]}; i++)); do
    mapfile -t ports < <(mvp::rt::ray_ports "$i" | tr ' ' ':')
    {
      if mvp::rt::reach "$i" >"$dir/$i.why"; then
        mvp::rt::exec "${MVP_NODES[$i]}" sh -s -- "$SHARED_ROOT" "$nonce_name" "$MVP_NODE_REPO" \
          "$( ((i == 0)) && echo 0 || echo "$gpus")" "$( ((i == 0)) && echo "$MVP_NODE_VERL_SRC")" \
          "$(mvp::rt::needs_arg)" "${ports[@]}" \
          <"$probe" >"$dir/$i.out" 2>"$dir/$i.err" || echo "probe exit $?" >"$dir/$i.fail"
      fi
    } &
    pids+=($!)
  done
  wait "${pids[@]}" || true
}

# mvp::rt::prereq_judge I DIR NONCE GPUS: node I's answer in DIR (see
# prereq_launch) as PROBLEM lines and a log line; adds the interfaces it
# names to the caller's seen_ifaces.
mvp::rt::prereq_judge() {
  local i=$1 dir=$2 nonce=$3 gpus=$4 where value
  local -A r=()
  where=$(mvp::rt::describe "$i")
  if [[ -s $dir/$i.why ]]; then MVP_PROBLEMS+=("$(<"$dir/$i.why")"); return 0; fi
  if [[ -e $dir/$i.fail ]]; then
    MVP_PROBLEMS+=("$where: the node probe failed ($(<"$dir/$i.fail"): $(head -n 1 "$dir/$i.err"))")
    return 0
  fi
  if ! mvp::kv::read r <"$dir/$i.out"; then
    MVP_PROBLEMS+=("$where: the node probe's answer is not key=value lines ($MVP_KV_ERROR); see scripts/libexec/ssh_probe.sh")
    return 0
  fi
  if [[ ${r[python]:-missing} == missing ]]; then
    MVP_PROBLEMS+=("$where: python3 is not on PATH; install it in the node image or set MVP_SSH_PATH")
  else
    mvp::rt::prereq_node_image "$where" "${r[ray]:-missing}" "${r[ray_cli]:-missing}" "${r[lacks]:-}"
  fi
  case ${r[shared]:-} in
    missing) MVP_PROBLEMS+=("$where: SHARED_ROOT $SHARED_ROOT does not exist there; mount the shared storage at $SHARED_ROOT") ;;
    readonly) MVP_PROBLEMS+=("$where: SHARED_ROOT $SHARED_ROOT is not writable there; fix the mount or its permissions") ;;
  esac
  if [[ -n $nonce && ${r[shared]:-} != missing && ${r[nonce]:-} != "$nonce" ]]; then
    MVP_PROBLEMS+=("$where: $SHARED_ROOT is not the shared storage this host sees at $MVP_HOST_SHARED_DIR (a file written here is not there); mount the same share on every node")
  fi
  [[ ${r[repo]:-} == ok ]] ||
    MVP_PROBLEMS+=("$where: no runbook helpers at $MVP_NODE_REPO/helpers; keep the runbook checkout on the shared storage (under $MVP_HOST_SHARED_DIR) so every node sees it")
  [[ ${r[verl]:-ok} == ok ]] ||
    MVP_PROBLEMS+=("$where: no verl source at $MVP_NODE_VERL_SRC; put the verl checkout on the shared storage or set MVP_VERL_SRC")
  mvp::rt::prereq_judge_resources "$i" "$where" "$gpus" "${r[gpus]:-none}" "${r[ray_running]:-0}" "${r[busy]:-}"
  for value in ${r[ifaces]:-}; do seen_ifaces[$value]=1; done
  mvp::log::info "node $where: python ${r[python]:-?}, ray ${r[ray]:-?}, shared storage ${r[shared]:-?}, GPUs ${r[gpus]:-none}"
}

# mvp::rt::prereq_judge_resources I WHERE GPUS HAS_GPUS RAY_RUNNING BUSY:
# PROBLEM lines for a GPU worker short of GPUS and for each BUSY port (none
# asked of a node where this cluster's Ray runs: its ports are Ray's).
mvp::rt::prereq_judge_resources() {
  local i=$1 where=$2 gpus=$3 has=$4 value
  if ((i > 0 && gpus > 0)); then
    if [[ $has == none ]]; then
      MVP_PROBLEMS+=("$where: nvidia-smi is missing; a GPU worker needs the NVIDIA driver (or set MVP_SSH_LOGICAL_GPUS=1 for a cluster without GPUs)")
    elif [[ $has -lt $gpus ]]; then
      MVP_PROBLEMS+=("$where: nvidia-smi lists $has GPUs, MVP_GPUS_PER_WORKER is $gpus; lower it, or set MVP_SSH_LOGICAL_GPUS=1 for a cluster without GPUs")
    fi
  fi
  if [[ $5 == 1 ]]; then
    mvp::log::skip "port check on ${MVP_NODES[$i]} (Ray of this cluster runs there)"
  else
    for value in $6; do
      MVP_PROBLEMS+=("$where: port $value is in use there; stop what listens or change MVP_*_PORT / MVP_NODE_PORT_BASE")
    done
  fi
}
