#!/usr/bin/env bats
# The nightly's suite file (MVP_NIGHTLY_SUITE, default config/nightly.yaml;
# helpers/mvp/nightly/suite.py): the default suite is the four jobs of docs/spec.md, point 12,
# planned exactly as 60 planned them before the file existed; a team's own
# suite (a JobSpec, a verl command line) shows in 60's --dry-run; every rule
# of the file refuses a planted bad one with one ERROR line naming the file
# and the entry, before anything is written. No cluster: --dry-run only.

setup() {
  load ../test_helper/common
  mvp_isolate "$BATS_TEST_TMPDIR"
  export MVP_NIGHTLY_RESUME=ppo2 MVP_NIGHTLY_OVERRIDES=""
  SUITE=$BATS_TEST_TMPDIR/suite.yaml
  mkdir -p "$BATS_TEST_TMPDIR/specs"
  # A team's own JobSpec: the runbook's GRPO template under another name.
  cp "$MVP_REPO/templates/jobspecs/grpo.yaml" "$BATS_TEST_TMPDIR/specs/team_grpo.yaml"
}

# plan [ARGS...]: 60's --dry-run with MVP_NIGHTLY_SUITE=$SUITE when that file exists.
plan() {
  if [[ -f $SUITE ]]; then
    MVP_NIGHTLY_SUITE=$SUITE run --separate-stderr "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run "$@"
  else
    run --separate-stderr "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run "$@"
  fi
}

# refused ENTRY_TEXT...: the planted file is refused: exit 1, exactly one
# ERROR line (saved in ERR), naming the file; nothing under SHARED_ROOT.
refused() {
  local before
  before=$(find "$SHARED_ROOT" -printf '%p %T@\n' | sort)
  plan
  assert_failure 1
  assert_equal "$(grep -c '^ERROR:' <<<"$stderr")" 1
  ERR=$(grep '^ERROR:' <<<"$stderr")
  [[ $ERR == *"$SUITE"* ]] || { echo "the ERROR line does not name the file: $ERR"; return 1; }
  refute_output --partial "plan of"
  [[ $(find "$SHARED_ROOT" -printf '%p %T@\n' | sort) == "$before" ]]
}

@test "the default suite (config/nightly.yaml) plans the spec's four jobs exactly as 60 planned them before the suite file" {
  T=$MVP_JOB_TIMEOUT
  plan
  assert_success
  mapfile -t planned < <(grep '^  then [a-z0-9_]*:' <<<"$output")
  assert_equal "${#planned[@]}" 4
  assert_equal "${planned[0]}" "  then ppo1: scripts/40_submit_ppo_epoch1.sh --wait (at most ${T}s from its submission)"
  assert_equal "${planned[1]}" "  then ppo2: scripts/40_submit_ppo_epoch1.sh --wait --retry 1, its trainer SIGKILLed after a step drawn at random from ppo1's (resume fidelity)"
  assert_equal "${planned[2]}" "  then grpo: scripts/41_submit_grpo_epoch1.sh --wait (at most ${T}s from its submission)"
  assert_equal "${planned[3]}" "  then sft: scripts/42_submit_sft_minimal.sh --wait (at most ${T}s from its submission)"
  # --only in its own order, ppo = ppo1,ppo2; grpo's resume run after grpo; the night's overrides by name.
  MVP_NIGHTLY_RESUME=grpo MVP_NIGHTLY_OVERRIDES="sft:a=1 grpo:b=2" plan --only sft,grpo
  assert_success
  mapfile -t planned < <(grep '^  then [a-z0-9_]*:' <<<"$output")
  assert_equal "${planned[*]}" "  then sft: scripts/42_submit_sft_minimal.sh --wait --override a=1 (at most ${T}s from its submission)   then grpo: scripts/41_submit_grpo_epoch1.sh --wait --override b=2 (at most ${T}s from its submission)   then grpo_resumed: scripts/41_submit_grpo_epoch1.sh --wait --retry 1 --override b=2, its trainer SIGKILLed after a step drawn at random from grpo's (resume fidelity)"
  plan --only ppo1
  assert_success
  assert_equal "$(grep -c '^  then [a-z0-9_]*:' <<<"$output")" 1
  [[ $stderr == *"resume fidelity (MVP_NIGHTLY_RESUME=ppo2: ppo2 is not among tonight's jobs)"* ]]
}

@test "the learning probe (profiles: [cpu]) runs on CPU nights only: the default suite plans it fifth on MVP_TRAINER_PROFILE=cpu, not on a GPU night, where --only learn says why; a bad profiles: is refused" {
  T=$MVP_JOB_TIMEOUT
  MVP_TRAINER_PROFILE=cpu plan
  assert_success
  mapfile -t planned < <(grep '^  then [a-z0-9_]*:' <<<"$output")
  assert_equal "${#planned[@]}" 5
  assert_equal "${planned[4]}" "  then learn: scripts/43_submit_jobspec.sh $MVP_REPO/templates/jobspecs/learning_probe.yaml --wait --override actor_rollout_ref.actor.optim.lr=3e-2 --override trainer.total_training_steps=10 (at most ${T}s from its submission)"
  assert_line --partial "the runbook's reward functions (templates/rewards/) copied to user/code/"
  # A GPU night: the four jobs; the probe's name is known (its overrides are taken) but not run.
  MVP_NIGHTLY_OVERRIDES="learn:a=1" plan
  assert_success
  assert_equal "$(grep '^  then [a-z0-9_]*:' <<<"$output" | cut -d: -f1 | paste -sd' ')" "  then ppo1   then ppo2   then grpo   then sft"
  plan --only learn
  assert_failure 1
  assert_equal "$(grep '^ERROR:' <<<"$stderr")" "ERROR: --only: 'learn' runs on the trainer profile cpu only (its profiles: in $MVP_REPO/config/nightly.yaml); use ppo1, ppo2, grpo, sft (ppo = ppo1, ppo2)"
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    profiles: [tpu]\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[0] (a): profiles: 'tpu' is not a trainer profile (MVP_TRAINER_PROFILE); use gpu, cpu, gpu-smoke"
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    profiles: cpu\n' >"$SUITE"
  refused
  [[ $ERR == *"jobs[0] (a): profiles must be a non-empty list of trainer profiles: gpu, cpu, gpu-smoke" ]]
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    profiles: [cpu]\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: no job runs on the trainer profile gpu (each names other profiles:); give one job without profiles:, or one that names it"
}

@test "a team's two-job suite, a JobSpec and a verl command line, shows in --dry-run with its overrides, retries and checks; the quoting of a value with spaces survives" {
  cat >"$SUITE" <<EOF
jobs:
  - name: team_grpo
    spec: $BATS_TEST_TMPDIR/specs/team_grpo.yaml
    overrides: [trainer.total_epochs=2]
    retries: 2
  - name: my_cmd
    command: python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "trainer.experiment_name=my run"
    checks: [succeeded_in_time, metrics_parsed]
EOF
  MVP_NIGHTLY_RESUME="" MVP_NIGHTLY_OVERRIDES="my_cmd:data.train_batch_size=8" plan
  assert_success
  mapfile -t planned < <(grep '^  then [a-z0-9_]*:' <<<"$output")
  assert_equal "${#planned[@]}" 2
  assert_equal "${planned[0]}" "  then team_grpo: scripts/43_submit_jobspec.sh $BATS_TEST_TMPDIR/specs/team_grpo.yaml --wait --retry 2 --override trainer.total_epochs=2 (at most ${MVP_JOB_TIMEOUT}s from its submission)"
  assert_equal "${planned[1]}" "  then my_cmd: scripts/43_submit_jobspec.sh --wait --override data.train_batch_size=8 -- python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo trainer.experiment_name=my\\ run (at most ${MVP_JOB_TIMEOUT}s from its submission; judged on succeeded_in_time, metrics_parsed only)"
  # The night's --only and MVP_NIGHTLY_RESUME take the suite's names; the command job resumes as an extra run.
  MVP_NIGHTLY_RESUME=my_cmd plan --only my_cmd
  assert_success
  assert_line --partial "  then my_cmd_resumed: scripts/43_submit_jobspec.sh --wait --retry 1 -- python3 -m verl.trainer.main_ppo"
  plan --only ppo1
  assert_failure 1
  assert_equal "$(grep '^ERROR:' <<<"$stderr")" "ERROR: --only: 'ppo1' is not a nightly job of $SUITE; use team_grpo, my_cmd"
  MVP_NIGHTLY_RESUME=ppo2 plan
  assert_failure 1
  assert_equal "$(grep '^ERROR:' <<<"$stderr")" "ERROR: MVP_NIGHTLY_RESUME='ppo2' is not team_grpo, my_cmd or empty (no resume check; the jobs of $SUITE)"
  MVP_NIGHTLY_RESUME="" MVP_NIGHTLY_OVERRIDES="sft:a=1" plan
  assert_failure 1
  assert_equal "$(grep '^ERROR:' <<<"$stderr")" "ERROR: MVP_NIGHTLY_OVERRIDES: 'sft:a=1' is not JOB:KEY=VALUE with JOB one of team_grpo, my_cmd"
}

@test "the suite helper's plan carries a command's words exactly, each as one value (a space, a quote, a \$)" {
  cat >"$SUITE" <<'EOF'
jobs:
  - name: quoted
    command: [python3, -m, verl.trainer.main_ppo, "trainer.experiment_name=a b's $HOME", "data.x=[1, 2]"]
EOF
  MVP_NIGHTLY_SUITE=$SUITE MVP_NIGHTLY_RESUME="" run "$MVP_REPO/.venv/bin/python" - <<'EOF'
import os, subprocess, sys
sys.path.insert(0, os.environ["MVP_REPO"] + "/helpers")
from mvp.core import settings
env = {n: os.environ.get(n, "") for n, _ in settings.fields().values()} | dict(os.environ)
out = subprocess.run([sys.executable, "-m", "mvp", "nightly-suite"], env=env | {"PYTHONPATH": os.environ["MVP_REPO"] + "/helpers"},
                     capture_output=True, text=True, check=True).stdout
print("|".join(l.partition("=")[2] for l in out.splitlines() if l.startswith("job_quoted_arg_")))
EOF
  assert_success
  assert_output "--|python3|-m|verl.trainer.main_ppo|trainer.experiment_name=a b's \$HOME|data.x=[1, 2]"
}

@test "the suite helper answers the resumed job's checkpoint-limit key from the workload table (60 gives it =1): PPO's actor key, SFT's own, none without a resume" {
  run env MVP_NIGHTLY_SUITE=config/nightly.yaml MVP_TRAINER_PROFILE=gpu "$MVP_REPO/.venv/bin/python" - <<'EOF'
import os, subprocess, sys
sys.path.insert(0, os.environ["MVP_REPO"] + "/helpers")
from mvp.core import settings
env = {n: os.environ.get(n, "") for n, _ in settings.fields().values()} | dict(os.environ)
for resume in ("ppo2", "sft", ""):
    out = subprocess.run([sys.executable, "-m", "mvp", "nightly-suite"],
                         env=env | {"PYTHONPATH": os.environ["MVP_REPO"] + "/helpers", "MVP_NIGHTLY_RESUME": resume},
                         capture_output=True, text=True, check=True).stdout
    print(resume or "-", [l for l in out.splitlines() if l.startswith("resume_ckpt_keep_key=")])
EOF
  assert_success
  assert_output "ppo2 ['resume_ckpt_keep_key=trainer.max_actor_ckpt_to_keep']
sft ['resume_ckpt_keep_key=trainer.max_ckpt_to_keep']
- ['resume_ckpt_keep_key=']"
}

@test "suite rule: a missing file, a file that is not YAML, or one without a jobs: list is refused" {
  MVP_NIGHTLY_SUITE=$BATS_TEST_TMPDIR/none.yaml run --separate-stderr "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run
  assert_failure 1
  assert_equal "$(grep '^ERROR:' <<<"$stderr")" "ERROR: MVP_NIGHTLY_SUITE=$BATS_TEST_TMPDIR/none.yaml: cannot read it (No such file or directory); point MVP_NIGHTLY_SUITE at a suite file (config/nightly.yaml is the default)"
  printf 'jobs: [\n  - name: a\n' >"$SUITE"
  refused
  [[ $ERR == *"is not YAML"* ]]
  printf 'job:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n' >"$SUITE"
  refused
  [[ $ERR == *"no \`jobs:\` list"* ]]
  printf 'jobs: []\n' >"$SUITE"
  refused
  [[ $ERR == *"no \`jobs:\` list"* ]]
}

@test "suite rule: a name is [a-z0-9_]+, not ending in _resumed, and unique" {
  printf 'jobs:\n  - name: Big-Job\n    spec: templates/jobspecs/ppo.yaml\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[0]: name 'Big-Job' is not a job name: give [a-z0-9_]+, not ending in _resumed (the resume-fidelity run's suffix)"
  printf 'jobs:\n  - name: ppo_resumed\n    spec: templates/jobspecs/ppo.yaml\n' >"$SUITE"
  refused
  [[ $ERR == *"jobs[0]: name 'ppo_resumed' is not a job name"* ]]
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n  - name: a\n    spec: templates/jobspecs/sft.yaml\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[1]: the name 'a' is taken by an earlier job; give each job its own name"
}

@test "suite rule: exactly one of spec or command; no unknown field" {
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    command: python3 -m verl.trainer.main_ppo\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[0] (a): give exactly one of spec (a JobSpec) or command (a verl command line)"
  printf 'jobs:\n  - name: a\n    overrides: [x=1]\n' >"$SUITE"
  refused
  [[ $ERR == *"jobs[0] (a): give exactly one of spec"* ]]
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    retry: 1\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[0] (a): unknown field 'retry'; an entry has name, spec, command, overrides, checks, retries, profiles, rises"
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    rises: yes please\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[0] (a): rises must be true or false (true: the job's score must rise, check \`signal\`)"
  printf 'jobs:\n  - just a string\n' >"$SUITE"
  refused
  [[ $ERR == *"jobs[0]: an entry is a mapping"* ]]
}

@test "suite rule: a spec is an existing JobSpec; a command is a verl command line" {
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/nope.yaml\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[0] (a): spec templates/jobspecs/nope.yaml does not exist ($MVP_REPO/templates/jobspecs/nope.yaml); give a JobSpec's path, relative to the repo or absolute"
  printf 'jobs:\n  - name: a\n    spec: config/settings.contract\n' >"$SUITE"
  refused
  [[ $ERR == *"jobs[0] (a): spec config/settings.contract"* ]]
  printf 'jobs:\n  - name: a\n    command: bash train.sh\n' >"$SUITE"
  refused
  [[ $ERR == *"jobs[0] (a): command: 'bash train.sh' does not start a verl command line"* ]]
  printf 'jobs:\n  - name: a\n    command: python3 -m verl.trainer.main_ppo trainer.nnodes=3\n' >"$SUITE"
  refused
  [[ $ERR == *"jobs[0] (a): command: trainer.nnodes is the runbook's to set"* ]]
}

@test "suite rule: overrides are KEY=VALUE strings, checks the judge's, retries a whole number >= 0" {
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    overrides: [trainer.total_epochs]\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[0] (a): overrides must be a list of KEY=VALUE strings, e.g. [trainer.total_epochs=2]"
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    checks: [succeeded]\n' >"$SUITE"
  refused
  [[ $ERR == *"jobs[0] (a): checks: 'succeeded' is not a check of the judge; use submitted_from_head,"* ]]
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    retries: -1\n' >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[0] (a): retries must be a whole number >= 0, e.g. retries: 1"
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    retries: "2"\n' >"$SUITE"
  refused
}

@test "one owner: the suite refuses retries: 21 in the JobSpec's own words (jobspec.check_retries), and a suite's JobSpec with a YAML alias as 40-44 refuse it (jobspec.load_yaml)" {
  printf 'jobs:\n  - name: a\n    spec: templates/jobspecs/ppo.yaml\n    retries: 21\n' >"$SUITE"
  refused
  local rule
  rule=$(printf 'workload: grpo\nmodel: m\ndataset: {train: t.parquet}\nretries: 21\n' | PYTHONPATH=$MVP_REPO/helpers \
    "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.jobs.planning import jobspec
from mvp.worker.errors import MvpError
try:
    jobspec.parse_jobspec(sys.stdin.read(), "spec.yaml")
except MvpError as e:
    print(e)')
  assert_equal "${ERR#"ERROR: $SUITE: jobs[0] (a): retries"}" "${rule#spec.yaml.retries}"
  [[ $rule == "spec.yaml.retries: 21 is not a number of resumptions from 0 to 20;"* ]]
  printf 'workload: ppo\nmodel: &m m\nshared_root: *m\n' >"$BATS_TEST_TMPDIR/specs/alias.yaml"
  printf 'jobs:\n  - name: a\n    spec: %s\n' "$BATS_TEST_TMPDIR/specs/alias.yaml" >"$SUITE"
  refused
  assert_equal "$ERR" "ERROR: $SUITE: jobs[0] (a): spec $BATS_TEST_TMPDIR/specs/alias.yaml: line 3 uses a YAML alias (*m); write the value out instead (aliases are not accepted)"
}

@test "the suite's check names are the judge's, and the judge counts only a job's listed checks (submitted always)" {
  run "$MVP_REPO/.venv/bin/python" - <<'EOF'
import os, re, sys
sys.path.insert(0, os.environ["MVP_REPO"] + "/helpers")
from pathlib import Path
from mvp.nightly import suite, main
src = "".join((Path(os.environ["MVP_REPO"]) / "helpers/mvp" / f).read_text()
              for f in ("nightly/judge.py", "nightly/history.py", "nightly/resume_fidelity.py", "jobs/after_sending/resumed_check.py"))
named = set(re.findall(r'_check\("([a-z_]+)"', src)) | set(re.findall(r'"name": "([a-z_]+)"', src)) \
    | set(re.findall(r'^NAME = "([a-z_]+)"', src, re.M))
print(sorted(set(suite.CHECKS) ^ (named - {"submitted"})))
jobs = [{"name": n, "checks": [{"name": c} for c in ("submitted", "metrics_parsed", "regression")]}
        for n in ("a", "a_resumed", "b")]
main.only_checks(jobs, {"a": ["regression"]})
print([[c["name"] for c in j["checks"]] for j in jobs])
EOF
  assert_success
  assert_line --index 0 "[]"
  assert_line --index 1 "[['submitted', 'regression'], ['submitted', 'regression'], ['submitted', 'metrics_parsed', 'regression']]"
}

@test "a host python without PyYAML (compose, ssh: the system's python3) is one ERROR line saying how to get it, no traceback" {
  MVP_NIGHTLY_SUITE=config/nightly.yaml MVP_NIGHTLY_RESUME=ppo2 MVP_NIGHTLY_OVERRIDES="" MVP_TRAINER_PROFILE=gpu \
    run --separate-stderr "$MVP_REPO/.venv/bin/python" -c 'import sys
sys.modules["yaml"] = None  # import yaml raises ImportError, as where it is not installed
sys.path.insert(0, sys.argv[1] + "/helpers")
from mvp.__main__ import main
sys.exit(main(["nightly-suite"]))' "$MVP_REPO"
  assert_failure 1
  assert_equal "$output" ""
  assert_equal "$stderr" "ERROR: $MVP_REPO/.venv/bin/python has no PyYAML, which reading the nightly's suite file needs; install it for this host's python3 (apt-get install python3-yaml, or pip install pyyaml)"
}

@test "--only: a job's own name picks that job alone, a name that is no job's picks the jobs it is followed by a number in (grpo beside grpo2: grpo alone; ppo: ppo1, ppo2)" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c '
from pathlib import Path
from types import SimpleNamespace as S
from mvp.nightly import suite
jobs = [S(name=n) for n in ("grpo", "grpo2", "ppo1", "ppo2")]
for only in ("grpo", "grpo2", "ppo", "ppo2,grpo"):
    print(only, [j.name for j in suite.select(jobs, only, Path("suite.yaml"))])'
  assert_success
  assert_output "grpo ['grpo']
grpo2 ['grpo2']
ppo ['ppo1', 'ppo2']
ppo2,grpo ['ppo2', 'grpo']"
}
