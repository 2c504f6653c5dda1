#!/usr/bin/env bats
# House rules every script keeps: usage on --help, ShellCheck clean, no eval,
# runs from any directory under cron's bare environment, bad input refused.

setup() {
  load ../test_helper/common
}

@test "scripts: every numbered script prints its usage on --help and exits 0" {
  local s
  for s in "$MVP_REPO"/scripts/[0-9][0-9]_*.sh; do
    run "$s" --help
    assert_success
    assert_output --regexp "Usage: ([A-Z_]+=[^ ]+ )?scripts/$(basename "$s")"
  done
}

@test "scripts: ShellCheck finds nothing in scripts, libraries, stubs, CI and bench" {
  cd "$MVP_REPO"
  run shellcheck -x scripts/*.sh scripts/lib/*.sh tests/test_helper/stubs/* tests/test_helper/common.bash .ci/run tests/run bench/*.sh \
    tests/slurm/local_slurm.sh tests/test_helper/compose_engine.bash tests/compose/*.sh \
    tests/test_helper/ssh_nodes.bash tests/test_helper/ssh_node_init.sh
  assert_success
  assert_output ""
}

@test "scripts: no eval anywhere: arguments live in arrays" {
  run grep -rnE '(^|[^[:alnum:]_])eval[[:space:]]' "$MVP_REPO/scripts" "$MVP_REPO/helpers" "$MVP_REPO/bench" "$MVP_REPO/.ci"
  assert_failure
}

@test "scripts: 50_status.sh runs from / under cron's env -i with a bare PATH, and says the cluster is down" {
  mvp_isolate "$BATS_TEST_TMPDIR"
  cd /
  # An address no cluster of the tests uses: this test needs none up.
  run --separate-stderr env -i HOME="$HOME" PATH=/usr/bin:/bin MVP_CONFIG="$MVP_CONFIG" SHARED_ROOT="$SHARED_ROOT" \
    MVP_HEAD_IP=127.0.11.2 MVP_DASHBOARD_PORT=18265 "$MVP_REPO/scripts/50_status.sh" --json
  assert_failure 1
  jq -e '.cluster.up == false and .cluster.ok == false and (.jobs | length) == 0' <<<"$output"
}

@test "scripts: a SHARED_ROOT that does not exist is reported, not created" {
  mvp_isolate "$BATS_TEST_TMPDIR"
  export SHARED_ROOT=$BATS_TEST_TMPDIR/not-mounted
  run "$MVP_REPO/scripts/00_prereq_check.sh"
  assert_failure
  assert_output --partial "PROBLEM: shared root $SHARED_ROOT does not exist; mount the NFS share there or set SHARED_ROOT"
  [[ ! -e $SHARED_ROOT ]]
}

@test "scripts: an unknown argument is one line naming it" {
  run "$MVP_REPO/scripts/50_status.sh" --jsonn
  assert_failure
  assert_output "ERROR: unknown argument '--jsonn'; see --help"
}
