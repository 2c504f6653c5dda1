#!/usr/bin/env bats
# Resume fidelity on a real local cluster, the CPU stand-in for verl as the
# trainer (it mirrors verl's resume: the model, RNG and dataloader restored,
# max_ckpt_to_keep per process only (verl 7395), SFT's epoch-boundary skip
# (verl 7401)): the launcher's stopper SIGKILLs a real trainer process at a
# step drawn at random, --retry 1 resumes it, the check resume_fidelity
# compares the resumed curve with an uninterrupted run of the same seed;
# max_ckpt_to_keep across the chain; the SFT epoch-boundary refusal.

# shellcheck disable=SC2154  # $stderr is set by bats' run --separate-stderr

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  mvp_cluster_up
  mvp_prepare_inputs standin || { cat "$MVP_TEST_LOG" >&3; return 1; }
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
  # 6 GRPO steps of 1 s (the stopper reads the driver log, which Ray forwards late on a loaded host), a checkpoint every 2; every rerun differs by up to 0.01 (as real verl's do).
  GRPO=(--override trainer.total_training_steps=6 --override trainer.save_freq=2
    --override +mvp_standin.step_seconds=1 --override +mvp_standin.noise=0.01)
  DETERMINISTIC=(--override actor_rollout_ref.rollout.full_determinism=true --override trainer.use_v1=false)
}

remember() { echo "$2" >"$BATS_FILE_TMPDIR/job.$1"; }
recall() { cat "$BATS_FILE_TMPDIR/job.$1"; }

# helper_py CODE ARGS...: python with the helper package, for the checks the judge runs.
helper_py() { PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c "$@"; }

# stop_step REFERENCE: the step the nightly would draw (stop-step), as "K LOW HIGH".
stop_step() {
  helper_py 'import sys
from pathlib import Path
from mvp.nightly import resume_fidelity
print(*resume_fidelity.stop_step(Path(sys.argv[1]), sys.argv[2]))' "$SHARED_ROOT/jobs" "$1"
}

# fidelity REFERENCE K IDS...: the check resume_fidelity of the chain IDS, interrupted after step K, as JSON (band: the default's).
fidelity() {
  helper_py 'import json, sys
from pathlib import Path
from mvp.nightly import resume_fidelity
from mvp.core.settings import read_contract
def band():  # the default of MVP_NIGHTLY_RESUME_BAND
    return dict(w.split("=") for w in next(e.default for e in read_contract() if e.name == "MVP_NIGHTLY_RESUME_BAND").split())
print(json.dumps(resume_fidelity.check(Path(sys.argv[1]), sys.argv[4:], sys.argv[2], int(sys.argv[3]),
                              band())))' "$SHARED_ROOT/jobs" "$@"
}

# interrupted_chain K ARGS...: 41 --wait --retry 1 with the stopper at step K; sets IDS.
interrupted_chain() {
  local k=$1; shift
  MVP_STOP_AT_STEP=$k run --separate-stderr mvp_script 41_submit_grpo_epoch1 --wait --retry 1 "$@"
  mapfile -t IDS <<<"$output"
}

@test "stopper: GRPO SIGKILLed after a step drawn at random ends FAILED, --retry 1 resumes its newest checkpoint, the resumed scores lie within the band of the uninterrupted run; max_actor_ckpt_to_keep=1 holds across the chain" {
  run mvp_script 41_submit_grpo_epoch1 --wait "${GRPO[@]}"
  assert_success
  local ref k low high
  ref=$(last_line)
  remember ref "$ref"
  read -r k low high < <(stop_step "$ref")
  assert_equal "$low $high" "2 5"
  ((k >= 2 && k <= 5))
  local t0=$SECONDS
  interrupted_chain "$k" "${GRPO[@]}" --override trainer.max_actor_ckpt_to_keep=1
  echo "# interrupted after step $k: chain of 2 jobs in $((SECONDS - t0)) s" >&3
  assert_success
  local first=${IDS[0]} seen from
  assert_equal "${#IDS[@]} ${IDS[1]}" "2 $first-r1"
  remember chain "$first"
  # The trainer was killed, not asked to stop: SIGKILL from the stopper, the job FAILED.
  run job_json "$first" logs/interrupt.json '[.killed, .signal, .stop_at_step] | @tsv'
  assert_output $'true\tSIGKILL\t'"$k"
  seen=$(job_json "$first" logs/interrupt.json .last_step_seen)
  ((seen >= k && seen < 6))
  assert_equal "$(job_json "$first" result.json .status)" FAILED
  grep -q "mvp stopper: SIGKILL sent to the trainer (pid [0-9]*) once verl logged step $seen" "$SHARED_ROOT/jobs/$first/logs/driver.log"
  # The retry resumed from the newest checkpoint the killed trainer had
  # completed: the last save at or before the step the stopper saw, or the
  # next one when the trainer (the TaskRunner actor, not the driver the
  # SIGKILL hits) saved it while Ray's log forwarding and the job's teardown
  # lagged on a loaded host.
  from=$(job_json "$first-r1" config/job_spec.json .resolved.resumed_from)
  [[ $from == "$first/global_step_$(( seen / 2 * 2 ))" || $from == "$first/global_step_$(( (seen + 1) / 2 * 2 ))" ]] ||
    fail "resumed from $from; the stopper saw step $seen"
  from=${from##*_}
  ((from < 6)) || fail "the killed trainer got to its last save (global_step_6): nothing left to resume"
  [[ $(job_json "$first-r1" config/job_spec.json .resolved.stop_at_step) == null ]]
  run fidelity "$ref" "$k" "$first" "$first-r1"
  jq -e '.passed == true' <<<"$output" || fail "resume_fidelity: $output"
  jq -e --arg r "$ref" --argjson f "$from" '.evidence | test("resumed from global_step_\($f) as .*; steps \($f + 1)-6 vs \($r): score: max \\|resumed - \($r)\\| [0-9.e-]+ at step [0-9]+ \\(<= band 0.1\\)")' <<<"$output" ||
    fail "evidence: $output"
  echo "# $(jq -r .evidence <<<"$output")" >&3
  # max_actor_ckpt_to_keep=1: verl kept one in the retry's directory; the runbook removed the killed job's.
  [[ -z $(find "$SHARED_ROOT/jobs/$first/checkpoints" -path '*/global_step_*' -name 'model_world_size_*') ]]
  run ls "$SHARED_ROOT/jobs/$first-r1/checkpoints/global_step_6/actor"
  assert_output --partial model_world_size_8_rank_0.pt
  jq -e '.evidence | test("the chain keeps 1 complete checkpoint\\(s\\) \\(.*-r1/global_step_6\\), max_ckpt_to_keep 1$")' <<<"$(fidelity "$ref" "$k" "$first" "$first-r1")"
  grep -q "max_actor_ckpt_to_keep=1 across its chain (verl issue 7395): removed $first/global_step_$from" "$MVP_TEST_LOG"
}

@test "resume_fidelity fails, naming the figure and the step, a resumed run that drifted beyond the band, and a chain that keeps more checkpoints than max_ckpt_to_keep (planted: the killed job's checkpoint put back)" {
  local ref first
  ref=$(recall ref) first=$(recall chain)
  interrupted_chain 3 "${GRPO[@]}" --override +mvp_standin.resume_drift=0.5
  assert_success
  run fidelity "$ref" 3 "${IDS[@]}"
  jq -e '.passed == false and (.evidence | test("score: max \\|resumed - .*\\| 0\\.[45][0-9]* at step [0-9]+ \\(> band 0.1\\)"))' <<<"$output" ||
    fail "resume_fidelity: $output"
  # verl 7395 as the stand-in mirrors it: what an earlier process saved stays unless the runbook removes it.
  local from
  from=$(job_json "$first-r1" config/job_spec.json .resolved.resumed_from)
  local back=$SHARED_ROOT/jobs/${from%%/*}/checkpoints/${from#*/}
  mkdir -p "$back"
  cp -r "$SHARED_ROOT/jobs/$first-r1/checkpoints/global_step_6/actor" "$back/"
  run fidelity "$ref" "$(job_json "$first" logs/interrupt.json .stop_at_step)" "$first" "$first-r1"
  jq -e '.passed == false and (.evidence | test("the chain keeps 2 complete checkpoint\\(s\\) .*max_ckpt_to_keep 1: too many \\(verl 7395\\)$"))' <<<"$output" ||
    fail "resume_fidelity: $output"
}

@test "under verl's full determinism (full_determinism=true, use_v1=false) a resumed run must equal the uninterrupted one: equal passes, 0.001 off fails" {
  # The uninterrupted run carries a stopper whose step never comes: the test
  # after this one reads it (one job fewer than a run of its own).
  MVP_STOP_AT_STEP=9 run mvp_script 41_submit_grpo_epoch1 --wait "${GRPO[@]}" "${DETERMINISTIC[@]}"
  assert_success
  local ref
  ref=$(last_line)
  remember never "$ref"
  interrupted_chain 3 "${GRPO[@]}" "${DETERMINISTIC[@]}"
  assert_success
  run fidelity "$ref" 3 "${IDS[@]}"
  jq -e '.passed == true and (.evidence | test("score: max \\|resumed - .*\\| 0 at step [0-9]+ \\(<= 0, equal under determinism\\)"))' <<<"$output" ||
    fail "resume_fidelity: $output"
  # The killed job's checkpoint resumed a second time, 0.001 off: the same
  # chain as a second interrupted run would make, one job fewer.
  local first=${IDS[0]} from
  from=$(job_json "${IDS[1]}" config/job_spec.json .resolved.resumed_from)
  [[ $from == "$first/global_step_"[0-9]* ]]
  run --separate-stderr mvp_script 41_submit_grpo_epoch1 --wait --resume-from "$from" "${GRPO[@]}" "${DETERMINISTIC[@]}" \
    --override +mvp_standin.resume_drift=0.001
  assert_success
  run fidelity "$ref" 3 "$first" "$(last_line)"
  jq -e '.passed == false and (.evidence | test("score: max \\|resumed - .*\\| 0.001 at step [0-9]+ \\(> 0, equal under determinism\\)"))' <<<"$output" ||
    fail "resume_fidelity: $output"
}

@test "a stopper whose step never comes kills nothing: the job SUCCEEDED, its record says so, and resume_fidelity fails 'not interrupted'" {
  # The job: the deterministic test's uninterrupted run, submitted with MVP_STOP_AT_STEP=9 (of 6 steps).
  local ref id
  ref=$(recall ref) id=$(recall never)
  [[ $(job_json "$id" result.json .status) == SUCCEEDED ]]
  run job_json "$id" logs/interrupt.json '[.killed, .last_step_seen] | @tsv'
  assert_output $'false\t6'
  run fidelity "$ref" 9 "$id"
  jq -e --arg id "$id" '.passed == false and (.evidence | startswith("\($id) was not interrupted: it ended SUCCEEDED after verl logged step 6, before step 9"))' <<<"$output" ||
    fail "resume_fidelity: $output"
}

@test "SFT at an epoch-boundary checkpoint: verl (the stand-in mirrors 7401) exits 0 having trained nothing; --resume-from refuses it in one line citing verl #7401, and resumes a mid-epoch checkpoint" {
  # 7473 rows in batches of 2048: 3 steps per epoch, 2 epochs, a checkpoint every step.
  local -a sft=(--override data.train_batch_size=2048 --override trainer.total_training_steps=null
    --override trainer.total_epochs=2 --override trainer.save_freq=1)
  run mvp_script 42_submit_sft_minimal --wait "${sft[@]}"
  assert_success
  local first
  first=$(last_line)
  [[ $(<"$SHARED_ROOT/jobs/$first/checkpoints/latest_checkpointed_iteration.txt") == 6 ]]
  # What verl does when told to resume there directly: SUCCEEDED, no step trained.
  run mvp_script 42_submit_sft_minimal --wait "${sft[@]}" --override trainer.resume_mode=resume_path \
    --override "trainer.resume_from_path=$SHARED_ROOT/jobs/$first/checkpoints/global_step_3"
  assert_success
  local skipped
  skipped=$(last_line)
  run ! grep -qE '(^|[]\r ])step:[0-9]+ - ' "$SHARED_ROOT/jobs/$skipped/logs/driver.log"
  # The runbook's resume refuses it, in one line, and makes no job directory.
  local before
  before=$(find "$SHARED_ROOT/jobs" -mindepth 1 -maxdepth 1 | wc -l)
  : >"$MVP_TEST_LOG.sft"
  MVP_TEST_LOG=$MVP_TEST_LOG.sft run mvp_script 42_submit_sft_minimal --wait "${sft[@]}" --resume-from "$first/global_step_3"
  assert_failure
  [[ $(grep -c '^ERROR:' "$MVP_TEST_LOG.sft") == 1 ]]
  grep -q "^ERROR: --resume-from $first/global_step_3: step 3 ends epoch 1 (3 steps per epoch); .*(verl #7401, https://github.com/verl-project/verl/issues/7401)" "$MVP_TEST_LOG.sft"
  [[ $(find "$SHARED_ROOT/jobs" -mindepth 1 -maxdepth 1 | wc -l) == "$before" ]]
  # A mid-epoch checkpoint goes on: steps 5 and 6.
  run mvp_script 42_submit_sft_minimal --wait "${sft[@]}" --resume-from "$first/global_step_4"
  assert_success
  run mvp_script 51_logs "$(last_line)" --steps --json
  assert_equal "$(jq -r '[.[].step] | map(tostring) | join(" ")' <<<"$output")" "5 6"
}

@test "the default night (MVP_NIGHTLY_RESUME=ppo2): ppo2 is SIGKILLed after a step drawn between ppo1's save_freq and its last step but one, resumed by --retry 1, and passes resume_fidelity against ppo1; a wrong setting is one ERROR line" {
  MVP_NIGHTLY_RESUME=grpo2 run --separate-stderr "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run
  assert_failure
  assert_equal "$(grep -c '^ERROR:' <<<"$stderr")" 1
  [[ $stderr == *"ERROR: MVP_NIGHTLY_RESUME='grpo2' is not ppo1, ppo2, grpo, sft or empty (no resume check; the jobs of $MVP_REPO/config/nightly.yaml)"* ]]
  run "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run --only ppo
  assert_line "  then ppo2: scripts/40_submit_ppo_epoch1.sh --wait --retry 1, its trainer SIGKILLed after a step drawn at random from ppo1's (resume fidelity)"
  # The stand-in's steps take 0.2 s here (29 steps, a checkpoint every 10): the kill lands within the step after.
  local t0=$SECONDS
  MVP_NIGHTLY_OVERRIDES="ppo1:+mvp_standin.step_seconds=0.2 ppo2:+mvp_standin.step_seconds=0.2" \
    run --separate-stderr "$MVP_REPO/scripts/60_nightly_regression.sh" --only ppo
  echo "# night of ppo1 and an interrupted ppo2: $((SECONDS - t0)) s" >&3
  local run_id
  run_id=$(sed -n '1s/: log .*//p' <<<"$output")
  [[ $(last_line) == "NIGHTLY PASS $run_id: 2/2 jobs passed every check" ]] || { cat "$SHARED_ROOT/regressions/$run_id/report.md" >&3; false; }
  local report=$SHARED_ROOT/regressions/$run_id/report.json
  jq -e '.jobs[] | select(.name == "ppo2") | .resume.stop_at_step >= 10 and .resume.stop_at_step <= 28 and (.attempts | length) == 2
         and ([.attempts[].status] == ["FAILED", "SUCCEEDED"])' "$report"
  run jq -r '.jobs[] | select(.name == "ppo2") | .checks[] | select(.name == "resume_fidelity") | "\(.passed) \(.evidence)"' "$report"
  assert_output --regexp '^true SIGKILLed after step [0-9]+ \(drawn: [0-9]+\), resumed from global_step_(10|20) as .* -> -r1; steps (11|21)-29 vs .*: score: max \|resumed - .*\| 0 at step [0-9]+ \(<= band 0.1\).*the chain keeps 1 complete checkpoint\(s\) \(.*-r1/global_step_29\), max_ckpt_to_keep 1$'
  echo "# $output" >&3
  run jq -r '[.jobs[] | select(.name == "ppo1") | .checks[].name] | index("resume_fidelity")' "$report"
  assert_output null
}
