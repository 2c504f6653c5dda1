"""verl's max_ckpt_to_keep across a resume (verl issue 7395).

verl removes old checkpoints only among those its own process saved
(verl/utils/checkpoint/checkpoint_manager.py: BaseCheckpointManager keeps
`previous_saved_paths`, empty at every start, and register_checkpoint removes
the oldest beyond max_ckpt_to_keep). A resumed run never removes the
checkpoint it loaded, nor any other an earlier process saved. Here every
resumption is a new job writing into its own directory (--retry,
--resume-from), so a chain of jobs is one training run whose checkpoints lie
in several directories, each within the limit, all of them together not.

The runbook enforces the limit itself, after a resumed job is archived by a
wait: of the chain's complete checkpoints (a global_step_N no newer than its
job's latest_checkpointed_iteration.txt, with model shards), the newest
max_ckpt_to_keep stay and the older ones in the earlier jobs' directories are
removed. The limit is read from the job's own verl config values (the workload's
ckpt_keep_key, workloads.py: trainer.max_ckpt_to_keep for SFT,
trainer.max_actor_ckpt_to_keep for PPO/GRPO); verl itself is not changed. The job's own directory is verl's."""
import shutil
from pathlib import Path
from typing import Optional

from ...core import log
from ...worker.jobdir import JobDir
from .workloads import WORKLOADS

TRACKER = "latest_checkpointed_iteration.txt"


def _key(resolved: dict) -> str:
    """The workload's limit key ("" for a workload the table does not know: no limit)."""
    workload = WORKLOADS.get(resolved.get("workload", ""))
    return workload.ckpt_keep_key if workload else ""


def limit(resolved: dict) -> Optional[int]:
    """The job's max_ckpt_to_keep (None: keep all, verl's default null or 0)."""
    overrides = {k.lstrip("+"): str(v) for k, v in (resolved.get("trainer_overrides") or {}).items()}
    value = overrides.get(_key(resolved), "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def complete(jd: JobDir) -> list:
    """(step, path) of the job's complete checkpoints, oldest first."""
    root = jd.checkpoints
    try:
        latest = int((root / TRACKER).read_text().strip())
    except (OSError, ValueError):
        return []
    out = []
    for d in root.glob("global_step_*"):
        step = d.name[len("global_step_"):]
        if step.isdigit() and int(step) <= latest and (any(d.glob("*world_size_*")) or any(d.glob("*/*world_size_*"))):
            out.append((int(step), d))
    return sorted(out)


def chain_back(jobs: Path, sid: str) -> list:
    """sid and the jobs it resumed from, through resolved.resumed_from, newest first."""
    ids, seen = [sid], {sid}
    while True:
        before = (JobDir.of(jobs, ids[-1]).resolved().get("resumed_from") or "").partition("/global_step_")[0]
        if not before or before in seen or not (jobs / before).is_dir():
            return ids
        ids.append(before)
        seen.add(before)


def enforce(jobs: Path, sid: str) -> list:
    """Removes the chain's checkpoints beyond the limit; returns their paths."""
    resolved = JobDir.of(jobs, sid).resolved()
    keep = limit(resolved)
    if not keep or not resolved.get("resumed_from"):
        return []
    ids = chain_back(jobs, sid)
    kept = sorted((cp for job in ids for cp in complete(JobDir.of(jobs, job))), key=lambda cp: cp[0])
    removed = [path for _, path in kept[:-keep] if path.parent.parent != jobs / sid]
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    if removed:
        log.info(f"job {sid}: {_key(resolved)}={keep} across its chain (verl issue 7395): removed "
                 + ", ".join(f"{p.parent.parent.name}/{p.name}" for p in removed))
    return removed
