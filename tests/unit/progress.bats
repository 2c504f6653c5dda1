#!/usr/bin/env bats
# A running job's progress as --wait and 50_status show it, read from the log
# its node keeps (helpers/mvp/jobs/inspection/progress.py), on log text shaped as verl 0.9.1
# writes it: PPO/GRPO step lines behind Ray's coloured actor prefix with a
# `Training Progress` bar, SFT's bar and step sharing a line.

setup() {
  load ../test_helper/common
}

progress_of() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.jobs.inspection import progress
from mvp.worker.jobdir import JobDir
p = progress.of_job(JobDir(sys.argv[1]))
print(progress.text(p) if p else "none")' "$1"
}

job_log() {
  mkdir -p "$BATS_TEST_TMPDIR/job/logs"
  printf "$@" >"$BATS_TEST_TMPDIR/job/logs/driver.live.log"
}

@test "progress: a GRPO log gives the newest step of the bar's total, the score, the last step time and the time left" {
  local prefix=$'\e[36m(TaskRunnerV1 pid=113, ip=127.0.0.4)\e[0m'
  job_log '%s step:1 - critic/score/mean:0.25 - actor/pg_loss:0.1 - timing_s/step:6.5\n%s Training Progress:   5%%|x| 1/20 [00:06<02:00,  6.50s/it]\n%s step:2 - critic/score/mean:np.float64(0.375) - timing_s/step:6.0\n' \
    "$prefix" "$prefix" "$prefix"
  run progress_of "$BATS_TEST_TMPDIR/job"
  assert_output "step 2/20, score 0.375, 6 s/step, ETA 1m48s"
}

@test "progress: an SFT log (bar and step on one line, no timings) gives the loss and tqdm's rate" {
  job_log '\rEpoch 1/1:  38%%|###| 3/8 [00:06<00:10,  2.01s/it]step:3 - train/loss:7.19 - train/grad_norm:1.2\n'
  run progress_of "$BATS_TEST_TMPDIR/job"
  assert_output "step 3/8, loss 7.19, 2.01 s/step, ETA 10s"
}

@test "progress: no step yet, or no kept log, is none; only the end of a long log is read, its cut first line dropped" {
  job_log 'MVP_PRECHECK_MARKER=standin\n(TaskRunnerV1 pid=1) step:0 - val/score:0.1\n'
  run progress_of "$BATS_TEST_TMPDIR/job"
  assert_output "none"
  run progress_of "$BATS_TEST_TMPDIR/nowhere"
  assert_output "none"
  # 70 KB of log: the first step line (with a step time) falls outside the
  # 64 KB tail, the second inside; the tail's first line is cut, and what is
  # left of it is a progress bar. Read whole, the step time and the bar's
  # total would show (step 2/30, 9 s/step); with the cut line kept, the total.
  { printf 'step:1 - train/loss:9.0 - timing_s/step:9.0\n'; head -c 70000 /dev/zero | tr '\0' 'x'
    printf '| 3/30 [00:01<00:02\nstep:2 - train/loss:8.0\n'; } >"$BATS_TEST_TMPDIR/job/logs/driver.live.log"
  run progress_of "$BATS_TEST_TMPDIR/job"
  assert_output "step 2, loss 8"
}
