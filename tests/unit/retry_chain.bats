#!/usr/bin/env bats
# Retry chains (issue 21 point 3): the JobSpec's `retries`, the chain shown
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
from mvp import jobspec
from mvp.errors import MvpError
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

@test "the shipped JobSpec templates validate, and ask for no retry" {
  local f
  for f in ppo grpo sft; do
    run parse_jobspec <"$MVP_REPO/templates/jobspecs/$f.yaml"
    assert_output None
  done
}

@test "40-44 take the JobSpec's retries (kept in job_spec.json) with --wait, and say once on stderr that they cannot without it" {
  mkdir -p "$JOBS/a/config" "$JOBS/b/config"
  echo '{"input": {"retries": 2}}' >"$JOBS/a/config/job_spec.json"
  echo '{"input": {"retries": null}}' >"$JOBS/b/config/job_spec.json"
  spec_retries() {
    # shellcheck source=../../scripts/lib/log.sh
    source "$MVP_REPO/scripts/lib/log.sh"
    # shellcheck source=../../scripts/lib/submit.sh
    source "$MVP_REPO/scripts/lib/submit.sh"
    MVP_HOST_SHARED_DIR=$BATS_TEST_TMPDIR/shared mvp::spec_retries "$@"
  }
  run --separate-stderr spec_retries a 1
  assert_output 2
  [[ -z $stderr ]]
  run --separate-stderr spec_retries a 0
  assert_output 0
  [[ $stderr == *"the JobSpec asks for retries: 2, which only --wait sees; job a will not be retried" ]]
  run spec_retries b 1
  assert_output 0
  run spec_retries nosuchjob 1
  assert_output 0
}

# lay_job ID STATUS RESUMED_FROM [STEP...]: a job directory as the runbook
# lays it: config/job_spec.json (resolved.resumed_from, job_dir, the
# checkpoint dir override), result.json, logs/driver.log with verl's step
# lines (as Ray prefixes the TaskRunner's), checkpoints/.
lay_job() {
  local id=$1 status=$2 from=$3; shift 3
  local jd=$JOBS/$id node=/shared/jobs/$id step
  mkdir -p "$jd/config" "$jd/logs" "$jd/checkpoints"
  jq -n --arg id "$id" --arg from "$from" --arg jd "$node" --arg rd "${ROLLOUTS-}" '{input: {workload: "grpo"},
    resolved: {submission_id: $id, workload: "grpo", job_dir: $jd, resumed_from: $from, cluster: "unit",
      trainer_overrides: ({"trainer.default_local_dir": "\($jd)/checkpoints"}
        + (if $rd == "" then {} else {"trainer.rollout_data_dir": $rd} end))}}' >"$jd/config/job_spec.json"
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
from mvp import status
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
from mvp import status
rows = [{"submission_id": "ppo-9-r1", "status": "RUNNING", "start_time": 5}]
print(json.dumps(status.fold_chains(Path(sys.argv[1]), rows)))' "$JOBS"
  jq -e '.[0].chain | map(.submission_id + ":" + .status) == ["ppo-9:FAILED", "ppo-9-r1:RUNNING"]' <<<"$output"
  [[ $(tree_digest "$JOBS/ppo-9") == "$before" ]]
}
