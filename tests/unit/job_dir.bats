#!/usr/bin/env bats
# The job directory has one object: helpers/mvp/worker/jobdir.py's
# FILES names every file and directory of <shared_root>/jobs/<id>/, JobDir
# gives each by name and reads and writes what several modules share, and no
# other code spells one of those names (tests/test_helper/jobdir_names.py:
# Python strings and path parts under helpers/, code lines of scripts/,
# templates/ and the Makefile). Bash gets what it needs from the helper as
# key=value (`wait` answers status=).

setup() {
  load ../test_helper/common
  CHECK=("$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/jobdir_names.py")
}

# Spelled outside the object and left so: FILE:NAME, each with why.
ALLOWED=(
  "helpers/mvp/core/settings.py:'config'"  # the repository's config/ (settings.contract), not a job's
)

# names_outside ROOT: the checker's lines for the tree at ROOT, less ALLOWED.
names_outside() {
  local allowed
  "${CHECK[@]}" "$1" | while IFS= read -r line; do
    for allowed in "${ALLOWED[@]}"; do
      [[ ${line%%:*}:${line##*: } == "$allowed" ]] && continue 2
    done
    echo "$line"
  done
}

# copy_tree DEST: the parts of the repo the checker reads.
copy_tree() {
  mkdir -p "$1/helpers"
  cp -r "$MVP_REPO/scripts" "$MVP_REPO/templates" "$MVP_REPO/Makefile" "$1/"
  cp -r "$MVP_REPO/helpers/mvp" "$1/helpers/"
  find "$1/helpers/mvp" -name __pycache__ -prune -exec rm -rf {} +
}

@test "job dir: no job-directory name is spelled outside helpers/mvp/worker/jobdir.py (but the allowed, each with its reason)" {
  run names_outside "$MVP_REPO"
  assert_success
  assert_output ""
  # Each allowed spelling is still there: a stale allowance is one to drop.
  run "${CHECK[@]}" "$MVP_REPO"
  for allowed in "${ALLOWED[@]}"; do
    assert_line --partial "${allowed%%:*}:"
  done
}

@test "job dir: a name planted in Python (a string, a path part, an f-string) or in bash fails the check with its file and line" {
  local tree=$BATS_TEST_TMPDIR/tree
  copy_tree "$tree"
  printf '\n\ndef planted(jd):\n    return jd / "result.json"\n' >>"$tree/helpers/mvp/jobs/inspection/status.py"
  printf '\n\ndef planted(jd, sid):\n    return os.path.join(jd, "logs"), f"{sid}/config/job_spec.json"\n' \
    >>"$tree/helpers/mvp/jobs/after_sending/retry.py"
  echo 'jq -r .status "$MVP_HOST_SHARED_DIR/jobs/$1/result.json"' >>"$tree/scripts/lib/submit.sh"
  run "${CHECK[@]}" "$tree"
  assert_failure 1
  local n
  n=$(wc -l <"$tree/helpers/mvp/jobs/inspection/status.py")
  assert_line "helpers/mvp/jobs/inspection/status.py:$n: 'result.json'"
  n=$(wc -l <"$tree/helpers/mvp/jobs/after_sending/retry.py")
  assert_line "helpers/mvp/jobs/after_sending/retry.py:$n: 'logs'"
  assert_line "helpers/mvp/jobs/after_sending/retry.py:$n: 'job_spec.json'"
  n=$(wc -l <"$tree/scripts/lib/submit.sh")
  assert_line "scripts/lib/submit.sh:$n: 'result.json'"
}

@test "job dir: docstrings, comments and data keys may name them; the owner itself is not checked" {
  local tree=$BATS_TEST_TMPDIR/tree
  copy_tree "$tree"
  printf '\n\ndef documented():\n    """Reads result.json and logs/driver.log."""\n    # config/job_spec.json too\n    return {"ray_job_id": 1, "nodes": 2}\n' \
    >>"$tree/helpers/mvp/jobs/inspection/status.py"
  echo '# reads result.json' >>"$tree/scripts/lib/submit.sh"
  run names_outside "$tree"
  assert_success
  assert_output ""
}

@test "job dir: JobDir names each file under the directory it is given, pickles as its path, and prefers the archived driver log to the kept one" {
  local jd=$BATS_TEST_TMPDIR/jobs/j-1
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c '
import pickle, sys
from mvp.worker.jobdir import FILES, JobDir
jd = JobDir.of(sys.argv[1].rsplit("/", 1)[0], "j-1")
assert str(jd) == sys.argv[1] and jd.id == "j-1" and JobDir(jd).path == jd.path
assert pickle.loads(pickle.dumps(jd)).result == jd.result
for name, rel, _ in FILES:
    if "<" not in rel:
        assert str(getattr(jd, name)) == sys.argv[1] + "/" + rel, name
print(jd.node_env("10.0.0.3").relative_to(jd.path), jd.node_copy("10.0.0.3").relative_to(jd.path))
print(jd.kept_driver_log(), jd.driver_log_text(), jd.read_result(), jd.status(), jd.resolved(), jd.cluster())
jd.live_log.parent.mkdir(parents=True)
jd.live_log.write_text("kept\n")
print(jd.kept_driver_log().name, jd.driver_log_text().strip())
jd.driver_log.write_text("archived\n")
print(jd.kept_driver_log().name, jd.driver_log_text().strip())
jd.write_result({"status": "FAILED"})
jd.write_submit_event({"event": "submitted"})
print(jd.status(), jd.archived(), jd.was_submitted())' "$jd"
  assert_success
  assert_output "logs/env/node-10.0.0.3.json logs/nodes/10.0.0.3
None None None None {} None
driver.live.log kept
driver.log archived
FAILED True True"
}

@test "job dir: the helper's wait answers status=STATUS (what 40-44's --retry reads), exit 0 only for SUCCEEDED in time; with --retry-point a FAILED or LOST job's resume_from= too, or the chain's one ERROR line" {
  run --separate-stderr env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c '
from pathlib import Path
from types import SimpleNamespace
from mvp.jobs.after_sending import wait_logs_stop, retry
from mvp.worker.errors import MvpError
def point(jobs, sid):
    if sid == "j-2":
        raise MvpError("job j-2 ended FAILED before its first checkpoint and resumed from none")
    return f"{sid}/global_step_2"
retry.resume_point = point
settings = SimpleNamespace(jobs_dir=Path("/nowhere"))
for sid, status, late, asked in (("j-1", "FAILED", False, False), ("j-1", "SUCCEEDED", False, False),
                                 ("j-1", "SUCCEEDED", True, False), ("j-1", "LOST", False, True),
                                 ("j-2", "FAILED", False, True), ("j-1", "STOPPED", False, True)):
    wait_logs_stop.wait_for = lambda sid, timeout, settings: {"status": status, "timed_out": late}
    print("exit", wait_logs_stop.wait_main(SimpleNamespace(submission_id=sid, timeout=None, retry_point=asked), settings))'
  assert_success
  assert_output "status=FAILED
exit 1
status=SUCCEEDED
exit 0
status=SUCCEEDED
exit 1
status=LOST
resume_from=j-1/global_step_2
exit 1
status=FAILED
exit 1
status=STOPPED
exit 1"
  assert_equal "$stderr" "ERROR: job j-2 ended FAILED before its first checkpoint and resumed from none"
}

@test "job dir: submit.sh reads the job's end from the wait's answer, never from result.json" {
  run grep -n 'jq\|result' "$MVP_REPO/scripts/lib/submit.sh"
  assert_failure 1
  run grep -c 'out=$(mvp::helper::run wait "$SUBMITTED_ID" "${point\[@\]}")' "$MVP_REPO/scripts/lib/submit.sh"
  assert_output 1
}
