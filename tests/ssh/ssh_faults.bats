#!/usr/bin/env bats
# The ssh runtime's faults on a real four-node cluster (a head and three
# workers, each a namespace with its own address and a real OpenSSH server)
# plus a spare node whose /private is its own, not the shared storage: a
# worker whose sshd is down, a changed host key and a worker without the
# shared mount are each named in one line, and 00 reports them all at once.
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
