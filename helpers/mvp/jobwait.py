"""Waiting on a submitted job: polling Ray until it ends, stopping it at its
deadline, then archiving it in its job directory (jobdir.finalize)."""
import time

from . import jobdir, log
from .dashboard import TERMINAL, Dashboard
from .errors import MvpError

STOP_GRACE_S = 60
POLL_S = 0.5


def poll(dash: Dashboard, submission_id: str, seconds: float, on_status=None) -> dict:
    """The job's details once it has ended, or the last ones seen when
    `seconds` pass first. on_status(status) is called on every change."""
    deadline = time.monotonic() + seconds
    last = None
    while True:
        job = dash.job(submission_id)
        if job is None:
            raise MvpError(f"Ray does not know job {submission_id}; see scripts/50_status.sh for the jobs it knows")
        if on_status and job["status"] != last:
            on_status(job["status"])
        last = job["status"]
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


def wait(jd, dash: Dashboard, submission_id: str, timeout: float) -> dict:
    """Waits for the job to end, stopping it when the deadline passes; archives it."""
    job = poll(dash, submission_id, timeout, lambda status: log.info(f"job {submission_id}: {status}"))
    if job["status"] in TERMINAL:
        return jobdir.finalize(jd, dash, submission_id, job)
    log.step(f"job {submission_id}: still {job['status']} after {timeout:g}s (MVP_JOB_TIMEOUT); stopping it")
    return jobdir.finalize(jd, dash, submission_id, _stop(dash, submission_id), timed_out=True)
