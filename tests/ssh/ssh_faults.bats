#!/usr/bin/env bats
# The ssh runtime's faults on a real four-node cluster (a head and three
# workers, each a namespace with its own address and a real OpenSSH server)
# plus a spare node whose /private is its own, not the shared storage: a
# worker whose sshd is down, a changed host key and a worker without the
# shared mount are each named in one line, and 00 reports them all at once;
# the driver's Ray processes killed mid-job on a node that stays up leave
# the job's logs in its directory.
# teardown_file stops every node by PID even when a test fails.

setup_file() {
  load ../test_helper/common
  load ../test_helper/ssh_nodes
  ssh_nodes_isolate "$BATS_FILE_TMPDIR"
  ssh_inventory 3
  export SSH_RB_PATH MVP_TEST_LOG=$BATS_FILE_TMPDIR/runbook.log
  SSH_RB_PATH=$(ssh_restricted_path "$BATS_FILE_TMPDIR/bin")
  local i
  for i in 0 1 2 3; do ssh_node_start "$i" || { ssh_nodes_stop_all; return 1; }; done
  ssh_node_start 4 noshared || { ssh_nodes_stop_all; return 1; }
  local took
  took=$(ssh_bringup "$MVP_TEST_LOG") || { cat "$MVP_TEST_LOG" >&3; return 1; }
  echo "# ssh tier: 00 -> 21 for a head and 3 workers took ${took}s" >&3
}

teardown_file() {
  load ../test_helper/common
  load ../test_helper/ssh_nodes
  ssh_rb 02_down >/dev/null 2>&1 || true
  ssh_nodes_stop_all
}

setup() {
  load ../test_helper/common
  load ../test_helper/ssh_nodes
}

# A test that killed a node's Ray brings the workers back, pass or fail.
teardown() {
  if [[ -f $BATS_TEST_TMPDIR/restart-workers ]]; then ssh_rb 21_start_workers >/dev/null 2>&1 || true; fi
}

@test "a four-node cluster over ssh: three workers registered with worker_node 100, the head with 0 CPU / 0 GPU" {
  run ssh_nodes_json
  assert_success
  jq -e 'length == 4' <<<"$output"
  jq -e '[.[] | select(.is_head_node | not) | select(.resources_total.worker_node == 100)] | length == 3' <<<"$output"
  jq -e '[.[] | select(.is_head_node)][0] | ((.resources_total.CPU // 0) == 0 and (.resources_total.GPU // 0) == 0)' <<<"$output"
}

@test "00 names a worker whose /private is not the shared storage (a nonce written on this host is not there)" {
  MVP_SSH_WORKERS="$MVP_SSH_WORKERS $(ssh_node_ip 4):$SSH_TEST_PORT" run ssh_rb 00_prereq_check
  assert_failure
  assert_output --partial "PROBLEM: mvp11-ray-worker-3 ($(ssh_node_ip 4):$SSH_TEST_PORT): /private is not the shared storage this host sees at $MVP_HOST_SHARED_DIR"
  assert_line "ERROR: 1 problem(s) found; fix them and run this again"
  # The nonce is gone again: nothing is left on the shared storage.
  run find "$MVP_HOST_SHARED_DIR" -maxdepth 1 -name '.mvp-nonce-*'
  assert_output ""
}

@test "a changed host key is refused in one line, by 00 and by 21; nothing is started" {
  local fake=$BATS_TEST_TMPDIR/fake_key kh=$BATS_TEST_TMPDIR/known_hosts ip
  ip=$(ssh_node_ip 2)
  ssh-keygen -q -t ed25519 -N '' -f "$fake"
  grep -v "^\[$ip\]:" "$MVP_SSH_KNOWN_HOSTS" >"$kh"
  echo "[$ip]:$SSH_TEST_PORT $(cut -d' ' -f1,2 "$fake.pub")" >>"$kh"
  MVP_SSH_KNOWN_HOSTS=$kh run ssh_rb 00_prereq_check
  assert_failure
  assert_line "PROBLEM: mvp11-ray-worker-1 ($ip:$SSH_TEST_PORT): its host key has CHANGED (it differs from $kh); ssh refused to connect. If the node was rebuilt, check the new key, then: ssh-keygen -R '[$ip]:$SSH_TEST_PORT' -f $kh"
  refute_output --partial "@@@"
  run grep -c 'host key' <<<"$output"
  assert_output 1
  MVP_SSH_KNOWN_HOSTS=$kh run ssh_rb 21_start_workers
  assert_failure
  refute_output --partial "@@@"
  assert_output --partial "ERROR: node mvp11-ray-worker-1 is down and the ssh runtime could not bring it back"
  run grep -c 'host key has CHANGED' <<<"$output"
  assert_output 1
}


@test "only the driver's Ray processes SIGKILLed on its worker (node and sshd up): FAILED, driver.log holds the job's start, its worker logs kept, the bundle says where it was cut off, 51 shows the log" {
  local id=ssh-rayonly-$RANDOM ip idx spec=$BATS_TEST_TMPDIR/ppo.yaml
  local t0=$SECONDS
  ssh_rb 30_prepare_data_and_model >/dev/null 2>>"$MVP_TEST_LOG"
  CODE_ID=standin ssh_rb 31_snapshot_verl_code >/dev/null 2>>"$MVP_TEST_LOG"
  echo "# 30+31 took $((SECONDS - t0)) s" >&3
  { sed -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" "$MVP_REPO/templates/jobspecs/ppo.yaml"; echo "submission_id: $id"; } >"$spec"
  MVP_LOG_SYNC_SECONDS=1 ssh_rb 43_submit_jobspec "$spec" --wait --override +mvp_standin.step_seconds=1 --override trainer.total_training_steps=100 \
    >"$BATS_TEST_TMPDIR/wait.out" 2>"$BATS_TEST_TMPDIR/wait.err" &
  local waiter=$!
  ip=$(driver_ip_when_running "$id" ssh_dashboard)
  idx=$((${ip##*.} - 40))
  ((idx >= 1 && idx <= 3))
  local logs=$MVP_HOST_SHARED_DIR/jobs/$id/logs i
  # Killed once the node's keeper has had a sync of the job's worker logs
  # there, and the driver's keeper one of the driver's first lines.
  mvp_wait_until 60 "a sync of the job's worker logs on $ip" compgen -G "$logs/nodes/$ip/worker-*.out"
  mvp_wait_until 60 "the precheck line in the kept driver log" grep -qsx "MVP_PRECHECK_MARKER=standin" "$logs/driver.live.log"
  touch "$BATS_TEST_TMPDIR/restart-workers"
  # The node's raylet and everything Ray started under it (its workers, the
  # job's supervisor and driver); the node, its sshd and the runbook's log
  # keepers outside Ray's tree stay up.
  local raylet="" pid
  for pid in $(ssh_node_processes "$idx"); do
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == raylet ]] && raylet=$pid
  done
  [[ -n $raylet ]]
  local -a tree
  read -r -a tree <<<"$(process_tree "$raylet")"
  kill -KILL "${tree[@]}" 2>/dev/null || true  # one may have ended meanwhile
  local rc=0
  t0=$SECONDS
  wait "$waiter" || rc=$?
  echo "# FAILED seen $((SECONDS - t0)) s after the kill" >&3
  cat "$BATS_TEST_TMPDIR/wait.err" >&2
  ((rc == 1))
  [[ $(jq -r .status "$logs/../result.json") == FAILED ]]
  cat "$logs/driver.log.missing" 2>/dev/null || true
  [[ ! -e $logs/driver.log.missing ]]
  run grep -c "^MVP_PRECHECK_MARKER=standin$" "$logs/driver.log"
  assert_output 1
  # The node is up: its log is kept whole, as Ray's own copy on the node holds it.
  ssh_to "$idx" "cat /tmp/ray/session_latest/logs/job-driver-$id.log" >"$BATS_TEST_TMPDIR/ray-copy.log"
  diff "$BATS_TEST_TMPDIR/ray-copy.log" "$logs/driver.log"
  # The job's Ray worker logs on the node are kept up to the last sync (its
  # keeper, a Ray actor, died with the node's Ray): each a prefix of Ray's file.
  local copy n=0 session
  session=$(find "$SSH_TEST_DIR/nodes/ssh-node-$idx/tmp-ray" -maxdepth 1 -name 'session_2*' | sort | tail -n 1)
  for copy in "$logs/nodes/$ip"/worker-*; do
    cmp -n "$(stat -c %s "$copy")" "$copy" "$session/logs/$(basename "$copy")"
    n=$((n + 1))
  done
  ((n > 0))
  grep -E "^cut off (at step [1-9][0-9]* of [1-9][0-9]*|before its first step) \(ended FAILED; " "$logs/../debug/cut_off.txt"
  run --separate-stderr ssh_rb 51_logs "$id"
  assert_success
  assert_output --partial "MVP_PRECHECK_MARKER=standin"
  run --separate-stderr ssh_rb 51_logs "ssh-never-$RANDOM"
  assert_failure 1
  [[ $stderr == *"no such job: Ray does not know it and there is no job directory"* ]]
  t0=$SECONDS
  run ssh_rb 21_start_workers
  assert_success
  echo "# 21 took $((SECONDS - t0)) s" >&3
  run ssh_nodes_json
  jq -e 'length == 4' <<<"$output"
}

# node_ray_log_has INDEX ID PATTERN: Ray's own copy of job ID's driver log on
# node INDEX has a line matching PATTERN (grep -E).
node_ray_log_has() {
  ssh_to "$1" "cat /tmp/ray/session_latest/logs/job-driver-$2.log" 2>/dev/null | grep -qE "$3"
}

@test "every process of the driver's worker but sshd SIGKILLed mid-job (its keepers too): FAILED; the job directory's driver.live.log holds the driver's first lines (the first copies come 1, 2, 5, 10 s in, not after MVP_LOG_SYNC_SECONDS=30); driver.log is read over ssh from the node's Ray log directory, whole" {
  local id=ssh-nodekill-$RANDOM ip idx spec=$BATS_TEST_TMPDIR/ppo.yaml
  { sed -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" "$MVP_REPO/templates/jobspecs/ppo.yaml"; echo "submission_id: $id"; } >"$spec"
  MVP_LOG_SYNC_SECONDS=30 ssh_rb 43_submit_jobspec "$spec" --wait --override +mvp_standin.step_seconds=1 \
    --override trainer.total_training_steps=100 >"$BATS_TEST_TMPDIR/wait.out" 2>"$BATS_TEST_TMPDIR/wait.err" &
  local waiter=$!
  ip=$(driver_ip_when_running "$id" ssh_dashboard)
  idx=$((${ip##*.} - 40))
  ((idx >= 1 && idx <= 3))
  local logs=$MVP_HOST_SHARED_DIR/jobs/$id/logs
  # The keeper's first copies hold the driver's first lines; Ray's own copy
  # on the node gets to step 2 (more than the kept copy can hold: its next
  # copy is 30 s away), then the node loses everything but its sshd.
  mvp_wait_until 60 "the precheck line in the kept driver log" grep -qsx "MVP_PRECHECK_MARKER=standin" "$logs/driver.live.log"
  mvp_wait_until 90 "step 2 in Ray's driver log on the node" node_ray_log_has "$idx" "$id" "step:2 - "
  touch "$BATS_TEST_TMPDIR/restart-workers"
  local init pid comm
  local -a doomed=()
  init=$(ssh_node_init_pid "$idx")
  for pid in $(ssh_node_processes "$idx"); do
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
    # The node's init and its idle sleep stay (the platform's container), and sshd.
    [[ $pid == "$init" || $comm == sshd* ]] && continue
    [[ $comm == sleep && $(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) == "$init" ]] && continue
    doomed+=("$pid")
  done
  ((${#doomed[@]} > 3))
  kill -KILL "${doomed[@]}" 2>/dev/null || true  # one may have ended meanwhile
  local rc=0
  wait "$waiter" || rc=$?
  cat "$BATS_TEST_TMPDIR/wait.err" >&2
  ((rc == 1))
  [[ $(jq -r .status "$logs/../result.json") == FAILED ]]
  # Its keeper died with it: the copy never saw the driver's end.
  [[ ! -e $logs/.driver.live.done ]]
  grep -qx "MVP_PRECHECK_MARKER=standin" "$logs/driver.live.log"
  # Ray's own copy, read over ssh from the node (up, its Ray gone), whole.
  cat "$logs/driver.log.missing" 2>/dev/null || true
  [[ ! -e $logs/driver.log.missing ]]
  grep -q "job $id: its driver log read over ssh from its node's Ray log directory" "$BATS_TEST_TMPDIR/wait.err"
  ssh_to "$idx" "cat /tmp/ray/session_latest/logs/job-driver-$id.log" >"$BATS_TEST_TMPDIR/ray-copy.log"
  diff "$BATS_TEST_TMPDIR/ray-copy.log" "$logs/driver.log"
  grep -q "step:2 - " "$logs/driver.log"
  run --separate-stderr ssh_rb 51_logs "$id"
  assert_success
  assert_output --partial "step:2 - "
  run ssh_rb 21_start_workers
  assert_success
  run ssh_nodes_json
  jq -e 'length == 4' <<<"$output"
}

@test "a worker whose sshd is down: 00 names it (with every other problem at once), 21 names it" {
  ssh_node_kill_sshd 3
  local ip
  ip=$(ssh_node_ip 3)
  MVP_SSH_WORKERS="$MVP_SSH_WORKERS $(ssh_node_ip 4):$SSH_TEST_PORT" run ssh_rb 00_prereq_check
  assert_failure
  assert_line "PROBLEM: mvp11-ray-worker-2 ($ip:$SSH_TEST_PORT): connection refused; is sshd running on $ip:$SSH_TEST_PORT?"
  assert_output --partial "PROBLEM: mvp11-ray-worker-3 ($(ssh_node_ip 4):$SSH_TEST_PORT): /private is not the shared storage"
  assert_line "ERROR: 2 problem(s) found; fix them and run this again"
  run ssh_rb 21_start_workers
  assert_failure
  assert_output --partial "mvp11-ray-worker-2 ($ip:$SSH_TEST_PORT): connection refused; is sshd running on $ip:$SSH_TEST_PORT?"
  assert_output --partial "ERROR: node mvp11-ray-worker-2 is down and the ssh runtime could not bring it back"
}
