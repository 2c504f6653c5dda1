#!/usr/bin/env bats
# The preflight (helpers/mvp/jobs/planning/preflight.py): a job's overrides composed with
# Hydra against its snapshot's own verl config, on the real verl 0.9.1 tree
# (.mvp/cache/verl-0.9.1, unpacked from the PyPI wheel by `make setup`) and on
# the stand-in's test tree. Refusals are one ERROR line and exit 1.

setup_file() {
  load ../test_helper/common
  export REAL=$MVP_REPO/.mvp/cache/verl-0.9.1 TEST_TREE=$MVP_REPO/.mvp/cache/verl-0.9.1-standin
  local tree
  for tree in "$REAL" "$TEST_TREE"; do
    [[ -f $tree/verl/trainer/config/ppo_trainer.yaml ]] || { echo "no $tree; run make setup" >&3; return 1; }
  done
  # The runbook templates' own overrides, as KEY=VALUE lines.
  local w
  for w in ppo grpo sft; do
    "$MVP_REPO/.venv/bin/python" - "$MVP_REPO/templates/jobspecs/$w.yaml" >"$BATS_FILE_TMPDIR/$w.overrides" <<'PY'
import sys, yaml
for k, v in (yaml.safe_load(open(sys.argv[1]))["trainer_overrides"] or {}).items():
    print(f"{k}={str(v).lower() if isinstance(v, bool) else v}")
PY
  done
}

setup() {
  load ../test_helper/common
  export CACHE=$BATS_FILE_TMPDIR/cache
}

preflight() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -m mvp.jobs.planning.preflight --cache-dir "$CACHE" "$@"
}

# template_args WORKLOAD: the template's overrides in the array ARGS.
template_args() {
  mapfile -t ARGS <"$BATS_FILE_TMPDIR/$1.overrides"
}

@test "preflight: real verl 0.9.1 accepts the templates' overrides; config names read from each entrypoint's @hydra.main" {
  template_args ppo
  run preflight "$REAL" verl.trainer.main_ppo --label real-0.9.1 "${ARGS[@]}" "trainer.logger=['console']" \
    "data.train_files=/shared root/datasets/gsm8k/train.parquet" "hydra.run.dir=/shared root/jobs/x/hydra"
  assert_success
  assert_output --regexp "^preflight: config 'ppo_trainer' accepts every override"
  template_args grpo
  run preflight "$REAL" verl.trainer.main_ppo "${ARGS[@]}" algorithm.adv_estimator=grpo
  assert_success
  template_args sft
  run preflight "$REAL" verl.trainer.sft_trainer_ray "${ARGS[@]}" model.path=/m data.messages_key=messages
  assert_success
  assert_output --regexp "^preflight: config 'sft_trainer_engine' accepts every override"
}

@test "preflight: an unknown key is one ERROR line with the key, the closest real keys, the snapshot and the config" {
  run preflight "$REAL" verl.trainer.main_ppo --label real-0.9.1 trainer.nnodes=2 trainer.nnode=2
  assert_failure 1
  assert_output "ERROR: preflight: 'trainer.nnode' is not a key of verl's config (snapshot real-0.9.1, config 'ppo_trainer'); closest real keys: trainer.nnodes, trainer.logger, trainer.device; fix the name, or write +trainer.nnode=2 to add a key verl really reads"
  # verl's SFT config has no critic: a PPO key in an SFT job is caught too.
  run preflight "$REAL" verl.trainer.sft_trainer_ray --label real-0.9.1 critic.optim.lr=1e-5
  assert_failure 1
  assert_output --partial "'critic.optim.lr' is not a key of verl's config (snapshot real-0.9.1, config 'sft_trainer_engine')"
  assert_equal "${#lines[@]}" 1
}

@test "preflight: '+' on a key the config has is refused, as Hydra refuses it; '+' on a new key and '++' pass" {
  run preflight "$REAL" verl.trainer.main_ppo --label real-0.9.1 +trainer.nnodes=2
  assert_failure 1
  assert_output "ERROR: preflight: '+trainer.nnodes' adds a key that verl's config already has (snapshot real-0.9.1, config 'ppo_trainer'); closest real keys: trainer.nnodes; drop the '+' to set it"
  run preflight "$REAL" verl.trainer.main_ppo +mvp_standin.fail_at_step=3 ++trainer.nnodes=2 ++trainer.brand_new=1
  assert_success
}

@test "preflight: a value Hydra's override grammar refuses is named with its key" {
  run preflight "$REAL" verl.trainer.main_ppo --label real-0.9.1 'trainer.experiment_name=run $(date)'
  assert_failure 1
  assert_output --partial "ERROR: preflight: Hydra refuses the override 'trainer.experiment_name=run \$(date)': mismatched input '('"
  assert_output --partial "closest real keys: trainer.experiment_name"
  run preflight "$REAL" verl.trainer.main_ppo trainer.nnodes=1,2
  assert_failure 1
  assert_output --partial "Hydra refuses the override 'trainer.nnodes=1,2': a comma outside brackets is a sweep"
  # Quoted, the same characters are a plain string.
  run preflight "$REAL" verl.trainer.main_ppo "trainer.experiment_name='run \$(date); x'"
  assert_success
}

@test "preflight: a config-group override gets a full Hydra compose: an option that exists passes, a missing one lists the options" {
  run preflight "$REAL" verl.trainer.main_ppo model_engine=megatron
  assert_success
  assert_output --partial "(full Hydra compose,"
  run preflight "$REAL" verl.trainer.main_ppo --label real-0.9.1 model_engine=nope
  assert_failure 1
  assert_output "ERROR: preflight: In 'ppo_trainer': Could not find 'model_engine/nope'; options: dp, megatron, torchtitan, veomni (snapshot real-0.9.1, config 'ppo_trainer')"
}

@test "preflight: the stand-in's test tree gives the same verdicts (it carries verl's real config)" {
  template_args ppo
  run preflight "$TEST_TREE" verl.trainer.main_ppo "${ARGS[@]}"
  assert_success
  run preflight "$TEST_TREE" verl.trainer.main_ppo --label standin trainer.no_such=1
  assert_failure 1
  assert_output --partial "'trainer.no_such' is not a key of verl's config (snapshot standin, config 'ppo_trainer')"
}

# A tree whose entrypoint would fail if imported and whose config has a name
# the runbook never uses: only reading the decorator finds it.
make_tiny_tree() {
  local tree=$1
  mkdir -p "$tree/verl/trainer/config/sub"
  cat >"$tree/verl/trainer/main_ppo.py" <<'PY'
raise SystemExit("the preflight imported the entrypoint")
import hydra


@hydra.main(config_path="config", config_name="tiny", version_base=None)
def main(config):
    pass
PY
  printf 'defaults:\n  - sub: one\n  - _self_\na:\n  b: 1\n' >"$tree/verl/trainer/config/tiny.yaml"
  printf 'x: 1\n' >"$tree/verl/trainer/config/sub/one.yaml"
}

@test "preflight: the config name is read from @hydra.main with ast; the entrypoint is never imported" {
  make_tiny_tree "$BATS_TEST_TMPDIR/tiny"
  run preflight "$BATS_TEST_TMPDIR/tiny" verl.trainer.main_ppo a.b=2 sub.x=3
  assert_success
  assert_output --regexp "^preflight: config 'tiny' accepts every override"
  refute_output --partial "imported the entrypoint"
  run preflight "$BATS_TEST_TMPDIR/tiny" verl.trainer.main_ppo --label tiny a.c=1
  assert_failure 1
  assert_output --partial "'a.c' is not a key of verl's config (snapshot tiny, config 'tiny'); closest real keys: a.b"
}

@test "preflight: derived once, then answered from the cache in under 0.3 s; an edited config is noticed" {
  make_tiny_tree "$BATS_TEST_TMPDIR/tiny"
  run preflight "$BATS_TEST_TMPDIR/tiny" verl.trainer.main_ppo a.b=2
  assert_success
  assert_output --partial "keys derived now"
  run preflight "$BATS_TEST_TMPDIR/tiny" verl.trainer.main_ppo a.b=2
  assert_success
  assert_output --regexp "cached keys, [0-9]+ ms"
  local ms
  ms=$(sed -E 's/.*cached keys, ([0-9]+) ms.*/\1/' <<<"$output")
  ((ms < 300))
  # The real 0.9.1 config, cached by the tests above: also well under the budget.
  run preflight "$REAL" verl.trainer.main_ppo trainer.nnodes=2
  ms=$(sed -E 's/.*cached keys, ([0-9]+) ms.*/\1/' <<<"$output")
  ((ms < 300))
  printf 'a:\n  b: 1\n  c: 2\n' >"$BATS_TEST_TMPDIR/tiny/verl/trainer/config/tiny.yaml.new"
  printf 'defaults:\n  - sub: one\n  - _self_\n' | cat - "$BATS_TEST_TMPDIR/tiny/verl/trainer/config/tiny.yaml.new" \
    >"$BATS_TEST_TMPDIR/tiny/verl/trainer/config/tiny.yaml"
  run preflight "$BATS_TEST_TMPDIR/tiny" verl.trainer.main_ppo a.c=3
  assert_success
  assert_output --partial "keys derived now"
}

@test "preflight: where the reward function is read: reward.custom_reward_function in 0.9.1, the top-level key in older verl" {
  run --separate-stderr preflight "$REAL" verl.trainer.main_ppo --reward-key
  assert_success
  assert_output reward.custom_reward_function
  # An older verl: the reward group without custom_reward_function.
  local old=$BATS_TEST_TMPDIR/old
  mkdir -p "$old/verl"
  cp -r "$REAL/verl/trainer" "$old/verl/trainer"
  "$MVP_REPO/.venv/bin/python" - "$old/verl/trainer/config/reward/reward.yaml" <<'PY'
import re, sys
p = sys.argv[1]
text = open(p).read()
new = re.sub(r"(?m)^custom_reward_function:\n(?:[ #].*\n|\n)*?(?=^\S)", "", text)
assert new != text
open(p, "w").write(new)
PY
  run --separate-stderr preflight "$old" verl.trainer.main_ppo --reward-key
  assert_success
  assert_output custom_reward_function
  run --separate-stderr preflight "$REAL" verl.trainer.sft_trainer_ray --reward-key
  assert_output none
}

# rl_parquet FILE SOURCE...: a small RL parquet of the runbook's own GSM8K
# rows (helpers/mvp/data/gsm8k.py), one row under each data_source given.
rl_parquet() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$@" <<'PY'
import sys
import pyarrow as pa, pyarrow.parquet as pq
from mvp.data import gsm8k
sources = sys.argv[2:]
rows = [gsm8k.rl_rows("train", [row], source)[0][0] for row, source in zip(gsm8k.synthetic("train", len(sources)), sources)]
pq.write_table(pa.Table.from_pylist(rows, schema=gsm8k.rl_schema()), sys.argv[1])
PY
}

# reward_check CODE_PATH FILE [KEY=VALUE...]: which reward serves FILE's data
# sources (helpers/mvp/jobs/planning/rewards.py), as the plan asks with the job's
# final overrides; its lines on stdout, a refusal as its ERROR line (exit 1).
reward_check() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$CACHE" "$@" <<'PY'
import sys
from pathlib import Path
from mvp.jobs.planning import rewards
from mvp.worker.errors import MvpError
cache, code, data, *sets = sys.argv[1:]
try:
    for line in rewards.check([("dataset.train", Path(data))], dict(s.split("=", 1) for s in sets), Path(code),
                              Path(code).name, Path(cache)):
        print(line)
except MvpError as exc:
    print(f"ERROR: {exc}")
    sys.exit(1)
PY
}

# scorer_tree DIR PYTHON: DIR/verl/utils/reward_score/__init__.py made from
# real 0.9.1's with the Python expression PYTHON applied to its text `t`.
scorer_tree() {
  mkdir -p "$1/verl/utils/reward_score"
  "$MVP_REPO/.venv/bin/python" - "$REAL/verl/utils/reward_score/__init__.py" "$1/verl/utils/reward_score/__init__.py" \
    "$2" <<'PY'
import sys
t = open(sys.argv[1]).read()
new = eval(sys.argv[3])
assert new != t, "the edit changed nothing"
open(sys.argv[2], "w").write(new)
PY
}

@test "preflight reward: a data_source no reward serves (the synthetic GSM8K's) is one ERROR line naming it, its file, the snapshot's default_compute_score and --reward-fn" {
  local data=$BATS_TEST_TMPDIR/train.parquet
  rl_parquet "$data" mvp/synthetic-arithmetic openai/gsm8k mvp/synthetic-arithmetic
  run reward_check "$REAL" "$data"
  assert_failure 1
  assert_output "ERROR: reward: no reward function serves data_source 'mvp/synthetic-arithmetic' (dataset.train train.parquet): the job names none and snapshot verl-0.9.1's verl/utils/reward_score/__init__.py:19 default_compute_score knows only openai/gsm8k, lighteval/MATH, DigitalLearningGmbH/MATH-lighteval, HuggingFaceH4/MATH-500 and 22 more, raising NotImplementedError for any other in every rollout; give the job its reward function: --reward-fn FILE[:NAME] with FILE under user/code/ (the JobSpec's reward_fn_path), e.g. templates/rewards/shaped_gsm8k.py copied there"
  # Answered from the cache the second time: the same line.
  run reward_check "$REAL" "$data"
  assert_failure 1
  assert_output --partial "no reward function serves data_source 'mvp/synthetic-arithmetic'"
}

@test "preflight reward: a reward function serves every data source (either key verl reads it from); verl 0.9.1's own default serves openai/gsm8k and aime*" {
  local data=$BATS_TEST_TMPDIR/train.parquet
  rl_parquet "$data" mvp/synthetic-arithmetic
  run reward_check "$REAL" "$data" reward.custom_reward_function.path=/shared/user/code/shaped_gsm8k.py
  assert_success
  assert_output "reward: data_source mvp/synthetic-arithmetic scored by the job's reward function (reward.custom_reward_function.path)"
  run reward_check "$REAL" "$data" +custom_reward_function.path=/x.py
  assert_success
  # A path set to null is no reward function.
  run reward_check "$REAL" "$data" reward.custom_reward_function.path=null
  assert_failure 1
  rl_parquet "$data" openai/gsm8k aime2024
  run reward_check "$REAL" "$data"
  assert_success
  assert_output "reward: data_source aime2024, openai/gsm8k scored by snapshot verl-0.9.1's verl/utils/reward_score/__init__.py:19 default_compute_score"
}

@test "preflight reward: the data sources are read from the job's own snapshot: one whose default_compute_score names mvp/synthetic-arithmetic serves it" {
  local tree=$BATS_TEST_TMPDIR/forked data=$BATS_TEST_TMPDIR/train.parquet
  scorer_tree "$tree" 't.replace("if data_source == \"openai/gsm8k\":", "if data_source in (\"openai/gsm8k\", \"mvp/synthetic-arithmetic\"):")'
  rl_parquet "$data" mvp/synthetic-arithmetic
  run reward_check "$tree" "$data"
  assert_success
  assert_output "reward: data_source mvp/synthetic-arithmetic scored by snapshot forked's verl/utils/reward_score/__init__.py:19 default_compute_score"
  run reward_check "$REAL" "$data"
  assert_failure 1
}

@test "preflight reward: a default_compute_score that cannot be read statically (a name looked up elsewhere, a file that does not parse, none at all) is not refused; a line says why" {
  local data=$BATS_TEST_TMPDIR/train.parquet
  rl_parquet "$data" mvp/synthetic-arithmetic
  scorer_tree "$BATS_TEST_TMPDIR/lookup" 't.replace("if data_source == \"openai/gsm8k\":", "if data_source in KNOWN_SOURCES:")'
  run reward_check "$BATS_TEST_TMPDIR/lookup" "$data"
  assert_success
  assert_output "reward: data_source mvp/synthetic-arithmetic not checked: snapshot lookup's verl/utils/reward_score/__init__.py line 44 tests data_source as \`data_source in KNOWN_SOURCES\`, so the preflight cannot tell which data sources verl's default reward serves"
  scorer_tree "$BATS_TEST_TMPDIR/broken" 't.replace("def default_compute_score(", "def default_compute_score((")'
  run reward_check "$BATS_TEST_TMPDIR/broken" "$data"
  assert_success
  assert_output --regexp "not checked: snapshot broken's verl/utils/reward_score/__init__.py does not parse \(.+\), so the preflight cannot tell"
  mkdir -p "$BATS_TEST_TMPDIR/none/verl"
  run reward_check "$BATS_TEST_TMPDIR/none" "$data"
  assert_success
  assert_output --partial "not checked: snapshot none's verl/utils/reward_score/__init__.py does not exist"
}
