"""`status ID`: one job's status, as `ray job status ID` answers it, from one
HTTP call to the dashboard (GET /api/jobs/ID; Ray's CLI asks /api/version
first, after a second of Python start-up), else from the job archive.

Ray's rules (ray 2.60, ray/dashboard/modules/job/cli.py:80-95, `_log_job_status`):
SUCCEEDED is "Job 'ID' succeeded", STOPPED "Job 'ID' was stopped" (neither
shows Ray's message), FAILED "Job 'ID' failed" and any other status
"Status for job 'ID': STATUS", both followed by "Status message: ..." when Ray
has one. An id Ray does not know is an error (job_head.py:519-523: 404 "Job
ID does not exist"); here it is one only when the archive does not know it
either: a job Ray forgot (a restarted cluster) answers from its result.json."""
import json
import sys

from ..after_sending import archive
from . import progress
from ...worker import kv
from ...core.dashboard import Dashboard
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ...core.layout import check_id
from ...worker.redact import Redactor
from .status import last_known


def _from_ray(job: dict) -> dict:
    return {"submission_id": job.get("submission_id"), "status": job.get("status"), "source": "ray",
            "message": Redactor.for_job(job).text(job.get("message") or ""),
            "start_time_ms": job.get("start_time"), "end_time_ms": job.get("end_time"),
            "driver_node_ip": archive.driver_location(job, {}, set())["driver_node_ip"]}


def _from_archive(jd: JobDir, sid: str, down: str) -> dict:
    """What the job directory says: result.json's final status, else (the
    cluster does not answer) the last known one, with a "?" as 50 shows it."""
    result = jd.read_result()
    if result:
        return {"submission_id": sid, "status": result.get("status"), "source": "archive",
                "message": result.get("message") or "", "start_time_ms": result.get("start_time_ms"),
                "end_time_ms": result.get("end_time_ms"), "driver_node_ip": result.get("driver_node_ip")}
    known = last_known(jd) if down and jd.config.is_dir() else {}
    if known.get("status"):
        return {"submission_id": sid, "status": f"{known['status']}?", "source": "last_known",
                "message": f"the cluster does not answer; last known from {known['from']}",
                "start_time_ms": None, "end_time_ms": None, "driver_node_ip": None}
    where = f"the cluster does not answer ({down})" if down else "Ray does not know it"
    raise MvpError(f"job {sid}: no such job: {where} and {jd} holds no record of it; "
                   "list the jobs with scripts/50_status.sh")


def lookup(settings, dash: Dashboard, sid: str) -> dict:
    """The job as Ray has it (archived on the way when it ended, as 50
    does), else as the archive has it; MvpError when neither knows it."""
    jd = JobDir.of(settings.jobs_dir, check_id(sid, "SUBMISSION_ID"))
    try:
        job, down = dash.job(sid), ""
    except MvpError as exc:
        job, down = None, str(exc)
    if job is None:
        return _from_archive(jd, sid, down)
    archive.finalize_if_ended(jd, dash, sid, job, settings)
    row = _from_ray(job)
    # From the log its node keeps in the job directory: no Ray call.
    steps = progress.of_job(jd) if row["status"] == "RUNNING" else None
    if steps:
        row["progress"] = progress.text(steps)
    return row


def render(row: dict) -> str:
    """Ray's words for the status (cli.py:82-94), then where it came from."""
    sid, status, message = row["submission_id"], row["status"], row["message"]
    if status == "SUCCEEDED":
        lines = [f"Job '{sid}' succeeded"]
    elif status == "STOPPED":
        lines = [f"Job '{sid}' was stopped"]
    else:
        lines = [f"Job '{sid}' failed" if status == "FAILED" else f"Status for job '{sid}': {status}"]
        if message:
            lines.append(f"Status message: {message}")
    if row.get("progress"):
        lines.append(f"Progress: {row['progress']}")
    if row["source"] == "archive":
        lines.append("(from the job archive: Ray does not list it)")
    return "\n".join(lines)


def porcelain(row: dict) -> list:
    """The output contract's key=value pairs; a message of many lines is one line."""
    keys = ("submission_id", "status", "source", "start_time_ms", "end_time_ms", "driver_node_ip")
    pairs = [(k, row.get(k)) for k in keys]
    return pairs + [("message", " ".join((row.get("message") or "").split()))]


def main(args, settings) -> int:
    row = lookup(settings, Dashboard(settings.dashboard_url, timeout=5), args.submission_id)
    if args.porcelain:
        kv.emit(*porcelain(row))
    elif args.json:
        json.dump(row, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(render(row))
    # As 50 without an id: a cluster that does not answer is exit 1.
    return 1 if row["source"] == "last_known" else 0
