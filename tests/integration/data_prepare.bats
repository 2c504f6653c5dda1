#!/usr/bin/env bats
# 30_prepare_data_and_model.sh on the real GSM8K files (../shared/data/gsm8k):
# the parquet read back with pyarrow, skip-if-valid, rebuild of damaged files,
# interrupted writes, and the model step. No cluster needed: for the local
# runtime the data tools run in the project venv.

setup() {
  load ../test_helper/common
  mvp_isolate "$BATS_TEST_TMPDIR"
  [[ -f $MVP_TEST_GSM8K/train.jsonl ]] || { echo "GSM8K files not found at $MVP_TEST_GSM8K" >&2; return 1; }
  RL="$SHARED_ROOT/datasets/gsm8k"
  SFT="$SHARED_ROOT/datasets/gsm8k_sft"
}

py() { "$MVP_REPO/.venv/bin/python" "$@"; }

snapshot_files() {
  (cd "$SHARED_ROOT/datasets" && find . -type f -printf '%p %T@ ' -exec sha256sum {} \; | sort)
}

@test "30_prepare: RL and SFT parquet read back with verl's schema, every row, and independently checked answers" {
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_success
  run py - "$RL" "$SFT" "$MVP_TEST_GSM8K" <<'PY'
import json, sys
import pyarrow.parquet as pq
rl, sft, src = sys.argv[1:]
INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
msg = "list<element: struct<role: string, content: string>>"
want = {"data_source": "string", "prompt": msg, "ability": "string",
        "reward_model": "struct<style: string, ground_truth: string>",
        "extra_info": "struct<split: string, index: int64, answer: string, question: string>"}
for split, rows in (("train", 7473), ("test", 1319)):
    t = pq.read_table(f"{rl}/{split}.parquet")
    assert {f.name: str(f.type) for f in t.schema} == want, t.schema
    assert t.num_rows == rows, (split, t.num_rows)
    source = [json.loads(l) for l in open(f"{src}/{split}.jsonl")]
    for r in t.to_pylist():
        i = r["extra_info"]["index"]
        q, a = source[i]["question"], source[i]["answer"]
        # Independent of the helper's regex: the text after the last '####'.
        assert r["reward_model"] == {"style": "rule", "ground_truth": a.split("####")[-1].strip().replace(",", "")}, i
        assert r["prompt"] == [{"role": "user", "content": q + " " + INSTRUCTION}], i
        assert r["data_source"] == "openai/gsm8k" and r["ability"] == "math"
        assert r["extra_info"] == {"split": split, "index": i, "answer": a, "question": q}
for name, rows, stem in (("train", 7473, "train"), ("val", 1319, "test")):
    t = pq.read_table(f"{sft}/{name}.parquet")
    assert t.column_names == ["messages"] and str(t.schema.field("messages").type) == msg
    assert t.num_rows == rows
    source = [json.loads(l) for l in open(f"{src}/{stem}.jsonl")]
    for r, s in zip(t.to_pylist(), source):
        m = r["messages"]
        assert [x["role"] for x in m] == ["user", "assistant"]
        assert m[0]["content"] == s["question"] + " " + INSTRUCTION and m[1]["content"] == s["answer"]
print("checked")
PY
  assert_success
  assert_output checked
  run jq -r '.files["train.parquet"].rows, .source' "$RL/MANIFEST.json"
  assert_output "7473
dir:$(realpath "$MVP_TEST_GSM8K")"
}

@test "30_prepare: a second run prints SKIP lines and leaves every file untouched (mtime and hash)" {
  "$MVP_REPO/scripts/30_prepare_data_and_model.sh" 2>/dev/null
  local before
  before=$(snapshot_files)
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_success
  assert_output --partial "SKIP: GSM8K RL parquet"
  assert_output --partial "SKIP: GSM8K SFT parquet"
  assert_output --partial "SKIP: model mvp-fixtures/model-standin"
  [[ $output != *"----->"* ]]
  [[ $(snapshot_files) == "$before" ]]
}

@test "30_prepare: a truncated file is detected and rebuilt, the intact set is still skipped" {
  "$MVP_REPO/scripts/30_prepare_data_and_model.sh" 2>/dev/null
  local good
  good=$(sha256sum <"$RL/train.parquet")
  truncate -s 1000 "$RL/train.parquet"
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_success
  assert_output --partial "GSM8K RL parquet: 7473+1319 rows"
  assert_output --partial "SKIP: GSM8K SFT parquet"
  [[ $(sha256sum <"$RL/train.parquet") == "$good" ]]
  run py -c 'import pyarrow.parquet as pq, sys; print(pq.read_metadata(sys.argv[1]).num_rows)' "$RL/train.parquet"
  assert_output 7473
}

@test "30_prepare --force rebuilds what a plain run would skip" {
  "$MVP_REPO/scripts/30_prepare_data_and_model.sh" 2>/dev/null
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh" --force
  assert_success
  assert_output --partial "GSM8K RL parquet: 7473+1319 rows"
  assert_output --partial "GSM8K SFT parquet: 7473+1319 rows"
}

@test "30_prepare: a run killed mid-write leaves no file under a final name; the next run completes" {
  MVP_FAULT_PAUSE_BEFORE_RENAME=1 "$MVP_REPO/scripts/30_prepare_data_and_model.sh" 2>"$BATS_TEST_TMPDIR/err" &
  local script=$! pid=""
  mvp_wait_until 60 "30 pausing before its rename" grep -q '^MVP_FAULT_PAUSE_BEFORE_RENAME: pid [0-9]* ' "$BATS_TEST_TMPDIR/err"
  pid=$(sed -n 's/^MVP_FAULT_PAUSE_BEFORE_RENAME: pid \([0-9]*\) .*/\1/p' "$BATS_TEST_TMPDIR/err")
  [[ -n $pid ]]
  kill -KILL "$pid"
  wait "$script" || true
  [[ ! -e $RL/train.parquet && ! -e $RL/test.parquet && ! -e $RL/MANIFEST.json ]]
  [[ -n $(find "$RL" -name '.tmp-*') ]]
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_success
  [[ -f $RL/train.parquet && -f $RL/MANIFEST.json && -z $(find "$RL" -name '.tmp-*') ]]
}

@test "30_prepare: answers without a parsable '#### N' are reported by index and left out of the RL parquet" {
  local src=$BATS_TEST_TMPDIR/src
  mkdir -p "$src"
  head -n 3 "$MVP_TEST_GSM8K/train.jsonl" | jq -c 'if input_line_number == 2 then .answer |= sub("#### "; "answer: ") else . end' >"$src/train.jsonl"
  head -n 2 "$MVP_TEST_GSM8K/test.jsonl" >"$src/test.jsonl"
  MVP_GSM8K_SOURCE=$src run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_success
  assert_output --partial "train: 1 answer(s) without a parsable '#### N' left out of the RL parquet, at index 1"
  run jq -c '.unparsable_index.train, .files["train.parquet"].rows' "$RL/MANIFEST.json"
  assert_output $'[1]\n2'
  run jq -r '.files["train.parquet"].rows' "$SFT/MANIFEST.json"
  assert_output 3
}

@test "30_prepare: the synthetic source says so in data_source" {
  MVP_GSM8K_SOURCE=synthetic run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_success
  run py -c 'import pyarrow.parquet as pq, sys; print(set(pq.read_table(sys.argv[1]).column("data_source").to_pylist()))' "$RL/train.parquet"
  assert_output "{'mvp/synthetic-arithmetic'}"
}

@test "30_prepare: offline without a local model the error names both settings, and the data part completes" {
  MVP_MODEL_SOURCE="" MVP_MODEL_ID=Qwen/Qwen2.5-0.5B-Instruct HF_HUB_OFFLINE=1 run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_failure
  assert_output --partial "MVP_MODEL_SOURCE="
  assert_output --partial "MVP_SKIP_MODEL=1"
  [[ -f $RL/MANIFEST.json && -f $SFT/MANIFEST.json ]]
  [[ ! -e $SHARED_ROOT/common/models/Qwen ]] || [[ -z $(find "$SHARED_ROOT/common/models/Qwen" -mindepth 1 -not -name '.tmp-*') ]]
}

@test "30_prepare: the model is imported from MVP_MODEL_SOURCE once, and MVP_SKIP_MODEL=1 skips it" {
  run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_success
  assert_output --partial "model mvp-fixtures/model-standin: 1 files into"
  cmp "$MVP_REPO/tests/fixtures/model_standin/config.json" "$SHARED_ROOT/common/models/mvp-fixtures/model-standin/config.json"
  MVP_SKIP_MODEL=1 MVP_MODEL_ID=another/model run "$MVP_REPO/scripts/30_prepare_data_and_model.sh"
  assert_success
  assert_output --partial "SKIP: model (MVP_SKIP_MODEL=1)"
  [[ ! -e $SHARED_ROOT/common/models/another ]]
}
