#!/usr/bin/env bats
# The job's worker side: launch.py runs on the worker that holds the driver,
# as a file (its folder is sys.path[0]), under whatever python3 the image has,
# with none of the runbook's packages. What it loads must be the standard
# library and the runbook's own worker-side files, imported as top-level
# modules. Checked with the system's python3 -I -S (no site-packages, no
# PYTHONPATH, no user site), outside the venv.

# The runbook's files the worker loads: launch.py and what it imports.
WORKER_SIDE="fsutil jobdir launch log_keeper redact runenv stopper"

setup() {
  load ../test_helper/common
}

# worker_imports DIR: imports launch.py from DIR as the worker does; prints
# the non-standard-library modules it loaded, sorted, on one line.
worker_imports() {
  (cd "$1" && /usr/bin/python3 -I -S -c 'import sys
sys.path.insert(0, ".")
import launch
print(" ".join(sorted(n for n in sys.modules if n.split(".")[0] not in sys.stdlib_module_names and n not in sys.builtin_module_names and n != "__main__")))')
}

@test "worker side: launch.py imports, under the system python3 -I -S, only the standard library and the runbook's worker-side files" {
  run worker_imports "$MVP_REPO/helpers/mvp/worker"
  assert_success
  assert_output "$WORKER_SIDE"
}

@test "worker side: a worker-side file with a package import (here a relative one, as in a package) fails the check" {
  cp -r "$MVP_REPO/helpers/mvp/worker" "$BATS_TEST_TMPDIR/worker"
  sed -i '0,/^from pathlib import Path$/s//from pathlib import Path\nfrom .errors import MvpError/' "$BATS_TEST_TMPDIR/worker/jobdir.py"
  grep -q '^from .errors import MvpError$' "$BATS_TEST_TMPDIR/worker/jobdir.py"
  run worker_imports "$BATS_TEST_TMPDIR/worker"
  assert_failure
  assert_output --partial "attempted relative import with no known parent package"
}

@test "worker side: a worker-side file that imports a third-party package fails the check" {
  cp -r "$MVP_REPO/helpers/mvp/worker" "$BATS_TEST_TMPDIR/worker"
  sed -i '0,/^import os$/s//import os\nimport yaml/' "$BATS_TEST_TMPDIR/worker/stopper.py"
  run worker_imports "$BATS_TEST_TMPDIR/worker"
  assert_failure
  assert_output --partial "No module named 'yaml'"
}

@test "worker side: every file of helpers/mvp/worker/ imports as a top-level module under the system python3 -I -S (the image check and kv run there too)" {
  local f name
  for f in "$MVP_REPO"/helpers/mvp/worker/*.py; do
    name=$(basename "$f" .py)
    [[ $name == __init__ ]] && continue
    run bash -c 'cd "$1" && /usr/bin/python3 -I -S -c "import sys; sys.path.insert(0, \".\"); import $2"' _ "$MVP_REPO/helpers/mvp/worker" "$name"
    assert_success
  done
}
