#!/usr/bin/env bats
# jobs/.index: status reads only the newest job directories it lists, and
# still sees directories the index does not name.

setup() {
  load ../test_helper/common
}

newest() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$BATS_TEST_TMPDIR/jobs" "$@" <<'PY'
import os, sys, time
from pathlib import Path
from mvp import jobdir
jobs = Path(sys.argv[1])
for sid in sys.argv[2:]:
    if sid.startswith("legacy:"):   # made before the index existed: no index line
        (jobs / sid[7:] / "config").mkdir(parents=True)
        os.utime(jobs / sid[7:] / "config", (1, 1))
    elif sid.startswith("rm:"):
        import shutil; shutil.rmtree(jobs / sid[3:])
    else:
        jobdir.claim(jobs / sid)
        time.sleep(0.002)
print(" ".join(sid for _, sid in jobdir.newest(jobs, jobdir.names(jobs), 3)))
PY
}

@test "job index: the newest claimed directories come first, however many there are" {
  run newest a b c d e
  assert_success
  assert_output "e d c"
}

@test "job index: a directory the index does not list is still listed, dated by its config/" {
  run newest legacy:old a
  assert_output "a old"
}

@test "job index: a removed directory is not listed though its index line stays" {
  run newest a b c d rm:d
  assert_output "c b a"
}
