"""The three workloads the runbook submits, each as verl 0.9.1 runs it: the
trainer module (whose Hydra config the preflight reads and the snapshot step
pre-derives) and the overrides that point the trainer at the job's model.
One table, read by the JobSpec check, the plan, the snapshot step, the
checkpoint limit, the nightly (its judge, resume fidelity, the resumed job's
checkpoint limit) and the bisection, so a workload is added in one place.
(The metric names the nightly and 51 read are verl's for every trainer
alike: core/metrics.py.)"""


class Workload:
    """One entry of the table. (A plain class, as plan.Plan: the submit path
    is benchmarked and dataclasses costs imports.)"""

    def __init__(self, name: str, trainer_module: str, model_keys: tuple, defaults: dict,
                 samples_per_prompt_key: str = "", always_saves_at_end: bool = False,
                 job_env: dict = None, refused_env: dict = None, dataset: str = "rl", selected_by: dict = None,
                 ckpt_keep_key: str = "", seed_key: str = "", resume_figures: tuple = (),
                 epoch_end_resume_trains_nothing: bool = False):
        self.name = name
        self.trainer_module = trainer_module
        # The overrides that take the model directory.
        self.model_keys = model_keys
        # What the runbook sets for this workload beyond the common overrides.
        self.defaults = defaults
        # The override that multiplies prompts into samples per step (GRPO/PPO
        # rollout.n); empty when one prompt is one sample (SFT).
        self.samples_per_prompt_key = samples_per_prompt_key
        # verl's SFT trainer saves at the last step whatever save_freq says.
        self.always_saves_at_end = always_saves_at_end
        # Set in the job's environment unless the JobSpec sets them.
        self.job_env = job_env or {}
        # Names the trainer refuses in the job's environment: name -> what to do instead.
        self.refused_env = refused_env or {}
        # The parquet schema its verl reads (datacheck.py): rl (RLHFDataset) or sft (MultiTurnSFTDataset).
        self.dataset = dataset
        # What a verl command line of trainer_module sets to be this workload
        # (cmdline.workload_of); empty: the module's plain workload.
        self.selected_by = selected_by or {}
        # verl's own keys in its config: the checkpoint limit (max_ckpt_to_keep,
        # ckpt_keep.py, and 60's resumed job) and the seed (61's probes).
        self.ckpt_keep_key, self.seed_key = ckpt_keep_key, seed_key
        # (verl's metric, the band's name) a resumed run is compared by, step by
        # step, with its uninterrupted reference (nightly/resume_fidelity.py).
        self.resume_figures = resume_figures
        # verl's trainer, resumed from a checkpoint saved at an epoch's end,
        # trains nothing of the next epoch (epoch_boundary.py): refused.
        self.epoch_end_resume_trains_nothing = epoch_end_resume_trains_nothing


_ROLLOUT_N = "actor_rollout_ref.rollout.n"
# verl 0.9.1's keys: the actor's checkpoint limit in ppo_trainer.yaml, the seed
# in its data (data/legacy_data.yaml); sft_trainer_engine.yaml has both under trainer.
_RL_KEYS = {"ckpt_keep_key": "trainer.max_actor_ckpt_to_keep", "seed_key": "data.seed"}
_SFT_KEYS = {"ckpt_keep_key": "trainer.max_ckpt_to_keep", "seed_key": "trainer.seed"}
_RL_FIGURES = (("critic/score/mean", "score"), ("actor/grad_norm", "grad_norm"))
# verl's multi-node guide sets it in the job's runtime_env.
_RL_ENV = {"TORCH_NCCL_AVOID_RECORD_STREAMS": "1"}
# sft_trainer_ray's driver trains in-process on trainer.device, which
# verl's auto_set_device makes cuda even when asked for cpu. A driver
# asks Ray for no GPU, and Ray before 2.60 then sets
# CUDA_VISIBLE_DEVICES="" ("No CUDA GPUs are available"); 0 here keeps
# the node's GPUs visible to it.
_SFT_ENV = {"RAY_ADDRESS": "auto", "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"}
# verl 0.9.1's main_ppo puts these names in the runtime_env of its own
# ray.init (verl/trainer/constants_ppo.py, get_ppo_ray_runtime_env), and Ray
# refuses to merge a job env var of the same name with it: the job would fail
# at start-up. Each with the way verl does want it set.
_MAIN_PPO_RESERVED_ENV = {
    "VERL_FULL_DETERMINISM": "set actor_rollout_ref.rollout.full_determinism=true instead",
    "VLLM_BATCH_INVARIANT": "set actor_rollout_ref.rollout.full_determinism=true instead",
    "VERL_RL_INSIGHT_ENABLE": "add rl_insight to trainer.logger instead",
    **{name: "verl forwards it from the driver's environment: set it in the nodes' environment before ray start"
       for name in ("PYTHONHASHSEED", "CUBLAS_WORKSPACE_CONFIG", "FLASH_ATTENTION_DETERMINISTIC",
                    "NCCL_DETERMINISTIC", "NCCL_ALGO")},
}

WORKLOADS = {
    "ppo": Workload("ppo", "verl.trainer.main_ppo", ("actor_rollout_ref.model.path", "critic.model.path"), {},
                    samples_per_prompt_key=_ROLLOUT_N, job_env=_RL_ENV, refused_env=_MAIN_PPO_RESERVED_ENV,
                    **_RL_KEYS, resume_figures=_RL_FIGURES),
    "grpo": Workload("grpo", "verl.trainer.main_ppo", ("actor_rollout_ref.model.path",),
                     {"algorithm.adv_estimator": "grpo", _ROLLOUT_N: "5"}, samples_per_prompt_key=_ROLLOUT_N,
                     job_env=_RL_ENV, refused_env=_MAIN_PPO_RESERVED_ENV,
                     selected_by={"algorithm.adv_estimator": "grpo"}, **_RL_KEYS, resume_figures=_RL_FIGURES),
    "sft": Workload("sft", "verl.trainer.sft_trainer_ray", ("model.path",), {"data.messages_key": "messages"},
                    always_saves_at_end=True, job_env=_SFT_ENV, dataset="sft", **_SFT_KEYS,
                    resume_figures=(("train/loss", "loss"), ("train/grad_norm", "grad_norm")),
                    epoch_end_resume_trains_nothing=True),
}

NAMES = tuple(WORKLOADS)
# A verl command line of any other module (a recipe): the runbook knows
# neither its model keys nor its data's schema, and checks what still applies.
CUSTOM = "custom"


def for_job(name: str, module: str = "") -> Workload:
    """The table's workload, or for `custom` one of the command line's module."""
    return WORKLOADS[name] if name in WORKLOADS else Workload(CUSTOM, module, (), {}, dataset="")


def trainer_modules() -> list:
    """Every trainer module, once each, sorted."""
    return sorted({w.trainer_module for w in WORKLOADS.values()})


def samples_per_prompt_key(name: str) -> str:
    """The override that multiplies a step's prompts into samples for the
    workload a job directory names ("" for SFT); a name the table does not
    know counts as an RL workload, as the judge always did."""
    return WORKLOADS[name].samples_per_prompt_key if name in WORKLOADS else _ROLLOUT_N


def always_saves_at_end(name: str) -> bool:
    return name in WORKLOADS and WORKLOADS[name].always_saves_at_end


def ckpt_keep_key(name: str) -> str:
    """verl's checkpoint-limit key for the workload a job names; a name the
    table does not know counts as an RL workload (60's resumed job)."""
    return WORKLOADS[name].ckpt_keep_key if name in WORKLOADS else _RL_KEYS["ckpt_keep_key"]
