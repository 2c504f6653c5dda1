"""Archiving an ended job in its job directory (jobdir.JobDir): the driver
log (from the dashboard, else the driver's node, else the copy its node kept
to the driver's end), the final debug bundle, the fingerprint and
result.json; a job whose cluster went away before it ended is archived as
LOST with the evidence."""
import shlex
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from . import bundle, job_fingerprint, node_access
from ...worker import fsutil, log_keeper
from ...core import log
from ...core.dashboard import TERMINAL, Dashboard
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ...worker.redact import Redactor
from .node_access import NodeAccess

# How long archiving an ended job waits for the keeper of its log's last copy.
KEEPER_GRACE_S = 10


def _iso(ms) -> Optional[str]:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat() if ms else None


def driver_location(job: dict, node_ips: dict, head_ids: set) -> dict:
    node_id = job.get("driver_node_id") or ((job.get("driver_info") or {}).get("node_id"))
    ip = (job.get("driver_info") or {}).get("node_ip_address") or node_ips.get(node_id)
    return {"driver_node_ip": ip, "driver_node_id": node_id,
            "driver_on_head": (node_id in head_ids) if node_id else None}


def _driver_log_on_node(job: dict, submission_id: str, nodes: NodeAccess) -> Optional[str]:
    """Ray's own copy of the driver log, read from the directory of this host
    that holds the driver node's /tmp/ray (local runtime): it outlives the
    node's raylet, when the dashboard can no longer serve the log."""
    ip = (job.get("driver_info") or {}).get("node_ip_address")
    ray_dir = nodes.ray_dir(ip)
    if not ray_dir:
        return None
    copies = sorted(Path(ray_dir).glob(f"session_2*/logs/job-driver-{submission_id}.log"))
    return _read_log(copies[-1]) if copies else None


# What the helper runs in the driver's node (a POSIX shell there) to print
# Ray's own copy of the driver log: the newest session that has it.
_REMOTE_DRIVER_LOG = ('for f in /tmp/ray/session_2*/logs/job-driver-{sid}.log; do [ -f "$f" ] && l=$f; done; '
                      '[ -n "$l" ] && exec cat "$l"')
# How long the helper waits for that copy over ssh.
SSH_FETCH_S = 60


def _driver_log_over_ssh(job: dict, submission_id: str, nodes: NodeAccess) -> tuple:
    """(text, "") Ray's own copy of the driver log, read over ssh from the
    driver's node's Ray log directory (ssh runtime): the node answers when
    its Ray does not. (None, why) when it cannot be read; (None, "") when
    this runtime has no ssh way in."""
    ip = (job.get("driver_info") or {}).get("node_ip_address")
    argv = nodes.ssh_argv(ip)
    if not argv:
        return None, ""
    remote = _REMOTE_DRIVER_LOG.format(sid=shlex.quote(submission_id))
    try:
        done = subprocess.run(argv + [remote], stdin=subprocess.DEVNULL, capture_output=True, timeout=SSH_FETCH_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"; over ssh from {ip}: {exc}"
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return None, f"; over ssh from {ip}: exit {done.returncode}" + (f" ({err[-1]})" if err else " (no such file)")
    return done.stdout.decode("utf-8", errors="replace"), ""


def _read_log(path: Path) -> str:
    """A log as text, byte for byte: read_text's newline translation would
    turn a progress bar's carriage returns into line ends."""
    return path.read_bytes().decode("utf-8", errors="replace")


def _save_driver_log(jd: JobDir, dash: Optional[Dashboard], submission_id: str, job: dict, nodes: NodeAccess,
                     redactor: Redactor) -> None:
    why = "the dashboard is gone"
    live = jd.live_log
    if dash is not None:
        try:
            text = dash.job_logs(submission_id)
        except MvpError as exc:
            text, why = None, str(exc)
        if text == "" and live.is_file() and live.stat().st_size:
            # A Ray started again at the driver's address (a Kubernetes pod's
            # container restarted in place) answers for a log it never had.
            text, why = None, "Ray served an empty log where the driver's node kept one (its Ray started again?)"
    if dash is None or text is None:
        text = _driver_log_on_node(job, submission_id, nodes)
    if text is None:
        text, over_ssh = _driver_log_over_ssh(job, submission_id, nodes)
        why += over_ssh
        if text is not None:
            log.info(f"job {submission_id}: its driver log read over ssh from its node's Ray log directory")
    if text is None and jd.live_done.is_file() and live.is_file():
        # The driver's node kept its log to the driver's end: that is all of it.
        text = _read_log(live)
    if text is not None:
        fsutil.write_text(jd.driver_log, redactor.text(text))
        jd.driver_log_missing.unlink(missing_ok=True)
    else:
        kept = (f"; its node kept {live} while it ran (last copied {_mtime(live)})" if live.is_file()
                else "; no copy was kept while it ran")
        fsutil.write_text(jd.driver_log_missing, f"{why}; no copy on the driver's node either{kept}\n")


def _mtime(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wait_for_keepers(jd: JobDir, submission_id: str) -> None:
    """The ended job's directory must not change after archiving: the keepers
    of its driver's and its nodes' logs make their last copies first (at most
    KEEPER_GRACE_S in all; a keeper on a dead node holds nothing), and a node
    keeper that starts from now on copies nothing (JobDir.closed)."""
    if jd.logs.is_dir():
        fsutil.write_text(jd.closed, "")
    deadline = time.monotonic() + KEEPER_GRACE_S
    nodes = sorted(p for p in jd.nodes.glob("*") if p.is_dir())
    for copy in [jd.live_log] + nodes:
        if not log_keeper.wait_until_done(copy, max(0.0, deadline - time.monotonic())):
            log.warn(f"job {submission_id}: the keeper of {copy} still runs {KEEPER_GRACE_S:g}s after the job "
                     "ended; archiving without waiting for it")


def finalize(jd: JobDir, dash: Dashboard, submission_id: str, job: dict, nodes: NodeAccess,
             timed_out: bool = False) -> dict:
    """Copies the driver log (from the driver's node through nodes when Ray
    cannot serve it), takes the final debug bundle and writes result.json."""
    redactor = Redactor.for_job(job)
    _wait_for_keepers(jd, submission_id)
    _save_driver_log(jd, dash, submission_id, job, nodes, redactor)
    got = bundle.collect(dash, jd.debug, "final", redactor, job.get("job_id") or "")
    if not got:
        bundle.kept(jd, "final", f"the Ray dashboard at {dash.url} answered none of the bundle's questions")
    nodes = got.get("nodes", [])
    node_ips = {n["node_id"]: n["node_ip"] for n in nodes}
    head_ids = {n["node_id"] for n in nodes if n.get("is_head_node")}
    start, end = job.get("start_time"), job.get("end_time")
    result = {
        "submission_id": submission_id, "cluster": jd.cluster(),
        "status": job.get("status"),
        "message": redactor.text(job.get("message") or ""),
        "start_time": _iso(start), "end_time": _iso(end),
        "start_time_ms": start, "end_time_ms": end,
        "duration_s": round((end - start) / 1000, 3) if start and end else None,
        "driver_exit_code": job.get("driver_exit_code"),
        "head_node_ids": sorted(head_ids),
        "timed_out": timed_out,
        "finalized_at": datetime.now(timezone.utc).isoformat(),
    }
    result.update(driver_location(job, node_ips, head_ids))
    bundle.cut_off(jd, result["status"])
    job_fingerprint.write_job(jd, dash)
    jd.write_result(result)
    return result


def finalize_lost(jd: JobDir, submission_id: str, job: dict, evidence: str, nodes: NodeAccess) -> dict:
    """The cluster went away before the job ended: what is known of it, with
    status LOST and the evidence, so the record never says RUNNING forever."""
    redactor = Redactor.for_job(job)
    _save_driver_log(jd, None, submission_id, job, nodes, redactor)
    start = job.get("start_time")
    result = {
        "submission_id": submission_id, "cluster": jd.cluster(), "status": "LOST", "last_ray_status": job.get("status"),
        "message": redactor.text(evidence), "start_time": _iso(start), "end_time": None,
        "start_time_ms": start, "end_time_ms": None, "duration_s": None, "driver_exit_code": None,
        "head_node_ids": [], "timed_out": False, "finalized_at": datetime.now(timezone.utc).isoformat(),
    }
    result.update(driver_location(job, {}, set()))
    bundle.kept(jd, "final", result["message"])
    bundle.cut_off(jd, "LOST")
    job_fingerprint.write_job(jd, None)
    jd.write_result(result)
    return result


def finalize_if_ended(jd: JobDir, dash: Dashboard, submission_id: str, job: dict, settings) -> None:
    """For jobs submitted without --wait: the first status call after they end archives them."""
    if settings.dry_run:
        return
    if job.get("status") in TERMINAL and jd.config.is_dir() and not jd.archived():
        try:
            finalize(jd, dash, submission_id, job, node_access.from_settings(settings))
        except OSError:
            pass  # read-only view of the share: archiving is left to a writer
