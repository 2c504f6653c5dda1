"""The runbook's CPU extensions for verl 0.9.1, loaded by verl itself.

verl 0.9.1 has no CPU platform (it falls back to CUDA and NCCL when it finds
no accelerator) and its PPO path knows only vLLM, SGLang and TRT-LLM rollout
servers. This package adds both through verl's own hooks, without touching
verl: with `helpers/verl_cpu` on PYTHONPATH and

    VERL_USE_EXTERNAL_MODULES=mvp_verl_cpu   verl imports this at `import verl`
    VERL_PLATFORM=cpu                        selects the platform registered here
    VERL_ENGINE_DEVICE=cuda                  verl's FSDP engine, registered for cuda, runs on cpu
    MVP_CPU_RAY_RESOURCE=GPU|CPU             the Ray resource verl's workers ask for

in every process of the job (the runbook's CPU profile sets them in the job's
runtime_env: templates/profiles/cpu.yaml). README.md beside this package maps
each piece to the verl hook it uses."""
from . import torch_shims

torch_shims.install()

from . import platform, rollout  # noqa: E402,F401  (each registers itself with verl on import)
