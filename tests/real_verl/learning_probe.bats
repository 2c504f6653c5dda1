#!/usr/bin/env bats
# The learning probe on REAL verl 0.9.1 (docs/nightly.md, "The learning
# probe"): the default suite's `learn` job, which only CPU-profile nights run,
# through the nightly itself (60 --only learn): the runbook's reward is copied
# to user/code/, the tiny model trains on it, and its score rises by far more
# than two runs of the same job differ. A night whose advantages have the
# wrong sign, or whose reward is wired backwards, does not rise: its score
# falls out of the band the good nights make.
# Its own cluster (real_verl.bats's tests share theirs, in order); the test
# needs only a cluster with the inputs and could join that file.

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  export MVP_TRAINER_PROFILE=cpu MVP_MODEL_SOURCE=tiny MVP_MODEL_ID=mvp-tiny/qwen2
  export MVP_VERL_SRC=.mvp/cache/verl-0.9.1 MVP_GPUS_PER_WORKER=1 MVP_JOB_TIMEOUT=900
  mvp_cluster_up
  mvp_prepare_inputs verl-0.9.1 || { cat "$MVP_TEST_LOG" >&3; return 1; }
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
}

# The run-to-run band: the most three runs of the probe differed by at one step
# (docs/nightly.md, "The learning probe").
PROBE_BAND=0.127

@test "the learning probe (the default suite's learn, CPU nights only) on real verl: 60 --only learn copies its reward to user/code/, passes every check, and the score rises from step 1 to the last by more than 3 times the measured run-to-run band" {
  local t0=$SECONDS run_dir id
  MVP_NIGHTLY_RESUME='' CODE_ID=verl-0.9.1 run mvp_script 60_nightly_regression --only learn
  echo "# the learning probe's night: $((SECONDS - t0)) s" >&3
  assert_success
  assert_line --regexp "^NIGHTLY PASS .*: 1/1 jobs passed every check"
  cmp "$MVP_REPO/templates/rewards/learning_probe.py" "$SHARED_ROOT/user/code/learning_probe.py"
  run_dir=$(ls -d "$SHARED_ROOT"/regressions/nightly-* | tail -n 1)
  id=$(jq -r '.jobs[] | select(.name == "learn") | .submission_id' "$run_dir/report.json")
  local steps
  steps=$(mvp_script 51_logs "$id" --steps --json)
  echo "# $(jq -r 'map("step \(.step): score \(."critic/score/mean" * 10000 | round / 10000), grad_norm \(."actor/grad_norm" * 10000 | round / 10000)") | join("; ")' <<<"$steps")" >&3
  # The band: two runs of the probe differ by at most BAND at a step (measured, docs/nightly.md).
  # (Once every response of a group scores the cap, 1.0, its advantages are 0: the last step's
  # grad_norm may be 0 by design, the first's may not.)
  jq -e --argjson band "$PROBE_BAND" 'length >= 2 and (.[-1]."critic/score/mean" - .[0]."critic/score/mean") > 3 * $band
    and .[0]."actor/grad_norm" > 0' <<<"$steps" ||
    fail "the probe's score did not rise by more than 3 x $PROBE_BAND: $(jq -c 'map(."critic/score/mean")' <<<"$steps")"
}
