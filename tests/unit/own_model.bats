#!/usr/bin/env bats
# shellcheck disable=SC2154  # $stderr is set by bats' run --separate-stderr
# 30 prepares the user's own model: a local directory or a Hugging Face id,
# several side by side under common/models; HF_TOKEN is private. No hub here:
# the hub path runs the helper against a stub huggingface_hub that records
# what it was given (the command shape only); local directories are real runs.

setup() {
  load ../test_helper/common
  mvp_isolate "$BATS_TEST_TMPDIR"
  export MVP_GSM8K_SOURCE=synthetic MVP_SKIP_MODEL=0
  unset MVP_MODEL_SOURCE MVP_MODEL_ID HF_TOKEN
}

@test "30 --model DIR: two local models side by side under common/models, each with its manifest; a second run is SKIP only" {
  cp -r "$MVP_REPO/tests/fixtures/model_standin" "$BATS_TEST_TMPDIR/My-Model-A"
  cp -r "$MVP_REPO/tests/fixtures/model_standin" "$BATS_TEST_TMPDIR/my-model-b"
  echo '{"b": 1}' >"$BATS_TEST_TMPDIR/my-model-b/config.json"
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh" --model "$BATS_TEST_TMPDIR/My-Model-A"
  assert_success
  (cd "$BATS_TEST_TMPDIR" && "$MVP_REPO/scripts/30_prepare_data_and_model.sh" --model my-model-b 2>/dev/null)
  local models="$SHARED_ROOT/common/models"
  cmp "$BATS_TEST_TMPDIR/My-Model-A/config.json" "$models/My-Model-A/config.json"
  cmp "$BATS_TEST_TMPDIR/my-model-b/config.json" "$models/my-model-b/config.json"
  jq -e --arg s "dir:$BATS_TEST_TMPDIR/my-model-b" '.model_id == "my-model-b" and .source == $s' "$models/my-model-b/MANIFEST.json"
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh" --model "$BATS_TEST_TMPDIR/My-Model-A"
  assert_success
  refute_output --partial -- "----->"
  assert_output --partial "SKIP: model My-Model-A ($models/My-Model-A is complete per its MANIFEST.json)"
}

@test "30 --model: a path that is not there is one line; a model id that would leave common/models is refused" {
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh" --model ./nowhere
  assert_failure
  assert_output --partial "ERROR: --model ./nowhere: no such directory; give a model directory or a Hugging Face id (ORG/NAME)"
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c '
import sys
from pathlib import Path
from mvp.data import prepare
from mvp.worker.errors import MvpError
for bad in ("a/../../b", "org/name/extra", "-x", "a b"):
    try:
        prepare.prepare_model(Path(sys.argv[1]), bad, "")
    except MvpError as exc:
        print(exc)' "$SHARED_ROOT"
  assert_success
  assert_equal "${#lines[@]}" 4
  assert_line --index 0 "model id 'a/../../b' is not a Hugging Face id (ORG/NAME of A-Z a-z 0-9 . _ -); it names the model's directory under common/models"
  [[ ! -e $SHARED_ROOT/common/models ]] || [[ -z $(ls -A "$SHARED_ROOT/common/models") ]]
}

@test "30 --model ORG/NAME with HF_TOKEN: the helper is asked for --token-stdin, the token is on no command line" {
  HF_TOKEN=hf_SeCrEt123 run "$MVP_REPO/scripts/30_prepare_data_and_model.sh" --dry-run --model Org/Gated-1B
  assert_success
  assert_output --partial "DRY-RUN: mvp::helper::run prepare --token-stdin"
  refute_output --partial hf_SeCrEt123
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh" --dry-run --model Org/Gated-1B
  assert_line --partial "DRY-RUN: mvp::helper::run prepare"
  refute_output --partial token-stdin
}

@test "prepare's hub path: HF_TOKEN from stdin reaches snapshot_download; not its argv, environment, manifest or log" {
  local stub=$BATS_TEST_TMPDIR/stub
  mkdir -p "$stub/huggingface_hub"
  cat >"$stub/huggingface_hub/__init__.py" <<'PY'
import json, os
from pathlib import Path
def snapshot_download(repo_id, local_dir, token=None):
    Path(local_dir).mkdir(parents=True, exist_ok=True)
    if repo_id.endswith("Fail"):
        raise RuntimeError(f"401 Client Error: Unauthorized (token {token})")
    Path(local_dir, "config.json").write_text("{}")
    Path(local_dir, "model.safetensors").write_bytes(b"")
    seen = {"repo_id": repo_id, "local_dir": local_dir, "token": token,
            "argv": open("/proc/self/cmdline").read(), "env": "\0".join(f"{k}={v}" for k, v in os.environ.items())}
    Path(os.environ["STUB_RECORD"]).write_text(json.dumps(seen))
PY
  mkdir -p "$SHARED_ROOT"
  export STUB_RECORD=$BATS_TEST_TMPDIR/record.json
  run --separate-stderr env -u HF_TOKEN PYTHONPATH="$stub:$MVP_REPO/helpers" SHARED_ROOT="$SHARED_ROOT" \
    MVP_MODEL_ID=Org/Gated-1B MVP_MODEL_SOURCE="" MVP_SKIP_MODEL=0 MVP_GSM8K_SOURCE=synthetic MVP_MIN_FREE_MB=1 \
    "$MVP_REPO/.venv/bin/python" -m mvp prepare --token-stdin < <(printf '%s' hf_SeCrEt123)
  assert_success
  jq -e --arg d "$SHARED_ROOT/common/models/Org" '.repo_id == "Org/Gated-1B" and .token == "hf_SeCrEt123" and (.local_dir | startswith($d))' "$STUB_RECORD"
  jq -e '(.argv | contains("hf_SeCrEt123") | not) and (.env | contains("hf_SeCrEt123") | not)' "$STUB_RECORD"
  jq -e '.source == "hf:Org/Gated-1B"' "$SHARED_ROOT/common/models/Org/Gated-1B/MANIFEST.json"
  run grep -rl hf_SeCrEt123 "$SHARED_ROOT"
  assert_failure
  [[ $stderr != *hf_SeCrEt123* && $output != *hf_SeCrEt123* ]]
  # The hub's own error words may hold the token: masked.
  run env -u HF_TOKEN PYTHONPATH="$stub:$MVP_REPO/helpers" SHARED_ROOT="$SHARED_ROOT" \
    MVP_MODEL_ID=Org/Fail MVP_MODEL_SOURCE="" MVP_SKIP_MODEL=0 MVP_GSM8K_SOURCE=synthetic MVP_MIN_FREE_MB=1 \
    "$MVP_REPO/.venv/bin/python" -m mvp prepare --token-stdin < <(printf '%s' hf_SeCrEt123)
  assert_failure
  assert_line --partial "ERROR: model Org/Fail: download from the Hugging Face hub failed (401 Client Error: Unauthorized (token ***)); a gated model needs HF_TOKEN"
  refute_output --partial hf_SeCrEt123
  [[ ! -e $SHARED_ROOT/common/models/Org/Fail ]]
}

@test "HF_TOKEN reaches no node: mvp::run::node_env_names passes the Hugging Face cache settings, not its token" {
  # shellcheck disable=SC2016  # expanded by the inner bash
  run env HF_TOKEN=x HF_HOME=/h HF_HUB_OFFLINE=1 HUGGING_FACE_HUB_TOKEN=y bash -c '
    source "$MVP_REPO/scripts/lib/run.sh"
    mvp::run::node_env_names | sort'
  assert_success
  assert_output $'HF_HOME\nHF_HUB_OFFLINE'
}
