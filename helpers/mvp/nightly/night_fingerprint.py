"""The night's environment fingerprint and what changed since the last good
night: the night's is its jobs' fingerprint.json (job_fingerprint.py) flattened
and merged; regressions/fingerprints.json keeps each night's (pruned: the
last good night's and the newest KEEP_NIGHTS stay) with what changed, for
the next night to compare against and for index.html."""
from html import escape
from pathlib import Path
from typing import Optional

from ..jobs.after_sending import job_fingerprint
from ..worker import fsutil
from ..worker.jobdir import JobDir
from ..core.rundir import Regressions, file_name, last_good
from . import judge

# The store's file name in regressions/ (Regressions.fingerprints).
STORE = file_name("fingerprints")
KEEP_NIGHTS = 30
# How many changes a night keeps in the store and index.html shows (the report shows all).
KEPT_CHANGES = 50
SHOWN_IN_INDEX = 6
SHOWN_IN_REPORT = 40


def of_night(jobs_dir: Path, jobs: list, code_id: Optional[str]) -> dict:
    """The night's flat fingerprint: a key every job that has it agrees on
    has its value; one they differ on has 'job value; job value'. A night with no job
    fingerprint (a step failed before the jobs) has its snapshot only."""
    flats = {}
    for job in jobs:
        fp = fsutil.read_json(JobDir.of(jobs_dir, str(job.get("submission_id"))).fingerprint) \
            if job.get("submission_id") else None
        if fp:
            flats[job["name"]] = job_fingerprint.flatten(fp)
    if not flats:
        return {"snapshot.id": code_id}
    night = {}
    for key in sorted({k for flat in flats.values() for k in flat}):
        values = {name: flat[key] for name, flat in flats.items() if key in flat}
        same = set(values.values())
        night[key] = same.pop() if len(same) == 1 else "; ".join(f"{n} {v}" for n, v in sorted(values.items()))
    return night


def add(report: dict, regressions: Path, jobs_dir: Path) -> None:
    """The judged night's fingerprint and what changed since the last good
    night into the report (`fingerprint`, `fingerprint_diff`), the judge's
    line beside its failures, and the night into regressions/fingerprints.json."""
    report["fingerprint"], report["fingerprint_diff"] = tonight(regressions, report["run_id"], jobs_dir,
                                                                report["jobs"], report.get("code_id"))
    judge.name_changed_fingerprint(report)
    remember(regressions, report)


def load(regressions: Path) -> list:
    return fsutil.read_json(Regressions(regressions).fingerprints, []) or []


def last_good_kept(nights: list, before_run: str) -> Optional[dict]:
    """The last good night before `before_run` (rundir.last_good) of those that kept their fingerprint."""
    return last_good(((n["run_id"], n) for n in reversed(nights) if n.get("fingerprint") is not None), before_run)


def tonight(regressions: Path, run_id: str, jobs_dir: Path, jobs: list, code_id: Optional[str]) -> tuple:
    """(tonight's fingerprint, what changed since the last good night:
    {since: its run id (None: there is none), added, removed, changed}).
    A night without job fingerprints is compared on the snapshot alone: what
    it could not record did not change."""
    night = of_night(jobs_dir, jobs, code_id)
    good = last_good_kept(load(regressions), run_id)
    if good is None:
        return night, {"since": None, "added": {}, "removed": {}, "changed": {}}
    old = good["fingerprint"] if len(night) > 1 else {k: v for k, v in good["fingerprint"].items() if k in night}
    return night, {"since": good["run_id"], **job_fingerprint.diff(old, night)}


def remember(regressions: Path, report: dict) -> None:
    """Adds (or replaces) this night; keeps the newest KEEP_NIGHTS nights'
    fingerprints and the newest good night's, each night's changes always."""
    nights = [n for n in load(regressions) if n["run_id"] != report["run_id"]]
    d = report.get("fingerprint_diff") or {}
    nights.append({"run_id": report["run_id"], "passed": report["passed"], "fingerprint": report.get("fingerprint"),
                   "since": d.get("since"), "changes": job_fingerprint.changes(d)[:KEPT_CHANGES],
                   "change_count": len(job_fingerprint.changes(d))})
    nights.sort(key=lambda n: n["run_id"])
    good = [n["run_id"] for n in nights if n.get("passed") and n.get("fingerprint") is not None][-1:]
    recent = {n["run_id"] for n in nights[-KEEP_NIGHTS:]} | set(good)
    for n in nights:
        if n["run_id"] not in recent:
            n["fingerprint"] = None
    fsutil.write_json(Regressions(regressions).fingerprints, nights)


def markdown(report: dict) -> list:
    """report.md's lines on what changed since the last good night."""
    d = report.get("fingerprint_diff")
    if d is None:
        return []
    if d.get("since") is None:
        return ["## What changed since the last good night", "", "No good night before this one to compare with.", ""]
    found = job_fingerprint.changes(d)
    more = [f"- and {len(found) - SHOWN_IN_REPORT} more ({file_name('report')}: fingerprint_diff)"] if len(found) > SHOWN_IN_REPORT else []
    return ([f"## What changed since the last good night ({d['since']})", ""]
            + ([f"- {c}" for c in found[:SHOWN_IN_REPORT]] + more or ["Nothing: the same fingerprint."]) + [""])


def html(report: dict) -> str:
    """report.html's section on what changed since the last good night."""
    lines = markdown(report)
    if not lines:
        return ""
    items = [line[2:] for line in lines[2:] if line.startswith("- ")]
    body = ("<ul>" + "".join(f"<li><code>{escape(i)}</code></li>" for i in items) + "</ul>" if items
            else f"<p>{escape(lines[2])}</p>")
    return f"<h2 id=\"fingerprint\">{escape(lines[0][3:])}</h2>{body}"


def index_section(regressions: Path) -> str:
    """index.html's table of the nights whose fingerprint changed since their last good night."""
    rows = [n for n in reversed(load(regressions)) if n.get("change_count")][:KEEP_NIGHTS]
    if not rows:
        return "<h2>Environment changes</h2><p>No night's fingerprint differed from its last good night's.</p>"
    cells = "".join(
        f"<tr><td>{escape(n['run_id'])}</td><td>{escape(str(n.get('since')))}</td><td>"
        + "<br>".join(f"<code>{escape(c)}</code>" for c in n["changes"][:SHOWN_IN_INDEX])
        + (f"<br>and {n['change_count'] - SHOWN_IN_INDEX} more" if n["change_count"] > SHOWN_IN_INDEX else "")
        + "</td></tr>" for n in rows)
    return ("<h2>Environment changes</h2><p>Nights whose fingerprint (snapshot, versions, packages, cluster) "
            f"differed from their last good night's, newest first.</p><table><tr><th>night</th><th>since</th>"
            f"<th>what changed</th></tr>{cells}</table>")
