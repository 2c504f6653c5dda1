#!/usr/bin/env bats
# Two local Ray clusters, alpha and beta, one worker each, on ONE shared root
# (as teams point several clusters at one NFS share): each cluster's head
# restart, admission and status act on its own jobs only, and a head started
# under a name another running cluster holds is refused.

setup_file() {
  load ../test_helper/common
  use_cluster beta
  mvp_cluster_up
  use_cluster alpha
  mvp_cluster_up
  mvp_prepare_inputs standin || { cat "$MVP_TEST_LOG" >&3; return 1; }
  sed -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_FILE_TMPDIR/ppo.yaml"
}

teardown_file() {
  load ../test_helper/common
  local name
  for name in alpha beta; do (use_cluster "$name" && mvp_cluster_down); done
}

setup() {
  load ../test_helper/common
}

# use_cluster alpha|beta: the settings of that cluster (its own addresses,
# ports and state; beta five test slots above alpha), the shared root alpha's.
use_cluster() {
  local slot=${MVP_TEST_SLOT:-0}
  [[ $1 == beta ]] && slot=$(((slot + 5) % 10))
  MVP_TEST_SLOT=$slot mvp_isolate "$BATS_FILE_TMPDIR/$1"
  export SHARED_ROOT="$BATS_FILE_TMPDIR/shared root" MVP_WORKERS=1 MVP_CLUSTER_NAME=$1
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/$1.log
  mkdir -p "$SHARED_ROOT"
}

# submit_long: a job of about a minute on the cluster's one worker, not
# waited for; prints its submission id.
submit_long() {
  "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_FILE_TMPDIR/ppo.yaml" --override +mvp_standin.step_seconds=2 \
    2>>"$MVP_TEST_LOG" | tail -n 1
}

ray_status_of() {
  curl -fsS "$MVP_DASHBOARD/api/jobs/$1" | jq -r .status
}

is_running() { [[ $(ray_status_of "$1" 2>/dev/null) == RUNNING ]]; }
running_within() { mvp_wait_until 60 "job $1 RUNNING" is_running "$1"; }

@test "two clusters, one shared root: alpha's head killed and restarted archives alpha's running job LOST and leaves beta's running job to beta, which ends SUCCEEDED" {
  local a b
  use_cluster beta
  b=$(submit_long)
  running_within "$b"
  use_cluster alpha
  a=$(submit_long)
  running_within "$a"
  echo "$a $b" >"$BATS_FILE_TMPDIR/first-jobs"
  [[ $(job_json "$a" config/job_spec.json .resolved.cluster) == alpha ]]
  [[ $(job_json "$b" config/job_spec.json .resolved.cluster) == beta ]]
  kill -KILL "$(<"$MVP_STATE_DIR/nodes/mvp11-ray-head/init.pid")"
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run "$MVP_REPO/scripts/20_start_head.sh"
  assert_success
  assert_output --partial "1 job(s) of a cluster that went away archived as LOST: $a"
  assert_output --partial "1 unfinished job(s) of other clusters on this shared root left to them: $b (beta)"
  [[ $(job_json "$a" result.json .status) == LOST && $(job_json "$a" result.json .cluster) == alpha ]]
  # beta's job: no record written by alpha, still running on beta, and it ends well.
  [[ ! -e $SHARED_ROOT/jobs/$b/result.json ]]
  use_cluster beta
  [[ $(ray_status_of "$b") == RUNNING ]]
  run "$MVP_REPO/scripts/51_logs.sh" "$b" --follow
  assert_success
  run "$MVP_REPO/scripts/50_status.sh" --json
  [[ $(jq -r --arg b "$b" '.jobs[] | select(.submission_id == $b) | .status' <<<"$output") == SUCCEEDED ]]
  [[ $(job_json "$b" result.json .status) == SUCCEEDED && $(job_json "$b" result.json .cluster) == beta ]]
  use_cluster alpha
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
}

@test "two clusters, one shared root: status names the other cluster's jobs, and each admits into its own admission directory" {
  # The first test's jobs: alpha's archived LOST by alpha's restart, beta's SUCCEEDED on beta.
  local a b
  read -r a b <"$BATS_FILE_TMPDIR/first-jobs"
  use_cluster alpha
  run "$MVP_REPO/scripts/50_status.sh"
  assert_success
  assert_line --regexp "^  $b +SUCCEEDED .*  \(cluster beta\)$"
  assert_line --regexp "^  $a +LOST +ppo +[^(]*$"
  assert_line --regexp "^cluster  UP  shape OK  dashboard .*  name alpha$"
  [[ -f $SHARED_ROOT/admission/alpha/lock && -f $SHARED_ROOT/admission/beta/lock ]]
  run jq -r .name "$SHARED_ROOT/clusters/alpha.json" "$SHARED_ROOT/clusters/beta.json"
  assert_output $'alpha\nbeta'
}

@test "two clusters, one shared root: a head started under alpha's name while alpha runs is refused in one line and reconciles none of alpha's jobs" {
  local a alpha_dashboard
  use_cluster alpha
  alpha_dashboard=$MVP_DASHBOARD
  a=$(submit_long)
  running_within "$a"
  use_cluster beta
  "$MVP_REPO/scripts/02_down.sh" >/dev/null 2>&1
  export MVP_CLUSTER_NAME=alpha
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run --separate-stderr "$MVP_REPO/scripts/20_start_head.sh"
  assert_failure 1
  run grep -c '^ERROR' <<<"$stderr"
  assert_output 1
  [[ $stderr == *"ERROR: MVP_CLUSTER_NAME=alpha belongs to another running cluster on this shared root (dashboard $alpha_dashboard, "* ]]
  [[ ! -e $SHARED_ROOT/jobs/$a/result.json ]]
  "$MVP_REPO/scripts/02_down.sh" >/dev/null 2>&1
  use_cluster alpha
  [[ $(ray_status_of "$a") == RUNNING ]]
  [[ $(jq -r .dashboard "$SHARED_ROOT/clusters/alpha.json") == "$alpha_dashboard" ]]
  "$MVP_REPO/scripts/52_stop.sh" "$a" >/dev/null 2>&1
}
