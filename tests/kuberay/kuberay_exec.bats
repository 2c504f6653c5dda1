#!/usr/bin/env bats
# What KubeRay would run, run: the RayJob that scripts/71_render_kuberay.sh
# renders becomes pods as KubeRay v1.7.0 builds them (tests/test_helper/
# kuberay_pods.py: each Ray container's `/bin/bash -c` line from its group,
# the environment KubeRay injects, token auth, the submitter's own command
# with RAY_DASHBOARD_ADDRESS and RAY_JOB_SUBMISSION_ID), started as podman
# containers on a network of their own, the head service's names in every
# pod's /etc/hosts at the head pod's address; what KubeRay and the kubelet do
# when a Ray container ends is done by the tier's operator
# (tests/test_helper/kuberay_reconcile.py). The pods' image is built by the user's recipe
# (scripts/72_build_image.sh) on the compose tier's CPU image (standing in for
# verl's): the runbook is where the manifests look for it. Jobs run the CPU
# STAND-IN for verl; GPUs are the pods' nvidia.com/gpu limits, which Ray
# counts without devices.
# teardown_file stops the operator and removes every pod (those the operator
# created too) and the network, even when a test fails.

setup_file() {
  load ../test_helper/common
  load ../test_helper/kuberay_tier
  kuberay_tier_setup mvpk 100 || return 1
  sed -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_FILE_TMPDIR/ppo.yaml"
  "$MVP_REPO/scripts/71_render_kuberay.sh" job "$BATS_FILE_TMPDIR/ppo.yaml" --out "$BATS_FILE_TMPDIR/job.yaml" \
    2>>"$MVP_TEST_LOG" || { cat "$MVP_TEST_LOG" >&3; return 1; }
  # The token KubeRay would keep in the cluster's Secret.
  (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(16))' >"$BATS_FILE_TMPDIR/token")
  PYTHONPATH=$MVP_REPO/tests/test_helper "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/kuberay_pods.py" \
    "$BATS_FILE_TMPDIR/job.yaml" --shared "$SHARED_ROOT" --token-file "$BATS_FILE_TMPDIR/token" --network "$NET" \
    --subnet-prefix "$PREFIX" >"$BATS_FILE_TMPDIR/pods.jsonl" ||
    return 1
  podman network rm -f "$NET" >/dev/null 2>&1 || true
  podman network create --subnet "$PREFIX.0/24" "$NET" >/dev/null
  kuberay_operator_start "$BATS_FILE_TMPDIR/pods.jsonl"
}

teardown_file() {
  load ../test_helper/common
  load ../test_helper/kuberay_tier
  kuberay_tier_teardown "$BATS_FILE_TMPDIR/pods.jsonl"
}

setup() {
  load ../test_helper/common
  load ../test_helper/kuberay_tier
}

pods() { jq -c "select(.role == \"$1\")" "$BATS_FILE_TMPDIR/pods.jsonl"; }


# The dashboard of the head pod, with the token (Ray's HTTP auth).
dash() {
  curl -fsS -H "Authorization: Bearer $(<"$BATS_FILE_TMPDIR/token")" "http://$PREFIX.2:8265$1"
}

# doc FILE KIND: the rendered file's document of that kind, as JSON (every
# file also starts with the PersistentVolumeClaim).
doc() {
  "$MVP_REPO/.venv/bin/python" -c 'import json, sys, yaml
print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == sys.argv[2]][0]))' "$1" "$2"
}

# pods_post_mortem JOB_DIR: what a failed job leaves to read: its result's
# message, its driver log's end, each pod's state and a dead pod's last lines.
pods_post_mortem() {
  jq -r '"result: \(.status) \(.message // "")"' "$1/result.json" 2>/dev/null
  tail -20 "$1/logs/driver.log" 2>/dev/null
  local name
  for name in $(jq -r .name "$BATS_FILE_TMPDIR/pods.jsonl" "$BATS_FILE_TMPDIR/live.jsonl" | sort -u); do
    podman inspect -f "pod $name: {{.State.Status}} exit {{.State.ExitCode}} oom {{.State.OOMKilled}}" "$name" 2>/dev/null || continue
    [[ $(podman inspect -f '{{.State.Running}}' "$name") == true ]] || podman logs "$name" 2>&1 | grep -v '^/' | tail -8
  done
}

alive_nodes() {
  dash '/api/v0/nodes?detail=true' | jq '[.data.result.result[] | select(.state == "ALIVE")]'
}

# ray_matches_pods: Ray's live nodes are the live head and worker pods, one at
# each pod's address (a pod KubeRay replaced: its replacement's).
ray_matches_pods() {
  local nodes
  nodes=$(alive_nodes 2>/dev/null | jq -c '[.[].node_ip] | sort') || return 1
  [[ $nodes == "$(jq -sc '[.[].ip] | sort' "$BATS_FILE_TMPDIR/live.jsonl")" ]]
}

# live_worker_ips: the live worker pods' addresses, a JSON list.
live_worker_ips() { live_pods worker | jq -sc 'map(.ip)'; }

# worker_back IP NODE: Ray has NODE (the killed one) DEAD and another node ALIVE at IP.
worker_back() {
  dash '/api/v0/nodes?detail=true' | jq -e --arg ip "$1" --arg old "$2" '.data.result.result
    | any(.node_id == $old and .state == "DEAD") and any(.node_ip == $ip and .node_id != $old and .state == "ALIVE")' >/dev/null
}

@test "kuberay: the image built by 72 from the recipe holds the runbook where every rendered pod runs it from (MVP_K8S_RUNBOOK_DIR)" {
  run jq -r '.spec.submitterPodTemplate.spec.containers[0] | .image, (.env[] | select(.name == "PYTHONPATH") | .value)' \
    <<<"$(doc "$BATS_FILE_TMPDIR/job.yaml" RayJob)"
  assert_output "$MVP_K8S_IMAGE"$'\n'"$MVP_K8S_RUNBOOK_DIR/helpers"
  run podman_run_rm 120 --network none "$MVP_K8S_IMAGE" sh -c \
    "cd $MVP_K8S_RUNBOOK_DIR && ls scripts/43_submit_jobspec.sh && PYTHONPATH=$MVP_K8S_RUNBOOK_DIR/helpers python3 -m mvp --help"
  assert_success
  assert_line scripts/43_submit_jobspec.sh
  assert_line --partial "usage: python -m mvp"
  # The image's runbook is this checkout's tracked files, as they are now, and nothing more.
  run podman_run_rm 120 --network none "$MVP_K8S_IMAGE" sh -c \
    "cd $MVP_K8S_RUNBOOK_DIR && find . -type f | sed 's|^[.]/||' | LC_ALL=C sort | xargs sha256sum | sha256sum"
  assert_output "$(cd "$MVP_REPO" && git ls-files | LC_ALL=C sort | xargs sha256sum | sha256sum)"
}

@test "kuberay: the rendered RayJob's head and worker pods run KubeRay's own command lines; Ray has a 0-CPU 0-GPU head and two workers with 4 GPUs and worker_node 100 at their pod IPs" {
  local pod
  while read -r pod; do
    pod_start "$pod"
  done < <(pods head; pods worker)
  # A raylet that misses Ray's 30 s to register ends its pod's ray start
  # --block: its container is restarted (or its pod replaced) as KubeRay's
  # would be, so the wait covers a second start.
  local i
  for ((i = 0; i < 240; i++)); do
    ray_matches_pods && break
    sleep 1
  done
  ray_matches_pods || { alive_nodes; cat "$BATS_FILE_TMPDIR/live.jsonl.log"; podman logs "$(pods head | jq -r .name)" | tail -20; false; }
  [[ $(live_pods worker | wc -l) == 2 ]]
  run alive_nodes
  jq -e '[.[] | select(.is_head_node)] | length == 1 and (.[0].resources_total | (.CPU // 0) == 0 and (.GPU // 0) == 0)' \
    <<<"$output"
  run jq -c '[.[] | select(.is_head_node | not) | {ip: .node_ip, gpu: .resources_total.GPU, worker_node: .resources_total.worker_node, cpu: .resources_total.CPU}] | sort_by(.ip)' <<<"$output"
  assert_output "$(live_pods worker | jq -sc 'map({ip, gpu: 4, worker_node: 100, cpu: 4}) | sort_by(.ip)')"
  # Without the token, the cluster says no (authOptions mode token reached every pod).
  run curl -s -o /dev/null -w '%{http_code}' "http://$PREFIX.2:8265/api/v0/nodes"
  assert_output 401
}

@test "kuberay: the rendered submitter, run as KubeRay runs it, submits the job: exit 0, SUCCEEDED with its driver on a worker pod, /private/jobs/<id>/ laid out as on every runtime" {
  local sub id
  sub=$(pods submitter)
  id=$(doc "$BATS_FILE_TMPDIR/job.yaml" RayJob | jq -r .spec.jobId)
  pod_argv "$sub"
  run --separate-stderr podman_within 600 run --rm "${ARGV[@]}"
  [[ $status == 0 ]] || { echo "$stderr" | tail -30; pods_post_mortem "$SHARED_ROOT/jobs/$id"; false; }
  # The helper speaks the output contract: the id as a key=value line.
  assert_equal "$(last_line)" "submission_id=$id"
  local jd="$SHARED_ROOT/jobs/$id"
  local f
  for f in config/job_spec.json config/runtime_env.json config/submit_cmd.txt logs/driver.log logs/submit.log result.json; do
    [[ -s $jd/$f ]] || { echo "missing $jd/$f"; false; }
  done
  jq -e --argjson workers "$(live_worker_ips)" '.status == "SUCCEEDED" and .driver_on_head == false
    and (.driver_node_ip | IN($workers[]))' "$jd/result.json"
  # Ray agrees, and the job went in from the submitter pod with KubeRay's id.
  dash "/api/jobs/$id" | jq -e '.status == "SUCCEEDED"'
  jq -se --arg pod "$(jq -r .name <<<"$sub")" '[.[] | select(.event == "submitted" and .host == $pod)] | length == 1' "$jd/logs/submit.log"
  jq -e '.resolved.cluster | startswith("kuberay@")' "$jd/config/job_spec.json"
  grep -q '^MVP_PRECHECK_VERL_FILE=/private/common/code/verl/standin/' "$jd/logs/driver.log"
  [[ -s $jd/checkpoints/latest_checkpointed_iteration.txt ]]
  # The token reached Ray through the environment KubeRay sets, never a file of the job.
  run grep -rl "$(<"$BATS_FILE_TMPDIR/token")" "$jd"
  assert_output ""
}

@test "kuberay: only the driver's Ray processes SIGKILLed in its worker pod (whose ray start --block then ends its Ray container, which the kubelet starts again in the pod that KubeRay keeps): FAILED, the driver log kept with the job's start, its worker logs kept, the bundle says where it was cut off, 51 shows the kept log and tells it from no such job, the worker back in Ray at the pod's address" {
  local id=kuberay-kill-$RANDOM head cluster ip pod logs i node restarts container
  head=$(live_pods head | jq -r .name)
  cluster=$(live_pods head | jq -r .cluster)
  logs=$SHARED_ROOT/jobs/$id/logs
  # Submitted as on a long-lived RayCluster: 43 --wait on runtime kuberay, in
  # a pod of the cluster, with the settings the rendered submitter pod has.
  doc "$BATS_FILE_TMPDIR/job.yaml" RayJob | jq -r '.spec.submitterPodTemplate.spec.containers[0].env[]
    | select(.name | test("^MVP_(JOBSPEC|RAY_CONFIG)_TEXT$") | not) | "\(.name)=\(.value)"' >"$BATS_TEST_TMPDIR/env"
  echo MVP_LOG_SYNC_SECONDS=1 >>"$BATS_TEST_TMPDIR/env"
  { cat "$BATS_FILE_TMPDIR/ppo.yaml"; echo "submission_id: $id"; } >"$BATS_TEST_TMPDIR/spec.yaml"
  podman cp "$BATS_TEST_TMPDIR/spec.yaml" "$head:/tmp/$id.yaml"
  kuberay_client "$head" "$cluster" "$BATS_TEST_TMPDIR/env" scripts/43_submit_jobspec.sh "/tmp/$id.yaml" --wait \
    --override +mvp_standin.step_seconds=1 --override trainer.total_training_steps=100 \
    >"$BATS_TEST_TMPDIR/wait.out" 2>"$BATS_TEST_TMPDIR/wait.err" &
  local waiter=$!
  ip=$(driver_ip_when_running "$id" dash) || { cat "$BATS_TEST_TMPDIR/wait.err"; pods_post_mortem "$SHARED_ROOT/jobs/$id"; false; }
  pod=$(live_pods worker | jq -r --arg ip "$ip" 'select(.ip == $ip) | .name')
  [[ -n $pod ]]
  node=$(alive_nodes | jq -r --arg ip "$ip" '.[] | select(.node_ip == $ip) | .node_id')
  [[ -n $node ]]
  restarts=$(live_pods worker | jq -r --arg p "$pod" 'select(.name == $p) | .restartCount // 0')
  container=$(podman inspect -f '{{.Id}}' "$pod")
  # Killed once its keepers have copied a training step of the driver's log
  # and the job's worker logs on that pod.
  for ((i = 0; i < 300; i++)); do
    grep -qs "step:1 - " "$logs/driver.live.log" && compgen -G "$logs/nodes/$ip/worker-*.out" >/dev/null && break
    sleep 0.2
  done
  grep -qs "step:1 - " "$logs/driver.live.log"
  compgen -G "$logs/nodes/$ip/worker-*.out" >/dev/null
  local -a tree
  read -r -a tree <<<"$(pod_raylet_tree "$pod")"
  ((${#tree[@]} > 1))
  kill -KILL "${tree[@]}" 2>/dev/null || true  # one may have ended meanwhile
  local rc=0 t0=$SECONDS
  wait "$waiter" || rc=$?
  echo "# FAILED seen $((SECONDS - t0)) s after the kill" >&3
  cat "$BATS_TEST_TMPDIR/wait.err" >&2
  ((rc == 1))
  [[ $(job_json "$id" result.json .status) == FAILED ]]
  # The pod's Ray container ended with its Ray (ray start --block), and with
  # it Ray's own copy of the logs. The rendered Ray groups set no
  # restartPolicy: Kubernetes' Always, under which the kubelet starts the
  # container again in the same pod (its name, its address) and KubeRay
  # leaves the pod alone (kuberay_reconcile.py; raycluster_controller.go:1533-1539).
  [[ $(live_pods worker | jq -r --arg p "$pod" 'select(.name == $p) | .restartPolicy') == Always ]]
  # The driver's keeper makes its last copy once it sees the driver gone
  # (within 0.5 s); the pod's ray start --block ends the pod, keeper and
  # all, within 1 s of the raylet's death. Kept whole (driver.log), or else
  # up to the last sync (every second here) with driver.log.missing naming it.
  local kept=$logs/driver.log
  if [[ -e $logs/driver.log.missing ]]; then
    grep -q "its node kept .*driver.live.log while it ran" "$logs/driver.log.missing"
    kept=$logs/driver.live.log
  fi
  echo "# the driver's log kept as $(basename "$kept")" >&3
  grep -q "^MVP_PRECHECK_MARKER=standin$" "$kept"
  grep -q "step:1 - " "$kept"
  compgen -G "$logs/nodes/$ip/worker-*.out" >/dev/null
  grep -E "^cut off at step [1-9][0-9]* of [1-9][0-9]* \(ended FAILED; " "$logs/../debug/cut_off.txt"
  # 51 as an operator runs it on Kubernetes: in a pod, a client of the
  # cluster, while the killed pod's Ray starts again (it waits for the head alone).
  t0=$SECONDS
  run --separate-stderr kuberay_client "$head" "$cluster" "$BATS_TEST_TMPDIR/env" scripts/51_logs.sh "$id"
  echo "$stderr"
  assert_success
  assert_output --partial "MVP_PRECHECK_MARKER=standin"
  assert_output --partial "==> logs/nodes/$ip/worker-"
  # Ray still lists the job, but its log went with the pod: the kept copies.
  [[ $stderr == *"job $id: Ray lists it as FAILED but cannot serve its log; showing the "* ]]
  ((SECONDS - t0 < 30))
  run --separate-stderr kuberay_client "$head" "$cluster" "$BATS_TEST_TMPDIR/env" scripts/51_logs.sh "kuberay-never-$RANDOM"
  assert_failure 1
  [[ $stderr == *"no such job: Ray does not know it and there is no job directory"* ]]
  # What KubeRay shows then: the same pod Running, its Ray container a new
  # one (restartCount up); Ray the killed node DEAD and a new one ALIVE at
  # the pod's address: the worker registered again (within 240 s).
  for ((i = 0; i < 240; i++)); do
    worker_back "$ip" "$node" && break
    sleep 1
  done
  worker_back "$ip" "$node" || { dash '/api/v0/nodes?detail=true' | jq -c '.data.result.result[] | [.node_ip, .node_id, .state]'; false; }
  echo "# the worker back in Ray $((SECONDS - t0)) s after 51" >&3
  (($(live_pods worker | jq -r --arg p "$pod" 'select(.name == $p) | .restartCount') > restarts))
  [[ $(podman inspect -f '{{.State.Running}} {{.Id}}' "$pod") == "true "* ]]
  [[ $(podman inspect -f '{{.Id}}' "$pod") != "$container" ]]
  ray_matches_pods
  run grep -s "pod $pod " "$BATS_FILE_TMPDIR/live.jsonl.log"
  [[ ${#lines[@]} -ge 1 && $output != *deleted* ]]
}

