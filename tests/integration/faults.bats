#!/usr/bin/env bats
# Hostile input and faults on a real local cluster (the CPU stand-in for verl
# as the trainer): secrets, one-line refusals, a full disk, a head and a
# worker killed under a running job. Each case failed on the runbook before
# the hardening work; the README's "what survives what" table is built from
# these tests. Tests run in file order: the later ones kill nodes.

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log MVP_LOST_AFTER_S=5 MVP_MIN_FREE_MB=16
  # Job directories live on a small tmpfs of their own, so a test can fill
  # it; mounted before the nodes exist, so every node sees it.
  mkdir -p "$SHARED_ROOT/jobs"
  mount -t tmpfs -o size=64m mvp-test-jobs "$SHARED_ROOT/jobs"
  # A variable of the operator's shell that must never reach Ray or a job.
  export OPERATOR_CANARY=operator-canary-value
  # A Ray token left in HOME (any local ray.init of Ray 2.60 writes one): with
  # MVP_RAY_AUTH=off it must not turn token auth on.
  export HOME=$BATS_FILE_TMPDIR/home
  mkdir -p "$HOME/.ray" && printf 'stray%064d' 0 >"$HOME/.ray/auth_token"
  mvp_cluster_up
  unset OPERATOR_CANARY
  mvp_prepare_inputs standin || { cat "$MVP_TEST_LOG" >&3; return 1; }
  sed -e "s|^model: .*|model: common/models/$MVP_MODEL_ID|" "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_FILE_TMPDIR/ppo.yaml"
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
  umount "$SHARED_ROOT/jobs" 2>/dev/null || true
  umount "$BATS_FILE_TMPDIR/small" 2>/dev/null || true
}

setup() {
  load ../test_helper/common
  SPEC=$BATS_FILE_TMPDIR/ppo.yaml
}

# What a test may leave when it fails half-way: a full disk, a mount.
teardown() {
  rm -f "$SHARED_ROOT/jobs/.filler"*
  if mountpoint -q "$BATS_FILE_TMPDIR/small"; then umount "$BATS_FILE_TMPDIR/small"; fi
  rm -f "$BATS_TEST_TMPDIR/polling"
  # A test that killed a node brings the cluster back, pass or fail, so the
  # tests after it do not meet a head or a worker short (01, 20, 21 are SKIPs
  # for what is up).
  if [[ -f $BATS_TEST_TMPDIR/restart-cluster ]]; then
    local s
    for s in 01_up 20_start_head 21_start_workers; do "$MVP_REPO/scripts/$s.sh" >/dev/null 2>&1 || true; done
  fi
}

# spec_with LINE...: the PPO template with these top-level lines appended.
spec_with() {
  local out=$BATS_TEST_TMPDIR/spec-$RANDOM.yaml
  { cat "$SPEC"; printf '%s\n' "$@"; } >"$out"
  echo "$out"
}

# The submission ids whose private variables are in the head's GCS store.
private_env_ids() {
  RAY_AUTH_MODE=disabled "$MVP_REPO/.venv/bin/python" -c 'import sys
sys.path.insert(0, sys.argv[1])
import mvp_private_env
print(" ".join(mvp_private_env.Store(sys.argv[2]).submission_ids()))' "$MVP_REPO/helpers/jobenv" "$MVP_HEAD_IP:$MVP_GCS_PORT"
}

# process_in NODE COMM: host PIDs of the processes named COMM in node NODE.
process_in() {
  local init ns pid
  init=$(<"$MVP_STATE_DIR/nodes/$1/init.pid")
  ns=$(readlink "/proc/$init/ns/pid")
  for pid in $(mvp_node_processes); do
    [[ $(readlink "/proc/$pid/ns/pid" 2>/dev/null) == "$ns" && $(cat "/proc/$pid/comm" 2>/dev/null) == "$2" ]] && echo "$pid"
  done
  return 0
}

# Host PIDs of the processes of node NAME other than its init and the init's
# sleep: what is left of a Ray (daemons, workers, job drivers) in it.
node_payload_processes() {
  local init ns pid
  init=$(<"$MVP_STATE_DIR/nodes/$1/init.pid")
  ns=$(readlink "/proc/$init/ns/pid")
  for pid in $(mvp_node_processes); do
    [[ $pid != "$init" && $(readlink "/proc/$pid/ns/pid" 2>/dev/null) == "$ns" ]] || continue
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == sleep && $(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) == "$init" ]] && continue
    echo "$pid"
  done
  return 0
}

node_empty() { [[ -z $(node_payload_processes "$1") ]]; }

# The node (mvp11-ray-worker-N) whose address is IP.
node_at() {
  local i
  for i in 1 2; do [[ $1 == "$MVP_TEST_NET.$((i + 2))" ]] && echo "mvp11-ray-worker-$((i - 1))"; done
  return 0
}


@test "faults: a variable exported in the shell that started the nodes reaches neither Ray's daemons nor jobs" {
  local pid
  for node in mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1; do
    pid=$(process_in "$node" raylet)
    [[ -n $pid ]]
    run grep -c -a OPERATOR_CANARY "/proc/$pid/environ"
    assert_output 0
  done
}

@test "faults: MVP_RAY_AUTH=off with a Ray token left in ~/.ray: Ray is told disabled, the dashboard answers without a token" {
  [[ -s $HOME/.ray/auth_token ]]
  run curl -s -o /dev/null -w '%{http_code}' "$MVP_DASHBOARD/api/version"
  assert_output 200
  local pid
  pid=$(process_in mvp11-ray-worker-0 raylet)
  run grep -c -a -x RAY_AUTH_MODE=disabled <(tr '\0' '\n' <"/proc/$pid/environ")
  assert_output 1
}

@test "faults: no process on the machine (Ray's workers included) has a secret on its argv during a whole --wait submission, and no file under the shared root or the state dir (Ray's logs included) holds it" {
  local secret=MY-API-TOKEN-value-f00d
  local spec
  spec=$(spec_with "env_vars: {MY_API_TOKEN: $secret}")
  printf '%s\n' "$secret" >"$BATS_TEST_TMPDIR/pattern"
  # The poller reads the secret from a file: grep -f keeps it off grep's own argv.
  touch "$BATS_TEST_TMPDIR/polling" "$BATS_TEST_TMPDIR/hits" "$BATS_TEST_TMPDIR/workers" "$BATS_TEST_TMPDIR/polling-started"
  (while [[ -e $BATS_TEST_TMPDIR/polling ]]; do
    for hit in $(grep -l -a -F -f "$BATS_TEST_TMPDIR/pattern" /proc/[0-9]*/cmdline 2>/dev/null); do
      tr '\0' ' ' <"$hit" >>"$BATS_TEST_TMPDIR/hits" 2>/dev/null && echo >>"$BATS_TEST_TMPDIR/hits"
    done
    for hit in $(grep -l -a -F MVP_PRIVATE_ENV /proc/[0-9]*/cmdline 2>/dev/null); do
      tr '\0' ' ' <"$hit" >>"$BATS_TEST_TMPDIR/workers" 2>/dev/null && echo >>"$BATS_TEST_TMPDIR/workers"
    done
    echo . >>"$BATS_TEST_TMPDIR/rounds"
    sleep 0.05
  done) &
  local poller=$!
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$spec" --wait --override +mvp_standin.expect_env=MY_API_TOKEN
  rm -f "$BATS_TEST_TMPDIR/polling"
  wait "$poller"
  assert_success
  local id
  id=$(last_line)
  # Ray starts every worker process of the job (setup_worker.py, then
  # default_worker.py) with the serialized runtime_env on its argv: the
  # secret is not in it (Ray's GCS store holds it; helpers/jobenv).
  # (Empty lines: processes gone meanwhile.)
  run grep -v '^$' "$BATS_TEST_TMPDIR/hits"
  assert_output ""
  # The poller looked all along (a job of several seconds: dozens of rounds).
  (($(wc -l <"$BATS_TEST_TMPDIR/rounds") > 20))
  # ... and saw Ray's worker processes of this job, whose argv carries the
  # runtime_env (so the grep above looked where the secret used to be).
  grep -q -E "/ray/_private/workers/(setup|default)_worker\.py .*MVP_PRIVATE_ENV" "$BATS_TEST_TMPDIR/workers"
  # The secret reached the driver and the TaskRunner actor (a Ray worker).
  run expect_env_lines "$SHARED_ROOT/jobs/$id/logs/driver.log" MY_API_TOKEN
  assert_output 2
  # Not in any file: the job directory, Ray's own logs (runtime_env_agent.log
  # logs every runtime_env it builds) and the nodes' /tmp/ray, in the state dir.
  run grep -r -l -a -F -f "$BATS_TEST_TMPDIR/pattern" "$SHARED_ROOT" "$MVP_STATE_DIR"
  assert_output ""
  grep -q -a "MVP_PRIVATE_ENV" -r "$MVP_STATE_DIR" --include=runtime_env_agent.log
  # Nor in a temporary file: none made during the submission in /tmp or
  # /dev/shm holds it (a submitter killed mid-submit used to leave one).
  # Other processes' files come and go meanwhile (pip's temporary
  # directories): find and grep pass over one that vanished under them.
  run bash -c 'find /tmp /dev/shm -ignore_readdir_race -maxdepth 1 -type f -newer "$1" -print0 | xargs -0 -r grep -s -l -a -F -f "$2"' _ \
    "$BATS_TEST_TMPDIR/polling-started" "$BATS_TEST_TMPDIR/pattern"
  assert_output ""
}

# One chain of three jobs, each with private variables, proves both claims: a
# later job's bundle holds no earlier job's secret (from a JobSpec: the first;
# from a Ray config: the second, through 44), and each submission with some
# (44's, then 43's) removes those of the job that ended before it.
@test "faults: one job's secret never appears in a later job's debug bundle (job list, actors), from the JobSpec or the Ray config; a job's private variables live in Ray's GCS store only while it may run: the next submission with some (through 44 or 43) removes those of ended jobs" {
  local secret=supersecret123-of-job-a first second later
  printf '%s\n' "$secret" >"$BATS_TEST_TMPDIR/pattern"
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$(spec_with "env_vars: {MY_API_TOKEN: $secret}")" --wait
  assert_success
  first=$(last_line)
  assert_equal "$(private_env_ids)" "$first"
  # A Ray config whose runtime_env carries a secret, through 44.
  printf 'entrypoint_resources: {worker_node: 1}\nruntime_env: {env_vars: {CFG_SECRET: %s-cfg}}\n' "$secret" \
    >"$BATS_TEST_TMPDIR/cfg.yaml"
  run "$MVP_REPO/scripts/44_submit_sdk.sh" "$BATS_TEST_TMPDIR/cfg.yaml" "$SPEC" --wait
  assert_success
  second=$(last_line)
  assert_output --partial "removed the private variables of 1 ended job(s) from Ray's GCS store"
  assert_equal "$(private_env_ids)" "$second"
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" "$(spec_with "env_vars: {MY_API_TOKEN: later-value}")" --wait
  assert_success
  later=$(last_line)
  assert_output --partial "removed the private variables of 1 ended job(s) from Ray's GCS store"
  assert_equal "$(private_env_ids)" "$later"
  ls "$SHARED_ROOT/jobs/$later/debug/"*_job_list.json >/dev/null
  run grep -r -l -a -F -f "$BATS_TEST_TMPDIR/pattern" "$SHARED_ROOT/jobs"
  assert_output ""
  # Nothing under a job directory is readable by others.
  run find "$SHARED_ROOT/jobs/$later/config" "$SHARED_ROOT/jobs/$later/debug" "$SHARED_ROOT/jobs/$later/logs" -perm /o=r
  assert_output ""
}

@test "faults: every refusal through 43 is exactly one ERROR line (no frames), alias bombs and oversized specs included, in seconds" {
  local bomb='bomb: {a: &a [x, x, x, x, x, x, x, x, x]' prev=a name
  for name in b c d e f g h i j; do bomb+=", $name: &$name [*$prev, *$prev, *$prev, *$prev, *$prev, *$prev, *$prev, *$prev, *$prev]"; prev=$name; done
  bomb+='}'
  ln -sf /etc/passwd "$SHARED_ROOT/user/code/rf_link.py"
  local -a cases=(
    "trainer_overide: {}"
    "dataset: datasets/gsm8k/train.parquet"
    "workload: dpo"
    "trainer_overrides: {'bad key': 1}"
    "env_vars: 'MY_API_TOKEN=supersecret-in-a-type-error'"
    "shared_root: /elsewhere"
    "reward_fn_path: user/code/rf_link.py"
    "model: /etc"
    "ray: {address: 12}"
    "${bomb/bomb/model}"
  )
  local c spec t0
  for c in "${cases[@]}" BINARY HUGE; do
    case $c in
      BINARY) spec=$BATS_TEST_TMPDIR/binary.yaml; head -c 4096 /dev/urandom >"$spec" ;;
      HUGE) spec=$BATS_TEST_TMPDIR/huge.yaml; { cat "$SPEC"; head -c 300000 /dev/zero | tr '\0' '#'; } >"$spec" ;;
      *) spec=$(spec_with "$c") ;;
    esac
    t0=$SECONDS
    run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$spec"
    ((SECONDS - t0 < 10)) || { echo "case '$c' took $((SECONDS - t0))s"; false; }
    [[ $status == 1 ]] || { echo "case '$c': exit $status"; false; }
    # Timestamped lines are the scripts' own log; everything else is the answer.
    local answer
    answer=$(grep -v -E '^[0-9]{4}-[0-9T:-]+Z ' <<<"$stderr" || true)
    [[ $(wc -l <<<"$answer") == 1 && $answer == ERROR:* ]] || { echo "case '${c:0:60}': $answer"; false; }
    [[ $answer != *supersecret* ]]
  done
  rm -f "$SHARED_ROOT/user/code/rf_link.py"
}

@test "faults: a shared root with 24 KB free: refused before a job directory is claimed, one line, Ray never sees a job; ENOSPC in 30 is one line" {
  local before jobs_before avail
  before=$(ls "$SHARED_ROOT/jobs" | sort)
  jobs_before=$(curl -fsS "$MVP_DASHBOARD/api/jobs/" | jq "[.[] | select(.submission_id)] | length")
  avail=$(df --output=avail -B1 "$SHARED_ROOT/jobs" | tail -n 1)
  fallocate -l $((avail - 24 * 1024)) "$SHARED_ROOT/jobs/.filler"
  MVP_MIN_FREE_MB=1 run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC"
  assert_failure 1
  [[ $(grep -v -E '^[0-9]{4}-[0-9T:-]+Z ' <<<"$stderr") == "ERROR: only 0 MB free under $SHARED_ROOT/jobs, less than MVP_MIN_FREE_MB=1"* ]]
  # Past the check (MVP_MIN_FREE_MB=0) on a disk that is really full: still one line.
  fallocate -l "$(df --output=avail -B1 "$SHARED_ROOT/jobs" | tail -n 1)" "$SHARED_ROOT/jobs/.filler2"
  MVP_MIN_FREE_MB=0 run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC"
  assert_failure 1
  run grep -v -E '^[0-9]{4}-[0-9T:-]+Z ' <<<"$stderr"
  assert_output --regexp '^ERROR: could not write .* \(No space left on device\); nothing was submitted$'
  rm "$SHARED_ROOT/jobs/.filler" "$SHARED_ROOT/jobs/.filler2"
  [[ $(ls "$SHARED_ROOT/jobs" | sort) == "$before" ]]
  [[ $(curl -fsS "$MVP_DASHBOARD/api/jobs/" | jq "[.[] | select(.submission_id)] | length") == "$jobs_before" ]]
  # 30 on a 1 MB shared root: one line, before and while building, no file left.
  local small=$BATS_FILE_TMPDIR/small
  mkdir -p "$small" && mount -t tmpfs -o size=1m mvp-test-small "$small"
  run --separate-stderr "$MVP_REPO/scripts/30_prepare_data_and_model.sh" --shared-root "$small"
  assert_failure 1
  [[ $(grep -v -E '^[0-9]{4}-[0-9T:-]+Z ' <<<"$stderr") == "ERROR: only 1 MB free under $small, less than MVP_MIN_FREE_MB=16,"* ]]
  MVP_MIN_FREE_MB=0 run --separate-stderr "$MVP_REPO/scripts/30_prepare_data_and_model.sh" --shared-root "$small"
  assert_failure 1
  run grep -v -E '^[0-9]{4}-[0-9T:-]+Z ' <<<"$stderr"
  assert_output "ERROR: no space left under $small while preparing data and model; free space and run scripts/30_prepare_data_and_model.sh again"
  run find "$small" -type f
  assert_output ""
  umount "$small"
}

@test "faults: the head's GCS SIGKILLed under --wait, then the head: the wait archives LOST with a bundle from the job directory; meanwhile 51 shows the kept copy with one WARN line (--steps too) and 50 lists the jobs' last known state and exits 1; after the next bring-up no worker holds a process of the old cluster (20 resets those still in it) and no orphan driver writes on; the other running job is LOST; 51 says Ray lost the job, and an unknown id is no such job" {
  local other waited=faults-head-$RANDOM w
  touch "$BATS_TEST_TMPDIR/restart-cluster"
  # Half the cluster each, or admission refuses the second.
  other=$("$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --override +mvp_standin.step_seconds=2 \
    --override trainer.nnodes=1 2>/dev/null | tail -n 1)
  MVP_LOG_SYNC_SECONDS=1 "$MVP_REPO/scripts/43_submit_jobspec.sh" "$(spec_with "submission_id: $waited")" --wait \
    --override +mvp_standin.step_seconds=2 --override trainer.nnodes=1 >"$BATS_TEST_TMPDIR/wait.out" 2>"$BATS_TEST_TMPDIR/wait.err" &
  local waiter=$!
  driver_ip_when_running "$waited" >/dev/null
  driver_ip_when_running "$other" >/dev/null
  # Step 1 is in the copy the driver's node keeps (every second for this
  # job) before the head's GCS dies; on a loaded machine that can take a while.
  mvp_wait_until 60 "step 1 in $waited's kept driver log" grep -qs "step:1 - " "$SHARED_ROOT/jobs/$waited/logs/driver.live.log"
  # The head's GCS alone, by PID: its dashboard lives on a while and still
  # answers /api/version, while every call that needs the GCS hangs.
  local gcs
  gcs=$(process_in mvp11-ray-head gcs_server)
  [[ -n $gcs ]]
  kill -KILL "$gcs"
  local rc=0
  wait "$waiter" || rc=$?
  ((rc == 1))
  [[ $(tail -n 1 "$BATS_TEST_TMPDIR/wait.out") == "$waited" ]]
  run cat "$BATS_TEST_TMPDIR/wait.err"
  assert_output --partial "the cluster went away"
  refute_output --partial "Traceback"
  [[ $(job_json "$waited" result.json .status) == LOST ]]
  [[ $(job_json "$waited" result.json .last_ray_status) == RUNNING ]]
  # The bundle is made from what the job directory holds: the kept copy is in it.
  local kept
  kept=$(find "$SHARED_ROOT/jobs/$waited/debug" -name '*_final_kept.json')
  [[ -n $kept ]]
  jq -e '.kept_logs | map(.path) | index("logs/driver.live.log")' "$kept"
  jq -e '.progress.step >= 1 and (.ray_job_id | test("^[0-9a-f]{8}$"))' "$kept"
  grep -E "^cut off at step [1-9][0-9]* " "$SHARED_ROOT/jobs/$waited/debug/cut_off.txt"
  # 51 shows the kept copy, saying in ONE warning that the cluster does not
  # answer and when the copy was last synced; --steps reads the same copy.
  local t0=$SECONDS
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$waited"
  assert_success
  [[ $output == *"step:1 - "* ]] || fail "51 said: $stderr; showed: ${output:0:800}"
  run grep -c . <<<"$stderr"
  assert_output 1
  [[ $stderr == *" !  "*"job $waited: the cluster does not answer ("*"); showing the "*"; last synced "* ]] || fail "51's warning: $stderr"
  [[ $stderr =~ last\ synced\ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]] || fail "51's warning: $stderr"
  ((SECONDS - t0 < 30)) || fail "51 took $((SECONDS - t0)) s with the GCS gone"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$waited" --steps --json
  assert_success
  jq -e 'map(.step) | index(1)' <<<"$output"
  # 50 lists the shared root's jobs with their last known state, and exits 1
  # for the cluster: the other job (no result yet) RUNNING as its kept log says.
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" --json
  assert_failure 1
  jq -e '.cluster.up == false' <<<"$output"
  jq -e --arg id "$waited" '.jobs[] | select(.submission_id == $id) | .status == "LOST"' <<<"$output"
  jq -e --arg id "$other" '.jobs[] | select(.submission_id == $id) | .last_known.status == "RUNNING" and .last_known.as_of > 0' <<<"$output"
  run "$MVP_REPO/scripts/50_status.sh"
  assert_failure 1
  assert_output --partial "cluster  DOWN"
  assert_line --regexp "^  $other +RUNNING\? .*\(last known: the newest log copy its nodes kept, "
  # Then the whole head node.
  kill -KILL "$(<"$MVP_STATE_DIR/nodes/mvp11-ray-head/init.pid")"
  # Bring-up again: 01 brings the head node back, 20 resets the workers and reconciles.
  run "$MVP_REPO/scripts/01_up.sh"
  assert_success
  run "$MVP_REPO/scripts/20_start_head.sh"
  assert_success
  # A worker whose raylet still waited for the old head is reset by 20. One
  # whose raylet gave up first (Ray's GCS reconnect timeout, 60 s: a loaded
  # machine's head restart can take that long) took its workers with it, and
  # Ray's watcher SIGKILLed their drivers: nothing of the old cluster is left.
  for w in mvp11-ray-worker-0 mvp11-ray-worker-1; do
    if [[ $output != *"resetting $w"* ]]; then
      mvp_wait_until 5 "$w holds no process of the old cluster" node_empty "$w" ||
        { echo "# $w was not reset and holds: $(node_payload_processes "$w" | xargs ps -o pid,args -p)" >&3; false; }
    fi
  done
  assert_output --partial "1 job(s) of a cluster that went away archived as LOST: $other"
  [[ $(job_json "$other" result.json .status) == LOST ]]
  # No driver of the old cluster writes into its job directory any more:
  # every file of both, with its size and modification time, is the same
  # 6 s later (a log line appended, a checkpoint or file added, shows).
  local d1 d2
  d1=$(find "$SHARED_ROOT/jobs/$waited" "$SHARED_ROOT/jobs/$other" -printf '%p %s %T@\n' | sort)
  sleep 6
  d2=$(find "$SHARED_ROOT/jobs/$waited" "$SHARED_ROOT/jobs/$other" -printf '%p %s %T@\n' | sort)
  [[ $d1 == "$d2" ]] || { diff <(echo "$d1") <(echo "$d2") | head -n 20 >&3; false; }
  # The new head's Ray never heard of the job: 51 says Ray lost it and shows
  # the log kept in its directory; an id with no directory is no such job.
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$waited"
  assert_success
  [[ $stderr == *"job $waited: Ray lost the job (its directory is here; Ray does not list it"* ]]
  [[ $output == *"step:1 - "* ]] || { echo "51 said: $stderr; showed: ${output:0:800}"; false; }
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "never-$waited"
  assert_failure
  [[ $stderr == *"job never-$waited: no such job: Ray does not know it and there is no job directory"* ]]
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  run "$MVP_REPO/scripts/50_status.sh"
  assert_success
}

@test "faults: the worker holding the driver killed: FAILED, driver.log copied from the node's own Ray logs, the copy kept while it ran holds its start, 51 shows either, 21 brings the node back" {
  local id=faults-worker-$RANDOM ip node
  MVP_LOG_SYNC_SECONDS=1 "$MVP_REPO/scripts/43_submit_jobspec.sh" "$(spec_with "submission_id: $id")" --wait \
    --override +mvp_standin.step_seconds=1 >"$BATS_TEST_TMPDIR/wait.out" 2>"$BATS_TEST_TMPDIR/wait.err" &
  local waiter=$!
  ip=$(driver_ip_when_running "$id")
  node=$(node_at "$ip")
  [[ -n $node ]]
  # Killed once its node has copied the driver's first lines (the precheck).
  mvp_wait_until 60 "the precheck line in $id's kept driver log" \
    grep -qsx "MVP_PRECHECK_MARKER=standin" "$SHARED_ROOT/jobs/$id/logs/driver.live.log"
  touch "$BATS_TEST_TMPDIR/restart-cluster"
  kill -KILL "$(<"$MVP_STATE_DIR/nodes/$node/init.pid")"
  local rc=0
  wait "$waiter" || rc=$?
  ((rc == 1))
  [[ $(job_json "$id" result.json .status) == FAILED ]]
  cat "$SHARED_ROOT/jobs/$id/logs/driver.log.missing" 2>/dev/null || true
  run grep -c "^MVP_PRECHECK_MARKER=standin$" "$SHARED_ROOT/jobs/$id/logs/driver.log"
  assert_output 1
  run "$MVP_REPO/scripts/51_logs.sh" "$id"
  assert_success
  assert_output --partial "MVP_PRECHECK_MARKER=standin"
  # The copy the node kept while the job ran (every second here) died with
  # the node: it holds the job's start, and is a prefix of Ray's own copy.
  local logs=$SHARED_ROOT/jobs/$id/logs
  grep -q "^MVP_PRECHECK_MARKER=standin$" "$logs/driver.live.log"
  cmp -n "$(stat -c %s "$logs/driver.live.log")" "$logs/driver.live.log" "$logs/driver.log"
  # Without Ray's copy (as where no node's Ray logs can be read from here),
  # 51 shows the kept copy; without either, it says Ray lists the job but
  # cannot serve its log, never "does not know it".
  mv "$logs/driver.log" "$BATS_TEST_TMPDIR/driver.log"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$id"
  assert_success
  assert_output --partial "MVP_PRECHECK_MARKER=standin"
  [[ $stderr == *"showing the copy its node kept while it ran"* ]]
  mv "$logs/driver.live.log" "$BATS_TEST_TMPDIR/"
  [[ ! -d $logs/nodes ]] || mv "$logs/nodes" "$BATS_TEST_TMPDIR/"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "$id"
  assert_failure 1
  [[ $stderr == *"ERROR: job $id: Ray lists it as FAILED but cannot serve its log, and no copy was archived"* ]]
  mv "$BATS_TEST_TMPDIR/driver.log" "$BATS_TEST_TMPDIR/driver.live.log" "$logs/"
  [[ ! -d $BATS_TEST_TMPDIR/nodes ]] || mv "$BATS_TEST_TMPDIR/nodes" "$logs/"
  # The bundle says where the job was cut off (the newest step any kept log
  # holds; killed 3 s after it started, it may not have reached its first;
  # "of N" when a kept worker log holds verl's progress bar, as when the
  # TaskRunner on the other node trained on until Ray declared the job FAILED).
  grep -E "^cut off (at step [1-9][0-9]*( of [1-9][0-9]*)?|before its first step) \(ended FAILED; " \
    "$SHARED_ROOT/jobs/$id/debug/cut_off.txt" || fail "cut_off.txt: $(cat "$SHARED_ROOT/jobs/$id/debug/cut_off.txt")"
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
  assert_output --partial "bringing back worker node(s) that are down: $node"
  run "$MVP_REPO/scripts/50_status.sh" --json
  assert_success
  jq -e '.cluster.workers | length == 2' <<<"$output"
}

# job_files_on NODE HEX: Ray's own worker logs of Ray job HEX in node NODE's
# session (the host directory that holds its /tmp/ray): named for the job, or
# prestarted (ffffffff) and marked `:job_id:HEX` on their first line.
job_files_on() {
  # The node's current Ray session only: a head restart earlier in this file
  # started new sessions, whose job ids count from 01000000 again, so an old
  # session holds files of another job with the same id.
  local tmp=$MVP_STATE_DIR/nodes/$1/tmp-ray f session
  session=$(readlink "$tmp/session_latest") || return 1
  for f in "$tmp/${session##*/}"/logs/worker-*.{out,err}; do
    [[ -f $f ]] || continue
    [[ $(basename "$f") == worker-*-"$2"-* || $(head -n 1 "$f") == ":job_id:$2" ]] && echo "$f"
  done
  return 0
}

# job_is_placed_on NODE HEX: Ray has files of job HEX on node NODE.
job_is_placed_on() { [[ -n $(job_files_on "$1" "$2") ]]; }

# kept_all DIR FILE...: each FILE's copy (same name) is in DIR.
kept_all() {
  local dir=$1 f
  shift
  for f; do [[ -f $dir/$(basename "$f") ]] || return 1; done
}

# The keeper dispatcher's own Ray connection: named in Ray's job list as the
# keeper of submission ID (metadata), a DRIVER job without a submission id.
keeper_listed() {
  mvp_dashboard_get /api/jobs/ | jq -e --arg id "$1" \
    '[.[] | select(.type == "DRIVER" and .submission_id == null and .metadata.mvp_role == "log_keeper" and .metadata.mvp_keeper_of == $id)] | length == 1' >/dev/null
}

# One round of the test below: a 14-step job on both workers, the worker NOT
# holding its driver SIGKILLed once both nodes run the job's Ray workers and
# each of the doomed node's files of the job has had a sync.
nodelogs_round() {
  local id=faults-nodelogs-$RANDOM ip node other other_ip f
  MVP_LOG_SYNC_SECONDS=1 "$MVP_REPO/scripts/43_submit_jobspec.sh" "$(spec_with "submission_id: $id")" --wait \
    --override +mvp_standin.step_seconds=1 --override trainer.total_training_steps=14 \
    >"$BATS_TEST_TMPDIR/wait.out" 2>"$BATS_TEST_TMPDIR/wait.err" &
  local waiter=$!
  ip=$(driver_ip_when_running "$id")
  node=$(node_at "$ip")
  [[ -n $node ]]
  if [[ $node == mvp11-ray-worker-0 ]]; then other=mvp11-ray-worker-1; else other=mvp11-ray-worker-0; fi
  other_ip=$MVP_TEST_NET.$((${other##*-} + 3))
  local logs=$SHARED_ROOT/jobs/$id/logs hex
  mvp_wait_until 60 "the keeper's ray_job_id of $id" test -s "$logs/ray_job_id"
  hex=$(<"$logs/ray_job_id")
  # The keeper read the job's own Ray job id: a worker started again in the
  # same Ray session counts PIDs from 1 again, and an earlier job's driver
  # with this driver's PID left its log there (it once made the keeper copy
  # the earlier job's files, and none of this one's).
  assert_equal "$hex" "$(mvp_dashboard_get "/api/jobs/$id" | jq -r .job_id)"
  # Ray's job list names the keeper's own connection; 50 counts submissions only.
  mvp_wait_until 30 "Ray's job list naming the keeper of $id" keeper_listed "$id"
  run "$MVP_REPO/scripts/50_status.sh" --json
  jq -e --arg id "$id" '(.jobs | map(.submission_id) | index($id)) and all(.jobs[]; .submission_id | type == "string")' <<<"$output"
  # The job's Ray workers run on both nodes (a placement group on each),
  # before the kill: on a loaded machine they can take a while to start.
  mvp_wait_until 90 "$id's Ray workers on the doomed node $other" job_is_placed_on "$other" "$hex"
  mvp_wait_until 90 "$id's Ray workers on the driver's node $node" job_is_placed_on "$node" "$hex"
  # What Ray holds on the doomed node, each file kept by a sync before it dies.
  local -a theirs
  mapfile -t theirs < <(job_files_on "$other" "$hex")
  mvp_wait_until 60 "a sync of each of $other's files of $id" kept_all "$logs/nodes/$other_ip" "${theirs[@]}"
  # The next tests need both workers, also when this one fails.
  touch "$BATS_TEST_TMPDIR/restart-cluster"
  kill -KILL "$(<"$MVP_STATE_DIR/nodes/$other/init.pid")"
  local rc=0
  wait "$waiter" || rc=$?
  cat "$BATS_TEST_TMPDIR/wait.err" >&2
  # Each of the dead node's files of the job was kept, as a byte prefix of
  # Ray's own (the node's files are on this host's disk in the local runtime).
  local copy
  for f in "${theirs[@]}"; do
    copy=$logs/nodes/$other_ip/$(basename "$f")
    [[ -f $copy ]] || { echo "not kept: $f" >&2; false; }
    cmp -n "$(stat -c %s "$copy")" "$copy" "$f"
  done
  grep -qx ":job_id:$hex" "$logs/nodes/$other_ip"/worker-*.out
  # The driver's node stayed up: each of its files of the job is kept whole,
  # the TaskRunner's last step among them (verl's step lines come from it).
  local -a ours
  mapfile -t ours < <(job_files_on "$node" "$hex")
  ((${#ours[@]} > 0))
  for f in "${ours[@]}"; do
    diff "$f" "$logs/nodes/$ip/$(basename "$f")"
  done
  # If the TaskRunner was on the driver's node the job trains on to its last
  # step (the stand-in, as verl, only holds the dead node's bundles) and the
  # bundle says nothing of a cut; if it died with the node, the bundle says where.
  if [[ $(job_json "$id" result.json .status) == SUCCEEDED ]]; then
    cat "$logs/nodes/$ip"/*.out | grep -q "^step:14 "
    [[ ! -e $SHARED_ROOT/jobs/$id/debug/cut_off.txt ]]
  else
    grep -E "^cut off (at step [1-9][0-9]* of 14|before its first step) " "$SHARED_ROOT/jobs/$id/debug/cut_off.txt"
  fi
  # Kept files are the job directory's: owner and group only.
  [[ -z $(find "$logs/nodes" -type f -perm /o=r) ]]
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
}

# MVP_TEST_REPEAT=N runs it N times in a row on the same cluster (each round
# kills a worker and brings it back, so later rounds meet a restarted node,
# where the keeper once read an earlier job's Ray job id).
@test "faults: the worker NOT holding the driver SIGKILLed mid-job: its Ray worker logs of the job are kept up to the last sync; the driver's node, still up, has its worker logs (the TaskRunner's steps) kept whole; the keeper read the job's own Ray job id and Ray's job list names its connection" {
  local r
  for ((r = 1; r <= ${MVP_TEST_REPEAT:-1}; r++)); do
    echo "# round $r of ${MVP_TEST_REPEAT:-1}" >&3
    nodelogs_round
  done
  # An id nobody had is "no such job".
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" "faults-never-$RANDOM"
  assert_failure 1
  [[ $stderr == *"no such job: Ray does not know it and there is no job directory"* ]] || fail "51 said: $stderr"
}

@test "faults: --retry goes on from the newest checkpoint in a new job named after the first, and stops when a resumption fails at the same step as the one before" {
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --wait --retry 5 \
    --override trainer.save_freq=2 --override +mvp_standin.fail_at_step=3
  assert_failure 1
  # The first job saved global_step_2 and failed at step 3; each resumption
  # from it failed at step 3 too, and the second such one ended the chain.
  local -a ids
  mapfile -t ids <<<"$output"
  assert_equal "${#ids[@]}" 3
  local first=${ids[0]}
  [[ $stderr == *"retry 1 of 5: job $first ended FAILED; resuming from $first/global_step_2"* ]]
  [[ $stderr == *"retry 2 of 5: job ${ids[1]} ended FAILED; resuming from $first/global_step_2"* ]]
  [[ $stderr == *"ERROR: job ${ids[2]} ended FAILED before its first step as ${ids[1]} did, both resumed from $first/global_step_2 and neither saved a checkpoint: no progress, the chain stops here"* ]]
  # Linked both ways without touching the ended job: the retries are named
  # after it, and each names the checkpoint it took.
  assert_equal "${ids[1]} ${ids[2]}" "$first-r1 $first-r2"
  run job_json "${ids[1]}" config/job_spec.json .resolved.resumed_from
  assert_output "$first/global_step_2"
  run job_json "${ids[2]}" config/job_spec.json .resolved.resumed_from
  assert_output "$first/global_step_2"
  # The failed job's own checkpoints are as it left them; the others saved none.
  run ls "$SHARED_ROOT/jobs/$first/checkpoints"
  assert_output $'global_step_2\nlatest_checkpointed_iteration.txt'
  [[ -z $(ls "$SHARED_ROOT/jobs/${ids[2]}/checkpoints") ]]
  # Without --wait nothing would see the failure: refused in one line.
  run --separate-stderr "$MVP_REPO/scripts/43_submit_jobspec.sh" "$SPEC" --retry 1
  assert_failure
  [[ $stderr == *"ERROR: --retry resumes a job that failed, which only --wait sees; add --wait" ]]
}

@test "faults: --retry after the worker holding the driver is killed: a new job on the other worker resumes at the checkpoint's next step and SUCCEEDS" {
  local id=faults-retry-$RANDOM ip node
  # Half the cluster (one worker), so the job can go on without the dead node.
  "$MVP_REPO/scripts/43_submit_jobspec.sh" "$(spec_with "submission_id: $id")" --wait --retry 1 \
    --override trainer.nnodes=1 --override trainer.save_freq=2 --override trainer.total_training_steps=60 \
    --override +mvp_standin.step_seconds=1 >"$BATS_TEST_TMPDIR/retry.out" 2>"$BATS_TEST_TMPDIR/retry.err" &
  local waiter=$!
  ip=$(driver_ip_when_running "$id")
  node=$(node_at "$ip")
  [[ -n $node ]]
  # Killed once a checkpoint is complete (verl writes the tracker file last).
  mvp_wait_until 120 "a complete checkpoint of $id" test -f "$SHARED_ROOT/jobs/$id/checkpoints/latest_checkpointed_iteration.txt"
  touch "$BATS_TEST_TMPDIR/restart-cluster"
  kill -KILL "$(<"$MVP_STATE_DIR/nodes/$node/init.pid")"
  local rc=0
  wait "$waiter" || rc=$?
  ((rc == 0)) || { cat "$BATS_TEST_TMPDIR/retry.err"; false; }
  local second step
  second=$(tail -n 1 "$BATS_TEST_TMPDIR/retry.out")
  assert_equal "$second" "$id-r1"
  step=$(<"$SHARED_ROOT/jobs/$id/checkpoints/latest_checkpointed_iteration.txt")
  [[ $(job_json "$id" result.json .status) =~ ^(FAILED|LOST)$ ]]
  run job_json "$second" config/job_spec.json .resolved.resumed_from
  assert_output "$id/global_step_$step"
  [[ $(job_json "$second" result.json .status) == SUCCEEDED ]]
  # Proof it went on: its first training step (after the validation logged
  # at the checkpoint's step, as verl does) is the checkpoint's next.
  run bash -c '"$1" "$2" --steps --json 2>/dev/null | jq "[.[] | select(has(\"timing_s/step\"))][0].step"' _ \
    "$MVP_REPO/scripts/51_logs.sh" "$second"
  assert_output "$((step + 1))"
  run "$MVP_REPO/scripts/21_start_workers.sh"
  assert_success
}

# Last in the file: it takes the cluster down, and nothing after it needs
# one back (teardown_file ends the nodes), so no bring-up follows.
@test "faults: 20_start_head.sh fails within seconds, in one line, when the dashboard port is taken" {
  "$MVP_REPO/scripts/02_down.sh" >/dev/null 2>&1
  python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[2], int(sys.argv[3]))); s.listen(); open(sys.argv[1], "w").close(); time.sleep(60)' \
    "$BATS_TEST_TMPDIR/ready" "$MVP_HEAD_IP" "$MVP_DASHBOARD_PORT" &
  local holder=$!
  mvp_wait_until 10 "the port holder listening" test -e "$BATS_TEST_TMPDIR/ready"
  "$MVP_REPO/scripts/01_up.sh" >/dev/null 2>&1
  local t0=$SECONDS
  run --separate-stderr "$MVP_REPO/scripts/20_start_head.sh"
  kill "$holder"
  assert_failure 1
  ((SECONDS - t0 < 15))
  run grep -v -E '^[0-9]{4}-[0-9T:-]+Z ' <<<"$stderr"
  assert_output "ERROR: port(s) $MVP_HEAD_IP:$MVP_DASHBOARD_PORT of mvp11-ray-head are in use by something else; stop it or change MVP_*_PORT / MVP_NODE_PORT_BASE"
}
