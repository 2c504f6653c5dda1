#!/usr/bin/env bats
# Retry chains on a real local cluster (the CPU stand-in for verl as the
# trainer, its rollout dump mirroring verl's trainer.rollout_data_dir): the
# JobSpec's `retries` honoured by 43 --wait, --retry overriding it, the check
# `resumed` on the chain's own output, 50_status's one row per chain.

# shellcheck disable=SC2154  # $stderr is set by bats' run --separate-stderr

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  mvp_cluster_up
  mvp_prepare_inputs standin || { cat "$MVP_TEST_LOG" >&3; return 1; }
  # The PPO template asking for one resumption.
  sed -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" -e 's|^retries:.*|retries: 1|' \
    "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_FILE_TMPDIR/ppo-retries.yaml"
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
  SPEC=$BATS_FILE_TMPDIR/ppo-retries.yaml
  # Fails at step 4 on every attempt, after global_step_2; each step's prompts dumped into the job's checkpoints.
  # shellcheck disable=SC2016  # the ${...} is verl's (Hydra's), not bash's
  FAILING=(--override trainer.save_freq=2 --override trainer.total_training_steps=6 --override +mvp_standin.fail_at_step=4
    --override 'trainer.rollout_data_dir=${trainer.default_local_dir}/rollouts')
}

@test "a JobSpec's retries: 1 makes 43 --wait resume once from global_step_2 as <first>-r1, whose first step is 3 on step 3's prompts (check resumed); 50_status shows the chain as one row" {
  local t0=$SECONDS
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --wait "${FAILING[@]}"
  echo "# chain of 2 jobs: $((SECONDS - t0)) s" >&3
  # The resumption failed at step 4 as well; one was all the JobSpec allowed.
  assert_failure 1
  local -a ids
  mapfile -t ids <<<"$output"
  local first=${ids[0]}
  assert_equal "${#ids[@]} ${ids[1]}" "2 $first-r1"
  [[ $stderr == *"retry 1 of 1: job $first ended FAILED; resuming from $first/global_step_2"* ]]
  [[ $(job_json "$first-r1" config/job_spec.json .resolved.resumed_from) == "$first/global_step_2" ]]
  run "$MVP_REPO/.venv/bin/python" -c 'import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from mvp.jobs.after_sending import chain, resumed_check
jobs = Path(sys.argv[2])
print(json.dumps(resumed_check.check(jobs, sys.argv[3], chain.before(jobs, sys.argv[3]))))' \
    "$MVP_REPO/helpers" "$SHARED_ROOT/jobs" "$first-r1"
  jq -e --arg f "$first" '.passed == true and .evidence == "first logged step 3 = \($f)/global_step_2 + 1; the prompts of its 256 samples of step 3 are those \($f) trained at step 3"' <<<"$output" || { echo "resumed: $output"; false; }
  # Different steps train different prompts: the check compares something.
  run ! cmp -s "$SHARED_ROOT/jobs/$first/checkpoints/rollouts/2.jsonl" "$SHARED_ROOT/jobs/$first/checkpoints/rollouts/3.jsonl"
  run mvp_script 50_status
  assert_line --regexp "^  $first -> -r1 +FAILED .*\(attempts FAILED -> FAILED\)$"
  [[ $(grep -c "$first" <<<"$output") == 1 ]]
}

@test "--retry 0 overrides the JobSpec's retries: the failed job stays alone" {
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --wait --retry 0 "${FAILING[@]}"
  assert_failure 1
  local -a ids
  mapfile -t ids <<<"$output"
  assert_equal "${#ids[@]}" 1
  [[ ! -e $SHARED_ROOT/jobs/${ids[0]}-r1 ]]
  [[ $stderr != *"retry 1 of"* ]]
}
