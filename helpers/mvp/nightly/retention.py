"""Keeps the newest N nightly runs of this cluster with their job directories;
deletes older ones, but never a job that is still running, one a kept report
links to, or anything of another cluster that shares the root."""
import shutil
from pathlib import Path

from ..worker import fsutil, jobdir
from ..core import log
from ..core.rundir import Regressions, RunDir
from ..core.dashboard import TERMINAL, Dashboard


def _job_ids(run_dir: RunDir) -> set:
    report = run_dir.read_report() or run_dir.read_plan() or {}
    ids = {j["submission_id"] for j in report.get("jobs", []) if j.get("submission_id")}
    # A retried job's earlier attempts go (or stay) with it; so do the same-night control's probes (control.json).
    probes = fsutil.read_json(run_dir.control, {}) or {}
    ids |= {(probes.get(role) or {}).get("submission_id") for role in ("control", "candidate")} - {None}
    # And the reruns of jobs that failed their check regression alone (plan.json).
    ids |= {r["submission_id"] for r in (run_dir.read_plan({}) or {}).get("reruns") or [] if r.get("submission_id")}
    return ids | {a["submission_id"] for j in report.get("jobs", []) for a in j.get("attempts") or []}


def _is_of(run_dir: RunDir, cluster: str) -> bool:
    """A run without a cluster in its plan.json is older than cluster names: this cluster's."""
    return (run_dir.read_plan({}) or {}).get("cluster") in (None, cluster)


def prune(regressions: Path, jobs_dir: Path, keep: int, dash: Dashboard, cluster: str) -> list:
    every = Regressions(regressions).nights()
    runs = [r for r in every if _is_of(r, cluster)]
    others = [r for r in every if r not in runs]
    old, kept = runs[:-keep] if keep > 0 else runs, runs[-keep:] if keep > 0 else []
    linked = set().union(*(_job_ids(r) for r in kept + others)) if kept or others else set()
    running = set()
    if old and dash.alive():
        running = {j.get("submission_id") for j in dash.jobs() if j.get("status") not in TERMINAL}
    removed, removed_jobs = [], set()
    for run in old:
        spared = []
        for sid in sorted(_job_ids(run)):
            jd = jobdir.JobDir.of(jobs_dir, sid)
            if sid in running or sid in linked or not jobdir.is_of(jd, cluster):
                spared.append(sid)
                continue
            shutil.rmtree(jd, ignore_errors=True)
            removed_jobs.add(sid)
        if spared:
            log.step(f"retention: keeping {run.id} for jobs still running or linked: {', '.join(spared)}")
            continue
        shutil.rmtree(run.path)
        removed.append(run.id)
    jobdir.index_remove(jobs_dir, removed_jobs)
    if removed:
        log.step(f"retention: removed {len(removed)} run(s) beyond the newest {keep}: {', '.join(removed)}")
    return removed
