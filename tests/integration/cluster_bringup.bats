#!/usr/bin/env bats
# A real three-node Ray cluster on the local runtime: shape, idempotence,
# recovery of a killed worker, status, and a clean shutdown. One cluster for
# the whole file; teardown_file stops it even when a test fails.

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  mvp_cluster_up
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
}

nodes_json() {
  curl -fsS "$MVP_DASHBOARD/api/v0/nodes?detail=true" | jq '[.data.result.result[] | select(.state == "ALIVE")]'
}

# Host PIDs of the raylet inside one node's namespace.
raylet_pid() {
  local init pid
  init=$(<"$MVP_STATE_DIR/nodes/$1/init.pid")
  for pid in $(mvp_node_processes); do
    [[ $(readlink "/proc/$pid/ns/pid") == "$(readlink "/proc/$init/ns/pid")" && $(cat "/proc/$pid/comm") == raylet ]] && echo "$pid"
  done
  return 0
}

@test "bring-up: the head has 0 CPU and 0 GPU; two workers carry worker_node 100 and 4 GPUs each" {
  run nodes_json
  assert_success
  local nodes=$output
  jq -e 'length == 3' <<<"$nodes"
  jq -e --arg net "$MVP_TEST_NET" '[.[] | select(.is_head_node)] | length == 1 and (.[0].node_ip == "\($net).2")
         and ((.[0].resources_total.CPU // 0) == 0) and ((.[0].resources_total.GPU // 0) == 0)' <<<"$nodes"
  jq -e --arg net "$MVP_TEST_NET" '[.[] | select(.is_head_node | not)] | map(.node_ip) | sort == ["\($net).3", "\($net).4"]' <<<"$nodes"
  jq -e 'all(.[] | select(.is_head_node | not); .resources_total.GPU == 4 and .resources_total.worker_node == 100)' <<<"$nodes"
}

@test "bring-up: each node has its own hostname, PID namespace and /tmp/ray session" {
  local node pid sessions=() namespaces=()
  for node in mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1; do
    pid=$(<"$MVP_STATE_DIR/nodes/$node/init.pid")
    run nsenter -t "$pid" --uts hostname
    assert_output "$node"
    namespaces+=("$(readlink "/proc/$pid/ns/pid")")
    sessions+=("$(nsenter -t "$pid" --mount stat -c '%d:%i' /tmp/ray/)")
  done
  [[ $(printf '%s\n' "${namespaces[@]}" | sort -u | wc -l) == 3 ]]
  [[ $(printf '%s\n' "${sessions[@]}" | sort -u | wc -l) == 3 ]]
  [[ $(readlink "/proc/$$/ns/pid") != "${namespaces[0]}" ]]
}

@test "50_status --json: exit 0 and the same nodes, addresses and resources Ray reports" {
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" --json
  assert_success
  local reported=$output
  jq -e '.cluster.up and .cluster.ok and (.cluster.problems | length == 0)' <<<"$reported"
  run nodes_json
  local ray=$output
  [[ $(jq -c '[.cluster.head] + .cluster.workers | map({node_id, ip, gpu}) | sort_by(.ip)' <<<"$reported") == \
     "$(jq -c 'map({node_id, ip: .node_ip, gpu: (.resources_total.GPU // 0)}) | sort_by(.ip)' <<<"$ray")" ]]
  run "$MVP_REPO/scripts/50_status.sh"
  assert_success
  assert_output --partial "cluster  UP  shape OK"
}

@test "re-running 00 -> 21: only SKIP and info lines, no process started, the same node ids" {
  local before_pids before_ids
  before_pids=$(mvp_node_processes | sort)
  before_ids=$(nodes_json | jq -c 'map(.node_id) | sort')
  local s log=$BATS_TEST_TMPDIR/rerun.log
  for s in "${MVP_BRINGUP_STEPS[@]}"; do
    "$MVP_REPO/scripts/$s.sh" >/dev/null 2>>"$log"
  done
  run grep -c ' SKIP: ' "$log"
  (( output >= 9 ))
  run grep -v -E '^[0-9T:-]+Z (SKIP: |       )' "$log"
  assert_output ""
  [[ $(mvp_node_processes | sort) == "$before_pids" ]]
  [[ $(nodes_json | jq -c 'map(.node_id) | sort') == "$before_ids" ]]
}

@test "21_start_workers.sh restarts a worker whose raylet was killed, and only that one" {
  local victim old_id
  victim=$(raylet_pid mvp11-ray-worker-1)
  [[ -n $victim ]]
  old_id=$(nodes_json | jq -r --arg ip "$MVP_TEST_NET.4" '.[] | select(.node_ip == $ip) | .node_id')
  kill -KILL "$victim"
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  assert_output --partial "SKIP: Ray worker on mvp11-ray-worker-0 (raylet running)"
  assert_output --partial "starting the Ray worker on mvp11-ray-worker-1"
  run nodes_json
  jq -e --arg old "$old_id" --arg ip "$MVP_TEST_NET.4" '[.[] | select(.node_ip == $ip)] | length == 1 and .[0].node_id != $old' <<<"$output"
  run "$MVP_REPO/scripts/50_status.sh" --json
  assert_success
}

# The freezer cgroup a test put a node's init in, thawed and removed after the
# test, pass or fail (a frozen init would hold the next tests and the teardown).
teardown() {
  local fz
  fz=$(cat "$BATS_TEST_TMPDIR/freezer" 2>/dev/null) || return 0
  echo THAWED >"$fz/freezer.state" 2>/dev/null
  mvp_wait_until 30 "the freezer cgroup $fz to empty" test ! -s "$fz/cgroup.procs" && rmdir "$fz"
}

# pending_kill_not_exiting PID: a SIGKILL is pending for PID (bit 0x100 of
# SigPnd or ShdPnd) and the kernel has not marked it exiting yet (PF_EXITING,
# 0x4 in /proc/PID/stat's flags): the window a check of PF_EXITING alone misses.
pending_kill_not_exiting() {
  local line pending=0 stat
  local -a f
  while read -r line; do
    [[ $line == SigPnd:* || $line == ShdPnd:* ]] && ((16#${line##*[[:space:]]} & 0x100)) && pending=1
  done <"/proc/$1/status"
  stat=$(<"/proc/$1/stat")
  read -ra f <<<"${stat##*) }"
  ((pending == 1 && (f[6] & 4) == 0))
}

# One round of the test below (MVP_TEST_REPEAT=N runs N rounds in a row on
# the same cluster; each round ends with the node and its Ray back).
pending_kill_round() {
  local node=mvp11-ray-worker-1 init fz=/sys/fs/cgroup/freezer/mvp-test-$$-$BATS_TEST_NUMBER-$1 old_id
  [[ -w /sys/fs/cgroup/freezer ]] || fail "no writable cgroup v1 freezer at /sys/fs/cgroup/freezer: this test holds a SIGKILL pending with it"
  init=$(<"$MVP_STATE_DIR/nodes/$node/init.pid")
  old_id=$(nodes_json | jq -r --arg ip "$MVP_TEST_NET.4" '.[] | select(.node_ip == $ip) | .node_id')
  mkdir "$fz"
  echo "$fz" >"$BATS_TEST_TMPDIR/freezer"
  echo "$init" >"$fz/cgroup.procs"
  echo FROZEN >"$fz/freezer.state"
  mvp_wait_until 10 "$node's init frozen" grep -qx FROZEN "$fz/freezer.state"
  kill -KILL "$init"
  pending_kill_not_exiting "$init"
  "$MVP_REPO/scripts/21_start_workers.sh" >"$BATS_TEST_TMPDIR/21.out" 2>"$BATS_TEST_TMPDIR/21.err" &
  local starter=$! rc=0
  # Taken for up, the node would be SKIPped (its raylet still runs) and never named here.
  mvp_wait_until 60 "21 to find $node down" grep -q "bringing back worker node(s) that are down: $node$" "$BATS_TEST_TMPDIR/21.err" || rc=1
  echo THAWED >"$fz/freezer.state"
  wait "$starter" || rc=$?
  cat "$BATS_TEST_TMPDIR/21.err"
  ((rc == 0))
  grep -q "starting node $node$" "$BATS_TEST_TMPDIR/21.err"
  grep -q "starting the Ray worker on $node " "$BATS_TEST_TMPDIR/21.err"
  [[ ! -e /proc/$init ]]
  run nodes_json
  jq -e --arg old "$old_id" --arg ip "$MVP_TEST_NET.4" '[.[] | select(.node_ip == $ip)] | length == 1 and .[0].node_id != $old' <<<"$output"
  rmdir "$fz" && rm "$BATS_TEST_TMPDIR/freezer"
}

@test "a worker whose init has a SIGKILL pending and not yet acted on (held so by the cgroup v1 freezer, as a loaded host holds it for a moment) is down, not up: 21 waits for it to go and brings the node and its Ray back" {
  local r
  for ((r = 1; r <= ${MVP_TEST_REPEAT:-1}; r++)); do
    echo "# round $r of ${MVP_TEST_REPEAT:-1}" >&3
    pending_kill_round "$r"
  done
}

@test "02_down.sh ends every process in the nodes' namespaces; a second run is a SKIP" {
  local pids
  pids=$(mvp_node_processes)
  [[ $(wc -w <<<"$pids") -ge 12 ]]
  run "$MVP_REPO/scripts/02_down.sh"
  assert_success
  local pid
  for pid in $pids; do
    [[ ! -e /proc/$pid ]] || { ps -o pid,comm -p "$pid"; false; }
  done
  run curl -fsS --max-time 2 "$MVP_DASHBOARD/api/version"
  assert_failure
  run "$MVP_REPO/scripts/02_down.sh"
  assert_success
  assert_output --partial "SKIP: node mvp11-ray-head (not up)"
}

@test "50_status.sh exits 1 and says DOWN when the cluster is down" {
  run "$MVP_REPO/scripts/50_status.sh"
  assert_failure 1
  assert_output --partial "cluster  DOWN"
}

@test "00_prereq_check.sh reports a port someone else holds and starts nothing" {
  python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[2], int(sys.argv[3]))); s.listen(); open(sys.argv[1], "w").close(); time.sleep(60)' "$BATS_TEST_TMPDIR/ready" "$MVP_HEAD_IP" "$MVP_DASHBOARD_PORT" &
  local holder=$!
  mvp_wait_until 10 "the port holder listening" test -e "$BATS_TEST_TMPDIR/ready" || { kill "$holder"; false; }
  run "$MVP_REPO/scripts/00_prereq_check.sh"
  kill "$holder"
  assert_failure
  assert_output --partial "PROBLEM: port $MVP_HEAD_IP:$MVP_DASHBOARD_PORT (for mvp11-ray-head) is in use"
  [[ ! -e $MVP_STATE_DIR/nodes/mvp11-ray-head/init.pid ]]
}
