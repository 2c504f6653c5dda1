#!/usr/bin/env bats
# JobSpec and Ray base config validation: every bad field gets one line naming
# it, before anything is written or submitted (--check-only writes nothing).
# The code snapshot is real verl 0.9.1 (its verl/ from .mvp/cache, made by
# `make setup`), so the preflight checks overrides against verl's own config.

setup_file() {
  load ../test_helper/common
  export REAL_VERL=$MVP_REAL_VERL
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
  cat >"$BATS_TEST_TMPDIR/base.yaml" <<'YAML'
workload: ppo
model: common/models/m
dataset:
  train: datasets/gsm8k/train.parquet
  val: datasets/gsm8k/test.parquet
resources:
  entrypoint_resources: {worker_node: 1}
  entrypoint_num_cpus: 1
trainer_overrides:
  data.train_batch_size: 256
env_vars: {}
YAML
}

helper() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -m mvp "$@"
}

# submit_check VIA SPEC_NAME SPEC_TEXT CFG_NAME CFG_TEXT: `submit --check-only`
# with the texts on stdin, as scripts/lib/submit.sh sends them.
submit_check() {
  helper submit --via "$1" --check-only --jobspec-name "$2" --ray-config-name "$4" < <(printf '%s\0%s' "$3" "$5")
}

# check SPEC_LINES...: the base JobSpec with these top-level lines appended
# (a later YAML key replaces an earlier one), validated without submitting.
check() {
  local spec
  spec="$(cat "$BATS_TEST_TMPDIR/base.yaml")"$'\n'"$(printf '%s\n' "$@")"
  submit_check cli spec.yaml "$spec" dev.yaml "$(<"$MVP_REPO/templates/configs/dev.yaml")"
}

@test "jobspec: the template-shaped spec passes and resolves the runbook defaults" {
  run --separate-stderr check
  assert_success
  local resolved
  resolved=$(jq -c .resolved <<<"$output")
  jq -e '.trainer_overrides | .["trainer.save_freq"] == "10" and .["trainer.total_epochs"] == "1"' <<<"$resolved"
  jq -e --arg d "$SHARED_ROOT/jobs/" '.trainer_overrides["trainer.default_local_dir"] | startswith($d)' <<<"$resolved"
  jq -e '.trainer_overrides | .["trainer.nnodes"] == "2" and .["trainer.n_gpus_per_node"] == "4"' <<<"$resolved"
  jq -e '.trainer_overrides["trainer.logger"] == "['"'"'console'"'"']"' <<<"$resolved"
  jq -e '.code_id == "codeA" and .workload == "ppo" and (.submission_id | test("^ppo-[0-9]{8}T[0-9]{6}-[0-9a-f]{6}$"))' <<<"$resolved"
  jq -e '.trainer_overrides["trainer.experiment_name"] == .submission_id' <<<"$resolved"
}

@test "jobspec: a misspelt field is named, with the field it probably meant" {
  run check "trainer_overide: {}"
  assert_failure
  assert_output "ERROR: spec.yaml: unknown field 'trainer_overide' (did you mean 'trainer_overrides'?)"
}

@test "jobspec: a field of the wrong type is named with what it must be" {
  run check "dataset: datasets/gsm8k/train.parquet"
  assert_failure
  assert_output "ERROR: spec.yaml.dataset: must be a mapping, got str 'datasets/gsm8k/train.parquet'"
}

@test "jobspec: an unknown workload lists the known ones" {
  run check "workload: dpo"
  assert_failure
  assert_output "ERROR: spec.yaml.workload: 'dpo' is not a workload; use one of ppo, grpo, sft"
}

@test "jobspec: a submission_id outside [A-Za-z0-9][A-Za-z0-9._-]{0,127} is refused" {
  for bad in "../escape" "-dash-first" "has space" "$(printf 'x%.0s' {1..129})"; do
    run check "submission_id: '$bad'"
    assert_failure
    assert_output --partial "spec.yaml.submission_id: '$bad' is not a valid id"
  done
}

@test "jobspec: a model or dataset path outside shared_root is refused" {
  run check "model: /etc"
  assert_failure
  assert_output "ERROR: model: /etc is outside shared_root $SHARED_ROOT; keep job inputs on shared storage"
  run check "dataset: {train: ../../etc/passwd}"
  assert_failure
  assert_output --partial "dataset.train: /"
  assert_output --partial "is outside shared_root"
}

@test "jobspec: a missing dataset or model names the path and the script that makes it" {
  run check "dataset: {train: datasets/gsm8k/nope.parquet}"
  assert_failure
  assert_output "ERROR: dataset.train: $SHARED_ROOT/datasets/gsm8k/nope.parquet does not exist; run scripts/30_prepare_data_and_model.sh or fix the path"
  run check "model: common/models/absent"
  assert_failure
  assert_output --partial "model: $SHARED_ROOT/common/models/absent does not exist"
}

@test "jobspec: a code_path that is not a snapshot (no marker) is refused" {
  mkdir -p "$SHARED_ROOT/common/code/verl/plain/verl"
  run check "code_path: common/code/verl/plain"
  assert_failure
  assert_output "ERROR: code_path: $SHARED_ROOT/common/code/verl/plain is not a code snapshot (no mvp_marker.py); create one with scripts/31_snapshot_verl_code.sh"
  run check "code_path: common/code/verl/missing"
  assert_failure
  assert_output --partial "is not a code snapshot"
}

@test "jobspec: the reward function must be a file under user/code/ that defines the function" {
  run check "reward_fn_path: user/code/reward.py"
  assert_success
  run check "reward_fn_path: datasets/gsm8k/train.parquet"
  assert_failure
  assert_output "ERROR: reward_fn_path: $SHARED_ROOT/datasets/gsm8k/train.parquet must be under $SHARED_ROOT/user/code"
  run check "reward_fn_path: user/code/absent.py"
  assert_failure
  assert_output --partial "reward_fn_path: $SHARED_ROOT/user/code/absent.py does not exist"
  run check "reward_fn_path: user/code/reward.py" "reward_fn_name: score_it"
  assert_failure
  assert_output "ERROR: reward_fn_name: $SHARED_ROOT/user/code/reward.py defines no function 'score_it' (it has: compute_score)"
}

@test "jobspec: overrides must be Hydra keys with scalar values" {
  run check "trainer_overrides: {'bad key': 1}"
  assert_failure
  assert_output "ERROR: spec.yaml.trainer_overrides: 'bad key' is not a Hydra key (dotted names, optional leading +)"
  run check "trainer_overrides: {trainer.logger: [console]}"
  assert_failure
  assert_output --partial "trainer_overrides.trainer.logger: write lists and mappings as a Hydra string"
}

@test "jobspec: env_vars need valid names and string values" {
  run check "env_vars: {'1BAD': x}"
  assert_failure
  assert_output "ERROR: spec.yaml.env_vars: '1BAD' is not a valid environment variable name"
  run check "env_vars: {GOOD: {nested: 1}}"
  assert_failure
  assert_output "ERROR: spec.yaml.env_vars.GOOD: must be a string, got dict"
}

@test "jobspec: entrypoint resources without a positive resource are refused (the driver would land on the head)" {
  run check "resources: {entrypoint_resources: {}, entrypoint_num_cpus: 1}"
  assert_failure
  assert_output --partial "resources.entrypoint_resources: needs a resource > 0"
  run check "resources: {entrypoint_resources: {worker_node: -1}}"
  assert_failure
  assert_output "ERROR: spec.yaml.resources.entrypoint_resources.worker_node: must be a number >= 0, got -1"
}

@test "jobspec: invalid YAML names the file and line" {
  run submit_check cli broken.yaml $'workload: ppo\nmodel: [unclosed' dev.yaml "$(<"$MVP_REPO/templates/configs/dev.yaml")"
  assert_failure
  assert_output --partial "ERROR: broken.yaml: line"
  assert_output --partial "is not valid YAML"
}

@test "ray config: an unknown field and a runtime_env other than env_vars are refused" {
  run submit_check sdk spec.yaml "$(cat "$BATS_TEST_TMPDIR/base.yaml")" cfg.yaml $'address: http://x:8265\nentrypoint_resource: {worker_node: 1}'
  assert_failure
  assert_output "ERROR: cfg.yaml: unknown field 'entrypoint_resource' (did you mean 'entrypoint_resources'?)"
  run submit_check sdk spec.yaml "$(cat "$BATS_TEST_TMPDIR/base.yaml")" cfg.yaml $'runtime_env: {pip: [torch]}'
  assert_failure
  assert_output "ERROR: cfg.yaml.runtime_env: unknown field 'pip'; known fields: env_vars"
}

@test "jobspec: PYTHONPATH puts the code snapshot first, the spec's own next, the node's last" {
  check "env_vars: {PYTHONPATH: /extra}" 2>"$BATS_TEST_TMPDIR/err" >/dev/null
  run grep -F -- "--runtime-env-json" "$BATS_TEST_TMPDIR/err"
  assert_output --partial "\"PYTHONPATH\": \"$SHARED_ROOT/common/code/verl/codeA:/extra:\${PYTHONPATH}\""
}

@test "jobspec: a YAML alias bomb is refused in milliseconds, naming the alias" {
  local bomb='a: &a ["x","x","x","x","x","x","x","x","x"]'$'\n'
  local i prev=a
  for i in b c d e f g h i j; do bomb+="$i: &$i [*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev]"$'\n'; prev=$i; done
  local t0=$SECONDS
  run check "model: {$(tr '\n' ',' <<<"$bomb")}"
  ((SECONDS - t0 < 5))
  assert_failure 1
  assert_output --regexp '^ERROR: spec.yaml: line [0-9]+ uses a YAML alias \(\*a\); write the value out instead'
}

@test "jobspec: undecodable bytes and an oversized spec are one ERROR line each" {
  run submit_check cli spec.yaml $'workload: ppo\nmodel: \xff\xfe' dev.yaml "$(<"$MVP_REPO/templates/configs/dev.yaml")"
  assert_failure 1
  assert_output "ERROR: spec.yaml: not UTF-8 text (byte 21); give a YAML file"
  run submit_check cli spec.yaml "$(head -c 300000 /dev/zero | tr '\0' '#')" dev.yaml "$(<"$MVP_REPO/templates/configs/dev.yaml")"
  assert_failure 1
  assert_output --regexp '^ERROR: spec.yaml: 300000 bytes is more than the 262144 a JobSpec or Ray config may have'
}

@test "jobspec: a type error in env_vars never echoes the value (it may be a secret)" {
  run check "env_vars: 'MY_API_TOKEN=supersecret123'"
  assert_failure 1
  assert_output "ERROR: spec.yaml.env_vars: must be a mapping or empty, got str"
  refute_output --partial supersecret123
}

@test "jobspec: symlinks that leave the shared root are refused, never opened" {
  ln -s /etc/passwd "$SHARED_ROOT/user/code/rf_link.py"
  run check "reward_fn_path: user/code/rf_link.py"
  assert_failure 1
  assert_output "ERROR: reward_fn_path: $SHARED_ROOT/user/code/rf_link.py (a link to /etc/passwd) must be under $SHARED_ROOT/user/code"
  mkdir -p "$BATS_TEST_TMPDIR/elsewhere/verl"
  echo 'MARKER = "codeA"' >"$BATS_TEST_TMPDIR/elsewhere/mvp_marker.py"
  echo '{}' >"$BATS_TEST_TMPDIR/elsewhere/MANIFEST.json"
  ln -s "$BATS_TEST_TMPDIR/elsewhere" "$SHARED_ROOT/common/code/verl/linked"
  run check "code_path: common/code/verl/linked"
  assert_failure 1
  assert_output "ERROR: code_path: $SHARED_ROOT/common/code/verl/linked (a link to $BATS_TEST_TMPDIR/elsewhere) is outside shared_root $SHARED_ROOT; keep job inputs on shared storage"
  CODE_ID=linked run check
  assert_failure 1
  assert_output --partial "ERROR: CODE_ID: $SHARED_ROOT/common/code/verl/linked (a link to"
}

@test "jobspec: a shared_root other than the configured SHARED_ROOT is refused" {
  run check "shared_root: /elsewhere"
  assert_failure 1
  assert_output "ERROR: shared_root: /elsewhere is not the configured SHARED_ROOT $SHARED_ROOT; remove shared_root from the JobSpec or run with SHARED_ROOT set to it"
}

@test "jobspec: the reward function goes where the snapshot's verl reads it: reward.custom_reward_function in 0.9.1" {
  run --separate-stderr check "reward_fn_path: user/code/reward.py"
  assert_success
  jq -e --arg p "$SHARED_ROOT/user/code/reward.py" '.resolved.trainer_overrides |
    .["reward.custom_reward_function.path"] == $p and .["reward.custom_reward_function.name"] == "compute_score"
    and (has("custom_reward_function.path") | not)' <<<"$output"
}

@test "jobspec: in a snapshot of an older verl (no reward.custom_reward_function) the reward goes to the top-level key" {
  local old="$SHARED_ROOT/common/code/verl/codeOld"
  mkdir -p "$old/verl"
  cp -r "$REAL_VERL/trainer" "$old/verl/trainer"
  "$MVP_REPO/.venv/bin/python" - "$old/verl/trainer/config/reward/reward.yaml" <<'PY'
import re, sys
p = sys.argv[1]
text = open(p).read()
new = re.sub(r"(?m)^custom_reward_function:\n(?:[ #].*\n|\n)*?(?=^\S)", "", text)
assert new != text
open(p, "w").write(new)
PY
  echo 'MARKER = "codeOld"' >"$old/mvp_marker.py"
  echo '{"created_at": "2026-01-02T00:00:00+00:00", "files": {}}' >"$old/MANIFEST.json"
  run --separate-stderr check "code_path: common/code/verl/codeOld" "reward_fn_path: user/code/reward.py"
  assert_success
  jq -e --arg p "$SHARED_ROOT/user/code/reward.py" '.resolved.trainer_overrides |
    .["custom_reward_function.path"] == $p and (has("reward.custom_reward_function.path") | not)' <<<"$output"
}

@test "jobspec: an override verl's config does not have is refused by the preflight, with the closest keys; nothing written" {
  run check "trainer_overrides: {trainer.nnode: 2}"
  assert_failure
  assert_output "ERROR: preflight: 'trainer.nnode' is not a key of verl's config (snapshot codeA, config 'ppo_trainer'); closest real keys: trainer.nnodes, trainer.logger, trainer.device; fix the name, or write +trainer.nnode=2 to add a key verl really reads"
  run check "trainer_overrides: {+trainer.nnodes: 2}"
  assert_failure
  assert_output --partial "ERROR: preflight: '+trainer.nnodes' adds a key that verl's config already has (snapshot codeA, config 'ppo_trainer')"
  [[ ! -e $SHARED_ROOT/jobs ]]
}

@test "jobspec: PPO/GRPO env_vars may not use the names verl's main_ppo sets in its own ray.init runtime_env" {
  local name
  for name in VERL_FULL_DETERMINISM VLLM_BATCH_INVARIANT VERL_RL_INSIGHT_ENABLE PYTHONHASHSEED CUBLAS_WORKSPACE_CONFIG \
    FLASH_ATTENTION_DETERMINISTIC NCCL_DETERMINISTIC NCCL_ALGO; do
    run check "env_vars: {$name: '1'}"
    assert_failure
    assert_output --partial "ERROR: env_vars.$name: verl's main_ppo sets $name in the runtime_env of its own ray.init"
    assert_equal "${#lines[@]}" 1
  done
  # SFT's bare ray.init() sets none of them.
  run --separate-stderr check "workload: sft" "dataset: {train: datasets/gsm8k_sft/train.parquet}" "trainer_overrides: {}" \
    "env_vars: {PYTHONHASHSEED: '1'}"
  assert_success
}

@test "jobspec: every job's Hydra output goes to <job dir>/hydra; RL jobs get TORCH_NCCL_AVOID_RECORD_STREAMS=1" {
  run --separate-stderr check
  assert_success
  jq -e '.resolved | .trainer_overrides["hydra.run.dir"] == .job_dir + "/hydra"' <<<"$output"
  check 2>"$BATS_TEST_TMPDIR/err" >/dev/null
  run grep -F -- "--runtime-env-json" "$BATS_TEST_TMPDIR/err"
  assert_output --partial '"TORCH_NCCL_AVOID_RECORD_STREAMS": "1"'
}

@test "jobspec: SFT keeps verl's device and keeps the node's GPUs visible to its driver (RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0)" {
  run --separate-stderr check "workload: sft" "dataset: {train: datasets/gsm8k_sft/train.parquet}" "trainer_overrides: {}"
  assert_success
  jq -e '.resolved.trainer_overrides | has("trainer.device") | not' <<<"$output"
  jq -e '.resolved.env_var_names | index("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO") != null' <<<"$output"
  check "workload: sft" "dataset: {train: datasets/gsm8k_sft/train.parquet}" "trainer_overrides: {}" 2>"$BATS_TEST_TMPDIR/err" >/dev/null
  run grep -F -- "--runtime-env-json" "$BATS_TEST_TMPDIR/err"
  assert_output --partial '"RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"'
  refute_output --partial TORCH_NCCL_AVOID_RECORD_STREAMS
}

@test "jobspec: a secret-named env var leaves the runtime_env (Ray gets only MVP_PRIVATE_ENV and the setup hook); plain ones stay" {
  local secret=unit-secret-value-1234
  check "env_vars: {WANDB_API_KEY: $secret, PLAIN_SETTING: visible}" 2>"$BATS_TEST_TMPDIR/err" >"$BATS_TEST_TMPDIR/out"
  run grep -F -- "--runtime-env-json" "$BATS_TEST_TMPDIR/err"
  assert_success
  refute_output --partial WANDB_API_KEY
  refute_output --partial "$secret"
  local env_json id
  env_json=$(sed -E "s/.*--runtime-env-json '([^']*)'.*/\1/" <<<"$output")
  id=$(jq -r .resolved.submission_id "$BATS_TEST_TMPDIR/out")
  jq -e --arg key "private_env/$id" '.env_vars.MVP_PRIVATE_ENV == $key and .env_vars.PLAIN_SETTING == "visible"
    and .worker_process_setup_hook == "mvp_private_env.load_in_worker"' <<<"$env_json"
  # The hook's module is on the job's PYTHONPATH, after the snapshot.
  jq -e --arg dir "$MVP_REPO/helpers/jobenv" '.env_vars.PYTHONPATH | split(":") | .[0] | endswith("/codeA")' <<<"$env_json"
  jq -e --arg dir "$MVP_REPO/helpers/jobenv" '.env_vars.PYTHONPATH | split(":") | index($dir) == 1' <<<"$env_json"
  jq -e '.resolved.private_env_names == ["WANDB_API_KEY"]' "$BATS_TEST_TMPDIR/out"
  run grep -c -F -- "$secret" "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
  assert_output "$BATS_TEST_TMPDIR/out:0
$BATS_TEST_TMPDIR/err:0"
}

@test "jobspec: without a secret-named env var the runtime_env has no setup hook and no jobenv path" {
  check "env_vars: {PLAIN_SETTING: visible}" 2>"$BATS_TEST_TMPDIR/err" >/dev/null
  run grep -F -- "--runtime-env-json" "$BATS_TEST_TMPDIR/err"
  refute_output --partial worker_process_setup_hook
  refute_output --partial MVP_PRIVATE_ENV
  refute_output --partial helpers/jobenv
}

@test "jobspec: MVP_PRIVATE_ENV and Ray's setup-hook variable are the runbook's; private variables need the runbook's own cluster" {
  local name
  for name in MVP_PRIVATE_ENV __RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR; do
    run check "env_vars: {$name: x}"
    assert_failure
    assert_output "ERROR: spec.yaml.env_vars: $name is set by the runbook (it says where the job's private variables are); use another name"
  done
  run check "env_vars: {HF_TOKEN: x}" "ray: {address: 'http://10.9.9.9:8265'}"
  assert_failure
  assert_output "ERROR: env_vars HF_TOKEN: private variables reach a job through the runbook's own cluster (http://127.0.0.1:1), not http://10.9.9.9:8265; drop ray.address or the variables"
}

# submit_flags ARGS...: the base JobSpec validated with extra helper flags.
submit_flags() {
  helper submit --via cli --check-only --jobspec-name spec.yaml --ray-config-name dev.yaml "$@" \
    < <(printf '%s\0%s' "$(cat "$BATS_TEST_TMPDIR/base.yaml")" "$(<"$MVP_REPO/templates/configs/dev.yaml")")
}

@test "profile cpu: templates/profiles/cpu.yaml is laid over the JobSpec's overrides, --override wins; the CPU extensions follow the snapshot on PYTHONPATH" {
  export MVP_TRAINER_PROFILE=cpu
  run --separate-stderr submit_flags --override trainer.total_training_steps=7
  assert_success
  local r
  r=$(jq -c .resolved <<<"$output")
  jq -e '.trainer_profile == "cpu" and .trainer_overrides["actor_rollout_ref.rollout.name"] == "hf"
    and .trainer_overrides["data.train_batch_size"] == "8" and .trainer_overrides["trainer.n_gpus_per_node"] == "1"
    and .trainer_overrides["critic.model.trust_remote_code"] == "true"
    and .trainer_overrides["trainer.total_training_steps"] == "7"' <<<"$r"
  jq -e '.env_var_names | index("VERL_USE_EXTERNAL_MODULES") and index("VERL_PLATFORM") and index("MVP_CPU_RAY_RESOURCE")' <<<"$r"
  # The runtime_env of the submit command the check printed.
  run python3 -c 'import json, shlex, sys
argv = shlex.split(sys.argv[1].splitlines()[-1])
print(json.loads(argv[argv.index("--runtime-env-json") + 1])["env_vars"]["PYTHONPATH"])' "$stderr"
  assert_output "$SHARED_ROOT/common/code/verl/codeA:$MVP_REPO/helpers/verl_cpu:\${PYTHONPATH}"
}

@test "profile gpu (the default) adds nothing: no CPU extensions on PYTHONPATH, the JobSpec's overrides as they are" {
  run --separate-stderr submit_flags
  assert_success
  jq -e '.resolved | .trainer_profile == "gpu" and (.trainer_overrides | has("actor_rollout_ref.rollout.name") | not)
    and (.env_var_names | index("VERL_PLATFORM") | not)' <<<"$output"
}

@test "profile: an unknown MVP_TRAINER_PROFILE is one line naming the profiles" {
  MVP_TRAINER_PROFILE=tpu run submit_flags
  assert_failure
  assert_output "ERROR: MVP_TRAINER_PROFILE='tpu' is not a profile; use one of gpu, cpu, gpu-smoke"
}

@test "preflight: a model directory without weights, or without a chat template, is refused in one line before anything is written" {
  rm "$SHARED_ROOT/common/models/m/model.safetensors"
  run submit_flags
  assert_failure
  assert_output "ERROR: model: $SHARED_ROOT/common/models/m has no weights (*.safetensors, *.bin); run scripts/30_prepare_data_and_model.sh with a model that has them"
  : >"$SHARED_ROOT/common/models/m/model.safetensors"
  rm "$SHARED_ROOT/common/models/m/chat_template.jinja"
  run submit_flags
  assert_failure
  assert_output --partial "has no chat template (chat_template.jinja or tokenizer_config.json's chat_template)"
  echo '{"chat_template": "{{ messages }}"}' >"$SHARED_ROOT/common/models/m/tokenizer_config.json"
  run --separate-stderr submit_flags
  assert_success
  [[ ! -e $SHARED_ROOT/jobs ]]
}

@test "profile: the cluster check refuses a CPU-profile job where Ray found accelerators, and a GPU job where it found none" {
  run "$MVP_REPO/.venv/bin/python" - <<'PY'
import sys; sys.path.insert(0, "helpers")
from mvp.jobs.planning import trainer_profile
from mvp.worker.errors import MvpError
cpu_node = {"state": "ALIVE", "node_ip": "10.0.0.3", "resources_total": {"CPU": 16, "GPU": 4, "worker_node": 100}}
gpu_node = {"state": "ALIVE", "node_ip": "10.0.0.4", "resources_total": {"GPU": 8, "accelerator_type:H100": 1}}
dead_gpu = dict(gpu_node, state="DEAD")
for prof, nodes in (("cpu", [cpu_node]), ("cpu", [cpu_node, dead_gpu]), ("gpu", [gpu_node]), ("gpu-smoke", [gpu_node])):
    trainer_profile.check_cluster(prof, nodes)
for prof, nodes in (("cpu", [cpu_node, gpu_node]), ("gpu", [cpu_node]), ("gpu-smoke", [cpu_node])):
    try:
        trainer_profile.check_cluster(prof, nodes)
    except MvpError as exc:
        print(f"{prof}: {exc}")
PY
  assert_success
  assert_line "cpu: MVP_TRAINER_PROFILE=cpu trains on CPUs with gloo, but this cluster has accelerators (accelerator_type:H100 on 10.0.0.4); unset MVP_TRAINER_PROFILE to train on them"
  assert_line --partial "gpu: this cluster's nodes have no accelerator Ray detected"
  assert_line --partial "gpu-smoke: this cluster's nodes have no accelerator Ray detected"
}

@test "the gpu-smoke profile: verl's own GPU platform (no VERL_PLATFORM), CUDA, one GPU, the hf rollout of helpers/verl_cpu on the PYTHONPATH, 2 steps" {
  run "$MVP_REPO/.venv/bin/python" - <<'PY'
import json, sys
sys.path.insert(0, "helpers")
from mvp.jobs.planning import trainer_profile
o = trainer_profile.overlay("gpu-smoke", "grpo")
print(json.dumps({"env": o.env_vars, "ov": o.overrides, "pp": o.pythonpath}, sort_keys=True))
PY
  assert_success
  jq -e '.env == {"VERL_USE_EXTERNAL_MODULES": "mvp_verl_cpu"}' <<<"$output"
  jq -e '.ov["actor_rollout_ref.rollout.name"] == "hf" and .ov["trainer.device"] == "cuda" and .ov["trainer.n_gpus_per_node"] == "1"
         and .ov["trainer.nnodes"] == "1" and .ov["trainer.total_training_steps"] == "2"' <<<"$output"
  jq -e --arg d "$MVP_REPO/helpers/verl_cpu" '.pp == $d' <<<"$output"
}

@test "--resume-from: an unknown job, a job without checkpoints, another workload or a missing step is one line; a good one sets verl's resume_path and records the link" {
  run submit_flags --resume-from nope-1
  assert_failure
  assert_output "ERROR: --resume-from nope-1: $SHARED_ROOT/jobs/nope-1 is not a runbook job directory; give the submission id of an earlier job"
  local old="$SHARED_ROOT/jobs/old-1"
  mkdir -p "$old/config" "$old/checkpoints/global_step_2" "$old/checkpoints/global_step_4"
  echo '{"resolved": {"workload": "sft"}}' >"$old/config/job_spec.json"
  run submit_flags --resume-from old-1
  assert_failure
  assert_output "ERROR: --resume-from old-1: that job trained sft, this one ppo; resume a job of the same workload"
  echo '{"resolved": {"workload": "ppo"}}' >"$old/config/job_spec.json"
  run submit_flags --resume-from old-1
  assert_failure
  assert_output --partial "has no latest_checkpointed_iteration.txt (verl writes it after a complete save)"
  echo 4 >"$old/checkpoints/latest_checkpointed_iteration.txt"
  run submit_flags --resume-from old-1/global_step_3
  assert_failure
  assert_output "ERROR: --resume-from old-1/global_step_3: no checkpoint $old/checkpoints/global_step_3 (there are: global_step_2, global_step_4)"
  run --separate-stderr submit_flags --resume-from old-1
  assert_success
  jq -e --arg p "$old/checkpoints/global_step_4" '.resolved | .resumed_from == "old-1/global_step_4"
    and .trainer_overrides["trainer.resume_mode"] == "resume_path" and .trainer_overrides["trainer.resume_from_path"] == $p' <<<"$output"
  run --separate-stderr submit_flags --resume-from old-1/global_step_2
  jq -e '.resolved.resumed_from == "old-1/global_step_2"' <<<"$output"
}

@test "--reward-fn PATH:NAME is the JobSpec's reward_fn_path and reward_fn_name, checked the same way" {
  printf 'def shaped(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.5\n' >"$SHARED_ROOT/user/code/shaped.py"
  run --separate-stderr submit_flags --reward-fn user/code/shaped.py:shaped
  assert_success
  jq -e --arg p "$SHARED_ROOT/user/code/shaped.py" '.resolved.trainer_overrides
    | .["reward.custom_reward_function.path"] == $p and .["reward.custom_reward_function.name"] == "shaped"' <<<"$output"
  run submit_flags --reward-fn user/code/shaped.py:nope
  assert_failure
  assert_output --partial "defines no function 'nope'"
}

@test "own data: dataset.train and dataset.val take lists, each path checked; verl gets them as one Hydra list its config accepts" {
  cp "$SHARED_ROOT/datasets/gsm8k/train.parquet" "$SHARED_ROOT/datasets/gsm8k/more.parquet"
  run --separate-stderr check "dataset: {train: [datasets/gsm8k/train.parquet, datasets/gsm8k/more.parquet], val: [datasets/gsm8k/test.parquet]}"
  assert_success
  jq -e --arg r "$SHARED_ROOT" '.resolved.trainer_overrides["data.train_files"] == "['"'"'\($r)/datasets/gsm8k/train.parquet'"'"','"'"'\($r)/datasets/gsm8k/more.parquet'"'"']"' <<<"$output"
  jq -e --arg r "$SHARED_ROOT" '.resolved.trainer_overrides["data.val_files"] == "\($r)/datasets/gsm8k/test.parquet"' <<<"$output"
  [[ $stderr == *"preflight: dataset.train: more.parquet: 8 rows, columns and messages as verl RL reads them"* ]]
  # Composed by Hydra with real verl 0.9.1's ppo_trainer, as main_ppo composes it: a list of the two paths.
  local files
  files=$(jq -r '.resolved.trainer_overrides["data.train_files"]' <<<"$output")
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c '
import json, sys
from pathlib import Path
from omegaconf import OmegaConf
from mvp.jobs.planning import preflight
cfg = preflight._compose(Path(sys.argv[1]) / "trainer" / "config", "ppo_trainer", ["data.train_files=" + sys.argv[2]])
print(json.dumps(OmegaConf.to_container(cfg.data.train_files)))' "$REAL_VERL" "$files"
  assert_success
  assert_output "[\"$SHARED_ROOT/datasets/gsm8k/train.parquet\", \"$SHARED_ROOT/datasets/gsm8k/more.parquet\"]"
  run check "dataset: {train: [datasets/gsm8k/train.parquet, datasets/gsm8k/gone.parquet]}"
  assert_failure
  assert_output "ERROR: dataset.train[1]: $SHARED_ROOT/datasets/gsm8k/gone.parquet does not exist; run scripts/30_prepare_data_and_model.sh or fix the path"
  run check "dataset: {train: []}"
  assert_failure
  assert_output "ERROR: spec.yaml.dataset.train: required (the training parquet on shared storage)"
  run check "dataset: {train: [datasets/gsm8k/train.parquet, 3]}"
  assert_failure
  assert_output "ERROR: spec.yaml.dataset.train[1]: must be a parquet path, got 3"
}

@test "own data: a wrong parquet is one ERROR line naming file and column, before anything is written (no --check-only)" {
  cp "$SHARED_ROOT/datasets/gsm8k_sft/train.parquet" "$SHARED_ROOT/datasets/gsm8k/train.parquet"
  run helper submit --via cli --jobspec-name spec.yaml --ray-config-name dev.yaml \
    < <(printf '%s\0%s' "$(cat "$BATS_TEST_TMPDIR/base.yaml")" "$(<"$MVP_REPO/templates/configs/dev.yaml")")
  assert_failure
  assert_output "ERROR: dataset.train: $SHARED_ROOT/datasets/gsm8k/train.parquet has no column 'prompt' (verl applies the chat template to it: verl/utils/dataset/rl_dataset.py:259-261); its columns: messages (docs/your-data.md)"
  [[ ! -e $SHARED_ROOT/jobs ]]
  [[ -z $(find "$SHARED_ROOT/admission" -type f 2>/dev/null) ]]
}

@test "own model: model: names a model under common/models (as 30 prepared it); a missing one lists the models there" {
  mvp_model_files "$SHARED_ROOT/common/models/Org/Other-1B"
  run --separate-stderr check "model: Org/Other-1B"
  assert_success
  jq -e --arg m "$SHARED_ROOT/common/models/Org/Other-1B" '.resolved.trainer_overrides["actor_rollout_ref.model.path"] == $m' <<<"$output"
  run check "model: Org/Missing"
  assert_failure
  assert_output "ERROR: model: $SHARED_ROOT/Org/Missing does not exist, nor is 'Org/Missing' a model under $SHARED_ROOT/common/models (there: Org/Other-1B, m); prepare it with scripts/30_prepare_data_and_model.sh --model ID_OR_DIR, or fix the path"
  run check "model: ../../etc"
  assert_failure
  assert_output --partial "does not exist, nor is '../../etc' a model under"
  mkdir -p "$BATS_TEST_TMPDIR/outside"
  ln -s "$BATS_TEST_TMPDIR/outside" "$SHARED_ROOT/common/models/escape"
  run check "model: escape"
  assert_failure
  assert_output --partial "must be under $SHARED_ROOT/common/models"
}

@test "jobspec: a job directory or launcher path a shell would re-parse (a \$ in it) is refused, naming it; the launcher is checked beside it" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'import sys
from pathlib import Path
from mvp.jobs.planning import plan
from mvp.worker.errors import MvpError
for p in sys.argv[1:]:
    try:
        plan._safe_for_shell((Path("/ok/launch.py"), "launcher"), (Path(p), "job directory"))
        print("passed", p)
    except MvpError as exc:
        print(exc)' '/s/jobs/a$b' '/s/jobs/plain-id'
  assert_success
  assert_output "job directory /s/jobs/a\$b contains '\$', which a shell would re-parse; use another path
passed /s/jobs/plain-id"
}

# submit_41 ARGS...: what 41_submit_grpo_epoch1.sh hands the helper (its
# template, MVP_MODEL_ID's model), checked without submitting.
submit_41() {
  MVP_MODEL_ID=m helper submit --via cli --check-only --configured-model --jobspec-name grpo.yaml \
    --ray-config-name dev.yaml "$@" < <(printf '%s\0%s' "$(<"$MVP_REPO/templates/jobspecs/grpo.yaml")" \
    "$(<"$MVP_REPO/templates/configs/dev.yaml")")
}

# synthetic_gsm8k: the shared root's GSM8K parquet as 30 writes them with
# MVP_GSM8K_SOURCE=synthetic (data_source mvp/synthetic-arithmetic).
synthetic_gsm8k() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$SHARED_ROOT/datasets/gsm8k" <<'PY'
import sys
from pathlib import Path
import pyarrow as pa, pyarrow.parquet as pq
from mvp.data import gsm8k
for split in ("train", "test"):
    rows = gsm8k.rl_rows(split, gsm8k.synthetic(split, 8), gsm8k.SYNTHETIC_SOURCE)[0]
    pq.write_table(pa.Table.from_pylist(rows, schema=gsm8k.rl_schema()), Path(sys.argv[1]) / f"{split}.parquet")
PY
}

# planted_snapshot ID PYTHON: snapshot ID, real verl 0.9.1 as links (cp -rs)
# with verl/workers/rollout/replica.py and verl/version/version made real
# files, the Python expression PYTHON applied to each one's text `t` (with
# `f`, the file's path under verl/).
planted_snapshot() {
  local snap=$SHARED_ROOT/common/code/verl/$1 f
  mkdir -p "$snap"
  cp -rs "$MVP_REAL_VERL" "$snap/verl"
  echo "MARKER = \"$1\"" >"$snap/mvp_marker.py"
  echo '{"created_at": "2026-01-01T00:00:00+00:00", "files": {}}' >"$snap/MANIFEST.json"
  for f in workers/rollout/replica.py version/version; do
    rm "$snap/verl/$f"
    "$MVP_REPO/.venv/bin/python" -c 'import sys
f, t = sys.argv[3], open(sys.argv[1]).read()
open(sys.argv[2], "w").write(eval(sys.argv[4]))' "$MVP_REAL_VERL/$f" "$snap/verl/$f" "$f" "$2"
  done
}

@test "41's JobSpec on MVP_GSM8K_SOURCE=synthetic data without --reward-fn: one ERROR line naming the data source (and the val file when verl scores it), the snapshot and --reward-fn, nothing written; with --reward-fn user/code/shaped_gsm8k.py it passes" {
  synthetic_gsm8k
  cp "$MVP_REPO/templates/rewards/shaped_gsm8k.py" "$SHARED_ROOT/user/code/"
  run --separate-stderr submit_41
  assert_failure 1
  assert_equal "$stderr" "ERROR: reward: no reward function serves data_source 'mvp/synthetic-arithmetic' (dataset.train train.parquet): the job names none and snapshot codeA's verl/utils/reward_score/__init__.py:19 default_compute_score knows only openai/gsm8k, lighteval/MATH, DigitalLearningGmbH/MATH-lighteval, HuggingFaceH4/MATH-500 and 22 more, raising NotImplementedError for any other in every rollout; give the job its reward function: --reward-fn FILE[:NAME] with FILE under user/code/ (the JobSpec's reward_fn_path), e.g. templates/rewards/shaped_gsm8k.py copied there"
  [[ ! -e $SHARED_ROOT/jobs ]]
  # The val file counts when verl scores it (the template validates never; every 2 steps here).
  run --separate-stderr submit_41 --override trainer.test_freq=2
  assert_failure 1
  [[ $stderr == "ERROR: reward: no reward function serves data_source 'mvp/synthetic-arithmetic' (dataset.train train.parquet, dataset.val test.parquet): "* ]]
  run --separate-stderr submit_41 --reward-fn user/code/shaped_gsm8k.py
  assert_success
  grep -q "preflight: reward: data_source mvp/synthetic-arithmetic scored by the job's reward function (reward.custom_reward_function.path)$" <<<"$stderr"
  [[ ! -e $SHARED_ROOT/jobs ]]
}

@test "a JobSpec on openai/gsm8k data needs no reward function: verl 0.9.1's own default_compute_score serves it; the snapshot's release is named" {
  run --separate-stderr submit_41
  assert_success
  grep -q "preflight: reward: data_source openai/gsm8k scored by snapshot codeA's verl/utils/reward_score/__init__.py:19 default_compute_score$" <<<"$stderr"
  grep -q "preflight: verl: snapshot codeA holds verl 0.9.1$" <<<"$stderr"
  [[ $stderr != *" !    "* ]]
  # The release make setup unpacks (tests/fixtures/real_verl.sh) is the newest the preflight calls tested.
  run "$MVP_REPO/.venv/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1])
from mvp.jobs.planning import verl_release; print(max(verl_release.TESTED, key=verl_release._numbers))' "$MVP_REPO/helpers"
  assert_output "$(sed -n 's/^VERL_VERSION=//p' "$MVP_REPO/tests/fixtures/real_verl.sh")"
  # Every release the preflight calls tested is one the tiers unpack (real_verl.sh's RELEASES), and no other.
  run "$MVP_REPO/.venv/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1])
from mvp.jobs.planning import verl_release; print(" ".join(sorted(verl_release.TESTED)))' "$MVP_REPO/helpers"
  assert_output "$(sed -n 's/^  \[\([0-9.]*\)\]=[0-9a-f]*$/\1/p' "$MVP_REPO/tests/fixtures/real_verl.sh" | sort | paste -sd ' ')"
}

@test "profile cpu: a snapshot whose verl renamed a name the CPU layer imports (RolloutReplicaRegistry) is refused in one line naming the releases the layer serves, exit 69 (61 skips such a commit); a GPU job on it is not" {
  planted_snapshot renamed 't.replace("RolloutReplicaRegistry", "ReplicaRegistry") if f.endswith(".py") else t'
  MVP_TRAINER_PROFILE=cpu CODE_ID=renamed run --separate-stderr submit_flags
  assert_failure 69
  # The line the message cites: the layer's import of the name, where it is now.
  import_line() { grep -n '^from verl.workers.rollout.replica import' "$MVP_REPO/helpers/verl_cpu/mvp_verl_cpu/rollout.py" | cut -d: -f1; }
  [[ $(import_line) =~ ^[0-9]+$ ]]
  assert_equal "$stderr" "ERROR: MVP_TRAINER_PROFILE=cpu: the CPU layer (helpers/verl_cpu) cannot serve snapshot renamed's verl 0.9.1: it imports RolloutReplicaRegistry from verl.workers.rollout.replica (mvp_verl_cpu/rollout.py:$(import_line)), which that snapshot's module does not define; the CPU layer serves verl 0.9.0, 0.9.1 (docs/versions.md): snapshot one of those, or train on GPUs (MVP_TRAINER_PROFILE=gpu)"
  [[ ! -e $SHARED_ROOT/jobs ]]
  # Real verl 0.9.1 (codeA): the CPU layer finds every name it imports.
  MVP_TRAINER_PROFILE=cpu CODE_ID=codeA run --separate-stderr submit_flags
  assert_success
  grep -q "preflight: verl: snapshot codeA holds verl 0.9.1; the CPU layer finds every name it imports from it$" <<<"$stderr"
  # A GPU job never loads the layer.
  CODE_ID=renamed run --separate-stderr submit_flags
  assert_success
}

@test "profile gpu: a snapshot newer than the tested releases gets a warning line, not a refusal; on the CPU profile too, when the layer finds its names" {
  planted_snapshot newer 't if f.endswith(".py") else "0.10.0.dev\n"'
  CODE_ID=newer run --separate-stderr submit_flags
  assert_success
  grep -q " !     preflight: snapshot newer holds verl 0.10.0.dev, newer than the releases the runbook is tested with (0.9.0, 0.9.1; docs/versions.md); the preflight checked its config and data$" <<<"$stderr"
  MVP_TRAINER_PROFILE=cpu CODE_ID=newer run --separate-stderr submit_flags
  assert_success
  grep -q "newer than the releases the runbook is tested with" <<<"$stderr"
  grep -q "preflight: verl: snapshot newer holds verl 0.10.0.dev; the CPU layer finds every name it imports from it$" <<<"$stderr"
}
