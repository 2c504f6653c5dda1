#!/usr/bin/env bats
# A verl command line as a job (43's `-- python3 -m MODULE [--config-name N]
# KEY=VALUE...`, or a JobSpec's `entrypoint:`): the workload known from the
# module, the user's keys over the runbook's defaults, the runbook's own keys
# refused, each path checked as a JobSpec's, the preflight against the config
# the module's @hydra.main (or --config-name) names. The snapshot is real verl
# 0.9.1 (its verl/ from .mvp/cache, made by `make setup`); `submit
# --check-only` writes nothing.

setup_file() {
  load ../test_helper/common
  mvp_preflight_facts "$BATS_FILE_TMPDIR/preflight" || { echo "no preflight facts of real verl; run make setup" >&3; return 1; }
}

setup() {
  load ../test_helper/common
  export SHARED_ROOT="$BATS_TEST_TMPDIR/shared root" MVP_WORKERS=2 MVP_GPUS_PER_WORKER=4
  export MVP_DASHBOARD_URL=http://127.0.0.1:1 CODE_ID="" MVP_JOB_ENV_NAMES="" MVP_TRAINER_PROFILE=gpu MVP_CLUSTER_NAME=unit MVP_LOG_SYNC_SECONDS=30 MVP_STOP_AT_STEP=""
  mkdir -p "$SHARED_ROOT/user/code"
  mvp_check_root m "$BATS_FILE_TMPDIR/preflight" "$BATS_FILE_TMPDIR/data"
  printf 'def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n' \
    >"$SHARED_ROOT/user/code/reward.py"
  PPO=(python3 -m verl.trainer.main_ppo data.train_files=datasets/gsm8k/train.parquet
    actor_rollout_ref.model.path=common/models/m)
}

# cmd SPEC_TEXT WORD...: `submit --check-only` of a verl command line (and
# the JobSpec text, may be empty), as scripts/lib/submit.sh sends them.
cmd() {
  local spec=$1 word; shift
  local -a words=()
  for word in "$@"; do words+=("--command-word=$word"); done
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -m mvp submit --via cli --check-only \
    --jobspec-name "the command line" --ray-config-name dev.yaml "${words[@]}" \
    < <(printf '%s\0%s' "$spec" "$(<"$MVP_REPO/templates/configs/dev.yaml")")
}

# spec_check SPEC_TEXT: `submit --check-only` of a JobSpec alone.
spec_check() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -m mvp submit --via cli --check-only \
    --jobspec-name spec.yaml --ray-config-name dev.yaml < <(printf '%s\0%s' "$1" "$(<"$MVP_REPO/templates/configs/dev.yaml")")
}

# refused WORD...: the command line is refused with exactly one ERROR line, and no job directory exists.
refused() {
  run cmd "" "$@"
  assert_failure
  [[ ${#lines[@]} == 1 && ${lines[0]} == "ERROR: "* ]] || { printf 'want one ERROR line, got:\n%s\n' "$output"; return 1; }
  [[ ! -e $SHARED_ROOT/jobs ]]
}

@test "43's parser: the words after -- are the command line's, untouched (its own --dry-run, --help, \$, spaces); without the entry -- is refused" {
  run bash -c 'source "$1/scripts/lib/common.sh"
    mvp::flags::spec "[JOBSPEC]  x" "--wait  w" "-- COMMAND...  c"
    mvp::flags::parse s.yaml --wait -- python3 -m m --dry-run -h "a=x y" "b=\$(z)" -- --wait
    printf "<%s>" "${MVP_ARGS[@]}" "|" "${MVP_COMMAND[@]}"; echo " ${MVP_FLAG[--wait]} $MVP_DRY_RUN"
    mvp::flags::synopsis | head -1' _ "$MVP_REPO"
  assert_success
  assert_line --index 0 '<s.yaml><|><python3><-m><m><--dry-run><-h><a=x y><b=$(z)><--><--wait> 1 0'
  assert_line --index 1 'Usage: scripts/_ [JOBSPEC] [FLAGS] [-- COMMAND...]'
  run bash -c 'source "$1/scripts/lib/common.sh"; mvp::flags::spec "[JOBSPEC]  x"; mvp::flags::parse s.yaml -- a' _ "$MVP_REPO"
  assert_failure
  assert_output "ERROR: unknown argument '--'; see --help"
}

@test "43's submit: each command word reaches the helper as one --command-word=WORD argument, and no JobSpec text is sent" {
  run bash -c 'source "$1/scripts/lib/common.sh"
    mvp::flags::spec "[JOBSPEC]  x" "${MVP_SUBMIT_FLAGS[@]}" "-- COMMAND...  c"
    mvp::flags::parse --wait -- python3 -m m "k=it'"'"'s a, [b] \$x" -cn n
    MVP_DRY_RUN=0 MVP_REPO=$1
    mvp::rt::node_is_up() { return 0; }
    mvp::helper::run() { { printf "<%s>" "$@"; echo; od -An -c | tr -s " " | head -1; } >&2; echo submission_id=x; }
    mvp::submit::run cli "" ""' _ "$MVP_REPO"
  assert_success
  assert_line --index 0 "<submit><--via><cli><--command-word=python3><--command-word=-m><--command-word=m><--command-word=k=it's a, [b] \$x><--command-word=-cn><--command-word=n><--jobspec-name><the command line><--ray-config-name><$MVP_REPO/templates/configs/dev.yaml>"
  # stdin: no JobSpec, the NUL, then the Ray config.
  assert_line --index 1 --regexp '^ \\0 # '
}

@test "command line: main_ppo with adv_estimator=grpo is grpo; the user's keys win over the defaults; paths relative to the shared root are written out" {
  run --separate-stderr cmd "" "${PPO[@]}" algorithm.adv_estimator=grpo trainer.save_freq=3 "trainer.logger=['console','tensorboard']" \
    actor_rollout_ref.rollout.n=2
  assert_success
  local r
  r=$(jq -c .resolved <<<"$output")
  jq -e '.workload == "grpo" and .trainer_module == "verl.trainer.main_ppo" and .trainer_args == [] and .workdir == ""' <<<"$r"
  jq -e '(.submission_id | startswith("grpo-")) and .trainer_overrides["trainer.save_freq"] == "3"' <<<"$r"
  jq -e '.trainer_overrides["trainer.logger"] == "['"'console','tensorboard'"']" and .trainer_overrides["actor_rollout_ref.rollout.n"] == "2"' <<<"$r"
  jq -e --arg root "$SHARED_ROOT" '.trainer_overrides["data.train_files"] == "\($root)/datasets/gsm8k/train.parquet"
    and .trainer_overrides["actor_rollout_ref.model.path"] == "\($root)/common/models/m"' <<<"$r"
  # The runbook's own: where it writes and the cluster's shape.
  jq -e --arg d "$SHARED_ROOT/jobs/" '(.trainer_overrides["trainer.default_local_dir"] | startswith($d))
    and (.trainer_overrides["hydra.run.dir"] | startswith($d)) and .trainer_overrides["trainer.nnodes"] == "2"
    and .trainer_overrides["trainer.n_gpus_per_node"] == "4"' <<<"$r"
  # The parquet were checked as verl reads them.
  [[ $stderr == *"preflight: dataset.train"* ]]
}

@test "command line: main_ppo without adv_estimator=grpo is ppo, the SFT module is sft, each with its own config" {
  run --separate-stderr cmd "" "${PPO[@]}" algorithm.adv_estimator=gae
  assert_success
  jq -e '.resolved.workload == "ppo"' <<<"$output"
  run --separate-stderr cmd "" python3 -m verl.trainer.sft_trainer_ray data.train_files=datasets/gsm8k_sft/train.parquet \
    data.val_files=datasets/gsm8k_sft/val.parquet model.path=common/models/m
  assert_success
  jq -e '.resolved.workload == "sft" and .resolved.trainer_overrides["data.messages_key"] == "messages"' <<<"$output"
  [[ $stderr == *"config 'sft_trainer_engine'"* ]]
}

@test "command line: a value with spaces, commas, brackets, quotes and \$ is kept as typed, after the runbook's keys" {
  local v="'a b, [c] {d} \$HOME \${oops} it\\'s'"
  run --separate-stderr cmd "" "${PPO[@]}" "trainer.experiment_name=$v" "+mvp_standin.note=x,y" "~trainer.val_before_train"
  # Hydra reads x,y (unquoted) as a sweep: the preflight refuses it, naming it.
  assert_failure
  [[ $stderr == *"Hydra refuses the override '+mvp_standin.note=x,y'"* ]]
  run --separate-stderr cmd "" "${PPO[@]}" "trainer.experiment_name=$v" "~trainer.val_before_train"
  assert_success
  jq -e --arg v "$v" '.resolved.trainer_overrides["trainer.experiment_name"] == $v' <<<"$output"
  # ~KEY is a delete: no value.
  jq -e '.resolved.trainer_overrides | has("~trainer.val_before_train") and .["~trainer.val_before_train"] == null' <<<"$output"
}

@test "command line: --config-name chooses the config the preflight checks, and reaches the trainer" {
  run --separate-stderr cmd "" python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer \
    data.train_files=datasets/gsm8k/train.parquet actor_rollout_ref.model.path=common/models/m \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2
  assert_success
  jq -e '.resolved.trainer_args == ["--config-name", "ppo_megatron_trainer"]' <<<"$output"
  [[ $stderr == *"config 'ppo_megatron_trainer' accepts every override"* ]]
  # The same key is not ppo_trainer's (FSDP): the module's own config refuses it.
  refused "${PPO[@]}" actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2
  assert_output --partial "ERROR: preflight: "
  refused python3 -m verl.trainer.main_ppo --config-name=no_such_trainer data.train_files=datasets/gsm8k/train.parquet \
    actor_rollout_ref.model.path=common/models/m
  assert_output --partial "is given config 'no_such_trainer'"
  assert_output --partial "fix --config-name"
}

@test "command line: a recipe module is custom: its @hydra.main config (searching verl's from the snapshot's root), the runbook keys it has, no schema check" {
  mkdir -p "$SNAP/recipe/mine/config"
  printf 'import hydra\n\n@hydra.main(config_path="config", config_name="mine_trainer", version_base=None)\ndef main(config):\n    pass\n' \
    >"$SNAP/recipe/mine/main_mine.py"
  printf 'hydra:\n  searchpath:\n    - file://verl/trainer/config\ndefaults:\n  - ppo_trainer\n  - _self_\nmine:\n  alpha: 1\n' \
    >"$SNAP/recipe/mine/config/mine_trainer.yaml"
  run --separate-stderr cmd "" python3 -m recipe.mine.main_mine "${PPO[@]:3}" mine.alpha=2
  assert_success
  local r
  r=$(jq -c .resolved <<<"$output")
  jq -e --arg snap "$SNAP" '.workload == "custom" and .trainer_module == "recipe.mine.main_mine" and .workdir == $snap' <<<"$r"
  jq -e '.trainer_overrides["mine.alpha"] == "2" and .trainer_overrides["trainer.nnodes"] == "2" and (.submission_id | startswith("custom-"))' <<<"$r"
  [[ $stderr == *"config 'mine_trainer' accepts every override"* && $stderr == *"custom workload"* ]]
  refused python3 -m recipe.mine.main_mine mine.beta=1
  assert_output --partial "ERROR: preflight: 'mine.beta' is not a key of verl's config (snapshot codeA, config 'mine_trainer'); closest real keys: mine.alpha"
  refused python3 -m recipe.absent.main mine.alpha=1
  assert_output --partial "recipe/absent/main.py does not exist"
}

@test "command line: the runbook's keys (where the job writes, the cluster's shape) are one ERROR line naming what to use instead" {
  refused "${PPO[@]}" trainer.default_local_dir=/tmp/x
  assert_output "ERROR: the command line after --: trainer.default_local_dir is the runbook's to set: checkpoints go to checkpoints/ in the job directory (<SHARED_ROOT>/jobs/<submission id>/: choose it with --shared-root and the JobSpec's submission_id); to start from another job's checkpoint use --resume-from ID[/global_step_N]; drop it from the command line"
  refused "${PPO[@]}" hydra.run.dir=x
  assert_output --partial "hydra.run.dir is the runbook's to set: Hydra writes to hydra/ in the job directory (<SHARED_ROOT>/jobs/"
  refused "${PPO[@]}" trainer.nnodes=4
  assert_output --partial "trainer.nnodes is the runbook's to set: it is the cluster's number of workers: set MVP_WORKERS"
  refused "${PPO[@]}" ++trainer.n_gpus_per_node=1
  assert_output --partial "trainer.n_gpus_per_node is the runbook's to set: it is each worker's GPUs: set MVP_GPUS_PER_WORKER"
}

@test "command line: what is not a verl command line is one ERROR line each" {
  refused torchrun -m verl.trainer.main_ppo a=1
  assert_output "ERROR: the command line after --: 'torchrun -m verl.trainer.main_ppo' does not start a verl command line; write python3 -m MODULE [--config-name NAME] KEY=VALUE... (environment variables go in the JobSpec's env_vars)"
  refused python3 -m "verl/trainer/main_ppo"
  assert_output --partial "'verl/trainer/main_ppo' is not a Python module name"
  refused "${PPO[@]}" --multirun
  assert_output --partial "'--multirun' is a flag the runbook does not pass on to Hydra"
  refused "${PPO[@]}" trainer.total_epochs
  assert_output --partial "'trainer.total_epochs' is not a Hydra override; write KEY=VALUE"
  refused "${PPO[@]}" --config-name
  assert_output --partial "--config-name needs a value"
}

@test "command line: its paths are checked as a JobSpec's: on the shared root, existing, a model, a reward function where this verl reads it" {
  refused python3 -m verl.trainer.main_ppo data.train_files=/etc/passwd actor_rollout_ref.model.path=common/models/m
  assert_output "ERROR: data.train_files: /etc/passwd is outside shared_root $SHARED_ROOT; keep job inputs on shared storage"
  refused python3 -m verl.trainer.main_ppo "data.train_files=[datasets/gsm8k/train.parquet,'datasets/gsm8k/nope.parquet']" \
    actor_rollout_ref.model.path=common/models/m
  assert_output "ERROR: data.train_files[1]: $SHARED_ROOT/datasets/gsm8k/nope.parquet does not exist; run scripts/30_prepare_data_and_model.sh or fix the path"
  refused python3 -m verl.trainer.main_ppo data.train_files=datasets/gsm8k/train.parquet actor_rollout_ref.model.path=common/models/absent
  assert_output --partial "ERROR: model: $SHARED_ROOT/common/models/absent does not exist"
  refused python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=common/models/m
  assert_output --partial "ERROR: data.train_files: required"
  refused "${PPO[@]}" custom_reward_function.path=user/code/reward.py
  assert_output --partial "reads the reward function from reward.custom_reward_function, not from here"
  refused "${PPO[@]}" reward.custom_reward_function.path=user/code/reward.py reward.custom_reward_function.name=nope
  assert_output --partial "ERROR: reward.custom_reward_function.name: $SHARED_ROOT/user/code/reward.py defines no function 'nope'"
  refused "${PPO[@]}" reward.custom_reward_function.path=datasets/gsm8k/train.parquet
  assert_output --partial "must be under $SHARED_ROOT/user/code"
  # A list of files, relative and absolute, and the reward function: written out absolute.
  run --separate-stderr cmd "" python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=common/models/m \
    "data.train_files=['datasets/gsm8k/train.parquet', $SHARED_ROOT/datasets/gsm8k/test.parquet]" \
    reward.custom_reward_function.path=user/code/reward.py
  assert_success
  jq -e --arg r "$SHARED_ROOT" '.resolved.trainer_overrides | .["data.train_files"] == "['"'"'\($r)/datasets/gsm8k/train.parquet'"'"','"'"'\($r)/datasets/gsm8k/test.parquet'"'"']"
    and .["reward.custom_reward_function.path"] == "\($r)/user/code/reward.py"' <<<"$output"
}

@test "JobSpec entrypoint: a string split as a shell would (quotes, line continuations, nothing expanded) is the command line's words" {
  local spec
  spec=$(cat <<'YAML'
resources: {entrypoint_resources: {worker_node: 1}}
retries: 2
entrypoint: |
  python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=datasets/gsm8k/train.parquet \
    actor_rollout_ref.model.path=common/models/m \
    "trainer.experiment_name='$HOME $(id) `id`'"  # a comment
YAML
)
  run --separate-stderr spec_check "$spec"
  assert_success
  jq -e '.resolved.workload == "grpo" and .input.retries == 2' <<<"$output"
  jq -e '.resolved.trainer_overrides["trainer.experiment_name"] == "'"'"'$HOME $(id) `id`'"'"'"' <<<"$output"
  jq -e '.input.entrypoint | length == 7' <<<"$output"
}

@test "JobSpec entrypoint: a list of words; its workload must agree; the JobSpec and -- cannot both give one" {
  local spec="entrypoint: [python3, -m, verl.trainer.sft_trainer_ray, data.train_files=datasets/gsm8k_sft/train.parquet, model.path=common/models/m]"
  run --separate-stderr spec_check "$spec"
  assert_success
  jq -e '.resolved.workload == "sft"' <<<"$output"
  run spec_check "workload: ppo"$'\n'"$spec"
  assert_failure
  assert_output "ERROR: spec.yaml.workload: 'ppo', but its command line runs sft; drop workload (the command line says which)"
  run cmd "$spec" "${PPO[@]}"
  assert_failure
  assert_output "ERROR: the command line.entrypoint: the JobSpec has a command line and so does the line after --; give it once"
  run spec_check "entrypoint: 'python3 -m verl.trainer.main_ppo \"unclosed'"
  assert_failure
  assert_output --partial "ERROR: spec.yaml.entrypoint: cannot split it into words as a shell would (No closing quotation); close the quote"
  # Without an entrypoint, a JobSpec still needs its workload, data and model.
  run spec_check "model: common/models/m"
  assert_failure
  assert_output "ERROR: spec.yaml.workload: 'None' is not a workload; use one of ppo, grpo, sft"
}

@test "command line with a JobSpec: the JobSpec gives what the line does not (model, data, env, resources); the line's keys win" {
  local spec
  spec=$(printf 'model: common/models/m\ndataset: {train: datasets/gsm8k/test.parquet}\nenv_vars: {A: b}\nsubmission_id: mine-1\n')
  run --separate-stderr cmd "$spec" python3 -m verl.trainer.main_ppo data.train_files=datasets/gsm8k/train.parquet
  assert_success
  jq -e --arg r "$SHARED_ROOT" '.resolved | .submission_id == "mine-1" and (.env_var_names | index("A") != null)
    and .trainer_overrides["data.train_files"] == "\($r)/datasets/gsm8k/train.parquet"
    and .trainer_overrides["actor_rollout_ref.model.path"] == "\($r)/common/models/m"' <<<"$output"
}

@test "launch.py: execs the trainer with --config-name, then the overrides (~KEY bare), in a custom job's workdir, no shell between" {
  local job=$BATS_TEST_TMPDIR/job code=$BATS_TEST_TMPDIR/code
  mkdir -p "$job/config" "$code/recipe" "$BATS_TEST_TMPDIR/run here"
  printf 'import json, os, sys\nprint("argv=" + json.dumps(sys.argv[1:]))\nprint("cwd=" + os.getcwd())\n' >"$code/recipe/fake.py"
  jq -n --arg w "$BATS_TEST_TMPDIR/run here" '{resolved: {trainer_module: "recipe.fake", log_sync_s: 0, workdir: $w,
    trainer_args: ["--config-name", "mine"], trainer_overrides: {"a": "'"'"'x, [y] $(id)'"'"'", "~b": null}}}' >"$job/config/job_spec.json"
  run env PYTHONPATH="$code" python3 "$MVP_REPO/helpers/mvp/worker/launch.py" "$job"
  assert_success
  assert_line 'argv=["--config-name", "mine", "a='"'"'x, [y] $(id)'"'"'", "~b"]'
  assert_line "cwd=$BATS_TEST_TMPDIR/run here"
}
