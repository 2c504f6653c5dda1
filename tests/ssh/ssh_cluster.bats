#!/usr/bin/env bats
# The ssh runtime on a real three-node cluster: each node a PID + mount + UTS
# namespace with its own address and a real OpenSSH server, the shared
# storage bind-mounted at /private. The runbook reaches the nodes only over
# ssh (its PATH has no nsenter, unshare or docker; tripwires stand in their
# place). Token auth is on, as it is by default on this runtime. Jobs run the
# CPU STAND-IN for verl. One cluster for the file; teardown_file stops every
# node by PID even when a test fails.

setup_file() {
  load ../test_helper/common
  load ../test_helper/ssh_nodes
  ssh_nodes_isolate "$BATS_FILE_TMPDIR"
  ssh_inventory 2
  export SSH_RB_PATH MVP_TEST_LOG=$BATS_FILE_TMPDIR/runbook.log
  SSH_RB_PATH=$(ssh_restricted_path "$BATS_FILE_TMPDIR/bin")
  local i
  for i in 0 1 2; do ssh_node_start "$i" || { ssh_nodes_stop_all; return 1; }; done
  local took
  took=$(ssh_bringup "$MVP_TEST_LOG") || { cat "$MVP_TEST_LOG" >&3; return 1; }
  echo "# ssh tier: 00 -> 21 for a head and 2 workers took ${took}s" >&3
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

# A test that planted gaps in a node's image removes them, pass or fail.
teardown() {
  if [[ -f $BATS_TEST_TMPDIR/planted ]]; then
    local -a mounts
    mapfile -t mounts <"$BATS_TEST_TMPDIR/planted"
    unplant_image_gaps "${mounts[@]}"
  fi
}

@test "ssh: a session lands in its node's own PID namespace and hostname, with the shared storage at /private" {
  local i init
  echo "written on the host" >"$MVP_HOST_SHARED_DIR/seen-by-nodes"
  for i in 0 1 2; do
    init=$(ssh_node_init_pid "$i")
    run ssh_to "$i" 'readlink /proc/self/ns/pid; hostname; cat /private/seen-by-nodes'
    assert_success
    assert_line --index 0 "$(readlink "/proc/$init/ns/pid")"
    refute_line --index 0 "$(readlink /proc/self/ns/pid)"
    assert_line --index 1 "ssh-node-$i"
    assert_line --index 2 "written on the host"
  done
  rm "$MVP_HOST_SHARED_DIR/seen-by-nodes"
}

@test "mvp::rt::exec: arguments with spaces, quotes, \$, backticks, globs and newlines reach the node intact" {
  local -a words=("two words" "it's" 'say "hi"' '$HOME' '`id`' '$(id)' 'back\slash' $'new\nline' '*' '' ';' '&&' '--flag')
  run env PATH="$SSH_RB_PATH" MVP_QUIET_CONFIG=1 bash -c 'source "$MVP_REPO/scripts/lib/common.sh"; mvp::config::init
    mvp::rt::exec mvp11-ray-worker-1 printf "<%s>\n" "$@"' _ "${words[@]}"
  assert_success
  local expected
  expected=$(printf '<%s>\n' "${words[@]}")
  [[ $output == "$expected" ]] || { diff <(echo "$output") <(echo "$expected"); false; }
}

@test "bring-up over ssh only: head 0 CPU / 0 GPU, two workers with worker_node 100 and 4 GPUs; no nsenter, unshare or docker called" {
  run ssh_nodes_json
  assert_success
  local nodes=$output
  jq -e 'length == 3' <<<"$nodes"
  jq -e --arg ip "$(ssh_node_ip 0)" '[.[] | select(.is_head_node)] | length == 1 and .[0].node_ip == $ip
        and ((.[0].resources_total.CPU // 0) == 0) and ((.[0].resources_total.GPU // 0) == 0)' <<<"$nodes"
  jq -e --arg a "$(ssh_node_ip 1)" --arg b "$(ssh_node_ip 2)" \
    '[.[] | select(.is_head_node | not) | .node_ip] | sort == [$a, $b]' <<<"$nodes"
  jq -e 'all(.[] | select(.is_head_node | not); .resources_total.GPU == 4 and .resources_total.worker_node == 100)' <<<"$nodes"
  [[ ! -e $BATS_FILE_TMPDIR/bin/tripwire.log ]] || { cat "$BATS_FILE_TMPDIR/bin/tripwire.log"; false; }
  run grep -c 'SKIP: creating nodes .*the platform owns the containers' "$MVP_TEST_LOG"
  assert_output 1
}

@test "00 on ssh warns that NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME are unset and names the nodes' interfaces" {
  local iface
  iface=$(ssh_to 1 'ls /sys/class/net' | grep -v '^lo$' | head -n 1)
  [[ -n $iface ]]
  run grep 'NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are not set' "$MVP_TEST_LOG"
  assert_success
  assert_output --regexp "the nodes have: .*\\b$iface\\b"
  NCCL_SOCKET_IFNAME=$iface run ssh_rb 00_prereq_check
  assert_success
  refute_output --partial "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are not set"
}

# Undoes plant_image_gaps (a failed test included): the node's own mounts.
unplant_image_gaps() {
  local init m
  init=$(ssh_node_init_pid 2) || return 0
  for m in "$@"; do nsenter -t "$init" -m umount "$m" 2>/dev/null || true; done
}

@test "00 on ssh: a node whose image lacks pyarrow and has another Ray is one PROBLEM line naming both and the pip command" {
  local site init dist fake=$BATS_TEST_TMPDIR/ray-dist-info empty=$BATS_TEST_TMPDIR/empty
  site=$(realpath "$MVP_REPO/.venv/lib/python3.11/site-packages")
  dist=$site/ray-2.60.0.dist-info
  [[ -f $dist/METADATA && -f $site/pyarrow/__init__.py ]]
  init=$(ssh_node_init_pid 2)
  mkdir "$empty"
  cp -r "$dist" "$fake"
  sed -i 's/^Version: 2.60.0$/Version: 2.59.0/' "$fake/METADATA"
  # Worker 1's image (node 2's own mount namespace) loses pyarrow and gets Ray 2.59.0.
  printf '%s\n' "$site/pyarrow" "$dist" >"$BATS_TEST_TMPDIR/planted"
  nsenter -t "$init" -m mount --bind "$empty" "$site/pyarrow"
  nsenter -t "$init" -m mount --bind "$fake" "$dist"
  run ssh_rb 00_prereq_check
  unplant_image_gaps "$site/pyarrow" "$dist"
  assert_failure
  local ip
  ip=$(ssh_node_ip 2)
  assert_line "PROBLEM: mvp11-ray-worker-1 ($ip:$SSH_TEST_PORT): the node image lacks ray 2.60.0 (it has 2.59.0), pyarrow; install in the image: pip install 'ray[default]==2.60.0' 'pyarrow==26.0.1' (or set MVP_SSH_PATH to an environment that has them)"
  assert_line "ERROR: 1 problem(s) found; fix them and run this again"
  # The other nodes are whole; once the mounts are gone, 00 passes again.
  run ssh_rb 00_prereq_check
  assert_success
}

@test "token auth: the dashboard refuses a request without the token (401) and a wrong one (403); the token file is 0600 in a 0700 directory" {
  run curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$MVP_DASHBOARD/api/jobs/"
  assert_output 401
  run bash -c 'printf "Authorization: Bearer %s\n" "not-the-token" | curl -s -o /dev/null -w "%{http_code}" --max-time 10 -H @- "$MVP_DASHBOARD/api/jobs/"'
  assert_output 403
  run ssh_dashboard /api/jobs/
  assert_success
  run stat -c '%a %U' "$MVP_HOST_SHARED_DIR/secrets/ray_auth_token" "$MVP_HOST_SHARED_DIR/secrets"
  assert_line --index 0 "600 root"
  assert_line --index 1 "700 root"
  # Every Ray process of every node runs in token mode and reads the file.
  local i pid found=0
  for i in 0 1 2; do
    for pid in $(ssh_node_processes "$i"); do
      [[ $(cat "/proc/$pid/comm" 2>/dev/null) == raylet ]] || continue
      tr '\0' '\n' <"/proc/$pid/environ" | grep -qx RAY_AUTH_MODE=token
      tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "RAY_AUTH_TOKEN_PATH=/private/secrets/ray_auth_token"
      found=$((found + 1))
    done
  done
  ((found == 3))
}

@test "50_status over ssh (HTTP with the token from this host): UP, shape OK, the three nodes" {
  run ssh_rb 50_status --json
  assert_success
  jq -e '.cluster.up and .cluster.ok and (.cluster.workers | length == 2)' <<<"$output"
}

@test "40 (ray job submit on the head, token from its file): driver on a worker, job dir under /private/jobs, NCCL_* of the config in the runtime_env" {
  ssh_rb 30_prepare_data_and_model >/dev/null 2>>"$MVP_TEST_LOG"
  CODE_ID=standin ssh_rb 31_snapshot_verl_code >/dev/null 2>>"$MVP_TEST_LOG"
  NCCL_IB_DISABLE=1 GLOO_SOCKET_IFNAME=lo run --separate-stderr ssh_rb 40_submit_ppo_epoch1 --wait
  assert_success
  local id
  id=$(last_line)
  [[ $id == ppo-* ]]
  local dir=$MVP_HOST_SHARED_DIR/jobs/$id
  jq -e '.status == "SUCCEEDED" and .driver_on_head == false' "$dir/result.json"
  jq -e --arg w1 "$(ssh_node_ip 1)" --arg w2 "$(ssh_node_ip 2)" '.driver_node_ip == $w1 or .driver_node_ip == $w2' "$dir/result.json"
  jq -e --arg id "$id" '.resolved.job_dir == "/private/jobs/\($id)"' "$dir/config/job_spec.json"
  jq -e '.env_vars.NCCL_IB_DISABLE == "1" and .env_vars.GLOO_SOCKET_IFNAME == "lo"' "$dir/config/runtime_env.json"
  jq -se 'map(select(.event == "submitted")) | last | .host == "ssh-node-0" and .via == "cli"' "$dir/logs/submit.log"
  [[ -s $dir/logs/driver.log ]]
}

@test "44 (the SDK on the head, token from its file) submits a job that succeeds on a worker; its secret reaches driver and actor through the GCS store, with the token" {
  local spec=$BATS_TEST_TMPDIR/ppo-short.yaml secret=ssh-secret-value-42
  sed -e 's/^  data.train_batch_size: 256$/  data.train_batch_size: 512/' -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" \
    -e "s/^env_vars: {}/env_vars: {MY_API_TOKEN: $secret}/" "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$spec"
  run --separate-stderr ssh_rb 44_submit_sdk "$MVP_REPO/templates/configs/dev.yaml" "$spec" --wait \
    --override +mvp_standin.expect_env=MY_API_TOKEN
  assert_success
  local id
  id=$(last_line)
  run expect_env_lines "$MVP_HOST_SHARED_DIR/jobs/$id/logs/driver.log" MY_API_TOKEN
  assert_output 2
  run grep -r -l -F "$secret" "$MVP_HOST_SHARED_DIR"
  assert_output ""
  jq -e '.status == "SUCCEEDED" and .driver_on_head == false' "$MVP_HOST_SHARED_DIR/jobs/$id/result.json"
  jq -se 'map(select(.event == "submitted")) | last | .via == "sdk"' "$MVP_HOST_SHARED_DIR/jobs/$id/logs/submit.log"
}

@test "a nightly over ssh passes (--only sft): exit 0, its report under /private/regressions" {
  run --separate-stderr ssh_rb 60_nightly_regression --only sft
  assert_success
  [[ $(last_line) == "NIGHTLY PASS "*": 1/1 jobs passed every check" ]]
  local run_id report
  run_id=$(sed -n '1s/: log .*//p' <<<"$output")
  report=$MVP_HOST_SHARED_DIR/regressions/$run_id/report.json
  jq -e '.passed and ([.jobs[].checks[] | select(.passed == false)] | length == 0)' "$report"
  jq -e '[.jobs[].checks[].name] | index("driver_on_worker") and index("submitted_from_head")' "$report"
}

# The raylets among these host PIDs, sorted.
raylets() {
  local p
  for p; do
    if [[ $(cat "/proc/$p/comm" 2>/dev/null) == raylet ]]; then echo "$p"; fi
  done | sort
}

@test "re-running 00 -> 21 over ssh: only SKIP and info lines, no Ray process started, the same node ids" {
  local before_ids log=$BATS_TEST_TMPDIR/rerun.log s
  before_ids=$(ssh_nodes_json | jq -c 'map(.node_id) | sort')
  local before_pids
  before_pids=$(for i in 0 1 2; do ssh_node_processes "$i"; done)
  for s in "${MVP_BRINGUP_STEPS[@]}"; do ssh_rb "$s" >/dev/null 2>>"$log"; done
  run grep -v -E '^[0-9T:-]+Z (SKIP: |       | !     NCCL_SOCKET_IFNAME and GLOO)' "$log"
  assert_output ""
  [[ $(ssh_nodes_json | jq -c 'map(.node_id) | sort') == "$before_ids" ]]
  # Only the sessions' own short-lived processes may differ: no raylet is new.
  # shellcheck disable=SC2046,SC2086  # PIDs, one per word
  [[ $(raylets $before_pids) == "$(raylets $(for i in 0 1 2; do ssh_node_processes "$i"; done))" ]]
}

@test "the Ray token is in no file but its own (shared storage, Ray's logs in every node, runbook logs) and in no process's argv" {
  local token
  token=$(<"$MVP_HOST_SHARED_DIR/secrets/ray_auth_token")
  (( ${#token} == 64 ))
  run grep -rlF -- "$token" "$BATS_RUN_TMPDIR"
  assert_output "$MVP_HOST_SHARED_DIR/secrets/ray_auth_token"
  local i pid
  for i in 0 1 2; do
    for pid in $(ssh_node_processes "$i"); do
      ! grep -qF -- "$token" "/proc/$pid/cmdline" 2>/dev/null
    done
  done
}

@test "02 over ssh stops Ray in every node and leaves the nodes (their sshd) running; a second run is a SKIP" {
  run ssh_rb 02_down
  assert_success
  local i
  for i in 0 1 2; do
    run ssh_to "$i" 'pgrep -x raylet || pgrep -x gcs_server || echo none'
    assert_output none
    [[ -n $(ssh_node_init_pid "$i") ]]
  done
  run curl -s --max-time 2 "$MVP_DASHBOARD/api/version"
  assert_failure
  run ssh_rb 02_down
  assert_success
  assert_output --partial "SKIP: Ray on mvp11-ray-head (not running)"
  assert_output --partial "SKIP: Ray on mvp11-ray-worker-1 (not running)"
}
