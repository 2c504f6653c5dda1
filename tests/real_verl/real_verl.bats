#!/usr/bin/env bats
# REAL verl 0.9.1 (the pristine PyPI wheel tree as the code snapshot) trains
# through the unchanged runbook on a real local cluster of CPU-only nodes:
# the CPU profile (templates/profiles/cpu.yaml, helpers/verl_cpu), a tiny
# Qwen2-architecture model built by 30 (MVP_MODEL_SOURCE=tiny), the GSM8K
# parquet 30 makes from the real files (and a user's own cut of it, with
# their reward function, for their verl command line: grpo_line). No
# stand-in anywhere in this file.
# The tests run in order and share one cluster and its jobs.

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  export MVP_TRAINER_PROFILE=cpu MVP_MODEL_SOURCE=tiny MVP_MODEL_ID=mvp-tiny/qwen2
  export MVP_VERL_SRC=.mvp/cache/verl-0.9.1 MVP_GPUS_PER_WORKER=1 MVP_JOB_TIMEOUT=900
  mvp_cluster_up
  mvp_prepare_inputs verl-0.9.1 || { cat "$MVP_TEST_LOG" >&3; return 1; }
  mkdir -p "$SHARED_ROOT/user/code" "$SHARED_ROOT/datasets/mine"
  cp "$MVP_REPO/templates/rewards/shaped_gsm8k.py" "$SHARED_ROOT/user/code/"
  # A user's own data and reward function, for their own verl command line
  # (grpo_line): 48 training and 16 validation rows of GSM8K in verl's RL
  # schema, rewritten with pyarrow under the user's data_source; and a reward
  # under the user's function name, partial credit for digits so that the
  # tiny model's group advantages are not all 0.
  "$MVP_REPO/.venv/bin/python" - "$SHARED_ROOT/datasets" <<'PY' || return 1
import sys
import pyarrow as pa, pyarrow.parquet as pq
root = sys.argv[1]
for split, rows in (("train", 48), ("test", 16)):
    t = pq.read_table(f"{root}/gsm8k/{split}.parquet").slice(0, rows)
    t = t.set_column(t.schema.get_field_index("data_source"), "data_source", pa.array(["mine/gsm8k"] * rows))
    pq.write_table(t, f"{root}/mine/{split}.parquet")
PY
  cat >"$SHARED_ROOT/user/code/my_reward.py" <<'PY'
import re
def my_score(data_source, solution_str, ground_truth, extra_info=None, **kw):
    numbers = re.findall(r"-?[0-9]+", solution_str.replace(",", ""))
    if numbers and numbers[-1] == str(ground_truth).replace(",", ""):
        return 1.0
    return 0.5 * sum(c.isdigit() for c in solution_str) / max(len(solution_str), 1)
PY
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
}

# remember NAME ID / recall NAME: job ids shared between the ordered tests.
remember() { echo "$2" >"$BATS_FILE_TMPDIR/job.$1"; }
recall() { cat "$BATS_FILE_TMPDIR/job.$1"; }

driver_log() { echo "$SHARED_ROOT/jobs/$1/logs/driver.log"; }

# The user's line runs 4 steps (the CPU profile's 3 win over the line's own
# words, an override over both): the interrupted run below is killed after
# step 3, before its last, and the night's run is its reference.
LINE_STEPS=4

# grpo_line: the user's own GRPO job as verl's docs write it, into the array
# `line` (43_submit_jobspec.sh -- "${line[@]}"): their data and reward
# function (setup_file), the tiny model, the rollout the CPU profile runs
# (verl leaves it mandatory), TensorBoard and MLflow beside the console. The
# CPU profile is laid over it (MVP_TRAINER_PROFILE=cpu).
grpo_line() {
  line=(python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo
    data.train_files=datasets/mine/train.parquet data.val_files=datasets/mine/test.parquet
    "actor_rollout_ref.model.path=common/models/$MVP_MODEL_ID" actor_rollout_ref.rollout.name=hf
    reward.custom_reward_function.path=user/code/my_reward.py reward.custom_reward_function.name=my_score
    "trainer.logger=['console','tensorboard','mlflow']")
}

# steps_json ID: verl's step metrics of the job, as 51_logs.sh --steps --json gives them.
steps_json() { mvp_script 51_logs "$1" --steps --json; }

# step_metric ID STEP KEY: KEY's value on verl's line of step STEP.
step_metric() { steps_json "$1" | jq -r --argjson s "$2" --arg k "$3" '.[] | select(.step == $s) | .[$k]'; }

# steps ID: the step numbers of verl's metric lines, in order.
steps() { steps_json "$1" | jq -r '[.[].step] | map(tostring) | join(" ")'; }

# resumed_check ID: the check `resumed` of job ID (helpers/mvp/jobs/after_sending/resumed_check.py), as JSON.
resumed_check() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import json, sys
from pathlib import Path
from mvp.jobs.after_sending import chain, resumed_check
jobs = Path(sys.argv[1])
print(json.dumps(resumed_check.check(jobs, sys.argv[2], chain.before(jobs, sys.argv[2]))))' "$SHARED_ROOT/jobs" "$1"
}

assert_real_verl_ran() {
  local id=$1 log
  log=$(driver_log "$id")
  run job_json "$id" result.json .status
  assert_output SUCCEEDED
  # verl is the snapshot's pristine tree, through the job's PYTHONPATH.
  grep -q "^MVP_PRECHECK_VERL_FILE=$SHARED_ROOT/common/code/verl/verl-0.9.1/verl/__init__.py$" "$log"
  ! grep -q "mvp_standin" "$log"
  run job_json "$id" result.json '.driver_on_head'
  assert_output false
}

@test "the nightly on real verl runs a user's own two-job suite (MVP_NIGHTLY_SUITE: a JobSpec and a verl command line, under their names) one after another: its parser reads verl's own lines, the judge passes every check and weighs the command line's job against its history" {
  local t0=$SECONDS line suite=$BATS_TEST_TMPDIR/suite.yaml
  grpo_line
  # The suite a user writes: the runbook's SFT JobSpec, and their GRPO command line as a list of words.
  {
    echo "jobs:"
    echo "  - name: team_sft"
    echo "    spec: templates/jobspecs/sft.yaml"
    echo "  - name: my_grpo"
    echo "    command: $(printf '%s\n' "${line[@]}" | jq -Rnc '[inputs]')"
    echo "    overrides: [trainer.total_training_steps=$LINE_STEPS]"
  } >"$suite"
  # Three earlier good nights of my_grpo, far slower than verl on these CPUs: tonight is judged, and better.
  mkdir -p "$SHARED_ROOT/regressions"
  jq -n '[range(3) | {run_id: "nightly-2026010\(. + 1)T023000Z", passed: true, started_at: "2026-01-0\(. + 1)T02:30:00Z",
    jobs: {my_grpo: {status: "SUCCEEDED", duration_s: 9999, failed_checks: [], judged: {},
                     figures: {step_s: 1000, throughput: 0.001, peak_memory_gb: 1000, duration_s: 9999}}}}]' \
    >"$SHARED_ROOT/regressions/history.json"
  # CODE_ID: the night's snapshot is the file's pristine verl-0.9.1 (31 finds it and keeps it), so the
  # tests below, which read this night's jobs and resume them, see verl's own tree.
  MVP_NIGHTLY_SUITE=$suite MVP_NIGHTLY_RESUME='' CODE_ID=verl-0.9.1 run mvp_script 60_nightly_regression
  echo "# the two-job suite's night: $((SECONDS - t0)) s" >&3
  assert_success
  assert_line --regexp "^NIGHTLY PASS "
  local run_dir
  run_dir=$(ls -d "$SHARED_ROOT"/regressions/nightly-* | tail -n 1)
  remember sft "$(jq -r '.jobs[] | select(.name == "team_sft") | .submission_id' "$run_dir/report.json")"
  remember grpo "$(jq -r '.jobs[] | select(.name == "my_grpo") | .submission_id' "$run_dir/report.json")"
  jq -e '[.jobs[].name] == ["team_sft", "my_grpo"]' "$run_dir/report.json" ||
    fail "report jobs: $(jq -c '[.jobs[].name]' "$run_dir/report.json")"
  jq -e '[.jobs[].checks[] | select(.passed == false)] | length == 0' "$run_dir/report.json"
  jq -e '[.jobs[] | .metrics.steps] | all(. >= 3)' "$run_dir/report.json"
  # The command line's job ran from the suite's words: its data and reward function are the user's.
  local grpo_id
  grpo_id=$(recall grpo)
  jq -e --arg r "$SHARED_ROOT" '.resolved.trainer_overrides | .["data.train_files"] == "\($r)/datasets/mine/train.parquet"
    and .["reward.custom_reward_function.name"] == "my_score"' "$SHARED_ROOT/jobs/$grpo_id/config/job_spec.json"
  run jq -r '.jobs[] | .name as $n | .checks[] | select(.name == "regression") | "\($n) \(.passed) \(.evidence)"' "$run_dir/report.json"
  assert_line --regexp '^my_grpo true s/step [0-9.]+ vs median 1000 of 3 nights: -[0-9]+% \(better, beyond 35%\); throughput [0-9.]+ vs median 0.001 of 3 nights: \+[0-9]+% \(better, beyond 35%\); final score [0-9.e-]+: not judged yet \(0 good nights in history, 3 needed\); best score [0-9.e-]+: not judged yet \(0 good nights in history, 3 needed\); peak memory GB [0-9.]+ vs median 1000 of 3 nights: -[0-9]+% \(better, beyond 10%\); score \(critic/score/mean\): no band: 0 reference run\(s\) log it, 3 needed at a step; judged by its single figure \(final_score, best_score\) instead; grad_norm \(actor/grad_norm\): no band: 0 reference run\(s\) log it, 3 needed at a step; .*$'
  assert_line --regexp '^team_sft null s/step [0-9.]+: not judged yet \(0 good nights in history, 3 needed\)'
  # (The per-step bands need 3 good nights logging verl's curves; the seeded history has none, so each
  # curve figure says so and falls back to its single figure.)
  # The figures verl's own lines gave tonight, kept under the suite's names for the nights to come.
  jq -e '.[-1].jobs | (.my_grpo.figures | [.step_s, .throughput, .final_score, .best_score, .peak_memory_gb] | all(. != null))
         and (.team_sft.figures | [.step_s, .throughput, .final_loss] | all(. != null))' "$SHARED_ROOT/regressions/history.json"
}

@test "after the night above (its team_sft job): 42's SFT JobSpec trains real verl 0.9.1 on both worker nodes: verl's loss falls, its checkpoints hold both ranks' weights" {
  local id
  id=$(recall sft)
  [[ $(job_json "$id" config/job_spec.json .resolved.workload) == sft ]]
  assert_real_verl_ran "$id"
  run steps "$id"
  assert_output "1 2 3 4"
  local first last
  first=$(step_metric "$id" 1 train/loss) last=$(step_metric "$id" 4 train/loss)
  jq -en --argjson a "$first" --argjson b "$last" '$b < $a' || { echo "loss $first -> $last"; return 1; }
  local ckpt=$SHARED_ROOT/jobs/$id/checkpoints
  [[ $(<"$ckpt/latest_checkpointed_iteration.txt") == 4 ]]
  local step rank
  for step in 2 4; do
    for rank in 0 1; do
      [[ -s $ckpt/global_step_$step/model_world_size_2_rank_$rank.pt ]] || { ls -R "$ckpt" >&3; return 1; }
    done
    [[ -s $ckpt/global_step_$step/huggingface/config.json ]]
  done
}

@test "42 resumed from the SFT job's global_step_2 logs step 3 first, goes on with the same batches (tokens per step), and leaves that job's directory untouched" {
  local old digest
  old=$(recall sft)
  digest=$(tree_digest "$SHARED_ROOT/jobs/$old")
  run mvp_script 42_submit_sft_minimal --wait --resume-from "$old/global_step_2"
  assert_success
  local id
  id=$(last_line)
  assert_real_verl_ran "$id"
  run steps "$id"
  assert_output "3 4"
  # The data position: the batches of steps 3 and 4 are the ones the first run trained on.
  local step
  for step in 3 4; do
    [[ $(step_metric "$id" "$step" train/global_tokens) == "$(step_metric "$old" "$step" train/global_tokens)" ]]
    # Measured for the nightly's band (MVP_NIGHTLY_RESUME_BAND): a resumed SFT step against the same step uninterrupted.
    echo "# SFT step $step resumed - uninterrupted: loss $(jq -n "$(step_metric "$id" "$step" train/loss) - $(step_metric "$old" "$step" train/loss)"), grad_norm $(jq -n "$(step_metric "$id" "$step" train/grad_norm) - $(step_metric "$old" "$step" train/grad_norm)")" >&3
  done
  run job_json "$id" config/job_spec.json .resolved.resumed_from
  assert_output "$old/global_step_2"
  [[ -s $SHARED_ROOT/jobs/$id/checkpoints/global_step_4/model_world_size_2_rank_0.pt ]]
  [[ $(tree_digest "$SHARED_ROOT/jobs/$old") == "$digest" ]]
}

@test "43 -- a user's own GRPO command line (main_ppo, their parquet and reward function; the night's my_grpo above): verl's TaskRunner steps on a worker, non-zero reward and actor gradient, actor checkpoints with weights; TensorBoard events and an MLflow file store in the job dir hold verl's step metrics" {
  local id
  id=$(recall grpo)
  assert_real_verl_ran "$id"
  # The line's data, reward function and loggers, its paths written out absolute.
  jq -e --arg r "$SHARED_ROOT" '.resolved | .workload == "grpo" and (.trainer_overrides
    | .["data.train_files"] == "\($r)/datasets/mine/train.parquet" and .["reward.custom_reward_function.path"] == "\($r)/user/code/my_reward.py"
      and .["reward.custom_reward_function.name"] == "my_score" and .["trainer.logger"] == "['"'"'console'"'"','"'"'tensorboard'"'"','"'"'mlflow'"'"']")' "$SHARED_ROOT/jobs/$id/config/job_spec.json" ||
    fail "job_spec.json: $(jq -c .resolved.trainer_overrides "$SHARED_ROOT/jobs/$id/config/job_spec.json")"
  # verl's step lines come from its TaskRunnerV1 actor (Ray's prefix names it,
  # with its ip when it is not on the driver's node), and its node is a worker.
  grep -qE $'(\x1b\\[[0-9;]*m)?\\(TaskRunnerV1 pid=[0-9]+(, ip=[0-9.]+)?\\)[^ ]* step:1 - ' "$(driver_log "$id")"
  local jd=$SHARED_ROOT/jobs/$id
  jq -en --slurpfile actors <(cat "$jd"/debug/*_final_actors.json) --slurpfile result "$jd/result.json" \
    '[$actors[0][] | select(.class_name == "TaskRunnerV1") | .node_id] as $n
     | ($n | length) == 1 and ($result[0].head_node_ids | index($n[0]) | not)'
  run steps "$id"
  assert_output "1 2 3 4"
  steps_json "$id" | jq -e '.[0] | ."critic/score/mean" > 0 and ."actor/grad_norm" > 0'
  local ckpt=$SHARED_ROOT/jobs/$id/checkpoints
  [[ $(<"$ckpt/latest_checkpointed_iteration.txt") == 4 ]]
  [[ -s $ckpt/global_step_2/actor/model_world_size_2_rank_1.pt && -s $ckpt/global_step_4/data.pt ]]
  tensorboard_holds_steps "$id"
  mlflow_holds_steps "$id"
}

@test "resume fidelity on real verl: the stopper SIGKILLs GRPO's trainer once verl logged step 3, --retry 1 resumes global_step_2 in a new directory, logs step 3 first and trains step 3's prompts again (check resumed); steps 3-4 lie within the band of the uninterrupted run above (check resume_fidelity); max_actor_ckpt_to_keep=1 holds across the chain and verl's removal of the killed job's checkpoint is the only change to that directory; tracking: one W&B offline run id across the chain, TensorBoard events and an MLflow file store in the job dirs hold verl's step metrics, a planted W&B key in no file" {
  local ref t0=$SECONDS
  ref=$(recall grpo)
  # The same command line as the user's job above, with a JobSpec that gives
  # the trackers' variables (W&B offline: no network; its key a private
  # variable), and verl's dump of each step's prompts into the job's own
  # checkpoint directory (the interpolation is verl's).
  local spec=$BATS_TEST_TMPDIR/wandb.yaml key=mvp-planted-wandb-key-5f0c1e9a line
  echo "env_vars: {WANDB_MODE: offline, WANDB_API_KEY: $key}" >"$spec"
  grpo_line
  # shellcheck disable=SC2016  # the ${...} is for verl (Hydra), not bash
  MVP_STOP_AT_STEP=3 run --separate-stderr mvp_script 43_submit_jobspec "$spec" --wait --retry 1 \
    --override trainer.max_actor_ckpt_to_keep=1 --override "trainer.logger=['tensorboard','wandb','mlflow']" \
    --override trainer.total_training_steps=$LINE_STEPS --override 'trainer.rollout_data_dir=${trainer.default_local_dir}/rollouts' -- "${line[@]}"
  echo "# interrupted real GRPO: chain ended after $((SECONDS - t0)) s" >&3
  assert_success
  local -a ids
  mapfile -t ids <<<"$output"
  local first=${ids[0]} id=${ids[0]}-r1
  assert_equal "${#ids[@]} ${ids[1]}" "2 $id"
  run job_json "$first" logs/interrupt.json '[.killed, .signal, .last_step_seen] | @tsv'
  assert_output $'true\tSIGKILL\t3'
  assert_equal "$(job_json "$first" result.json .status)" FAILED
  assert_equal "$(job_json "$id" config/job_spec.json .resolved.resumed_from)" "$first/global_step_2"
  assert_real_verl_ran "$id"
  grep -q "Resuming from $SHARED_ROOT/jobs/$first/checkpoints/global_step_2" "$(driver_log "$id")"
  run steps "$id"
  assert_output "3 4"
  # The check, on verl's own output: first step 3, and step 3's prompts are the killed job's step 3 prompts.
  run resumed_check "$id"
  assert_success
  jq -e --arg f "$first" '.passed == true and (.evidence | startswith("first logged step 3 = \($f)/global_step_2 + 1; the prompts of its 32 samples of step 3 are those \($f) trained at step 3"))' <<<"$output" ||
    fail "check resumed answered: $output"
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'import json, sys
from pathlib import Path
from mvp.nightly import resume_fidelity
from mvp.core.settings import read_contract
def band():  # the default of MVP_NIGHTLY_RESUME_BAND
    return dict(w.split("=") for w in next(e.default for e in read_contract() if e.name == "MVP_NIGHTLY_RESUME_BAND").split())
print(json.dumps({**resume_fidelity.check(Path(sys.argv[1]), sys.argv[3:], sys.argv[2], 3, band()), "band": band()}))' \
    "$SHARED_ROOT/jobs" "$ref" "$first" "$id"
  echo "# $(jq -r .evidence <<<"$output")" >&3
  # Each figure within the default band, the band as the contract declares it.
  jq -e '.band as $b | .passed == true and (.evidence | test("steps 3-4 vs .*: score: max .* \\(<= band \($b.score)\\); rerun steps 1-2 differ by [0-9.e-]+; grad_norm: max .* \\(<= band \($b.grad_norm)\\); rerun steps 1-2 differ by [0-9.e-]+; the chain keeps 1 complete checkpoint\\(s\\) \\(.*-r1/global_step_4\\), max_ckpt_to_keep 1$"))' <<<"$output" ||
    fail "resume_fidelity: $output"
  # verl's own files: the killed job's global_step_2 went once the retry had saved step 4 (verl 7395);
  # nothing else in that directory changed once its retry existed, and no forward link was written into it.
  [[ ! -e $SHARED_ROOT/jobs/$first/checkpoints/global_step_2 && -s $SHARED_ROOT/jobs/$id/checkpoints/global_step_4/actor/model_world_size_2_rank_0.pt ]]
  [[ -z $(find "$SHARED_ROOT/jobs/$first" -newer "$SHARED_ROOT/jobs/$id/config/job_spec.json" -type f) ]]
  [[ $(jq 'has("resumed_by")' "$SHARED_ROOT/jobs/$first/result.json") == false ]]
  tracked "$first" "$id" "$key"
}

# tensorboard_holds_steps ID: the job's TensorBoard events (written by verl's
# _TensorboardAdapter into TENSORBOARD_DIR, <job dir>/tracking/tensorboard)
# hold critic/score/mean at exactly the steps of verl's console lines, as they gave it.
tensorboard_holds_steps() {
  local id=$1 tb console
  tb=$("$MVP_REPO/.venv/bin/python" -c 'import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
acc.Reload()
print(json.dumps({e.step: e.value for e in acc.Scalars("critic/score/mean")}))' "$SHARED_ROOT/jobs/$id/tracking/tensorboard") ||
    { find "$SHARED_ROOT/jobs/$id/tracking" -maxdepth 3 >&3; fail "job $id: no TensorBoard critic/score/mean"; }
  console=$(steps_json "$id" | jq -c 'map({key: (.step | tostring), value: ."critic/score/mean"}) | from_entries')
  jq -e --argjson console "$console" '(keys | sort) == ($console | keys | sort)
    and all(to_entries[]; ((.value - $console[.key]) | fabs) <= 1e-6 * (1 + ($console[.key] | fabs)))' <<<"$tb" ||
    fail "TensorBoard critic/score/mean of $id: $tb; console: $console"
}

# mlflow_holds_steps ID: the job's MLflow file store (MLFLOW_TRACKING_URI,
# <job dir>/tracking/mlruns) holds critic/score/mean of each of verl's steps as the console gave it.
mlflow_holds_steps() {
  local id=$1 store s console
  store=$(echo "$SHARED_ROOT/jobs/$id"/tracking/mlruns/[0-9]*/*/metrics/critic/score/mean)
  [[ -f $store ]] || { find "$SHARED_ROOT/jobs/$id/tracking" -maxdepth 4 >&3; fail "job $id: no MLflow metric critic/score/mean"; }
  for s in $(steps "$id"); do
    console=$(step_metric "$id" "$s" critic/score/mean)
    [[ -n $console ]] || fail "job $id: no critic/score/mean on verl's step $s line"
    awk -v s="$s" -v c="$console" '$3 == s { d = $2 - c; if (d < 0) d = -d; ok = d <= 1e-6 * (1 + (c < 0 ? -c : c)) } END { exit !ok }' "$store" ||
      fail "MLflow critic/score/mean of $id step $s: $(cat "$store"); console: $console"
  done
}

# tracked FIRST RETRY KEY: the chain's tracking (helpers/mvp/jobs/planning/tracking.py) as
# real verl and wandb left it: console kept first in trainer.logger; each
# job's W&B offline run is the chain's one id (WANDB_RUN_ID, WANDB_RESUME=allow);
# the retry's TensorBoard events (written by verl's _TensorboardAdapter into
# TENSORBOARD_DIR) hold verl's steps 3 and 4 as its console lines gave them; each job's
# MLflow file store holds its steps as the console gave them; the key is
# in no file of either job (wandb's own files included) nor in the argv kept.
tracked() {
  local first=$1 retry=$2 key=$3 j
  run job_json "$first" config/job_spec.json '.resolved.trainer_overrides["trainer.logger"]'
  assert_output "['console','tensorboard','wandb','mlflow']"
  for j in "$first" "$retry"; do
    compgen -G "$SHARED_ROOT/jobs/$j/tracking/wandb/offline-run-*-$first/run-$first.wandb" >/dev/null ||
      { find "$SHARED_ROOT/jobs/$j/tracking" -maxdepth 3 >&3; fail "job $j: no W&B offline run with id $first"; }
  done
  tensorboard_holds_steps "$retry"
  for j in "$first" "$retry"; do mlflow_holds_steps "$j"; done
  run grep -rlF -- "$key" "$SHARED_ROOT/jobs/$first" "$SHARED_ROOT/jobs/$retry"
  assert_failure 1
}

@test "40 PPO trains an actor and a critic (GAE): verl's value loss, critic checkpoints beside the actor's" {
  run mvp_script 40_submit_ppo_epoch1 --wait --reward-fn user/code/shaped_gsm8k.py
  assert_success
  local id
  id=$(last_line)
  assert_real_verl_ran "$id"
  run steps "$id"
  assert_output "1 2 3"
  steps_json "$id" | jq -e 'all(.[]; ."critic/vf_loss" > 0 and ."actor/grad_norm" > 0)' 
  local ckpt=$SHARED_ROOT/jobs/$id/checkpoints/global_step_3
  [[ -s $ckpt/actor/model_world_size_2_rank_0.pt && -s $ckpt/critic/model_world_size_2_rank_0.pt ]]
}

@test "the preflight refuses, in one line and before anything exists, a GPU-profile job on this CPU-only cluster and an override verl 0.9.1 does not have" {
  local before
  before=$(ls "$SHARED_ROOT/jobs" | wc -l)
  # Each refusal's log of its own (the file's log is shared by every test):
  # one ERROR line, and it is the last.
  : >"$MVP_TEST_LOG.gpu"
  MVP_TEST_LOG=$MVP_TEST_LOG.gpu MVP_TRAINER_PROFILE=gpu run --separate-stderr mvp_script 41_submit_grpo_epoch1
  assert_failure
  [[ $(grep -c '^ERROR:' "$MVP_TEST_LOG.gpu") == 1 ]]
  tail -n 1 "$MVP_TEST_LOG.gpu" | grep -q "^ERROR: this cluster's nodes have no accelerator Ray detected"
  : >"$MVP_TEST_LOG.key"
  MVP_TEST_LOG=$MVP_TEST_LOG.key run mvp_script 41_submit_grpo_epoch1 --override actor_rollout_ref.rollout.nme=hf
  assert_failure
  [[ $(grep -c '^ERROR:' "$MVP_TEST_LOG.key") == 1 ]]
  tail -n 1 "$MVP_TEST_LOG.key" | grep -q "^ERROR: preflight: 'actor_rollout_ref.rollout.nme' is not a key of verl's config"
  [[ $(ls "$SHARED_ROOT/jobs" | wc -l) == "$before" ]]
}

# MVP_NIGHTLY_TOLERANCE of a control pair: a figure may move 100% (see the test).
LOOSE="step_s=100 throughput=100 final_score=100 best_score=100 final_loss=100 peak_memory_gb=100"

# upgrade_suite FILE: a one-job suite (job `up`: 42's SFT JobSpec, 2 steps),
# the nights across an upgrade run. SFT, not GRPO: its trainer is 2 Ray
# actors where GRPO's is 8, each a Python that imports torch and verl
# (seconds of CPU), so each of the 4 jobs costs about a third as much.
upgrade_suite() {
  printf 'jobs:\n  - name: up\n    spec: templates/jobspecs/sft.yaml\n    overrides: [trainer.total_training_steps=2]\n' >"$1"
}

@test "two real releases on one cluster, and the nightly across the upgrade: verl 0.9.0 (its wheel, pinned, unpacked) refuses an override 0.9.1 takes and takes one 0.9.1 refuses, each for its own job alone; a night on 0.9.0, then one on 0.9.1 with --control, each job SUCCEEDED importing its own snapshot; the report names the snapshot's and verl's change, the control ran 0.9.0 beside 0.9.1, and MVP_NIGHTLY_HISTORY_SINCE started a new history" {
  local t0=$SECONDS suite=$BATS_TEST_TMPDIR/suite.yaml night release
  upgrade_suite "$suite"
  # The preflight composes each job against its own snapshot's config.
  MVP_VERL_SRC=.mvp/cache/verl-0.9.0 CODE_ID=verl-0.9.0 mvp_script 31_snapshot_verl_code >/dev/null
  [[ $(cat "$SHARED_ROOT/common/code/verl/verl-0.9.0/verl/version/version") == 0.9.0 ]]
  for release in 0.9.0 0.9.1; do
    CODE_ID=verl-$release run --separate-stderr "$MVP_REPO/scripts/41_submit_grpo_epoch1.sh" --dry-run \
      --reward-fn user/code/shaped_gsm8k.py --override trainer.checkpoint_callback_class=null
    echo "$release checkpoint_callback_class $status" >>"$BATS_TEST_TMPDIR/verdicts"
    [[ $status == 0 ]] || [[ $(grep -c '^ERROR:' <<<"$stderr") == 1 && $stderr == *"trainer.checkpoint_callback_class"* ]]
    CODE_ID=verl-$release run --separate-stderr "$MVP_REPO/scripts/41_submit_grpo_epoch1.sh" --dry-run \
      --reward-fn user/code/shaped_gsm8k.py --override data.continuous_token.enable=false
    echo "$release continuous_token $status" >>"$BATS_TEST_TMPDIR/verdicts"
    [[ $status == 0 ]] || [[ $(grep -c '^ERROR:' <<<"$stderr") == 1 && $stderr == *"data.continuous_token"* ]]
  done
  run cat "$BATS_TEST_TMPDIR/verdicts"
  assert_output $'0.9.0 checkpoint_callback_class 1\n0.9.0 continuous_token 0\n0.9.1 checkpoint_callback_class 0\n0.9.1 continuous_token 1'
  # Three earlier good nights of `up`, far slower, in place of the file's history: the 0.9.0 night is judged against them.
  mkdir -p "$SHARED_ROOT/regressions"
  jq -n '[range(3) | {run_id: "nightly-2026010\(. + 1)T023000Z", passed: true, started_at: "2026-01-0\(. + 1)T02:30:00Z",
    jobs: {up: {status: "SUCCEEDED", duration_s: 9999, failed_checks: [], judged: {},
                figures: {step_s: 1000, throughput: 0.001, peak_memory_gb: 1000, duration_s: 9999}}}}]' \
    >"$SHARED_ROOT/regressions/history.json"
  MVP_NIGHTLY_SUITE=$suite MVP_NIGHTLY_RESUME='' MVP_VERL_SRC=.mvp/cache/verl-0.9.0 CODE_ID=verl-0.9.0 \
    run --separate-stderr mvp_script 60_nightly_regression
  echo "# the 0.9.0 night: $((SECONDS - t0)) s" >&3
  assert_success
  local old new
  old=$(ls -d "$SHARED_ROOT"/regressions/nightly-* | tail -n 1)
  jq -e '.passed and .code_id == "verl-0.9.0" and ([.jobs[] | .checks[] | select(.name == "regression") | .passed] == [true])' "$old/report.json"
  # The upgrade, intended: tonight's history starts here.
  local since
  since=nightly-$(date -u +%Y%m%dT%H%M%SZ)
  sleep 1
  t0=$SECONDS
  # The control pair is judged as 61 judges a probe against GOOD: here at 100% (LOOSE), since a 2-step
  # probe's seconds and CPU "peak memory" are this loaded machine's (the rehearsal's pair at 10% said
  # "code worse than its control" of the same release pair); what this test shows is that it ran.
  MVP_NIGHTLY_SUITE=$suite MVP_NIGHTLY_RESUME='' MVP_NIGHTLY_HISTORY_SINCE=$since CODE_ID=verl-0.9.1 \
    MVP_NIGHTLY_TOLERANCE=$LOOSE run --separate-stderr mvp_script 60_nightly_regression --control
  echo "# the 0.9.1 night with its control pair: $((SECONDS - t0)) s" >&3
  assert_success
  new=$(ls -d "$SHARED_ROOT"/regressions/nightly-* | tail -n 1)
  [[ $new != "$old" ]]
  # Each night's job ran its own release's tree, as its driver log shows (the judge's import check).
  for night in "$old:0.9.0" "$new:0.9.1"; do
    release=${night##*:} night=${night%:*}
    local id
    id=$(jq -r '.jobs[0].submission_id' "$night/report.json")
    [[ $(job_json "$id" result.json .status) == SUCCEEDED ]]
    grep -q "^MVP_PRECHECK_VERL_FILE=$SHARED_ROOT/common/code/verl/verl-$release/verl/__init__.py$" "$(driver_log "$id")"
    grep -q "^MVP_PRECHECK_MARKER=verl-$release$" "$(driver_log "$id")"
    jq -e '[.jobs[0].checks[] | select(.name == "import_from_code_path") | .passed] == [true] and .jobs[0].metrics.steps >= 2' \
      "$night/report.json"
  done
  # The report names what changed since the last good night: the snapshot and its verl release.
  grep -q "^## What changed since the last good night ($(basename "$old"))" "$new/report.md"
  grep -q '^- snapshot.id verl-0.9.0 -> verl-0.9.1$' "$new/report.md"
  grep -q '^- snapshot.verl 0.9.0 -> 0.9.1$' "$new/report.md"
  # The control pair: the last good night's snapshot (0.9.0) beside tonight's (0.9.1), both trained.
  run jq -r '.control | "\(.run_id) \(.control.code_id) \(.candidate.code_id) \(.control.status) \(.candidate.status)"' "$new/report.json"
  assert_output "$(basename "$old") verl-0.9.0 verl-0.9.1 SUCCEEDED SUCCEEDED"
  # A new history: the 0.9.0 night and the seeded ones are before it, so tonight is not judged yet.
  run jq -r '.jobs[0].checks[] | select(.name == "regression") | "\(.passed) \(.evidence)"' "$new/report.json"
  assert_output --regexp '^null s/step [0-9.]+: not judged yet \(0 good nights in history'
}
