"""Debug bundles: Ray's view of the cluster saved into the job directory, so a
failed night can be understood after the cluster is gone. The dashboard's
HTTP API gives what `ray status`, `ray job list`, `ray list nodes` and
`ray list actors` print, in milliseconds instead of four CLI start-ups."""
from datetime import datetime, timezone
from pathlib import Path

from . import fsutil
from .dashboard import Dashboard
from .errors import MvpError
from .redact import Redactor, env_vars_masked

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


def kinds_present(debug_dir: Path) -> set:
    kinds = set()
    for p in debug_dir.glob("*.json"):
        for kind in KINDS:
            if p.name.endswith(f"_{kind}.json"):
                kinds.add(kind)
    return kinds
