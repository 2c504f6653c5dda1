#!/usr/bin/env bats
# `ray job submit` starts before the runbook checks a job, and still cannot
# submit anything before the checks, the admission step and the private-
# variable store are done: its process imports Ray's CLI, then waits for its
# words on stdin, and reads the runtime_env from a pipe (/dev/fd/N); both
# are written only after before_submit() returned (helpers/mvp/jobs/sending/ray_cli.py,
# submit._submit_cli). A stand-in CLI records when it started, when its
# words and the runtime_env arrived, and what they were; the last test runs
# the real module against Ray's own CLI.

setup() {
  load ../test_helper/common
  STUB=$BATS_TEST_TMPDIR/ray
  cat >"$STUB" <<'SH'
#!/usr/bin/env bash
# Records its start, waits for its words as mvp.jobs.sending.ray_cli does, then reads the
# --runtime-env file as Ray's CLI does.
log=${STUB_LOG:?}
echo "started $(date +%s%N)" >>"$log"
echo "pid $$" >>"$log"
IFS= read -r words || { echo "no words" >>"$log"; exit 0; }
echo "words $(date +%s%N) $words" >>"$log"
file=$(jq -r 'index("--runtime-env") as $i | .[$i + 1]' <<<"$words")
content=$(cat "$file")
echo "read $(date +%s%N) $content" >>"$log"
echo "Job 'x' submitted successfully"
SH
  chmod +x "$STUB"
  export STUB STUB_LOG=$BATS_TEST_TMPDIR/stub.log
}

# gate MODE: starts the stand-in CLI, then runs _submit_cli; before_submit
# sleeps 0.6 s then records "stored" (MODE=ok) or raises (MODE=fail).
gate() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$1" <<'PY'
import sys, time, os
from types import SimpleNamespace
from mvp.jobs.sending import ray_cli, submit
from mvp.worker.errors import MvpError
from mvp.worker.redact import Redactor
ray_cli.COMMAND = [os.environ["STUB"]]
plan = SimpleNamespace(runtime_env={"env_vars": {"MVP_PRIVATE_ENV": "private_env/x"}},
                       ray_cli_argv=lambda extra: ["ray", "job", "submit", *extra, "--", "true"])
def before():
    time.sleep(0.6)
    if sys.argv[1] == "fail":
        raise MvpError("the store is down")
    with open(os.environ["STUB_LOG"], "a") as f:
        f.write(f"stored {time.time_ns()}\n")
cli = ray_cli.start()
try:
    print(submit._submit_cli(plan, cli, Redactor(set()), before_submit=before), end="")
except MvpError as exc:
    print(f"ERROR {exc}")
finally:
    cli.discard()
PY
}

# event NAME: the time the stand-in logged for NAME.
stub_gone() { ! kill -0 "$(event pid)" 2>/dev/null; }

event() { awk -v e="$1" '$1 == e {print $2}' "$STUB_LOG"; }

@test "submit: ray job submit starts before the private variables are stored, and gets its words and the runtime_env only after" {
  run gate ok
  assert_success
  assert_output "Job 'x' submitted successfully"
  run cat "$STUB_LOG"
  local started stored words read
  started=$(event started) stored=$(event stored) words=$(event words) read=$(event read)
  [[ -n $started && -n $stored && -n $words && -n $read ]] || fail "missing events: $output"
  ((started < stored)) || fail "the CLI started only after the store: $output"
  ((stored <= words)) || fail "the CLI had its words before the store returned: $output"
  assert_line --regexp '^words [0-9]+ \["job", "submit", "--runtime-env", "/dev/fd/[0-9]+", "--", "true"\]$'
  assert_output --partial '{"env_vars": {"MVP_PRIVATE_ENV": "private_env/x"}}'
}

@test "submit: when storing the private variables fails, ray job submit is killed before it has a word" {
  run gate fail
  assert_output "ERROR the store is down"
  # Looked at once the stand-in CLI is gone: it can write nothing more.
  mvp_wait_until 10 "the stand-in CLI gone" stub_gone
  run cat "$STUB_LOG"
  assert_line --partial started
  refute_line --partial words
  refute_line --partial read
}

@test "mvp.jobs.sending.ray_cli runs Ray's own CLI entry point with the words it is given, and nothing when its submitter goes away first" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -m mvp.jobs.sending.ray_cli <<<'["--version"]'
  assert_success
  local version
  version=$("$MVP_REPO/.venv/bin/python" -c 'import ray; print(ray.__version__)')
  assert_output --partial "version $version"
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -m mvp.jobs.sending.ray_cli </dev/null
  assert_success
  assert_output ""
}

@test "submit: a CLI let go while the job queues (release) is started afresh when the job is admitted, and only that one gets words" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" - <<'PY'
import os, time
from mvp.jobs.sending import ray_cli
ray_cli.COMMAND = [os.environ["STUB"]]
cli = ray_cli.start()
first = cli.proc.pid
time.sleep(0.3)
cli.release()
env_file = cli.ready()
rc, out = cli.run(["job", "submit", "--runtime-env", env_file, "--", "true"], b"{}", 10)
cli.discard()
print(first != cli.proc.pid, rc, out.strip())
PY
  assert_success
  assert_output "True 0 Job 'x' submitted successfully"
  run grep -c '^started ' "$STUB_LOG"
  assert_output 2
  run grep -c '^words ' "$STUB_LOG"
  assert_output 1
}

@test "submit: a refused ray job submit is one ERROR line naming Ray's own exception (the last exception line of its traceback), not the address line the CLI printed nor the last line of the HTML error page the dashboard sent" {
  local fake=$BATS_TEST_TMPDIR/dashboard
  mkdir -p "$fake/jobs"
  echo '[]' >"$fake/nodes.json"
  "$MVP_REPO/.venv/bin/python" -c 'import ray; print(ray.__version__)' >"$fake/ray_version"
  # The fake dashboard answers GET only: a submission's POST gets HTTP 501, as a head without a job agent answers 503.
  python3 "$MVP_REPO/tests/test_helper/fake_dashboard.py" "$fake" "$BATS_TEST_TMPDIR/port" &
  local server=$!
  mvp_wait_until 10 "the fake dashboard listening" test -s "$BATS_TEST_TMPDIR/port"
  run env PYTHONPATH="$MVP_REPO/helpers" ADDRESS="http://127.0.0.1:$(<"$BATS_TEST_TMPDIR/port")" "$MVP_REPO/.venv/bin/python" - <<'PY'
import os
from types import SimpleNamespace
from mvp.jobs.sending import ray_cli, submit
from mvp.worker.errors import MvpError
from mvp.worker.redact import Redactor
plan = SimpleNamespace(runtime_env={}, ray_cli_argv=lambda extra: [
    "ray", "job", "submit", "--address", os.environ["ADDRESS"], "--no-wait", *extra, "--", "true"])
cli = ray_cli.start()
try:
    submit._submit_cli(plan, cli, Redactor(set()))
except MvpError as exc:
    print(f"ERROR: {exc}")
finally:
    cli.discard()
PY
  kill "$server" 2>/dev/null || true
  assert_success
  assert_output --regexp "^ERROR: ray job submit failed \(exit 1\): RuntimeError: Request failed with status code 501"
}
