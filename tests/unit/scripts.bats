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
  run shellcheck -x scripts/*.sh scripts/lib/*.sh scripts/libexec/*.sh tests/test_helper/stubs/* tests/test_helper/common.bash .ci/run tests/run bench/*.sh \
    tests/slurm/local_slurm.sh tests/test_helper/compose_engine.bash tests/compose/*.sh \
    tests/test_helper/ssh_nodes.bash tests/test_helper/ssh_node_init.sh tests/setup/*.sh tests/test_helper/python_pip_stub.sh
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

@test "trainer venv: CI's rule (MVP_TORCH_CPU_ONLY=1): a CUDA package (nvidia-*, triton) in it fails the install with one line; nvidia-ml-py (NVML bindings, swanlab's) does not; the real venv has none" {
  run "$MVP_REPO/.venv/bin/python" "$MVP_REPO/helpers/trainer/no_cuda.py"
  assert_success
  mkdir -p "$BATS_TEST_TMPDIR/nvml/nvidia_ml_py-13.615.71.dist-info"
  printf 'Metadata-Version: 2.1\nName: nvidia-ml-py\nVersion: 13.615.71\n' \
    >"$BATS_TEST_TMPDIR/nvml/nvidia_ml_py-13.615.71.dist-info/METADATA"
  PYTHONPATH=$BATS_TEST_TMPDIR/nvml run "$MVP_REPO/.venv/bin/python" "$MVP_REPO/helpers/trainer/no_cuda.py"
  assert_success
  # An installed distribution is a dist-info directory on sys.path: one of CUDA's, made here.
  mkdir -p "$BATS_TEST_TMPDIR/site/nvidia_cublas_cu12-12.8.0.dist-info"
  printf 'Metadata-Version: 2.1\nName: nvidia-cublas-cu12\nVersion: 12.8.0\n' \
    >"$BATS_TEST_TMPDIR/site/nvidia_cublas_cu12-12.8.0.dist-info/METADATA"
  PYTHONPATH=$BATS_TEST_TMPDIR/site run "$MVP_REPO/.venv/bin/python" "$MVP_REPO/helpers/trainer/no_cuda.py"
  assert_failure
  assert_output --regexp "^ERROR: CUDA packages got into .* \(nvidia-cublas-cu12\), and MVP_TORCH_CPU_ONLY=1 \(CI's rule\) refuses them: put a place with torch's CPU build first in MVP_TORCH_SOURCES, remove .* and run make setup again$"
}

@test "trainer lock: every package is pinned with sha256 hashes; neither torch (12 installs it first) nor verl itself is in it" {
  local lock=$MVP_REPO/helpers/trainer/requirements.lock
  run grep -vcE '^(#.*|[A-Za-z0-9_.-]+==[^ ]+( ; [a-z_]+ == "[^"]+"( (and|or) [a-z_]+ == "[^"]+")*)?( --hash=sha256:[0-9a-f]{64})+)$' "$lock"
  assert_output 0
  run grep -E '^(torch|verl)==' "$lock"
  assert_output ""
}

@test "tests: one polling helper, mvp_wait_until (common.bash); no test file defines a wait_until of its own" {
  cd "$MVP_REPO"
  run grep -rnE '^[[:space:]]*(function[[:space:]]+)?[a-z_]*wait_until[[:space:]]*\(\)' tests --include='*.bats' --include='*.bash'
  assert_output "tests/test_helper/common.bash:$(grep -n '^mvp_wait_until()' tests/test_helper/common.bash | cut -d: -f1):mvp_wait_until() {"
}
