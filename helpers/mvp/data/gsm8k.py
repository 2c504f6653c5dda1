"""GSM8K rows in verl's RL schema and as SFT messages (REFERENCE.md)."""
import json
import random
import re
from pathlib import Path

from ..worker.errors import MvpError

INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
GROUND_TRUTH = re.compile(r"#### (\-?[0-9\.\,]+)")
DATA_SOURCE = "openai/gsm8k"
SYNTHETIC_SOURCE = "mvp/synthetic-arithmetic"
SPLITS = {"train": "train", "test": "test"}  # our split name -> upstream file stem
SYNTHETIC_ROWS = {"train": 3000, "test": 300}  # 11 PPO steps of 256: checkpoints at 10 and 11


def ground_truth(answer: str):
    m = GROUND_TRUTH.search(answer)
    return m.group(1).replace(",", "") if m else None


def read_source(source: str) -> tuple:
    """Returns ({split: [{"question", "answer"}]}, data_source, description)."""
    if source == "synthetic":
        return {s: synthetic(s, n) for s, n in SYNTHETIC_ROWS.items()}, SYNTHETIC_SOURCE, "synthetic"
    if source == "hf":
        return _from_hub(), DATA_SOURCE, "hf:openai/gsm8k"
    d = Path(source)
    if not d.is_dir():
        raise MvpError(f"MVP_GSM8K_SOURCE={source} is not hf, synthetic or a directory")
    out = {}
    for split, stem in SPLITS.items():
        f = d / f"{stem}.jsonl"
        if not f.is_file():
            raise MvpError(f"MVP_GSM8K_SOURCE={source}: {f.name} is missing (want train.jsonl and test.jsonl)")
        rows = []
        with open(f, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        obj = json.loads(line)
                        rows.append({"question": obj["question"], "answer": obj["answer"]})
                    except (ValueError, KeyError, TypeError):
                        raise MvpError(f"{f} line {n}: not a JSON object with question and answer") from None
        out[split] = rows
    return out, DATA_SOURCE, f"dir:{d.resolve()}"


def _from_hub() -> dict:
    try:
        import datasets
    except ImportError:
        raise MvpError("MVP_GSM8K_SOURCE=hf needs the `datasets` package (the verl image has it) and the Hugging "
                       "Face hub; or set MVP_GSM8K_SOURCE to a directory with train.jsonl and test.jsonl") from None
    try:
        ds = datasets.load_dataset("openai/gsm8k", "main")
    except Exception as exc:
        raise MvpError(f"could not load openai/gsm8k from the Hugging Face hub ({str(exc).splitlines()[0]}); "
                       "set MVP_GSM8K_SOURCE to a directory with train.jsonl and test.jsonl") from None
    return {split: [{"question": r["question"], "answer": r["answer"]} for r in ds[stem]]
            for split, stem in SPLITS.items()}


def synthetic(split: str, n: int) -> list:
    """Small arithmetic word problems in GSM8K's format, the same every time."""
    rng = random.Random(f"mvp-synthetic-{split}")
    rows = []
    for _ in range(n):
        a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 9)
        total = (a + b) * c
        rows.append({
            "question": f"A crate holds {a} red and {b} blue balls. How many balls are in {c} such crates?",
            "answer": f"One crate holds {a} + {b} = <<{a}+{b}={a + b}>>{a + b} balls.\n"
                      f"{c} crates hold {a + b} * {c} = <<{a + b}*{c}={total}>>{total} balls.\n#### {total}",
        })
    return rows


def rl_rows(split: str, rows: list, data_source: str) -> tuple:
    """verl's gsm8k preprocessing, row for row; answers without a parsable
    '#### N' are returned by index instead of being written."""
    out, unparsable = [], []
    for index, r in enumerate(rows):
        gt = ground_truth(r["answer"])
        if gt is None:
            unparsable.append(index)
            continue
        out.append({
            "data_source": data_source,
            "prompt": [{"role": "user", "content": r["question"] + " " + INSTRUCTION}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": gt},
            "extra_info": {"split": split, "index": index, "answer": r["answer"], "question": r["question"]},
        })
    return out, unparsable


def sft_rows(rows: list) -> list:
    return [{"messages": [{"role": "user", "content": r["question"] + " " + INSTRUCTION},
                          {"role": "assistant", "content": r["answer"]}]} for r in rows]


def rl_schema():
    import pyarrow as pa
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    return pa.schema([
        ("data_source", pa.string()),
        ("prompt", pa.list_(message)),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct([("split", pa.string()), ("index", pa.int64()),
                                  ("answer", pa.string()), ("question", pa.string())])),
    ])


def sft_schema():
    import pyarrow as pa
    return pa.schema([("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])))])
