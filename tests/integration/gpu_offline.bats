#!/usr/bin/env bats
# The offline GPU bundle (make gpu-bundle) and the GPU smoke's install step,
# everything of them that needs no GPU: a bundle built for THIS machine's
# Python (--python 3.11; the GPU host's is 3.12, the same code with another
# tag) with small parts, so the split and the join are exercised; its
# checkout unpacked as a user would, and its install run into a clean venv
# that holds only torch (the CPU 2.13.0 wheel, and what it requires, linked
# from this checkout's .venv); then Ray (pruned, stripped)
# starts a real local cluster of its own, runs a task and a `ray job submit`
# job (the dashboard's job API, whose web UI the bundle leaves out), and verl,
# the hf rollout, the parquet data (through datasets and verl's own
# RLHFDataset, its filter and collate) and the tiny model load from what the
# bundle put there, with pyarrow's pruned libraries gone.
# The wheels are downloaded once into MVP_TEST_WHEEL_CACHE (default
# .mvp/cache/gpu-bundle/wheels-cp311) from the configured package index.

setup_file() {
  load ../test_helper/common
  export BUNDLE=$BATS_FILE_TMPDIR/bundle HOSTDIR=$BATS_FILE_TMPDIR/gpu-host
  local cache=${MVP_TEST_WHEEL_CACHE:-$MVP_REPO/.mvp/cache/gpu-bundle/wheels-cp311} start=$SECONDS
  # No --max-mib: the default builds whatever the size (xz -0 makes it large).
  "$MVP_REPO/scripts/libexec/gpu_bundle.sh" --python 3.11 --xz 0 --part-mib 8 \
    --out "$BUNDLE" --wheel-cache "$cache" >"$BATS_FILE_TMPDIR/bundle.out" 2>"$BATS_FILE_TMPDIR/bundle.log" ||
    { cat "$BATS_FILE_TMPDIR/bundle.log" >&3; return 1; }
  echo "# gpu bundle (cp311, xz -0): built in $((SECONDS - start)) s" >&3
  # The GPU host: the bundle's checkout, and a venv with nothing but torch.
  start=$SECONDS
  mkdir -p "$HOSTDIR/mvp"
  cat "$BUNDLE"/mvp-checkout.tar.xz* | tar -xJ -C "$HOSTDIR/mvp"
  python3 -m venv "$HOSTDIR/venv"
  link_torch "$HOSTDIR/venv" >"$BATS_FILE_TMPDIR/torch.log" 2>&1 || { cat "$BATS_FILE_TMPDIR/torch.log" >&3; return 1; }
  echo "# a clean venv with torch 2.13.0: $((SECONDS - start)) s" >&3
}

# link_torch VENV: torch 2.13.0 and the packages it requires, as pip would
# install them, linked into VENV's site-packages from this checkout's .venv
# (the same files; pip install took about 56 s of CPU to unpack and compile
# them again). Nothing else of .venv is visible in VENV.
link_torch() {
  "$MVP_REPO/.venv/bin/python" - "$1" <<'PY'
import importlib.metadata as md, os, sys, sysconfig
from packaging.requirements import Requirement
dst = os.popen(f"{sys.argv[1]}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])'").read().strip()
src = sysconfig.get_paths()["purelib"]
# What the new venv has already (pip, setuptools) stays as it is, as pip would leave it.
has = {d.name.lower() for d in md.distributions(path=[dst])}
todo, seen, tops = ["torch"], set(), set()
while todo:
    dist = md.distribution(todo.pop())
    if dist.name.lower() in seen | has:
        continue
    seen.add(dist.name.lower())
    assert dist.name != "torch" or dist.version.startswith("2.13.0"), dist.version
    todo += [r.name for r in map(Requirement, dist.requires or []) if not r.marker or r.marker.evaluate({"extra": ""})]
    tops |= {f.parts[0] for f in dist.files if f.parts[0] != ".."}
for top in sorted(tops):
    os.symlink(os.path.join(src, top), os.path.join(dst, top))
print(len(seen), "distributions,", len(tops), "entries linked:", " ".join(sorted(seen)))
PY
}

setup() {
  load ../test_helper/common
}

@test "gpu bundle: every part within --part-mib (the wheels split into numbered parts), SHA256SUMS of each, the path printed last" {
  run tail -n 1 "$BATS_FILE_TMPDIR/bundle.out"
  assert_output "$BUNDLE"
  local f n=0
  for f in "$BUNDLE"/*.tar.xz*; do
    (($(stat -c %s "$f") <= 8 * 1048576)) || fail "$f is larger than 8 MiB"
    n=$((n + 1))
  done
  [[ -f $BUNDLE/wheels.tar.xz.00 && -f $BUNDLE/wheels.tar.xz.01 && ! -e $BUNDLE/wheels.tar.xz ]]
  [[ $(wc -l <"$BUNDLE/SHA256SUMS") == "$n" ]]
  (cd "$BUNDLE" && sha256sum --quiet -c SHA256SUMS)
}

@test "gpu bundle: MANIFEST names what it left out and why (Ray's jar, jemalloc, RLlib, source maps; pyarrow's Flight, S3 and Substrait; the lock's wandb, av, torch) and the size --max-mib limits" {
  local m=$BUNDLE/MANIFEST.txt
  grep -qE '^pruned	ray-2\.60\.0-cp311-[^	]*	[0-9]+ files	Ray.s Java worker' "$m"
  grep -qE '^pruned	ray-2\.60\.0-.*RLlib' "$m"
  grep -qE '^pruned	ray-2\.60\.0-.*source maps' "$m"
  grep -qE '^pruned	pyarrow-26\.0\.1-.*Arrow Flight' "$m"
  grep -qE '^pruned	pyarrow-26\.0\.1-.*Substrait query plans' "$m"
  grep -qE '^pruned	ray-2\.60\.0-.*jemalloc' "$m"
  grep -qE '^ *[0-9]+  in all with the checkout \([0-9.]+ MiB\): what --max-mib limits$' "$m"
  grep -qE '^wandb +Weights' "$m"
  grep -qE '^av +PyAV' "$m"
  grep -qE '^torch +the GPU host' "$m"
  grep -qE '^ *[0-9]+  total \([0-9.]+ MiB\)$' "$m"
  # The repacked wheel itself: no jar, its own list of what it lost, a RECORD pip accepts.
  local dir=$BATS_TEST_TMPDIR/w
  mkdir "$dir"
  cat "$BUNDLE"/wheels.tar.xz.* | tar -xJ -C "$dir"
  run unzip -l "$dir"/wheels/ray-2.60.0-*.whl
  refute_output --partial "ray/jars/"
  refute_output --partial "ray/rllib/"
  assert_output --partial "ray-2.60.0.dist-info/mvp-pruned.txt"
  # Every file the rewritten RECORD lists is there with its sha256 and size.
  run python3 - "$dir"/wheels/ray-2.60.0-*.whl <<'PY'
import base64, csv, hashlib, io, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
rows = list(csv.reader(io.TextIOWrapper(z.open("ray-2.60.0.dist-info/RECORD"))))
bad = [p for p, h, n in rows if h and (h != "sha256=" + base64.urlsafe_b64encode(
    hashlib.sha256(z.read(p)).digest()).rstrip(b"=").decode() or int(n) != z.getinfo(p).file_size)]
listed = {p for p, _, _ in rows}
print(len(rows), "records;", len(bad), "bad;", len(set(z.namelist()) - listed), "unlisted")
PY
  assert_output --regexp '^[0-9]+ records; 0 bad; 0 unlisted$'
  ! compgen -G "$dir/wheels/torch-*" >/dev/null
  ! compgen -G "$dir/wheels/wandb-*" >/dev/null
}

@test "gpu smoke --install-only: the bundle goes into a venv holding only torch with pip --no-index --no-deps; a second run is a SKIP" {
  local log=$BATS_TEST_TMPDIR/install.log
  PIP_NO_INDEX=1 run "$HOSTDIR/mvp/scripts/libexec/gpu_smoke.sh" --install-only --bundle "$BUNDLE" --venv "$HOSTDIR/venv"
  assert_success
  assert_output --partial "installing "
  [[ -f $HOSTDIR/mvp/.mvp/cache/verl-0.9.1/verl/__init__.py ]]
  [[ -f $HOSTDIR/mvp/.mvp/gpu-smoke/shared/datasets/gsm8k/train.parquet ]]
  [[ -d $HOSTDIR/mvp/.mvp/gpu-smoke/shared/common/models/mvp-tiny/qwen2 ]]
  run "$HOSTDIR/venv/bin/python" -m pip list --format=freeze
  assert_line "ray==2.60.0"
  assert_line "torch==2.13.0+cpu"
  refute_line --regexp '^wandb=='
  run "$HOSTDIR/mvp/scripts/libexec/gpu_smoke.sh" --install-only --bundle "$BUNDLE" --venv "$HOSTDIR/venv"
  assert_success
  assert_output --partial "SKIP: installing the bundle (installed in $HOSTDIR/venv)"
}

@test "gpu smoke's venv from the bundle: Ray (stripped, pruned) runs a cluster of its own, a task and a ray job submit job (the dashboard's job API); verl, the hf rollout, the parquet data through datasets and verl's own RLHFDataset (filter, collate) on a pyarrow without Substrait, and the tiny model load, the model through verl's own auto-class lookup" {
  local mvp=$HOSTDIR/mvp
  [[ -x $HOSTDIR/venv/bin/ray ]] || fail "no ray in the bundle's venv: the install test before this one failed"
  run env -u PYTHONPATH PYTHONPATH="$mvp/.mvp/cache/verl-0.9.1:$mvp/helpers/verl_cpu" RAY_ENABLE_UV_RUN_RUNTIME_ENV=0 \
    HF_DATASETS_CACHE="$BATS_TEST_TMPDIR/hf-datasets" HF_HUB_OFFLINE=1 \
    timeout 300 "$HOSTDIR/venv/bin/python" - "$mvp/.mvp/gpu-smoke/shared" <<'PY'
import os, sys
shared = sys.argv[1]
import socket, subprocess
import ray
# address="local": a cluster of its own. A bare ray.init() joins the latest
# cluster `ray start` began on this machine (/tmp/ray/ray_current_cluster),
# which on a shared machine may be another test's.
with socket.socket() as free:
    free.bind(("127.0.0.1", 0))
    dashboard_port = free.getsockname()[1]
import shutil, tempfile
temp_dir = tempfile.mkdtemp(prefix="mvp-ray-", dir="/tmp")
ctx = ray.init(address="local", num_cpus=1, include_dashboard=True, dashboard_port=dashboard_port,
               configure_logging=False, _temp_dir=temp_dir)
# A job's driver gets the address Ray's job supervisor resolves from "auto":
# <temp_dir>/ray_current_cluster, which only `ray start` writes
# (dashboard/modules/job/job_supervisor.py, _get_driver_env_vars); without it
# the supervisor takes any gcs_server it finds on the machine, such as another
# test's cluster beside this one (a rehearsal's driver joined one and died).
ray._private.utils.write_ray_address(ctx.address_info["gcs_address"], temp_dir)
@ray.remote
def square(x):
    return x * x
print("ray task", ray.get(square.remote(7)))
# The job REST API of the dashboard (its web UI's JavaScript is left out) and
# the runtime env agent behind it, through the CLI the runbook's 41 uses.
ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
job = subprocess.run([ray_cli, "job", "submit", "--address", "http://" + ctx.dashboard_url, "--",
                      sys.executable, "-c", "import ray; ray.init(); print('job says', ray.cluster_resources()['CPU'])"],
                     capture_output=True, text=True, timeout=240)
print(job.stdout + job.stderr, file=sys.stderr)
print("job", "SUCCEEDED" if "succeeded" in job.stdout and job.returncode == 0 else f"FAILED rc={job.returncode}")
print("job output", [l for l in job.stdout.splitlines() if l.startswith("job says")])
ray.shutdown()
shutil.rmtree(temp_dir, ignore_errors=True)
import verl, verl.trainer.main_ppo, verl.workers.engine_workers  # noqa: F401  (the trainer and its FSDP workers)
import mvp_verl_cpu.rollout  # noqa: F401  (registers the hf rollout with verl)
print("verl from", os.path.dirname(verl.__file__))
import pyarrow.parquet as pq
print("train rows", pq.read_table(os.path.join(shared, "datasets/gsm8k/train.parquet")).num_rows)
import datasets  # verl's RLHFDataset reads its parquet this way (verl/utils/dataset/rl_dataset.py)
rows = datasets.load_dataset("parquet", data_files=os.path.join(shared, "datasets/gsm8k/train.parquet"))["train"]
print("datasets rows", len(rows), "columns", "prompt" in rows.column_names)
# pyarrow without its Substrait library (left out, its DT_NEEDED removed).
try:
    import pyarrow.substrait  # noqa: F401
    print("pyarrow.substrait present")
except ImportError:
    print("pyarrow.substrait left out")
from transformers import AutoConfig, AutoTokenizer
from verl.utils.model import get_hf_auto_model_class
model_dir = os.path.join(shared, "common/models/mvp-tiny/qwen2")
# The auto class as verl's FSDP engine picks it (its lookup imports every
# vision-language family's config class), then the model through it.
model = get_hf_auto_model_class(AutoConfig.from_pretrained(model_dir)).from_pretrained(model_dir)
tokens = AutoTokenizer.from_pretrained(model_dir)("Natalia sold clips")["input_ids"]
print("model", type(model).__name__, "tokens", len(tokens) > 0)
# verl's RLHFDataset itself: load_dataset, the over-long-prompt filter
# (datasets' filter, pyarrow compute), a row and its collation.
from omegaconf import OmegaConf
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
data = RLHFDataset(data_files=[os.path.join(shared, "datasets/gsm8k/train.parquet")], tokenizer=AutoTokenizer.from_pretrained(model_dir),
                   config=OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 512, "filter_overlong_prompts": True}))
batch = collate_fn([data[0], data[1]])
print("rlhf rows", len(data), "raw_prompt", len(batch["raw_prompt"]), "dummy_tensor", tuple(batch["dummy_tensor"].shape))
PY
  assert_success
  assert_line "ray task 49"
  assert_line "job SUCCEEDED"
  assert_line "job output ['job says 1.0']"
  assert_line "verl from $mvp/.mvp/cache/verl-0.9.1/verl"
  assert_line --regexp '^train rows [1-9][0-9]*$'
  assert_line --regexp '^datasets rows [1-9][0-9]* columns True$'
  assert_line "model Qwen2ForCausalLM tokens True"
  assert_line "pyarrow.substrait left out"
  assert_line --regexp '^rlhf rows [1-9][0-9]* raw_prompt 2 dummy_tensor \(2, 1\)$'
}
