"""`retry-from ID`: where a failed job's chain goes on from, for 40-44's
--retry: prints JOB/global_step_N, the newest complete checkpoint of the
chain (the failed job's own, else the one it resumed from), or refuses in
one line when the job is not one to retry or the chain made no progress.

A chain is linked both ways without touching an ended job's directory:
each job's resolved.resumed_from ("JOB/global_step_N", plan._resume) points
back, and the retries' ids point forward (<first id>-r1, -r2, ...). No
progress: the failed job saved no checkpoint of its own, and another job of
its chain resumed from the same checkpoint failed at the same step without
saving one either: a retry would replay the same failure."""
from pathlib import Path
from typing import Optional

from ...worker import kv
from . import chain, resumed_check
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ...core import metrics

# What a retry answers: the trainer failed, or the cluster lost the job.
RETRIED = ("FAILED", "LOST")


def _record(jobs: Path, sid: str) -> tuple:
    """(result.json, resolved part of job_spec.json) of a job directory."""
    jd = JobDir.of(jobs, sid)
    result, resolved = jd.read_result(), jd.resolved()
    if result is None or not resolved:
        raise MvpError(f"job {sid}: {jd} holds no {jd.result.name} or {jd.spec.name}; only an archived runbook job "
                       "can be retried")
    return result, resolved


def own_checkpoint(jobs: Path, sid: str) -> Optional[str]:
    """JOB/global_step_N of the job's newest complete checkpoint (verl
    writes the tracker after a complete save), or None."""
    tracker = JobDir.of(jobs, sid).checkpoints / "latest_checkpointed_iteration.txt"
    try:
        step = int(tracker.read_text().strip())
    except (OSError, ValueError):
        return None
    return f"{sid}/global_step_{step}" if (tracker.parent / f"global_step_{step}").is_dir() else None


def last_step(jobs: Path, sid: str) -> Optional[int]:
    """The last training step the job's driver log shows (the final copy, else the kept one)."""
    text = JobDir.of(jobs, sid).driver_log_text()
    if text is None:
        return None
    rows = metrics.step_lines(text)
    return int(rows[-1]["step"]) if rows else None


def resume_point(jobs: Path, sid: str) -> str:
    result, resolved = _record(jobs, sid)
    status = result.get("status")
    if status not in RETRIED:
        raise MvpError(f"job {sid} ended {status}: only a FAILED or LOST job is retried")
    earlier = chain.before(jobs, sid)
    went_on = resumed_check.check(jobs, sid, earlier)
    # A resumption that trained but not from where it should have (wrong first
    # step, other prompts): going on from its checkpoints would compound it.
    if went_on and went_on["passed"] is False and resumed_check.logged_steps(JobDir.of(jobs, sid)):
        raise MvpError(f"job {sid} ended {status} and did not go on as resumed: {went_on['evidence']}; "
                       "the chain stops here")
    own = own_checkpoint(jobs, sid)
    if own:
        return own
    before = resolved.get("resumed_from") or ""
    if not before:
        raise MvpError(f"job {sid} ended {status} before its first checkpoint and resumed from none: "
                       "nothing to go on from; lower trainer.save_freq to keep more of a run")
    here = last_step(jobs, sid)
    for earlier in chain.members(jobs, sid):
        if earlier == sid or chain.resumed_from(jobs, earlier) != before:
            continue
        if own_checkpoint(jobs, earlier) is None and last_step(jobs, earlier) == here:
            where = f"at step {here}" if here is not None else "before its first step"
            raise MvpError(f"job {sid} ended {status} {where} as {earlier} did, both resumed from {before} and "
                           "neither saved a checkpoint: no progress, the chain stops here")
    return before


def main(args, settings) -> int:
    kv.emit(("resume_from", resume_point(settings.jobs_dir, args.submission_id)))
    return 0
