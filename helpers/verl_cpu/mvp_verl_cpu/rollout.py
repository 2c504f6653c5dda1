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
Requests are served one at a time (the model is tiny and the cores few)."""
import asyncio
from typing import Any, Optional

import ray
import torch
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from verl.workers.rollout.base import _ROLLOUT_REGISTRY, BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

NAME = "hf"


def server_name(replica_rank: int) -> str:
    return f"mvp_cpu_hf_rollout_{replica_rank}"


def _model_path(model_config: Any) -> str:
    # HFModelConfig keeps the resolved local copy in local_path, the setting in path.
    return getattr(model_config, "local_path", None) or getattr(model_config, "path", None) or model_config["path"]


class HFGenerator:
    """One replica's model, answering verl's generate requests (as a Ray
    actor: HFRolloutServer below)."""

    def __init__(self, model_path: str, response_length: int, trust_remote_code: bool) -> None:
        from transformers import AutoModelForCausalLM, GenerationConfig
        self.model = AutoModelForCausalLM.from_pretrained(
            model_path, torch_dtype=torch.float32, attn_implementation="sdpa", trust_remote_code=trust_remote_code)
        self.model.eval()
        self.generation = GenerationConfig.from_model_config(self.model.config)
        self.response_length = response_length
        self.global_steps: Optional[int] = None
        self.lock = asyncio.Lock()

    async def generate(self, request_id: str, *, prompt_ids: list, sampling_params: dict, **kwargs) -> TokenOutput:
        async with self.lock:  # one request at a time; control calls wait their turn
            return await asyncio.to_thread(self._generate, list(prompt_ids), dict(sampling_params))

    def _generate(self, prompt_ids: list, params: dict) -> TokenOutput:
        temperature = float(params.get("temperature", 1.0) or 0.0)
        sample = temperature > 0
        top_k = int(params.get("top_k", -1) or -1)
        options = dict(max_new_tokens=int(params.get("max_tokens") or self.response_length), do_sample=sample,
                       return_dict_in_generate=True, output_logits=True,
                       eos_token_id=self.generation.eos_token_id, pad_token_id=self.generation.pad_token_id)
        if sample:
            options.update(temperature=temperature, top_p=float(params.get("top_p", 1.0)), top_k=top_k if top_k > 0 else 0)
        ids = torch.tensor([prompt_ids], dtype=torch.long)
        with torch.no_grad():
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), **options)
        tokens = out.sequences[0, len(prompt_ids):].tolist()
        log_probs = None
        if params.get("logprobs"):
            # As verl's actor recomputes them: the raw logits over the temperature,
            # log-softmaxed, at each generated token.
            logits = torch.stack(out.logits, dim=1)[0].float()
            if sample:
                logits = logits / temperature
            chosen = torch.tensor(tokens, dtype=torch.long).unsqueeze(-1)
            log_probs = torch.log_softmax(logits, dim=-1).gather(-1, chosen).squeeze(-1).tolist()
        finished = bool(tokens) and tokens[-1] in _as_list(self.generation.eos_token_id)
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
                 bool(getattr(self.model_config, "trust_remote_code", False)))
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
