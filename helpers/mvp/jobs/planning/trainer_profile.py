"""The trainer profile (MVP_TRAINER_PROFILE): `gpu`, verl as it ships, on
GPU nodes; `cpu`, real verl 0.9.1 on CPU-only nodes through the project's two
extensions (helpers/verl_cpu) and the overrides of templates/profiles/cpu.yaml;
`gpu-smoke`, real verl on one GPU with the tiny model and the extensions' hf
rollout (templates/profiles/gpu-smoke.yaml, make gpu-smoke).

Also the checks that catch, before submission, a job that would otherwise
crash minutes later inside verl: a profile that does not match the cluster's
devices, and a model directory verl cannot train."""
import json
from pathlib import Path

from . import jobspec
from ...core import settings
from ...worker.errors import MvpError

# MVP_TRAINER_PROFILE's values: config/settings.contract lists them (config.sh checks a setting against them).
PROFILES = settings.choices("MVP_TRAINER_PROFILE")
# The profiles that train on GPUs, and so need accelerators Ray detected.
GPU_PROFILES = ("gpu", "gpu-smoke")
REPO = Path(__file__).resolve().parents[4]
PROFILE_DIR = REPO / "templates" / "profiles"
# On a cpu or gpu-smoke job's PYTHONPATH (after the snapshot): mvp_verl_cpu.
CPU_EXTENSIONS_DIR = REPO / "helpers" / "verl_cpu"
# Ray adds a resource "accelerator_type:<model>" to a node where it detects
# GPUs (or TPUs, NPUs); logical GPUs (`ray start --num-gpus` on a CPU-only
# node) come without one.
ACCELERATOR_PREFIX = "accelerator_type:"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


class Overlay:
    """What a profile adds to one workload's job: overrides and env vars."""

    def __init__(self, overrides: dict, env_vars: dict, pythonpath: str):
        self.overrides, self.env_vars, self.pythonpath = overrides, env_vars, pythonpath


def overlay(profile: str, workload: str) -> Overlay:
    if profile not in PROFILES:
        raise MvpError(f"MVP_TRAINER_PROFILE='{profile}' is not a profile; use one of {', '.join(PROFILES)}")
    if profile == "gpu":
        return Overlay({}, {}, "")
    path = PROFILE_DIR / f"{profile}.yaml"
    data = jobspec.load_yaml(path.read_text(encoding="utf-8"), str(path))
    overrides, env = {}, {}
    for i, section in enumerate(data["sections"]):
        if workload in section["workloads"]:
            where = f"{path}: sections[{i}]"
            env.update(jobspec.check_env_vars(section.get("env_vars"), f"{where}.env_vars"))
            overrides.update((key, jobspec.override_text(key, value, f"{where}.trainer_overrides"))
                             for key, value in (section.get("trainer_overrides") or {}).items())
    return Overlay(overrides, env, str(CPU_EXTENSIONS_DIR))


def is_standin(code_path: Path) -> bool:
    """The CPU stand-in's snapshots (tests/fixtures/verl_standin) train
    nothing and need no device and no model weights."""
    return (code_path / "verl" / "_standin").is_dir()


def accelerators(nodes: list) -> list:
    """'<resource> on <ip>' for every alive node whose accelerators Ray detected."""
    return [f"{name} on {node.get('node_ip')}" for node in nodes if node.get("state") == "ALIVE"
            for name in (node.get("resources_total") or {}) if name.startswith(ACCELERATOR_PREFIX)]


def check_cluster(profile: str, nodes: list) -> None:
    """The profile against the devices Ray found on the cluster's nodes."""
    found = accelerators(nodes)
    if profile == "cpu" and found:
        raise MvpError(f"MVP_TRAINER_PROFILE=cpu trains on CPUs with gloo, but this cluster has accelerators "
                       f"({', '.join(found[:3])}); unset MVP_TRAINER_PROFILE to train on them")
    if profile in GPU_PROFILES and not found:
        raise MvpError("this cluster's nodes have no accelerator Ray detected (their GPUs, if any, are logical), "
                       "and verl would die on CUDA/NCCL minutes into the job; set MVP_TRAINER_PROFILE=cpu to train "
                       "on CPUs, or run on GPU nodes")


def check_model(model_dir: Path) -> None:
    """verl loads weights and applies the tokenizer's chat template to every prompt."""
    if not any(p.name.endswith(WEIGHT_SUFFIXES) for p in model_dir.iterdir()):
        raise MvpError(f"model: {model_dir} has no weights (*.safetensors, *.bin); run "
                       "scripts/30_prepare_data_and_model.sh with a model that has them")
    if (model_dir / "chat_template.jinja").is_file():
        return
    try:
        config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    if not config.get("chat_template"):
        raise MvpError(f"model: {model_dir} has no chat template (chat_template.jinja or tokenizer_config.json's "
                       "chat_template), which verl applies to every prompt; use an instruct/chat model")
