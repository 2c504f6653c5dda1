"""Debug bundles: Ray's view of the cluster saved into the job directory, so a
failed night can be understood after the cluster is gone. The dashboard's
HTTP API gives what `ray status`, `ray job list`, `ray list nodes` and
`ray list actors` print, in milliseconds instead of four CLI start-ups."""
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from ...worker import fsutil
from ..inspection import progress
from ...core.dashboard import Dashboard
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ...worker.redact import Redactor, env_vars_masked

KINDS = {
    "ray_status": Dashboard.cluster_status,
    "job_list": Dashboard.jobs,
    "nodes": Dashboard.nodes,
    "actors": Dashboard.actors,
}


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


def collect(dash: Dashboard, debug_dir: Path, phase: str, redactor: Redactor, job_id: str = "") -> dict:
    """Phases: "submit" (taken while Ray takes the job, so its job list may or
    may not show it yet) and "final" (after the job ended). Writes
    debug/<UTC stamp>_<phase>_<kind>.json for each kind Ray answers; what it
    could not get goes to <stamp>_<phase>_errors.json. Returns {kind: data}.
    With the job's Ray job id, also "failed_tasks": the errors its Ray workers
    raised (a worker's exception is in no other kind: the driver's own
    message is often a later, secondary failure)."""
    when = stamp()
    got, errors = {}, {}
    kinds = dict(KINDS, failed_tasks=lambda d: d.failed_tasks(job_id)) if job_id else KINDS
    for kind, fetch in kinds.items():
        try:
            got[kind] = fetch(dash)
        except MvpError as exc:
            errors[kind] = str(exc)
            continue
        fsutil.write_json(debug_dir / f"{when}_{phase}_{kind}.json", redactor.obj(env_vars_masked(got[kind])))
    if errors:
        fsutil.write_json(debug_dir / f"{when}_{phase}_errors.json", errors)
    return got


def _iso_mtime(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def kept(jd: JobDir, phase: str, why: str) -> Path:
    """The bundle made from what the shared root holds, for when Ray cannot
    be asked (its head or GCS gone): debug/<stamp>_<phase>_kept.json names
    why, the job's Ray job id, every log kept in the job directory with its
    size and last write, the newest step they hold and the bundles taken
    while Ray answered (the submission's). Returns its path."""
    files = sorted(p for p in list(jd.logs.glob("*")) + list(jd.nodes.glob("*/*")) if p.is_file())
    job_hex = jd.ray_job_id
    data = {
        "why": why,
        "ray_job_id": job_hex.read_text(encoding="utf-8").strip() if job_hex.is_file() else None,
        "kept_logs": [{"path": str(p.relative_to(jd.path)), "bytes": p.stat().st_size, "last_written": _iso_mtime(p)}
                      for p in files],
        "progress": progress.of_job(jd),
        "bundles_from_ray": sorted(p.name for p in jd.debug.glob("*.json") if not p.name.endswith("_kept.json")),
    }
    path = jd.debug / f"{stamp()}_{phase}_kept.json"
    fsutil.write_json(path, data)
    return path


def kinds_present(debug_dir: Path) -> set:
    kinds = set()
    for p in debug_dir.glob("*.json"):
        for kind in KINDS:
            if p.name.endswith(f"_{kind}.json"):
                kinds.add(kind)
    return kinds


# Ended before its last step: what the bundle says of it (JobDir.cut_off).
CUT_OFF_STATUSES = ("FAILED", "LOST", "STOPPED")


def cut_off(jd: JobDir, status: str) -> Optional[str]:
    """For a job that ended FAILED, LOST or STOPPED before its last step,
    writes and returns `cut off at step N of M` (the newest step in any of
    its logs: Ray's copy of the driver's, the copies kept while it ran, the
    nodes' worker logs, where verl's TaskRunner logs its steps), naming the
    log it was read from and when that log was last written; None otherwise."""
    if status not in CUT_OFF_STATUSES:
        return None
    found, total = [], 0
    # A worker's steps are in its .out, its progress bar (the total) in its .err.
    for path in [jd.driver_log, jd.live_log] + sorted(jd.nodes.glob("*/worker-*")):
        if path.is_file():
            p = progress.of_file(path)
            if p:
                found.append((p["step"], path))
            total = max(total, progress.bar_total(path) or 0)
    if not found:
        line = f"cut off before its first step (ended {status}; no step line in {jd.logs})"
    else:
        step, path = max(found, key=lambda f: f[0])
        if total and step >= total:
            return None
        when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = (f"cut off at step {step}" + (f" of {total}" if total else "")
                + f" (ended {status}; newest step in {path.relative_to(jd.path)}, last written {when})")
    fsutil.write_text(jd.cut_off, line + "\n")
    return line
