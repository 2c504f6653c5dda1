#!/usr/bin/env bats
# A Slurm node's `ray start --block` step (mvp::rt::ray_step), with a stand-in
# for the step: a raylet that missed Ray's 30 s gets a second step, any other
# failure none, and TERM reaches the step that runs. (A real Slurm: tests/slurm.)

setup() {
  load ../test_helper/common
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=slurm
  STEP=$BATS_TEST_TMPDIR/step
  # The step: its first run prints FIRST_OUTPUT and exits 1; later runs block
  # (as ray start --block does) until TERM, and say so.
  cat >"$STEP" <<'SH'
#!/usr/bin/env bash
n=$(( $(cat "$0.runs" 2>/dev/null || echo 0) + 1 )); echo "$n" >"$0.runs"
if ((n == 1)); then echo "$FIRST_OUTPUT"; exit 1; fi
trap 'echo "run $n: TERM"; exit 0' TERM
echo "run $n: blocking"
while :; do sleep 0.1; done
SH
  chmod +x "$STEP"
}

# A test that fails before its TERM leaves no blocked step behind.
teardown() {
  [[ -z ${STEP_PID:-} ]] || kill -TERM "$STEP_PID" 2>/dev/null || true
}

# ray_step: mvp::rt::ray_step LOG STEP in the background, as slurm_job.sh runs it.
ray_step() {
  exec bash -c 'source "$1/scripts/lib/common.sh"; mvp::config::load; mvp::rt::ray_step "$2" "$3"' _ "$MVP_REPO" "$BATS_TEST_TMPDIR/ray.log" "$STEP" 2>>"$BATS_TEST_TMPDIR/err"
}

@test "slurm: a Ray step whose raylet missed Ray's 30 s runs once more, with one WARN line; TERM then ends the second step" {
  FIRST_OUTPUT="Exception: The current node timed out during startup. This could happen because some of the raylet failed to startup or the GCS has become overloaded." \
    ray_step &
  STEP_PID=$!
  local pid=$STEP_PID
  mvp_wait_until 20 "the second step to block" grep -q "run 2: blocking" "$BATS_TEST_TMPDIR/ray.log"
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  ((rc == 143))
  grep -q "run 2: TERM" "$BATS_TEST_TMPDIR/ray.log"
  [[ $(<"$STEP.runs") == 2 ]]
  run cat "$BATS_TEST_TMPDIR/err"
  assert_output --regexp "^[0-9TZ:-]+  !     .*/ray.log: Ray's raylet did not register within Ray's 30 s \(a loaded node\); starting its step once more$"
}

@test "slurm: a Ray step that fails otherwise is not run again, and its exit code stays" {
  local rc=0
  (FIRST_OUTPUT="ConnectionError: could not connect to the GCS" ray_step) || rc=$?
  ((rc == 1))
  [[ $(<"$STEP.runs") == 1 ]]
  [[ ! -s $BATS_TEST_TMPDIR/err ]]
}
