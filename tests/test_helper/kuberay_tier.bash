# shellcheck shell=bash
# What both files of the KubeRay tier (tests/kuberay) start from: an isolated
# runbook, podman configured as the compose tier's engine is (runc: crun
# refuses these machines' cgroups; ulimits this host can grant), the pods'
# settings (a small cluster's memory, the runbook where the image holds it,
# token auth), the inputs of a stand-in job and the recipe's image.

# podman, in every file of the tier: the engine without bats' descriptors.
# Its first container on a network starts aardvark-dns, which outlives the
# tier holding whatever podman inherited (mvp_close_inherited_fds).
podman() (
  mvp_close_inherited_fds
  exec podman "$@"
)

# podman_within SECONDS ARGS...: podman ARGS, killed after SECONDS.
podman_within() (
  mvp_close_inherited_fds
  exec timeout "$1" podman "${@:2}"
)

# podman_run_rm SECONDS ARGS...: `podman run --rm ARGS`, killed after
# SECONDS, and run again when podman's attach lost its race with a container
# that ends at once (podman issue #11446: exit 125, "...attach: connection
# reset by peer"), up to 3 times; as scripts/lib/runtime_compose.sh's run_once.
podman_run_rm() {
  local try rc err
  err=$(mktemp)
  for try in 1 2 3; do
    rc=0
    podman_within "$1" run --rm "${@:2}" 2>"$err" || rc=$?
    ((rc == 125)) && grep -q '/attach: .*connection reset by peer' "$err" && ((try < 3)) || break
  done
  cat "$err" >&2
  rm -f "$err"
  return "$rc"
}

# kuberay_tier_setup NET_NAME OCTET_BASE: exports NET and PREFIX (moved by
# MVP_TEST_SLOT), CONTAINERS_CONF, the MVP_K8S_* settings and MVP_K8S_IMAGE.
kuberay_tier_setup() {
  command -v podman >/dev/null || { echo "podman is missing; run make setup" >&3; return 1; }
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/setup.log
  local slot=${MVP_TEST_SLOT:-0}
  export NET=$1-$slot PREFIX=10.89.$(($2 + slot))
  export CONTAINERS_CONF=$BATS_FILE_TMPDIR/containers.conf
  printf '%s\n' '[containers]' "default_ulimits = [\"nofile=$(ulimit -Hn):$(ulimit -Hn)\", \"nproc=4096:4096\"]" \
    '[engine]' 'runtime = "runc"' >"$CONTAINERS_CONF"
  export MVP_K8S_NAMESPACE=mvp-test MVP_K8S_AUTH=1 MVP_K8S_RUNBOOK_DIR=/workspace/mvp MVP_K8S_HEAD_MEMORY=2Gi \
    MVP_K8S_WORKER_CPUS=4 MVP_K8S_WORKER_MEMORY=4Gi MVP_K8S_SHM_SIZE=1Gi CODE_ID=standin
  mvp_prepare_inputs standin 2>>"$MVP_TEST_LOG" || { cat "$MVP_TEST_LOG" >&3; return 1; }
  local start=$SECONDS
  MVP_K8S_IMAGE=$("$MVP_REPO/tests/compose/build_image.sh" 2>>"$MVP_TEST_LOG") || { cat "$MVP_TEST_LOG" >&3; return 1; }
  export MVP_K8S_IMAGE
  echo "# pods' image $MVP_K8S_IMAGE ready in $((SECONDS - start))s" >&3
}

# kuberay_operator_start PODS_JSONL...: the tier's KubeRay operator
# (kuberay_reconcile.py: what KubeRay and the kubelet do when a Ray container
# ends) for the head and worker pods of the first file, in the background
# until kuberay_tier_teardown. $BATS_FILE_TMPDIR/live.jsonl lists those pods
# as they are now (a replacement in place of a deleted one), live.jsonl.log
# what it deleted and created and why; every file's pods' addresses are taken.
kuberay_operator_start() {
  local live=$BATS_FILE_TMPDIR/live.jsonl f
  local -a taken=()
  jq -c 'select(.role == "head" or .role == "worker")' "$1" >"$live" || return 1
  for f in "$@"; do taken+=(--taken "$f"); done
  # Its own process group (setsid), so that teardown stops the pod starts it
  # has under way too; nothing of bats' descriptors.
  (
    mvp_close_inherited_fds
    exec setsid "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/kuberay_reconcile.py" "$live" \
      --prefix "$PREFIX" "${taken[@]}"
  ) </dev/null >>"$live.out" 2>&1 &
  echo "$!" >"$BATS_FILE_TMPDIR/operator.pid"
}

# live_pods ROLE: the head or worker pods as they are now (kuberay_operator_start).
live_pods() {
  jq -c --arg role "$1" 'select(.role == $role)' "$BATS_FILE_TMPDIR/live.jsonl"
}

# kuberay_operator_report: what the operator did (its restarts in place,
# its deletions and replacements), and how often each Ray pod's logs, the
# ended containers' with the running one's, say that a raylet timed out
# during startup (Ray's fixed 30 s to register with the GCS), on the tier's output.
kuberay_operator_report() {
  local live=$BATS_FILE_TMPDIR/live.jsonl name missed
  sed 's/^/# kuberay operator: /' "$live.log" 2>/dev/null
  for name in $(jq -r '.name' "$live" "$live.created" 2>/dev/null | sort -u); do
    missed=$({ podman logs "$name" 2>&1; cat "$live.previous/$name".*.log 2>/dev/null; } | grep -c "timed out during startup")
    ((missed == 0)) || echo "# kuberay pod $name: 'timed out during startup' $missed time(s) in its logs"
  done
}

# kuberay_tier_teardown PODS_JSONL...: stops the operator, then removes every
# pod the files list, those the operator created, and the tier's network,
# whatever state a failed test left them in.
kuberay_tier_teardown() {
  local name pid i f
  if pid=$(cat "$BATS_FILE_TMPDIR/operator.pid" 2>/dev/null); then
    kill -- "-$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  kuberay_operator_report >&3
  for name in $(for f in "$@" "$BATS_FILE_TMPDIR/live.jsonl" "$BATS_FILE_TMPDIR/live.jsonl.created"; do
    jq -r '.name, (.init // [] | .[].name)' "$f" 2>/dev/null
  done | sort -u); do
    podman rm -f -t 5 "$name" >/dev/null 2>&1 || true
  done
  podman network rm -f "$NET" >/dev/null 2>&1 || true
}

# pod_start JSON: starts a pod as the kubelet does: each of its init
# containers run to a successful end (bounded: 180 s each), then its
# container, detached.
pod_start() {
  local init
  while IFS= read -r init; do
    mapfile -d '' ARGV < <(jq -j '.argv[] | ., "\u0000"' <<<"$init")
    podman_run_rm 180 "${ARGV[@]}" >/dev/null ||
      { echo "init container $(jq -r .name <<<"$init") did not end well" >&2; return 1; }
  done < <(jq -c '.init // [] | .[]' <<<"$1")
  pod_argv "$1"
  podman run -d "${ARGV[@]}" >/dev/null
}

# pod_argv JSON: ARGV, the pod's `podman run` arguments (after the options).
# shellcheck disable=SC2034  # ARGV is read by the tests that call it
pod_argv() {
  mapfile -d '' ARGV < <(jq -j '.argv[] | ., "\u0000"' <<<"$1")
}

# kuberay_client POD CLUSTER ENV_FILE CMD...: runs CMD in POD (a pod of the
# RayCluster CLUSTER, its working directory the runbook in the image) as the
# nightly's CronJob pod runs the runbook: runtime kuberay, the cluster found
# through its head Service, the token from the pod's environment. ENV_FILE
# holds the settings as NAME=VALUE lines (the rendered submitter's).
# RAY_ADDRESS is KubeRay's GCS address in a Ray pod; a client pod has none.
kuberay_client() {
  local pod=$1 cluster=$2 env_file=$3 line
  shift 3
  local -a env=(--env MVP_RUNTIME=kuberay --env "MVP_K8S_HEAD_SERVICE=$cluster-head-svc"
    --env "MVP_CLUSTER_NAME=kuberay@$cluster")
  while IFS= read -r line; do env+=(--env "$line"); done <"$env_file"
  podman exec -i "${env[@]}" --workdir "$MVP_K8S_RUNBOOK_DIR" "$pod" env -u RAY_ADDRESS "$@"
}

# pod_raylet_tree POD: the host PIDs of POD's raylet and every process under
# it (Ray's workers, the job's supervisor and driver), children after their
# parent; nothing outside Ray's tree (the pod's `ray start --block`, the log
# keepers that left the driver's tree).
pod_raylet_tree() {
  local p
  for p in $(process_tree "$(podman inspect -f '{{.State.Pid}}' "$1")"); do
    [[ $(cat "/proc/$p/comm" 2>/dev/null) == raylet ]] || continue
    process_tree "$p"
    return 0
  done
  return 1
}
