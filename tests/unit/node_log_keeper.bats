#!/usr/bin/env bats
# The node keeper (helpers/mvp/worker/log_keeper.py keep_node: what each node's
# NodeKeeper actor runs) with real worker processes writing log files named
# as Ray 2.60 names them in a node's session logs: worker-<id>-<job hex>-<pid>
# for a worker started for the job, worker-<id>-ffffffff-<pid> with a first
# line `:job_id:<hex>` for a prestarted one. The copies in the job directory
# grow while the job runs (whole lines, the secret masked, 0640, another job's
# files left out), are whole once the driver's keeper is done and the workers
# are gone (SIGKILLed, as Ray ends a job's workers), and nothing is copied
# once archiving has begun.

setup() {
  load ../test_helper/common
  JD=$BATS_TEST_TMPDIR/job
  LOGS=$BATS_TEST_TMPDIR/session/logs
  mkdir -p "$JD/logs" "$LOGS"
  WRITER=$BATS_TEST_TMPDIR/writer.py
  # A Ray worker's stdout: its file is named after its own PID; a line every 0.1 s until killed.
  cat >"$WRITER" <<'PY'
import os, sys, time
logs, wid, job_field, marker = sys.argv[1:5]
with open(os.path.join(logs, f"worker-{wid}-{job_field}-{os.getpid()}.out"), "a") as f:
    if marker:
        f.write(f":job_id:{marker}\n:actor_name:TaskRunner\n")
    f.write("token in use: s3cret-value-42\n")
    for step in range(1, 100000):
        f.write(f"step:{step} - worker:{wid}\n")
        f.flush()
        time.sleep(0.1)
PY
  PIDS=()
}

teardown() {
  local pid
  for pid in "${PIDS[@]}"; do
    pkill -KILL -P "$pid" 2>/dev/null || true  # flock's sleep
    kill -KILL "$pid" 2>/dev/null || true
  done
}

no_process() { ! kill -0 "$1" 2>/dev/null; }

# writer WID JOB_FIELD MARKER: starts a worker writing its log.
writer() {
  "$MVP_REPO/.venv/bin/python" "$WRITER" "$LOGS" "$@" 3>&- &
  PIDS+=($!)
}

# The driver's keeper holding its copy, as log_keeper.keep does while the driver runs.
driver_keeper() {
  # -o: the lock is the flock process's own, not its child's.
  flock -o "$JD/logs/driver.live.log" sleep 600 3>&- &
  DRIVER_KEEPER=$!
  PIDS+=("$DRIVER_KEEPER")
  mvp_wait_until 5 "the driver's kept copy" test -e "$JD/logs/driver.live.log"
}

# node_keeper EVERY_S GRACE_S: keep_node over $LOGS for job 02000000, as
# NodeKeeper runs it (the node's versions written once it holds the lock).
node_keeper() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.worker import log_keeper, redact, runenv
from mvp.worker.jobdir import JobDir
jd, logs, every, grace = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
log_keeper.keep_node(logs, jd + "/logs/nodes/10.0.0.7", "02000000",
                     log_keeper.node_job_over(jd + "/logs/driver.live.log", grace), every,
                     redact.Redactor(redact.secret_values({"MY_API_TOKEN": "s3cret-value-42"})),
                     jd + "/logs/.archiving", first=lambda: runenv.write_node(JobDir(jd), "10.0.0.7"))' "$JD" "$LOGS" "$1" "$2" 3>&- &
  NODE_KEEPER=$!
  PIDS+=("$NODE_KEEPER")
}

keeper_done() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.worker import log_keeper
print(log_keeper.wait_until_done(sys.argv[1], float(sys.argv[2])))' "$JD/logs/nodes/10.0.0.7" "$1"
}

copied() { grep -q "^step:$2 " "$JD/logs/nodes/10.0.0.7/$1" 2>/dev/null; }

@test "node keeper: the job's worker logs (named for the job, or prestarted and marked :job_id:) are copied as they grow, whole lines, the secret masked, 0640; another job's are not" {
  driver_keeper
  writer aaaa 02000000 ""
  local named=${PIDS[-1]}
  writer bbbb ffffffff 02000000
  local marked=${PIDS[-1]}
  writer cccc ffffffff 03000000
  writer dddd 03000000 ""
  node_keeper 0.5 60
  mvp_wait_until 10 "5 lines of worker-aaaa-02000000-* copied" copied "worker-aaaa-02000000-$named.out" 5
  mvp_wait_until 10 "5 lines of worker-bbbb-ffffffff-* copied" copied "worker-bbbb-ffffffff-$marked.out" 5
  run ls "$JD/logs/nodes/10.0.0.7"
  assert_output "$(printf '%s\n' "worker-aaaa-02000000-$named.out" "worker-bbbb-ffffffff-$marked.out")"
  # No one else reads them: neither directory level is open to others.
  assert_equal "$(stat -c %a "$JD/logs/nodes" "$JD/logs/nodes/10.0.0.7")" $'750\n750'
  local f
  for f in "$JD"/logs/nodes/10.0.0.7/*; do
    assert_equal "$(stat -c %a "$f")" 640
    [[ $(tail -c 1 "$f" | od -An -c | tr -d ' ') == '\n' ]]
    grep -qx 'token in use: \*\*\*' "$f"
    ! grep -q s3cret-value-42 "$f"
  done
  # While it runs, it holds the node's directory: archiving would wait.
  run keeper_done 0.3
  assert_output False
}

@test "node keeper: once the driver's keeper is done and Ray has SIGKILLed the job's workers, the copies equal what they wrote and the keeper ends (its last copy between two syncs)" {
  driver_keeper
  writer aaaa 02000000 ""
  local w1=${PIDS[-1]}
  writer bbbb ffffffff 02000000
  local w2=${PIDS[-1]}
  node_keeper 30 60
  # The 30 s interval has not come round again after the first copy.
  mvp_wait_until 10 "step 20 in the worker's log" grep -q '^step:20 ' "$LOGS/worker-bbbb-ffffffff-$w2.out"
  kill -KILL "$DRIVER_KEEPER"  # its sleep goes on, without the lock (-o)
  # The workers still write: the keeper goes on (Ray takes time to end a job).
  sleep 1
  kill -0 "$NODE_KEEPER"
  kill -KILL "$w1" "$w2"
  run keeper_done 10
  assert_output True
  mvp_wait_until 5 "the node keeper ended" no_process "$NODE_KEEPER"
  local f
  for f in "worker-aaaa-02000000-$w1.out" "worker-bbbb-ffffffff-$w2.out"; do
    sed 's/s3cret-value-42/***/' "$LOGS/$f" | diff - "$JD/logs/nodes/10.0.0.7/$f"
  done
}

@test "node keeper: a worker that outlives the job's end by the grace time gets its last copy anyway; none is made, nor the node's versions written, once archiving has begun" {
  driver_keeper
  writer aaaa 02000000 ""
  node_keeper 0.5 1
  local w=${PIDS[-2]}
  mvp_wait_until 10 "2 lines of worker-aaaa-02000000-* copied" copied "worker-aaaa-02000000-$w.out" 2
  kill -KILL "$DRIVER_KEEPER"
  mvp_wait_until 5 "the node keeper ended" no_process "$NODE_KEEPER"
  # Its last copy was made after the grace: well past the 2nd step, and what the worker wrote.
  local copy=$JD/logs/nodes/10.0.0.7/worker-aaaa-02000000-$w.out
  copied "worker-aaaa-02000000-$w.out" 12
  sed 's/s3cret-value-42/***/' "$LOGS/worker-aaaa-02000000-$w.out" | cmp -n "$(stat -c %s "$copy")" - "$copy"
  jq -e '.ip == "10.0.0.7"' "$JD/logs/env/node-10.0.0.7.json"
  # Archiving began: a keeper started now leaves the job directory as it is.
  rm -rf "$JD/logs/nodes" "$JD/logs/env"
  : >"$JD/logs/.archiving"
  driver_keeper
  node_keeper 0.5 60
  mvp_wait_until 5 "the node keeper ended" no_process "$NODE_KEEPER"
  [[ ! -e $JD/logs/nodes && ! -e $JD/logs/env ]]
}
