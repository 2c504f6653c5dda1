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
