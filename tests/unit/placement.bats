#!/usr/bin/env bats
# Where a path points: callers name a place relative to the shared root and
# the helper resolves it on the side it runs on (host or head); the one
# host<->node mapping in bash is mvp::nodes::shared_name / path (scripts/lib/nodes.sh).

setup() {
  load ../test_helper/common
  export SHARED_ROOT=$BATS_TEST_TMPDIR/shared
  mkdir -p "$SHARED_ROOT/regressions/nightly-20261127T000000Z"
}

helper() {
  run --separate-stderr env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -m mvp "$@"
}

# check_mapping ROOT: no script under ROOT/scripts but nodes.sh strips the
# host's shared dir off a path, or trims the dir itself to strip it with
# later (the host<->node mapping); FILE:LINE of each.
check_mapping() {
  local hits
  hits=$(grep -rnE 'MVP_HOST_SHARED_DIR"?/?}|\$\{MVP_HOST_SHARED_DIR(%|#|/)' "$1/scripts" | grep -v '/scripts/lib/nodes.sh:') || return 0
  echo "$hits"
  return 1
}

@test "placement: the helper takes --run-dir relative to the shared root and resolves it under its own SHARED_ROOT" {
  helper bisect night --run-dir regressions/nightly-20261127T000000Z
  assert_success
  assert_output "skip=the night passed, or failed before its jobs ran"
}

@test "placement: an absolute or escaping --run-dir is one ERROR line saying how to name it, exit 1, nothing written" {
  local bad
  for bad in "$SHARED_ROOT/regressions/nightly-20261127T000000Z" ../elsewhere ""; do
    helper bisect night --run-dir "$bad"
    assert_failure 1
    assert_equal "$stderr" "ERROR: --run-dir '$bad': give it relative to the shared root, as regressions/<run id>"
  done
  [[ -z $(find "$SHARED_ROOT" -type f) ]]
}

@test "placement: mvp::nodes::shared_name and path map a host path to the helper's name and the nodes' path; one outside the shared root is refused" {
  # shellcheck source=/dev/null
  run bash -c 'source "$1/scripts/lib/common.sh"; MVP_HOST_SHARED_DIR=/host/shared SHARED_ROOT=/data/shared
    mvp::nodes::shared_name /host/shared/regressions/n1; mvp::nodes::path /host/shared/common/code/verl/.tmp-git-x
    mvp::nodes::shared_name /elsewhere/n1' _ "$MVP_REPO"
  assert_failure
  assert_line --index 0 regressions/n1
  assert_line --index 1 /data/shared/common/code/verl/.tmp-git-x
  assert_line --index 2 --partial "/elsewhere/n1 is not under the shared root /host/shared"
}

@test "placement: mvp::nodes::path --outside-as-is maps a path under the host's shared dir (the dir itself, a trailing / on it) like without it and keeps one outside as it is" {
  run bash -c 'source "$1/scripts/lib/common.sh"; SHARED_ROOT=/data/shared
    for MVP_HOST_SHARED_DIR in /host/shared /host/shared/; do
      for p in /host/shared/repo /host/shared /opt/repo /host/shared-not/repo; do mvp::nodes::path --outside-as-is "$p"; done
    done
    mvp::nodes::path --outside-as-is /host/shared/verl NODE_VERL; echo "var=$NODE_VERL"' _ "$MVP_REPO"
  assert_success
  assert_output "$(printf '%s\n' /data/shared/repo /data/shared /opt/repo /host/shared-not/repo /data/shared/repo /data/shared /opt/repo /host/shared-not/repo var=/data/shared/verl)"
}

@test "placement: only scripts/lib/nodes.sh maps host paths to the nodes' (no string surgery on MVP_HOST_SHARED_DIR elsewhere)" {
  run check_mapping "$MVP_REPO"
  assert_success
}

@test "placement: a script that strips the host's shared dir itself fails the mapping check with its file and line" {
  mkdir -p "$BATS_TEST_TMPDIR/tree"
  cp -r "$MVP_REPO/scripts" "$BATS_TEST_TMPDIR/tree/"
  # shellcheck disable=SC2016  # the planted line, as a script would write it
  echo 'X=$SHARED_ROOT/${RUN_DIR#"$MVP_HOST_SHARED_DIR"/}' >>"$BATS_TEST_TMPDIR/tree/scripts/60_nightly_regression.sh"
  run check_mapping "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --partial "/scripts/60_nightly_regression.sh:"
}

@test "placement: a runtime that trims the host's shared dir for a mapping of its own fails the mapping check with its file and line" {
  mkdir -p "$BATS_TEST_TMPDIR/tree"
  cp -r "$MVP_REPO/scripts" "$BATS_TEST_TMPDIR/tree/"
  # shellcheck disable=SC2016  # the planted line, as the ssh runtime's own copy of the mapping wrote it
  echo 'x() { local p=$1 host=${MVP_HOST_SHARED_DIR%/}; echo "${SHARED_ROOT%/}${p#"$host"}"; }' >>"$BATS_TEST_TMPDIR/tree/scripts/lib/runtime_ssh.sh"
  run check_mapping "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --regexp "/scripts/lib/runtime_ssh.sh:[0-9]+:x\(\) \{ local p"
}
