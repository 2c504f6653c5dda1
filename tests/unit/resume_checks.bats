#!/usr/bin/env bats
# The resume checks' rules on job directories made here (no cluster): the
# step the nightly draws, the SFT epoch boundary (verl 7401) and its fix,
# max_ckpt_to_keep across a chain (verl 7395). The integration tier runs them
# on real jobs (tests/integration/resume_fidelity.bats).

setup() {
  load ../test_helper/common
  JOBS=$BATS_TEST_TMPDIR/jobs
  mkdir -p "$JOBS"
}

py() { PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c "$@"; }

# job ID WORKLOAD RESUMED_FROM OVERRIDES_JSON STEPS: a job directory with a
# driver log of STEPS step lines (SFT: behind tqdm's bar of 3 steps per epoch).
job() {
  local d=$JOBS/$1 s
  mkdir -p "$d/config" "$d/logs" "$d/checkpoints"
  jq -n --arg w "$2" --arg r "$3" --argjson o "$4" '{resolved: {workload: $w, resumed_from: $r, trainer_overrides: $o}}' \
    >"$d/config/job_spec.json"
  for ((s = 1; s <= $5; s++)); do
    printf 'Epoch 1/2:  33%%|###  | %d/3 [00:01<00:02, 1.00s/it]step:%d - train/loss:1.0 - train/grad_norm:1.0\n' "$s" "$s"
  done >"$d/logs/driver.log"
}

# ckpt ID STEP: a complete checkpoint (shards) and the tracker at STEP.
ckpt() {
  mkdir -p "$JOBS/$1/checkpoints/global_step_$2"
  : >"$JOBS/$1/checkpoints/global_step_$2/model_world_size_1_rank_0.pt"
  echo "$2" >"$JOBS/$1/checkpoints/latest_checkpointed_iteration.txt"
}

@test "stop-step draws between the reference's save_freq and its last step but one, and refuses in one line a reference with no such step" {
  job ref ppo "" '{"trainer.save_freq": "2"}' 6
  run py 'import random, sys
from pathlib import Path
from mvp.nightly import resume_fidelity
print(sorted({resume_fidelity.stop_step(Path(sys.argv[1]), "ref", random.Random(n))[0] for n in range(200)}))' "$JOBS"
  assert_output "[2, 3, 4, 5]"
  job short ppo "" '{"trainer.save_freq": "10"}' 6
  run py 'import sys
from pathlib import Path
from mvp.worker.errors import MvpError
from mvp.nightly import resume_fidelity
try:
    resume_fidelity.stop_step(Path(sys.argv[1]), "short")
except MvpError as e:
    print(e)' "$JOBS"
  assert_output "resume fidelity: the reference short logged 6 steps with trainer.save_freq=10: no step after its first checkpoint and before its last step to interrupt at; give the job more steps or a smaller save_freq (MVP_NIGHTLY_OVERRIDES)"
}

@test "SFT epoch boundary (verl 7401): step 3 of 3 per epoch (from verl's bar) is refused citing the issue, step 4 is not, nor step 3 on a snapshot with the fix" {
  job sft1 sft "" '{}' 6
  local code=$BATS_TEST_TMPDIR/code
  mkdir -p "$code/verl/utils/checkpoint"
  echo "def load_checkpoint(self): pass" >"$code/verl/utils/checkpoint/checkpoint_handler.py"
  local check='import sys
from pathlib import Path
from mvp.jobs.planning import epoch_boundary
from mvp.worker.errors import MvpError
from mvp.worker.jobdir import JobDir
try:
    epoch_boundary.check(JobDir(sys.argv[1]), int(sys.argv[2]), "sft1/global_step_" + sys.argv[2], Path(sys.argv[3]))
    print("resumable")
except MvpError as e:
    print(e)'
  run py "$check" "$JOBS/sft1" 3 "$code"
  assert_output "--resume-from sft1/global_step_3: step 3 ends epoch 1 (3 steps per epoch); verl resumes SFT from an epoch-boundary checkpoint by skipping the next epoch and exiting 0 having trained nothing (verl #7401, https://github.com/verl-project/verl/issues/7401): resume from a mid-epoch checkpoint (a save_freq that is not a multiple of the steps per epoch) or start a new job"
  run py "$check" "$JOBS/sft1" 4 "$code"
  assert_output resumable
  echo "def load_checkpoint(self, steps_per_epoch=None): pass" >"$code/verl/utils/checkpoint/checkpoint_handler.py"
  run py "$check" "$JOBS/sft1" 3 "$code"
  assert_output resumable
}

@test "max_ckpt_to_keep across a chain (verl 7395): the newest N complete checkpoints of the chain stay, older ones in earlier jobs go; none without the limit or for a job resumed from nothing" {
  job a sft "" '{"trainer.max_ckpt_to_keep": "2"}' 4
  ckpt a 2
  ckpt a 4
  job a-r1 sft "a/global_step_4" '{"trainer.max_ckpt_to_keep": "2"}' 2
  ckpt a-r1 6
  local enforce='import sys
from pathlib import Path
from mvp.jobs.planning import ckpt_keep
print(" ".join(f"{p.parent.parent.name}/{p.name}" for p in ckpt_keep.enforce(Path(sys.argv[1]), sys.argv[2])))'
  run py "$enforce" "$JOBS" a
  assert_output ""
  run --separate-stderr py "$enforce" "$JOBS" a-r1
  assert_output "a/global_step_2"
  # shellcheck disable=SC2154  # $stderr is set by bats' run --separate-stderr
  [[ $stderr == *"job a-r1: trainer.max_ckpt_to_keep=2 across its chain (verl issue 7395): removed a/global_step_2" ]]
  [[ ! -e $JOBS/a/checkpoints/global_step_2 && -d $JOBS/a/checkpoints/global_step_4 && -d $JOBS/a-r1/checkpoints/global_step_6 ]]
  # Without the limit (verl's default null) nothing goes.
  job b ppo "" '{}' 2
  ckpt b 2
  job b-r1 ppo "b/global_step_2" '{"trainer.max_actor_ckpt_to_keep": "null"}' 2
  ckpt b-r1 4
  run py "$enforce" "$JOBS" b-r1
  assert_output ""
  [[ -d $JOBS/b/checkpoints/global_step_2 ]]
}

# chain_sft LOGGED: ref (6 SFT steps), k (steps 1..LOGGED logged, SIGKILLed,
# FAILED, its global_step_4 saved) and k-r1 (resumed from it: steps 5 and 6).
chain_sft() {
  job ref sft "" '{}' 6
  job k sft "" '{}' "$1"
  jq -n '{killed: true, signal: "SIGKILL", last_step_seen: 3}' >"$JOBS/k/logs/interrupt.json"
  echo '{"status": "FAILED"}' >"$JOBS/k/result.json"
  ckpt k 4
  job k-r1 sft k/global_step_4 '{}' 6
  sed -i '1,4d' "$JOBS/k-r1/logs/driver.log"
  echo '{"status": "SUCCEEDED"}' >"$JOBS/k-r1/result.json"
  run py 'import json, sys
from pathlib import Path
from mvp.nightly import resume_fidelity
print(json.dumps(resume_fidelity.check(Path(sys.argv[1]), ["k", "k-r1"], "ref", 3, {"loss": 0.05, "grad_norm": 0.05})))' "$JOBS"
}

@test "resume_fidelity: a kill between verl's checkpoint save and its log line (ray_trainer.py:1712, then :1802) leaves the checkpoint's step unlogged and passes; a step before it missing fails" {
  chain_sft 3
  jq -e '.passed == true' <<<"$output" || fail "a chain killed after saving step 4, before logging it: $output"
  chain_sft 2
  jq -e '.passed == false and (.evidence | startswith("steps differ from ref'"'"'s: before the checkpoint [1, 2], resumed [5, 6]"))' <<<"$output" ||
    fail "a chain whose killed job lacks step 3: $output"
}
