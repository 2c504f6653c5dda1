"""The check `resumed`: did a job resumed from JOB/global_step_N really go on
from there? Used by `retry-from` (a chain whose last resumption did not go
on stops) and by the nightly judge (a retried night's job).

Two things are proven, each from verl's own output, never from the runbook's:
1. The first training step the resumed job logged (verl's `step:K` lines) is
   N + 1. A resume that restarted from step 1, or trained nothing at all and
   ended SUCCEEDED (verl issue 7401: a resume at an epoch boundary skips the
   next epoch and exits 0), fails here.
2. Its data position follows: the prompts it trained at step N + 1 are the
   ones the uninterrupted run trained at step N + 1. The batch of a step is
   read from verl's rollout dump (`trainer.rollout_data_dir`: verl writes
   `<dir>/<step>.jsonl` after the step, one line per sample with its prompt
   as `input`; verl/trainer/ppo/ray_trainer.py `_write_generations`). The
   uninterrupted run is an earlier job of the same chain that trained step
   N + 1 itself: it had trained steps 1..N straight through (it is the first
   job, or its own `resumed` check holds) and saved the checkpoint resumed
   from, or trained on from the same checkpoint. The prompts are compared as
   a multiset (verl's rollout order within a batch is not part of the data
   position). A job whose dump does not exist (rollout_data_dir not set, or a
   chain whose only failure came right at step N + 1) is "not judged" for
   this part, said so, never passed.
"""
import json
from collections import Counter
from pathlib import Path
from typing import Optional

from . import chain
from ...worker.jobdir import JobDir
from ...core import metrics

NAME = "resumed"
# The value a JobSpec may give trainer.rollout_data_dir so that each job dumps
# into its own checkpoint directory (verl resolves the interpolation).
DEFAULT_LOCAL_DIR = "${trainer.default_local_dir}"


def logged_steps(jd: JobDir) -> list:
    """The training steps the job's driver log shows (the archived copy, else
    the kept one). A line of validation metrics only is not one: verl
    validates at the checkpoint's step when a resumed run has
    val_before_train on, before it trains the next step."""
    text = jd.driver_log_text()
    if text is None:
        return []
    return [int(r["step"]) for r in metrics.step_lines(text) if any(k != "step" and not k.startswith("val") for k in r)]


def checkpoint_step(resumed_from: str) -> Optional[int]:
    """N of 'JOB/global_step_N'."""
    _, _, step = resumed_from.rpartition("/global_step_")
    return int(step) if step.isdigit() else None


def rollout_dir(jd: JobDir) -> Optional[Path]:
    """Where this job's verl dumped its rollouts, as this host sees the job
    directory; None when it dumped none, or outside its job directory."""
    res = jd.resolved()
    overrides = res.get("trainer_overrides") or {}
    if isinstance(overrides, list):
        overrides = dict(item.split("=", 1) for item in overrides if "=" in item)
    value = str(overrides.get("trainer.rollout_data_dir") or overrides.get("+trainer.rollout_data_dir") or "")
    if not value or value == "null":
        return None
    value = value.strip("'\"").replace(DEFAULT_LOCAL_DIR, str(overrides.get("trainer.default_local_dir", "")))
    node_job_dir = res.get("job_dir") or ""
    if not node_job_dir or not (value == node_job_dir or value.startswith(node_job_dir.rstrip("/") + "/")):
        return None
    return jd.path / value[len(node_job_dir.rstrip("/")):].lstrip("/")


def batch(jd: JobDir, step: int) -> Optional[Counter]:
    """The prompts the job trained at `step`, from verl's rollout dump, or None."""
    d = rollout_dir(jd)
    path = d / f"{step}.jsonl" if d else None
    if path is None or not path.is_file():
        return None
    prompts = Counter()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.strip():
            try:
                prompts[json.loads(line)["input"]] += 1
            except (ValueError, KeyError, TypeError):
                return None
    return prompts or None


def _result(passed, evidence: str) -> dict:
    return {"name": NAME, "passed": passed, "evidence": evidence}


def check(jobs: Path, sid: str, earlier: list) -> Optional[dict]:
    """The check for job `sid` (None when it resumed from nothing). `earlier`:
    the ids of the jobs of its chain before it, oldest first."""
    jd = JobDir.of(jobs, sid)
    resumed_from = jd.resolved().get("resumed_from") or ""
    if not resumed_from:
        return None
    n = checkpoint_step(resumed_from)
    if n is None:
        return _result(False, f"resumed from '{resumed_from}', which names no global_step_N")
    steps = logged_steps(jd)
    if not steps:
        return _result(False, f"resumed from {resumed_from} but logged no training step: it did not go on "
                              "(verl 7401 ends such a run SUCCEEDED)")
    if steps[0] != n + 1:
        return _result(False, f"first logged step {steps[0]}, not {n + 1}: it did not go on from {resumed_from}")
    said = f"first logged step {n + 1} = {resumed_from} + 1"
    mine = batch(jd, n + 1)
    if mine is None:
        return _result(None, f"{said}; data position not judged: no rollout dump of step {n + 1} in {sid} "
                             f"(set trainer.rollout_data_dir: {DEFAULT_LOCAL_DIR}/rollouts)")
    for ref in reversed(earlier):
        theirs = batch(JobDir.of(jobs, ref), n + 1)
        if theirs is None:
            continue
        if theirs == mine:
            return _result(True, f"{said}; the prompts of its {sum(mine.values())} samples of step {n + 1} are "
                                 f"those {ref} trained at step {n + 1}")
        return _result(False, f"{said}, but {sum((mine - theirs).values())} of its {sum(mine.values())} samples "
                              f"of step {n + 1} have prompts {ref} did not train at step {n + 1}: "
                              "the data position did not follow")
    return _result(None, f"{said}; data position not judged: no earlier job of the chain dumped its step {n + 1}")


def main(args, settings) -> int:
    """`resumed ID`: the check as one JSON line; exit 1 when it failed."""
    jobs = settings.jobs_dir
    result = check(jobs, args.submission_id, chain.before(jobs, args.submission_id))
    print(json.dumps(result))
    return 1 if result and result["passed"] is False else 0
