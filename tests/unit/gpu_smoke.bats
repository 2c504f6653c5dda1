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

@test "gpu bundle: no size is refused by default; --max-mib N (make's MAX_MIB=N) refuses above N naming HOST_HAS= and the leave-out list" {
  local bundle=$MVP_REPO/scripts/libexec/gpu_bundle.sh
  # shellcheck disable=SC2016 # $1 is the inner bash's
  run bash -c 'source "$1"; refuse_above $((900 * 1048576)) ""' _ "$bundle"
  assert_success
  assert_output ""
  # shellcheck disable=SC2016 # $1 is the inner bash's
  run bash -c 'source "$1"; refuse_above $((64 * 1048576)) 64' _ "$bundle"
  assert_success
  # shellcheck disable=SC2016 # $1 is the inner bash's
  run --separate-stderr bash -c 'source "$1"; refuse_above $((64 * 1048576 + 104858)) 64' _ "$bundle"
  assert_failure 1
  [[ $stderr == "ERROR: the bundle with the checkout is 64.1 MiB, more than --max-mib 64 (parts above); ways down: name what the GPU host already has (make gpu-bundle HOST_HAS=numpy,pandas,pyarrow) or leave more out in helpers/offline/leaves-out.txt" ]]
  run --separate-stderr "$bundle" --max-mib 0 --wheel-cache "$BATS_TEST_TMPDIR/cache"
  assert_failure 1
  [[ $stderr == "ERROR: --part-mib and --max-mib take whole MiB, e.g. 30 and 64" ]]
  [[ ! -e $BATS_TEST_TMPDIR/cache ]]
  # make passes MAX_MIB on, and passes no limit without it.
  run make -n -s -C "$MVP_REPO" gpu-bundle MAX_MIB=64 HOST_HAS=numpy
  assert_output "scripts/libexec/gpu_bundle.sh --python 3.12 --host-has numpy --max-mib 64"
  run make -n -s -C "$MVP_REPO" gpu-bundle
  assert_output --regexp '^scripts/libexec/gpu_bundle.sh --python 3.12 *$'
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

# A wheel named like pyarrow's, holding this venv's own libarrow_python (which
# names libarrow_substrait as DT_NEEDED, using none of its symbols) and the
# files PRUNE leaves out or must keep.
plant_pyarrow_wheel() {
  local dir=$1 src=$2
  "$MVP_REPO/.venv/bin/python" - "$dir" "$src" <<'PY'
import os, sys, zipfile
dir, src = sys.argv[1:]
files = {f"pyarrow/{n}": b"x" for n in (
    "libarrow_substrait.so.2600", "_substrait.cpython-311-x86_64-linux-gnu.so", "substrait.py",
    "_orc.cpython-311-x86_64-linux-gnu.so", "_dataset_orc.cpython-311-x86_64-linux-gnu.so", "orc.py",
    "_parquet_encryption.cpython-311-x86_64-linux-gnu.so", "libarrow_python_parquet_encryption.so.2600",
    "_hdfs.cpython-311-x86_64-linux-gnu.so", "_gcsfs.cpython-311-x86_64-linux-gnu.so",
    "_azurefs.cpython-311-x86_64-linux-gnu.so",
    # kept: what datasets and verl's RLHFDataset load
    "_parquet.cpython-311-x86_64-linux-gnu.so", "_dataset_parquet.cpython-311-x86_64-linux-gnu.so",
    "libarrow_dataset.so.2600", "libarrow_compute.so.2600", "parquet/core.py", "fs.py")}
files["pyarrow/libarrow_python.so.2600"] = open(os.path.join(src, "libarrow_python.so.2600"), "rb").read()
with zipfile.ZipFile(os.path.join(dir, "pyarrow-26.0.1-cp311-cp311-manylinux_2_28_x86_64.whl"), "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
    z.writestr("pyarrow-26.0.1.dist-info/RECORD", "".join(f"{n},,\n" for n in files))
PY
}

@test "gpu bundle repack: pyarrow's Substrait, ORC, Parquet encryption and HDFS/GCS/Azure go with their reasons, what datasets loads stays, and libarrow_python loads without libarrow_substrait (the unedited one does not)" {
  local py=$MVP_REPO/.venv/bin/python src lib
  src=$("$py" -c 'import os, pyarrow; print(os.path.dirname(pyarrow.__file__))')
  [[ -f $src/libarrow_python.so.2600 ]] || fail "no pyarrow 26 in .venv: run make setup"
  mkdir "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
  plant_pyarrow_wheel "$BATS_TEST_TMPDIR/in" "$src"
  run "$py" "$MVP_REPO/helpers/offline/repack_wheel.py" --no-strip "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR"/in/*.whl
  assert_success
  assert_line --regexp '^pruned	pyarrow-26\.0\.1-[^	]*	3 files	Substrait query plans'
  assert_line --regexp '^pruned	pyarrow-.*	3 files	the ORC file format'
  assert_line --regexp '^pruned	pyarrow-.*	2 files	Parquet Modular Encryption'
  assert_line --regexp '^pruned	pyarrow-.*	1 files	the HDFS filesystem'
  assert_line --regexp '^pruned	pyarrow-.*	1 files	the Google Cloud Storage filesystem'
  assert_line --regexp '^pruned	pyarrow-.*	1 files	the Azure Blob filesystem'
  run unzip -Z1 "$BATS_TEST_TMPDIR"/out/*.whl
  assert_success
  local kept
  for kept in _parquet.cpython-311-x86_64-linux-gnu.so _dataset_parquet.cpython-311-x86_64-linux-gnu.so \
    libarrow_dataset.so.2600 libarrow_compute.so.2600 parquet/core.py fs.py libarrow_python.so.2600; do
    assert_line "pyarrow/$kept"
  done
  refute_output --partial substrait.
  refute_output --partial orc
  refute_output --partial encryption
  # The loader, in a directory holding pyarrow's libraries but libarrow_substrait
  # (libarrow_python's RUNPATH is $ORIGIN): the repacked one loads, the original does not.
  lib=$BATS_TEST_TMPDIR/lib
  mkdir "$lib"
  for kept in "$src"/lib*.so.2600; do [[ $kept == *substrait* ]] || ln -s "$kept" "$lib/"; done
  rm "$lib/libarrow_python.so.2600"
  unzip -q -o "$BATS_TEST_TMPDIR"/out/*.whl pyarrow/libarrow_python.so.2600 -d "$BATS_TEST_TMPDIR/x"
  cp "$BATS_TEST_TMPDIR/x/pyarrow/libarrow_python.so.2600" "$lib/"
  run "$py" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1]); print("loaded")' "$lib/libarrow_python.so.2600"
  assert_success
  assert_output loaded
  cp "$src/libarrow_python.so.2600" "$lib/original.so"
  run "$py" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$lib/original.so"
  assert_failure
  assert_output --partial "libarrow_substrait.so.2600: cannot open shared object file"
}

@test "gpu bundle repack: numpy's _simd test module and Ray's jemalloc go with their reasons; numpy's core and Ray's raylet stay" {
  mkdir "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
  "$MVP_REPO/.venv/bin/python" - "$BATS_TEST_TMPDIR/in" <<'PY'
import os, sys, zipfile
for wheel, names in (("numpy-2.5.5-cp312-cp312-manylinux_2_28_x86_64.whl", (
        "numpy/_core/_simd.cpython-312-x86_64-linux-gnu.so", "numpy/_core/_multiarray_umath.cpython-312-x86_64-linux-gnu.so")),
        ("ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl", (
        "ray/core/libjemalloc.so", "ray/core/src/ray/raylet/raylet", "ray/_raylet.so"))):
    dist = "-".join(wheel.split("-")[:2])
    with zipfile.ZipFile(os.path.join(sys.argv[1], wheel), "w") as z:
        for name in names:
            z.writestr(name, b"x")
        z.writestr(f"{dist}.dist-info/RECORD", "".join(f"{n},,\n" for n in names))
PY
  run "$MVP_REPO/.venv/bin/python" "$MVP_REPO/helpers/offline/repack_wheel.py" --no-strip "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR"/in/*.whl
  assert_success
  assert_line --regexp "^pruned	numpy-2\.5\.5-[^	]*	1 files	numpy's SIMD test module"
  assert_line --regexp '^pruned	ray-2\.60\.0-[^	]*	1 files	jemalloc, which Ray preloads'
  run unzip -Z1 "$BATS_TEST_TMPDIR"/out/numpy-*.whl
  assert_line "numpy/_core/_multiarray_umath.cpython-312-x86_64-linux-gnu.so"
  refute_line "numpy/_core/_simd.cpython-312-x86_64-linux-gnu.so"
  run unzip -Z1 "$BATS_TEST_TMPDIR"/out/ray-*.whl
  assert_line "ray/core/src/ray/raylet/raylet"
  assert_line "ray/_raylet.so"
  refute_line "ray/core/libjemalloc.so"
}
