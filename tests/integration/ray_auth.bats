#!/usr/bin/env bats
# Ray token auth on the local runtime (MVP_RAY_AUTH=token; the ssh tier runs
# with it by default): a real cluster whose every node starts in token mode,
# a dashboard that refuses requests without the token, and the runbook's CLI
# path, SDK-free HTTP calls and job drivers working with it. One small
# cluster (a head and one worker); teardown_file stops it even on failure.

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_RAY_AUTH=token MVP_WORKERS=1 MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  mvp_cluster_up
  mvp_prepare_inputs standin || { cat "$MVP_TEST_LOG" >&3; return 1; }
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
}

@test "local with MVP_RAY_AUTH=token: the dashboard answers 401 without the token, 403 with a wrong one, 200 with it" {
  run curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$MVP_DASHBOARD/api/jobs/"
  assert_output 401
  run bash -c 'printf "Authorization: Bearer wrong\n" | curl -s -o /dev/null -w "%{http_code}" --max-time 10 -H @- "$MVP_DASHBOARD/api/jobs/"'
  assert_output 403
  run bash -c 'printf "Authorization: Bearer %s\n" "$(<"$SHARED_ROOT/secrets/ray_auth_token")" |
    curl -s -o /dev/null -w "%{http_code}" --max-time 10 -H @- "$MVP_DASHBOARD/api/jobs/"'
  assert_output 200
  run stat -c '%a' "$SHARED_ROOT/secrets/ray_auth_token"
  assert_output 600
}

@test "local with MVP_RAY_AUTH=token: 50_status and a PPO job through ray job submit work; the driver runs on the worker" {
  run "$MVP_REPO/scripts/50_status.sh"
  assert_success
  assert_output --partial "cluster  UP  shape OK"
  run --separate-stderr "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --wait
  assert_success
  jq -e '.status == "SUCCEEDED" and .driver_on_head == false' "$SHARED_ROOT/jobs/$(last_line)/result.json"
}

@test "local with MVP_RAY_AUTH=token: the token is in no file but its own, and in no argv of the nodes' processes" {
  local token pid
  token=$(<"$SHARED_ROOT/secrets/ray_auth_token")
  ((${#token} == 64))
  # The whole run's temporary directory, the other test files' too: those
  # run beside this one (tests/run, --jobs 2), their files come and go
  # meanwhile, and grep passes over one that vanished under it (-s).
  run grep -rlsF -- "$token" "$BATS_RUN_TMPDIR"
  assert_output "$SHARED_ROOT/secrets/ray_auth_token"
  for pid in $(mvp_node_processes); do
    ! grep -qF -- "$token" "/proc/$pid/cmdline" 2>/dev/null
  done
}
