#!/usr/bin/env bats
# The helper's commands (helpers/mvp/__main__.py): the steps of `nightly` and
# `bisect` are subcommands, each with only its own flags, and take the words
# 60 and 61 give them; each command declares where it runs, and
# helpers/mvp/places.txt, the table scripts/lib/helper.sh reads, says the same
# (tests/test_helper/helper_places.py).

setup() {
  load ../test_helper/common
  export SHARED_ROOT=$BATS_TEST_TMPDIR/shared
  mkdir -p "$SHARED_ROOT/regressions/nightly-20261127T000000Z"
  PLACES=(python3 "$MVP_REPO/tests/test_helper/helper_places.py")
}

# helper WORDS...: python -m mvp WORDS, stdout and stderr apart; COLUMNS=200
# keeps argparse's usage on one line (it wraps at the terminal's width).
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

@test "helper places: every command declares its place beside its add_parser, and helpers/mvp/places.txt is their table" {
  run "${PLACES[@]}" "$MVP_REPO" --check
  assert_output ""
  assert_success
}

@test "helper places: a command that declares no place and a table that says otherwise fail the check, each named; the table is not written while one declares none" {
  local tree=$BATS_TEST_TMPDIR/tree
  mkdir -p "$tree"
  cp -r "$MVP_REPO/helpers" "$tree/"
  sed -i 's/("jobs.after_sending.resumed_check", "main"), place=HEAD)/("jobs.after_sending.resumed_check", "main"))/' "$tree/helpers/mvp/__main__.py"
  sed -i 's/^status host$/status head/' "$tree/helpers/mvp/places.txt"
  echo "gone host" >>"$tree/helpers/mvp/places.txt"
  run "${PLACES[@]}" "$tree" --check
  assert_failure 1
  assert_output "helpers/mvp/__main__.py: the command resumed declares no place (set_defaults place=HOST, HEAD or DATA)
helpers/mvp/places.txt: gone host, which is no command of helpers/mvp/__main__.py
helpers/mvp/places.txt: status head; helpers/mvp/__main__.py declares host (make helpers/mvp/places)"
  cp "$tree/helpers/mvp/places.txt" "$BATS_TEST_TMPDIR/before.txt"
  run --separate-stderr "${PLACES[@]}" "$tree" --write
  assert_failure 1
  assert_equal "$stderr" "helpers/mvp/__main__.py: the command resumed declares no place (set_defaults place=HOST, HEAD or DATA)"
  cmp "$tree/helpers/mvp/places.txt" "$BATS_TEST_TMPDIR/before.txt"
  # Declared again, make helpers/mvp/places's writing makes the table whole.
  cp "$MVP_REPO/helpers/mvp/__main__.py" "$tree/helpers/mvp/__main__.py"
  "${PLACES[@]}" "$tree" --write
  run "${PLACES[@]}" "$tree" --check
  assert_success
  cmp "$tree/helpers/mvp/places.txt" "$MVP_REPO/helpers/mvp/places.txt"
}

@test "helper places: every command the scripts hand to mvp::helper::run has its row in the table" {
  local command used=() missing=()
  mapfile -t used < <(grep -rhE '(mvp::helper::run |local -a args=\()[a-z]' "$MVP_REPO/scripts" | grep -vE '^\s*#' |
    grep -oE '(mvp::helper::run |local -a args=\()[a-z][a-z-]*' | sed -E 's/.*[ (]//' | sort -u)
  ((${#used[@]} > 5))
  for command in "${used[@]}"; do
    grep -qx "$command [a-z]*" "$MVP_REPO/helpers/mvp/places.txt" || missing+=("$command")
  done
  assert_equal "${missing[*]}" ""
}

@test "mvp::helper::place: host and head as the table says, data on this host only when the nodes see its files" {
  run bash -c 'source "$1/scripts/lib/common.sh"
    for MVP_HOST_SEES_NODE_FILES in 0 1; do
      for c in submit status nightly prepare snapshot bisect detector; do printf "%s " "$(mvp::helper::place "$c")"; done
      echo
    done
    mvp::helper::place nightly where; echo "var=$where"' _ "$MVP_REPO"
  assert_success
  assert_output "head host head head head host head 
head host host host host host head 
var=host"
}

@test "mvp::helper::run: a command the table does not name is one ERROR line and runs nothing, on neither side" {
  run --separate-stderr bash -c 'source "$1/scripts/lib/common.sh"
    mvp::rt::exec() { echo "ran on the head" >&2; }
    MVP_HOST_PYTHON=/bin/echo MVP_HEAD_NODE=head
    mvp::helper::run planted --flag
    echo "not reached"' _ "$MVP_REPO"
  assert_failure 1
  assert_output ""
  assert_equal "$stderr" "ERROR: helpers/mvp/places.txt gives the helper's command 'planted' no place; declare it beside its add_parser in helpers/mvp/__main__.py, then make helpers/mvp/places"
}
