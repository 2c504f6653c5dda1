#!/usr/bin/env bats
# The private-variable store and `ray job submit`'s start-up overlap, and the
# CLI still cannot submit before the store has the values: it reads the
# runtime_env from a pipe (/dev/fd/N) that is written only after the store
# returned (helpers/mvp/submit.py _submit_cli). A stub `ray` records when it
# started, when its read of the runtime_env returned, and what it read.

setup() {
  load ../test_helper/common
  STUB=$BATS_TEST_TMPDIR/ray
  cat >"$STUB" <<'SH'
#!/usr/bin/env bash
# Records its start, then reads the --runtime-env file as Ray's CLI does.
log=${STUB_LOG:?}
echo "started $(date +%s%N)" >>"$log"
while (($#)); do [[ $1 == --runtime-env ]] && file=$2; shift; done
content=$(cat "$file")
echo "read $(date +%s%N) $content" >>"$log"
echo "Job 'x' submitted successfully"
SH
  chmod +x "$STUB"
  export STUB_LOG=$BATS_TEST_TMPDIR/stub.log
}

# gate MODE: runs _submit_cli with the stub; before_submit sleeps 0.6 s then
# records "stored" (MODE=ok) or raises (MODE=fail).
gate() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$1" <<'PY'
import sys, time, os
from types import SimpleNamespace
from mvp import submit
from mvp.errors import MvpError
from mvp.redact import Redactor
submit.ray_cli = lambda: os.environ["STUB"]
plan = SimpleNamespace(runtime_env={"env_vars": {"MVP_PRIVATE_ENV": "private_env/x"}},
                       ray_cli_argv=lambda extra: ["ray", "job", "submit", *extra, "--", "true"])
def before():
    time.sleep(0.6)
    if sys.argv[1] == "fail":
        raise MvpError("the store is down")
    with open(os.environ["STUB_LOG"], "a") as f:
        f.write(f"stored {time.time_ns()}\n")
try:
    print(submit._submit_cli(plan, Redactor(set()), before_submit=before), end="")
except MvpError as exc:
    print(f"ERROR {exc}")
PY
}

@test "submit: ray job submit starts while the private variables are stored, and reads the runtime_env only after they are" {
  export STUB
  run gate ok
  assert_success
  assert_output "Job 'x' submitted successfully"
  run cat "$STUB_LOG"
  # started (during the store's 0.6 s) < stored < read
  local started stored read
  started=$(awk '$1 == "started" {print $2}' "$STUB_LOG")
  stored=$(awk '$1 == "stored" {print $2}' "$STUB_LOG")
  read=$(awk '$1 == "read" {print $2}' "$STUB_LOG")
  [[ -n $started && -n $stored && -n $read ]] || fail "missing events: $output"
  ((started < stored)) || fail "the CLI started only after the store: $output"
  ((stored <= read)) || fail "the CLI read the runtime_env before the store returned: $output"
  assert_line --partial 'read '
  assert_output --partial '{"env_vars": {"MVP_PRIVATE_ENV": "private_env/x"}}'
}

@test "submit: when storing the private variables fails, ray job submit is killed before it reads anything" {
  export STUB
  run gate fail
  assert_output "ERROR the store is down"
  sleep 0.3
  run cat "$STUB_LOG"
  assert_line --partial started
  refute_line --partial read
}
