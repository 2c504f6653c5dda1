#!/usr/bin/env bats
# Retry chains: the JobSpec's `retries`, the chain shown
# as one row (50_status, the nightly's report and index), and the check
# `resumed` (a resumption's first step and data position), on job
# directories laid out as the runbook lays them (config/job_spec.json,
# result.json, logs/driver.log, checkpoints/).

setup() {
  load ../test_helper/common
  JOBS=$BATS_TEST_TMPDIR/shared/jobs
  mkdir -p "$JOBS"
}

# py CODE ARGS...: the helper package's Python with CODE.
py() {
  local code=$1; shift
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c "$code" "$@"
}

# jobspec_with LINE: a valid JobSpec's text with LINE added.
jobspec_with() {
  printf 'workload: grpo\nmodel: m\ndataset: {train: t.parquet}\n%s\n' "$1"
}

parse_jobspec() {
  py 'import sys
from mvp.jobs.planning import jobspec
from mvp.worker.errors import MvpError
try:
    print(jobspec.parse_jobspec(sys.stdin.read(), "spec.yaml").get("retries"))
except MvpError as e:
    print(f"ERROR: {e}")' 
}

@test "JobSpec retries: a whole number from 0 to 20 or empty is taken; anything else is one line naming the field" {
  run parse_jobspec < <(jobspec_with "retries: 3")
  assert_output 3
  run parse_jobspec < <(jobspec_with "retries:")
  assert_output None
  run parse_jobspec < <(jobspec_with "retries: 0")
  assert_output 0
  run parse_jobspec < <(jobspec_with "retries: 21")
  assert_output "ERROR: spec.yaml.retries: 21 is not a number of resumptions from 0 to 20; a job failing more often than that needs a fix, not another try"
  run parse_jobspec < <(jobspec_with "retries: -1")
  assert_output --partial "ERROR: spec.yaml.retries: -1 is not a number of resumptions"
  run parse_jobspec < <(jobspec_with "retries: 1.5")
  assert_output "ERROR: spec.yaml.retries: must be a whole number or empty, got float 1.5"
  run parse_jobspec < <(jobspec_with "retries: true")
  assert_output "ERROR: spec.yaml.retries: must be a whole number or empty, got bool True"
  run parse_jobspec < <(jobspec_with "retry: 2")
  assert_output "ERROR: spec.yaml: unknown field 'retry' (did you mean 'retries'?)"
}

@test "one owner: 40-44 hand --retry N to the submit helper, which refuses 21 in the JobSpec's own words (jobspec.check_retries) before it reads a JobSpec" {
  submit_args() {
    export MVP_REPO
    # shellcheck source=../../scripts/lib/common.sh
    source "$MVP_REPO/scripts/lib/common.sh"
    mvp::flags::spec "[JOBSPEC]  x" "${MVP_SUBMIT_FLAGS[@]}"
    mvp::flags::parse --wait --retry "$1"
    MVP_DRY_RUN=0
    mvp::rt::node_is_up() { return 0; }
    mvp::helper::run() {
      cat >/dev/null
      [[ $1 != submit ]] || { printf '<%s>' "$@" >&2; echo; echo submission_id=j; }
      [[ $1 != wait ]] || echo status=SUCCEEDED
    }
    mvp::submit::run cli "$MVP_REPO/templates/jobspecs/grpo.yaml" "" 2>&1 >/dev/null | grep '^<submit>'
  }
  run submit_args 3
  assert_output --partial "<--retry><3>"
  run --separate-stderr env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -m mvp submit --via cli \
    --check-only --jobspec-name s.yaml --ray-config-name d.yaml --retry 21 </dev/null
  assert_failure 1
  local refused=$stderr
  assert_equal "$refused" "ERROR: --retry: 21 is not a number of resumptions from 0 to 20; a job failing more often than that needs a fix, not another try"
  run parse_jobspec < <(jobspec_with "retries: 21")
  assert_equal "${output#ERROR: spec.yaml.retries}" "${refused#ERROR: --retry}"
}

@test "the shipped JobSpec templates validate, and ask for no retry" {
  local f
  for f in ppo grpo sft; do
    run parse_jobspec <"$MVP_REPO/templates/jobspecs/$f.yaml"
    assert_output None
  done
}

@test "40-44 take the JobSpec's retries (the submit helper's retries= answer) with --wait, and say once on stderr that they cannot without it" {
  spec_retries() {
    # shellcheck source=../../scripts/lib/log.sh
    source "$MVP_REPO/scripts/lib/log.sh"
    # shellcheck source=../../scripts/lib/submit.sh
    source "$MVP_REPO/scripts/lib/submit.sh"
    mvp::submit::spec_retries "$@"
  }
  run --separate-stderr spec_retries 2 a 1
  assert_output 2
  [[ -z $stderr ]]
  run --separate-stderr spec_retries 2 a 0
  assert_output 0
  [[ $stderr == *"the JobSpec asks for retries: 2, which only --wait sees; job a will not be retried" ]]
  run spec_retries 0 b 1
  assert_output 0
  run spec_retries "" c 1
  assert_output 0
}

# lay_job ID STATUS RESUMED_FROM [STEP...]: a job directory as the runbook
# lays it: config/job_spec.json (resolved.resumed_from, job_dir, the
# checkpoint dir override), result.json, logs/driver.log with verl's step
# lines (as Ray prefixes the TaskRunner's), checkpoints/.
lay_job() {
  local id=$1 status=$2 from=$3; shift 3
  local jd=$JOBS/$id node=$JOBS/$id step
  mkdir -p "$jd/config" "$jd/logs" "$jd/checkpoints"
  jq -n --arg id "$id" --arg from "$from" --arg jd "$node" --arg rd "${ROLLOUTS-}" --arg sf "${SAVE_FREQ:-}" '{input: {workload: "grpo"},
    resolved: {submission_id: $id, workload: "grpo", job_dir: $jd, resumed_from: $from, cluster: "unit",
      trainer_overrides: ({"trainer.default_local_dir": "\($jd)/checkpoints"}
        + (if $rd == "" then {} else {"trainer.rollout_data_dir": $rd} end)
        + (if $sf == "" then {} else {"trainer.save_freq": $sf} end))}}' >"$jd/config/job_spec.json"
  jq -n --arg s "$status" --arg id "$id" '{submission_id: $id, status: $s, start_time_ms: 1700000000000}' >"$jd/result.json"
  : >"$jd/logs/driver.log"
  for step in "$@"; do
    printf '\e[36m(TaskRunnerV1 pid=7, ip=127.0.0.4)\e[0m step:%s - actor/grad_norm:0.3 - timing_s/step:1.5\n' "$step" \
      >>"$jd/logs/driver.log"
  done
}

# dump ID STEP PROMPT...: verl's rollout dump of step STEP (one line per sample).
dump() {
  local id=$1 step=$2 p; shift 2
  mkdir -p "$JOBS/$id/checkpoints/rollouts"
  for p in "$@"; do
    jq -cn --arg p "$p" --argjson s "$step" '{input: $p, output: "o", gts: "1", score: 0, step: $s}'
  done >"$JOBS/$id/checkpoints/rollouts/$step.jsonl"
}

# status_rows: 50_status's job table (render) and JSON rows, from the archive only.
status_of() {
  py 'import json, sys
from pathlib import Path
from mvp.jobs.inspection import status
jobs = Path(sys.argv[1])
rows = [{"submission_id": p.name, "status": json.load(open(p / "result.json"))["status"], "start_time": i}
        for i, p in enumerate(sorted(jobs.iterdir()))]
rows.reverse()
folded = status.fold_chains(jobs, rows)
report = {"cluster": {"up": False, "ok": False, "dashboard": "-", "name": "unit", "problems": []},
          "jobs": folded, "shared_root": {"path": "/shared", "error": "-"}}
if sys.argv[2] == "json":
    print(json.dumps(folded))
else:
    print(status.render(report))' "$JOBS" "$1"
}

@test "50_status shows a retried job as one row: <first> -> -r1 -> -r2, the final status, each attempt linked both ways" {
  lay_job grpo-1 FAILED "" 1 2 3
  lay_job grpo-1-r1 FAILED grpo-1/global_step_2 3
  lay_job grpo-1-r2 SUCCEEDED grpo-1/global_step_2 3 4
  lay_job sft-2 SUCCEEDED "" 1 2
  # Named like a retry but resumed from nothing: no link.
  lay_job sft-2-r1 FAILED ""
  run status_of text
  assert_success
  assert_line --regexp '^  grpo-1 -> -r1 -> -r2 +SUCCEEDED .*\(attempts FAILED -> FAILED -> SUCCEEDED\)$'
  assert_line --regexp '^  sft-2 +SUCCEEDED '
  assert_line --regexp '^  sft-2-r1 +FAILED '
  [[ $(grep -c 'grpo-1' <<<"$output") == 1 ]]
  run status_of json
  jq -e '[.[] | select(.chain)] | length == 1' <<<"$output"
  jq -e '.[] | select(.chain) | .submission_id == "grpo-1-r2" and .status == "SUCCEEDED"
    and ([.chain[] | [.submission_id, .status, .resumed_from, .resumed_by]] ==
         [["grpo-1", "FAILED", null, "grpo-1-r1"], ["grpo-1-r1", "FAILED", "grpo-1/global_step_2", "grpo-1-r2"],
          ["grpo-1-r2", "SUCCEEDED", "grpo-1/global_step_2", null]])' <<<"$output"
}

@test "50_status folds a chain whose first job is older than the listing shows, and writes nothing into the failed job's directory" {
  lay_job ppo-9 FAILED "" 1 2
  lay_job ppo-9-r1 RUNNING ppo-9/global_step_2 3
  local before
  before=$(tree_digest "$JOBS/ppo-9")
  run py 'import json, sys
from pathlib import Path
from mvp.jobs.inspection import status
rows = [{"submission_id": "ppo-9-r1", "status": "RUNNING", "start_time": 5}]
print(json.dumps(status.fold_chains(Path(sys.argv[1]), rows)))' "$JOBS"
  jq -e '.[0].chain | map(.submission_id + ":" + .status) == ["ppo-9:FAILED", "ppo-9-r1:RUNNING"]' <<<"$output"
  [[ $(tree_digest "$JOBS/ppo-9") == "$before" ]]
}

# resumed ID: the check `resumed` of job ID, as JSON.
resumed() {
  py 'import json, sys
from pathlib import Path
from mvp.jobs.after_sending import chain, resumed_check
jobs = Path(sys.argv[1])
print(json.dumps(resumed_check.check(jobs, sys.argv[2], chain.before(jobs, sys.argv[2]))))' "$JOBS" "$1"
}

# The rollout dump as a JobSpec asks for it: into the job's checkpoint directory, through verl's interpolation.
# shellcheck disable=SC2016  # the ${...} is verl's (Hydra's), not bash's
ROLLOUTS_OVERRIDE='${trainer.default_local_dir}/rollouts'

@test "check resumed passes when the first step is the checkpoint's next and step N+1 trained the uninterrupted run's prompts (any order)" {
  ROLLOUTS=$ROLLOUTS_OVERRIDE
  lay_job g FAILED "" 1 2 3
  dump g 3 q5 q6 q6 q7
  lay_job g-r1 SUCCEEDED g/global_step_2 3 4
  dump g-r1 3 q6 q7 q5 q6
  run resumed g-r1
  assert_output '{"name": "resumed", "passed": true, "evidence": "first logged step 3 = g/global_step_2 + 1; the prompts of its 4 samples of step 3 are those g trained at step 3"}'
  # A job resumed from nothing has no such check.
  run resumed g
  assert_output null
}

@test "check resumed fails when the data position did not follow (the resumption trained the next epoch's prompts, as in verl 7401)" {
  ROLLOUTS=$ROLLOUTS_OVERRIDE
  lay_job g FAILED "" 1 2 3
  dump g 3 q5 q6 q7 q8
  lay_job g-r1 SUCCEEDED g/global_step_2 3 4
  dump g-r1 3 q1 q2 q7 q8
  run resumed g-r1
  assert_output --partial '"passed": false'
  assert_output --partial "first logged step 3 = g/global_step_2 + 1, but 2 of its 4 samples of step 3 have prompts g did not train at step 3: the data position did not follow"
}

@test "check resumed fails a resumption that started over at step 1, or logged no step at all (verl 7401 ends it SUCCEEDED); a validation line at the checkpoint's step is not a training step" {
  lay_job g FAILED "" 1 2 3
  lay_job g-r1 SUCCEEDED g/global_step_2 1 2 3 4
  run resumed g-r1
  assert_output --partial '"passed": false, "evidence": "first logged step 1, not 3: it did not go on from g/global_step_2"'
  lay_job g-r2 SUCCEEDED g/global_step_2
  run resumed g-r2
  assert_output --partial '"passed": false, "evidence": "resumed from g/global_step_2 but logged no training step'
  # verl validates at the checkpoint's step before it trains on (val_before_train).
  lay_job h FAILED "" 1 2
  lay_job h-r1 SUCCEEDED h/global_step_2 3
  sed -i '1i step:2 - val-core/openai/gsm8k/acc/mean@1:0.1' "$JOBS/h-r1/logs/driver.log"
  run resumed h-r1
  assert_output --partial '"passed": null, "evidence": "first logged step 3 = h/global_step_2 + 1; data position not judged: no rollout dump of step 3 in h-r1'
}

@test "check resumed does not judge the data position without a dump of step N+1 on both sides, and never passes it" {
  ROLLOUTS=$ROLLOUTS_OVERRIDE
  lay_job g FAILED "" 1 2
  lay_job g-r1 SUCCEEDED g/global_step_2 3 4
  dump g-r1 3 q1 q2
  run resumed g-r1
  assert_output --partial '"passed": null, "evidence": "first logged step 3 = g/global_step_2 + 1; data position not judged: no earlier job of the chain dumped its step 3"'
  # A dump outside the job directory is not read.
  ROLLOUTS=/elsewhere/rollouts lay_job k-r1 SUCCEEDED g/global_step_2 3
  run resumed k-r1
  assert_output --partial "no rollout dump of step 3 in k-r1"
}

@test "retry-from stops a chain whose last resumption trained but did not go on from its checkpoint" {
  lay_job g FAILED "" 1 2 3
  lay_job g-r1 FAILED g/global_step_2 1 2
  run py 'import sys
from pathlib import Path
from mvp.jobs.after_sending import retry
from mvp.worker.errors import MvpError
try:
    print(retry.resume_point(Path(sys.argv[1]), "g-r1"))
except MvpError as e:
    print(f"ERROR: {e}")' "$JOBS"
  assert_output "ERROR: job g-r1 ended FAILED and did not go on as resumed: first logged step 1, not 3: it did not go on from g/global_step_2; the chain stops here"
}

# judge_chain: the nightly judge on the chain g -> -r1 (its last attempt, as 60 records it), then its report and index.
judge_chain() {
  py 'import json, sys
from pathlib import Path
from mvp.nightly import judge, report, index
root = Path(sys.argv[1])
plan = {"jobs": [{"name": "grpo", "submission_id": "g-r1"}], "head_node_name": "head", "worker_ips": ["10.0.0.2"],
        "job_timeout_s": 60, "prepare": {}}
job = judge.judge_job(plan["jobs"][0], root, plan)
rep = {"run_id": "nightly-20260101T000000Z", "started_at": "2026-01-01T00:00:00Z", "finished_at": "x", "log": "l",
       "jobs": [job], "passed": False, "summary": judge.summary_line({"run_id": "n", "jobs": [job], "log": "l"})}
out = Path(sys.argv[2])
(out / "report.md").write_text(report.markdown(rep))
(out / "report.html").write_text(report.html(rep))
(out / "index.html").write_text(index.render([{"run_id": rep["run_id"], "passed": False, "started_at": rep["started_at"],
                                               "jobs": {"grpo": index._entry(job)}}], out))
print(json.dumps(job))' "$BATS_TEST_TMPDIR/shared" "$BATS_TEST_TMPDIR"
}

@test "the nightly report shows a retried job as one row with a link to each attempt's job directory, judged by check resumed" {
  ROLLOUTS=$ROLLOUTS_OVERRIDE SAVE_FREQ=2
  lay_job g FAILED "" 1 2 3
  dump g 3 q5 q6
  lay_job g-r1 SUCCEEDED g/global_step_2 3 4
  dump g-r1 3 q6 q5
  # verl's checkpoint of the retry: its own steps only (global_step_2 is the first job's).
  mkdir "$JOBS/g-r1/checkpoints/global_step_4"
  echo 4 >"$JOBS/g-r1/checkpoints/latest_checkpointed_iteration.txt"
  run judge_chain
  assert_success
  jq -e '.attempts == [{submission_id: "g", status: "FAILED", resumed_from: null, resumed_by: "g-r1"},
                       {submission_id: "g-r1", status: "SUCCEEDED", resumed_from: "g/global_step_2", resumed_by: null}]' <<<"$output"
  jq -e '.checks[] | select(.name == "resumed") | .passed == true' <<<"$output"
  # The retry's checkpoints are judged from the step after the one it resumed from.
  jq -e '.checks[] | select(.name == "checkpoint_policy") | .passed == true and (.evidence | startswith("save_freq=2, steps run 4, saved at [4], expected [4]"))' <<<"$output"
  grep -q '^| grpo | g -> -r1 | SUCCEEDED |' "$BATS_TEST_TMPDIR/report.md"
  grep -q '^- attempt g: FAILED, resumed by g-r1$' "$BATS_TEST_TMPDIR/report.md"
  grep -q '^- attempt g-r1: SUCCEEDED, resumed from g/global_step_2$' "$BATS_TEST_TMPDIR/report.md"
  grep -q '^- PASS resumed: first logged step 3 = g/global_step_2 + 1' "$BATS_TEST_TMPDIR/report.md"
  [[ $(grep -c '^| grpo |' "$BATS_TEST_TMPDIR/report.md") == 1 ]]
  grep -q '<a href="../../jobs/g/" title="FAILED"><code>g</code></a> FAILED &rarr; <a href="../../jobs/g-r1/" title="SUCCEEDED, resumed from g/global_step_2"><code>-r1</code></a> SUCCEEDED' \
    "$BATS_TEST_TMPDIR/report.html"
  grep -q '<a href="../jobs/g/" title="FAILED"><code>g</code></a> FAILED &rarr; <a href="../jobs/g-r1/"' "$BATS_TEST_TMPDIR/index.html"
}

@test "40-44's --retry loop: each attempt is two helper calls (submit, then wait --retry-point), it goes on from the wait's resume_from= and stops, without a third call, when the wait gives none or no retry is left" {
  retry_loop() {
    export MVP_REPO
    # shellcheck source=../../scripts/lib/common.sh
    source "$MVP_REPO/scripts/lib/common.sh"
    MVP_DRY_RUN=0
    declare -gA MVP_FLAG=([--wait]=1 [--retry]=$1)
    MVP_FLAG_WORDS=(--wait --retry "$1")
    local calls=$BATS_TEST_TMPDIR/calls stops_at=$2
    : >"$calls"
    mvp::rt::node_is_up() { return 0; }
    # The helper, stubbed: a submit answers its id; a wait answers FAILED and,
    # asked for it, resume_from= until the attempt STOPS_AT.
    mvp::helper::run() {
      cat >/dev/null
      echo "$*" >>"$calls"
      local id=j all="$*"
      case $1 in
        submit) [[ $all != *--submission-id* ]] || id=${all##*--submission-id }; echo "submission_id=$id" ;;
        wait)
          echo "status=FAILED"
          [[ $* != *--retry-point* || $2 == *"-r$stops_at" ]] || echo "resume_from=$2/global_step_2"
          return 1 ;;
      esac
    }
    mvp::submit::run cli "$MVP_REPO/templates/jobspecs/grpo.yaml" "" 2>/dev/null
  }
  run retry_loop 3 2
  assert_failure 1
  assert_output $'j\nj-r1\nj-r2'
  run cut -d' ' -f1-2 "$BATS_TEST_TMPDIR/calls"
  assert_output $'submit --via\nwait j\nsubmit --via\nwait j-r1\nsubmit --via\nwait j-r2'
  run grep -c -- "--retry-point" "$BATS_TEST_TMPDIR/calls"
  assert_output 3
  grep -q -- "--resume-from j/global_step_2 --submission-id j-r1$" "$BATS_TEST_TMPDIR/calls"
  grep -q -- "--resume-from j-r1/global_step_2 --submission-id j-r2$" "$BATS_TEST_TMPDIR/calls"
  # The last attempt's wait is not asked where to go on: no retry is left.
  run retry_loop 1 9
  assert_output $'j\nj-r1'
  run cat "$BATS_TEST_TMPDIR/calls"
  assert_line --index 1 "wait j --retry-point"
  assert_line --index 3 "wait j-r1"
}
