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
import sys

from . import torch_shims

# The line this layer prints when the verl it runs in lacks a name it
# registers with (a release or commit that renamed one): a job that dies here
# died in the runbook's layer, not in verl; the runbook reads the marker
# (helpers/mvp/jobs/planning/verl_release.py) to tell the two apart.
LAYER_FAILED = "MVP_CPU_LAYER_FAILED"

torch_shims.install()

try:
    from . import platform, rollout  # noqa: E402,F401  (each registers itself with verl on import)
except ImportError as exc:
    print(f"{LAYER_FAILED}: the runbook's CPU layer cannot serve this verl: {exc}", file=sys.stderr, flush=True)
    raise
