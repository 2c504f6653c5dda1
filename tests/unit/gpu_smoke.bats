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

@test "gpu bundle: a bad --python, --xz or --host-has is one ERROR line, nothing downloaded" {
  run --separate-stderr "$MVP_REPO/scripts/libexec/gpu_bundle.sh" --python 12 --wheel-cache "$BATS_TEST_TMPDIR/cache"
  assert_failure 1
  [[ $stderr == "ERROR: --python '12' is not a Python version such as 3.12" ]]
  run --separate-stderr "$MVP_REPO/scripts/libexec/gpu_bundle.sh" --xz fast --wheel-cache "$BATS_TEST_TMPDIR/cache"
  [[ $stderr == "ERROR: --xz 'fast' is not an xz preset (0-9, optionally with e)" ]]
  run --separate-stderr "$MVP_REPO/scripts/libexec/gpu_bundle.sh" --host-has 'numpy pandas' --wheel-cache "$BATS_TEST_TMPDIR/cache"
  [[ $stderr == "ERROR: --host-has 'numpy pandas' is not a comma list of distribution names, e.g. numpy,pandas,pyarrow" ]]
  [[ ! -e $BATS_TEST_TMPDIR/cache ]]
}

@test "gpu smoke's verdict: mean s/step over verl's timing_s/step, each step, and the peak of verl's max_memory_allocated/reserved_gb" {
  cat >"$BATS_TEST_TMPDIR/steps.json" <<'JSON'
[{"step": 1, "timing_s/step": 6.314, "actor/perf/max_memory_allocated_gb": 0.031, "actor/perf/max_memory_reserved_gb": 0.05, "critic/score/mean": 0.1},
 {"step": 2, "timing_s/step": 1.92, "actor/perf/max_memory_allocated_gb": 0.0294, "actor/perf/max_memory_reserved_gb": 0.062, "critic/score/mean": null}]
JSON
  run "$SMOKE" --report "$BATS_TEST_TMPDIR/steps.json"
  assert_success
  assert_output "GPU SMOKE PASS: 2 GRPO steps of mvp-tiny/qwen2 on (the GPU of that job): 4.12 s/step (steps: 6.31, 1.92 s), peak GPU memory 0.03 GiB allocated, 0.06 GiB reserved by torch; bring-up ? s, job ? s"
  echo '{}' >"$BATS_TEST_TMPDIR/bad.json"
  run --separate-stderr "$SMOKE" --report "$BATS_TEST_TMPDIR/bad.json"
  assert_failure 1
  [[ $stderr == "ERROR: --report $BATS_TEST_TMPDIR/bad.json: not the JSON of 51_logs.sh ID --steps --json (a list of steps)" ]]
}
