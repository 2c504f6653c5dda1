"""The three workloads the runbook submits, each as verl 0.9.1 runs it: the
trainer module (whose Hydra config the preflight reads and the snapshot step
pre-derives) and the overrides that point the trainer at the job's model.
One table, read by the JobSpec check, the plan, the snapshot step and the
nightly judge, so a workload is added in one place."""


class Workload:
    """One entry of the table. (A plain class, as plan.Plan: the submit path
    is benchmarked and dataclasses costs imports.)"""

    def __init__(self, name: str, trainer_module: str, model_keys: tuple, defaults: dict,
                 samples_per_prompt_key: str = "", always_saves_at_end: bool = False):
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


_ROLLOUT_N = "actor_rollout_ref.rollout.n"

WORKLOADS = {
    "ppo": Workload("ppo", "verl.trainer.main_ppo", ("actor_rollout_ref.model.path", "critic.model.path"), {},
                    samples_per_prompt_key=_ROLLOUT_N),
    "grpo": Workload("grpo", "verl.trainer.main_ppo", ("actor_rollout_ref.model.path",),
                     {"algorithm.adv_estimator": "grpo", _ROLLOUT_N: "5"}, samples_per_prompt_key=_ROLLOUT_N),
    "sft": Workload("sft", "verl.trainer.sft_trainer_ray", ("model.path",), {"data.messages_key": "messages"},
                    always_saves_at_end=True),
}

NAMES = tuple(WORKLOADS)


def trainer_modules() -> list:
    """Every trainer module, once each, sorted."""
    return sorted({w.trainer_module for w in WORKLOADS.values()})
