"""A tiny Qwen2-architecture model and its tokenizer, made here from nothing
but text (MVP_MODEL_SOURCE=tiny): what the CPU profile trains when no hub can
be reached. Random weights from a fixed seed, so the same texts give the same
files; about 200k parameters, trained by verl at a few seconds a step on CPU.

The same directory serves the critic of PPO: config.json's auto_map points
AutoModelForTokenClassification at helpers/verl_cpu's critic class, copied in
as remote code (it asks for sdpa where verl asks for flash attention)."""
import json
import shutil
from pathlib import Path

# The tokenizer learns from this many rows of (question, answer) text.
TOKENIZER_ROWS = 2000
VOCAB_SIZE = 2048
# Special tokens, by id: padding, and ChatML's turn markers (<|im_end|> ends a reply).
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CRITIC_SOURCE = Path(__file__).resolve().parents[2] / "verl_cpu" / "mvp_verl_cpu" / "critic_model.py"
CRITIC_MODULE = "modeling_mvp_cpu_critic"
CRITIC_CLASS = "Qwen2CPUForTokenClassification"


def _tokenizer(texts: list):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=list(SPECIALS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=SPECIALS[2], pad_token=SPECIALS[0],
                                   chat_template=CHAT_TEMPLATE)


def build(dest: Path, texts: list, seed: int = 0) -> None:
    """Writes the model, its tokenizer and the critic's remote code into the
    existing empty directory `dest`."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()  # 30's log is for people: one line per step
    tokenizer = _tokenizer(texts)
    pad, eos = (tokenizer.convert_tokens_to_ids(t) for t in (SPECIALS[0], SPECIALS[2]))
    config = Qwen2Config(vocab_size=VOCAB_SIZE, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         tie_word_embeddings=True, eos_token_id=eos, pad_token_id=pad, bos_token_id=None)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
    model.save_pretrained(dest, safe_serialization=True)
    tokenizer.save_pretrained(dest)
    shutil.copyfile(CRITIC_SOURCE, dest / f"{CRITIC_MODULE}.py")
    config_file = dest / "config.json"
    saved = json.loads(config_file.read_text(encoding="utf-8"))
    saved["auto_map"] = {"AutoModelForTokenClassification": f"{CRITIC_MODULE}.{CRITIC_CLASS}"}
    config_file.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n", encoding="utf-8")
