"""Remote code for a Qwen2 critic on CPU, copied into a model directory as
modeling_mvp_cpu_critic.py (helpers/mvp/data/tiny_model.py does) and named in its
config.json's auto_map for AutoModelForTokenClassification.

verl 0.9.1 loads a critic (a value model) with attn_implementation=
"flash_attention_2" hard-coded (verl/utils/model.py:645-651, which ignores
override_config), and flash attention needs CUDA; when that load fails it
tries trl's value head and ends with "... is not a value head model, please
install trl". With critic.model.trust_remote_code=True transformers loads this
class instead, which keeps the request but runs it as sdpa. Self-contained:
transformers imports this file from the model directory."""
from transformers import Qwen2ForTokenClassification


class Qwen2CPUForTokenClassification(Qwen2ForTokenClassification):
    def _check_and_adjust_attn_implementation(self, attn_implementation, *args, **kwargs):
        if attn_implementation and attn_implementation.startswith("flash_attention"):
            attn_implementation = "sdpa"
        return super()._check_and_adjust_attn_implementation(attn_implementation, *args, **kwargs)
