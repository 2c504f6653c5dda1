#!/usr/bin/env bats
# Admission (helpers/mvp/jobs/sending/admission.py) against a fake cluster in a JSON file:
# the lock makes check-and-submit one step, claims count a job Ray took before
# its placement groups exist, --queue is first come first served, and nothing
# stale blocks later submissions. The real-Ray cases are in
# tests/integration/admission.bats.

setup() {
  load ../test_helper/common
  STATE=$BATS_TEST_TMPDIR/cluster.json
  ROOT="$BATS_TEST_TMPDIR/shared root"
  CLAIMS=$ROOT/admission/127.0.0.9_8265/claims
  QUEUE=$ROOT/admission/127.0.0.9_8265/queue
  mkdir -p "$ROOT"
  echo '{"total": 8, "jobs": [], "pgs": {}}' >"$STATE"
}

# admit SID NEED [OPTIONS...]
admit() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/admission_driver.py" \
    "$STATE" "$ROOT" "$@"
}

# admit_bg SID NEED [OPTIONS...]: admit in the background; $! is the helper
# process itself (exec), so a test can SIGKILL it.
admit_bg() {
  (exec env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" \
    "$MVP_REPO/tests/test_helper/admission_driver.py" "$STATE" "$ROOT" "$@") &
}

# queued N: the queue holds N tickets.
queued() { [[ $(find "$QUEUE" -type f 2>/dev/null | wc -l) == "$1" ]]; }

# cluster JQ_FILTER: changes the fake cluster (Ray's side of things).
cluster() {
  jq "$1" "$STATE" >"$STATE.new" && mv "$STATE.new" "$STATE"
}

@test "admission: four full-cluster submissions at once without --queue: one admitted, three refused with exit 75 naming it" {
  local i
  for i in 1 2 3 4; do
    admit_bg "job$i" 8 --hold 0.3 >"$BATS_TEST_TMPDIR/out$i" 2>&1
    echo $! >"$BATS_TEST_TMPDIR/pid$i"
  done
  local admitted=0 refused=0 rc
  for i in 1 2 3 4; do
    rc=0
    wait "$(<"$BATS_TEST_TMPDIR/pid$i")" || rc=$?
    if ((rc == 0)); then
      admitted=$((admitted + 1))
    else
      [[ $rc == 75 ]]
      run cat "$BATS_TEST_TMPDIR/out$i"
      assert_output --regexp "^ERROR: the job needs 8 GPUs but 0 of 8 are free \(held by job[1-4] \(8, submitted, not yet placed\)\).* or submit with --queue$"
      [[ ! -e $ROOT/jobs/job$i ]]
      refused=$((refused + 1))
    fi
  done
  [[ $admitted == 1 && $refused == 3 ]]
}

@test "admission: a claim counts until the job's placement groups hold its GPUs, then they count it, never both" {
  run admit a 4
  assert_success
  [[ -f $CLAIMS/a.json ]]
  cluster '.jobs[0].job_id = "01" | .jobs[0].status = "RUNNING" | .pgs["01"] = 2'
  # Two of its four GPUs placed: it counts 4, not 4 + 2.
  run admit b 6
  assert_failure 75
  assert_output --partial "4 of 8 are free (held by a (4, submitted, not yet placed))"
  run admit c 4
  assert_success
  cluster '.pgs["01"] = 4'
  run admit d 4
  assert_failure 75
  assert_output --partial "(held by a (4), c (4, submitted, not yet placed))"
  [[ ! -e $CLAIMS/a.json ]]
}

@test "admission: the claims of a job that ended, one Ray never took, and one older than the bound are dropped" {
  run admit ended 4
  run admit young 2
  cluster '.jobs |= map(if .submission_id == "ended" then .status = "SUCCEEDED" else . end)'
  run admit next 6
  assert_success
  [[ ! -e $CLAIMS/ended.json && -e $CLAIMS/young.json ]]
  # Ray never took it: its submitter died under the lock, the directory it made goes too.
  echo '{"submission_id": "ghost", "need": 8, "at": 0, "job_dir": "'"$ROOT"'/jobs/ghost"}' >"$CLAIMS/ghost.json"
  mkdir -p "$ROOT/jobs/ghost/config"
  cluster '.jobs |= map(select(.submission_id != "next"))'
  run admit after-ghost 6 --claim-max 0
  assert_success
  assert_output --partial "dropped the claim of ghost (Ray does not know it"
  assert_output --partial "dropped the claim of young (no placement groups after MVP_ADMISSION_CLAIM_S=0s)"
  [[ ! -e $CLAIMS/ghost.json && ! -e $ROOT/jobs/ghost ]]
}

@test "admission: a submission that fails before Ray has the job leaves no claim behind" {
  run admit broken 8 --crash
  assert_failure 1
  [[ ! -e $CLAIMS/broken.json ]]
  run admit next 8
  assert_success
}

@test "admission: a job that can never fit is refused at once with exit 1, also with --queue" {
  run admit big 12 --queue
  assert_failure 1
  assert_output "ERROR: the job needs 12 GPUs (trainer.nnodes x trainer.n_gpus_per_node) but the cluster has 8; lower trainer.nnodes or trainer.n_gpus_per_node, or add workers"
}

@test "admission: --queue admits waiters in arrival order, each once the one before it has let go of the GPUs" {
  cluster '.jobs = [{"submission_id": "holder", "job_id": "01", "status": "RUNNING"}] | .pgs["01"] = 8'
  local i
  for i in 1 2 3; do
    admit_bg "w$i" 8 --queue >"$BATS_TEST_TMPDIR/out$i" 2>&1
    echo $! >"$BATS_TEST_TMPDIR/pid$i"
    mvp_wait_until 30 "w$i's ticket in the queue" queued "$i" # arrival order
  done
  run ls "$QUEUE"
  assert_output --regexp "^[0-9]{20}\.w1"$'\n'"[0-9]{20}\.w2"$'\n'"[0-9]{20}\.w3$"
  run cat "$BATS_TEST_TMPDIR/out3"
  assert_output --partial "queued: 8 GPUs needed, 0 free; waiting for holder (8); queued before it: w1 (needs 8), w2 (needs 8)"
  for i in 1 2 3; do
    # The one before ended: the next in line, and only it, gets the GPUs.
    cluster '.jobs |= map(.status = "SUCCEEDED") | .pgs = {}'
    wait "$(<"$BATS_TEST_TMPDIR/pid$i")"
    sleep 0.5
    local j
    for ((j = i + 1; j <= 3; j++)); do kill -0 "$(<"$BATS_TEST_TMPDIR/pid$j")"; done
  done
  run ls "$QUEUE"
  assert_output ""
  # Each waiter's hook (submit lets its Ray CLI go there) ran once, however often it looked.
  for i in 1 2 3; do
    run grep -c '^on_queued$' "$BATS_TEST_TMPDIR/out$i"
    assert_output 1
  done
}

@test "admission: without --queue a submission is refused while others wait in the queue, even when it would fit" {
  cluster '.jobs = [{"submission_id": "holder", "job_id": "01", "status": "RUNNING"}] | .pgs["01"] = 4'
  admit_bg waiter 8 --queue 2>/dev/null
  local waiter=$!
  mvp_wait_until 30 "a ticket in the queue" queued 1
  run admit small 2
  assert_failure 75
  assert_output --partial "the job needs 2 GPUs and 4 of 8 are free, but 1 submission(s) queued earlier go first: waiter (needs 8)"
  kill "$waiter"
  wait "$waiter" || true
}

@test "admission: the ticket of a SIGKILLed --queue waiter is dropped; the deadline ends a wait with exit 75 and no ticket" {
  cluster '.jobs = [{"submission_id": "holder", "job_id": "01", "status": "RUNNING"}] | .pgs["01"] = 8'
  admit_bg killed 8 --queue 2>/dev/null
  local killed=$!
  mvp_wait_until 30 "a ticket in the queue" queued 1
  kill -KILL "$killed"
  wait "$killed" || true
  [[ -n $(ls "$QUEUE") ]]
  run admit late 8 --queue --timeout 1
  assert_failure 75
  assert_output --partial "after waiting 1s (MVP_JOB_TIMEOUT) (held by holder (8)); verl checks free GPUs"
  refute_output --partial "killed"
  run ls "$QUEUE"
  assert_output ""
}

@test "admission: a second submitter waits for the lock while the first submits, then sees its claim" {
  admit_bg first 8 --hold 2 >/dev/null 2>&1
  local first=$!
  # The first is inside the lock (its body made the job directory).
  mvp_wait_until 30 "the first submitter holding the lock" test -d "$ROOT/jobs/first"
  run admit second 8
  assert_failure 75
  # It waited: the first's body (2 s) had ended, Ray had its job, when it looked.
  jq -e '.jobs | map(.submission_id) | index("first")' "$STATE"
  assert_output --partial "held by first (8, submitted, not yet placed)"
  wait "$first"
}
