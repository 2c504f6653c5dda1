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
from mvp.worker import jobdir
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
count, rows = jobdir.newest(jobs, 3)
print(count, " ".join(sid for _, sid in rows))
PY
}

@test "job index: the newest claimed directories come first, however many there are" {
  run newest a b c d e
  assert_success
  assert_output "5 e d c"
}

@test "job index: directories made before the index existed are indexed at the next claim, dated by their config/" {
  run newest legacy:old a
  assert_output "2 a old"
}

@test "job index: a directory removed by hand is not listed; one removed by retention leaves the index too" {
  run newest a b c d rm:d
  assert_output "4 c b a"
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'import shutil, sys
from pathlib import Path
from mvp.worker import jobdir
jobs = Path(sys.argv[1]); shutil.rmtree(jobs / "c"); jobdir.index_remove(jobs, {"c", "d"})
count, rows = jobdir.newest(jobs, 3); print(count, *[sid for _, sid in rows])' "$BATS_TEST_TMPDIR/jobs"
  assert_output "2 b a"
}
