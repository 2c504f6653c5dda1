#!/usr/bin/env bats
# Submitting PPO, GRPO and SFT from the head of a real local cluster, with
# the CPU stand-in for verl as the trainer (it checks verl's contract and
# trains nothing): placement, job directories, evidence, failure paths.

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  mvp_cluster_up
  mvp_prepare_inputs standin || { cat "$MVP_TEST_LOG" >&3; return 1; }
  # A JobSpec of the tests' own: the PPO template with a short run.
  sed -e 's/^  data.train_batch_size: 256$/  data.train_batch_size: 512/' \
    -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" \
    "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_FILE_TMPDIR/ppo-short.yaml"
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
  SPEC=$BATS_FILE_TMPDIR/ppo-short.yaml
}

head_node_id() {
  curl -fsS "$MVP_DASHBOARD/api/v0/nodes?detail=true" |
    jq -r '.data.result.result[] | select(.is_head_node and .state == "ALIVE") | .node_id'
}

# A digest of every file (path and content) under a directory.
tree_digest() {
  (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
}

assert_job_layout() {
  local dir=$SHARED_ROOT/jobs/$1
  local f
  for f in config/job_spec.json config/runtime_env.json config/submit_cmd.txt logs/driver.log logs/submit.log \
    result.json checkpoints/latest_checkpointed_iteration.txt; do
    [[ -s $dir/$f ]] || { echo "missing $f"; return 1; }
  done
  [[ -d $dir/checkpoints/global_step_10/actor ]] || { echo "no global_step_10/actor"; return 1; }
  local kinds
  kinds=$(find "$dir/debug" -name '*.json' | sed -E 's/.*_(ray_status|job_list|nodes|actors)\.json$/\1/;t;d' | sort -u | wc -l)
  ((kinds >= 2)) || { echo "debug has $kinds kinds of Ray state"; return 1; }
}

@test "40_submit_ppo_epoch1 twice: two job directories, both SUCCEEDED, nothing shared or overwritten" {
  run --separate-stderr "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --wait
  assert_success
  local first
  first=$(last_line)
  local digest
  digest=$(tree_digest "$SHARED_ROOT/jobs/$first")
  run --separate-stderr "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --wait
  assert_success
  local second
  second=$(last_line)
  [[ $first != "$second" ]]
  [[ $(job_json "$first" result.json .status) == SUCCEEDED && $(job_json "$second" result.json .status) == SUCCEEDED ]]
  [[ $(tree_digest "$SHARED_ROOT/jobs/$first") == "$digest" ]]
  run job_json "$second" config/job_spec.json '.resolved.trainer_overrides["trainer.default_local_dir"]'
  assert_output "$SHARED_ROOT/jobs/$second/checkpoints"
  echo "$first" >"$BATS_FILE_TMPDIR/ppo-id"
}

@test "driver placement, read from Ray: a worker's IP, not the head's; not the head's node id" {
  local id
  id=$(<"$BATS_FILE_TMPDIR/ppo-id")
  run curl -fsS "$MVP_DASHBOARD/api/jobs/$id"
  assert_success
  local job=$output head
  head=$(head_node_id)
  jq -e --arg net "$MVP_TEST_NET" '.driver_info.node_ip_address == "\($net).3" or .driver_info.node_ip_address == "\($net).4"' <<<"$job"
  jq -e --arg head "$head" --arg ip "$MVP_HEAD_IP" '.driver_node_id != $head and .driver_info.node_ip_address != $ip' <<<"$job"
  [[ $(job_json "$id" result.json .driver_on_head) == false ]]
  [[ $(job_json "$id" result.json .driver_node_id) == "$(jq -r .driver_node_id <<<"$job")" ]]
}

@test "job directory layout: config, logs, checkpoints/global_step_10/actor, debug with Ray state, result.json" {
  local id
  id=$(<"$BATS_FILE_TMPDIR/ppo-id")
  run assert_job_layout "$id"
  assert_success
  [[ $(cat "$SHARED_ROOT/jobs/$id/checkpoints/latest_checkpointed_iteration.txt") == 29 ]]
  [[ -d $SHARED_ROOT/jobs/$id/checkpoints/global_step_10/critic ]]
  run ls "$SHARED_ROOT/jobs/$id/checkpoints"
  assert_output $'global_step_10\nglobal_step_20\nglobal_step_29\nlatest_checkpointed_iteration.txt'
  run job_json "$id" result.json 'has("status") and has("driver_node_ip") and has("driver_node_id") and has("driver_on_head")'
  assert_output true
  run grep -c '^MVP_PRECHECK_MARKER=standin$' "$SHARED_ROOT/jobs/$id/logs/driver.log"
  assert_output 1
  run jq -s '[.[] | select(.event == "submitted" and .host == "mvp11-ray-head")] | length' "$SHARED_ROOT/jobs/$id/logs/submit.log"
  assert_output 1
}

@test "41_submit_grpo_epoch1 and 42_submit_sft_minimal reach SUCCEEDED with the same layout" {
  run --separate-stderr "$MVP_REPO/scripts/41_submit_grpo_epoch1.sh" --wait
  assert_success
  local grpo
  grpo=$(last_line)
  run assert_job_layout "$grpo"
  assert_success
  [[ ! -e $SHARED_ROOT/jobs/$grpo/checkpoints/global_step_10/critic ]]
  run job_json "$grpo" config/job_spec.json '.resolved.trainer_overrides["algorithm.adv_estimator"] == "grpo"'
  assert_output true
  run --separate-stderr "$MVP_REPO/scripts/42_submit_sft_minimal.sh" --wait
  assert_success
  local sft
  sft=$(last_line)
  run assert_job_layout "$sft"
  assert_success
  [[ $(job_json "$sft" result.json .status) == SUCCEEDED ]]
  run job_json "$sft" config/runtime_env.json .env_vars.RAY_ADDRESS
  assert_output auto
  run grep -c '^step:' "$SHARED_ROOT/jobs/$sft/logs/driver.log"
  assert_output 20
}

@test "43 (ray job submit) and 44 (JobSubmissionClient) write the same files for the same JobSpec, ids aside" {
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --wait
  assert_success
  local cli
  cli=$(last_line)
  run --separate-stderr "$MVP_REPO/scripts/44_submit_sdk.sh" "$MVP_REPO/templates/configs/dev.yaml" "$SPEC" --wait
  assert_success
  local sdk
  sdk=$(last_line)
  [[ $(jq -r 'select(.event == "submitted") | .via' "$SHARED_ROOT/jobs/$cli/logs/submit.log") == cli ]]
  [[ $(jq -r 'select(.event == "submitted") | .via' "$SHARED_ROOT/jobs/$sdk/logs/submit.log") == sdk ]]
  local f
  for f in config/job_spec.json config/runtime_env.json config/submit_cmd.txt checkpoints/latest_checkpointed_iteration.txt; do
    diff <(sed "s/$cli/ID/g" "$SHARED_ROOT/jobs/$cli/$f") <(sed "s/$sdk/ID/g" "$SHARED_ROOT/jobs/$sdk/$f")
  done
  diff <(cd "$SHARED_ROOT/jobs/$cli" && find checkpoints config | sort) <(cd "$SHARED_ROOT/jobs/$sdk" && find checkpoints config | sort)
  [[ $(job_json "$cli" result.json .status) == SUCCEEDED && $(job_json "$sdk" result.json .status) == SUCCEEDED ]]
}

@test "re-submitting an existing id fails and leaves its directory byte-identical" {
  sed 's/^submission_id: .*/submission_id: fixed-id-1/' "$SPEC" >"$BATS_TEST_TMPDIR/fixed.yaml"
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/fixed.yaml" --wait
  assert_success
  assert_equal "$(last_line)" fixed-id-1
  local digest
  digest=$(tree_digest "$SHARED_ROOT/jobs/fixed-id-1")
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/fixed.yaml"
  assert_failure
  assert_output --partial "ERROR: submission id fixed-id-1 already exists in Ray; ids are never reused"
  [[ $(tree_digest "$SHARED_ROOT/jobs/fixed-id-1") == "$digest" ]]
  # A directory Ray does not know (say, from before a cluster restart) is just as final.
  mkdir -p "$SHARED_ROOT/jobs/orphan-id/logs"
  echo keep >"$SHARED_ROOT/jobs/orphan-id/logs/old.log"
  sed 's/^submission_id: .*/submission_id: orphan-id/' "$SPEC" >"$BATS_TEST_TMPDIR/orphan.yaml"
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/orphan.yaml"
  assert_failure
  assert_output --partial "ERROR: job directory $SHARED_ROOT/jobs/orphan-id already exists"
  run find "$SHARED_ROOT/jobs/orphan-id" -type f
  assert_output "$SHARED_ROOT/jobs/orphan-id/logs/old.log"
  run curl -s -o /dev/null -w '%{http_code}' "$MVP_DASHBOARD/api/jobs/orphan-id"
  assert_output 404
}

@test "a secret env var reaches the job but no file under the job directory, no log and no output" {
  local secret=s3cr3t-value-for-the-test
  sed "s/^env_vars: {}/env_vars: {PLATFORM_TOKEN: $secret, PLAIN_SETTING: visible}/" "$SPEC" >"$BATS_TEST_TMPDIR/secret.yaml"
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/secret.yaml" --wait \
    --override +mvp_standin.expect_env=PLATFORM_TOKEN
  assert_success
  refute_output --partial "$secret"
  local id
  id=$(last_line)
  run grep -c "mvp_standin: PLATFORM_TOKEN is set (${#secret} characters)" "$SHARED_ROOT/jobs/$id/logs/driver.log"
  assert_output 1
  run grep -rl -- "$secret" "$SHARED_ROOT/jobs/$id"
  assert_failure
  assert_output ""
  run job_json "$id" config/runtime_env.json '.env_vars.PLATFORM_TOKEN + " " + .env_vars.PLAIN_SETTING'
  assert_output "*** visible"
  run grep -c "PLATFORM_TOKEN\": \"\*\*\*\"" "$SHARED_ROOT/jobs/$id/config/submit_cmd.txt"
  assert_output 1
  run "$MVP_REPO/scripts/51_logs.sh" "$id"
  assert_success
  refute_output --partial "$secret"
}

@test "overrides with spaces, quotes, \$(...), backticks and ; reach the trainer byte for byte, and run nothing" {
  local marker=$BATS_TEST_TMPDIR/pwned
  local hostile="it's a \"test\" \$(touch $marker) \`touch $marker\` ; touch $marker & echo \${HOME}"
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --wait --override "+mvp_standin.note=$hostile"
  assert_success
  local id
  id=$(last_line)
  run sed -n 's/^mvp_standin: overrides=//p' "$SHARED_ROOT/jobs/$id/logs/driver.log"
  jq -e --arg want "+mvp_standin.note=$hostile" 'index($want) != null' <<<"$output"
  [[ ! -e $marker ]]
}

@test "a job told to fail: --wait exits non-zero, result.json says FAILED, the debug bundle is there" {
  run --separate-stderr "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --wait --override +mvp_standin.fail_at_step=3
  assert_failure
  local id
  id=$(last_line)
  [[ $id == ppo-* ]]
  [[ $(job_json "$id" result.json .status) == FAILED ]]
  run grep -c "failing at step 3 as asked" "$SHARED_ROOT/jobs/$id/logs/driver.log"
  assert_output 1
  run bash -c "ls '$SHARED_ROOT/jobs/$id/debug' | grep -c '_final_'"
  (( output >= 2 ))
  [[ ! -e $SHARED_ROOT/jobs/$id/checkpoints/global_step_10 ]]
}

@test "51_logs.sh follows a running job; 52_stop.sh stops it and archives it as STOPPED" {
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --override +mvp_standin.step_seconds=2
  assert_success
  local id
  id=$(last_line)
  local i
  for ((i = 0; i < 60; i++)); do
    grep -q '^step:1 ' <("$MVP_REPO/scripts/51_logs.sh" "$id" 2>/dev/null) && break
    sleep 1
  done
  run "$MVP_REPO/scripts/52_stop.sh" "$id"
  assert_success
  assert_output --partial "job $id is STOPPED"
  [[ $(job_json "$id" result.json .status) == STOPPED ]]
  run "$MVP_REPO/scripts/52_stop.sh" "$id"
  assert_success
  assert_output --partial "SKIP: stopping $id (it already ended STOPPED)"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$id" --follow
  assert_success
  assert_output --partial "MVP_PRECHECK_MARKER=standin"
  assert_output --partial "step:1 "
}

@test "--dry-run validates and prints the command, and writes nothing" {
  local before
  before=$(ls "$SHARED_ROOT/jobs" | wc -l)
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --dry-run
  assert_success
  jq -e '.resolved.workload == "ppo"' <<<"$output"
  [[ $stderr == *"ray job submit --address $MVP_DASHBOARD"* ]]
  [[ $(ls "$SHARED_ROOT/jobs" | wc -l) == "$before" ]]
}

@test "50_status.sh lists past jobs from the archive after the cluster is restarted" {
  local id
  id=$(<"$BATS_FILE_TMPDIR/ppo-id")
  "$MVP_REPO/scripts/02_down.sh" 2>/dev/null
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" --json
  assert_failure
  jq -e --arg id "$id" '.jobs[] | select(.submission_id == $id) | .status == "SUCCEEDED" and .source == "archive" and .driver_on_head == false' <<<"$output"
  mvp_cluster_up
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" --json
  assert_success
  jq -e --arg id "$id" '.jobs[] | select(.submission_id == $id) | .status == "SUCCEEDED"' <<<"$output"
}
