#!/usr/bin/env bats
# A user's own parquet checked as verl 0.9.1 reads it (helpers/mvp/jobs/planning/datacheck.py):
# each ported rule (its verl file:line in datacheck.py) refuses a planted
# violation in one ERROR line naming the column or row. The files are real
# parquet written with pyarrow; the tokenizer is a real one (a BPE trained here,
# saved with transformers, ChatML template) loaded as verl loads it.

setup_file() {
  load ../test_helper/common
  export MODEL=$BATS_FILE_TMPDIR/model BARE=$BATS_FILE_TMPDIR/bare
  mkdir -p "$BARE" && echo '{}' >"$BARE/config.json"
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$MODEL" <<'PY'
import sys
from mvp.data import tiny_model
texts = [f"A crate holds {i} red and {i + 3} blue balls. How many balls?" for i in range(200)]
tiny_model._tokenizer(texts).save_pretrained(sys.argv[1])
PY
}

setup() {
  load ../test_helper/common
}

# parquet FILE PYTHON [FILE PYTHON...]: each FILE written by pyarrow from
# `rows`, the list its PYTHON evaluates to (msg(TEXT) is a one-message user
# prompt; RL(PROMPT) a full row); several files in one Python.
parquet() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$@" <<'PY'
import sys
import pyarrow as pa
import pyarrow.parquet as pq
def msg(text, role="user"):
    return [{"role": role, "content": text}]
def RL(prompt, gt="7"):
    return {"data_source": "mine", "prompt": prompt, "reward_model": {"style": "rule", "ground_truth": gt}}
for path, expr in zip(sys.argv[1::2], sys.argv[2::2]):
    pq.write_table(pa.Table.from_pylist(eval(expr)), path)
PY
}

# datacheck KIND MODEL_DIR FILE [KEY=VALUE...] [-- KIND MODEL_DIR FILE ...]: the
# check as the plan runs it, its lines on stdout, a refusal as its ERROR line
# (exit 1). Several cases after `--` run in one process (transformers is
# imported once), each line prefixed with "N: ", the case's number from 1.
datacheck() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$@" <<'PY'
import sys
from pathlib import Path
from mvp.jobs.planning import datacheck
from mvp.worker.errors import MvpError
cases, case = [], []
for word in sys.argv[1:] + ["--"]:
    if word == "--":
        cases.append(case)
        case = []
    else:
        case.append(word)
status = 0
for n, (kind, model, path, *sets) in enumerate(cases, 1):
    prefix = f"{n}: " if len(cases) > 1 else ""
    try:
        for line in datacheck.check([("dataset.train", Path(path))], kind, dict(s.split("=", 1) for s in sets),
                                    Path(model), None):
            print(prefix + line)
    except MvpError as exc:
        print(f"{prefix}ERROR: {exc}")
        status = 1
sys.exit(status)
PY
}

@test "own data: verl's own gsm8k shape passes; its first row is shown through the model's chat template" {
  F=$BATS_TEST_TMPDIR/ok.parquet
  parquet "$F" '[RL(msg("What is 3 + 4?")), RL([{"role": "system", "content": "Be brief."}] + msg("2 + 2?"), "4")]'
  run datacheck rl "$MODEL" "$F"
  assert_success
  assert_line "dataset.train: ok.parquet: 2 rows, columns and messages as verl RL reads them"
  assert_line 'dataset.train: row 0 through the model'"'"'s chat template: "<|im_start|>user\nWhat is 3 + 4?<|im_end|>\n<|im_start|>assistant\n"'
  assert_line --regexp '^dataset.train: 0 of 2 rows longer than data.max_prompt_length=512 tokens \(longest [0-9]+\)$'
}

@test "own data: a missing column is named with the verl line that reads it (prompt, data_source, reward_model)" {
  local F=$BATS_TEST_TMPDIR/f
  # Four files, then the four cases in one process (its lines numbered by case).
  parquet "$F"1.parquet '[{"question": "hi", "data_source": "x", "reward_model": {"ground_truth": "1"}}]' \
    "$F"2.parquet '[{"prompt": msg("hi"), "reward_model": {"ground_truth": "1"}}]' \
    "$F"3.parquet '[{"prompt": msg("hi"), "data_source": "x", "reward_model": {"style": "rule"}}]' \
    "$F"4.parquet '[{"question": msg("hi"), "data_source": "x", "reward_model": {"ground_truth": "1"}}]'
  # data.prompt_key names the column verl reads (rl_dataset.py:108): case 4 passes.
  run datacheck rl "$BARE" "$F"1.parquet -- rl "$BARE" "$F"2.parquet -- rl "$BARE" "$F"3.parquet \
    -- rl "$BARE" "$F"4.parquet data.prompt_key=question
  assert_failure
  assert_line "1: ERROR: dataset.train: ${F}1.parquet has no column 'prompt' (verl applies the chat template to it: verl/utils/dataset/rl_dataset.py:259-261); its columns: question, data_source, reward_model (docs/your-data.md)"
  assert_line --regexp "^2: ERROR: .*has no column 'data_source' \(the reward manager reads it: verl/experimental/reward_loop/reward_manager/naive\.py:42\)"
  assert_line --regexp "^3: ERROR: .*column 'reward_model' holds struct<style: string>, not a struct with a 'ground_truth' field"
  [[ $(grep -c '^[123]: ' <<<"$output") == 3 ]]
  refute_line --regexp '^4: ERROR'
  assert_line --regexp '^4: dataset.train: f4.parquet: 1 rows'
}

@test "own data: a prompt that is text, not a message list, or messages without role/content, is refused naming the column" {
  local F=$BATS_TEST_TMPDIR/f
  parquet "$F"1.parquet '[RL("What is 3 + 4?")]' "$F"2.parquet '[RL([{"content": "hi"}])]' \
    "$F"3.parquet '[RL([{"role": "user", "text": "hi"}])]'
  run datacheck rl "$BARE" "$F"1.parquet -- rl "$BARE" "$F"2.parquet -- rl "$BARE" "$F"3.parquet
  assert_failure
  assert_line --regexp "^1: ERROR: .*column 'prompt' holds string, not a list of messages \{role, content\}"
  assert_line "2: ERROR: dataset.train: ${F}2.parquet column 'prompt': its messages have no 'role' field (they have: content); each message is {role, content}"
  assert_line --regexp "^3: ERROR: .*its messages have no 'content' field \(they have: role, text\)"
  # Each case is its one ERROR line.
  ((${#lines[@]} == 3))
}

@test "own data: the first bad row is named: an empty prompt, a message without a role, a null ground truth" {
  local F=$BATS_TEST_TMPDIR/f
  parquet "$F"1.parquet '[RL(msg("ok")), RL(msg("ok")), RL([])]' \
    "$F"2.parquet '[RL(msg("ok")), RL([{"role": None, "content": "hi"}])]' \
    "$F"3.parquet '[RL(msg("ok")), RL(msg("ok"), None)]' "$F"4.parquet '[]'
  run datacheck rl "$BARE" "$F"1.parquet -- rl "$BARE" "$F"2.parquet -- rl "$BARE" "$F"3.parquet -- rl "$BARE" "$F"4.parquet
  assert_failure
  assert_line "1: ERROR: dataset.train: ${F}1.parquet row 2: column 'prompt' is empty (or null): a prompt needs at least one message; each message is {role, content} (docs/your-data.md)"
  assert_line --regexp "^2: ERROR: .*row 1: column 'prompt' message 0 has no role"
  assert_line --regexp "^3: ERROR: .*row 1: reward_model\.ground_truth is null \(verl/experimental/reward_loop/reward_manager/naive\.py:43"
  assert_line --regexp "^4: ERROR: .*has no column 'prompt'"
  [[ $(grep -c '^1: ' <<<"$output") == 1 ]]
}

@test "own data: a file that is not parquet is one line" {
  F=$BATS_TEST_TMPDIR/f.parquet
  echo '{"prompt": "hi"}' >"$F"
  run datacheck rl "$BARE" "$F"
  assert_failure
  assert_output --regexp "^ERROR: dataset.train: $F is not a parquet file \(.*\); write it with pyarrow or pandas \(docs/your-data.md\)$"
}

@test "own data: rows longer than data.max_prompt_length are counted in chat-template tokens; all of them filtered is refused" {
  F=$BATS_TEST_TMPDIR/f.parquet
  parquet "$F" '[RL(msg("hi")), RL(msg("A crate holds 3 red and 6 blue balls. " * 20)), RL(msg("How many?"))]'
  # "hi" with ChatML's turn markers and the generation prompt: more than 2 tokens.
  run datacheck rl "$MODEL" "$F" data.max_prompt_length=30 -- rl "$MODEL" "$F" data.max_prompt_length=30 data.filter_overlong_prompts=true \
    -- rl "$MODEL" "$F" data.max_prompt_length=2 data.filter_overlong_prompts=true
  assert_failure
  assert_line --regexp '^1: dataset.train: 1 of 3 rows longer than data.max_prompt_length=30 tokens \(longest [0-9]+\): verl left-truncates them to rollout.prompt_length \(verl/experimental/agent_loop/agent_loop.py:437-445\)$'
  assert_line --regexp '^2: dataset.train: 1 of 3 rows longer than data.max_prompt_length=30 tokens \(longest [0-9]+\): verl drops them \(data.filter_overlong_prompts=true, verl/utils/dataset/rl_dataset.py:268-272\)$'
  assert_line --regexp "^3: ERROR: dataset.train: $F: every row is longer than data.max_prompt_length=2 tokens \(shortest [0-9]+\) and data.filter_overlong_prompts=true drops them all"
  refute_line --regexp '^[12]: ERROR'
}

@test "own data: the count is verl's: apply_chat_template(tokenize=True) with the generation prompt (RL) or without (SFT)" {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$MODEL" <<'PY'
import sys
from pathlib import Path
from mvp.jobs.planning import datacheck
tok = datacheck.load_tokenizer(Path(sys.argv[1]))
rows = [[{"role": "user", "content": "A crate holds 3 red balls. " * n}] for n in range(1, 30)]
rows += [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2 + 2?"},
          {"role": "assistant", "content": "4"}]]
def verl(messages, generation):  # rl_dataset.py:259-262 (normalize_token_ids: a BatchEncoding's input_ids)
    out = tok.apply_chat_template(messages, add_generation_prompt=generation, tokenize=True)
    return len(out["input_ids"] if hasattr(out, "keys") else out)
for kind in ("rl", "sft"):
    got = datacheck.lengths(tok, rows, datacheck.Rules(kind, {}), "dataset.train", Path("f"))
    want = [verl(r, kind == "rl") for r in rows]
    assert got == want, (kind, got, want)
    assert len(set(got)) == len(got), got  # every row a different length: a constant count would not pass
PY
}

@test "own data: SFT: the messages column, its first row rendered, a row over data.max_length refused under truncation=error" {
  F=$BATS_TEST_TMPDIR/sft.parquet
  parquet "$F" '[{"messages": msg("2 + 2?") + msg("4", "assistant")}, {"messages": msg("x " * 200) + msg("y", "assistant")}]'
  run datacheck sft "$MODEL" "$F" data.max_length=4096 -- sft "$MODEL" "$F" data.max_length=50 \
    -- sft "$MODEL" "$F" data.max_length=50 data.truncation=right
  assert_failure
  assert_line '1: dataset.train: row 0 through the model'"'"'s chat template: "<|im_start|>user\n2 + 2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"'
  assert_line --regexp "^2: ERROR: dataset.train: $F row 1: [0-9]+ tokens, more than data.max_length=50, and data.truncation=error makes verl raise on it \(verl/utils/dataset/multiturn_sft_dataset.py:390-391; 1 of 2 rows"
  assert_line --regexp '^3: dataset.train: 1 of 2 rows longer than data.max_length=50 tokens \(longest [0-9]+\): verl truncates them \(right\)$'
  refute_line --regexp '^[13]: ERROR'
  parquet "$F" '[{"conversation": msg("hi")}]'
  run datacheck sft "$BARE" "$F"
  assert_failure
  assert_output --partial "has no column 'messages' (verl reads the conversation from it: verl/utils/dataset/multiturn_sft_dataset.py:165)"
}

@test "own data: a row the model's chat template fails on is named (verl counts it as overlong or fails on it)" {
  F=$BATS_TEST_TMPDIR/f.parquet
  cp -r "$MODEL" "$BATS_TEST_TMPDIR/strict"
  # A template that refuses a role it does not know, as many models' templates do.
  "$MVP_REPO/.venv/bin/python" - "$BATS_TEST_TMPDIR/strict/tokenizer_config.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c["chat_template"] = ("{% for m in messages %}{% if m['role'] not in ['user', 'assistant'] %}"
                      "{{ raise_exception('unknown role ' + m['role']) }}{% endif %}{{ m['content'] }}{% endfor %}")
json.dump(c, open(p, "w"))
PY
  rm -f "$BATS_TEST_TMPDIR/strict/chat_template.jinja"
  parquet "$F" '[RL(msg("ok")), RL(msg("hi", "tool"))]'
  run datacheck rl "$BATS_TEST_TMPDIR/strict" "$F"
  assert_failure
  assert_output --regexp "^ERROR: dataset.train: $F row 1: the model's chat template fails on it \(.*unknown role tool\)$"
}

@test "own data: a model directory without a vocabulary is said so (schema checks only), and a checked file is a cache hit" {
  F=$BATS_TEST_TMPDIR/f.parquet
  parquet "$F" '[RL(msg("ok"))]'
  run datacheck rl "$BARE" "$F"
  assert_success
  assert_line "dataset: $BARE has no tokenizer files (tokenizer.json, tokenizer.model, vocab.json, vocab.txt): prompts not rendered nor counted"
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$F" "$BATS_TEST_TMPDIR/cache" <<'PY'
import sys, time
from pathlib import Path
from mvp.jobs.planning import datacheck
f, cache = Path(sys.argv[1]), Path(sys.argv[2])
first = datacheck.check([("dataset.train", f)], "rl", {}, f.parent, cache)
assert len(list((cache / "data").glob("*.json"))) == 1
real_columns = datacheck.check_columns
datacheck.check_columns = lambda *a: (_ for _ in ()).throw(SystemExit("an unchanged file was read again"))
assert datacheck.check([("dataset.train", f)], "rl", {}, f.parent, cache) == first
datacheck.check_columns = real_columns
import pyarrow.parquet as pq
pq.write_table(pq.read_table(f).slice(0, 0), f)  # now empty: a stale verdict would pass it
try:
    datacheck.check([("dataset.train", f)], "rl", {}, f.parent, cache)
except Exception as exc:
    assert "has no rows" in str(exc), exc
else:
    raise SystemExit("the edited file was not checked again")
PY
}
