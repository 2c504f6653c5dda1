# shellcheck shell=bash
# The ssh tier's nodes: each a PID + mount + UTS namespace on this host with
# its own loopback address, its own /run and /tmp/ray, the shared storage
# bind-mounted at /private, and a real OpenSSH server (Debian's sshd) on its
# address; it stands in for one of the platform's containers. The runbook
# reaches them only over ssh: ssh_restricted_path gives it a PATH without
# nsenter, unshare or docker (tripwires that log any call stand in their place).

# ssh_nodes_isolate DIR: keys, known_hosts, ssh_config and the settings of an
# ssh-runtime cluster of the tests' own (addresses and ports of MVP_TEST_SLOT).
ssh_nodes_isolate() {
  local dir=$1 slot=${MVP_TEST_SLOT:-0}
  export SSH_TEST_DIR=$dir
  export MVP_TEST_NET=127.0.$((10 + slot))
  export SSH_TEST_PORT=$((2222 + slot))
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=ssh MVP_STATE_DIR=$dir/state
  export SHARED_ROOT=/private MVP_HOST_SHARED_DIR="$dir/shared root"
  export MVP_HEAD_IP="" MVP_WORKER_IPS="" MVP_GPUS_PER_WORKER=4 MVP_WORKER_CPUS=2
  # Below the kernel's ephemeral range (32768+), where an outgoing connection
  # could take a pinned port first: head ports 9000-9029, node ports
  # 10000-31899 (five nodes of 1000 ports each per slot).
  export MVP_GCS_PORT=$((9000 + 3 * slot)) MVP_DASHBOARD_PORT=$((9001 + 3 * slot)) MVP_CLIENT_PORT=$((9002 + 3 * slot))
  export MVP_NODE_PORT_BASE=$((10000 + 4400 * (slot % 5)))
  export MVP_SSH_IDENTITY=$dir/client_key MVP_SSH_KNOWN_HOSTS=$dir/known_hosts MVP_SSH_CONFIG=$dir/ssh_config
  export MVP_SSH_PATH=$MVP_REPO/.venv/bin MVP_SSH_LOGICAL_GPUS=1 MVP_SSH_RAY_ARGS=--object-store-memory=200000000
  export MVP_VERL_SRC=.mvp/cache/verl-0.9.1-standin MVP_MODEL_SOURCE=$MVP_REPO/tests/fixtures/model_standin
  export MVP_MODEL_ID=mvp-fixtures/model-standin
  export MVP_GSM8K_SOURCE=${MVP_TEST_GSM8K:-} MVP_NODES_TIMEOUT=120 MVP_JOB_TIMEOUT=300
  export MVP_DASHBOARD="http://$MVP_TEST_NET.40:$MVP_DASHBOARD_PORT"
  unset NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME
  mkdir -p "$dir/nodes" "$MVP_HOST_SHARED_DIR"
  # The platform's mount point; an empty directory on this host.
  mkdir -p /private
  [[ -f $dir/client_key ]] || ssh-keygen -q -t ed25519 -N '' -C mvp-ssh-tier -f "$dir/client_key"
  cp "$dir/client_key.pub" "$dir/authorized_keys"
  [[ -f $dir/known_hosts ]] || : >"$dir/known_hosts"
  # The workers are listed without user@: ssh_config's User applies.
  printf '%s\n' "Host $MVP_TEST_NET.*" "  User root" "  GlobalKnownHostsFile /dev/null" >"$dir/ssh_config"
}

# ssh_node_ip INDEX (0 = head)
ssh_node_ip() { echo "$MVP_TEST_NET.$((40 + $1))"; }

# ssh_inventory N: MVP_SSH_HEAD and MVP_SSH_WORKERS for the head and N workers.
ssh_inventory() {
  local n=$1 i
  export MVP_SSH_HEAD MVP_SSH_WORKERS=""
  MVP_SSH_HEAD="root@$(ssh_node_ip 0):$SSH_TEST_PORT"
  for ((i = 1; i <= n; i++)); do MVP_SSH_WORKERS+="${MVP_SSH_WORKERS:+ }$(ssh_node_ip "$i"):$SSH_TEST_PORT"; done
}

# ssh_node_start INDEX [noshared]: starts node INDEX; its sshd answers when
# this returns. "noshared": its /private is its own, not the shared storage.
ssh_node_start() {
  local i=$1 mode=${2:-} ip name ndir
  ip=$(ssh_node_ip "$i") name=ssh-node-$i ndir=$SSH_TEST_DIR/nodes/ssh-node-$i
  mkdir -p "$ndir/tmp-ray"
  rm -f "$ndir/ready"
  [[ -f $ndir/host_key ]] || ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$ndir/host_key"
  cat >"$ndir/sshd_config" <<EOF
ListenAddress $ip:$SSH_TEST_PORT
HostKey $ndir/host_key
AuthorizedKeysFile $SSH_TEST_DIR/authorized_keys
PidFile /run/sshd.pid
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
MaxStartups 100
MaxSessions 100
PrintMotd no
EOF
  grep -v "^\[$ip\]:$SSH_TEST_PORT " "$SSH_TEST_DIR/known_hosts" >"$SSH_TEST_DIR/known_hosts.new" || true
  echo "[$ip]:$SSH_TEST_PORT $(cut -d' ' -f1,2 "$ndir/host_key.pub")" >>"$SSH_TEST_DIR/known_hosts.new"
  mv "$SSH_TEST_DIR/known_hosts.new" "$SSH_TEST_DIR/known_hosts"
  local shared="$MVP_HOST_SHARED_DIR"
  [[ $mode == noshared ]] && shared=""
  setsid unshare --pid --fork --mount-proc --uts --propagation private \
    bash "$MVP_REPO/tests/test_helper/ssh_node_init.sh" "$name" "$ndir" "$shared" </dev/null >>"$ndir/init.log" 2>&1 &
  local unshare_pid=$! k
  for ((k = 0; k < 100; k++)); do [[ -s $ndir/ready ]] && break; sleep 0.1; done
  [[ -s $ndir/ready ]] || { cat "$ndir/init.log" >&2; return 1; }
  local child
  child=$(<"/proc/$unshare_pid/task/$unshare_pid/children")
  echo "${child%% *}" >"$ndir/init.pid"
  for ((k = 0; k < 100; k++)); do
    ssh_to "$i" true 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$ndir/sshd.log" >&2
  return 1
}

# ssh_to INDEX CMD...: the tests' own ssh into a node (the same keys).
ssh_to() {
  local i=$1; shift
  ssh -F "$SSH_TEST_DIR/ssh_config" -i "$SSH_TEST_DIR/client_key" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o "UserKnownHostsFile=$SSH_TEST_DIR/known_hosts" -o LogLevel=ERROR \
    -p "$SSH_TEST_PORT" "root@$(ssh_node_ip "$i")" "$@"
}

ssh_node_init_pid() {
  local f=$SSH_TEST_DIR/nodes/ssh-node-$1/init.pid pid
  [[ -r $f ]] || return 1
  pid=$(<"$f")
  [[ -e /proc/$pid ]] || return 1
  echo "$pid"
}

# Host PIDs of every process in node INDEX's PID namespace.
ssh_node_processes() {
  local init ns pid
  init=$(ssh_node_init_pid "$1") || return 0
  ns=$(readlink "/proc/$init/ns/pid") || return 0
  for pid in /proc/[0-9]*; do
    [[ $(readlink "$pid/ns/pid" 2>/dev/null) == "$ns" ]] && echo "${pid#/proc/}"
  done
  return 0
}

# ssh_node_kill_sshd INDEX: ends the node's sshd (and its sessions); Ray in
# the node keeps running.
ssh_node_kill_sshd() {
  local pid
  for pid in $(ssh_node_processes "$1"); do
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == sshd ]] && kill -TERM "$pid" 2>/dev/null
  done
  return 0
}

# ssh_node_stop INDEX: ends the node's init, and with it every process in its
# PID namespace (by PID, never by name).
ssh_node_stop() {
  local init k
  init=$(ssh_node_init_pid "$1") || return 0
  kill -TERM "$init" 2>/dev/null || true
  for ((k = 0; k < 50; k++)); do [[ -e /proc/$init ]] || break; sleep 0.1; done
  [[ ! -e /proc/$init ]] || kill -KILL "$init" 2>/dev/null || true
  rm -f "$SSH_TEST_DIR/nodes/ssh-node-$1/init.pid"
}

ssh_nodes_stop_all() {
  local f i
  for f in "$SSH_TEST_DIR"/nodes/ssh-node-*/init.pid; do
    [[ -f $f ]] || continue
    i=${f%/init.pid}
    ssh_node_stop "${i##*-}"
  done
}

# ssh_restricted_path DIR: prints a PATH of symlinks to the tools the runbook
# uses on this host, with tripwires for nsenter, unshare and docker (they log
# their use to DIR/tripwire.log and fail).
ssh_restricted_path() {
  local dir=$1 tool path
  mkdir -p "$dir"
  for tool in bash sh env ssh python3 jq curl flock sleep cat mkdir rm mv cp ln grep sed awk sort head tail tr cut \
    wc id dirname basename mktemp find ls chmod stat xargs tee timeout uname readlink realpath od date hostname \
    kill ps touch seq true false sha256sum gzip tar du df nproc comm uniq printf test md5sum echo nice tac paste \
    expr getent rmdir sync; do
    path=$(type -P "$tool") || continue
    [[ $path == /* ]] && ln -sf "$path" "$dir/$tool"
  done
  for tool in nsenter unshare docker; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/tripwire.log"\nexit 97\n' "$tool" "$dir" >"$dir/$tool"
    chmod +x "$dir/$tool"
  done
  echo "$dir"
}

# ssh_rb NAME ARGS...: runs a numbered script of the runbook with the
# restricted PATH (SSH_RB_PATH), as the tier does for every runbook call.
ssh_rb() {
  local name=$1; shift
  PATH=$SSH_RB_PATH "$MVP_REPO/scripts/$name.sh" "$@"
}

# ssh_bringup LOG: 00 -> 21 over ssh only; prints the seconds it took.
ssh_bringup() {
  local log=$1 s start=$SECONDS
  for s in "${MVP_BRINGUP_STEPS[@]}"; do
    ssh_rb "$s" >/dev/null 2>>"$log" || { echo "bring-up failed at $s; see $log" >&2; return 1; }
  done
  echo $((SECONDS - start))
}

# The dashboard with the token, which travels on curl's stdin (-H @-), never
# in argv.
ssh_dashboard() {
  printf 'Authorization: Bearer %s\n' "$(<"$MVP_HOST_SHARED_DIR/secrets/ray_auth_token")" |
    curl -fsS --max-time 10 -H @- "$MVP_DASHBOARD$1"
}

ssh_nodes_json() {
  ssh_dashboard "/api/v0/nodes?detail=true" | jq '[.data.result.result[] | select(.state == "ALIVE")]'
}
