#!/usr/bin/env bats
# The compose runtime's exact docker commands, asserted through a PATH stub of
# docker (no Docker engine here) and a fake dashboard standing in for Ray.

setup() {
  load ../test_helper/common
  mvp_use_stubs
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=compose
  export MVP_HOST_SHARED_DIR="$BATS_TEST_TMPDIR/shared dir" MVP_VERL_DIR=$BATS_TEST_TMPDIR/verl
  unset SHARED_ROOT MVP_HEAD_IP MVP_WORKER_IPS MVP_WORKERS MVP_GPUS_PER_WORKER
  mkdir -p "$MVP_HOST_SHARED_DIR" "$MVP_VERL_DIR/verl"
  touch "$MVP_VERL_DIR/verl/__init__.py"
  cat >"$MVP_STUB_DIR/nodes.json" <<'JSON'
[{"node_id": "head-id", "node_ip": "172.28.0.2", "is_head_node": true, "state": "ALIVE", "resources_total": {}},
 {"node_id": "w0-id", "node_ip": "172.28.0.3", "is_head_node": false, "state": "ALIVE", "resources_total": {"CPU": 16, "GPU": 4, "worker_node": 100}},
 {"node_id": "w1-id", "node_ip": "172.28.0.4", "is_head_node": false, "state": "ALIVE", "resources_total": {"CPU": 16, "GPU": 4, "worker_node": 100}}]
JSON
  python3 "$MVP_REPO/tests/test_helper/fake_dashboard.py" "$MVP_STUB_DIR" "$BATS_TEST_TMPDIR/port" &
  echo $! >"$BATS_TEST_TMPDIR/dashboard.pid"
  local i
  for ((i = 0; i < 50; i++)); do [[ -s $BATS_TEST_TMPDIR/port ]] && break; sleep 0.1; done
  export MVP_DASHBOARD_PORT=$(<"$BATS_TEST_TMPDIR/port") MVP_NODES_TIMEOUT=5
}

teardown() {
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")" 2>/dev/null || true
}

# The line the stub records for a command given as words.
quoted() { printf '%q ' "$@"; }

@test "01_up (compose): docker compose up -d on docker-compose.yaml, GPUs and addresses interpolated" {
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run cat "$MVP_STUB_LOG"
  assert_line "$(quoted docker compose -f "$MVP_REPO/docker-compose.yaml" -p mvp-v11 up -d)"
  assert_line "  env MVP_WORKER0_GPUS=0,1,2,3"
  assert_line "  env MVP_WORKER1_GPUS=4,5,6,7"
  assert_line "  env MVP_HEAD_IP=172.28.0.2"
  assert_line "  env MVP_WORKER1_IP=172.28.0.4"
  assert_line "  env MVP_HOST_SHARED_DIR=$MVP_HOST_SHARED_DIR"
  assert_line "  env MVP_DASHBOARD_PORT=$MVP_DASHBOARD_PORT"
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
  assert_output --partial "DRY-RUN: env MVP_IMAGE=verlai/verl:latest"
  assert_output --partial "docker compose -f $MVP_REPO/docker-compose.yaml -p mvp-v11 up -d"
  run grep -c "docker compose" "$MVP_STUB_LOG"
  assert_output 0
}

@test "20_start_head (compose): ray start --head --num-cpus=0 --num-gpus=0 through docker exec in the head" {
  export MVP_STUB_RUNNING="mvp11-ray-head"
  run "$MVP_REPO/scripts/20_start_head.sh"
  assert_success
  run cat "$MVP_STUB_LOG"
  assert_line "$(quoted docker exec -i -w / mvp11-ray-head ray start --disable-usage-stats --head --num-cpus=0 --num-gpus=0 \
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
    assert_line "$(quoted docker exec -i -w / "mvp11-ray-worker-$i" ray start --disable-usage-stats --address=172.28.0.2:6379 \
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
  run grep -c "mvp11-ray-worker-1 ray start" "$MVP_STUB_LOG"
  assert_output 1
}

@test "02_down (compose): docker compose down when containers exist, a SKIP when none do" {
  export MVP_STUB_RUNNING="mvp11-ray-head"
  run "$MVP_REPO/scripts/02_down.sh"
  assert_success
  run grep -cF "$(quoted docker compose -f "$MVP_REPO/docker-compose.yaml" -p mvp-v11 down)" "$MVP_STUB_LOG"
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
