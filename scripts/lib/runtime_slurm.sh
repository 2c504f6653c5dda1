# shellcheck shell=bash disable=SC2034  # mvp::rt::derive sets settings that config.sh, helper.sh and the scripts read
# Runtime "slurm": the nodes are those of one heterogeneous Slurm job, made by
# the sbatch script of scripts/70_render_sbatch.sh. Component 0 (one node)
# holds the head, component 1 the GPU workers. Outside such a job there are no
# nodes: 30 and 31 run on this host, against the shared storage; submitting
# happens inside the job (scripts/libexec/slurm_job.sh). The repo, its .venv and
# SHARED_ROOT must be on storage every node mounts at the same path.

mvp::rt::in_job() {
  [[ -n ${SLURM_JOB_ID:-} && -n ${SLURM_JOB_NODELIST_HET_GROUP_0:-} && -n ${SLURM_JOB_NODELIST_HET_GROUP_1:-} ]]
}

# mvp::rt::slurm_node_ip NODE: the IPv4 address Slurm reaches NODE at (its NodeAddr).
mvp::rt::slurm_node_ip() {
  local node=$1 addr
  addr=$(scontrol show node "$node" | grep -o 'NodeAddr=[^ ]*') || mvp::log::die "scontrol knows no node $node"
  addr=${addr#NodeAddr=}
  if [[ ! $addr =~ ^([0-9]+\.){3}[0-9]+$ ]]; then
    addr=$(getent ahostsv4 "$addr" | awk 'NR == 1 {print $1}')
    [[ -n $addr ]] || mvp::log::die "cannot resolve the address of Slurm node $node; fix its NodeAddr or DNS"
  fi
  echo "$addr"
}

# Paths are this host's: the repo, its .venv and SHARED_ROOT are on storage
# every node mounts at the same path (the contract's default.slurm and
# default.* give them, and the dashboard's URL from MVP_HEAD_IP). Inside the
# job the topology is the allocation's, and node names are Slurm's, so the
# head's name is the hostname its submissions record. The workers' CPUs are
# what the sbatch script asked for, whatever the settings baked into it say.
mvp::rt::derive() {
  [[ -n $MVP_SLURM_WORKER_CPUS ]] && MVP_WORKER_CPUS=$MVP_SLURM_WORKER_CPUS
  if mvp::rt::in_job; then
    local -a workers=()
    local node
    MVP_HEAD_NODE=$(scontrol show hostnames "$SLURM_JOB_NODELIST_HET_GROUP_0" | head -n 1)
    mapfile -t workers < <(scontrol show hostnames "$SLURM_JOB_NODELIST_HET_GROUP_1")
    MVP_NODES=("$MVP_HEAD_NODE" "${workers[@]}")
    MVP_WORKERS=${#workers[@]}
    MVP_HEAD_IP=$(mvp::rt::slurm_node_ip "$MVP_HEAD_NODE")
    MVP_WORKER_IPS=""
    for node in "${workers[@]}"; do MVP_WORKER_IPS+="${MVP_WORKER_IPS:+ }$(mvp::rt::slurm_node_ip "$node")"; done
  fi
  return 0
}

# A node may be shared with another job's Ray, so every port is pinned, as
# in the local runtime: node k's at MVP_NODE_PORT_BASE + 1000*k.
mvp::rt::ray_start_args() { mvp::ray::pinned_args "$1"; }

mvp::rt::dashboard_bind() { echo "$MVP_HEAD_IP $MVP_DASHBOARD_PORT"; }

mvp::rt::node_ports() { mvp::ray::pinned_ports "$1"; }

mvp::rt::is_node() {
  local node
  for node in "${MVP_NODES[@]}"; do [[ $node == "$1" ]] && return 0; done
  return 1
}

mvp::rt::node_is_up() { mvp::rt::in_job && mvp::rt::is_node "$1"; }

# mvp::rt::exec NODE CMD...: the batch script runs on the head, so the head's
# commands run here; a worker's run as a step on it that shares the job's
# resources (--overlap) instead of waiting for them.
mvp::rt::exec() {
  local node=$1; shift
  mvp::rt::node_is_up "$node" || mvp::log::die "node $node is not part of this Slurm job; MVP_RUNTIME=slurm runs inside the job of scripts/70_render_sbatch.sh"
  local -a env=(env -u PYTHONPATH "PATH=$MVP_VENV/bin:$PATH")
  if [[ $node == "$MVP_HEAD_NODE" && ${SLURMD_NODENAME:-} == "$node" ]]; then
    "${env[@]}" --chdir=/ "$@"
  else
    srun --overlap --quiet --het-group="$(mvp::rt::het_group "$node")" --nodes=1 --ntasks=1 \
      --nodelist="$node" --chdir=/ "${env[@]}" "$@"
  fi
}

mvp::rt::het_group() { if [[ $1 == "$MVP_HEAD_NODE" ]]; then echo 0; else echo 1; fi; }

mvp::rt::prereq() {
  local tool
  for tool in sbatch srun scontrol; do
    command -v "$tool" >/dev/null || MVP_PROBLEMS+=("$tool is missing; install the Slurm client (apt-get install slurm-client) or load your site's Slurm module")
  done
}

mvp::rt::up() {
  mvp::rt::in_job || mvp::log::die "MVP_RUNTIME=slurm has nodes only inside a Slurm job; render one with scripts/70_render_sbatch.sh"
  mvp::log::skip "nodes (this Slurm job's: head $MVP_HEAD_NODE, workers ${MVP_NODES[*]:1})"
}

# Ray runs as `ray start --block` in one job step per node (see start_ray
# in scripts/libexec/slurm_job.sh), so stopping Ray is ending those steps: it touches
# nothing of another job that shares a node, which `ray stop` would.
mvp::rt::down() {
  if [[ ${#MVP_SLURM_RAY_STEPS[@]} -eq 0 ]]; then
    mvp::log::skip "Ray on this Slurm job's nodes (no step of ours runs it)"
    return 0
  fi
  local pid
  mvp::log::step "stopping Ray on ${#MVP_SLURM_RAY_STEPS[@]} nodes (their job steps, workers first)"
  for ((pid = ${#MVP_SLURM_RAY_STEPS[@]} - 1; pid >= 0; pid--)); do
    kill -TERM "${MVP_SLURM_RAY_STEPS[$pid]}" 2>/dev/null || true
  done
  local deadline=$((SECONDS + 30))
  for pid in "${MVP_SLURM_RAY_STEPS[@]}"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
  done
  MVP_SLURM_RAY_STEPS=()
}

MVP_SLURM_RAY_STEPS=()

# mvp::rt::ray_step LOG CMD...: one node's `ray start --block` job step
# (CMD, an srun), its output to LOG. A step that ended because its raylet
# missed Ray's fixed 30 s to register with the GCS (ray/_private/node.py:428,
# no setting; a loaded node misses it now and then) is started once more, as
# mvp::ray::start does for the other runtimes' nodes: the ended step took
# its processes with it (Slurm ends a step's processes). Run in the
# background, it exits with the last step's code (exit, not return: a
# failed return would fire the ERR trap's report); TERM (mvp::rt::down)
# goes on to the step that runs.
mvp::rt::ray_step() {
  local log=$1 child="" attempt rc; shift
  trap '[[ -z $child ]] || kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 143' TERM
  for attempt in 1 2; do
    "$@" </dev/null >>"$log" 2>&1 &
    child=$!
    rc=0
    wait "$child" || rc=$?
    child=""
    if ((rc == 0 || attempt == 2)) || ! grep -q "timed out during startup" "$log"; then exit "$rc"; fi
    mvp::log::warn "$log: Ray's raylet did not register within Ray's 30 s (a loaded node); starting its step once more"
  done
}

# The nodes' /tmp/ray are their own disks, not visible from the head's
# host: a driver log comes from Ray's dashboard only.
mvp::rt::node_ray_dirs() { MVP_NODE_RAY_DIRS=""; }

# A node still running the Ray of an earlier head: within one Slurm job the
# steps of this job own the nodes, so only ending the job resets them.
mvp::rt::reset_node() {
  mvp::log::die "node $1 still runs the Ray of an earlier head of this Slurm job; end the job (scancel $SLURM_JOB_ID) and submit it again"
}
