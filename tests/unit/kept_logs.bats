#!/usr/bin/env bats
# shellcheck disable=SC2154  # $stderr is set by bats' run --separate-stderr
# What the kept logs of a job (the driver's and its nodes' worker logs, copied
# into the job directory while it ran) are used for when Ray cannot help:
# the debug bundle's "cut off at step N" for a job that ended before its last
# step (helpers/mvp/jobs/after_sending/bundle.py cut_off), and 51_logs.sh showing them, telling
# "no such job" apart from a job whose directory exists (helpers/mvp/jobs/after_sending/wait_logs_stop.py).
# No cluster: the dashboard address answers nothing, as when the head is gone.

setup() {
  load ../test_helper/common
  mvp_isolate "$BATS_TEST_TMPDIR"
  # An address no cluster of the tests uses (an integration run beside this
  # one answers on the usual one): Ray cannot be asked.
  export MVP_HEAD_IP=127.0.11.2
  JD=$SHARED_ROOT/jobs/ppo-kept-1
  mkdir -p "$JD/logs/nodes/10.0.0.7" "$JD/config"
  local prefix=$'\e[36m(TaskRunner pid=113, ip=10.0.0.7)\e[0m'
  printf 'MVP_PRECHECK_MARKER=standin\n%s step:1 - critic/score/mean:0.25 - timing_s/step:6.5\n' "$prefix" \
    >"$JD/logs/driver.live.log"
  # The TaskRunner's own files on its node: steps on stdout, verl's bar on stderr.
  printf ':job_id:02000000\n:actor_name:TaskRunner\nstep:1 - critic/score/mean:0.25\nstep:2 - critic/score/mean:0.5\nstep:3 - critic/score/mean:0.5\n' \
    >"$JD/logs/nodes/10.0.0.7/worker-aa-ffffffff-113.out"
  printf ':job_id:02000000\n:actor_name:TaskRunner\nTraining Progress:  15%%|#5 | 3/20 [00:20<01:50,  6.50s/it]\r' \
    >"$JD/logs/nodes/10.0.0.7/worker-aa-ffffffff-113.err"
}

cut_off() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.jobs.after_sending import bundle
from mvp.worker.jobdir import JobDir
print(bundle.cut_off(JobDir(sys.argv[1]), sys.argv[2]))' "$JD" "$1"
}

@test "kept logs: a job that ended FAILED, STOPPED or LOST before its last step is cut off at the newest step any kept log holds (a node's TaskRunner log here), of the bar's total; SUCCEEDED or at its last step is not" {
  local st
  for st in FAILED STOPPED LOST; do
    run cut_off "$st"
    assert_output --regexp "^cut off at step 3 of 20 \(ended $st; newest step in logs/nodes/10.0.0.7/worker-aa-ffffffff-113.out, last written [0-9T:-]+Z\)$"
    assert_equal "$(<"$JD/debug/cut_off.txt")" "$output"
  done
  rm "$JD/debug/cut_off.txt"
  run cut_off SUCCEEDED
  assert_output None
  printf 'step:20 - critic/score/mean:0.5\n' >>"$JD/logs/nodes/10.0.0.7/worker-aa-ffffffff-113.out"
  run cut_off FAILED
  assert_output None
  [[ ! -e $JD/debug/cut_off.txt ]]
  rm -r "$JD/logs/nodes" "$JD/logs/driver.live.log"
  run cut_off LOST
  assert_output "cut off before its first step (ended LOST; no step line in $JD/logs)"
}

@test "kept logs: 51 shows the kept driver log, then each node's kept worker logs under a header, when Ray cannot be asked, after ONE warning saying so and when the copies were last synced; --steps reads them all" {
  touch -d '2026-01-02 03:04:05 UTC' "$JD/logs/driver.live.log" "$JD/logs/nodes/10.0.0.7"/worker-*
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" ppo-kept-1
  assert_success
  run grep -c . <<<"$stderr"
  assert_output 1
  [[ $stderr == *" !  "*"job ppo-kept-1: the cluster does not answer (the Ray dashboard at "*" does not answer ("*")); showing the copy its node kept while it ran"*", then the 2 worker log(s) its nodes kept"*"; last synced 2026-01-02T03:04:05Z" ]]
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" ppo-kept-1
  assert_success
  assert_line "MVP_PRECHECK_MARKER=standin"
  assert_line "==> logs/nodes/10.0.0.7/worker-aa-ffffffff-113.out <=="
  assert_line "step:3 - critic/score/mean:0.5"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" ppo-kept-1 --steps --json
  assert_success
  jq -e 'map(.step) == [1, 2, 3]' <<<"$output"
}

@test "kept logs: 51 of an id with no job directory is 'no such job' in one line; of a directory with nothing kept, one line naming why" {
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" ppo-never-1
  assert_failure 1
  [[ $stderr =~ ^"ERROR: job ppo-never-1: no such job: the cluster does not answer (the Ray dashboard at "[^$'\n']*" does not answer ("[^$'\n']*")) and there is no job directory $SHARED_ROOT/jobs/ppo-never-1; check the id with scripts/50_status.sh"$ ]]
  rm -r "$JD/logs/nodes" "$JD/logs/driver.live.log"
  echo "the dashboard is gone; no copy on the driver's node either; no copy was kept while it ran" >"$JD/logs/driver.log.missing"
  run --separate-stderr "$MVP_REPO/scripts/51_logs.sh" ppo-kept-1
  assert_failure 1
  [[ $stderr =~ ^"ERROR: job ppo-kept-1: the cluster does not answer ("[^$'\n']*"), and no copy was archived: the dashboard is gone; no copy on the driver's node either; no copy was kept while it ran"$ ]]
}

@test "kept logs: a driver log that Ray serves empty while the driver's node kept one (a Ray started again at the driver's address: a Kubernetes pod's container restarted in place) is not taken: driver.log.missing says so and points at the kept copy" {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.jobs.after_sending import archive, node_access
from mvp.worker.jobdir import JobDir
from mvp.worker.redact import Redactor
class Served:
    def job_logs(self, sid): return ""
archive._save_driver_log(JobDir(sys.argv[1]), Served(), "ppo-kept-1", {}, node_access.UNREACHABLE, Redactor())' "$JD"
  [[ ! -e $JD/logs/driver.log ]]
  grep -q "^Ray served an empty log where the driver's node kept one (its Ray started again?); no copy on the driver's node either; its node kept .*driver.live.log while it ran" \
    "$JD/logs/driver.log.missing"
}

@test "kept logs: 51 takes Ray's log of an ended job only when Ray serves one: not an empty answer where the job directory kept a copy (a Ray started again at the driver's address), nor a failed one; an empty log with nothing kept is Ray's" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'import sys
from pathlib import Path
from mvp.jobs.after_sending import wait_logs_stop
from mvp.worker.errors import MvpError
from mvp.worker.jobdir import JobDir
class Dash:
    def __init__(self, text): self.text = text
    def job_logs(self, sid):
        if self.text is None: raise MvpError("no agent")
        return self.text
jd = Path(sys.argv[1])
print([wait_logs_stop._ray_serves_log(Dash(t), "ppo-kept-1", JobDir(jd)) for t in ("", "a log\n", None)])
(jd / "logs" / "driver.live.log").unlink()
print(wait_logs_stop._ray_serves_log(Dash(""), "ppo-kept-1", JobDir(jd)))' "$JD"
  assert_output $'[False, True, False]\nTrue'
}
