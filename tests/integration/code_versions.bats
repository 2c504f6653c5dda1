#!/usr/bin/env bats
# Two verl versions side by side on one real local cluster: each job imports
# the snapshot its JobSpec names, proven from its own driver log. Plus the
# custom reward function's path, checked before submission and forwarded.
# The snapshots are of real verl 0.9.1 with the CPU stand-in over its
# entrypoints (they read the reward function where verl 0.9.1 reads it).

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  mvp_cluster_up
  mvp_script 30_prepare_data_and_model >/dev/null
  # codeA and codeB differ in one file.
  local b=$BATS_FILE_TMPDIR/standin-b
  cp -r "$MVP_REPO/$MVP_VERL_SRC" "$b"
  echo '__version__ += ".b"' >>"$b/verl/__init__.py"
  CODE_ID=codeA mvp_script 31_snapshot_verl_code >/dev/null
  CODE_ID=codeB MVP_VERL_SRC=$b mvp_script 31_snapshot_verl_code >/dev/null
  sed "s|^model: .*|model: common/models/$MVP_MODEL_ID|" "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_FILE_TMPDIR/ppo.yaml"
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
  SPEC=$BATS_FILE_TMPDIR/ppo.yaml
}

@test "codeA and codeB run at the same time on one cluster, each importing its own snapshot" {
  local code
  # One node's GPUs each, and slow steps, so the two jobs overlap.
  for code in codeA codeB; do
    CODE_ID=$code "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --wait --override trainer.nnodes=1 \
      --override +mvp_standin.step_seconds=0.2 >"$BATS_TEST_TMPDIR/$code.out" 2>"$BATS_TEST_TMPDIR/$code.err" &
  done
  wait %1 && wait %2
  local a b
  a=$(tail -n 1 "$BATS_TEST_TMPDIR/codeA.out")
  b=$(tail -n 1 "$BATS_TEST_TMPDIR/codeB.out")
  for code in codeA codeB; do
    local id log
    [[ $code == codeA ]] && id=$a || id=$b
    log=$SHARED_ROOT/jobs/$id/logs/driver.log
    run grep -x "MVP_PRECHECK_MARKER=$code" "$log"
    assert_success
    run grep -x "MVP_PRECHECK_VERL_FILE=$SHARED_ROOT/common/code/verl/$code/verl/__init__.py" "$log"
    assert_success
    [[ $(job_json "$id" result.json .status) == SUCCEEDED ]]
  done
  # They overlapped: each started before the other ended.
  (( $(job_json "$a" result.json .start_time_ms) < $(job_json "$b" result.json .end_time_ms) ))
  (( $(job_json "$b" result.json .start_time_ms) < $(job_json "$a" result.json .end_time_ms) ))
}

@test "a code_path that is missing or has no marker is refused before submission: no directory, no Ray job" {
  mkdir -p "$SHARED_ROOT/common/code/verl/unmarked/verl"
  local before
  before=$(ls "$SHARED_ROOT/jobs" | sort)
  local code
  for code in unmarked absent; do
    sed "s|^code_path: .*|code_path: common/code/verl/$code|" "$SPEC" >"$BATS_TEST_TMPDIR/$code.yaml"
    run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/$code.yaml"
    assert_failure
    assert_output --partial "ERROR: code_path: $SHARED_ROOT/common/code/verl/$code is not a code snapshot (no mvp_marker.py)"
  done
  [[ $(ls "$SHARED_ROOT/jobs" | sort) == "$before" ]]
  run bash -c "curl -fsS '$MVP_DASHBOARD/api/jobs/' | jq '[.[] | select(.submission_id)] | length'"
  assert_output "$(wc -w <<<"$before")"
}

@test "reward_fn_path reaches verl 0.9.1 as reward.custom_reward_function.path/name, where main_ppo reads it, and is called" {
  mkdir -p "$SHARED_ROOT/user/code"
  cat >"$SHARED_ROOT/user/code/gsm8k_reward.py" <<'PY'
def my_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if solution_str.strip().endswith("#### " + ground_truth) else 0.0
PY
  sed -e "s|^reward_fn_path: .*|reward_fn_path: user/code/gsm8k_reward.py|" -e "s|^reward_fn_name: .*|reward_fn_name: my_score|" \
    "$SPEC" >"$BATS_TEST_TMPDIR/reward.yaml"
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/reward.yaml" --wait --override trainer.nnodes=1
  assert_success
  local id log
  id=$(last_line)
  log=$SHARED_ROOT/jobs/$id/logs/driver.log
  run sed -n 's/^mvp_standin: overrides=//p' "$log"
  jq -e --arg p "reward.custom_reward_function.path=$SHARED_ROOT/user/code/gsm8k_reward.py" \
    'index([$p]) != null and index(["reward.custom_reward_function.name=my_score"]) != null' <<<"$output"
  # The stand-in reads it as verl 0.9.1 does (verl/trainer/ppo/reward.py): the top-level key would be ignored.
  run grep -c "mvp_standin: custom reward my_score from $SHARED_ROOT/user/code/gsm8k_reward.py scored 1.0 on a sample (read from reward.custom_reward_function)" "$log"
  assert_output 1
}

@test "reward_fn_path errors (outside user/code, missing file, missing function) are refused before submission" {
  local before
  before=$(ls "$SHARED_ROOT/jobs" | sort)
  sed "s|^reward_fn_path: .*|reward_fn_path: user/code/nope.py|" "$SPEC" >"$BATS_TEST_TMPDIR/r1.yaml"
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/r1.yaml"
  assert_failure
  assert_output --partial "reward_fn_path: $SHARED_ROOT/user/code/nope.py does not exist"
  sed "s|^reward_fn_path: .*|reward_fn_path: datasets/gsm8k/train.parquet|" "$SPEC" >"$BATS_TEST_TMPDIR/r2.yaml"
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/r2.yaml"
  assert_failure
  assert_output --partial "must be under $SHARED_ROOT/user/code"
  printf 'def other():\n    pass\n' >"$SHARED_ROOT/user/code/r3.py"
  sed "s|^reward_fn_path: .*|reward_fn_path: user/code/r3.py|" "$SPEC" >"$BATS_TEST_TMPDIR/r3.yaml"
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/r3.yaml"
  assert_failure
  assert_output --partial "defines no function 'compute_score' (it has: other)"
  [[ $(ls "$SHARED_ROOT/jobs" | sort) == "$before" ]]
}
