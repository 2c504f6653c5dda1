"""The comparison side of bench/prepare_data.sh: GSM8K to RL and SFT parquet
the way verl's examples/data_preprocess/gsm8k.py does it (the `datasets`
library: load, map with indices, to_parquet), from the same local jsonl files.
Usage: python gsm8k_with_datasets.py SRC_DIR OUT_DIR"""
import os
import re
import sys

import datasets

INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'


def extract_solution(answer):
    return re.search("#### (\\-?[0-9\\.\\,]+)", answer).group(0).split("#### ")[1].replace(",", "")


def make_map_fn(split):
    def process_fn(example, idx):
        question_raw = example.pop("question")
        answer_raw = example.pop("answer")
        return {
            "data_source": "openai/gsm8k",
            "prompt": [{"role": "user", "content": question_raw + " " + INSTRUCTION}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": extract_solution(answer_raw)},
            "extra_info": {"split": split, "index": idx, "answer": answer_raw, "question": question_raw},
        }
    return process_fn


def sft(example):
    return {"messages": [{"role": "user", "content": example["question"] + " " + INSTRUCTION},
                         {"role": "assistant", "content": example["answer"]}]}


src, out = sys.argv[1:]
os.makedirs(out, exist_ok=True)
ds = datasets.load_dataset("json", data_files={"train": f"{src}/train.jsonl", "test": f"{src}/test.jsonl"})
for split in ("train", "test"):
    ds[split].map(make_map_fn(split), with_indices=True).to_parquet(f"{out}/{split}.parquet")
    ds[split].map(sft, remove_columns=["question", "answer"]).to_parquet(f"{out}/sft_{split}.parquet")
