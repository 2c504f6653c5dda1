#!/usr/bin/env bats
# The nightly's retention on a shared root where two clusters keep their
# nightly runs: it counts and removes its own cluster's runs and jobs only.
# (No cluster answers here, so no job counts as running.)

setup() {
  load ../test_helper/common
}

# night RUN CLUSTER JOB...: a nightly run directory whose plan.json names
# CLUSTER (none for "-") and links JOB directories recorded with that cluster.
night() {
  local run=$1 cluster=$2 sid; shift 2
  local reg=$BATS_TEST_TMPDIR/regressions jobs=$BATS_TEST_TMPDIR/jobs
  mkdir -p "$reg/$run"
  jq -n --arg c "$cluster" --args '{cluster: (if $c == "-" then null else $c end),
    jobs: [$ARGS.positional[] | {submission_id: .}]} | if .cluster == null then del(.cluster) else . end' "$@" \
    >"$reg/$run/plan.json"
  for sid in "$@"; do
    mkdir -p "$jobs/$sid/config"
    jq -n --arg c "$cluster" '{resolved: (if $c == "-" then {} else {cluster: $c} end)}' >"$jobs/$sid/config/job_spec.json"
  done
}

prune() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from pathlib import Path
from mvp.core.dashboard import Dashboard
from mvp.nightly import retention
tmp = Path(sys.argv[1])
removed = retention.prune(tmp / "regressions", tmp / "jobs", int(sys.argv[2]), Dashboard("http://127.0.0.1:1", 1), sys.argv[3])
print(" ".join(removed))' "$BATS_TEST_TMPDIR" "$@" 2>/dev/null
}

left() {
  (cd "$BATS_TEST_TMPDIR" && echo $(ls regressions) "|" $(ls jobs))
}

@test "retention keeps the newest N runs of its own cluster and never removes another cluster's runs or jobs" {
  night nightly-1 alpha a1
  night nightly-2 beta b2
  night nightly-3 alpha a3
  night nightly-4 beta b4
  night nightly-5 alpha a5
  run prune 1 alpha
  assert_output "nightly-1 nightly-3"
  run left
  assert_output "nightly-2 nightly-4 nightly-5 | a5 b2 b4"
}

@test "retention: runs and jobs recorded before cluster names count as the pruning cluster's" {
  night nightly-1 - old1
  night nightly-2 beta b2
  night nightly-3 alpha a3
  run prune 1 alpha
  assert_output "nightly-1"
  run left
  assert_output "nightly-2 nightly-3 | a3 b2"
}

@test "retention: an old own run that names a job of another cluster loses its own jobs but keeps that job, and itself as its record" {
  night nightly-1 alpha a1
  # A job directory of beta's named by alpha's run (a shared id list, a hand edit).
  night nightly-2 beta shared
  jq '.jobs += [{submission_id: "shared"}]' "$BATS_TEST_TMPDIR/regressions/nightly-1/plan.json" >"$BATS_TEST_TMPDIR/p"
  mv "$BATS_TEST_TMPDIR/p" "$BATS_TEST_TMPDIR/regressions/nightly-1/plan.json"
  rm -r "$BATS_TEST_TMPDIR/regressions/nightly-2"
  night nightly-3 alpha a3
  run prune 1 alpha
  assert_output ""
  run left
  assert_output "nightly-1 nightly-3 | a3 shared"
}

@test "retention: the same-night control's probe jobs (control.json) go with their night, and stay while a kept night links them" {
  night nightly-1 alpha a1
  night nightly-2 alpha a2
  night nightly-3 alpha a3
  local jobs=$BATS_TEST_TMPDIR/jobs reg=$BATS_TEST_TMPDIR/regressions sid
  for sid in c1 k1 k3; do
    mkdir -p "$jobs/$sid/config"
    echo '{"resolved": {"cluster": "alpha"}}' >"$jobs/$sid/config/job_spec.json"
  done
  echo '{"control": {"submission_id": "c1"}, "candidate": {"submission_id": "k1"}}' >"$reg/nightly-1/control.json"
  # nightly-3's control probe was not submitted (null): nothing to keep for it.
  echo '{"control": {"submission_id": null}, "candidate": {"submission_id": "k3"}}' >"$reg/nightly-3/control.json"
  run prune 1 alpha
  assert_output "nightly-1 nightly-2"
  run left
  assert_output "nightly-3 | a3 k3"
}
