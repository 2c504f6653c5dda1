"""A job's own parquet, checked as verl 0.9.1 reads it, before anything is
written or submitted: a wrong file otherwise costs a cluster start-up and a
trainer's Ray workers before verl fails in its dataset or reward manager.

Ported rules (verl 0.9.1, paths under its `verl/` package):
- RL (main_ppo, RLHFDataset): the prompt column is `data.prompt_key`
  (utils/dataset/rl_dataset.py:108) and holds chat messages, given as they are
  to the tokenizer's chat template (rl_dataset.py:259-261); `data_source` and
  `reward_model.ground_truth` are read for every sample by the reward manager
  (experimental/reward_loop/reward_manager/naive.py:42-43); `extra_info` may
  be missing (rl_dataset.py:400-401).
- A prompt's length is the token count of its chat-templated form with the
  generation prompt (rl_dataset.py:259-262); with
  `data.filter_overlong_prompts` (rl_dataset.py:119, default false in
  trainer/config/data/legacy_data.yaml:83) rows longer than
  `data.max_prompt_length` are dropped (rl_dataset.py:268-272), a row the
  template fails on counting as longer (rl_dataset.py:263-266); without it the
  agent loop left-truncates them (experimental/agent_loop/agent_loop.py:437-445).
- SFT (sft_trainer_ray, MultiTurnSFTDataset): `data.messages_key`
  (utils/dataset/multiturn_sft_dataset.py:103, :165) holds the conversation,
  each message's `role` read (:230) and `content` (:261); its length is the
  whole conversation through the chat template without the generation prompt
  (:433-441, which the per-turn concatenation must equal, :452), and a row
  longer than `data.max_length` raises with `data.truncation=error` (:390-391,
  :405-406).

The chat template needs the model's tokenizer (transformers, as verl's
hf_tokenizer, utils/tokenizer/tokenizer.py:152-176): a model directory without
tokenizer files (the CPU stand-in's) gets the schema and message checks only.
A verdict is kept in the preflight cache, keyed by the files' sizes and
mtimes, the tokenizer's files and the settings: a file checked once costs a
stat the next time."""
import hashlib
import json
import os
from pathlib import Path

from ...worker import fsutil
from ...worker.errors import MvpError

CACHE_VERSION = 1
# verl 0.9.1's defaults: trainer/config/data/legacy_data.yaml:27,35,83 and
# trainer/config/sft_trainer_engine.yaml:26,32,33. The job's overrides win.
RL_DEFAULTS = {"data.prompt_key": "prompt", "data.max_prompt_length": "512",
               "data.filter_overlong_prompts": "false"}
SFT_DEFAULTS = {"data.messages_key": "messages", "data.max_length": "1024", "data.truncation": "error"}
NAIVE = "verl/experimental/reward_loop/reward_manager/naive.py"
# A vocabulary: what a loadable tokenizer has beside its tokenizer_config.json.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt")
SHOWN_CHARS = 160


class Rules:
    """What the job's verl reads: the kind (rl or sft), the message column and
    the length limit, from the job's overrides over verl's defaults."""

    def __init__(self, kind: str, overrides: dict):
        values = dict(RL_DEFAULTS if kind == "rl" else SFT_DEFAULTS)
        values.update((k.lstrip("+"), str(v)) for k, v in overrides.items() if k.lstrip("+") in values)
        self.kind = kind
        self.column = _unquote(values["data.prompt_key" if kind == "rl" else "data.messages_key"])
        limit_key = "data.max_prompt_length" if kind == "rl" else "data.max_length"
        try:
            self.limit = int(values[limit_key])
        except ValueError:
            raise MvpError(f"{limit_key}={values[limit_key]}: must be a whole number of tokens") from None
        self.limit_key = limit_key
        self.filtered = kind == "rl" and values["data.filter_overlong_prompts"].lower() == "true"
        self.truncation = _unquote(values.get("data.truncation", ""))

    def key(self) -> list:
        return [self.kind, self.column, self.limit, self.filtered, self.truncation]


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


# ------------------------------------------------------------------ columns --
def _schema(path: Path, field: str):
    import pyarrow.parquet as pq
    try:
        return pq.read_schema(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... for what is not parquet
        raise MvpError(f"{field}: {path} is not a parquet file ({str(exc).splitlines()[0][:120]}); "
                       "write it with pyarrow or pandas (docs/your-data.md)") from None


def _require(schema, name: str, field: str, path: Path, why: str):
    if name not in schema.names:
        raise MvpError(f"{field}: {path} has no column '{name}' ({why}); its columns: {', '.join(schema.names)} "
                       "(docs/your-data.md)")
    return schema.field(name).type


def check_columns(path: Path, field: str, rules: Rules) -> None:
    """The columns verl reads, and their shapes, from the file's schema alone."""
    import pyarrow as pa
    schema = _schema(path, field)
    reads = ("verl applies the chat template to it: verl/utils/dataset/rl_dataset.py:259-261" if rules.kind == "rl"
             else "verl reads the conversation from it: verl/utils/dataset/multiturn_sft_dataset.py:165")
    kind = _require(schema, rules.column, field, path, reads)
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)) or not pa.types.is_struct(kind.value_type):
        raise MvpError(f"{field}: {path} column '{rules.column}' holds {kind}, not a list of messages "
                       "{role, content}; write each row as [{'role': 'user', 'content': '...'}] (docs/your-data.md)")
    for name in ("role", "content"):
        if kind.value_type.get_field_index(name) < 0:
            raise MvpError(f"{field}: {path} column '{rules.column}': its messages have no '{name}' field "
                           f"(they have: {', '.join(f.name for f in kind.value_type)}); each message is "
                           "{role, content}")
    if rules.kind == "rl":
        _require(schema, "data_source", field, path, f"the reward manager reads it: {NAIVE}:42")
        reward = _require(schema, "reward_model", field, path, f"the reward manager reads reward_model.ground_truth: "
                                                               f"{NAIVE}:43")
        if not pa.types.is_struct(reward) or reward.get_field_index("ground_truth") < 0:
            raise MvpError(f"{field}: {path} column 'reward_model' holds {reward}, not a struct with a "
                           f"'ground_truth' field ({NAIVE}:43 reads reward_model['ground_truth'])")


# --------------------------------------------------------------------- rows --
def _message_problem(messages) -> str:
    """What is wrong with one row's messages, or ""."""
    if not messages:
        return "is empty (or null): a prompt needs at least one message"
    for i, message in enumerate(messages):
        if message is None:
            return f"message {i} is null"
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not role:
            return f"message {i} has no role"
        if content is None:
            return f"message {i} ({role}) has no content"
    return ""


def read_rows(path: Path, field: str, rules: Rules) -> list:
    """Every row's messages, after checking each row's shape (the first bad row named)."""
    import pyarrow.parquet as pq
    columns = [rules.column] + (["reward_model"] if rules.kind == "rl" else [])
    table = pq.read_table(path, columns=columns)
    rows = table.column(rules.column).to_pylist()
    if not rows:
        raise MvpError(f"{field}: {path} has no rows; verl would train on nothing")
    for index, messages in enumerate(rows):
        problem = _message_problem(messages)
        if problem:
            raise MvpError(f"{field}: {path} row {index}: column '{rules.column}' {problem}; "
                           "each message is {role, content} (docs/your-data.md)")
    if rules.kind == "rl":
        for index, reward in enumerate(table.column("reward_model").to_pylist()):
            if not reward or reward.get("ground_truth") is None:
                raise MvpError(f"{field}: {path} row {index}: reward_model.ground_truth is null "
                               f"({NAIVE}:43 hands it to the reward function)")
    return [[{"role": m["role"], "content": m["content"]} for m in messages] for messages in rows]


# ---------------------------------------------------------------- tokenizer --
def has_tokenizer(model_dir: Path) -> bool:
    return any((model_dir / name).is_file() for name in TOKENIZER_FILES)


def load_tokenizer(model_dir: Path):
    """The tokenizer as verl loads it (AutoTokenizer, hf_tokenizer)."""
    import logging
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    from transformers import AutoTokenizer
    try:
        return AutoTokenizer.from_pretrained(str(model_dir))
    except Exception as exc:
        raise MvpError(f"model: {model_dir}: its tokenizer does not load ({str(exc).splitlines()[0][:160]}); "
                       "verl loads it the same way (AutoTokenizer)") from None


def _render(tokenizer, messages: list, rules: Rules, field: str, path: Path, index: int) -> str:
    try:
        return tokenizer.apply_chat_template(messages, add_generation_prompt=rules.kind == "rl", tokenize=False)
    except Exception as exc:
        raise MvpError(f"{field}: {path} row {index}: the model's chat template fails on it "
                       f"({type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''})") from None


def lengths(tokenizer, rows: list, rules: Rules, field: str, path: Path) -> list:
    """Every row's token count: its chat-templated text tokenized without
    special tokens, which is what apply_chat_template(tokenize=True) does
    (verl's count, rl_dataset.py:259-262), in one batch (a quarter less CPU
    on GSM8K). A row the template fails on is named (verl counts it as
    overlong when filtering, rl_dataset.py:263-266, and fails on it otherwise)."""
    texts = [_render(tokenizer, messages, rules, field, path, i) for i, messages in enumerate(rows)]
    return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def verdict_on_lengths(counts: list, rules: Rules, field: str, path: Path) -> str:
    """The line about rows longer than the limit, or an ERROR where verl would fail or train on nothing."""
    over = [i for i, n in enumerate(counts) if n > rules.limit]
    total, longest = len(counts), max(counts)
    head = f"{len(over)} of {total} rows longer than {rules.limit_key}={rules.limit} tokens (longest {longest})"
    if not over:
        return head
    if rules.kind == "sft":
        if rules.truncation == "error":
            raise MvpError(f"{field}: {path} row {over[0]}: {counts[over[0]]} tokens, more than {rules.limit_key}="
                           f"{rules.limit}, and data.truncation=error makes verl raise on it "
                           f"(verl/utils/dataset/multiturn_sft_dataset.py:390-391; {head}); raise "
                           f"{rules.limit_key} or set data.truncation=left or right")
        return f"{head}: verl truncates them ({rules.truncation})"
    if not rules.filtered:
        return (f"{head}: verl left-truncates them to rollout.prompt_length "
                "(verl/experimental/agent_loop/agent_loop.py:437-445)")
    if len(over) == total:
        raise MvpError(f"{field}: {path}: every row is longer than {rules.limit_key}={rules.limit} tokens (shortest "
                       f"{min(counts)}) and data.filter_overlong_prompts=true drops them all "
                       "(verl/utils/dataset/rl_dataset.py:268-272); raise the limit")
    return f"{head}: verl drops them (data.filter_overlong_prompts=true, verl/utils/dataset/rl_dataset.py:268-272)"


# -------------------------------------------------------------------- cache --
def _stat_key(path: Path) -> list:
    st = path.stat()
    return [str(path), st.st_size, st.st_mtime_ns]


def cache_file(cache_dir: Path, path: Path, field: str, rules: Rules, model_dir) -> Path:
    parts = [CACHE_VERSION, field, _stat_key(path), rules.key()]
    if model_dir is not None:
        parts.append([_stat_key(model_dir / n) for n in sorted(os.listdir(model_dir)) if n.startswith("tokenizer")
                      or n in ("chat_template.jinja", "special_tokens_map.json", "vocab.json", "merges.txt")])
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]
    return cache_dir / "data" / f"{digest}.json"


def _cached(cache) -> list:
    """The lines a verdict cached at cache holds; [] when none (or no cache)."""
    return ((fsutil.read_json(cache, {}) if cache else None) or {}).get("lines") or []


def check_file(path: Path, field: str, rules: Rules, model_dir, cache_dir, tokenizer_box: list) -> list:
    """The lines the preflight says about one file; raises on the first problem.
    model_dir None: no tokenizer to render with. tokenizer_box: the tokenizer,
    loaded once for all of a job's files."""
    cache = cache_file(cache_dir, path, field, rules, model_dir) if cache_dir else None
    hit = _cached(cache)
    if hit:
        return hit
    check_columns(path, field, rules)
    rows = read_rows(path, field, rules)
    lines = [f"{field}: {path.name}: {len(rows)} rows, columns and messages as verl {rules.kind.upper()} reads them"]
    if model_dir is not None:
        if not tokenizer_box:
            tokenizer_box.append(load_tokenizer(model_dir))
        text = _render(tokenizer_box[0], rows[0], rules, field, path, 0)
        shown = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."
        lines.append(f"{field}: row 0 through the model's chat template: {json.dumps(shown)}")
        lines.append(f"{field}: " + verdict_on_lengths(lengths(tokenizer_box[0], rows, rules, field, path),
                                                      rules, field, path))
    if cache:
        fsutil.write_cache(cache, {"lines": lines})
    return lines


def check(files: list, kind: str, overrides: dict, model_dir: Path, cache_dir) -> list:
    """files: (field, path) pairs. Returns the preflight's lines about them."""
    rules = Rules(kind, overrides)
    tokenizer_dir = model_dir if has_tokenizer(model_dir) else None
    box, lines = [], []
    for field, path in files:
        lines += check_file(path, field, rules, tokenizer_dir, cache_dir, box)
    if tokenizer_dir is None:
        lines.append(f"dataset: {model_dir} has no tokenizer files ({', '.join(TOKENIZER_FILES)}): "
                     "prompts not rendered nor counted")
    return lines

