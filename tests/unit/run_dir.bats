#!/usr/bin/env bats
# The nightly's run directories have one object: helpers/mvp/core/rundir.py's
# FILES names every file of <shared_root>/regressions/ and of each night's or
# bisection's directory in it, Regressions and RunDir give each by name, and
# no other code spells one of those names (tests/test_helper/rundir_names.py:
# Python strings under helpers/mvp/, code lines of scripts/, templates/ and the
# Makefile). Bash reads them from shared-layout.txt (mvp::config::run_file).

setup() {
  load ../test_helper/common
  CHECK=("$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/rundir_names.py")
}

# Spelled outside the object and left so: FILE:NAME, each with why.
ALLOWED=(
  "helpers/mvp/__main__.py:'report.json'"  # the notify command's --help, read by people; the dispatcher imports lazily
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

@test "run dir: no run-directory file name is spelled outside helpers/mvp/core/rundir.py (but the allowed, each with its reason)" {
  run names_outside "$MVP_REPO"
  assert_success
  assert_output ""
  # Each allowed spelling is still there: a stale allowance is one to drop.
  run "${CHECK[@]}" "$MVP_REPO"
  for allowed in "${ALLOWED[@]}"; do
    assert_line --partial "${allowed%%:*}:"
  done
}

@test "run dir: a name planted in Python (a path part, an f-string) or in bash fails the check with its file and line; a docstring or a comment may name it" {
  local tree=$BATS_TEST_TMPDIR/tree
  copy_tree "$tree"
  printf '\n\ndef planted(run_dir):\n    """Reads report.json."""\n    return run_dir.parent / "history.json", f"{run_dir}/report.md"\n' \
    >>"$tree/helpers/mvp/nightly/retention.py"
  echo 'cat "$RUN_DIR/nightly.log"' >>"$tree/scripts/61_bisect_regression.sh"
  echo '# reads .nightly.lock' >>"$tree/scripts/61_bisect_regression.sh"
  run "${CHECK[@]}" "$tree"
  assert_failure 1
  local n
  n=$(wc -l <"$tree/helpers/mvp/nightly/retention.py")
  assert_line "helpers/mvp/nightly/retention.py:$n: 'history.json'"
  assert_line "helpers/mvp/nightly/retention.py:$n: 'report.md'"
  refute_line "helpers/mvp/nightly/retention.py:$((n - 1)): 'report.json'"
  n=$(wc -l <"$tree/scripts/61_bisect_regression.sh")
  assert_line "scripts/61_bisect_regression.sh:$((n - 1)): 'nightly.log'"
  refute_line --partial "'.nightly.lock'"
  run names_outside "$tree"
  assert_equal "$(wc -l <<<"$output")" 3
}

@test "run dir: Regressions and RunDir name each file under the directory they are given; the last good night is the newest passed night before the run" {
  local reg=$BATS_TEST_TMPDIR/regressions
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c '
import sys
from mvp.core.rundir import FILES, Regressions, RunDir, last_good
from mvp.worker import fsutil
regs = Regressions(sys.argv[1])
for name, rel, _ in FILES:
    where = regs.run("nightly-1") if "/" in rel else regs
    assert str(getattr(where, name)).endswith("/" + rel.rsplit("/", 1)[-1]) and str(getattr(where, name)).startswith(sys.argv[1]), name
for run_id, passed in (("nightly-20260101T000000Z", True), ("nightly-20260102T000000Z", False),
                       ("nightly-20260103T000000Z", True)):
    regs.run(run_id).path.mkdir(parents=True)
    fsutil.write_json(regs.run(run_id).report, {"run_id": run_id, "passed": passed})
print([rd.id for rd in regs.nights()] == sorted(rd.id for rd in regs.nights()), regs.bisections())
print(regs.last_good_night("nightly-20260103T000000Z")["run_id"], regs.last_good_night("nightly-20260101T000000Z"))
print([rd.id for rd in regs.good_nights("nightly-20260104T000000Z")])
print(last_good([("b", {"passed": False}), ("a", {"passed": True})], "c"), RunDir(regs.run("x")).regressions.path == regs.path)' "$reg"
  assert_success
  assert_output "True []
nightly-20260101T000000Z None
['nightly-20260103T000000Z', 'nightly-20260101T000000Z']
{'passed': True} True"
}

@test "run dir: mvp::config::run_file gives each file of shared-layout.txt's run-directory table under the directory given, and one ERROR line for a name it lacks" {
  run bash -c 'source "$1/scripts/lib/log.sh"; source "$1/scripts/lib/config.sh"; MVP_REPO=$1
    mvp::config::run_file lock "/r e g"; mvp::config::run_file log "/r e g/nightly-1" log; echo "$log"
    mvp::config::run_file bisect_log /r/bisect-1; mvp::config::run_file config /r' _ "$MVP_REPO"
  assert_failure 1
  assert_line --index 0 "/r e g/.nightly.lock"
  assert_line --index 1 "/r e g/nightly-1/nightly.log"
  assert_line --index 2 "/r/bisect-1/bisect.log"
  assert_line --index 3 "ERROR: shared-layout.txt names no run-directory file 'config'"
}
