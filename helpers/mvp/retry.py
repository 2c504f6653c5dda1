"""`retry-from ID`: where a failed job's chain goes on from, for 40-44's
--retry: prints JOB/global_step_N, the newest complete checkpoint of the
chain (the failed job's own, else the one it resumed from), or refuses in
one line when the job is not one to retry or the chain made no progress.

A chain is linked both ways: each job's resolved.resumed_from
("JOB/global_step_N", plan._resume) and the resumed_by list in the
result.json of the job whose checkpoint it took (link). No progress: the
failed job saved no checkpoint of its own, and another job resumed from the
same checkpoint failed at the same step without saving one either: a retry
would replay the same failure."""
from pathlib import Path
from typing import Optional

from . import fsutil
from .errors import MvpError
from .nightly import metrics

# What a retry answers: the trainer failed, or the cluster lost the job.
RETRIED = ("FAILED", "LOST")


def _record(jobs: Path, sid: str) -> tuple:
    """(result.json, resolved part of job_spec.json) of a job directory."""
    jd = jobs / sid
    result = fsutil.read_json(jd / "result.json")
    spec = fsutil.read_json(jd / "config" / "job_spec.json", {}) or {}
    if result is None or not spec.get("resolved"):
        raise MvpError(f"job {sid}: {jd} holds no result.json or job_spec.json; only an archived runbook job "
                       "can be retried")
    return result, spec["resolved"]


def own_checkpoint(jobs: Path, sid: str) -> Optional[str]:
    """JOB/global_step_N of the job's newest complete checkpoint (verl
    writes the tracker after a complete save), or None."""
    tracker = jobs / sid / "checkpoints" / "latest_checkpointed_iteration.txt"
    try:
        step = int(tracker.read_text().strip())
    except (OSError, ValueError):
        return None
    return f"{sid}/global_step_{step}" if (tracker.parent / f"global_step_{step}").is_dir() else None


def last_step(jobs: Path, sid: str) -> Optional[int]:
    """The last training step the job's driver log shows (the final copy, else the kept one)."""
    for name in ("driver.log", "driver.live.log"):
        path = jobs / sid / "logs" / name
        if path.is_file():
            rows = metrics.step_lines(path.read_text(encoding="utf-8", errors="replace"))
            return int(rows[-1]["step"]) if rows else None
    return None


def resume_point(jobs: Path, sid: str) -> str:
    result, resolved = _record(jobs, sid)
    status = result.get("status")
    if status not in RETRIED:
        raise MvpError(f"job {sid} ended {status}: only a FAILED or LOST job is retried")
    own = own_checkpoint(jobs, sid)
    if own:
        return own
    before = resolved.get("resumed_from") or ""
    if not before:
        raise MvpError(f"job {sid} ended {status} before its first checkpoint and resumed from none: "
                       "nothing to go on from; lower trainer.save_freq to keep more of a run")
    here = last_step(jobs, sid)
    owner = fsutil.read_json(jobs / before.partition("/")[0] / "result.json", {}) or {}
    for earlier in owner.get("resumed_by", []):
        if earlier != sid and own_checkpoint(jobs, earlier) is None and last_step(jobs, earlier) == here:
            where = f"at step {here}" if here is not None else "before its first step"
            raise MvpError(f"job {sid} ended {status} {where} as {earlier} did, both resumed from {before} and "
                           "neither saved a checkpoint: no progress, the chain stops here")
    return before


def link(jobs: Path, resumed_from: str, new_sid: str) -> None:
    """Records new_sid as resumed_by in the job it resumed from (its
    result.json, once archived); the other way is the new job's resumed_from."""
    old = resumed_from.partition("/")[0]
    path = jobs / old / "result.json"
    result = fsutil.read_json(path)
    if result is None:
        return
    result["resumed_by"] = [*result.get("resumed_by", []), new_sid]
    fsutil.write_json(path, result)


def main(args, settings) -> int:
    print(resume_point(settings.jobs_dir, args.submission_id))
    return 0
