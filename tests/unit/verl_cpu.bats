#!/usr/bin/env bats
# The CPU extensions (helpers/verl_cpu/mvp_verl_cpu) against real verl 0.9.1
# (the pristine wheel tree make setup puts in .mvp/cache/verl-0.9.1) and the
# tiny model (helpers/mvp/data/tiny_model.py), without a cluster: each piece does
# what verl asks of it. The real jobs are in tests/real_verl.

setup_file() {
  load ../test_helper/common
  # One tiny model for the file, built from GSM8K's real questions.
  MVP_UNIT_MODEL=$BATS_FILE_TMPDIR/model
  export MVP_UNIT_MODEL
  build_tiny "$MVP_UNIT_MODEL" 0
}

setup() {
  load ../test_helper/common
}

# py CODE [ARG...]: CODE in the trainer's Python with the CPU profile's environment:
# verl from the wheel tree, this package named by VERL_USE_EXTERNAL_MODULES.
py() {
  VERL_USE_EXTERNAL_MODULES=mvp_verl_cpu VERL_PLATFORM=cpu \
    PYTHONPATH="$MVP_REPO/.mvp/cache/verl-0.9.1:$MVP_REPO/helpers/verl_cpu:$MVP_REPO/helpers" \
    "$MVP_REPO/.venv/bin/python" -c "$1" "${@:2}" 2>/dev/null
}

# build_tiny DIR SEED [DIR SEED...]: the tiny model from the first 300 GSM8K
# training questions into each DIR, with its SEED (several in one Python).
build_tiny() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c "
import json, sys
from pathlib import Path
from mvp.data import tiny_model
rows = [json.loads(l) for l in open('$MVP_TEST_GSM8K/train.jsonl')][:300]
for d, seed in zip(sys.argv[1::2], sys.argv[2::2]):
    Path(d).mkdir(parents=True, exist_ok=True)
    tiny_model.build(Path(d), [r['question'] + ' ' + r['answer'] for r in rows], seed=int(seed))
" "$@" 2>/dev/null
}

@test "platform: VERL_PLATFORM=cpu makes verl pick the CPU platform (device cpu, gloo), its workers ask Ray for MVP_CPU_RAY_RESOURCE, and \"hf\" is in both of verl's rollout registries (the trainer's replicas, the workers' adapters)" {
  # One Python (verl imported once) for the platform and the rollout registries.
  run py '
import verl, os
from verl.utils.device import get_device_name, get_nccl_backend, get_torch_device
from verl.plugin.platform.platform_manager import get_platform
p = get_platform()
print(type(p).__name__, get_device_name(), get_nccl_backend())
for r in ("GPU", "CPU", "worker_node"):
    os.environ["MVP_CPU_RAY_RESOURCE"] = r
    print(r, p.ray_resource_options(2))
dev = get_torch_device()
print("memory", dev.memory_reserved(), dev.mem_get_info()[1] > 0)
from verl.workers.rollout.replica import RolloutReplicaRegistry
from verl.workers.rollout.base import get_rollout_class
print("rollout", RolloutReplicaRegistry.get("hf").__name__, get_rollout_class("hf", "async").__name__)'
  assert_success
  assert_line "rollout HFReplica HFServerAdapter"
  assert_line "PlatformCPU cpu gloo"
  assert_line "GPU {'num_gpus': 2}"
  assert_line "CPU {'num_cpus': 2}"
  assert_line "worker_node {'resources': {'worker_node': 2}}"
  assert_line "memory 0 True"
}

@test "platform: chosen by name only: without VERL_PLATFORM, verl's probe passes it over and falls back to nvidia (CUDA)" {
  run env -u VERL_PLATFORM PYTHONPATH="$MVP_REPO/.mvp/cache/verl-0.9.1:$MVP_REPO/helpers/verl_cpu" \
    VERL_USE_EXTERNAL_MODULES=mvp_verl_cpu "$MVP_REPO/.venv/bin/python" -c '
from verl.utils.device import get_device_name
print(get_device_name())' 2>/dev/null
  assert_success
  assert_line --partial "Registered: ('nvidia', 'huawei', 'amd', 'cpu'). Falling back to 'nvidia'."
  assert_line cuda
}

@test "a verl that renamed a name the layer registers with (RolloutReplicaRegistry): import verl fails in the layer, which prints its MVP_CPU_LAYER_FAILED line, the one the runbook reads as the layer's death" {
  local tree=$BATS_TEST_TMPDIR/verl-renamed
  mkdir -p "$tree"
  cp -al "$MVP_REPO/.mvp/cache/verl-0.9.1/verl" "$tree/verl"
  local replica=$tree/verl/workers/rollout/replica.py
  sed 's/RolloutReplicaRegistry/ReplicaRegistry/g' "$replica" >"$replica.new"
  rm "$replica" && mv "$replica.new" "$replica"
  run --separate-stderr env VERL_USE_EXTERNAL_MODULES=mvp_verl_cpu VERL_PLATFORM=cpu \
    PYTHONPATH="$tree:$MVP_REPO/helpers/verl_cpu" "$MVP_REPO/.venv/bin/python" -c 'import verl'
  assert_failure
  grep -q "^MVP_CPU_LAYER_FAILED: the runbook's CPU layer cannot serve this verl: cannot import name 'RolloutReplicaRegistry'" <<<"$stderr"
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c '
import sys
from mvp.jobs.planning import verl_release
print(verl_release.died_in_layer(sys.stdin.read()))' <<<"$stderr"
  assert_output --regexp "^MVP_CPU_LAYER_FAILED: .*RolloutReplicaRegistry"
}

@test "torch shim: the backend string verl builds on CPU (cpu:gloo,cpu:gloo), which torch refuses, starts a gloo group" {
  run env PYTHONPATH="$MVP_REPO/helpers/verl_cpu" "$MVP_REPO/.venv/bin/python" -c '
import importlib.util, os, sys, torch, torch.distributed as dist
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1])
try:
    dist.init_process_group(backend="cpu:gloo,cpu:gloo", rank=0, world_size=1)
except Exception as exc:
    print("torch alone:", type(exc).__name__)
spec = importlib.util.spec_from_file_location("shims", sys.argv[2])
shims = importlib.util.module_from_spec(spec); spec.loader.exec_module(shims)
shims.install(); shims.install()
dist.init_process_group(backend="cpu:gloo,cpu:gloo", rank=0, world_size=1)
print("shimmed:", dist.get_backend())
print("kept:", shims._one_backend_per_device("cpu:gloo,cuda:nccl"), shims._one_backend_per_device("nccl"))
t = torch.ones(2)
print("pin_memory:", t.pin_memory() is t)' "$((40000 + RANDOM % 9000))" "$MVP_REPO/helpers/verl_cpu/mvp_verl_cpu/torch_shims.py" 2>/dev/null
  assert_success
  assert_line "torch alone: ValueError"
  assert_line "shimmed: cpu:gloo"
  assert_line "kept: cpu:gloo,cuda:nccl nccl"
  assert_line "pin_memory: True"
}

@test "tiny model: the same texts and seed give byte-identical files, another seed other weights" {
  # Both in one Python, another than the one that built the file's model.
  build_tiny "$BATS_TEST_TMPDIR/again" 0 "$BATS_TEST_TMPDIR/seed1" 1
  run diff -r "$MVP_UNIT_MODEL" "$BATS_TEST_TMPDIR/again"
  assert_success
  run cmp "$MVP_UNIT_MODEL/model.safetensors" "$BATS_TEST_TMPDIR/seed1/model.safetensors"
  assert_failure
  cmp "$MVP_UNIT_MODEL/tokenizer.json" "$BATS_TEST_TMPDIR/seed1/tokenizer.json"
}

@test "tiny model: its tokenizer renders verl's chat messages as ChatML and ends a reply with the model's eos; the critic loads as sdpa" {
  run py '
import json, sys
from transformers import AutoTokenizer, AutoModelForTokenClassification, AutoConfig
d = sys.argv[1]
tok = AutoTokenizer.from_pretrained(d)
print(repr(tok.apply_chat_template([{"role": "user", "content": "2+2?"}], tokenize=False, add_generation_prompt=True)))
print("eos", tok.eos_token, tok.eos_token_id == AutoConfig.from_pretrained(d).eos_token_id)
critic = AutoModelForTokenClassification.from_pretrained(d, attn_implementation="flash_attention_2", trust_remote_code=True)
print(type(critic).__name__, critic.config._attn_implementation)' "$MVP_UNIT_MODEL"
  assert_success
  assert_line "'<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n'"
  assert_line "eos <|im_end|> True"
  assert_line "Qwen2CPUForTokenClassification sdpa"
}

@test "rollout server: greedy generate returns at most max_tokens tokens, each with the log-prob the model itself gives it; trained weights replace the served ones (the next answer uses them), weights of another model are refused" {
  # One Python (torch and the generator's imports once), a fresh generator for each part.
  run py '
import asyncio, sys, torch
from mvp_verl_cpu.rollout import HFGenerator
g = HFGenerator(sys.argv[1], response_length=16, trust_remote_code=False)
prompt = [1, 5, 9, 200, 300, 2]
out = g._generate(prompt, {"temperature": 0, "max_tokens": 7, "logprobs": True})
print("tokens", len(out.token_ids) <= 7, len(out.token_ids) == len(out.log_probs) > 0)
again = g._generate(prompt, {"temperature": 0, "max_tokens": 7, "logprobs": True})
print("greedy repeats", again.token_ids == out.token_ids)
ids = torch.tensor([prompt + out.token_ids])
with torch.no_grad():
    logits = g.model(ids).logits[0, len(prompt) - 1:-1].float()
ref = torch.log_softmax(logits, -1).gather(-1, torch.tensor(out.token_ids).unsqueeze(-1)).squeeze(-1)
print("log-probs match", torch.allclose(ref, torch.tensor(out.log_probs), atol=1e-4))
sampled = g._generate(prompt, {"temperature": 1.0, "top_p": 1.0, "max_tokens": 5})
print("sampled", len(sampled.token_ids) <= 5, sampled.log_probs)
g = HFGenerator(sys.argv[1], response_length=8, trust_remote_code=False)
prompt = [1, 5, 9, 200]
before = g._generate(prompt, {"temperature": 0, "max_tokens": 4, "logprobs": True}).log_probs
state = {k: v + 0.05 * torch.randn_like(v) for k, v in g.model.state_dict().items() if k != "lm_head.weight"}
print("loaded", asyncio.run(g.update_weights(state, global_steps=3)) == len(state), g.global_steps)
after = g._generate(prompt, {"temperature": 0, "max_tokens": 4, "logprobs": True}).log_probs
print("changed", before != after)
try:
    asyncio.run(g.update_weights({"not.a.weight": torch.zeros(1)}))
except RuntimeError as exc:
    print("refused:", str(exc).split(":")[0])' "$MVP_UNIT_MODEL"
  assert_success
  assert_line "tokens True True"
  assert_line "greedy repeats True"
  assert_line "log-probs match True"
  assert_line "sampled True None"
  assert_line "loaded True 3"
  assert_line "changed True"
  assert_line "refused: weights do not fit the rollout model"
}

@test "rollout server: under verl's full_determinism each sample draws from its own stream: with every request det-0 (verl's V1 agent loop) the n copies of a prompt draw n samples, the same set in any batch or order of arrival; unique ids (det-N) draw the same alone or batched; another step or seed draws others; log-probs are the model's own" {
  run py '
import asyncio, sys, torch
from mvp_verl_cpu.rollout import HFGenerator
path = sys.argv[1]
prompts = [[1, 5, 9, 200, 300, 2], [1, 7], [1, 40, 41, 42, 43, 44, 45, 46, 47, 2, 1], [1, 8, 8]]
sp = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 10, "logprobs": True}
def burst(g, order, ids=None):
    """The requests (prompt indices) sent at once; the sets of token tuples each prompt drew."""
    async def go():
        return await asyncio.gather(*[g.generate((ids or {}).get(j, "det-0"), prompt_ids=prompts[i], sampling_params=sp)
                                      for j, i in enumerate(order)])
    outs = asyncio.run(go())
    return {i: sorted(tuple(o.token_ids) for o, k in zip(outs, order) if k == i) for i in set(order)}, outs
g = HFGenerator(path, response_length=12, trust_remote_code=False, seed=42)
first, outs = burst(g, [0, 0, 0, 0, 1, 1, 1, 1])
print("copies", len(set(first[0])), len(set(first[1])))
g = HFGenerator(path, response_length=12, trust_remote_code=False, seed=42)
again, _ = burst(g, [1, 0, 2, 1, 0, 1, 0, 3, 1, 0])
print("same sets in another order", again[0] == first[0] and again[1] == first[1])
g = HFGenerator(path, response_length=12, trust_remote_code=False, seed=42)
one_by_one = {0: sorted(tuple(burst(g, [0])[1][0].token_ids) for _ in range(4))}
print("same set one at a time", one_by_one[0] == first[0])
o = outs[0]
ids = torch.tensor([prompts[0] + o.token_ids])
with torch.no_grad():
    logits = g.model(ids).logits[0, len(prompts[0]) - 1:-1].float()
ref = torch.log_softmax(logits, -1).gather(-1, torch.tensor(o.token_ids).unsqueeze(-1)).squeeze(-1)
print("log-probs match", torch.allclose(ref, torch.tensor(o.log_probs), atol=1e-4))
g = HFGenerator(path, response_length=12, trust_remote_code=False, seed=42)
alone = burst(g, [0], {0: "det-3"})[0][0]
g = HFGenerator(path, response_length=12, trust_remote_code=False, seed=42)
batched = burst(g, [2, 1, 0, 3], {0: "det-9", 1: "det-8", 2: "det-3", 3: "det-6"})[0][0]
print("unique id alone = batched", alone == batched)
def set_with(**kw):
    g = HFGenerator(path, response_length=12, trust_remote_code=False, **{"seed": 42, **kw})
    return burst(g, [0, 0, 0, 0])[0][0]
g = HFGenerator(path, response_length=12, trust_remote_code=False, seed=42)
asyncio.run(g.update_weights({k: v for k, v in g.model.state_dict().items() if k != "lm_head.weight"}, global_steps=2))
print("another step differs", burst(g, [0, 0, 0, 0])[0][0] != first[0])
print("another seed differs", set_with(seed=7) != first[0])' "$MVP_UNIT_MODEL"
  assert_success
  assert_line "copies 4 4"
  assert_line "same sets in another order True"
  assert_line "same set one at a time True"
  assert_line "log-probs match True"
  assert_line "unique id alone = batched True"
  assert_line "another step differs True"
  assert_line "another seed differs True"
}

@test "rollout server: the seeded sampler draws from the warped softmax: 4000 streams over four tokens land within 0.03 of their probabilities, and top-k 2 or top-p 0.7 keep only the two likeliest, renormalised" {
  run py '
import torch
from mvp_verl_cpu.rollout import SeededSampling
probs = torch.tensor([0.5, 0.3, 0.15, 0.05])
def freq(**kw):
    s = SeededSampling(list(range(4000)), 1.0, kw.get("top_k", -1), kw.get("top_p", 1.0))
    picks = s(torch.zeros(4000, 1, dtype=torch.long), probs.log().repeat(4000, 1)).argmax(-1)
    return torch.bincount(picks, minlength=4).float() / 4000
def close(got, want):
    return bool((got - torch.tensor(want)).abs().max() < 0.03)
print("plain", close(freq(), probs.tolist()))
print("top-k 2", close(freq(top_k=2), [0.625, 0.375, 0, 0]))
print("top-p 0.7", close(freq(top_p=0.7), [0.625, 0.375, 0, 0]))
print("hotter", close(SeededSampling(list(range(4000)), 2.0, -1, 1.0)(torch.zeros(4000, 1, dtype=torch.long), probs.log().repeat(4000, 1)).argmax(-1).bincount(minlength=4).float() / 4000, (probs.sqrt() / probs.sqrt().sum()).tolist()))'
  assert_success
  assert_line "plain True"
  assert_line "top-k 2 True"
  assert_line "top-p 0.7 True"
  assert_line "hotter True"
}

@test "rollout server: requests sent at once (a step's prompts x n) are answered by one batched generate per sampling params, left-padded: each answer's tokens and log-probs are those of the same request alone" {
  run py '
import asyncio, sys, torch
from mvp_verl_cpu.rollout import HFGenerator
g = HFGenerator(sys.argv[1], response_length=16, trust_remote_code=False)
prompts = [[1, 5, 9, 200, 300, 2], [1, 7], [1, 40, 41, 42, 43, 44, 45, 46, 47, 2, 1], [1, 8, 8]]
greedy = {"temperature": 0, "max_tokens": 9, "logprobs": True}
alone = [g._generate(p, greedy) for p in prompts]
sizes = []
inner = g._generate_batch
g._generate_batch = lambda ps, params, seeds=None: sizes.append(len(ps)) or inner(ps, params, seeds)
async def burst():
    calls = [g.generate(str(i), prompt_ids=p, sampling_params=greedy) for i, p in enumerate(prompts)]
    calls.append(g.generate("x", prompt_ids=prompts[0], sampling_params={"temperature": 1.0, "max_tokens": 5}))
    return await asyncio.gather(*calls)
outs = asyncio.run(burst())
print("batches", sorted(sizes))
print("tokens equal", [o.token_ids for o in outs[:4]] == [a.token_ids for a in alone])
print("log-probs close", all(torch.allclose(torch.tensor(o.log_probs), torch.tensor(a.log_probs), atol=1e-4) for o, a in zip(outs, alone)))
print("sampled", len(outs[4].token_ids) <= 5, outs[4].log_probs)
g._generate_batch = lambda ps, params, seeds=None: 1 / 0
async def failing():
    return await asyncio.gather(*[g.generate(str(i), prompt_ids=p, sampling_params=greedy) for i, p in enumerate(prompts)], return_exceptions=True)
print("errors", [type(e).__name__ for e in asyncio.run(failing())])' "$MVP_UNIT_MODEL"
  assert_success
  assert_line "batches [1, 4]"
  assert_line "tokens equal True"
  assert_line "log-probs close True"
  assert_line "sampled True None"
  assert_line "errors ['ZeroDivisionError', 'ZeroDivisionError', 'ZeroDivisionError', 'ZeroDivisionError']"
}
