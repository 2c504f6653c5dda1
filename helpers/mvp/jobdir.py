"""The job directory <shared_root>/jobs/<submission id>/: claimed once, never
reused; config/ at submission, logs/, debug/ and result.json when the job ends."""
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Optional

from . import bundle, fsutil
from .dashboard import TERMINAL, Dashboard
from .errors import MvpError
from .redact import Redactor
from .settings import Settings

SUBDIRS = ("config", "logs", "checkpoints", "debug")


def claim(job: Path) -> Path:
    """Creates the job directory; mkdir is atomic, so two submitters of one id
    cannot both win, and an existing directory is never touched."""
    job.parent.mkdir(parents=True, exist_ok=True)
    try:
        job.mkdir()
    except FileExistsError:
        raise MvpError(f"job directory {job} already exists; submission ids are never reused, "
                       "leave submission_id empty to get a new one") from None
    for sub in SUBDIRS:
        (job / sub).mkdir()
    return job


def job_dirs(settings: Settings) -> Iterable[Path]:
    if settings.jobs_dir.is_dir():
        for p in settings.jobs_dir.iterdir():
            if p.is_dir() and not p.name.startswith("."):
                yield p


def _iso(ms) -> Optional[str]:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat() if ms else None


def driver_location(job: dict, node_ips: dict, head_ids: set) -> dict:
    node_id = job.get("driver_node_id") or ((job.get("driver_info") or {}).get("node_id"))
    ip = (job.get("driver_info") or {}).get("node_ip_address") or node_ips.get(node_id)
    return {"driver_node_ip": ip, "driver_node_id": node_id,
            "driver_on_head": (node_id in head_ids) if node_id else None}


def summary_from_ray(job: dict, node_ips: dict, head_ids: set) -> dict:
    s = {"submission_id": job.get("submission_id"), "status": job.get("status"),
         "start_time": job.get("start_time"), "end_time": job.get("end_time"), "source": "ray"}
    s.update(driver_location(job, node_ips, head_ids))
    return s


def finalize(jd: Path, dash: Dashboard, submission_id: str, job: dict, timed_out: bool = False) -> dict:
    """Copies the driver log, takes the final debug bundle and writes result.json."""
    redactor = Redactor.for_job(job)
    try:
        fsutil.write_text(jd / "logs" / "driver.log", redactor.text(dash.job_logs(submission_id)))
    except MvpError as exc:
        fsutil.write_text(jd / "logs" / "driver.log.missing", f"{exc}\n")
    nodes = bundle.collect(dash, jd / "debug", "final", redactor).get("nodes", [])
    node_ips = {n["node_id"]: n["node_ip"] for n in nodes}
    head_ids = {n["node_id"] for n in nodes if n.get("is_head_node")}
    start, end = job.get("start_time"), job.get("end_time")
    result = {
        "submission_id": submission_id,
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
    fsutil.write_json(jd / "result.json", result)
    return result


def finalize_if_ended(jd: Path, dash: Dashboard, submission_id: str, job: dict) -> None:
    """For jobs submitted without --wait: the first status call after they end archives them."""
    if os.environ.get("MVP_DRY_RUN") == "1":
        return
    if job.get("status") in TERMINAL and (jd / "config").is_dir() and not (jd / "result.json").exists():
        try:
            finalize(jd, dash, submission_id, job)
        except OSError:
            pass  # read-only view of the share: archiving is left to a writer


STOP_GRACE_S = 60


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
        time.sleep(0.5)


def wait(jd: Path, dash: Dashboard, submission_id: str, timeout: float, log) -> dict:
    """Waits for the job to end, stopping it when the deadline passes; archives it."""
    job = poll(dash, submission_id, timeout, lambda status: log(f"job {submission_id}: {status}"))
    if job["status"] in TERMINAL:
        return finalize(jd, dash, submission_id, job)
    log(f"job {submission_id}: still {job['status']} after {timeout:g}s (MVP_JOB_TIMEOUT); stopping it")
    dash.stop_job(submission_id)
    job = poll(dash, submission_id, STOP_GRACE_S)
    return finalize(jd, dash, submission_id, job, timed_out=True)


def recent_jobs(settings: Settings, live: dict, limit: int) -> list:
    """Jobs Ray knows merged with the archive, newest first, so history
    survives a cluster restart."""
    rows = dict(live)
    for jd in job_dirs(settings):
        spec = fsutil.read_json(jd / "config" / "job_spec.json", {}) or {}
        result = fsutil.read_json(jd / "result.json")
        row = rows.setdefault(jd.name, {"submission_id": jd.name, "source": "archive"})
        row["workload"] = (spec.get("resolved") or {}).get("workload")
        if result:
            for key in ("status", "driver_node_ip", "driver_node_id", "driver_on_head"):
                row.setdefault(key, result.get(key))
            row.setdefault("start_time", result.get("start_time_ms"))
            if row.get("status") is None:
                row["status"] = result.get("status")
        row.setdefault("start_time", int(os.stat(jd).st_mtime * 1000))
    ordered = sorted(rows.values(), key=lambda r: r.get("start_time") or 0, reverse=True)
    return ordered[:limit]
