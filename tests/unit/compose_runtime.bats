#!/usr/bin/env bats
# The compose runtime's exact docker commands, asserted through PATH stubs of
# docker and docker-compose (no engine here) and a fake dashboard standing in
# for Ray; every compose file the scripts can produce is validated against the
# Compose specification's JSON schema and by the real docker-compose's `config`.
# (tests/compose runs the same scripts on a real engine.)

setup() {
  load ../test_helper/common
  mvp_use_stubs
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=compose
  export MVP_HOST_SHARED_DIR="$BATS_TEST_TMPDIR/shared dir" MVP_VERL_DIR=$BATS_TEST_TMPDIR/verl
  export MVP_STATE_DIR=$BATS_TEST_TMPDIR/state
  unset SHARED_ROOT MVP_HEAD_IP MVP_WORKER_IPS MVP_WORKERS MVP_GPUS_PER_WORKER MVP_COMPOSE_GPUS MVP_WORKER_GPU_IDS MVP_IMAGE
  OVERLAY=$MVP_STATE_DIR/compose/docker-compose.gpus.yaml
  mkdir -p "$MVP_HOST_SHARED_DIR" "$MVP_VERL_DIR/verl"
  touch "$MVP_VERL_DIR/verl/__init__.py"
  cat >"$MVP_STUB_DIR/nodes.json" <<'JSON'
[{"node_id": "head-id", "node_ip": "172.28.0.2", "is_head_node": true, "state": "ALIVE", "resources_total": {}},
 {"node_id": "w0-id", "node_ip": "172.28.0.3", "is_head_node": false, "state": "ALIVE", "resources_total": {"CPU": 16, "GPU": 4, "worker_node": 100}},
 {"node_id": "w1-id", "node_ip": "172.28.0.4", "is_head_node": false, "state": "ALIVE", "resources_total": {"CPU": 16, "GPU": 4, "worker_node": 100}}]
JSON
  python3 "$MVP_REPO/tests/test_helper/fake_dashboard.py" "$MVP_STUB_DIR" "$BATS_TEST_TMPDIR/port" &
  echo $! >"$BATS_TEST_TMPDIR/dashboard.pid"
  mvp_wait_until 10 "the fake dashboard listening" test -s "$BATS_TEST_TMPDIR/port"
  export MVP_DASHBOARD_PORT=$(<"$BATS_TEST_TMPDIR/port") MVP_NODES_TIMEOUT=5
}

teardown() {
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")" 2>/dev/null || true
}

# The line the stub records for a command given as words.
quoted() { printf '%q ' "$@"; }

@test "01_up (compose): docker compose up -d on docker-compose.yaml and the GPU overlay, addresses interpolated" {
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run cat "$MVP_STUB_LOG"
  assert_line "$(quoted docker compose -f "$MVP_REPO/docker-compose.yaml" -f "$OVERLAY" -p mvp-v11 up -d)"
  assert_line "  env MVP_HEAD_IP=172.28.0.2"
  assert_line "  env MVP_WORKER1_IP=172.28.0.4"
  assert_line "  env MVP_HOST_SHARED_DIR=$MVP_HOST_SHARED_DIR"
  assert_line "  env MVP_DASHBOARD_PORT=$MVP_DASHBOARD_PORT"
  refute_line --partial "docker-compose "
}

@test "01_up (compose): the standalone docker-compose (v1) when the docker compose plugin does not answer" {
  export MVP_STUB_COMPOSE_PLUGIN=0
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run cat "$MVP_STUB_LOG"
  assert_line "$(quoted docker-compose -f "$MVP_REPO/docker-compose.yaml" -f "$OVERLAY" -p mvp-v11 up -d)"
  refute_line --partial "docker compose -f"
  export MVP_STUB_RUNNING="mvp11-ray-head"
  run "$MVP_REPO/scripts/02_down.sh"
  assert_success
  run grep -cF "$(quoted docker-compose -f "$MVP_REPO/docker-compose.yaml" -f "$OVERLAY" -p mvp-v11 down)" "$MVP_STUB_LOG"
  assert_output 1
}

@test "01_up (compose): neither compose CLI answers: one ERROR line naming both, no container started" {
  export MVP_STUB_COMPOSE_PLUGIN=0 MVP_STUB_COMPOSE_V1=0
  run --separate-stderr "$MVP_REPO/scripts/01_up.sh"
  assert_failure
  [[ $(grep -c '^ERROR: ' <<<"$stderr") == 1 ]]
  [[ $stderr == *"ERROR: neither 'docker compose' (the compose plugin) nor 'docker-compose' answers; install the docker-compose-plugin package or Debian's docker-compose"* ]]
  run grep -c " up -d" "$MVP_STUB_LOG"
  assert_output 0
}

# The overlay 01 wrote, as JSON.
overlay_json() {
  "$MVP_REPO/.venv/bin/python" -c '
import json, sys, yaml
print(json.dumps(yaml.safe_load(open(sys.argv[1])), sort_keys=True))' "$OVERLAY"
}

@test "GPU overlay: one string per device id from MVP_WORKER_GPU_IDS, NCCL's ulimits, the host's IPC (/dev/shm) for both workers with cuMem off, only on the workers" {
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run overlay_json
  assert_success
  local doc=$output
  jq -e '.services | keys == ["ray-worker-0", "ray-worker-1"]' <<<"$doc"
  jq -e '.services["ray-worker-0"].deploy.resources.reservations.devices == [{"driver": "nvidia", "capabilities": ["gpu"], "device_ids": ["0", "1", "2", "3"]}]' <<<"$doc"
  jq -e '.services["ray-worker-1"].deploy.resources.reservations.devices[0].device_ids == ["4", "5", "6", "7"]' <<<"$doc"
  jq -e 'all(.services[]; .ulimits == {"memlock": -1, "stack": 67108864} and .ipc == "host" and (has("shm_size") | not))' <<<"$doc"
  jq -e 'all(.services[]; .environment == {"NCCL_CUMEM_ENABLE": "0"})' <<<"$doc"
}

@test "GPU overlay, MVP_COMPOSE_IPC=private: each worker its own /dev/shm of MVP_SHM_SIZE, no shared IPC, cuMem left alone" {
  MVP_COMPOSE_IPC=private MVP_SHM_SIZE=32g run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run overlay_json
  local doc=$output
  jq -e 'all(.services[]; .shm_size == "32g" and (has("ipc") | not) and (has("environment") | not))' <<<"$doc"
  MVP_COMPOSE_IPC=shareable run --separate-stderr "$MVP_REPO/scripts/01_up.sh"
  assert_failure
  [[ $(grep -c '^ERROR: ' <<<"$stderr") == 1 && $stderr == *"MVP_COMPOSE_IPC"* ]]
}

@test "one worker holding all 8 GPUs of the host (MVP_WORKERS=1): only ray-head and ray-worker-0 are created, the overlay reserves the 8, no cuMem override" {
  export MVP_WORKERS=1 MVP_GPUS_PER_WORKER=8 MVP_WORKER_GPU_IDS=0,1,2,3,4,5,6,7
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run cat "$MVP_STUB_LOG"
  assert_line "$(quoted docker compose -f "$MVP_REPO/docker-compose.yaml" -f "$OVERLAY" -p mvp-v11 up -d ray-head ray-worker-0)"
  assert_line "  env MVP_WORKER0_IP=172.28.0.3"
  run overlay_json
  local doc=$output
  jq -e '.services | keys == ["ray-worker-0"]' <<<"$doc"
  jq -e '.services["ray-worker-0"] | .deploy.resources.reservations.devices[0].device_ids == ["0","1","2","3","4","5","6","7"] and .ipc == "host" and (has("environment") | not)' <<<"$doc"
  MVP_WORKERS=3 MVP_WORKER_GPU_IDS="0 1 2" MVP_STUB_GPUS=8 run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_failure
  assert_output --partial "PROBLEM: docker-compose.yaml defines 2 workers but MVP_WORKERS=3; set MVP_WORKERS=1 (one worker holding all the host's GPUs) or 2"
}

@test "MVP_COMPOSE_GPUS=logical: docker-compose.yaml alone, no overlay, no GPU check" {
  export MVP_COMPOSE_GPUS=logical
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run cat "$MVP_STUB_LOG"
  assert_line "$(quoted docker compose -f "$MVP_REPO/docker-compose.yaml" -p mvp-v11 up -d)"
  [[ ! -e $OVERLAY ]]
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")"
  run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_success
  assert_output --partial "GPUs: logical (MVP_COMPOSE_GPUS=logical)"
}

@test "bad GPU settings are one ERROR line each and start nothing" {
  local ids
  for ids in "0,1,2,3" "0,1 2;3" ; do
    MVP_WORKER_GPU_IDS=$ids run --separate-stderr "$MVP_REPO/scripts/01_up.sh"
    assert_failure
    [[ $(grep -c '^ERROR: ' <<<"$stderr") == 1 && $stderr == *"MVP_WORKER_GPU_IDS"* ]]
  done
  MVP_COMPOSE_GPUS=amd run --separate-stderr "$MVP_REPO/scripts/01_up.sh"
  assert_failure
  [[ $stderr == *"ERROR: MVP_COMPOSE_GPUS='amd' must be nvidia or logical; fix it where it is set"* ]]
  run grep -c " up -d" "$MVP_STUB_LOG"
  assert_output 0
}

@test "every compose file combination the scripts produce is valid: Compose spec JSON schema and docker-compose config" {
  local schema=${MVP_TEST_COMPOSE_SCHEMA:-$MVP_REPO/../shared/schemas/compose-spec/compose-spec.json}
  [[ -f $schema ]] || fail "no Compose schema at $schema; set MVP_TEST_COMPOSE_SCHEMA"
  MVP_REAL_DOCKER_COMPOSE=$(PATH=${PATH//"$MVP_REPO/tests/test_helper/stubs:"/} command -v docker-compose) ||
    fail "docker-compose is not installed; run make setup"
  export MVP_REAL_DOCKER_COMPOSE
  # Each combination's merged file (the real docker-compose config of it) and
  # GPU overlay are kept; the schema then checks them all in one Python.
  local gpus ids cli ipc n=0 want_ids=() want_ipc=()
  local -a files=("$MVP_REPO/docker-compose.yaml") nvidia=()
  for gpus in logical nvidia; do
    for ids in "0,1,2,3 4,5,6,7" "GPU-0b6a6c3e-1b4f-4c39-a3f2-1d2e3f4a5b6c,1 2,3"; do
      for cli in 1 0; do
        n=$((n + 1))
        ipc=host
        ((n % 2)) || ipc=private
        export MVP_STUB_COMPOSE_CONFIG=$BATS_TEST_TMPDIR/merged-$n.yaml
        MVP_COMPOSE_IPC=$ipc MVP_COMPOSE_GPUS=$gpus MVP_WORKER_GPU_IDS=$ids MVP_STUB_COMPOSE_PLUGIN=$cli run "$MVP_REPO/scripts/01_up.sh"
        assert_success
        [[ -s $MVP_STUB_COMPOSE_CONFIG ]]
        files+=("$MVP_STUB_COMPOSE_CONFIG")
        if [[ $gpus == nvidia ]]; then
          cp "$OVERLAY" "$BATS_TEST_TMPDIR/overlay-$n.yaml"
          files+=("$BATS_TEST_TMPDIR/overlay-$n.yaml")
          nvidia+=("$MVP_STUB_COMPOSE_CONFIG")
          want_ids+=("$ids")
          # The engine shares the host's IPC with the workers only, and only with ipc=host.
          if [[ $ipc == host ]]; then want_ipc+=("host host None"); else want_ipc+=("None None None"); fi
        else
          run grep -c "device_ids" "$MVP_STUB_COMPOSE_CONFIG"
          assert_output 0
        fi
      done
    done
  done
  # One worker holding every GPU of the host: ray-worker-1 is not created but
  # the file still interpolates (its address is one no container gets).
  export MVP_STUB_COMPOSE_CONFIG=$BATS_TEST_TMPDIR/merged-one.yaml
  MVP_WORKERS=1 MVP_GPUS_PER_WORKER=8 MVP_WORKER_GPU_IDS=0,1,2,3,4,5,6,7 run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  cp "$OVERLAY" "$BATS_TEST_TMPDIR/overlay-one.yaml"
  files+=("$MVP_STUB_COMPOSE_CONFIG" "$BATS_TEST_TMPDIR/overlay-one.yaml")
  run "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/validate_compose.py" "$schema" "${files[@]}"
  assert_success
  [[ $(grep -c '^valid: ' <<<"$output") == "${#files[@]}" ]]
  ((${#files[@]} == 1 + 8 + 4 + 2))
  # The engine gets what the overlay says: GPU ids one by one.
  run "$MVP_REPO/.venv/bin/python" -c '
import sys, yaml
for path in sys.argv[1:]:
    svc = yaml.safe_load(open(path))["services"]
    print(" ".join(",".join(svc[f"ray-worker-{i}"]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"]) for i in (0, 1)))
    print(" ".join(str(svc[f"ray-worker-{i}"].get("ipc")) for i in (0, 1)), svc["ray-head"].get("ipc"))' "${nvidia[@]}"
  assert_success
  local k
  for k in "${!nvidia[@]}"; do
    assert_line --index $((2 * k)) "${want_ids[k]}"
    assert_line --index $((2 * k + 1)) "${want_ipc[k]}"
  done
  ((${#lines[@]} == 8))
  grep -q 'ipv4_address: 172.28.0.4' "$MVP_STUB_COMPOSE_CONFIG"
}

@test "01_up (compose): running containers are a SKIP and no compose command is issued" {
  export MVP_STUB_RUNNING="mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1"
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  assert_output --partial "SKIP: containers mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1 (already running)"
  run grep -c "docker compose" "$MVP_STUB_LOG"
  assert_output 0
}

@test "01_up (compose): --dry-run prints the compose command and issues nothing" {
  run "$MVP_REPO/scripts/01_up.sh" --dry-run
  assert_success
  assert_output --partial "DRY-RUN: env MVP_IMAGE=verlai/verl:vllm017.latest"
  assert_output --partial "docker compose -f $MVP_REPO/docker-compose.yaml -f $OVERLAY -p mvp-v11 up -d"
  run grep -c " up -d" "$MVP_STUB_LOG"
  assert_output 0
}

@test "20_start_head (compose): ray start --head --num-cpus=0 --num-gpus=0 through docker exec in the head" {
  export MVP_STUB_RUNNING="mvp11-ray-head"
  run "$MVP_REPO/scripts/20_start_head.sh"
  assert_success
  run cat "$MVP_STUB_LOG"
  assert_line "$(quoted docker exec -i -w / mvp11-ray-head env RAY_AUTH_MODE=disabled ray start --disable-usage-stats --head --num-cpus=0 --num-gpus=0 \
    --node-ip-address=172.28.0.2 --port=6379 --dashboard-host=0.0.0.0 --dashboard-port=8265 --ray-client-server-port=10001)"
}

@test "20_start_head (compose): a running, answering head is a SKIP and nothing is started" {
  export MVP_STUB_RUNNING="mvp11-ray-head" MVP_STUB_RAY="mvp11-ray-head"
  run "$MVP_REPO/scripts/20_start_head.sh"
  assert_success
  assert_output --partial "SKIP: Ray head on mvp11-ray-head"
  run grep -c "ray start" "$MVP_STUB_LOG"
  assert_output 0
}

@test "21_start_workers (compose): each worker gets ray start with its GPUs and worker_node=100, then both register" {
  export MVP_STUB_RUNNING="mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1" MVP_STUB_RAY="mvp11-ray-head"
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  assert_output --partial "cluster: head + 2 workers registered"
  run cat "$MVP_STUB_LOG"
  local i
  for i in 0 1; do
    assert_line "$(quoted docker exec -i -w / "mvp11-ray-worker-$i" env RAY_AUTH_MODE=disabled ray start --disable-usage-stats --address=172.28.0.2:6379 \
      "--node-ip-address=172.28.0.$((i + 3))" --num-gpus=4 '--resources={"worker_node": 100}')"
  done
}

@test "20/21 (compose): ray stop runs only in a node where an earlier Ray left processes" {
  export MVP_STUB_RUNNING="mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1" MVP_STUB_RAY="mvp11-ray-head"
  export MVP_STUB_LEFTOVERS="mvp11-ray-worker-1"
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  run grep "ray stop" "$MVP_STUB_LOG"
  assert_output "$(quoted docker exec -i -w / mvp11-ray-worker-1 ray stop --force)"
}

@test "21_start_workers (compose): only the worker without a raylet is started" {
  export MVP_STUB_RUNNING="mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1" MVP_STUB_RAY="mvp11-ray-head mvp11-ray-worker-0"
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  assert_output --partial "SKIP: Ray worker on mvp11-ray-worker-0 (raylet running)"
  run grep -c "ray start" "$MVP_STUB_LOG"
  assert_output 1
  run grep -c "mvp11-ray-worker-1 env RAY_AUTH_MODE=disabled ray start" "$MVP_STUB_LOG"
  assert_output 1
}

@test "21_start_workers: a worker whose raylet missed Ray's fixed 30 s to register is stopped in its node and started once more, with one WARN line; both then register" {
  export MVP_STUB_RUNNING="mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1" MVP_STUB_RAY="mvp11-ray-head"
  export MVP_STUB_RAY_SLOW="mvp11-ray-worker-1"
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  assert_output --partial "cluster: head + 2 workers registered"
  [[ $(grep -c "Ray's raylet did not register within Ray's 30 s" <<<"$output") == 1 ]]
  run grep -c "mvp11-ray-worker-1 env RAY_AUTH_MODE=disabled ray start" "$MVP_STUB_LOG"
  assert_output 2
  run grep "ray stop" "$MVP_STUB_LOG"
  assert_output "$(quoted docker exec -i -w / mvp11-ray-worker-1 ray stop --force)"
  run grep -c "mvp11-ray-worker-0 env RAY_AUTH_MODE=disabled ray start" "$MVP_STUB_LOG"
  assert_output 1
}

@test "21_start_workers: a worker that misses Ray's 30 s twice in a row is started a third time and registers; one that misses it three times is Ray's error and exit 1" {
  export MVP_STUB_RUNNING="mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1" MVP_STUB_RAY="mvp11-ray-head"
  export MVP_STUB_RAY_SLOW="mvp11-ray-worker-1" MVP_STUB_RAY_SLOW_TIMES=2
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  assert_output --partial "cluster: head + 2 workers registered"
  assert_line --partial "mvp11-ray-worker-1: Ray's raylet did not register within Ray's 30 s (a loaded host); stopping it and starting it again (start 3 of 3)"
  run grep -c "mvp11-ray-worker-1 env RAY_AUTH_MODE=disabled ray start" "$MVP_STUB_LOG"
  assert_output 3
  rm "$MVP_STUB_DIR/slow.mvp11-ray-worker-1"
  : >"$MVP_STUB_LOG"
  export MVP_STUB_RAY_SLOW_TIMES=3 MVP_STUB_RAY="mvp11-ray-head mvp11-ray-worker-0"
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_failure 1
  assert_line --partial "Exception: The current node timed out during startup."
  run grep -c "mvp11-ray-worker-1 env RAY_AUTH_MODE=disabled ray start" "$MVP_STUB_LOG"
  assert_output 3
}

@test "21_start_workers: any other ray start failure is not tried again: Ray's own error, one ERROR line, exit 1" {
  export MVP_STUB_RUNNING="mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1" MVP_STUB_RAY="mvp11-ray-head"
  export MVP_STUB_RAY_BROKEN="mvp11-ray-worker-1"
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_failure 1
  assert_line --partial "ValueError: mvp stub: ray start broken in mvp11-ray-worker-1"
  assert_line "ERROR: a worker's ray start failed; see its output above"
  [[ $(grep -c '^ERROR' <<<"$output") == 1 ]]
  run grep -c "mvp11-ray-worker-1 env RAY_AUTH_MODE=disabled ray start" "$MVP_STUB_LOG"
  assert_output 1
  refute [ -n "$(grep 'ray stop' "$MVP_STUB_LOG")" ]
}

@test "02_down (compose): docker compose down when containers exist, a SKIP when none do" {
  export MVP_STUB_RUNNING="mvp11-ray-head"
  run "$MVP_REPO/scripts/02_down.sh"
  assert_success
  run grep -cF "$(quoted docker compose -f "$MVP_REPO/docker-compose.yaml" -f "$OVERLAY" -p mvp-v11 down)" "$MVP_STUB_LOG"
  assert_output 1
  export MVP_STUB_RUNNING=""
  : >"$MVP_STUB_LOG"
  run "$MVP_REPO/scripts/02_down.sh"
  assert_success
  assert_output --partial "SKIP: containers"
  run grep -c "compose" "$MVP_STUB_LOG"
  assert_output 0
}

@test "03_cleanup_v1_legacy: removes exactly v1's mvp-ray-* containers, never v1.1's" {
  export MVP_STUB_V1="mvp-ray-head mvp-ray-worker-0 mvp-ray-worker-1 mvp11-ray-head mvp-ray-headless"
  run "$MVP_REPO/scripts/03_cleanup_v1_legacy.sh"
  assert_success
  run grep "docker rm" "$MVP_STUB_LOG"
  assert_output "$(quoted docker rm -f mvp-ray-head mvp-ray-worker-0 mvp-ray-worker-1)"
}

@test "03_cleanup_v1_legacy: no v1 container is a SKIP" {
  run "$MVP_REPO/scripts/03_cleanup_v1_legacy.sh"
  assert_success
  assert_output --partial "SKIP: v1 cleanup (no v1 containers)"
}

@test "12_install_py_deps (compose): pip installs PyYAML and pyarrow in the containers that lack them" {
  export MVP_STUB_RUNNING="mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1"
  run "$MVP_REPO/scripts/12_install_py_deps.sh"
  assert_success
  run grep -c "python3 -m pip install --quiet PyYAML pyarrow" "$MVP_STUB_LOG"
  assert_output 3
  : >"$MVP_STUB_LOG"
  MVP_STUB_PY_OK=1 run "$MVP_REPO/scripts/12_install_py_deps.sh"
  assert_output --partial "SKIP: python packages in mvp11-ray-worker-1"
  run grep -c "pip install" "$MVP_STUB_LOG"
  assert_output 0
}

@test "00_prereq_check (compose): reports every problem at once, then exits non-zero" {
  # The fake dashboard's port stands in for a port someone else holds.
  export MVP_STUB_GPUS=4 MVP_VERL_DIR=$BATS_TEST_TMPDIR/no-verl
  run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_failure
  assert_output --partial "PROBLEM: no verl source at $BATS_TEST_TMPDIR/no-verl; git clone https://github.com/volcengine/verl.git"
  assert_output --partial "PROBLEM: nvidia-smi lists 4 GPUs, the cluster needs 8"
  assert_output --partial "PROBLEM: port 127.0.0.1:$MVP_DASHBOARD_PORT (for mvp11-ray-head: its dashboard, published) is in use"
  assert_output --partial "ERROR: 3 problem(s) found"
}

@test "00_prereq_check (compose): a host with Docker, 8 GPUs and the verl checkout passes and gets the shared layout" {
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")"
  run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_success
  [[ -d "$MVP_HOST_SHARED_DIR/common/code/verl" && -d "$MVP_HOST_SHARED_DIR/user/code" && -d "$MVP_HOST_SHARED_DIR/jobs" ]]
}

@test "00_prereq_check (compose): the image check runs inside the head when it is up; its problems are PROBLEM lines" {
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")"
  export MVP_STUB_RUNNING="mvp11-ray-head" MVP_STUB_IMAGE_CHECK="PROBLEM: ray 2.41.0 in verlai/verl:vllm017.latest, but the host client is ray 2.60.0 (helpers/requirements.txt); use an image with Ray 2.60.0"
  run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_failure
  assert_output --partial "PROBLEM: ray 2.41.0 in verlai/verl:vllm017.latest, but the host client is ray 2.60.0"
  assert_output --partial "ERROR: 1 problem(s) found"
  run cat "$MVP_STUB_LOG"
  assert_line "$(quoted docker exec -i -w / mvp11-ray-head python3 /workspace/mvp/helpers/mvp/worker/image_check.py \
    --requirements /workspace/mvp/helpers/requirements.txt --verl-src /workspace/verl --image verlai/verl:vllm017.latest)"
}

@test "00_prereq_check (compose): with the head down the check runs in a throwaway container of the image, never pulling" {
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")"
  run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_success
  assert_output --partial "image verlai/verl:vllm017.latest: ray 2.60.0 and"
  run cat "$MVP_STUB_LOG"
  assert_line "$(quoted docker run --rm --pull=never -v "$MVP_REPO:/workspace/mvp:ro" -v "$MVP_VERL_DIR:/workspace/verl:ro" \
    verlai/verl:vllm017.latest python3 /workspace/mvp/helpers/mvp/worker/image_check.py \
    --requirements /workspace/mvp/helpers/requirements.txt --verl-src /workspace/verl --image verlai/verl:vllm017.latest)"
}

@test "00_prereq_check (compose): a throwaway container that loses podman's attach race is run again; one that keeps losing it is one PROBLEM line" {
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")"
  MVP_STUB_ATTACH_RACE=2 run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_success
  assert_output --partial "image verlai/verl:vllm017.latest: ray 2.60.0 and"
  run grep -c "^docker run " "$MVP_STUB_LOG"
  assert_output 3
  : >"$MVP_STUB_LOG"
  MVP_STUB_ATTACH_RACE=3 run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_failure
  assert_output --partial "PROBLEM: the image check could not run in verlai/verl:vllm017.latest (exit 125): Error: read unixpacket"
  run grep -c "^docker run " "$MVP_STUB_LOG"
  assert_output 3
}

@test "00_prereq_check (compose): an image not on this host, or no compose CLI, is one PROBLEM line each" {
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")"
  export MVP_STUB_NO_IMAGE=1 MVP_STUB_COMPOSE_PLUGIN=0 MVP_STUB_COMPOSE_V1=0
  run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_failure
  assert_output --partial "PROBLEM: image verlai/verl:vllm017.latest is not on this host; docker pull verlai/verl:vllm017.latest"
  assert_output --partial "PROBLEM: neither 'docker compose' (the compose plugin) nor 'docker-compose' answers"
  assert_output --partial "ERROR: 2 problem(s) found"
  run grep -c "docker run" "$MVP_STUB_LOG"
  assert_output 0
}

@test "compose tier's test image: the base's tag changes with a requirement or the build script, not with a comment; the image's with any runbook file" {
  local copy=$BATS_TEST_TMPDIR/repo
  mkdir -p "$copy/tests/compose" "$copy/helpers" "$copy/scripts/lib"
  cp "$MVP_REPO/tests/compose/build_image.sh" "$copy/tests/compose/"
  cp "$MVP_REPO/scripts/lib/log.sh" "$MVP_REPO/scripts/lib/retry.sh" "$copy/scripts/lib/"
  cp "$MVP_REPO/helpers/requirements.txt" "$copy/helpers/"
  local first image
  first=$("$copy/tests/compose/build_image.sh" --print-base-tag)
  [[ $first =~ ^[0-9a-f]{16}$ ]]
  image=$("$copy/tests/compose/build_image.sh" --print-tag)
  [[ $image =~ ^[0-9a-f]{16}$ && $image != "$first" ]]
  echo "# a comment" >>"$copy/helpers/requirements.txt"
  [[ $("$copy/tests/compose/build_image.sh" --print-base-tag) == "$first" ]]
  sed -i 's/^PyYAML==.*/PyYAML==6.0.2/' "$copy/helpers/requirements.txt"
  local second
  second=$("$copy/tests/compose/build_image.sh" --print-base-tag)
  [[ $second != "$first" ]]
  echo "# build change" >>"$copy/tests/compose/build_image.sh"
  [[ $("$copy/tests/compose/build_image.sh" --print-base-tag) != "$second" ]]
  # The image holds the runbook: any file of it is an input (here outside a checkout).
  image=$("$copy/tests/compose/build_image.sh" --print-tag)
  echo "echo hi" >"$copy/scripts/99_new.sh"
  [[ $("$copy/tests/compose/build_image.sh" --print-tag) != "$image" ]]
}
