"""A shaped GSM8K reward for verl's reward.custom_reward_function: copy it to
<SHARED_ROOT>/user/code/ and submit with --reward-fn user/code/shaped_gsm8k.py
(or reward_fn_path in a JobSpec).

verl's own GSM8K rule gives 1.0 for a right final answer and 0.0 otherwise. A
model that cannot answer yet (the tiny random model of the CPU profile, or a
base model early on) then scores 0 on every sample, GRPO's group advantages
are all 0 and its actor learns nothing. This keeps the rule's 1.0 for a right
answer and gives partial credit for the answer's shape: the `#### N` marker
verl's rule looks for, and digits, so the gradient is not zero from step 1."""
import re

FINAL_ANSWER = re.compile(r"#### *(-?[0-9.,]+)")


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    answers = FINAL_ANSWER.findall(solution_str)
    if answers and answers[-1].replace(",", "").rstrip(".") == str(ground_truth).replace(",", ""):
        return 1.0
    digits = sum(ch.isdigit() for ch in solution_str) / max(len(solution_str), 1)
    return 0.1 * ("####" in solution_str) + 0.5 * digits
