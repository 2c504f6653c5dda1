# shellcheck shell=bash disable=SC2034  # mvp::rt::derive sets settings that config.sh, helper.sh and the scripts read
# Runtime "kuberay": the runbook in a pod beside a RayCluster that the KubeRay
# operator runs (the nightly's CronJob pod, rendered by
# scripts/71_render_kuberay.sh nightly). The operator starts, restarts and
# scales the Ray pods; this runtime never starts or stops Ray. It reaches the
# head through its Service (MVP_K8S_HEAD_SERVICE, the dashboard at :8265,
# the token in RAY_AUTH_TOKEN from the cluster's Secret) and runs the submit
# path in this pod, a client of the cluster as KubeRay's own submitter pod is.

# The bring-up is the operator's: what is left is the prerequisite check,
# which here only makes the shared layout (the cluster was waited for when the
# settings were derived).
MVP_BRINGUP_STEPS=(00_prereq_check)

# The pod's view: the shared claim at /private, the runbook and Python of the
# image. The head's and workers' addresses are the pod IPs Ray reports: pods
# get new addresses when they are re-created, so they are asked for (waiting
# up to MVP_NODES_TIMEOUT for the head and MVP_WORKERS workers) every time.
# 51 and 52 (MVP_HEAD_ONLY=1) wait for the head alone and take no worker
# address (the settings' placeholders stand): they read or stop jobs through
# the dashboard, and are wanted most when a worker pod is down (51: the kept
# logs of the job it held).
mvp::rt::derive() {
  MVP_PYTHON=$(command -v python3) || mvp::log::die "python3 is not in this image; build it with scripts/72_build_image.sh on a verl image"
  # Its form is the contract's type (dns), checked with every setting's.
  [[ -n $MVP_K8S_HEAD_SERVICE ]] ||
    mvp::log::die "MVP_K8S_HEAD_SERVICE is empty; it must name the RayCluster's head Service (<cluster>-head-svc); the CronJob of 71 nightly sets it"
  MVP_DASHBOARD_URL=http://$MVP_K8S_HEAD_SERVICE:8265
  # The cluster's auth is what the pod's environment says (the CronJob sets
  # RAY_AUTH_MODE=token and RAY_AUTH_TOKEN from the cluster's Secret). Ray and
  # the helper take RAY_AUTH_TOKEN before any token file.
  [[ ${RAY_AUTH_MODE:-} == token ]] && MVP_RAY_AUTH=token
  # A dry run contacts nothing: MVP_HEAD_IP keeps the contract's placeholder.
  [[ $MVP_DRY_RUN != 1 ]] || return 0
  [[ $MVP_RAY_AUTH != token || -n ${RAY_AUTH_TOKEN:-} ]] ||
    mvp::log::die "RAY_AUTH_MODE=token but RAY_AUTH_TOKEN is empty; the pod takes it from the RayCluster's Secret (key auth_token): is that Secret there?"
  local addresses
  addresses=$(mvp::rt::addresses) ||
    mvp::log::die "the RayCluster behind $MVP_DASHBOARD_URL is not ready after ${MVP_NODES_TIMEOUT}s (${addresses:-no answer}); see kubectl get raycluster,pods"
  read -r MVP_HEAD_IP MVP_WORKER_IPS <<<"$addresses"
}

# "HEAD_IP WORKER_IP..." of the alive nodes, once the head and MVP_WORKERS
# workers (nodes with worker_node) are ("HEAD_IP" once the head is, with
# MVP_HEAD_ONLY=1); else the last state seen, exit 1.
mvp::rt::addresses() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_PYTHON" - "$MVP_DASHBOARD_URL" "$MVP_WORKERS" "$MVP_NODES_TIMEOUT" \
    "${MVP_HEAD_ONLY:-0}" <<'PY'
import sys
import time

from mvp.cluster.ray_nodes import describe
from mvp.core.dashboard import Dashboard

url, want, timeout, head_only = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
dash, deadline, seen = Dashboard(url), time.monotonic() + timeout, "the dashboard does not answer"
while True:
    try:
        alive = [describe(n) for n in dash.nodes() if n["state"] == "ALIVE"]
        heads = [n["ip"] for n in alive if n["is_head"]]
        workers = sorted(n["ip"] for n in alive if not n["is_head"] and n["worker_node"] > 0)
        if heads and head_only:
            print(heads[0])
            sys.exit(0)
        if heads and len(workers) == want:
            print(heads[0], *workers)
            sys.exit(0)
        seen = f"head {'alive' if heads else 'not alive'}, {len(workers)} of {want} workers alive"
    except Exception as exc:  # the dashboard's and the network's errors alike: wait and ask again
        seen = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if time.monotonic() >= deadline:
        print(seen)
        sys.exit(1)
    time.sleep(2)
PY
}

mvp::rt::node_ray_dirs() { MVP_NODE_RAY_DIRS=""; }
mvp::rt::ray_start_args() { :; }
mvp::rt::dashboard_bind() { echo "0.0.0.0 8265"; }
mvp::rt::node_ports() { :; }

# The nodes are the operator's: up when Ray lists them (derive waited for that).
mvp::rt::node_is_up() { :; }

# mvp::rt::exec NODE CMD...: runs CMD in this pod. The runbook's commands
# that other runtimes run on the head (submit) speak to the cluster over its
# Service, as KubeRay's submitter pod does.
mvp::rt::exec() {
  shift
  "$@"
}

mvp::rt::prereq() {
  command -v flock >/dev/null || MVP_PROBLEMS+=("flock is missing from the image; install util-linux in it")
  mvp::log::info "cluster: the RayCluster behind $MVP_K8S_HEAD_SERVICE, head $MVP_HEAD_IP, workers $MVP_WORKER_IPS"
}

mvp::rt::up() { mvp::log::skip "bringing up nodes (the KubeRay operator runs the RayCluster's pods)"; }
mvp::rt::down() { mvp::log::die "the KubeRay operator runs this cluster; delete the RayCluster with kubectl instead"; }
mvp::rt::reset_node() { mvp::log::die "the KubeRay operator runs this cluster's pods; delete the pod with kubectl to have it re-created"; }
