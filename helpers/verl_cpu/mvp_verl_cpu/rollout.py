"""The "hf" rollout: Hugging Face `generate` behind verl 0.9.1's server
interface, for CPU-only nodes (verl's own rollouts need vLLM, SGLang or
TRT-LLM and a GPU).

verl's v1 PPO path (main_ppo with trainer.use_v1, the default) talks to a
rollout through two registries, and "hf" is added to both:
- trainer side, verl/workers/rollout/replica.py:312-327 (RolloutReplicaRegistry):
  HFReplica starts one HFRolloutServer actor per replica on the node of the
  replica's first worker; verl's agent loop sends it token-in/token-out
  requests (`server.generate.remote(...)`, verl/workers/rollout/llm_server.py:150);
- worker side, verl/workers/rollout/base.py:89-93 (_ROLLOUT_REGISTRY): the
  actor workers build HFServerAdapter (verl/workers/engine_workers.py:667)
  and hand it the trained weights after every step (engine_workers.py:804),
  which it forwards to its replica's server.
The requests verl's agent loop sends at once (a step's prompts times
rollout.n, every one its own `generate` call) are answered by one batched
`generate`, left-padded: the same tokens and log-probs as one at a time, at
an eighth of the CPU (16 prompts of 100 tokens, 48 new tokens each, on 2
cores: 8.7 CPU-s one at a time, 1.1 s batched).

Under verl's rollout.full_determinism a request's id is "det-<priority>"
(verl/experimental/agent_loop/single_turn_agent_loop.py:69, passed through at
verl/workers/rollout/llm_server.py:90-95) instead of a fresh uuid. The
priority is the sample's index in the step where AgentLoopManager sets it
(agent_loop.py:1244-1245); the V1 trainer's agent loop (the default,
verl/trainer/ppo/v1/agent_loop_tq.py) sets none, so there every request is
"det-0" (run()'s default, single_turn_agent_loop.py:38) and the id-hash
routing (verl/workers/rollout/router.py:193-196) sends all to one replica.
Such requests are sampled each from its own random stream (SeededSampling),
seeded by rollout.seed, the step, the id, the prompt and how many requests
of that id and prompt came before it at this step (one replica answers
them all, as the routing is by id): the n
copies of a prompt draw n different samples, and which samples a prompt's
group draws does not depend on which requests share a batch or the order
they arrive in (copies of a prompt are one group, so which copy draws which
of them does not matter), so two runs of the same code draw the same
samples at a step. (Not from step 2 on, on the V1 trainer: it trains on a
step's samples in the order they finished, so two runs' weights part in
their last bits; the CPU profile leaves full_determinism off.) Other
request ids (a fresh uuid each) are sampled by `generate` itself."""
import asyncio
import hashlib
from typing import Any, Optional

import ray
import torch
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from transformers.generation.logits_process import (LogitsProcessor, LogitsProcessorList, TemperatureLogitsWarper,
                                                    TopKLogitsWarper, TopPLogitsWarper)
from verl.workers.rollout.base import _ROLLOUT_REGISTRY, BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

NAME = "hf"
# A burst's requests arrive within milliseconds of each other; a batch holds
# at most MAX_BATCH of them (more wait for the next).
BATCH_WINDOW_S = 0.02
MAX_BATCH = 64
# verl's request ids under rollout.full_determinism.
DETERMINISTIC_ID = "det-"


def server_name(replica_rank: int) -> str:
    return f"mvp_cpu_hf_rollout_{replica_rank}"


def _model_path(model_config: Any) -> str:
    # HFModelConfig keeps the resolved local copy in local_path, the setting in path.
    return getattr(model_config, "local_path", None) or getattr(model_config, "path", None) or model_config["path"]


def request_seed(seed: int, step: Optional[int], request_id: str, prompt_ids: list, nth: int) -> int:
    """One sample's random stream: the rollout's seed, the step, its request
    id and prompt, and how many of the same came before it."""
    words = f"{seed}:{step or 0}:{request_id}:{nth}:{','.join(map(str, prompt_ids))}"
    return int.from_bytes(hashlib.sha256(words.encode()).digest()[:8], "big") & (2**63 - 1)


class SeededSampling(LogitsProcessor):
    """Sampling as `generate` samples (temperature, then top-k, then top-p),
    each row from its own torch.Generator: the Gumbel-max draw (the argmax of
    the warped logits plus Gumbel noise is a sample of their softmax), so
    `generate` runs greedy on the processor's scores. A row draws one noise
    vector per new token, so its draws never depend on the other rows."""

    def __init__(self, seeds: list, temperature: float, top_k: int, top_p: float) -> None:
        self.generators = [torch.Generator().manual_seed(s) for s in seeds]
        self.warpers = [TemperatureLogitsWarper(temperature)]
        if top_k > 0:
            self.warpers.append(TopKLogitsWarper(top_k))
        if top_p < 1.0:
            self.warpers.append(TopPLogitsWarper(top_p))

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        scores = scores.float()
        for warp in self.warpers:
            scores = warp(input_ids, scores)
        uniform = torch.stack([torch.rand(scores.shape[-1], generator=g) for g in self.generators]).to(scores.device)
        tiny = torch.finfo(torch.float32).tiny
        return scores - torch.log(-torch.log(uniform.clamp(min=tiny)))


class HFGenerator:
    """One replica's model, answering verl's generate requests (as a Ray
    actor: HFRolloutServer below)."""

    def __init__(self, model_path: str, response_length: int, trust_remote_code: bool, seed: int = 0) -> None:
        from transformers import AutoModelForCausalLM, GenerationConfig
        self.model = AutoModelForCausalLM.from_pretrained(
            model_path, torch_dtype=torch.float32, attn_implementation="sdpa", trust_remote_code=trust_remote_code)
        self.model.eval()
        self.generation = GenerationConfig.from_model_config(self.model.config)
        self.response_length = response_length
        self.seed = seed
        self.drawn: dict = {}  # (step, request id, prompt) -> deterministic requests of it so far
        self.global_steps: Optional[int] = None
        self.lock = asyncio.Lock()
        self.waiting: list = []  # (prompt_ids, params, future, stream seed or None) not yet in a batch
        self.serving = False

    async def generate(self, request_id: str, *, prompt_ids: list, sampling_params: dict, **kwargs) -> TokenOutput:
        future = asyncio.get_running_loop().create_future()
        self.waiting.append((list(prompt_ids), dict(sampling_params), future, self._stream(request_id, prompt_ids)))
        if not self.serving:
            self.serving = True
            asyncio.ensure_future(self._serve())
        return await future

    def _stream(self, request_id: str, prompt_ids: list) -> Optional[int]:
        """The seed of a deterministic request's stream (None: a uuid's, sampled by generate)."""
        if not str(request_id).startswith(DETERMINISTIC_ID):
            return None
        key = (self.global_steps, str(request_id), tuple(prompt_ids))
        nth = self.drawn[key] = self.drawn.get(key, -1) + 1
        return request_seed(self.seed, self.global_steps, str(request_id), list(prompt_ids), nth)

    async def _serve(self) -> None:
        """Answers the waiting requests in batches of equal sampling params;
        control calls (update_weights) wait for the batch that runs."""
        try:
            await asyncio.sleep(BATCH_WINDOW_S)  # the rest of the agent loop's burst
            while self.waiting:
                params, batch, rest = self.waiting[0][1], [], []
                for request in self.waiting:
                    (batch if request[1] == params and len(batch) < MAX_BATCH else rest).append(request)
                self.waiting = rest
                async with self.lock:
                    try:
                        outs = await asyncio.to_thread(self._generate_batch, [r[0] for r in batch], params,
                                                       [r[3] for r in batch])
                    except Exception as exc:  # each caller gets the error
                        outs = [exc] * len(batch)
                for (_, _, future, _), out in zip(batch, outs):
                    if not future.done():
                        (future.set_exception if isinstance(out, Exception) else future.set_result)(out)
        finally:
            self.serving = False

    def _generate(self, prompt_ids: list, params: dict) -> TokenOutput:
        return self._generate_batch([prompt_ids], params)[0]

    def _options(self, params: dict, seeds: Optional[list] = None) -> dict:
        """generate's options; requests that all have a stream (verl's
        deterministic ids) are sampled by SeededSampling, each from its own."""
        temperature = _temperature(params)
        top_k, top_p = int(params.get("top_k", -1) or -1), float(params.get("top_p", 1.0))
        options = dict(max_new_tokens=int(params.get("max_tokens") or self.response_length), do_sample=temperature > 0,
                       return_dict_in_generate=True, output_logits=True,
                       eos_token_id=self.generation.eos_token_id, pad_token_id=self.generation.pad_token_id)
        if temperature > 0 and seeds and all(seed is not None for seed in seeds):
            options.update(do_sample=False, logits_processor=LogitsProcessorList(
                [SeededSampling(seeds, temperature, top_k, top_p)]))
        elif temperature > 0:
            options.update(temperature=temperature, top_p=top_p, top_k=top_k if top_k > 0 else 0)
        return options

    def _generate_batch(self, prompts: list, params: dict, seeds: Optional[list] = None) -> list:
        """One `generate` over the prompts, left-padded (the attention mask
        keeps the padding out of every position's attention and position id)."""
        width = max(len(p) for p in prompts)
        pad = self.generation.pad_token_id or 0
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], dtype=torch.long)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long)
        options, temperature = self._options(params, seeds), _temperature(params)
        with torch.no_grad():
            out = self.model.generate(ids, attention_mask=mask, **options)
        # The raw logits (output_logits: before any processor), over the temperature.
        logits = torch.stack(out.logits, dim=1).float() if params.get("logprobs") else None
        if logits is not None and temperature > 0:
            logits = logits / temperature
        return [self._answer(out.sequences[i, width:].tolist(), None if logits is None else logits[i])
                for i in range(len(prompts))]

    def _answer(self, tokens: list, logits: Optional[torch.Tensor]) -> TokenOutput:
        """One sequence's answer: its tokens up to its first eos (generate pads
        a finished sequence on), and their log-probs as verl's actor
        recomputes them (the raw logits over the temperature, log-softmaxed)."""
        eos = _as_list(self.generation.eos_token_id)
        end = next((i + 1 for i, t in enumerate(tokens) if t in eos), len(tokens))
        tokens = tokens[:end]
        log_probs = None
        if logits is not None:
            chosen = torch.tensor(tokens, dtype=torch.long).unsqueeze(-1)
            log_probs = torch.log_softmax(logits[:end], dim=-1).gather(-1, chosen).squeeze(-1).tolist()
        finished = bool(tokens) and tokens[-1] in eos
        return TokenOutput(token_ids=tokens, log_probs=log_probs, stop_reason="completed" if finished else None,
                           extra_fields={"global_steps": self.global_steps})

    async def update_weights(self, state_dict: dict, global_steps: Optional[int] = None) -> int:
        async with self.lock:
            result = self.model.load_state_dict(state_dict, strict=False)
            # A tied lm_head is not in the trainer's state dict; anything else missing is a bug.
            missing = [k for k in result.missing_keys if k != "lm_head.weight"]
            if missing or result.unexpected_keys:
                raise RuntimeError(f"weights do not fit the rollout model: missing {missing[:5]}, "
                                   f"unexpected {result.unexpected_keys[:5]}")
            if global_steps != self.global_steps:
                self.drawn.clear()
            self.global_steps = global_steps
            return len(state_dict)

    # The replica's control calls (verl/workers/rollout/replica.py:265-300): a
    # process that keeps its weights and has no KV cache to free has nothing to do.
    async def wake_up(self) -> None: ...
    async def sleep(self) -> None: ...
    async def clear_kv_cache(self) -> None: ...
    async def release_kv_cache(self) -> None: ...
    async def resume_kv_cache(self) -> None: ...
    async def abort_all_requests(self, reject_request: bool = False) -> None: ...
    async def resume_generation(self) -> None: ...
    async def start_profile(self, **kwargs) -> None: ...
    async def stop_profile(self) -> None: ...


def _temperature(params: dict) -> float:
    """A request's temperature; 0 (or none given as 0) is greedy."""
    return float(params.get("temperature", 1.0) or 0.0)


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


HFRolloutServer = ray.remote(num_cpus=0)(HFGenerator)


class HFReplica(RolloutReplica):
    """One HFRolloutServer per replica, beside the replica's first worker."""

    async def launch_servers(self) -> None:
        node_ids = await asyncio.gather(*[
            worker.__ray_call__.remote(lambda self: ray.get_runtime_context().get_node_id())
            for worker in self.workers])
        server = HFRolloutServer.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_ids[0], soft=False),
            name=server_name(self.replica_rank), max_concurrency=self.max_concurrency,
        ).remote(_model_path(self.model_config), self.config.response_length,
                 bool(getattr(self.model_config, "trust_remote_code", False)), int(getattr(self.config, "seed", 0) or 0))
        self.servers = [server]
        self._server_handle = server
        # No HTTP server: verl reaches it through the handle; the address only names it.
        self._server_address = f"{NAME}-replica-{self.replica_rank}"


class HFServerAdapter(BaseRollout):
    """The actor worker's end: hands its replica's server the weights it trained."""

    def __init__(self, config, model_config, device_mesh, *args, **kwargs) -> None:
        super().__init__(config, model_config, device_mesh, *args, **kwargs)
        per_replica = (self.config.tensor_model_parallel_size * self.config.data_parallel_size
                       * self.config.pipeline_model_parallel_size)
        rank = torch.distributed.get_rank()
        self.replica_rank, self.is_leader = divmod(rank, per_replica)[0], rank % per_replica == 0

    async def resume(self, tags: list) -> None:
        return None

    async def release(self) -> None:
        return None

    async def update_weights(self, weights, wire_format: str = "named_tensors", **kwargs) -> None:
        if wire_format != "named_tensors":
            raise NotImplementedError(f"the hf rollout takes full named tensors, not {wire_format}")
        # Every rank drains the generator: it all-gathers each sharded (DTensor)
        # parameter (verl/workers/engine/fsdp/transformer_impl.py:1038-1045).
        state = {}
        for name, tensor in weights:
            if self.is_leader:
                state[name] = tensor.detach().to("cpu", torch.float32, copy=True)
        if self.is_leader:
            server = ray.get_actor(server_name(self.replica_rank))
            await server.update_weights.remote(state, kwargs.get("global_steps"))


RolloutReplicaRegistry.register(NAME, lambda: HFReplica)
_ROLLOUT_REGISTRY[(NAME, "async")] = f"{__name__}.HFServerAdapter"
