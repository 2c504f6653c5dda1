#!/usr/bin/env bats
# The compose runtime for real: Debian's podman behind its Docker-API socket,
# driven by the docker CLI and whichever compose CLI answers, the containers
# of docker-compose.yaml from a CPU image built here (Debian bookworm, the
# host's pinned ray[default], PyYAML, pyarrow in the system Python: python3
# in /usr/bin, `ray` in /usr/local/bin, as in verl's images), and the
# runbook's own scripts from 00 to 02. Jobs run the CPU STAND-IN for verl
# (tests/fixtures/verl_standin over real verl 0.9.1); GPUs are logical (MVP_COMPOSE_GPUS=logical).
# One cluster for the whole file; teardown_file removes every container and
# network of the project and stops the engine, even when a test fails.

setup_file() {
  load ../test_helper/common
  load ../test_helper/compose_engine
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  mvp_engine_start || return 1
  local start=$SECONDS
  MVP_IMAGE=$("$MVP_REPO/tests/compose/build_image.sh" 2>>"$MVP_TEST_LOG") || { cat "$MVP_TEST_LOG" >&3; return 1; }
  export MVP_IMAGE
  echo "# test image $MVP_IMAGE ready in $((SECONDS - start))s" >&3
  mvp_compose_isolate "$BATS_FILE_TMPDIR"
  # A JobSpec of the tests' own: the PPO template with the stand-in model.
  sed -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" \
    "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_FILE_TMPDIR/ppo.yaml"
}

teardown_file() {
  load ../test_helper/common
  load ../test_helper/compose_engine
  timeout 300 "$MVP_REPO/scripts/02_down.sh" >/dev/null 2>&1
  mvp_engine_stop
}

setup() {
  load ../test_helper/common
  load ../test_helper/compose_engine
  SHARED=$MVP_HOST_SHARED_DIR
}

# A test that killed a worker container brings it back, pass or fail.
teardown() {
  if [[ -f $BATS_TEST_TMPDIR/restart-workers ]]; then "$MVP_REPO/scripts/21_start_workers.sh" >/dev/null 2>&1 || true; fi
}

nodes_json() {
  curl -fsS "$MVP_DASHBOARD/api/v0/nodes?detail=true" | jq '[.data.result.result[] | select(.state == "ALIVE")]'
}

container_ip() {
  docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"
}

# jq over a job directory's JSON file, read on the host side of the mount.
host_job_json() {
  jq -r "$3" "$SHARED/jobs/$1/$2"
}

# Ray's view of a job: its driver's address and node, SUCCEEDED or not.
assert_job_on_worker() {
  local id=$1 job head
  job=$(curl -fsS "$MVP_DASHBOARD/api/jobs/$id")
  jq -e '.status == "SUCCEEDED"' <<<"$job" >/dev/null || { echo "$id: $(jq -c '{status, message}' <<<"$job")"; return 1; }
  local ip
  ip=$(jq -r .driver_info.node_ip_address <<<"$job")
  [[ $ip == "$(container_ip mvp11-ray-worker-0)" || $ip == "$(container_ip mvp11-ray-worker-1)" ]] ||
    { echo "$id: driver at $ip, not a worker container's address"; return 1; }
  head=$(nodes_json | jq -r '.[] | select(.is_head_node) | .node_id')
  [[ $(jq -r .driver_node_id <<<"$job") != "$head" ]] || { echo "$id: driver on the head"; return 1; }
  # The job directory, written in the containers under /private, is on the host's side of the mount.
  [[ $(host_job_json "$id" result.json .status) == SUCCEEDED && $(host_job_json "$id" result.json .driver_on_head) == false ]] ||
    { echo "$id: result.json on the shared mount does not say SUCCEEDED on a worker"; return 1; }
  [[ $(host_job_json "$id" result.json .driver_node_ip) == "$ip" ]] || { echo "$id: result.json names another driver"; return 1; }
  [[ -s $SHARED/jobs/$id/logs/driver.log && -s $SHARED/jobs/$id/checkpoints/latest_checkpointed_iteration.txt ]] ||
    { echo "$id: no driver log or checkpoint on the shared mount"; return 1; }
  [[ $(jq -s '[.[] | select(.event == "submitted" and .host == "mvp11-ray-head")] | length' "$SHARED/jobs/$id/logs/submit.log") == 1 ]] ||
    { echo "$id: not submitted from the head container"; return 1; }
  grep -q '^MVP_PRECHECK_VERL_FILE=/private/common/code/verl/' "$SHARED/jobs/$id/logs/driver.log" ||
    { echo "$id: verl was not imported from the code snapshot"; return 1; }
}

@test "00 -> 21 on podman: 00 checks the image, 01 runs compose up, Ray starts in the containers" {
  local cli=docker-compose
  docker compose version >/dev/null 2>&1 && cli="docker compose"
  run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_success
  assert_output --partial "image $MVP_IMAGE: ray $(sed -n 's/^ray\[default\]==//p' "$MVP_REPO/helpers/requirements.txt") and"
  assert_output --partial "verl imports from /workspace/mvp/.mvp/cache/verl-0.9.1-standin/verl/__init__.py"
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run "$MVP_REPO/scripts/01_up.sh"
  assert_output --partial "SKIP: containers mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1 (already running)"
  echo "# compose CLI: $cli" >&3
  run "$MVP_REPO/scripts/12_install_py_deps.sh"
  assert_success
  assert_output --partial "SKIP: python packages in mvp11-ray-worker-1 (PyYAML and pyarrow import)"
  run "$MVP_REPO/scripts/20_start_head.sh"
  assert_success
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  assert_output --partial "cluster: head + 2 workers registered"
}

@test "bring-up, read from Ray: head 0 CPU 0 GPU; two workers with worker_node 100 and 4 logical GPUs at their containers' addresses" {
  run nodes_json
  assert_success
  local nodes=$output
  jq -e 'length == 3' <<<"$nodes"
  jq -e --arg ip "$(container_ip mvp11-ray-head)" '[.[] | select(.is_head_node)] | length == 1 and .[0].node_ip == $ip
         and ((.[0].resources_total.CPU // 0) == 0) and ((.[0].resources_total.GPU // 0) == 0)' <<<"$nodes"
  [[ $(container_ip mvp11-ray-head) == "$MVP_HEAD_IP" ]]
  jq -e --arg a "$(container_ip mvp11-ray-worker-0)" --arg b "$(container_ip mvp11-ray-worker-1)" \
    '[.[] | select(.is_head_node | not) | .node_ip] | sort == ([$a, $b] | sort)' <<<"$nodes"
  jq -e 'all(.[] | select(.is_head_node | not); .resources_total.GPU == 4 and .resources_total.worker_node == 100)' <<<"$nodes"
  # Logical GPUs: no device of the host is in a worker.
  run docker exec mvp11-ray-worker-0 sh -c 'ls /dev/nvidia* 2>/dev/null | wc -l'
  assert_output 0
}

@test "in the containers the helper runs on the image's /usr/bin/python3 with ray in /usr/local/bin, not beside it" {
  run docker exec mvp11-ray-head python3 -c 'import shutil, sys; print(sys.executable, shutil.which("ray"))'
  assert_success
  assert_output "/usr/bin/python3 /usr/local/bin/ray"
  run docker exec mvp11-ray-head test -e /usr/bin/ray
  assert_failure
}

@test "00's image check, in the head: a Ray other than the host client's, a missing package and a missing verl are one line each" {
  printf 'ray[default]==9.9.9\nPyYAML\nmvp-absent-package\n' >"$SHARED/reqs.txt"
  run docker exec mvp11-ray-head python3 /workspace/mvp/helpers/mvp/worker/image_check.py \
    --requirements /private/reqs.txt --verl-src /private/no-verl --image test-image
  assert_failure
  local ray
  ray=$(sed -n 's/^ray\[default\]==//p' "$MVP_REPO/helpers/requirements.txt")
  assert_line "problem_1=ray $ray in test-image, but the host client is ray 9.9.9 (helpers/requirements.txt); use an image with Ray 9.9.9, or pin ray[default]==$ray in helpers/requirements.txt and run make setup"
  assert_line --partial "problem_2=mvp-absent-package (module mvp_absent_package) is missing in test-image; pip install 'mvp-absent-package' in the image"
  assert_line --partial "problem_3=verl does not import from /private/no-verl in test-image (ModuleNotFoundError: No module named 'verl')"
  [[ $(grep -c '^problem_[0-9]*=' <<<"$output") == 3 ]]
}

@test "30 and 31 in the head: data, model and a code snapshot on the shared mount" {
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_success
  [[ -s $SHARED/datasets/gsm8k/train.parquet && -s $SHARED/datasets/gsm8k_sft/train.parquet ]]
  jq -e '.files["train.parquet"].rows > 7000' "$SHARED/datasets/gsm8k/MANIFEST.json"
  run env CODE_ID=standin "$MVP_REPO/scripts/31_snapshot_verl_code.sh"
  assert_success
  assert_line standin
  [[ -f $SHARED/common/code/verl/standin/mvp_marker.py ]]
}

@test "40 --wait on podman: SUCCEEDED, the driver at a worker container's IP, the job directory on the shared mount" {
  run --separate-stderr "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --wait
  assert_success
  local id
  id=$(last_line)
  run assert_job_on_worker "$id"
  assert_success
  echo "$id" >"$BATS_FILE_TMPDIR/ppo-id"
}

@test "41 (GRPO) and 42 (SFT) --wait on podman: SUCCEEDED on a worker, job directories on the shared mount" {
  local script id
  for script in 41_submit_grpo_epoch1 42_submit_sft_minimal; do
    run --separate-stderr "$MVP_REPO/scripts/$script.sh" --wait
    assert_success
    id=$(last_line)
    run assert_job_on_worker "$id"
    assert_success
  done
  [[ $(host_job_json "$id" config/runtime_env.json .env_vars.RAY_ADDRESS) == auto ]]
}

@test "43 (ray job submit) and 44 (JobSubmissionClient) --wait on podman: both SUCCEEDED on a worker, the same files; a secret reaches driver and actor through the head's GCS store" {
  local spec=$BATS_TEST_TMPDIR/ppo-secret.yaml secret=compose-secret-value-77
  sed "s/^env_vars: {}/env_vars: {MY_API_TOKEN: $secret}/" "$BATS_FILE_TMPDIR/ppo.yaml" >"$spec"
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$spec" --wait --override +mvp_standin.expect_env=MY_API_TOKEN
  assert_success
  local cli
  cli=$(last_line)
  run --separate-stderr "$MVP_REPO/scripts/44_submit_sdk.sh" "$MVP_REPO/templates/configs/dev.yaml" "$spec" --wait \
    --override +mvp_standin.expect_env=MY_API_TOKEN
  assert_success
  local sdk
  sdk=$(last_line)
  run assert_job_on_worker "$cli"
  assert_success
  run assert_job_on_worker "$sdk"
  assert_success
  [[ $(jq -r 'select(.event == "submitted") | .via' "$SHARED/jobs/$cli/logs/submit.log") == cli ]]
  [[ $(jq -r 'select(.event == "submitted") | .via' "$SHARED/jobs/$sdk/logs/submit.log") == sdk ]]
  diff <(sed "s/$cli/ID/g" "$SHARED/jobs/$cli/config/job_spec.json") <(sed "s/$sdk/ID/g" "$SHARED/jobs/$sdk/config/job_spec.json")
  local id
  for id in "$cli" "$sdk"; do
    run expect_env_lines "$SHARED/jobs/$id/logs/driver.log" MY_API_TOKEN
    assert_output 2
  done
  run grep -r -l -F "$secret" "$SHARED"
  assert_output ""
}

@test "50_status --json on podman: exit 0, the nodes Ray reports, past jobs with their driver on a worker" {
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" --json
  assert_success
  local reported=$output
  jq -e '.cluster.up and .cluster.ok and (.cluster.problems | length == 0)' <<<"$reported"
  run nodes_json
  [[ $(jq -c '[.cluster.head] + .cluster.workers | map({node_id, ip}) | sort_by(.ip)' <<<"$reported") == \
     "$(jq -c 'map({node_id, ip: .node_ip}) | sort_by(.ip)' <<<"$output")" ]]
  local id
  id=$(<"$BATS_FILE_TMPDIR/ppo-id")
  jq -e --arg id "$id" '.jobs[] | select(.submission_id == $id) | .status == "SUCCEEDED" and .driver_on_head == false' <<<"$reported"
}

@test "51_logs and 52_stop on podman: a running job's log is read, the job is stopped and archived as STOPPED" {
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_FILE_TMPDIR/ppo.yaml" --override +mvp_standin.step_seconds=2
  assert_success
  local id
  id=$(last_line)
  mvp_wait_until 90 "step 1 in $id's log" mvp_job_log_has "$id" 'step:1 '
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$id"
  assert_success
  assert_output --partial "MVP_PRECHECK_MARKER=standin"
  run "$MVP_REPO/scripts/52_stop.sh" "$id"
  assert_success
  assert_output --partial "job $id is STOPPED"
  [[ $(curl -fsS "$MVP_DASHBOARD/api/jobs/$id" | jq -r .status) == STOPPED ]]
  [[ $(host_job_json "$id" result.json .status) == STOPPED ]]
}


@test "the worker container holding the driver killed mid-job: FAILED, its driver and worker logs kept up to the last sync, the bundle says where it was cut off, 51 shows the kept log and tells it from no such job; 21 brings the container back" {
  local id=compose-kill-$RANDOM ip node w logs i
  logs=$SHARED/jobs/$id/logs
  { cat "$BATS_FILE_TMPDIR/ppo.yaml"; echo "submission_id: $id"; } >"$BATS_TEST_TMPDIR/spec.yaml"
  MVP_LOG_SYNC_SECONDS=1 "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/spec.yaml" --wait \
    --override +mvp_standin.step_seconds=1 --override trainer.total_training_steps=100 \
    >"$BATS_TEST_TMPDIR/wait.out" 2>"$BATS_TEST_TMPDIR/wait.err" &
  local waiter=$!
  ip=$(driver_ip_when_running "$id")
  for w in mvp11-ray-worker-0 mvp11-ray-worker-1; do [[ $(container_ip "$w") == "$ip" ]] && node=$w; done
  [[ -n ${node:-} ]]
  # Killed once its node keeper has had a sync of the job's worker logs, and
  # the driver's keeper one of the driver's first lines.
  mvp_wait_until 60 "a sync of the job's worker logs on $ip" compgen -G "$logs/nodes/$ip/worker-*.out"
  mvp_wait_until 60 "the precheck line in the kept driver log" grep -qsx "MVP_PRECHECK_MARKER=standin" "$logs/driver.live.log"
  touch "$BATS_TEST_TMPDIR/restart-workers"
  local kept_before
  kept_before=$(grep -c '' "$logs/driver.live.log")
  docker kill "$node" >/dev/null
  local rc=0
  wait "$waiter" || rc=$?
  cat "$BATS_TEST_TMPDIR/wait.err" >&2
  ((rc == 1))
  [[ $(host_job_json "$id" result.json .status) == FAILED ]]
  # The node is gone with Ray's copy: what its keeper copied is kept, and said so.
  grep -q "^MVP_PRECHECK_MARKER=standin$" "$logs/driver.live.log"
  (($(grep -c '' "$logs/driver.live.log") >= kept_before))
  grep -q "its node kept .*driver.live.log while it ran" "$logs/driver.log.missing"
  compgen -G "$logs/nodes/$ip/worker-*.out" >/dev/null
  grep -E "^cut off (at step [1-9][0-9]* of [1-9][0-9]*|before its first step) \(ended FAILED; " "$SHARED/jobs/$id/debug/cut_off.txt"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$id"
  assert_success
  assert_output --partial "MVP_PRECHECK_MARKER=standin"
  [[ $stderr == *"showing the copy its node kept while it ran"* ]]
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "compose-never-$RANDOM"
  assert_failure 1
  [[ $stderr == *"no such job: Ray does not know it and there is no job directory"* ]]
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  assert_output --partial "bringing back worker node(s) that are down: $node"
  run nodes_json
  jq -e 'length == 3' <<<"$output"
}

@test "02_down on podman: no container or network of the project is left; a second run is a SKIP" {
  run "$MVP_REPO/scripts/02_down.sh"
  assert_success
  run mvp_engine_leftovers
  assert_success
  assert_output ""
  run "$MVP_REPO/scripts/02_down.sh"
  assert_success
  assert_output --partial "SKIP: containers"
  # The job directories outlive the cluster, on the host.
  [[ -s $SHARED/jobs/$(<"$BATS_FILE_TMPDIR/ppo-id")/result.json ]]
}
