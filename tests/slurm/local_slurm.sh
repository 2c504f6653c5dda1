#!/usr/bin/env bash
# A three-node Slurm cluster on this host, for the Slurm test tier: munged,
# slurmctld and one slurmd per node, every file under DIR. Each slurmd runs
# inside a local-runtime node namespace (own PID and mount namespace, own
# /tmp/ray, own loopback address as its NodeAddr), so the Ray nodes its job
# steps start behave as separate hosts: a job driver finds its raylet by
# scanning the processes it can see.
#
# Usage: tests/slurm/local_slurm.sh up|down|env DIR
#   up    writes DIR/etc/slurm.conf (+ gres.conf, munge key) and starts the
#         daemons; waits until the three nodes are idle
#   down  stops what `up` started, by the PIDs it recorded, nothing else
#   env   prints SLURM_CONF=... for the clients (sbatch, squeue, scontrol)
# Addresses and ports move with MVP_TEST_SLOT (0-9): 127.0.<10+slot>.19-22,
# slurmctld on 6817+50*slot, the slurmds on the three ports after it.
# Safe to re-run: `up` on a running cluster and `down` on a stopped one do nothing.
set -Eeuo pipefail
# shellcheck disable=SC2034  # MVP_STATE_DIR and MVP_VENV are read by runtime_local.sh's functions
# shellcheck source=../../scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
# shellcheck source=../../scripts/lib/runtime_local.sh
source "$MVP_REPO/scripts/lib/runtime_local.sh"

SLOT=${MVP_TEST_SLOT:-0}
NET=127.0.$((10 + SLOT))
CTLD_PORT=$((6817 + 50 * SLOT))
NODES=(mvps-head mvps-w0 mvps-w1)
CLUSTER=mvps$SLOT

conf_files() {
  local dir=$1 i
  mkdir -p "$dir/etc" "$dir/ctld" "$dir/log" "$dir/munge"
  for i in "${NODES[@]}"; do mkdir -p "$dir/spool/$i"; done
  chmod 700 "$dir/munge"
  {
    echo "# Written by tests/slurm/local_slurm.sh for the Slurm test tier."
    echo "ClusterName=$CLUSTER"
    echo "SlurmctldHost=localhost($NET.19)"
    echo "SlurmctldPort=$CTLD_PORT"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$dir/munge/munge.socket"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$dir/ctld"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/spool/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    # No cgroups on a shared test host: processes are tracked by parentage.
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "GresTypes=gpu"
    # The nodes' CPUs and GPUs are what this file says, not what the host has.
    echo "SlurmdParameters=config_overrides"
    echo "SchedulerType=sched/backfill"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=60"
    echo "KillWait=10"
    echo "MinJobAge=600"
    echo "JobCompType=jobcomp/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "NodeName=${NODES[0]} NodeAddr=$NET.20 Port=$((CTLD_PORT + 1)) CPUs=2 RealMemory=2000 State=UNKNOWN"
    for i in 1 2; do
      echo "NodeName=${NODES[$i]} NodeAddr=$NET.$((20 + i)) Port=$((CTLD_PORT + 1 + i)) CPUs=2 RealMemory=2000 Gres=gpu:4 State=UNKNOWN"
    done
    echo "PartitionName=cpu Nodes=${NODES[0]} Default=YES MaxTime=60 State=UP"
    echo "PartitionName=gpu Nodes=${NODES[1]},${NODES[2]} MaxTime=60 State=UP"
  } >"$dir/etc/slurm.conf.tmp"
  mv "$dir/etc/slurm.conf.tmp" "$dir/etc/slurm.conf"
  # Slurm wants a character device per GPU. These are /dev/null's twins: the
  # GPUs are a count Slurm schedules, as Ray's GPUs are logical here.
  mkdir -p "$dir/dev"
  for i in 0 1 2 3; do [[ -c $dir/dev/gpu$i ]] || mknod "$dir/dev/gpu$i" c 1 3; done
  printf 'AutoDetect=off\nNodeName=%s,%s Name=gpu File=%s\n' "${NODES[1]}" "${NODES[2]}" "$dir/dev/gpu[0-3]" >"$dir/etc/gres.conf"
  [[ -s $dir/munge/munge.key ]] || mungekey --create --keyfile="$dir/munge/munge.key" --force
  chmod 600 "$dir/munge/munge.key"
}

# pid_of FILE NAME: the PID in FILE when that process is still NAME.
pid_of() {
  local file=$1 name=$2 pid
  [[ -r $file ]] || return 1
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ && $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] || return 1
  echo "$pid"
}

slurm_env() { echo "SLURM_CONF=$1/etc/slurm.conf"; }

up() {
  local dir=$1 node i
  export SLURM_CONF=$dir/etc/slurm.conf
  MVP_STATE_DIR=$dir/nodes MVP_VENV=$MVP_REPO/.venv
  conf_files "$dir"
  if pid_of "$dir/munge/munged.pid" munged >/dev/null; then
    mvp::log::skip "munged (running)"
  else
    mvp::log::step "starting munged"
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
      --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
  fi
  if pid_of "$dir/slurmctld.pid" slurmctld >/dev/null; then
    mvp::log::skip "slurmctld (running)"
  else
    mvp::log::step "starting slurmctld on $NET.19:$CTLD_PORT"
    slurmctld -i -f "$SLURM_CONF"
  fi
  for i in "${!NODES[@]}"; do
    node=${NODES[$i]}
    mvp::rt::up_node "$node"
    if pid_of "$dir/spool/slurmd-$node.hostpid" slurmd >/dev/null; then
      mvp::log::skip "slurmd $node (running)"
      continue
    fi
    mvp::log::step "starting slurmd $node inside its namespace"
    mvp::rt::exec "$node" "SLURM_CONF=$SLURM_CONF" slurmd -N "$node" -f "$SLURM_CONF"
    record_slurmd_pid "$dir" "$node"
  done
  mvp::run::wait_for 60 "the Slurm nodes to be idle" nodes_idle || {
    sinfo -N -o '%N %T %E' >&2 || true
    mvp::log::die "Slurm nodes did not become idle; see $dir/log"
  }
  mvp::log::info "Slurm cluster $CLUSTER up: SLURM_CONF=$SLURM_CONF"
}

# The host PID of the node's slurmd: the one process named slurmd in the
# node's PID namespace.
record_slurmd_pid() {
  local dir=$1 node=$2 init ns p
  init=$(mvp::rt::node_pid "$node")
  ns=$(readlink "/proc/$init/ns/pid")
  mvp::run::wait_for 30 "slurmd $node to start" test -s "$dir/spool/slurmd-$node.pid"
  for p in /proc/[0-9]*; do
    [[ $(cat "$p/comm" 2>/dev/null) == slurmd && $(readlink "$p/ns/pid" 2>/dev/null) == "$ns" ]] || continue
    echo "${p#/proc/}" >"$dir/spool/slurmd-$node.hostpid"
    return 0
  done
  mvp::log::die "slurmd $node is not running; see $dir/log/slurmd-$node.log"
}

nodes_idle() {
  local states
  states=$(sinfo -h -N -o '%T' 2>/dev/null | sort -u | xargs) || return 1
  [[ $states == idle ]]
}

# stop FILE NAME: TERM to the process we started, KILL when it lingers.
stop() {
  local file=$1 name=$2 pid
  pid=$(pid_of "$file" "$name") || { mvp::log::skip "$name (not running)"; return 0; }
  mvp::log::step "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  mvp::run::wait_for 20 "$name to stop" mvp::rt::pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
}

down() {
  local dir=$1 node
  export SLURM_CONF=$dir/etc/slurm.conf
  MVP_STATE_DIR=$dir/nodes MVP_VENV=$MVP_REPO/.venv
  for node in "${NODES[@]}"; do
    stop "$dir/spool/slurmd-$node.hostpid" slurmd
    # The node's init stops what is left in its namespace (job steps, Ray).
    mvp::rt::down_node "$node"
  done
  stop "$dir/slurmctld.pid" slurmctld
  stop "$dir/munge/munged.pid" munged
}

main() {
  (($# == 2)) || { mvp::flags::usage; exit 2; }
  case $1 in
    up) up "$2" ;;
    down) down "$2" ;;
    env) slurm_env "$2" ;;
    -h|--help) mvp::flags::usage ;;
    *) mvp::log::die "unknown command '$1'; use up, down or env" ;;
  esac
}

main "$@"
