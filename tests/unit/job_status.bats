#!/usr/bin/env bats
# 50_status.sh ID: one job's status as `ray job status ID` words it (Ray 2.60,
# ray/dashboard/modules/job/cli.py:80-95), from one HTTP call to the
# dashboard; a job Ray forgot from its archive. The dashboard here is
# tests/test_helper/fake_dashboard.py, which records each request: what the
# command asks is the shape under test. tests/integration/submit_jobs.bats
# compares the words with Ray's own CLI on a real cluster.

setup() {
  load ../test_helper/common
  mvp_isolate "$BATS_TEST_TMPDIR"
  FAKE=$BATS_TEST_TMPDIR/dashboard
  mkdir -p "$FAKE/jobs"
  echo '[]' >"$FAKE/nodes.json"
  python3 "$MVP_REPO/tests/test_helper/fake_dashboard.py" "$FAKE" "$BATS_TEST_TMPDIR/port" &
  echo $! >"$BATS_TEST_TMPDIR/dashboard.pid"
  mvp_wait_until 10 "the fake dashboard listening" test -s "$BATS_TEST_TMPDIR/port"
  export MVP_HEAD_IP=127.0.0.1 MVP_DASHBOARD_PORT=$(<"$BATS_TEST_TMPDIR/port")
}

teardown() {
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")" 2>/dev/null || true
}

# ray_job ID STATUS MESSAGE: what Ray's dashboard answers for the job.
ray_job() {
  jq -n --arg id "$1" --arg s "$2" --arg m "$3" \
    '{submission_id: $id, status: $s, message: (if $m == "" then null else $m end), start_time: 1000, end_time: 2000,
      driver_info: {node_ip_address: "10.0.0.3"}, runtime_env: {env_vars: {WANDB_API_KEY: "s3cr3t-key"}}}' \
    >"$FAKE/jobs/$1.json"
}

@test "50_status ID: Ray's words per status (cli.py:82-94): SUCCEEDED and STOPPED without Ray's message, FAILED and the rest with it; one HTTP call each" {
  ray_job ok SUCCEEDED "Job finished successfully."
  ray_job halted STOPPED "Job was intentionally stopped."
  ray_job broke FAILED $'Job entrypoint command failed with exit code 1, last available logs:\nWANDB_API_KEY=s3cr3t-key'
  ray_job waits PENDING "Job has not started yet."
  ray_job runs RUNNING ""
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" ok
  assert_success
  assert_output "Job 'ok' succeeded"
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" halted
  assert_output "Job 'halted' was stopped"
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" broke
  assert_success
  # The message holds the log's end: the job's secrets are masked in it.
  assert_output "Job 'broke' failed
Status message: Job entrypoint command failed with exit code 1, last available logs:
WANDB_API_KEY=***"
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" waits
  assert_output "Status for job 'waits': PENDING
Status message: Job has not started yet."
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" runs
  assert_output "Status for job 'runs': RUNNING"
  run cat "$FAKE/requests.log"
  assert_output "GET /api/jobs/ok
GET /api/jobs/halted
GET /api/jobs/broke
GET /api/jobs/waits
GET /api/jobs/runs"
}

@test "50_status ID --porcelain: key=value lines the output contract's reader takes, the message on one line" {
  ray_job broke FAILED $'exit code 1\nlast lines'
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" --porcelain broke
  assert_success
  run env PYTHONPATH="$MVP_REPO/helpers" python3 -c 'import sys; from mvp.worker import kv; print(kv.parse(sys.stdin.read()))' <<<"$output"
  assert_output "{'submission_id': 'broke', 'status': 'FAILED', 'source': 'ray', 'start_time_ms': '1000', 'end_time_ms': '2000', 'driver_node_ip': '10.0.0.3', 'message': 'exit code 1 last lines'}"
}

@test "50_status ID: an id neither Ray nor the archive knows, a malformed id, --porcelain without an id: one ERROR line each, exit 1, nothing on stdout" {
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" nosuchjob
  assert_failure 1
  assert_output ""
  assert_equal "$stderr" "ERROR: job nosuchjob: no such job: Ray does not know it and $SHARED_ROOT/jobs/nosuchjob holds no record of it; list the jobs with scripts/50_status.sh"
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" ../etc
  assert_failure 1
  assert_equal "$stderr" "ERROR: SUBMISSION_ID: '../etc' is not a valid id; use 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit"
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" --porcelain
  assert_failure 1
  assert_equal "$stderr" "ERROR: --porcelain answers for one job: give its SUBMISSION_ID (the cluster's report for programs is --json)"
}

@test "50_status ID: a job Ray forgot answers from its result.json (exit 0); with the cluster down, one in flight from its last known state (exit 1)" {
  mkdir -p "$SHARED_ROOT/jobs/old/config" "$SHARED_ROOT/jobs/inflight/config" "$SHARED_ROOT/jobs/inflight/logs"
  jq -n '{submission_id: "old", status: "SUCCEEDED", message: "Job finished successfully.", start_time_ms: 5, end_time_ms: 9}' \
    >"$SHARED_ROOT/jobs/old/result.json"
  touch "$SHARED_ROOT/jobs/inflight/logs/submit.log"
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" old
  assert_success
  assert_output "Job 'old' succeeded
(from the job archive: Ray does not list it)"
  kill "$(<"$BATS_TEST_TMPDIR/dashboard.pid")"
  mvp_wait_until 10 "the fake dashboard gone" bash -c '! kill -0 "$1" 2>/dev/null' _ "$(<"$BATS_TEST_TMPDIR/dashboard.pid")"
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" old --porcelain
  assert_success
  assert_line "status=SUCCEEDED"
  assert_line "source=archive"
  run --separate-stderr "$MVP_REPO/scripts/50_status.sh" inflight
  assert_failure 1
  assert_output "Status for job 'inflight': SUBMITTED?
Status message: the cluster does not answer; last known from its submission log"
}

@test "51_logs ID of a running job: a dashboard that answers HTTP 500 for its log twice (the driver node's agent late) shows it on the third try; one that keeps failing is one ERROR line, exit 1" {
  ray_job runs RUNNING ""
  printf 'step:1 - loss:1.0\n' >"$FAKE/jobs/runs.log"
  echo 2 >"$FAKE/jobs/runs.log.fails"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" runs
  assert_success
  assert_output "step:1 - loss:1.0"
  [[ $(grep -c '^GET /api/jobs/runs/logs$' "$FAKE/requests.log") == 3 ]]
  echo 3 >"$FAKE/jobs/runs.log.fails"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" runs
  assert_failure 1
  assert_output ""
  [[ $(wc -l <<<"$stderr") == 1 && $stderr == "ERROR: the Ray dashboard at "*" does not answer /api/jobs/runs/logs (HTTP 500)"* ]]
}
