"""Waiting on a submitted job: polling Ray until it ends, stopping it at its
deadline, then archiving it in its job directory (archive.finalize). When the
cluster goes away under the wait, the job is archived as LOST. While it
runs, its progress (progress.py) shows: a line rewritten in place on a
terminal, a plain line at most every PROGRESS_LINE_S otherwise (cron, CI)."""
import sys
import time

from . import archive
from ..inspection import progress
from ...core import log
from ...core.dashboard import TERMINAL, Dashboard
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from .node_access import NodeAccess

STOP_GRACE_S = 60
POLL_S = 0.5
# How often the kept log is read for progress; how often a plain progress
# line may be printed when stderr is no terminal (a new step each time).
PROGRESS_READ_S = 2.0
PROGRESS_LINE_S = 60.0


class ClusterLost(Exception):
    """The dashboard stopped answering (or forgot the job) for longer than the grace."""

    def __init__(self, last: dict, evidence: str):
        super().__init__(evidence)
        self.last, self.evidence = last, evidence


def poll(dash: Dashboard, submission_id: str, seconds: float, on_status=None, lost_after: float = None,
         on_tick=None) -> dict:
    """The job's details once it has ended, or the last ones seen when
    `seconds` pass first. on_status(status) is called on every change,
    on_tick(job) after every answer while the job has not ended. With
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
        if on_tick:
            on_tick(job)
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


class ProgressShown:
    """The job's progress as its kept log shows it, printed when it moves."""

    def __init__(self, jd: JobDir, submission_id: str, terminal: bool):
        self.jd, self.sid, self.terminal = jd, submission_id, terminal
        self.read_at = self.printed_at = float("-inf")
        self.shown, self.open_line = None, False

    def tick(self, job: dict) -> None:
        now = time.monotonic()
        if job["status"] != "RUNNING" or now - self.read_at < PROGRESS_READ_S:
            return
        self.read_at = now
        p = progress.of_job(self.jd)
        if p is None or p["step"] == self.shown or (not self.terminal and now - self.printed_at < PROGRESS_LINE_S):
            return
        self.shown, self.printed_at = p["step"], now
        if self.terminal:
            sys.stderr.write(f"\r\x1b[Kjob {self.sid}: {progress.text(p)}")
            sys.stderr.flush()
            self.open_line = True
        else:
            log.info(f"job {self.sid}: {progress.text(p)}")

    def end_line(self) -> None:
        """Ends the line rewritten in place, before any other line."""
        if self.open_line:
            sys.stderr.write("\n")
            self.open_line = False


def wait(jd: JobDir, dash: Dashboard, submission_id: str, timeout: float, lost_after: float, nodes: NodeAccess) -> dict:
    """Waits for the job to end, stopping it when the deadline passes, and
    archives it (nodes: the way to its driver's node's own log); a cluster
    that goes away for lost_after seconds makes it LOST."""
    shown = ProgressShown(jd, submission_id, sys.stderr.isatty())

    def on_status(status: str) -> None:
        shown.end_line()
        log.info(f"job {submission_id}: {status}")

    try:
        job = poll(dash, submission_id, timeout, on_status, lost_after=lost_after, on_tick=shown.tick)
        shown.end_line()
    except ClusterLost as lost:
        shown.end_line()
        log.warn(f"job {submission_id}: the cluster went away ({lost.evidence}); archiving it as LOST")
        return archive.finalize_lost(jd, submission_id, lost.last, lost.evidence, nodes)
    if job["status"] in TERMINAL:
        return archive.finalize(jd, dash, submission_id, job, nodes)
    log.step(f"job {submission_id}: still {job['status']} after {timeout:g}s (MVP_JOB_TIMEOUT); stopping it")
    return archive.finalize(jd, dash, submission_id, _stop(dash, submission_id), nodes, timed_out=True)
