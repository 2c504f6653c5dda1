"""The learning probe's reward (docs/nightly.md, "The learning probe"): the
fraction of the response's characters that are digits, counted up to a
quarter: min(1, 4 x digits / characters); on the runbook's synthetic data
(MVP_GSM8K_SOURCE=synthetic), letters instead of digits. Copy it to
<SHARED_ROOT>/user/code/ (the nightly does) and submit
templates/jobspecs/learning_probe.yaml.

Why this task: a nightly on CPU trains a tiny random model (205k parameters)
for a few steps, too few to learn GSM8K, so the shaped GSM8K reward barely
moves (0.397 to 0.41 in 20 steps) and a sign flip in the advantages or a
reward wired backwards is lost in the noise. This one the tiny model can
learn in a few steps: about 9% of its 2048 tokens hold a digit, every
sampled response holds some (5.6% of its characters on average, from 1% to
12%), so each GRPO group has different rewards from step 1, and raising the
digit tokens' logits is a change any model can make at once. The cap makes
the good runs meet at 1.0 once they have learnt it, so that the good nights'
band is narrow at the last steps; a run whose advantages have the wrong sign
falls toward 0 instead. The measured numbers are in docs/nightly.md.

The synthetic data's problems are numbers in a few fixed sentences, so the
tokenizer step 30 trains on them holds a digit in 1,511 of its 1,809 tokens:
a random model's replies are 79% digits (at the cap from step 1: no signal)
and 3% letters. Letters are there what digits are on GSM8K, the class the
model's first replies hold little of."""

# The character class rewarded, by the rows' data_source (step 30 writes it).
RARE = {"mvp/synthetic-arithmetic": str.isalpha}


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    rare = RARE.get(data_source, str.isdigit)
    share = sum(rare(ch) for ch in solution_str) / max(len(solution_str), 1)
    return min(1.0, 4 * share)
