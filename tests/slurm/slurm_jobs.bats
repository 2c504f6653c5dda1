#!/usr/bin/env bats
# The Slurm tier: a real three-node Slurm on this host (tests/slurm/local_slurm.sh:
# munged, slurmctld, one slurmd per node namespace) runs the sbatch scripts of
# 70_render_sbatch.sh end to end with the CPU stand-in for verl. Placement is
# read from Ray (the job's debug bundle and result.json), not assumed.

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  local slot=${MVP_TEST_SLOT:-0}
  export MVP_RUNTIME=slurm MVP_SLURM_PARTITION=gpu MVP_SLURM_HEAD_PARTITION=cpu MVP_SLURM_HEAD_CPUS=1
  # Away from the integration tier's ports (Ray binds some on every address),
  # so both tiers can run at once, and below the kernel's ephemeral range
  # (32768+), where an outgoing connection can hold a pinned port first.
  # Node k uses base+1000k+{0..5,100..299}: 15000-17299 for slot 0, clear of
  # the integration tier's fixed ports (16379+, 18265+, 19001+).
  export MVP_GCS_PORT=$((8600 + 3 * slot)) MVP_DASHBOARD_PORT=$((8601 + 3 * slot))
  export MVP_CLIENT_PORT=$((8602 + 3 * slot)) MVP_NODE_PORT_BASE=$((15000 + 300 * slot))
  export MVP_SLURM_DIR=$BATS_FILE_TMPDIR/slurm MVP_TEST_LOG=$BATS_FILE_TMPDIR/test.log
  export SLURM_CONF=$MVP_SLURM_DIR/etc/slurm.conf
  "$MVP_REPO/tests/slurm/local_slurm.sh" up "$MVP_SLURM_DIR" 2>>"$MVP_TEST_LOG" || { cat "$MVP_TEST_LOG" >&3; return 1; }
  { mvp_script 00_prereq_check >/dev/null && mvp_prepare_inputs; } || { cat "$MVP_TEST_LOG" >&3; return 1; }
}

teardown_file() {
  "$MVP_REPO/tests/slurm/local_slurm.sh" down "$MVP_SLURM_DIR" >/dev/null 2>&1
}

setup() {
  load ../test_helper/common
}

# sbatch_wait SCRIPT ARGS...: renders SCRIPT as a Slurm job, submits it with
# sbatch --wait; sets JOB (Slurm id), RC (sbatch's exit) and OUT (the job's output).
sbatch_wait() {
  "$MVP_REPO/scripts/70_render_sbatch.sh" --out "$BATS_TEST_TMPDIR/job.sbatch" "$@" 2>>"$MVP_TEST_LOG"
  RC=0
  JOB=$(sbatch --parsable --wait "$BATS_TEST_TMPDIR/job.sbatch") || RC=$?
  JOB=${JOB%%;*}
  OUT=$(cat "$SHARED_ROOT/slurm/mvp-${1:0:2}-$JOB.out")
}

# The submission id the submit script printed inside the job.
submission_id() { grep -Eo '^(ppo|grpo|sft)-[0-9]{8}T[0-9]{6}-[0-9a-f]{6}$' <<<"$OUT" | tail -n 1; }

slurm_state() { scontrol show job "$1" | grep -Eo 'JobState=[A-Z]+' | head -n 1; }

# Ray processes left in the Slurm nodes' namespaces.
ray_left() {
  local pid
  for pid in $(MVP_STATE_DIR=$MVP_SLURM_DIR/nodes mvp_node_processes); do
    case $(cat "/proc/$pid/comm" 2>/dev/null) in raylet|gcs_server|ray) echo "$pid" ;; esac
  done
}
no_ray_left() { [[ -z $(ray_left) ]]; }

# two_nodes_kept LOGS: the job's worker logs of two nodes are kept under LOGS/nodes.
two_nodes_kept() { (($(find "$1/nodes" -name 'worker-*.out' -printf '%h\n' 2>/dev/null | sort -u | wc -l) >= 2)); }

# assert_placement ID: the head had 0 CPU and 0 GPU in Ray, the workers GPUs
# and worker_node, and the driver ran on a worker (all read from Ray).
assert_placement() {
  local id=$1 nodes
  nodes=$(cat "$SHARED_ROOT/jobs/$id"/debug/*_submit_nodes.json)
  jq -e '[.[] | select(.is_head_node)] | length == 1 and (.[0].resources_total | ((.CPU // 0) == 0 and (.GPU // 0) == 0))' <<<"$nodes"
  jq -e '[.[] | select(.is_head_node | not) | .resources_total | select(.GPU == 4 and .worker_node == 100)] | length == 2' <<<"$nodes"
  assert_equal "$(job_json "$id" result.json .driver_on_head)" false
  local driver_ip
  driver_ip=$(job_json "$id" result.json .driver_node_ip)
  jq -e --arg ip "$driver_ip" '[.[] | select(.is_head_node | not) | .node_ip] | index($ip) != null' <<<"$nodes"
  # Submitted from the head node, whose hostname is the Slurm node's name.
  jq -e 'select(.event == "submitted") | .host == "mvps-head"' "$SHARED_ROOT/jobs/$id/logs/submit.log"
}

@test "slurm: PPO as a heterogeneous job: head 0 CPU/0 GPU, driver on a worker, job directory complete, exit 0" {
  sbatch_wait 40 --override trainer.total_training_steps=3
  [[ $RC == 0 ]] || { echo "$OUT"; false; }
  assert_equal "$(slurm_state "$JOB")" JobState=COMPLETED
  local id
  id=$(submission_id)
  [[ -n $id ]] || { echo "$OUT"; false; }
  assert_equal "$(job_json "$id" result.json .status)" SUCCEEDED
  assert_placement "$id"
  [[ -s $SHARED_ROOT/jobs/$id/logs/driver.log && -f $SHARED_ROOT/jobs/$id/config/job_spec.json ]] ||
    { find "$SHARED_ROOT/jobs/$id"; cat "$SHARED_ROOT/jobs/$id"/logs/*.missing; false; }
  [[ -f $SHARED_ROOT/jobs/$id/checkpoints/latest_checkpointed_iteration.txt ]]
  # The job's own Ray was stopped on every node when it ended.
  mvp_wait_until 15 "no Ray process of the job left" no_ray_left || { ray_left; false; }
}

@test "slurm: SFT as a heterogeneous job: driver on a worker, SUCCEEDED, exit 0" {
  sbatch_wait 42
  [[ $RC == 0 ]] || { echo "$OUT"; false; }
  local id
  id=$(submission_id)
  [[ $id == sft-* ]] || { echo "$OUT"; false; }
  assert_equal "$(job_json "$id" result.json .status)" SUCCEEDED
  assert_placement "$id"
  mvp_wait_until 15 "no Ray process of the job left" no_ray_left || { ray_left; false; }
}

@test "slurm: a Ray job that fails fails the Slurm job (its exit code is the job's truth); Ray ran with token auth and the job's secret came through the GCS store" {
  # A JobSpec of the user's (43): the PPO template on the stand-in model, with a secret.
  sed -e 's|^model: .*|model: common/models/mvp-fixtures/model-standin|' \
    -e 's|^env_vars: {}|env_vars: {MY_API_TOKEN: slurm-secret-value}|' "$MVP_REPO/templates/jobspecs/ppo.yaml" \
    >"$BATS_TEST_TMPDIR/my ppo.yaml"
  sbatch_wait 43 "$BATS_TEST_TMPDIR/my ppo.yaml" --override +mvp_standin.fail_at_step=2 \
    --override trainer.total_training_steps=3 --override +mvp_standin.expect_env=MY_API_TOKEN
  [[ $RC == 1 ]] || { echo "$OUT"; false; }
  assert_equal "$(slurm_state "$JOB")" JobState=FAILED
  local id
  id=$(submission_id)
  [[ -n $id ]] || { echo "$OUT"; false; }
  assert_equal "$(job_json "$id" result.json .status)" FAILED
  # It failed where asked, after the secret reached the driver and the
  # TaskRunner actor: the GCS store was written and read with Ray's token.
  run expect_env_lines "$SHARED_ROOT/jobs/$id/logs/driver.log" MY_API_TOKEN
  assert_output 2
  run grep -c "fail_at_step=2: failing at step 2" "$SHARED_ROOT/jobs/$id/logs/driver.log"
  assert_output 1
  run stat -c %a "$SHARED_ROOT/secrets/ray_auth_token"
  assert_output 600
  run grep -r -l -F slurm-secret-value "$SHARED_ROOT" "$MVP_SLURM_DIR"
  assert_output ""
  mvp_wait_until 15 "no Ray process of the job left" no_ray_left || { ray_left; false; }
}

@test "70_render_sbatch --test-only: a request Slurm can never grant is one ERROR line, nothing written" {
  MVP_GPUS_PER_WORKER=16 run --separate-stderr "$MVP_REPO/scripts/70_render_sbatch.sh" --test-only \
    --out "$BATS_TEST_TMPDIR/never.sbatch" 40
  assert_failure
  assert_equal "$(grep -c '^ERROR: ' <<<"$stderr")" 1
  assert_regex "$stderr" "ERROR: Slurm would not run this job: .*(not available|Invalid generic resource).*2 nodes x 16 GPUs"
  [[ ! -e $BATS_TEST_TMPDIR/never.sbatch ]]
  run ls "$BATS_TEST_TMPDIR"
  refute_output --partial never.sbatch
}

@test "70_render_sbatch --test-only: a request that fits is accepted by Slurm" {
  run "$MVP_REPO/scripts/70_render_sbatch.sh" --test-only --out "$BATS_TEST_TMPDIR/ok.sbatch" 42
  assert_success
  assert_output --partial "sbatch --test-only: Job"
  [[ -x $BATS_TEST_TMPDIR/ok.sbatch ]]
}

# slurm_node_of_job ID: the worker node (mvps-wN) whose namespace runs a
# process of job ID's driver (its command line names the job directory).
slurm_node_of_job() {
  local node pid init ns
  for node in mvps-w0 mvps-w1; do
    init=$(cat "$MVP_SLURM_DIR/nodes/nodes/$node/init.pid" 2>/dev/null) || continue
    ns=$(readlink "/proc/$init/ns/pid") || continue
    for pid in /proc/[0-9]*; do
      [[ $(readlink "$pid/ns/pid" 2>/dev/null) == "$ns" ]] || continue
      tr '\0' ' ' <"$pid/cmdline" 2>/dev/null | grep -q "launch.py .*/jobs/$1\b" && { echo "$node"; return 0; }
    done
  done
  return 1
}

# raylet_tree NODE: host PIDs of NODE's raylet and every process under it.
raylet_tree() {
  local init ns pid raylet=""
  init=$(<"$MVP_SLURM_DIR/nodes/nodes/$1/init.pid")
  ns=$(readlink "/proc/$init/ns/pid")
  for pid in /proc/[0-9]*; do
    [[ $(readlink "$pid/ns/pid" 2>/dev/null) == "$ns" && $(cat "$pid/comm" 2>/dev/null) == raylet ]] && raylet=${pid#/proc/}
  done
  [[ -n $raylet ]] || return 1
  process_tree "$raylet"
}

@test "slurm: only the driver's Ray processes SIGKILLed on its node mid-job: the Slurm job fails, driver.log holds the job's start, the nodes' worker logs are kept, the bundle says where it was cut off, 51 shows the log" {
  local id=slurm-rayonly-$RANDOM node i
  { sed -e 's|^model: .*|model: common/models/mvp-fixtures/model-standin|' "$MVP_REPO/templates/jobspecs/ppo.yaml"
    echo "submission_id: $id"; } >"$BATS_TEST_TMPDIR/spec.yaml"
  MVP_LOG_SYNC_SECONDS=1 "$MVP_REPO/scripts/70_render_sbatch.sh" --out "$BATS_TEST_TMPDIR/job.sbatch" 43 \
    "$BATS_TEST_TMPDIR/spec.yaml" --override +mvp_standin.step_seconds=1 --override trainer.total_training_steps=100 2>>"$MVP_TEST_LOG"
  sbatch --parsable --wait "$BATS_TEST_TMPDIR/job.sbatch" >"$BATS_TEST_TMPDIR/sbatch.out" 2>&1 &
  local waiter=$! logs=$SHARED_ROOT/jobs/$id/logs
  # Killed once the keepers of both worker nodes (the driver's among them)
  # have had a sync of the job's worker logs: one node's first copy was not
  # always the driver node's too on a loaded machine.
  mvp_wait_until 120 "both nodes' worker logs kept in $logs" two_nodes_kept "$logs"
  mvp_wait_until 60 "the precheck marker in the kept driver log" grep -qsx "MVP_PRECHECK_MARKER=standin" "$logs/driver.live.log" ||
    { echo "# no precheck line in $logs/driver.live.log" >&2; false; }
  node=$(slurm_node_of_job "$id")
  local -a tree
  read -r -a tree <<<"$(raylet_tree "$node")"
  ((${#tree[@]} > 1))
  kill -KILL "${tree[@]}" 2>/dev/null || true  # one may have ended meanwhile
  local rc=0
  wait "$waiter" || rc=$?
  ((rc != 0))
  JOB=$(head -n 1 "$BATS_TEST_TMPDIR/sbatch.out") JOB=${JOB%%;*}
  cat "$SHARED_ROOT/slurm/mvp-43-$JOB.out" >&2
  assert_equal "$(slurm_state "$JOB")" JobState=FAILED
  assert_equal "$(job_json "$id" result.json .status)" FAILED
  cat "$logs/driver.log.missing" 2>/dev/null || true
  [[ ! -e $logs/driver.log.missing ]]
  run grep -c "^MVP_PRECHECK_MARKER=standin$" "$logs/driver.log"
  assert_output 1
  local ip
  ip=$(job_json "$id" result.json .driver_node_ip)
  compgen -G "$logs/nodes/$ip/worker-*.out" >/dev/null
  grep -E "^cut off (at step [1-9][0-9]* of [1-9][0-9]*|before its first step) \(ended FAILED; " "$SHARED_ROOT/jobs/$id/debug/cut_off.txt"
  # The Slurm job's Ray is gone: 51 reads the job directory.
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$id"
  assert_success
  assert_output --partial "MVP_PRECHECK_MARKER=standin"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "slurm-never-$RANDOM"
  assert_failure 1
  [[ $stderr == *"no such job"* ]]
  mvp_wait_until 15 "no Ray process of the job left" no_ray_left || { ray_left; false; }
}
