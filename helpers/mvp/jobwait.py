"""Waiting on a submitted job: polling Ray until it ends, stopping it at its
deadline, then archiving it in its job directory (jobdir.finalize). When the
cluster goes away under the wait, the job is archived as LOST."""
import time

from . import jobdir, log
from .dashboard import TERMINAL, Dashboard
from .errors import MvpError

STOP_GRACE_S = 60
POLL_S = 0.5


class ClusterLost(Exception):
    """The dashboard stopped answering (or forgot the job) for longer than the grace."""

    def __init__(self, last: dict, evidence: str):
        super().__init__(evidence)
        self.last, self.evidence = last, evidence


def poll(dash: Dashboard, submission_id: str, seconds: float, on_status=None, lost_after: float = None) -> dict:
    """The job's details once it has ended, or the last ones seen when
    `seconds` pass first. on_status(status) is called on every change. With
    lost_after, a dashboard that does not answer, or no longer knows a job it
    knew, for that long raises ClusterLost instead of MvpError."""
    deadline = time.monotonic() + seconds
    last, gone_since, why = None, None, ""
    while True:
        try:
            job = dash.job(submission_id)
            if job is None and last is not None:
                why = f"Ray's dashboard at {dash.url} no longer knows the job (the cluster was restarted)"
        except MvpError as exc:
            if lost_after is None or last is None:
                raise
            job, why = None, str(exc)
        if job is None:
            if last is None:
                raise MvpError(f"Ray does not know job {submission_id}; see scripts/50_status.sh for the jobs it knows")
            gone_since = gone_since or time.monotonic()
            if time.monotonic() - gone_since > lost_after:
                raise ClusterLost(last, f"{why}; last status seen: {last['status']}")
            time.sleep(POLL_S)
            continue
        gone_since = None
        if on_status and job["status"] != (last or {}).get("status"):
            on_status(job["status"])
        last = job
        if job["status"] in TERMINAL or time.monotonic() > deadline:
            return job
        time.sleep(POLL_S)


def now(dash: Dashboard, submission_id: str) -> dict:
    """The job's details now (a poll with no time to wait)."""
    return poll(dash, submission_id, 0)


def _stop(dash: Dashboard, submission_id: str) -> dict:
    dash.stop_job(submission_id)
    return poll(dash, submission_id, STOP_GRACE_S)


def stop(dash: Dashboard, submission_id: str) -> dict:
    """Asks Ray to stop the job and waits (STOP_GRACE_S) until it has ended."""
    job = _stop(dash, submission_id)
    if job["status"] not in TERMINAL:
        raise MvpError(f"job {submission_id} is still {job['status']} {STOP_GRACE_S}s after the stop request")
    return job


def wait(jd, dash: Dashboard, submission_id: str, timeout: float, lost_after: float, node_ray_dirs: dict) -> dict:
    """Waits for the job to end, stopping it when the deadline passes, and
    archives it; a cluster that goes away for lost_after seconds makes it LOST."""
    try:
        job = poll(dash, submission_id, timeout, lambda status: log.info(f"job {submission_id}: {status}"),
                   lost_after=lost_after)
    except ClusterLost as lost:
        log.warn(f"job {submission_id}: the cluster went away ({lost.evidence}); archiving it as LOST")
        return jobdir.finalize_lost(jd, submission_id, lost.last, lost.evidence, node_ray_dirs)
    if job["status"] in TERMINAL:
        return jobdir.finalize(jd, dash, submission_id, job, node_ray_dirs=node_ray_dirs)
    log.step(f"job {submission_id}: still {job['status']} after {timeout:g}s (MVP_JOB_TIMEOUT); stopping it")
    return jobdir.finalize(jd, dash, submission_id, _stop(dash, submission_id), timed_out=True,
                           node_ray_dirs=node_ray_dirs)
