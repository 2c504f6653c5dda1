#!/usr/bin/env bats
# The environment fingerprint (helpers/mvp/jobs/after_sending/job_fingerprint.py, runenv.py) and what
# the nightly makes of it (helpers/mvp/nightly/night_fingerprint.py, judge.py,
# report.py, index.py): job directories with planted environments
# (tests/test_helper/fingerprint_sim.py), assembled, compared and judged by
# the real code.

setup() {
  load ../test_helper/common
  ROOT=$BATS_TEST_TMPDIR/shared
  mkdir -p "$ROOT"
}

# sim EXPR: EXPR evaluated with ROOT (a Path) defined; prints JSON.
sim() {
  mvp_eval ROOT "$ROOT" 'from fingerprint_sim import *
from mvp.jobs.after_sending import job_fingerprint; from mvp.worker import runenv
from mvp.nightly import night_fingerprint, judge, index' "$1"
}

@test "fingerprint of a job: snapshot id, commit and files digest, the driver's versions, Ray per node (head from the dashboard, workers from their keepers), the alive cluster's shape, runtime and auth" {
  run sim 'job(ROOT, "j1", commit="c" * 40)'
  assert_success
  jq -e '.snapshot == {"id": "codeA", "commit": ("c" * 40), "files_sha256": "sha-of-codeA"}' <<<"$output"
  jq -e '.driver == {"python": "3.11.7", "ray": "2.60.0", "torch": "2.13.0", "cuda": null, "nccl": null, "gpu_driver": null}' <<<"$output"
  jq -e '[.nodes[] | [.ip, .head, .ray, .ray_from]] == [["10.0.0.1", true, "2.60.0", "the dashboard (the head'"'"'s Ray)"],
         ["10.0.0.2", false, "2.60.0", "the node'"'"'s log keeper"], ["10.0.0.3", false, "2.60.0", "the node'"'"'s log keeper"]]' <<<"$output"
  jq -e '.cluster == {"runtime": "local", "cluster_name": "local@test", "auth_mode": "off", "image": null,
         "nodes": 3, "workers": 2, "worker_cpus": [16.0, 16.0], "worker_gpus": [0, 0]}' <<<"$output"
  # A snapshot made before 31 recorded `commit` gives its git_commit.
  run sim 'job(ROOT, "j2", code_id="codeOld")["snapshot"]["commit"]'
  assert_output "\"$(printf '0%.0s' {1..40})\""
}

@test "fingerprint: the snapshot's verl release (its verl/version/version) is recorded and its change named second, after the snapshot's id (an upgrade 0.9.0 -> 0.9.1); a tree without the file records none" {
  run sim 'job(ROOT, "v0", code_id="old", verl="0.9.0")["snapshot"]'
  assert_success
  jq -e '.verl == "0.9.0"' <<<"$output"
  run sim 'job_fingerprint.changes(job_fingerprint.diff(flat(ROOT, "v1", code_id="old", verl="0.9.0"), flat(ROOT, "v2", code_id="new", verl="0.9.1")))[:2]'
  assert_output '["snapshot.id old -> new", "snapshot.verl 0.9.0 -> 0.9.1"]'
  run sim '"snapshot.verl" in flat(ROOT, "v3")'
  assert_output false
}

@test "fingerprint diff: keys added, removed and changed with old -> new; the same environment differs in nothing" {
  run sim 'job_fingerprint.diff(flat(ROOT, "a"), flat(ROOT, "b"))'
  assert_success
  assert_output '{"added": {}, "removed": {}, "changed": {}}'
  run sim 'job_fingerprint.diff(flat(ROOT, "a"), flat(ROOT, "c", code_id="codeB", torch="2.14.0", worker_ray="2.61.0",
                            packages=["numpy==2.4.0", "ray==2.60.0", "torch==2.13.0", "safetensors==0.6.0"]))'
  assert_success
  jq -e '.added == {"package.safetensors": "0.6.0"} and .removed == {"package.transformers": "4.57.0"}' <<<"$output"
  jq -e '.changed["torch"] == ["2.13.0", "2.14.0"] and .changed["snapshot.id"] == ["codeA", "codeB"]
         and .changed["package.numpy"] == ["2.3.0", "2.4.0"]
         and .changed["ray"] == ["2.60.0", "10.0.0.1 2.60.0, 10.0.0.2 2.60.0, 10.0.0.3 2.61.0"]' <<<"$output"
  # torch and ray have keys of their own: not repeated as packages.
  jq -e '.changed | has("package.torch") | not' <<<"$output"
  # The snapshot first, then the versions; a commit or digest as its first 12 hex digits.
  run sim 'job_fingerprint.changes(job_fingerprint.diff(flat(ROOT, "e", commit="a" * 40), flat(ROOT, "f", code_id="codeB", commit="b" * 40, torch="2.14.0")))[:4]'
  assert_output '["snapshot.id codeA -> codeB", "snapshot.commit aaaaaaaaaaaa -> bbbbbbbbbbbb", "snapshot.files_sha256 sha-of-codeA -> sha-of-codeB", "torch 2.13.0 -> 2.14.0"]'
  run sim 'job_fingerprint.changes(job_fingerprint.diff(flat(ROOT, "a"), flat(ROOT, "d", torch="2.14.0")))'
  jq -e 'length == 2 and .[0] == "torch 2.13.0 -> 2.14.0" and (.[1] | test("^packages.sha256 [0-9a-f]{12} -> [0-9a-f]{12}$"))' <<<"$output"
}

@test "judge: a regression on a night whose torch changed names it in one line beside the failed check, in report.json, report.md and report.html" {
  run sim '[night(ROOT, 1, True)["passed"], night(ROOT, 2, False, torch="2.14.0")]'
  assert_success
  # The package list's digest changed too: the line leaves it out, the report lists it.
  line="fingerprint changed since the last good night nightly-20261101T023000Z: torch 2.13.0 -> 2.14.0"
  jq -e --arg l "$line" '.[1].fingerprint_changed == $l and ([.[1].jobs[0].checks[] | select(.passed == false) | .fingerprint_changed] == [$l])
         and ([.[1].jobs[0].checks[] | select(.passed) | has("fingerprint_changed")] == [false])' <<<"$output"
  md=$ROOT/regressions/nightly-20261102T023000Z/report.md
  grep -qxF -- "- $line" "$md"
  grep -qxF "## What changed since the last good night (nightly-20261101T023000Z)" "$md"
  grep -qxF -- "- torch 2.13.0 -> 2.14.0" "$md"
  grep -qE -- "^- packages.sha256 [0-9a-f]{12} -> [0-9a-f]{12}$" "$md"
  grep -qF "<li class=\"fingerprint\">fingerprint changed since the last good night nightly-20261101T023000Z: torch 2.13.0 -&gt; 2.14.0</li>" \
    "$ROOT/regressions/nightly-20261102T023000Z/report.html"
}

@test "judge: an unchanged fingerprint adds no line to a regression; a changed one adds none to a night that passed" {
  run sim '[night(ROOT, 1, True), night(ROOT, 2, False)]'
  assert_success
  jq -e '(.[1] | has("fingerprint_changed") | not) and ([.[1].jobs[0].checks[] | has("fingerprint_changed")] == [false, false])
         and .[1].fingerprint_diff == {"since": "nightly-20261101T023000Z", "added": {}, "removed": {}, "changed": {}}' <<<"$output"
  grep -qxF "Nothing: the same fingerprint." "$ROOT/regressions/nightly-20261102T023000Z/report.md"
  run sim 'night(ROOT, 3, True, torch="2.14.0")'
  jq -e '(has("fingerprint_changed") | not) and .fingerprint_diff.changed.torch == ["2.13.0", "2.14.0"]' <<<"$output"
  # The regressed night 2 was never the baseline: night 3 compares with night 1.
  jq -e '.fingerprint_diff.since == "nightly-20261101T023000Z"' <<<"$output"
}

@test "judge: the first night has no good night to compare with: no line, the report says so" {
  run sim 'night(ROOT, 1, False, torch="2.14.0")'
  assert_success
  jq -e '(has("fingerprint_changed") | not) and .fingerprint_diff.since == null' <<<"$output"
  grep -qxF "No good night before this one to compare with." "$ROOT/regressions/nightly-20261101T023000Z/report.md"
}

@test "night: keys the jobs agree on have one value, one they differ on names each job; a night without job fingerprints compares its snapshot alone" {
  job_a='{"name": "ppo", "submission_id": "p1"}'
  run sim "[job(ROOT, 'p1'), job(ROOT, 's1', torch='2.14.0'),
            night_fingerprint.of_night(ROOT / 'jobs', [$job_a, {'name': 'sft', 'submission_id': 's1'}, {'name': 'grpo', 'submission_id': None}], 'codeA')][2]"
  assert_success
  jq -e '.torch == "ppo 2.13.0; sft 2.14.0" and .["snapshot.id"] == "codeA" and .python == "3.11.7"' <<<"$output"
  run sim '[night(ROOT, 1, True), night_fingerprint.tonight(ROOT / "regressions", "nightly-20261102T023000Z", ROOT / "jobs", [], "codeB")]'
  jq -e '.[1] == [{"snapshot.id": "codeB"}, {"since": "nightly-20261101T023000Z", "added": {}, "removed": {},
         "changed": {"snapshot.id": ["codeA", "codeB"]}}]' <<<"$output"
}

@test "night: a job that ended before its driver's or a node's record was written changes nothing: not recording is no change" {
  run sim "[job(ROOT, 'p1'), job(ROOT, 's1', unrecorded=('driver', '10.0.0.3')),
            night_fingerprint.of_night(ROOT / 'jobs', [{'name': 'ppo', 'submission_id': 'p1'}, {'name': 'sft', 'submission_id': 's1'}], 'codeA')
            == job_fingerprint.flatten(job(ROOT, 'p1'))]"
  assert_success
  jq -e '.[1].driver_recorded == false and ([.[1].nodes[] | .ray_from] | index("not recorded")) == 2 and .[2] == true' <<<"$output"
  run sim 'job_fingerprint.flatten(job(ROOT, "s2", unrecorded=("driver", "10.0.0.3")))'
  jq -e '.ray == "2.60.0" and (has("torch") or has("packages.sha256") | not) and .["snapshot.id"] == "codeA"' <<<"$output"
}

@test "fingerprints.json keeps the last good night's fingerprint past KEEP_NIGHTS regressed nights; index.html lists the nights whose environment changed" {
  run sim '[night(ROOT, 1, True)] + [night(ROOT, d, False, torch="2.14.0") for d in range(2, 2 + night_fingerprint.KEEP_NIGHTS + 2)]'
  assert_success
  jq -e 'map(.fingerprint_changed) | .[1:] | all(startswith("fingerprint changed since the last good night nightly-20261101T023000Z: torch 2.13.0 -> 2.14.0"))' <<<"$output"
  jq -e 'length == 33 and (map(select(.fingerprint != null)) | length) == 31 and .[0].fingerprint != null and .[1].fingerprint == null' \
    "$ROOT/regressions/$(PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'from mvp.nightly import night_fingerprint; print(night_fingerprint.STORE)')"
  run sim 'index.render([], ROOT / "regressions")'
  [[ $output == *"<td>nightly-20261133T023000Z</td><td>nightly-20261101T023000Z</td><td><code>torch 2.13.0 -&gt; 2.14.0</code>"* ]]
}

@test "runenv: this CPU machine's CUDA, NCCL and GPU driver are null, not guessed; a planted driver file and torch build are read" {
  run sim 'runenv.versions()'
  assert_success
  jq -e '.cuda == null and .nccl == null and .gpu_driver == null and (.torch | startswith("2.")) and (.ray | length > 0)' <<<"$output"
  printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  (dvs-builder@U16-I3-B03-4-3)\n' >"$BATS_TEST_TMPDIR/nv"
  run sim "runenv.gpu_driver('$BATS_TEST_TMPDIR/nv')"
  assert_output '"550.54.14"'
  printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n' >"$BATS_TEST_TMPDIR/nv"
  run sim "runenv.gpu_driver('$BATS_TEST_TMPDIR/nv')"
  assert_output '"535.104.05"'
  mkdir -p "$BATS_TEST_TMPDIR/site/torch"
  printf "__version__ = '2.14.0+cu128'\ncuda: Optional[str] = '12.8'\n" >"$BATS_TEST_TMPDIR/site/torch/version.py"
  : >"$BATS_TEST_TMPDIR/site/torch/__init__.py"
  run env PYTHONPATH="$BATS_TEST_TMPDIR/site:$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'from mvp.worker import runenv; print(runenv.torch_cuda())'
  assert_output "12.8"
  run sim '[runenv.packages()[k] for k in ("count", "sha256", "list")]'
  jq -e '.[0] > 50 and .[0] == (.[2] | length) and .[2] == (.[2] | sort) and (.[2] | map(select(startswith("ray=="))) | length) == 1
         and (.[1] | test("^[0-9a-f]{64}$"))' <<<"$output"
}

@test "fingerprint: logs/env/ is made as the job directory's own directories are, nothing for others, by the driver's and a node's writer alike" {
  local job
  for job in driver node; do
    mkdir -m 750 "$BATS_TEST_TMPDIR/$job"
    mvp_eval JOB "$BATS_TEST_TMPDIR/$job" 'from mvp.worker import runenv; from mvp.worker.jobdir import JobDir' \
      "runenv.write_driver(JobDir(JOB)) if JOB.name == 'driver' else runenv.write_node(JobDir(JOB), '10.0.0.9')" >/dev/null
    run stat -c %a "$BATS_TEST_TMPDIR/$job/logs/env"
    assert_output 750
    run find "$BATS_TEST_TMPDIR/$job/logs" -perm /o=r
    assert_output ""
  done
}
