#!/usr/bin/env bats
# One owner per fact: each rule below is written in one place and every other
# place asks that owner. Each check runs on a tree given as its argument, so
# that a test can prove it fails on a copy with a second owner planted.

setup() {
  load ../test_helper/common
}

# copy_tree DEST: the parts of the repo the checks read.
copy_tree() {
  mkdir -p "$1/helpers"
  cp -r "$MVP_REPO/scripts" "$MVP_REPO/config" "$1/"
  cp -r "$MVP_REPO/helpers/mvp" "$1/helpers/"
}

# check_secret_rule ROOT: the secret-name rule's words (TOKEN|SECRET|...)
# appear under ROOT/scripts and ROOT/helpers only on redact.py's SECRET_NAME
# line; FILE:LINE of each other and exit 1 if any.
check_secret_rule() {
  local hits
  hits=$(grep -rnE --exclude-dir=__pycache__ 'TOKEN\|SECRET\|PASSWORD\|KEY' "$1/scripts" "$1/helpers" |
    grep -v '^[^:]*/helpers/mvp/redact.py:[0-9]*:SECRET_NAME = re.compile(r"') || return 0
  echo "$hits"
  return 1
}

@test "one owner: the secret-name rule is written only in helpers/mvp/redact.py (SECRET_NAME)" {
  run check_secret_rule "$MVP_REPO"
  assert_success
}

@test "one owner: a second copy of the secret-name rule in scripts/ fails the check with its file and line" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  echo '[[ $x =~ TOKEN|SECRET|PASSWORD|KEY ]]' >>"$BATS_TEST_TMPDIR/tree/scripts/lib/config.sh"
  run check_secret_rule "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --partial "/scripts/lib/config.sh:"
}

@test "one owner: config.sh's secret-name rule is redact.py's SECRET_NAME, read without a process" {
  local want
  want=$(PYTHONPATH="$MVP_REPO/helpers" python3 -c 'from mvp import redact; print(redact.SECRET_NAME.pattern)')
  run bash -c 'source "$MVP_REPO/scripts/lib/common.sh" && mvp::config::secret_name_rule && echo "$MVP_SECRET_NAME_RULE"'
  assert_success
  assert_output "$want"
}

# check_port_arithmetic ROOT: code (not comments) under ROOT/scripts that
# computes a Ray port from MVP_NODE_PORT_BASE or offsets a base by +N, outside
# the body of mvp::ray::pinned_port_words in scripts/lib/ray.sh; FILE:LINE
# each, exit 1 if any.
check_port_arithmetic() {
  local ray=$1/scripts/lib/ray.sh first last hits
  read -r first last < <(awk '/^mvp::ray::pinned_port_words\(\) \{$/ { f = NR } f && /^}$/ { print f, NR; exit }' "$ray")
  [[ -n $first ]] || { echo "$ray has no mvp::ray::pinned_port_words, the owner"; return 1; }
  hits=$(grep -rnE 'MVP_NODE_PORT_BASE *[-+*]|\(\(base *\+ *[0-9]+\)\)' "$1/scripts" | grep -vE '^[^:]*:[0-9]+: *#' |
    awk -F: -v ray="$ray" -v first="$first" -v last="$last" '!($1 == ray && $2 > first && $2 < last)') || true
  [[ -z $hits ]] && return 0
  echo "$hits"
  return 1
}

@test "one owner: the pinned-port arithmetic is only mvp::ray::pinned_port_words (ray.sh); the runtimes call it" {
  run check_port_arithmetic "$MVP_REPO"
  assert_success
}

@test "one owner: a second copy of the pinned-port arithmetic in a runtime fails the check with its file and line" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  echo 'x() { local base=$((MVP_NODE_PORT_BASE + 1000 * $1)); echo $((base + 1)); }' >>"$BATS_TEST_TMPDIR/tree/scripts/lib/runtime_ssh.sh"
  run check_port_arithmetic "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_line --partial "/scripts/lib/runtime_ssh.sh:"
}
