#!/usr/bin/env bats
# The helper's commands (helpers/mvp/__main__.py): the steps of `nightly` and
# `bisect` are subcommands, each with only its own flags, and take the words
# 60 and 61 give them.

setup() {
  load ../test_helper/common
  export SHARED_ROOT=$BATS_TEST_TMPDIR/shared
  mkdir -p "$SHARED_ROOT/regressions/nightly-20261127T000000Z"
}

# helper WORDS...: python -m mvp WORDS, stdout and stderr apart; a usage line
# as wide as it is (argparse wraps at the terminal's width).
helper() {
  run --separate-stderr env COLUMNS=200 PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -m mvp "$@"
}

@test "helper commands: each step of nightly and bisect takes the words 60 and 61 give it" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" - <<'EOF'
from mvp.__main__ import parser
R = ["--run-dir", "regressions/nightly-20261127T000000Z"]
calls = [
    ["nightly", "inputs", *R, "--phase", "before"],
    ["nightly", "control", "--role", "plan", *R],
    ["nightly", "control", "--role", "candidate", *R, "--code-id", "c1", "--submission-id", "s1"],
    ["nightly", "stop-step", *R, "--reference", "s1"],
    ["nightly", "retention", *R],
    ["nightly", "judge", *R, "--started", "t", "--code-id", "c1", "--failed-step", "", "--head-host", "h",
     "--job", "grpo=s1", "--checks", "grpo=submitted,regression", "--rises", "learn", "--resume", "ppo2=s1:3"],
    ["bisect", "start", "--repo", "r", "--good", "g", "--bad", "b", "--job", "grpo", "--spec", "x.yaml",
     "--steps", "2", "--dry-run"],
    ["bisect", "next", "--dir", "d"],
    ["bisect", "record", "--dir", "d", "--commit", "c", "--code-id", "c1", "--submission-id", "s1", "--submit-rc", ""],
    ["bisect", "finish", "--dir", "d"],
    ["bisect", "night", *R],
    ["bisect", "told", *R, "--dir", "d"],
]
for argv in calls:
    args = parser().parse_args(argv)
    print(args.command, args.step, callable(args.func))
EOF
  assert_success
  assert_output "nightly inputs True
nightly control True
nightly control True
nightly stop-step True
nightly retention True
nightly judge True
bisect start True
bisect next True
bisect record True
bisect finish True
bisect night True
bisect told True"
}

@test "helper commands: a flag of another step is refused by the step's parser (exit 2, its usage line and one error), nothing run" {
  helper nightly inputs --run-dir regressions/nightly-20261127T000000Z --phase before --code-id c1
  assert_failure 2
  assert_output ""
  assert_equal "$stderr" "usage: python -m mvp nightly inputs [-h] --run-dir RUN_DIR [--phase {before,after}]
python -m mvp nightly inputs: error: unrecognized arguments: --code-id c1"
  [[ -z $(find "$SHARED_ROOT" -type f) ]]

  helper bisect next --dir "$SHARED_ROOT/regressions/bisect-x" --repo "$BATS_TEST_TMPDIR"
  assert_failure 2
  assert_output ""
  assert_equal "$stderr" "usage: python -m mvp bisect next [-h] [--dir DIR]
python -m mvp bisect next: error: unrecognized arguments: --repo $BATS_TEST_TMPDIR"
}
