#!/usr/bin/env bats
# Submitting PPO, GRPO and SFT from the head of a real local cluster, with
# the CPU stand-in for verl as the trainer (over real verl 0.9.1's config; it
# checks verl's contract, fails where verl fails and trains nothing):
# placement, job directories, evidence, failure paths.

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  # The nodes hide GPUs from processes given none, as Ray does by default
  # before 2.60 (CUDA_VISIBLE_DEVICES=""): what an SFT driver meets on most
  # clusters today.
  export RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=1
  mvp_cluster_up
  mvp_prepare_inputs standin || { cat "$MVP_TEST_LOG" >&3; return 1; }
  # A JobSpec of the tests' own: the PPO template with a short run.
  sed -e 's/^  data.train_batch_size: 256$/  data.train_batch_size: 512/' \
    -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" \
    "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_FILE_TMPDIR/ppo-short.yaml"
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
  SPEC=$BATS_FILE_TMPDIR/ppo-short.yaml
}

# A job a test started to hold the GPUs is stopped, pass or fail, so the next test finds them free.
teardown() {
  [[ -f $BATS_TEST_TMPDIR/holder ]] && "$MVP_REPO/scripts/52_stop.sh" "$(<"$BATS_TEST_TMPDIR/holder")" >/dev/null 2>&1
  return 0
}

head_node_id() {
  curl -fsS "$MVP_DASHBOARD/api/v0/nodes?detail=true" |
    jq -r '.data.result.result[] | select(.is_head_node and .state == "ALIVE") | .node_id'
}

# assert_job_layout ID [sft]: verl's PPO/GRPO checkpoints hold actor/ (and
# critic/), SFT's hold the shards and data_0.pt directly in global_step_N/.
assert_job_layout() {
  local dir=$SHARED_ROOT/jobs/$1 kind=${2:-rl}
  local f
  for f in config/job_spec.json config/runtime_env.json config/submit_cmd.txt logs/driver.log logs/submit.log \
    result.json checkpoints/latest_checkpointed_iteration.txt; do
    [[ -s $dir/$f ]] || { echo "missing $f"; return 1; }
  done
  if [[ $kind == sft ]]; then
    [[ -f $dir/checkpoints/global_step_10/data_0.pt && ! -e $dir/checkpoints/global_step_10/actor ]] ||
      { echo "global_step_10 is not in SFT's layout"; return 1; }
  else
    [[ -d $dir/checkpoints/global_step_10/actor ]] || { echo "no global_step_10/actor"; return 1; }
  fi
  local kinds
  kinds=$(find "$dir/debug" -name '*.json' | sed -E 's/.*_(ray_status|job_list|nodes|actors)\.json$/\1/;t;d' | sort -u | wc -l)
  ((kinds >= 2)) || { echo "debug has $kinds kinds of Ray state"; return 1; }
}

# bare_submit MODULE ENV_JSON ARGS...: the stand-in's MODULE submitted with
# plain `ray job submit` (no runbook in between), waited for; prints the job's
# status and leaves its log in $BATS_TEST_TMPDIR/bare.log.
bare_submit() {
  local module=$1 env=$2; shift 2
  local id=bare-$RANDOM$RANDOM
  "$MVP_REPO/.venv/bin/ray" job submit --address "$MVP_DASHBOARD" --submission-id "$id" \
    --entrypoint-resources '{"worker_node": 1}' --entrypoint-num-cpus 1 \
    --runtime-env-json "$(jq -cn --arg p "$SHARED_ROOT/common/code/verl/standin" --argjson e "$env" '{env_vars: ({PYTHONPATH: $p} + $e)}')" \
    -- python3 -m "$module" "$@" >"$BATS_TEST_TMPDIR/$id.out" 2>&1 || true
  curl -fsS "$MVP_DASHBOARD/api/jobs/$id/logs" | jq -r .logs >"$BATS_TEST_TMPDIR/bare.log"
  curl -fsS "$MVP_DASHBOARD/api/jobs/$id" | jq -r .status
}

# The second job also shows --wait's progress lines (slow steps, a log synced
# every second): one job fewer than a test of its own.
@test "40_submit_ppo_epoch1 twice: two job directories, both SUCCEEDED, nothing shared or overwritten; --wait shows the running job's progress from the log its node keeps: step N/M, score, s/step and ETA, as plain lines when not on a terminal" {
  run --separate-stderr "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --wait
  assert_success
  local first
  first=$(last_line)
  local digest
  digest=$(tree_digest "$SHARED_ROOT/jobs/$first")
  MVP_LOG_SYNC_SECONDS=1 run --separate-stderr "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --wait \
    --override +mvp_standin.step_seconds=1
  assert_success
  local second
  second=$(last_line)
  grep -E "^[0-9TZ:-]+ +job $second: step [0-9]+/[0-9]+, score [^,]+, [0-9.]+ s/step, ETA [0-9]+s$" <<<"$stderr"
  # No terminal: no carriage return, no escape sequence.
  [[ $stderr != *$'\r'* && $stderr != *$'\x1b'* ]]
  [[ $first != "$second" ]]
  [[ $(job_json "$first" result.json .status) == SUCCEEDED && $(job_json "$second" result.json .status) == SUCCEEDED ]]
  [[ $(tree_digest "$SHARED_ROOT/jobs/$first") == "$digest" ]]
  run job_json "$second" config/job_spec.json '.resolved.trainer_overrides["trainer.default_local_dir"]'
  assert_output "$SHARED_ROOT/jobs/$second/checkpoints"
  echo "$first" >"$BATS_FILE_TMPDIR/ppo-id"
}

@test "PPO step lines come from verl's TaskRunnerV1 actor, behind Ray's coloured prefix; the nightly parser reads every one" {
  local id log
  id=$(<"$BATS_FILE_TMPDIR/ppo-id")
  log=$SHARED_ROOT/jobs/$id/logs/driver.log
  run grep -cE $'^\e\\[36m\\(TaskRunnerV1 pid=[0-9]+, ip=127\\.[0-9.]+\\)\e\\[0m step:[0-9]+ - ' "$log"
  assert_output 29
  run grep -c '^step:' "$log"
  assert_output 0
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c "
import json, sys
from mvp.core import metrics
print(json.dumps(metrics.summarize(open(sys.argv[1]).read(), 256)))" "$log"
  jq -e '.steps == 29 and .mean_step_s > 0 and .mean_throughput > 0 and .sps > 0' <<<"$output"
}

@test "driver placement, read from Ray: a worker's IP, not the head's; not the head's node id" {
  local id
  id=$(<"$BATS_FILE_TMPDIR/ppo-id")
  run curl -fsS "$MVP_DASHBOARD/api/jobs/$id"
  assert_success
  local job=$output head
  head=$(head_node_id)
  jq -e --arg net "$MVP_TEST_NET" '.driver_info.node_ip_address == "\($net).3" or .driver_info.node_ip_address == "\($net).4"' <<<"$job"
  jq -e --arg head "$head" --arg ip "$MVP_HEAD_IP" '.driver_node_id != $head and .driver_info.node_ip_address != $ip' <<<"$job"
  [[ $(job_json "$id" result.json .driver_on_head) == false ]]
  [[ $(job_json "$id" result.json .driver_node_id) == "$(jq -r .driver_node_id <<<"$job")" ]]
}

@test "job directory layout: config, logs, checkpoints/global_step_10/actor, debug with Ray state, result.json" {
  local id
  id=$(<"$BATS_FILE_TMPDIR/ppo-id")
  run assert_job_layout "$id"
  assert_success
  [[ $(cat "$SHARED_ROOT/jobs/$id/checkpoints/latest_checkpointed_iteration.txt") == 29 ]]
  [[ -d $SHARED_ROOT/jobs/$id/checkpoints/global_step_10/critic ]]
  run ls "$SHARED_ROOT/jobs/$id/checkpoints"
  assert_output $'global_step_10\nglobal_step_20\nglobal_step_29\nlatest_checkpointed_iteration.txt'
  run job_json "$id" result.json 'has("status") and has("driver_node_ip") and has("driver_node_id") and has("driver_on_head")'
  assert_output true
  run grep -c '^MVP_PRECHECK_MARKER=standin$' "$SHARED_ROOT/jobs/$id/logs/driver.log"
  assert_output 1
  # Hydra's own output (.hydra/ with the composed config) is in the job
  # directory, not in an outputs/<date>/<time>/ of the driver's working directory.
  [[ -f $SHARED_ROOT/jobs/$id/hydra/.hydra/config.yaml && -f $SHARED_ROOT/jobs/$id/hydra/.hydra/overrides.yaml ]]
  run find "$SHARED_ROOT" -name .hydra -not -path "$SHARED_ROOT/jobs/*"
  assert_output ""
  run job_json "$id" config/runtime_env.json .env_vars.TORCH_NCCL_AVOID_RECORD_STREAMS
  assert_output 1
  run jq -s '[.[] | select(.event == "submitted" and .host == "mvp11-ray-head")] | length' "$SHARED_ROOT/jobs/$id/logs/submit.log"
  assert_output 1
  # The environment the job ran in (fingerprint.json, written when it was
  # archived): Ray's version on every node as that node reports it, the
  # cluster's shape as Ray listed it at submission, the driver's versions
  # (none of CUDA, NCCL or a GPU driver on these CPU nodes) and packages.
  local fp=$SHARED_ROOT/jobs/$id/fingerprint.json ray torch nodes
  ray=$("$MVP_REPO/.venv/bin/python" -c 'import importlib.metadata as m; print(m.version("ray"))')
  torch=$("$MVP_REPO/.venv/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))')
  nodes=$(curl -fsS "$MVP_DASHBOARD/api/v0/nodes?detail=true" | jq -c '[.data.result.result[] | select(.state == "ALIVE")]')
  jq -e --arg ray "$ray" --argjson nodes "$nodes" '(.nodes | length) == ($nodes | length) and ($nodes | length) == 3
    and ([.nodes[].ip] | sort) == ([$nodes[].node_ip] | sort) and all(.nodes[]; .ray == $ray)
    and ([.nodes[] | select(.head) | .ray_from] == ["the dashboard (the head'"'"'s Ray)"])
    and ([.nodes[] | select(.head | not) | .ray_from] == ["the node'"'"'s log keeper", "the node'"'"'s log keeper"])' "$fp"
  jq -e --argjson nodes "$nodes" '.cluster.runtime == "local" and .cluster.auth_mode == "off" and .cluster.nodes == 3
    and .cluster.workers == 2 and (.cluster.worker_gpus | sort) == ([$nodes[] | select(.is_head_node | not) | .resources_total.GPU // 0] | sort)
    and (.cluster.worker_cpus | sort) == ([$nodes[] | select(.is_head_node | not) | .resources_total.CPU] | sort)' "$fp"
  jq -e --arg torch "$torch" --arg ray "$ray" '.snapshot.id == "standin" and (.snapshot.files_sha256 | test("^[0-9a-f]{64}$"))
    and .driver.torch == $torch and .driver.ray == $ray and .driver.cuda == null and .driver.nccl == null
    and .driver.gpu_driver == null and .packages.count > 50 and (.packages.sha256 | test("^[0-9a-f]{64}$"))' "$fp"
}

@test "41_submit_grpo_epoch1 and 42_submit_sft_minimal reach SUCCEEDED with the same layout" {
  run --separate-stderr "$MVP_REPO/scripts/41_submit_grpo_epoch1.sh" --wait
  assert_success
  local grpo
  grpo=$(last_line)
  run assert_job_layout "$grpo"
  assert_success
  [[ ! -e $SHARED_ROOT/jobs/$grpo/checkpoints/global_step_10/critic ]]
  run job_json "$grpo" config/job_spec.json '.resolved.trainer_overrides["algorithm.adv_estimator"] == "grpo"'
  assert_output true
  run --separate-stderr "$MVP_REPO/scripts/42_submit_sft_minimal.sh" --wait
  assert_success
  local sft
  sft=$(last_line)
  run assert_job_layout "$sft" sft
  assert_success
  [[ $(job_json "$sft" result.json .status) == SUCCEEDED ]]
  run job_json "$sft" config/runtime_env.json .env_vars.RAY_ADDRESS
  assert_output auto
  local log=$SHARED_ROOT/jobs/$sft/logs/driver.log
  # verl's SFT metric names, the first step line glued to tqdm's bar, no timing_s or perf.
  run grep -c 'step:[0-9]* - train/loss:[0-9.e-]* - train/grad_norm:[0-9.e-]* - train/lr:' "$log"
  assert_output 20
  run grep -c 'Epoch 1/1: *0%|.*| 0/[0-9]* \[00:00<?, ?it/s\]step:1 - train/loss:' "$log"
  assert_output 1
  run grep -c -e timing_s/ -e perf/ "$log"
  assert_output 0
  # verl's SFT checkpoint layout: the shards and data_0.pt directly in global_step_N/, no actor/.
  run ls "$SHARED_ROOT/jobs/$sft/checkpoints/global_step_20"
  assert_line data_0.pt
  assert_line model_world_size_8_rank_0.pt
  assert_line huggingface
  refute_line actor
  # The driver ran on cuda (auto_set_device) and could: the runbook kept the node's GPUs visible to it.
  run job_json "$sft" config/runtime_env.json .env_vars.RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO
  assert_output 0
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c "
import json, sys
from mvp.core import metrics
print(json.dumps(metrics.summarize(open(sys.argv[1]).read(), 64)))" "$log"
  jq -e '.steps == 20 and .step_time_from == "tqdm s/it" and .mean_step_s > 0 and .sps > 0' <<<"$output"
}

@test "SFT under verl 0.9.1's auto_set_device: on these nodes a bare SFT job's driver dies 'No CUDA GPUs are available', trainer.device=cpu or not" {
  # What 42 met before the runbook kept the node's GPUs visible to the driver (42 itself succeeds above).
  run bare_submit verl.trainer.sft_trainer_ray '{"RAY_ADDRESS": "auto"}' trainer.device=cpu "trainer.logger=['console']" \
    "data.train_files=$SHARED_ROOT/datasets/gsm8k_sft/train.parquet" "model.path=$SHARED_ROOT/common/models/$MVP_MODEL_ID" \
    trainer.nnodes=2 trainer.n_gpus_per_node=4 trainer.total_training_steps=2 data.train_batch_size=64 \
    "trainer.default_local_dir=$BATS_TEST_TMPDIR/ckpt" "hydra.run.dir=$BATS_TEST_TMPDIR/hydra"
  assert_output FAILED
  run grep -c "RuntimeError: No CUDA GPUs are available" "$BATS_TEST_TMPDIR/bare.log"
  (( output >= 1 ))
  # The driver had asked for cpu: verl's auto_set_device made it cuda.
  run grep -c "trainer.device=cpu" "$BATS_TEST_TMPDIR/bare.log"
  (( output >= 1 ))
}

@test "43 (ray job submit) and 44 (JobSubmissionClient) write the same files for the same JobSpec, ids aside" {
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --wait
  assert_success
  local cli
  cli=$(last_line)
  run --separate-stderr "$MVP_REPO/scripts/44_submit_sdk.sh" "$MVP_REPO/templates/configs/dev.yaml" "$SPEC" --wait
  assert_success
  local sdk
  sdk=$(last_line)
  [[ $(jq -r 'select(.event == "submitted") | .via' "$SHARED_ROOT/jobs/$cli/logs/submit.log") == cli ]]
  [[ $(jq -r 'select(.event == "submitted") | .via' "$SHARED_ROOT/jobs/$sdk/logs/submit.log") == sdk ]]
  local f
  for f in config/job_spec.json config/runtime_env.json config/submit_cmd.txt checkpoints/latest_checkpointed_iteration.txt; do
    diff <(sed "s/$cli/ID/g" "$SHARED_ROOT/jobs/$cli/$f") <(sed "s/$sdk/ID/g" "$SHARED_ROOT/jobs/$sdk/$f")
  done
  diff <(cd "$SHARED_ROOT/jobs/$cli" && find checkpoints config | sort) <(cd "$SHARED_ROOT/jobs/$sdk" && find checkpoints config | sort)
  [[ $(job_json "$cli" result.json .status) == SUCCEEDED && $(job_json "$sdk" result.json .status) == SUCCEEDED ]]
}

@test "re-submitting an existing id fails and leaves its directory byte-identical" {
  # The id of the first job of this file (SUCCEEDED, known to Ray, its directory whole).
  local id digest
  id=$(<"$BATS_FILE_TMPDIR/ppo-id")
  [[ $(job_json "$id" result.json .status) == SUCCEEDED ]]
  sed "s/^submission_id: .*/submission_id: $id/" "$SPEC" >"$BATS_TEST_TMPDIR/fixed.yaml"
  digest=$(tree_digest "$SHARED_ROOT/jobs/$id")
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/fixed.yaml"
  assert_failure
  assert_output --partial "ERROR: submission id $id already exists in Ray; ids are never reused"
  [[ $(tree_digest "$SHARED_ROOT/jobs/$id") == "$digest" ]]
  # A directory Ray does not know (say, from before a cluster restart) is just as final.
  mkdir -p "$SHARED_ROOT/jobs/orphan-id/logs"
  echo keep >"$SHARED_ROOT/jobs/orphan-id/logs/old.log"
  sed 's/^submission_id: .*/submission_id: orphan-id/' "$SPEC" >"$BATS_TEST_TMPDIR/orphan.yaml"
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/orphan.yaml"
  assert_failure
  assert_output --partial "ERROR: job directory $SHARED_ROOT/jobs/orphan-id already exists"
  run find "$SHARED_ROOT/jobs/orphan-id" -type f
  assert_output "$SHARED_ROOT/jobs/orphan-id/logs/old.log"
  run curl -s -o /dev/null -w '%{http_code}' "$MVP_DASHBOARD/api/jobs/orphan-id"
  assert_output 404
}

@test "a secret env var reaches the driver and a Ray worker's actor but no file under the job directory, no log, no output and not Ray's runtime_env" {
  local secret=s3cr3t-value-for-the-test
  sed "s/^env_vars: {}/env_vars: {PLATFORM_TOKEN: $secret, PLAIN_SETTING: visible}/" "$SPEC" >"$BATS_TEST_TMPDIR/secret.yaml"
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/secret.yaml" --wait \
    --override +mvp_standin.expect_env=PLATFORM_TOKEN
  assert_success
  refute_output --partial "$secret"
  [[ $stderr != *"$secret"* ]]
  local id
  id=$(last_line)
  run grep -c "mvp_standin: PLATFORM_TOKEN is set in the driver (${#secret} characters)" "$SHARED_ROOT/jobs/$id/logs/driver.log"
  assert_output 1
  run grep -c "mvp_standin: PLATFORM_TOKEN is set in the TaskRunner actor (${#secret} characters)" "$SHARED_ROOT/jobs/$id/logs/driver.log"
  assert_output 1
  run grep -rl -- "$secret" "$SHARED_ROOT/jobs/$id"
  assert_failure
  assert_output ""
  # Ray's runtime_env (what it puts on its workers' argv and logs) names
  # where the value is, not the value; the plain variable travels as before.
  run job_json "$id" config/runtime_env.json '[.env_vars.PLATFORM_TOKEN, .env_vars.PLAIN_SETTING, .env_vars.MVP_PRIVATE_ENV, .worker_process_setup_hook] | map(tostring) | join(" ")'
  assert_output "null visible private_env/$id mvp_private_env.load_in_worker"
  run curl -s "$MVP_DASHBOARD/api/jobs/$id"
  assert_success
  [[ $(jq -c '.runtime_env.env_vars | keys' <<<"$output") == '["MVP_PRIVATE_ENV","PLAIN_SETTING","PYTHONPATH","TORCH_NCCL_AVOID_RECORD_STREAMS"]' ]]
  run job_json "$id" config/job_spec.json '.resolved.private_env_names | join(",")'
  assert_output PLATFORM_TOKEN
  run grep -c PLATFORM_TOKEN "$SHARED_ROOT/jobs/$id/config/submit_cmd.txt"
  assert_output 0
  run "$MVP_REPO/scripts/51_logs.sh" "$id"
  assert_success
  refute_output --partial "$secret"
}

@test "overrides with spaces, quotes, \$(...), backticks and ; reach the trainer byte for byte, and run nothing" {
  local marker=$BATS_TEST_TMPDIR/pwned
  # Hydra's grammar (verl's) takes such a value only quoted: single quotes, \' inside, and \\\${ for a
  # literal ${ (Hydra makes \\ one backslash, OmegaConf reads \${ as no interpolation).
  local hostile="'it\\'s a \"test\" \$(touch $marker) \`touch $marker\` ; touch $marker & echo \\\\\\\${HOME}'"
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --wait --override "+mvp_standin.note=$hostile"
  assert_success
  local id
  id=$(last_line)
  run sed -n 's/^mvp_standin: overrides=//p' "$SHARED_ROOT/jobs/$id/logs/driver.log"
  jq -e --arg want "+mvp_standin.note=$hostile" 'index([$want]) != null' <<<"$output"
  [[ ! -e $marker ]]
  # Unquoted, verl's Hydra would refuse it in the job: the preflight refuses it first, writing nothing.
  local before
  before=$(ls "$SHARED_ROOT/jobs" | wc -l)
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --override "+mvp_standin.note=a \$(touch $marker)"
  assert_failure
  assert_output --partial "ERROR: preflight: Hydra refuses the override '+mvp_standin.note=a \$(touch $marker)'"
  [[ $(ls "$SHARED_ROOT/jobs" | wc -l) == "$before" && ! -e $marker ]]
}

@test "43 -- python3 -m verl.trainer.main_ppo KEY=VALUE...: a verl command line runs as a runbook job, and verl's resolved config holds a value with spaces, commas, brackets and \$ as typed" {
  # As a user types it in a shell: a Hydra-quoted string, so the comma and the brackets are text.
  local typed="'run a, [b] {c} \$HOME \$(id) ;'"
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" --wait -- python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo data.train_files=datasets/gsm8k/train.parquet data.val_files=datasets/gsm8k/test.parquet \
    "actor_rollout_ref.model.path=common/models/$MVP_MODEL_ID" actor_rollout_ref.rollout.name=vllm \
    trainer.total_training_steps=2 "trainer.experiment_name=$typed"
  assert_success
  local id dir
  id=$(last_line)
  dir=$SHARED_ROOT/jobs/$id
  jq -e --arg d "$dir" '.resolved | .workload == "grpo" and .trainer_overrides["trainer.default_local_dir"] == "\($d)/checkpoints"' \
    "$dir/config/job_spec.json"
  [[ $(jq -r .status "$dir/result.json") == SUCCEEDED ]]
  # The word verl got, then the config its Hydra composed (hydra.run.dir is the job's), read back resolved.
  run sed -n 's/^mvp_standin: overrides=//p' "$dir/logs/driver.log"
  jq -e --arg want "trainer.experiment_name=$typed" 'index([$want]) != null' <<<"$output"
  run "$MVP_REPO/.venv/bin/python" -c 'import sys; from omegaconf import OmegaConf
c = OmegaConf.load(sys.argv[1]); print(c.trainer.experiment_name); print(c.data.train_files)' "$dir/hydra/.hydra/config.yaml"
  assert_success
  assert_line --index 0 'run a, [b] {c} $HOME $(id) ;'
  assert_line --index 1 "$SHARED_ROOT/datasets/gsm8k/train.parquet"
  # The cluster's shape is the runbook's: one ERROR line, no directory, no Ray job.
  local before jobs_before
  before=$(ls "$SHARED_ROOT/jobs" | wc -l)
  jobs_before=$(curl -fsS "$MVP_DASHBOARD/api/jobs/" | jq "[.[] | select(.submission_id)] | length")
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" -- python3 -m verl.trainer.main_ppo data.train_files=datasets/gsm8k/train.parquet \
    "actor_rollout_ref.model.path=common/models/$MVP_MODEL_ID" trainer.nnodes=1
  assert_failure
  assert_output --partial "ERROR: the command line after --: trainer.nnodes is the runbook's to set: it is the cluster's number of workers: set MVP_WORKERS"
  [[ $(ls "$SHARED_ROOT/jobs" | wc -l) == "$before" ]]
  [[ $(curl -fsS "$MVP_DASHBOARD/api/jobs/" | jq "[.[] | select(.submission_id)] | length") == "$jobs_before" ]]
}

@test "a typo in an override is refused before submission, naming the closest real keys: no directory, no Ray job" {
  local before jobs_before
  before=$(ls "$SHARED_ROOT/jobs" | wc -l)
  jobs_before=$(curl -fsS "$MVP_DASHBOARD/api/jobs/" | jq "[.[] | select(.submission_id)] | length")
  run "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --override trainer.nnode=1
  assert_failure
  assert_output --partial "ERROR: preflight: 'trainer.nnode' is not a key of verl's config (snapshot standin, config 'ppo_trainer'); closest real keys: trainer.nnodes"
  run "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --override +trainer.save_freq=5
  assert_failure
  assert_output --partial "ERROR: preflight: '+trainer.save_freq' adds a key that verl's config already has"
  sed "s/^env_vars: {}/env_vars: {VERL_FULL_DETERMINISM: '1'}/" "$SPEC" >"$BATS_TEST_TMPDIR/reserved.yaml"
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$BATS_TEST_TMPDIR/reserved.yaml"
  assert_failure
  assert_output --partial "ERROR: env_vars.VERL_FULL_DETERMINISM: verl's main_ppo sets VERL_FULL_DETERMINISM in the runtime_env of its own ray.init"
  [[ $(ls "$SHARED_ROOT/jobs" | wc -l) == "$before" ]]
  [[ $(curl -fsS "$MVP_DASHBOARD/api/jobs/" | jq "[.[] | select(.submission_id)] | length") == "$jobs_before" ]]
}

@test "the stand-in fails where verl 0.9.1 fails, submitted bare: Hydra's unknown key, Ray's reserved env merge, verl's free-GPU check" {
  local -a ok=("data.train_files=$SHARED_ROOT/datasets/gsm8k/train.parquet" "actor_rollout_ref.model.path=$SHARED_ROOT/common/models/$MVP_MODEL_ID"
    actor_rollout_ref.rollout.name=vllm trainer.nnodes=2 trainer.n_gpus_per_node=4 trainer.total_training_steps=2 "trainer.logger=['console']"
    "trainer.default_local_dir=$BATS_TEST_TMPDIR/ckpt" "hydra.run.dir=$BATS_TEST_TMPDIR/hydra")
  run bare_submit verl.trainer.main_ppo '{}' "${ok[@]}" trainer.no_such=1
  assert_output FAILED
  run grep -c "Could not override 'trainer.no_such'" "$BATS_TEST_TMPDIR/bare.log"
  assert_output 1
  run bare_submit verl.trainer.main_ppo '{"VERL_FULL_DETERMINISM": "1"}' "${ok[@]}"
  assert_output FAILED
  run grep -c "Failed to merge the Job's runtime env" "$BATS_TEST_TMPDIR/bare.log"
  (( output >= 1 ))
  # A runbook job holds all 8 GPUs; verl does not queue behind it.
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --override +mvp_standin.step_seconds=4
  assert_success
  local holder
  holder=$(last_line)
  echo "$holder" >"$BATS_TEST_TMPDIR/holder"
  mvp_wait_until 90 "step 1 in the holder $holder's log" mvp_job_log_has "$holder" 'step:1 '
  run bare_submit verl.trainer.main_ppo '{}' "${ok[@]}"
  assert_output FAILED
  # Ray drops a resource that is all taken from the free view: verl sums 0.
  run grep -cE "ValueError: Total available GPUs 0(\.0)? is less than total desired GPUs 8" "$BATS_TEST_TMPDIR/bare.log"
  (( output >= 1 ))
  "$MVP_REPO/scripts/52_stop.sh" "$holder" >/dev/null 2>&1
}

@test "40 refuses while another job holds the GPUs it needs, naming that job; with --queue it waits for them" {
  # The holder must outlive the refused 40 and the start of the queued one:
  # 14 steps of 2 s (two CLI start-ups took over 7 s on a loaded machine).
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --override +mvp_standin.step_seconds=2
  assert_success
  local holder
  holder=$(last_line)
  echo "$holder" >"$BATS_TEST_TMPDIR/holder"
  mvp_wait_until 90 "step 1 in the holder $holder's log" mvp_job_log_has "$holder" 'step:1 '
  local before
  before=$(ls "$SHARED_ROOT/jobs" | wc -l)
  run "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh"
  assert_failure
  assert_output --partial "ERROR: the job needs 8 GPUs but 0 of 8 are free (held by $holder (8)); verl checks free GPUs and fails rather than queue"
  [[ $(ls "$SHARED_ROOT/jobs" | wc -l) == "$before" ]]
  # --queue: submitted once the holder has let go (it takes ~30 s). The stand-in checks free GPUs as
  # verl does, so SUCCEEDED means they were free when it started.
  run --separate-stderr "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --queue --wait
  assert_success
  [[ $stderr == *"queued: 8 GPUs needed, 0 free; waiting for $holder"* ]]
  [[ $(curl -fsS "$MVP_DASHBOARD/api/jobs/$holder" | jq -r .status) == SUCCEEDED ]]
}

@test "a job told to fail: --wait exits non-zero, result.json says FAILED, the debug bundle is there" {
  run --separate-stderr "$MVP_REPO/scripts/40_submit_ppo_epoch1.sh" --wait --override +mvp_standin.fail_at_step=3
  assert_failure
  local id
  id=$(last_line)
  [[ $id == ppo-* ]]
  [[ $(job_json "$id" result.json .status) == FAILED ]]
  run grep -c "failing at step 3 as asked" "$SHARED_ROOT/jobs/$id/logs/driver.log"
  assert_output 1
  run bash -c "ls '$SHARED_ROOT/jobs/$id/debug' | grep -c '_final_'"
  (( output >= 2 ))
  [[ ! -e $SHARED_ROOT/jobs/$id/checkpoints/global_step_10 ]]
  echo "$id" >"$BATS_FILE_TMPDIR/failed-id"
}

# ray_job_status ID: what Ray's own CLI says of the job (its plain style: no
# log records, no colours), its address line, frames of dashes and the blank
# lines around them aside (those inside the message stay).
ray_job_status() {
  "$MVP_REPO/.venv/bin/ray" job status --log-style pretty --log-color false --address "$MVP_DASHBOARD" "$1" 2>&1 |
    awk '/^Job submission server address: / || /^-+$/ {next} /^Status message: / {m = 1} m || NF {print}'
}

@test "50_status.sh ID says what ray job status ID says, a SUCCEEDED and a FAILED job (its message too); an id Ray and the archive lack is one ERROR line" {
  local id
  for id in "$(<"$BATS_FILE_TMPDIR/ppo-id")" "$(<"$BATS_FILE_TMPDIR/failed-id")"; do
    run --separate-stderr "$MVP_REPO/scripts/50_status.sh" "$id"
    assert_success
    assert_equal "$output" "$(ray_job_status "$id")"
  done
  assert_line --index 0 "Job '$id' failed"
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" ppo-never-was --porcelain
  assert_failure 1
  assert_output ""
  assert_equal "$stderr" "ERROR: job ppo-never-was: no such job: Ray does not know it and $SHARED_ROOT/jobs/ppo-never-was holds no record of it; list the jobs with scripts/50_status.sh"
}

@test "51_logs.sh follows a running job; 50_status.sh shows its progress; 52_stop.sh stops it and archives it as STOPPED; the copy its node kept while it ran ends as Ray's copy; node keepers: none on the head, one NodeKeeper actor on the other worker (the dispatcher keeps the driver's node itself)" {
  MVP_LOG_SYNC_SECONDS=1 run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --override +mvp_standin.step_seconds=2
  assert_success
  local id
  id=$(last_line)
  mvp_wait_until 90 "step 1 in $id's log" mvp_job_log_has "$id" 'step:1 '
  # 50's progress comes from the copy in the job directory (synced every second here).
  mvp_wait_until 30 "step 1 in $id's kept copy" grep -q 'step:1 ' "$SHARED_ROOT/jobs/$id/logs/driver.live.log"
  run "$MVP_REPO/scripts/50_status.sh"
  assert_line --regexp "^  $id +RUNNING .*\[step [0-9]+/14, score [^,]+, [0-9.]+ s/step, ETA [0-9]+s\]$"
  run "$MVP_REPO/scripts/52_stop.sh" "$id"
  assert_success
  assert_output --partial "job $id is STOPPED"
  [[ $(job_json "$id" result.json .status) == STOPPED ]]
  run "$MVP_REPO/scripts/52_stop.sh" "$id"
  assert_success
  assert_output --partial "SKIP: stopping $id (it already ended STOPPED)"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$id" --follow
  assert_success
  assert_output --partial "MVP_PRECHECK_MARKER=standin"
  assert_output --partial "step:1 "
  # Ray stopped the driver and its descendants; the keeper, outside that
  # tree, made its last copy, and 52 archived the job only after it. It
  # copies the file's bytes; Ray's log API serves tqdm's carriage returns as
  # newlines.
  local logs=$SHARED_ROOT/jobs/$id/logs
  tr '\r' '\n' <"$logs/driver.live.log" | diff - "$logs/driver.log"
  # Node keepers go where the job's workers can run: a worker, never the 0-CPU 0-GPU head.
  compgen -G "$logs/nodes/$MVP_TEST_NET.[34]" >/dev/null
  [[ ! -e $logs/nodes/$MVP_HEAD_IP ]]
  # The driver's node is kept by the dispatcher's own thread: a NodeKeeper
  # actor goes to the other worker only (one Ray worker process less a job).
  local jd=$SHARED_ROOT/jobs/$id
  jq -en --slurpfile actors <(cat "$jd"/debug/*_final_actors.json) --slurpfile result "$jd/result.json" --arg id "$id" \
    '[$actors[0][] | select(.class_name == "NodeKeeper" and (.name | startswith("\($id)@")))] as $k
     | ($k | length) == 1 and $k[0].node_id != $result[0].driver_node_id'
}

@test "--dry-run validates and prints the command, and writes nothing" {
  local before
  before=$(ls "$SHARED_ROOT/jobs" | wc -l)
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --dry-run
  assert_success
  jq -e '.resolved.workload == "ppo"' <<<"$output"
  [[ $stderr == *"ray job submit --address $MVP_DASHBOARD"* ]]
  [[ $(ls "$SHARED_ROOT/jobs" | wc -l) == "$before" ]]
}

@test "50_status.sh lists past jobs from the archive after the cluster is restarted" {
  local id
  id=$(<"$BATS_FILE_TMPDIR/ppo-id")
  "$MVP_REPO/scripts/02_down.sh" 2>/dev/null
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" --json
  assert_failure
  jq -e --arg id "$id" '.jobs[] | select(.submission_id == $id) | .status == "SUCCEEDED" and .source == "archive" and .driver_on_head == false' <<<"$output"
  mvp_cluster_up
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" --json
  assert_success
  jq -e --arg id "$id" '.jobs[] | select(.submission_id == $id) | .status == "SUCCEEDED"' <<<"$output"
}
