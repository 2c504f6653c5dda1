#!/usr/bin/env bats
# make gpu-smoke's refusals, which need no GPU: a host whose nvidia-smi lists
# no GPU is one ERROR line and nothing is done or written; bad flags and a
# directory that is not a bundle are one line each. (The smoke itself needs a
# GPU; the bundle's install is tests/integration/gpu_offline.bats.)

setup() {
  load ../test_helper/common
  mvp_use_stubs
  SMOKE=$MVP_REPO/scripts/libexec/gpu_smoke.sh
  BEFORE=$(ls -a "$MVP_REPO/.mvp" 2>/dev/null)
}

@test "gpu smoke: a host whose nvidia-smi lists no GPU is refused in one ERROR line, before anything is started or written" {
  MVP_STUB_GPUS=0 run --separate-stderr "$SMOKE"
  assert_failure 1
  assert_output ""
  [[ $stderr == "ERROR: no NVIDIA GPU here (nvidia-smi lists none); make gpu-smoke needs a host with one (make demo trains on CPU)" ]]
  [[ $(ls -a "$MVP_REPO/.mvp" 2>/dev/null) == "$BEFORE" ]]
  run grep -c . "$MVP_STUB_LOG"
  assert_output 1
  # make's own target says the same.
  MVP_STUB_GPUS=0 run make -s -C "$MVP_REPO" gpu-smoke
  assert_failure
  assert_line "ERROR: no NVIDIA GPU here (nvidia-smi lists none); make gpu-smoke needs a host with one (make demo trains on CPU)"
}

@test "gpu smoke: a bad --steps, or a --bundle that is not a bundle, is one ERROR line" {
  run --separate-stderr "$SMOKE" --steps 0
  assert_failure 1
  [[ $stderr == "ERROR: --steps '0' must be a whole number from 1 to 99" ]]
  mkdir "$BATS_TEST_TMPDIR/not-a-bundle"
  run --separate-stderr "$SMOKE" --install-only --bundle "$BATS_TEST_TMPDIR/not-a-bundle" --venv "$BATS_TEST_TMPDIR/venv"
  assert_failure 1
  [[ $stderr == "ERROR: $BATS_TEST_TMPDIR/not-a-bundle has no SHA256SUMS; it is not a bundle of make gpu-bundle (or not all of it was copied)" ]]
  [[ ! -e $BATS_TEST_TMPDIR/venv ]]
}

@test "gpu bundle: a bad --python or --xz is one ERROR line, nothing downloaded" {
  run --separate-stderr "$MVP_REPO/scripts/libexec/gpu_bundle.sh" --python 12 --wheel-cache "$BATS_TEST_TMPDIR/cache"
  assert_failure 1
  [[ $stderr == "ERROR: --python '12' is not a Python version such as 3.12" ]]
  run --separate-stderr "$MVP_REPO/scripts/libexec/gpu_bundle.sh" --xz fast --wheel-cache "$BATS_TEST_TMPDIR/cache"
  [[ $stderr == "ERROR: --xz 'fast' is not an xz preset (0-9, optionally with e)" ]]
  [[ ! -e $BATS_TEST_TMPDIR/cache ]]
}
