#!/usr/bin/env bats
# The learning probe's reward (templates/rewards/learning_probe.py) leaves a
# random tiny model room to learn on every data source step 30 prepares:
# replies drawn from the tokenizer 30 trains on that data score well below
# the cap at step 1, so a good night's score can rise and a broken one's not.

setup() {
  load ../test_helper/common
}

@test "learning probe: a random tiny model's replies start well below the reward's cap on the GSM8K files and on synthetic data; rewarding digits on synthetic data would start at the cap (no signal)" {
  run env PYTHONPATH="$MVP_REPO/helpers:$MVP_REPO/templates/rewards" "$MVP_REPO/.venv/bin/python" -c '
import json, random, sys
from mvp.data import gsm8k, tiny_model
import learning_probe as probe
rows = {"gsm8k": (gsm8k.DATA_SOURCE, [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]),
        "synthetic": (gsm8k.SYNTHETIC_SOURCE, gsm8k.synthetic("train", 3000))}
out = {}
for name, (source, data) in rows.items():
    tok = tiny_model._tokenizer([t for r in data[:tiny_model.TOKENIZER_ROWS] for t in (r["question"], r["answer"])])
    vocab = [tok.convert_tokens_to_string([t]) for t in tok.get_vocab()]
    rng = random.Random(0)
    # A random model samples its tokens about evenly: 48 of them, as the CPU profile lets a reply run.
    replies = ["".join(rng.choice(vocab) for _ in range(48)) for _ in range(200)]
    out[name] = round(sum(probe.compute_score(source, r, "") for r in replies) / len(replies), 3)
    out[name + "_digits"] = round(sum(probe.compute_score("other", r, "") for r in replies) / len(replies), 3)
print(json.dumps(out))' "$MVP_REPO/../shared/data/gsm8k/train.jsonl"
  assert_success
  jq -e '.gsm8k > 0.1 and .gsm8k < 0.4 and .synthetic > 0.05 and .synthetic < 0.4 and .synthetic_digits > 0.95' <<<"$output"
}
