#!/usr/bin/env bats
# What KubeRay would run, run: the RayJob that scripts/71_render_kuberay.sh
# renders becomes pods as KubeRay v1.7.0 builds them (tests/test_helper/
# kuberay_pods.py: each Ray container's `/bin/bash -c` line from its group,
# the environment KubeRay injects, token auth, the submitter's own command
# with RAY_DASHBOARD_ADDRESS and RAY_JOB_SUBMISSION_ID), started as podman
# containers on a network of their own, the head service's names in every
# pod's /etc/hosts at the head pod's address. The pods' image is built by the user's recipe
# (scripts/72_build_image.sh) on the compose tier's CPU image (standing in for
# verl's): the runbook is where the manifests look for it. Jobs run the CPU
# STAND-IN for verl; GPUs are the pods' nvidia.com/gpu limits, which Ray
# counts without devices.
# teardown_file removes every pod and the network, even when a test fails.

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
  for name in $(jq -r .name "$BATS_FILE_TMPDIR/pods.jsonl"); do
    podman inspect -f "pod $name: {{.State.Status}} exit {{.State.ExitCode}} oom {{.State.OOMKilled}}" "$name" 2>/dev/null || continue
    [[ $(podman inspect -f '{{.State.Running}}' "$name") == true ]] || podman logs "$name" 2>&1 | grep -v '^/' | tail -8
  done
}

alive_nodes() {
  dash '/api/v0/nodes?detail=true' | jq '[.data.result.result[] | select(.state == "ALIVE")]'
}

@test "kuberay: the image built by 72 from the recipe holds the runbook where every rendered pod runs it from (MVP_K8S_RUNBOOK_DIR)" {
  run jq -r '.spec.submitterPodTemplate.spec.containers[0] | .image, (.env[] | select(.name == "PYTHONPATH") | .value)' \
    <<<"$(doc "$BATS_FILE_TMPDIR/job.yaml" RayJob)"
  assert_output "$MVP_K8S_IMAGE"$'\n'"$MVP_K8S_RUNBOOK_DIR/helpers"
  run podman run --rm --network none "$MVP_K8S_IMAGE" sh -c \
    "cd $MVP_K8S_RUNBOOK_DIR && ls scripts/43_submit_jobspec.sh && PYTHONPATH=$MVP_K8S_RUNBOOK_DIR/helpers python3 -m mvp --help"
  assert_success
  assert_line scripts/43_submit_jobspec.sh
  assert_line --partial "usage: python -m mvp"
  # The image's runbook is this checkout's tracked files, as they are now, and nothing more.
  run podman run --rm --network none "$MVP_K8S_IMAGE" sh -c \
    "cd $MVP_K8S_RUNBOOK_DIR && find . -type f | sed 's|^[.]/||' | LC_ALL=C sort | xargs sha256sum | sha256sum"
  assert_output "$(cd "$MVP_REPO" && git ls-files | LC_ALL=C sort | xargs sha256sum | sha256sum)"
}

@test "kuberay: the rendered RayJob's head and worker pods run KubeRay's own command lines; Ray has a 0-CPU 0-GPU head and two workers with 4 GPUs and worker_node 100 at their pod IPs" {
  local pod
  while read -r pod; do
    pod_start "$pod"
  done < <(pods head; pods worker)
  local i n=0
  for ((i = 0; i < 120; i++)); do
    n=$(alive_nodes 2>/dev/null | jq length) || n=0
    ((n == 3)) && break
    sleep 1
  done
  ((n == 3)) || { podman logs "$(pods head | jq -r .name)" | tail -20; false; }
  run alive_nodes
  jq -e '[.[] | select(.is_head_node)] | length == 1 and (.[0].resources_total | (.CPU // 0) == 0 and (.GPU // 0) == 0)' \
    <<<"$output"
  run jq -c '[.[] | select(.is_head_node | not) | {ip: .node_ip, gpu: .resources_total.GPU, worker_node: .resources_total.worker_node, cpu: .resources_total.CPU}] | sort_by(.ip)' <<<"$output"
  assert_output "[{\"ip\":\"$PREFIX.3\",\"gpu\":4,\"worker_node\":100,\"cpu\":4},{\"ip\":\"$PREFIX.4\",\"gpu\":4,\"worker_node\":100,\"cpu\":4}]"
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
  jq -e --arg a "$PREFIX.3" --arg b "$PREFIX.4" '.status == "SUCCEEDED" and .driver_on_head == false
    and (.driver_node_ip == $a or .driver_node_ip == $b)' "$jd/result.json"
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

@test "kuberay: only the driver's Ray processes SIGKILLed in its worker pod (whose ray start --block then ends the pod, as KubeRay's do): FAILED, the driver log kept with the job's start, its worker logs kept, the bundle says where it was cut off, 51 shows the kept log and tells it from no such job" {
  local id=kuberay-kill-$RANDOM head cluster ip pod logs i
  head=$(pods head | jq -r .name)
  cluster=${head%-head}
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
  pod=$(jq -r --arg ip "$ip" 'select(.role == "worker" and .ip == $ip) | .name' "$BATS_FILE_TMPDIR/pods.jsonl")
  [[ -n $pod ]]
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
  # KubeRay's pod ends with its Ray (ray start --block), and with it Ray's own
  # copy of the logs: the pod's container is gone.
  [[ $(podman inspect -f '{{.State.Running}}' "$pod") == false ]]
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
  # cluster, while the killed pod is down (it waits for the head alone).
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
}
