#!/usr/bin/env bats
# Experiment tracking as verl 0.9.1 does it (helpers/mvp/jobs/planning/tracking.py, ported
# from verl/utils/tracking.py): trainer.logger is the user's with console kept,
# each backend's output is sent into the job directory unless the job says
# otherwise, a chain of resumptions is one W&B run, and the trackers' keys are
# private variables. The snapshot is real verl 0.9.1 (its verl/ from
# .mvp/cache, made by `make setup`); `submit --check-only` writes nothing.

setup_file() {
  load ../test_helper/common
  mvp_preflight_facts "$BATS_FILE_TMPDIR/preflight" || { echo "no preflight facts of real verl; run make setup" >&3; return 1; }
}

setup() {
  load ../test_helper/common
  export SHARED_ROOT="$BATS_TEST_TMPDIR/shared root" MVP_WORKERS=2 MVP_GPUS_PER_WORKER=4
  export MVP_DASHBOARD_URL=http://127.0.0.1:1 CODE_ID="" MVP_JOB_ENV_NAMES="" MVP_TRAINER_PROFILE=gpu MVP_CLUSTER_NAME=unit MVP_LOG_SYNC_SECONDS=30 MVP_STOP_AT_STEP=""
  mvp_check_root m "$BATS_FILE_TMPDIR/preflight" "$BATS_FILE_TMPDIR/data"
  PPO=(python3 -m verl.trainer.main_ppo data.train_files=datasets/gsm8k/train.parquet
    actor_rollout_ref.model.path=common/models/m)
}

# check SPEC_TEXT [HELPER ARGS...] -- WORD...: `submit --check-only` as
# scripts/lib/submit.sh sends it; stdout the resolved JobSpec, stderr the log
# and the `ray job submit` words it would run ($BATS_TEST_TMPDIR/err).
check() {
  local spec=$1 word; shift
  local -a args=()
  while (($#)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
  shift
  for word in "$@"; do args+=("--command-word=$word"); done
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -m mvp submit --via cli --check-only \
    --jobspec-name "the command line" --ray-config-name dev.yaml "${args[@]}" \
    < <(printf '%s\0%s' "$spec" "$(<"$MVP_REPO/templates/configs/dev.yaml")") 2>"$BATS_TEST_TMPDIR/err"
}

# runtime_env: the runtime_env the last check would submit (as it shows it: private values by reference).
runtime_env() {
  sed -nE "s/.*--runtime-env-json '([^']*)'.*/\1/p" "$BATS_TEST_TMPDIR/err"
}

@test "tracking: trainer.logger is the user's; console goes first when the list lacks it (one line says so), a list with console is left as typed" {
  run check "" -- "${PPO[@]}" "trainer.logger=['wandb', \"tensorboard\"]"
  assert_success
  jq -e '.resolved.trainer_overrides["trainer.logger"] == "['"'console','wandb','tensorboard'"']"' <<<"$output"
  grep -qF "trainer.logger: console added (['console','wandb','tensorboard']): the runbook reads verl's console lines" "$BATS_TEST_TMPDIR/err"
  run check "" -- "${PPO[@]}" trainer.logger=mlflow
  jq -e '.resolved.trainer_overrides["trainer.logger"] == "['"'console','mlflow'"']"' <<<"$output"
  run check "" -- "${PPO[@]}" "trainer.logger=[tensorboard,console]"
  jq -e '.resolved.trainer_overrides["trainer.logger"] == "[tensorboard,console]"' <<<"$output"
  run grep -q "console added" "$BATS_TEST_TMPDIR/err"
  assert_failure 1
  # The runbook's default: the console alone, and no tracker's variable.
  run check "" -- "${PPO[@]}"
  jq -e '.resolved.trainer_overrides["trainer.logger"] == "['"'console'"']"' <<<"$output"
  jq -e '.resolved.env_var_names | map(select(test("^(TENSORBOARD|MLFLOW|WANDB|SWANLAB|VERL_FILE)_"))) == []' <<<"$output"
}

@test "tracking: every backend writes into <job dir>/tracking (TENSORBOARD_DIR, an MLflow file store, WANDB_DIR, SWANLAB_LOG_DIR, VERL_FILE_LOGGER_ROOT), as verl 0.9.1 reads them; SWANLAB_MODE=offline for swanlab with no key nor mode of its own" {
  run check "" -- "${PPO[@]}" "trainer.logger=[console,tensorboard,mlflow,wandb,swanlab,file]"
  assert_success
  local jd
  jd=$(jq -r .resolved.job_dir <<<"$output")
  runtime_env | jq -e --arg t "$jd/tracking" '.env_vars | .TENSORBOARD_DIR == "\($t)/tensorboard"
    and .MLFLOW_TRACKING_URI == "file://\($t | gsub(" "; "%20"))/mlruns" and .MLFLOW_ALLOW_FILE_STORE == "true"
    and .WANDB_DIR == $t and .SWANLAB_LOG_DIR == "\($t)/swanlog" and .VERL_FILE_LOGGER_ROOT == "\($t)/file"'
  # swanlab with no key: offline, unless the job sets SWANLAB_MODE or has SWANLAB_API_KEY (then verl's cloud).
  runtime_env | jq -e '.env_vars.SWANLAB_MODE == "offline"'
  run check "env_vars: {SWANLAB_MODE: cloud}" -- "${PPO[@]}" "trainer.logger=[console,swanlab]"
  runtime_env | jq -e '.env_vars.SWANLAB_MODE == "cloud"'
  run check "env_vars: {SWANLAB_API_KEY: sk-test}" -- "${PPO[@]}" "trainer.logger=[console,swanlab]"
  assert_success
  jq -e '.resolved.env_var_names | index("SWANLAB_MODE") == null' <<<"$output"
  run check "" -- "${PPO[@]}" "trainer.logger=[console,wandb]"
  jq -e '.resolved.env_var_names | index("SWANLAB_MODE") == null' <<<"$output"
  # Only the backends named get their variables.
  run check "" -- "${PPO[@]}" "trainer.logger=[console,tensorboard]"
  jq -e '.resolved.env_var_names | map(select(test("^(TENSORBOARD|MLFLOW|WANDB|SWANLAB|VERL_FILE)_"))) == ["TENSORBOARD_DIR"]' <<<"$output"
}

@test "tracking: the job's own values win (a JobSpec's env_vars): its TensorBoard dir, its MLflow server (and no file-store switch), its W&B run id" {
  run check "env_vars: {TENSORBOARD_DIR: /data/tb, MLFLOW_TRACKING_URI: 'http://mlflow:5000', WANDB_RUN_ID: mine}" -- \
    "${PPO[@]}" "trainer.logger=[console,tensorboard,mlflow,wandb]"
  assert_success
  runtime_env | jq -e '.env_vars | .TENSORBOARD_DIR == "/data/tb" and .MLFLOW_TRACKING_URI == "http://mlflow:5000"
    and (has("MLFLOW_ALLOW_FILE_STORE") | not) and .WANDB_RUN_ID == "mine" and .WANDB_RESUME == "allow"'
}

@test "tracking: a backend verl's Tracking does not know (verl/utils/tracking.py:49-60), or a value that is no list of names, is one ERROR line and nothing is written" {
  run check "" -- "${PPO[@]}" "trainer.logger=[console,wandbb]"
  assert_failure
  run cat "$BATS_TEST_TMPDIR/err"
  assert_output "ERROR: trainer.logger: 'wandbb' is not a backend of verl's Tracking in codeA (verl/utils/tracking.py supported_backend: wandb, mlflow, swanlab, vemlp_wandb, tensorboard, console, clearml, trackio, file, rl_insight); fix the name"
  run check "" -- "${PPO[@]}" "trainer.logger=[console,\${oc.env:X}]"
  assert_failure
  run cat "$BATS_TEST_TMPDIR/err"
  assert_output --regexp "^ERROR: trainer.logger: '\[console,\\$\{oc.env:X\}\]' is not a backend or a list of backends; write trainer.logger=\['console','wandb'\]"
  # verl's deprecated name for wandb (tracking.py:66-69) passes and gets wandb's variables.
  run check "" -- "${PPO[@]}" "trainer.logger=[console,tracking]"
  assert_success
  jq -e '.resolved.env_var_names | index("WANDB_RUN_ID") != null' <<<"$output"
  [[ ! -e $SHARED_ROOT/jobs ]]
}

# a_job ID RESUMED_FROM STEP: a finished grpo job's record with a checkpoint at STEP.
a_job() {
  mkdir -p "$SHARED_ROOT/jobs/$1/config" "$SHARED_ROOT/jobs/$1/checkpoints/global_step_$3"
  echo "$3" >"$SHARED_ROOT/jobs/$1/checkpoints/latest_checkpointed_iteration.txt"
  jq -n --arg from "$2" '{resolved: {workload: "grpo", resumed_from: $from}}' >"$SHARED_ROOT/jobs/$1/config/job_spec.json"
}

@test "tracking: every job of a chain (--retry's -rN, --resume-from of a resumed job) gets the chain's first job's id as WANDB_RUN_ID, with WANDB_RESUME=allow" {
  a_job grpo-first "" 2
  a_job grpo-first-r1 grpo-first/global_step_2 3
  a_job later grpo-first-r1/global_step_3 4
  local -a line=("${PPO[@]}" algorithm.adv_estimator=grpo "trainer.logger=[console,wandb]")
  run check "" --resume-from grpo-first -- "${line[@]}"
  assert_success
  runtime_env | jq -e '.env_vars | .WANDB_RUN_ID == "grpo-first" and .WANDB_RESUME == "allow"'
  run check "" --resume-from later/global_step_4 --submission-id again -- "${line[@]}"
  assert_success
  runtime_env | jq -e '.env_vars.WANDB_RUN_ID == "grpo-first"'
  # A job that resumes nothing starts its own run, named by its own id.
  run check "" --submission-id fresh -- "${line[@]}"
  runtime_env | jq -e '.env_vars.WANDB_RUN_ID == "fresh"'
  # An id longer than W&B's 64 characters: shortened, the same for every job of its chain.
  local long
  long=$(printf 'g%.0s' {1..100})
  run check "" --submission-id "$long" -- "${line[@]}"
  runtime_env | jq -e --arg p "${long:0:55}-" '.env_vars.WANDB_RUN_ID | startswith($p) and length == 64'
}

@test "tracking: the trackers' keys (WANDB_API_KEY, MLFLOW_TRACKING_TOKEN, MLFLOW_TRACKING_PASSWORD, SWANLAB_API_KEY) are private: not in the runtime_env, the resolved JobSpec, the log or the ray job submit words" {
  local k=planted-tracker-key-0123456789abcdef
  run check "env_vars: {WANDB_API_KEY: w-$k, MLFLOW_TRACKING_TOKEN: t-$k, MLFLOW_TRACKING_PASSWORD: p-$k, SWANLAB_API_KEY: s-$k, WANDB_MODE: offline}" -- \
    "${PPO[@]}" "trainer.logger=[console,wandb,mlflow,swanlab]"
  assert_success
  jq -e '.resolved.private_env_names == ["MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN", "SWANLAB_API_KEY", "WANDB_API_KEY"]' <<<"$output"
  runtime_env | jq -e '.env_vars | (has("WANDB_API_KEY") or has("SWANLAB_API_KEY") or has("MLFLOW_TRACKING_TOKEN")) == false
    and .WANDB_MODE == "offline" and (.MVP_PRIVATE_ENV | startswith("private_env/"))'
  [[ $output != *"$k"* ]]
  run grep -cF -- "$k" "$BATS_TEST_TMPDIR/err"
  assert_output 0
}

@test "tracking: wandb online without WANDB_API_KEY is one WARN line (a node may be logged in), not a refusal; with the key or WANDB_MODE=offline none" {
  run check "" -- "${PPO[@]}" "trainer.logger=[console,wandb]"
  assert_success
  grep -qF "trainer.logger has wandb, and the job has no WANDB_API_KEY (nor WANDB_MODE=offline): wandb.init fails unless its nodes are logged in" "$BATS_TEST_TMPDIR/err"
  run check "env_vars: {WANDB_API_KEY: k-0123456789}" -- "${PPO[@]}" "trainer.logger=[console,wandb]"
  assert_success
  run grep -q "has no WANDB_API_KEY" "$BATS_TEST_TMPDIR/err"
  assert_failure 1
  run check "env_vars: {WANDB_MODE: offline}" -- "${PPO[@]}" "trainer.logger=[console,wandb]"
  run grep -q "has no WANDB_API_KEY" "$BATS_TEST_TMPDIR/err"
  assert_failure 1
}

# swan RUN_ARGS...: tests/test_helper/swanlab_run.py with no network (a new,
# empty network namespace: swanlab cannot reach its cloud, so a login attempt
# fails rather than uploads), a HOME of its own, from a working directory of
# its own ($BATS_TEST_TMPDIR/cwd), bounded so that a hang fails the test.
swan() {
  mkdir -p "$BATS_TEST_TMPDIR/cwd" "$BATS_TEST_TMPDIR/home"
  (cd "$BATS_TEST_TMPDIR/cwd" && env -u SWANLAB_MODE -u SWANLAB_LOG_DIR -u SWANLAB_API_KEY HOME="$BATS_TEST_TMPDIR/home" \
    timeout 60 unshare -rn "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/swanlab_run.py" "$@" </dev/null)
}

@test "tracking: swanlab with no key and no network: verl 0.9.1's own Tracking logs steps 1-3 offline into <job dir>/tracking/swanlog (SWANLAB_MODE=offline, as the runbook sets it), read back from swanlab's run file" {
  local jd="$BATS_TEST_TMPDIR/jobs/job-1" runs
  run swan run "$SNAP" "$jd" runbook
  assert_success
  runs=("$jd"/tracking/swanlog/run-*/run-*.swanlab)
  [ "${#runs[@]}" -eq 1 ] && [ -f "${runs[0]}" ]
  run "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/swanlab_run.py" read "${runs[0]}"
  assert_success
  assert_output "$(printf '1 score 0.1\n2 score 0.2\n3 score 0.3\nfinished')"
  # Nothing landed in the worker's working directory.
  run ls -A "$BATS_TEST_TMPDIR/cwd"
  assert_output ""
}

@test "tracking: swanlab without the runbook's variables (planted): verl 0.9.1 writes ./swanlog in the working directory (tracking.py:137) and, in its default cloud mode with no key, swanlab.init fails (no login prompt without a TTY) instead of logging" {
  local jd="$BATS_TEST_TMPDIR/jobs/job-1"
  run swan run "$SNAP" "$jd" bare swanlab
  assert_failure 1
  assert_output --partial "Failed to initialize SwanLab in online mode: no TTY is available for interactive login"
  [ ! -e "$jd/tracking" ]
  # Offline but no SWANLAB_LOG_DIR: the run lands in the working directory, not the job's.
  mkdir -p "$BATS_TEST_TMPDIR/cwd"
  (cd "$BATS_TEST_TMPDIR/cwd" && SWANLAB_MODE=offline HOME="$BATS_TEST_TMPDIR/home" timeout 60 unshare -rn \
    "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/swanlab_run.py" run "$SNAP" "$jd" bare swanlab </dev/null >/dev/null 2>&1)
  compgen -G "$BATS_TEST_TMPDIR/cwd/swanlog/run-*/run-*.swanlab" >/dev/null
  [ ! -e "$jd/tracking" ]
}
