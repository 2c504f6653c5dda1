#!/usr/bin/env bats
# The driver log's keeper (helpers/mvp/worker/log_keeper.py) with a real driver
# process whose stdout is a file, as Ray's job supervisor starts drivers: the
# job directory's copy grows while the driver runs, secrets masked, and holds
# everything the driver wrote after the driver, its descendants and its
# process group are SIGKILLed (as `ray job stop`'s job supervisor and Ray's
# watcher of a dead supervisor do), and the keeper then ends.

setup() {
  load ../test_helper/common
  JD=$BATS_TEST_TMPDIR/job
  mkdir -p "$JD/logs"
  DRIVER=$BATS_TEST_TMPDIR/driver.py
  # Loads the keeper as launch.py does (its directory first on sys.path),
  # then writes a step line every 0.2 s until killed.
  cat >"$DRIVER" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
import log_keeper
from jobdir import JobDir
print("keeper started:", log_keeper.start(JobDir(sys.argv[2]), float(sys.argv[3])), flush=True)
print("token in use:", "s3cret-value-42", flush=True)
for step in range(1, 10000):
    print(f"step:{step} - loss:{1 / step:.4f}", flush=True)
    time.sleep(0.2)
PY
}

teardown() {
  [[ -z ${DRIVER_PID:-} ]] || kill -KILL -- "-$DRIVER_PID" 2>/dev/null || true
  local pid
  for pid in $(pgrep -f "$DRIVER" || true); do kill -KILL "$pid" 2>/dev/null || true; done
}

# (A function, not `bash -c`: that shell's own argv would hold the pattern.)
no_process_runs() { ! pgrep -f "$1" >/dev/null; }

# kill_like_ray PID: SIGKILL to PID and every descendant (job_supervisor.py
# stops job_process.children(recursive=True) too), then to its process group.
kill_like_ray() {
  local pid=$1 all=() i child
  all=("$pid")
  for ((i = 0; i < ${#all[@]}; i++)); do
    for child in $(ps -o pid= --ppid "${all[$i]}"); do all+=("$child"); done
  done
  kill -KILL "${all[@]}" 2>/dev/null || true
  kill -KILL -- "-$pid" 2>/dev/null || true
}

# keeper_done SECONDS: log_keeper.wait_until_done on the copy, as archive.finalize calls it.
keeper_done() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.worker import log_keeper
print(log_keeper.wait_until_done(sys.argv[1], float(sys.argv[2])))' "$JD/logs/driver.live.log" "$1"
}

start_driver() {
  MY_API_TOKEN=s3cret-value-42 setsid "$MVP_REPO/.venv/bin/python" "$DRIVER" "$MVP_REPO/helpers/mvp/worker" "$JD" "$1" \
    >"$BATS_TEST_TMPDIR/job-driver.log" 2>&1 &
  DRIVER_PID=$!
}

@test "log keeper: the job directory's copy grows while the driver runs, whole lines, the secret masked" {
  start_driver 0.5
  mvp_wait_until 10 "step 5 in the kept copy" grep -q '^step:5 ' "$JD/logs/driver.live.log"
  run cat "$JD/logs/driver.live.log"
  assert_line "keeper started: True"
  assert_line "token in use: ***"
  refute_output --partial "s3cret-value-42"
  # Owner and group only, as every file of a job directory.
  assert_equal "$(stat -c %a "$JD/logs/driver.live.log")" 640
  # Only whole lines are copied: the last byte is a newline.
  [[ $(tail -c 1 "$JD/logs/driver.live.log" | od -An -c | tr -d ' ') == '\n' ]]
}

# copy_times SECONDS: while the driver runs, the kept copy is watched for
# SECONDS; prints, for each time it grew, the seconds since the first time
# it grew (the keeper's start), rounded to tenths, one a line.
copy_times() {
  "$MVP_REPO/.venv/bin/python" - "$JD/logs/driver.live.log" "$1" <<'PY'
import os, sys, time
path, until = sys.argv[1], time.monotonic() + float(sys.argv[2])
size, grew = 0, []
while time.monotonic() < until:
    now = os.stat(path).st_size if os.path.exists(path) else 0
    if now != size:
        size = now
        grew.append(time.monotonic())
    time.sleep(0.05)
print("\n".join(f"{t - grew[0]:.1f}" for t in grew))
PY
}

@test "log keeper: with a 30 s interval the copies come 1, 2, 5 and 10 s in, and none after until the interval" {
  start_driver 30
  run copy_times 14
  # The keeper's first copy, when it starts, holds what the driver wrote by
  # then (nothing, when the keeper came up first): then copies 1, 2, 5 and 10 s
  # after that start, 1, 3 and 5 s apart, and none in the 3 s after the last.
  local -a at=("${lines[@]}")
  ((${#at[@]} != 5)) || at=("${at[@]:1}")
  [[ ${#at[@]} == 4 ]] || { echo "# the copy grew at: ${lines[*]} s" >&2; false; }
  local gaps=(0 1 3 5) i
  for i in 1 2 3; do
    awk -v a="${at[i - 1]}" -v b="${at[i]}" -v want="${gaps[i]}" 'BEGIN { exit !(b - a >= want - 0.6 && b - a <= want + 0.6) }' ||
      { echo "# the copy grew at: ${lines[*]} s; copies $i and $((i + 1)) of the timed ones are not ${gaps[i]} s apart" >&2; false; }
  done
}

@test "log keeper: with a 30 s interval the first copy comes 1 s in: the driver and its keeper SIGKILLed together (its node died) leave the driver's first lines kept" {
  start_driver 30
  # Step 5 is written about 1 s in: a copy of it long before the interval.
  mvp_wait_until 8 "step 5 in the kept copy" grep -q '^step:5 ' "$JD/logs/driver.live.log"
  # A node's death: every process of the job at once, the keeper included.
  local -a all
  mapfile -t all < <(pgrep -f "$DRIVER")
  ((${#all[@]} >= 2))
  kill -KILL "${all[@]}"
  mvp_wait_until 5 "no driver process left" no_process_runs "$DRIVER"
  DRIVER_PID=""
  run cat "$JD/logs/driver.live.log"
  assert_line "keeper started: True"
  assert_line --regexp '^step:5 - loss:'
  [[ ! -e $JD/logs/.driver.live.done ]]
}

# ray_job_id LOGS PID BORN_AT: log_keeper.ray_job_id as the dispatcher calls it.
ray_job_id() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.worker import log_keeper
print(log_keeper.ray_job_id(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])) or "none")' "$@"
}

@test "log keeper: the driver's Ray job id comes from a core driver log written since the driver started, never an earlier job's driver with the same PID (a node started again in the same Ray session counts PIDs from 1 again)" {
  local logs=$BATS_TEST_TMPDIR/session/logs now
  mkdir -p "$logs"
  now=$(date +%s)
  # An earlier job's driver had PID 412 on this node, before it died with it.
  touch -d "@$((now - 60))" "$logs/python-core-driver-01000000ffffffffffffffffffffffffffffffffffffffffffffffff_412.log"
  touch "$logs/python-core-driver-07000000ffffffffffffffffffffffffffffffffffffffffffffffff_413.log"
  run ray_job_id "$logs" 412 "$((now - 5))"
  assert_output none
  touch "$logs/python-core-driver-05000000ffffffffffffffffffffffffffffffffffffffffffffffff_412.log"
  run ray_job_id "$logs" 412 "$((now - 5))"
  assert_output 05000000
}

@test "log keeper: after the driver, its descendants and its process group are SIGKILLed the copy holds every line it wrote once the keeper lets go of it, and the keeper ends" {
  start_driver 30
  mvp_wait_until 10 "step 8 in the driver's log" grep -q '^step:8 ' "$BATS_TEST_TMPDIR/job-driver.log"
  # The copies of the first seconds may have come: the last is the driver's end.
  # While the driver runs, the keeper holds its copy: archiving would wait.
  run keeper_done 0.5
  assert_output False
  [[ ! -e $JD/logs/.driver.live.done ]]
  kill_like_ray "$DRIVER_PID"
  # What the job's archiving waits for: once it returns, the copy is whole.
  run keeper_done 10
  assert_output True
  sed 's/s3cret-value-42/***/' "$BATS_TEST_TMPDIR/job-driver.log" >"$BATS_TEST_TMPDIR/expected.log"
  diff "$BATS_TEST_TMPDIR/expected.log" "$JD/logs/driver.live.log"
  # It says so: the copy is the whole log.
  [[ -f $JD/logs/.driver.live.done ]]
  mvp_wait_until 5 "no driver process left" no_process_runs "$DRIVER"
  DRIVER_PID=""
}

# save_driver_log: archive's copy of the driver log when neither the dashboard
# nor the node's Ray logs can be read from here (dash None, no way to the node).
save_driver_log() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.jobs.after_sending import archive, node_access
from mvp.worker.jobdir import JobDir
from mvp.worker.redact import Redactor
archive._save_driver_log(JobDir(sys.argv[1]), None, "j1", {"driver_info": {"node_ip_address": "10.0.0.3"}},
                        node_access.UNREACHABLE, Redactor([]))' "$JD"
}

@test "log keeper: archiving keeps the node's copy as driver.log when its keeper saw the driver end, and only then (the dashboard and the node's Ray logs out of reach)" {
  # A progress bar's carriage returns are kept as they are (Ray's copy has them).
  printf 'MVP_PRECHECK_MARKER=standin\nstep:1 - loss:1.0\n(TaskRunner pid=1) \rProgress: 1/2\r\n' >"$JD/logs/driver.live.log"
  save_driver_log
  [[ ! -e $JD/logs/driver.log ]]
  grep -q "no copy on the driver's node either; its node kept $JD/logs/driver.live.log while it ran" "$JD/logs/driver.log.missing"
  : >"$JD/logs/.driver.live.done"
  save_driver_log
  cmp "$JD/logs/driver.live.log" "$JD/logs/driver.log"
  [[ ! -e $JD/logs/driver.log.missing ]]
}

# save_driver_log_ssh WORD...: as save_driver_log, on the ssh runtime whose
# way into the driver's node (10.0.0.3) is the argv WORD...
save_driver_log_ssh() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.jobs.after_sending import archive, node_access
from mvp.worker.jobdir import JobDir
from mvp.worker.redact import Redactor
archive._save_driver_log(JobDir(sys.argv[1]), None, "j1", {"driver_info": {"node_ip_address": "10.0.0.3"}},
                        node_access.NodeAccess({}, {"10.0.0.3": sys.argv[2:]}), Redactor([]))' "$JD" "$@"
}

@test "log keeper: on ssh, archiving reads the driver log over ssh from its node's Ray log directory (the node up, its Ray gone), before the kept copy; a node that does not answer is named in driver.log.missing" {
  printf 'MVP_PRECHECK_MARKER=standin\n' >"$JD/logs/driver.live.log"
  # The node does not answer: ssh's own last line is kept, and the kept copy said.
  save_driver_log_ssh sh -c 'echo "ssh: connect to host 10.0.0.3 port 22: Connection refused" >&2; exit 255' ssh
  [[ ! -e $JD/logs/driver.log ]]
  grep -q "over ssh from 10.0.0.3: exit 255 (ssh: connect to host 10.0.0.3 port 22: Connection refused); no copy on the driver's node either; its node kept" "$JD/logs/driver.log.missing"
  # The node answers: what the remote command printed is driver.log, and the
  # command is the one that looks in the node's Ray sessions for this job's log.
  run --separate-stderr save_driver_log_ssh sh -c "printf \"%s\" \"\$1\" >\"$BATS_TEST_TMPDIR/remote\"; printf \"MVP_PRECHECK_MARKER=standin\nstep:2 - loss:1.0\n\"" ssh
  assert_success
  [[ $stderr == *"job j1: its driver log read over ssh from its node's Ray log directory" ]]
  assert_equal "$(cat "$JD/logs/driver.log")" $'MVP_PRECHECK_MARKER=standin\nstep:2 - loss:1.0'
  [[ ! -e $JD/logs/driver.log.missing ]]
  grep -qF "/tmp/ray/session_2*/logs/job-driver-j1.log" "$BATS_TEST_TMPDIR/remote"
}

@test "log keeper: no keeper with MVP_LOG_SYNC_SECONDS=0 or when stdout is not a file" {
  start_driver 0
  mvp_wait_until 10 "step 2 in the driver's log" grep -q '^step:2 ' "$BATS_TEST_TMPDIR/job-driver.log"
  assert_equal "$(head -n 1 "$BATS_TEST_TMPDIR/job-driver.log")" "keeper started: False"
  [[ ! -e $JD/logs/driver.live.log ]]
  kill -KILL -- "-$DRIVER_PID"; DRIVER_PID=""
  run bash -c 'timeout 2 "$1" "$2" "$3" "$4" 1 2>/dev/null | head -n 1' _ "$MVP_REPO/.venv/bin/python" "$DRIVER" "$MVP_REPO/helpers/mvp/worker" "$JD"
  assert_output "keeper started: False"
  [[ ! -e $JD/logs/driver.live.log ]]
}
