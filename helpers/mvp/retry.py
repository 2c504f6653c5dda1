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
import re
from pathlib import Path
from typing import Optional

from . import kv, resumed
from .errors import MvpError
from .jobdir import JobDir
from .nightly import metrics

# What a retry answers: the trainer failed, or the cluster lost the job.
RETRIED = ("FAILED", "LOST")
# A retry's id: its chain's first id and its number (scripts/lib/submit.sh).
RETRY_ID = re.compile(r"^(?P<first>.+)-r(?P<n>[0-9]+)$")


def chain(jobs: Path, sid: str) -> list:
    """The ids of sid's chain: its first job and the retries named after it."""
    m = RETRY_ID.match(sid)
    first = m.group("first") if m else sid
    retries = [p.name for p in jobs.glob(f"{glob_escape(first)}-r*") if RETRY_ID.match(p.name)]
    return [first, *sorted(retries, key=lambda n: int(RETRY_ID.match(n).group("n")))]


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


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
    earlier = _before(jobs, sid)
    went_on = resumed.check(jobs, sid, earlier)
    # A resumption that trained but not from where it should have (wrong first
    # step, other prompts): going on from its checkpoints would compound it.
    if went_on and went_on["passed"] is False and resumed.logged_steps(jobs / sid):
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
    for earlier in chain(jobs, sid):
        if earlier == sid or resumed_from(jobs, earlier) != before:
            continue
        if own_checkpoint(jobs, earlier) is None and last_step(jobs, earlier) == here:
            where = f"at step {here}" if here is not None else "before its first step"
            raise MvpError(f"job {sid} ended {status} {where} as {earlier} did, both resumed from {before} and "
                           "neither saved a checkpoint: no progress, the chain stops here")
    return before


def _before(jobs: Path, sid: str) -> list:
    """The ids of sid's chain before it, oldest first."""
    ids = chain(jobs, sid)
    return ids[:ids.index(sid)] if sid in ids else []


def resumed_main(args, settings) -> int:
    """`resumed ID`: the check as one JSON line; exit 1 when it failed."""
    import json
    jobs = settings.jobs_dir
    result = resumed.check(jobs, args.submission_id, _before(jobs, args.submission_id))
    print(json.dumps(result))
    return 1 if result and result["passed"] is False else 0


def resumed_from(jobs: Path, sid: str) -> str:
    """The job's back link, JOB/global_step_N ("" for a job resumed from nothing)."""
    return JobDir.of(jobs, sid).resolved().get("resumed_from") or ""


def chain_of(jobs: Path, sid: str) -> list:
    """The ids of sid's retry chain, first to last ([sid] when it has none),
    for 50_status and the nightly's report. The forward links are the
    retries' names (<first>-r1, -r2, ...: a few stats, never a directory
    listing); each retry must name its checkpoint (resolved.resumed_from), so
    a job merely called like one is no link."""
    m = RETRY_ID.match(sid)
    first = m.group("first") if m and resumed_from(jobs, sid) and (jobs / m.group("first")).is_dir() else sid
    ids = [first]
    while (jobs / f"{first}-r{len(ids)}").is_dir() and resumed_from(jobs, f"{first}-r{len(ids)}"):
        ids.append(f"{first}-r{len(ids)}")
    return ids


def chain_text(ids: list) -> str:
    """`<first> -> -r1 -> -r2`."""
    return " -> ".join([ids[0], *(i[len(ids[0]):] for i in ids[1:])])


def main(args, settings) -> int:
    kv.emit(("resume_from", resume_point(settings.jobs_dir, args.submission_id)))
    return 0
