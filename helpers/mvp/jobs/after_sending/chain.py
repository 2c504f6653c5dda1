"""A retry chain's links: a job, the retries named after it (<first id>-r1,
-r2, ...) and each one's back link, resolved.resumed_from
("JOB/global_step_N", plan._resume). Read by `retry-from` (retry.py), the
check `resumed` (resumed_check.py), `status` and the nightly judge."""
import re
from pathlib import Path

from ...worker.jobdir import JobDir

# A retry's id: its chain's first id and its number (scripts/lib/submit.sh).
RETRY_ID = re.compile(r"^(?P<first>.+)-r(?P<n>[0-9]+)$")


def members(jobs: Path, sid: str) -> list:
    """The ids of sid's chain: its first job and the retries named after it."""
    m = RETRY_ID.match(sid)
    first = m.group("first") if m else sid
    retries = [p.name for p in jobs.glob(f"{glob_escape(first)}-r*") if RETRY_ID.match(p.name)]
    return [first, *sorted(retries, key=lambda n: int(RETRY_ID.match(n).group("n")))]


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def before(jobs: Path, sid: str) -> list:
    """The ids of sid's chain before it, oldest first."""
    found = members(jobs, sid)
    return found[:found.index(sid)] if sid in found else []


def resumed_from(jobs: Path, sid: str) -> str:
    """The job's back link, JOB/global_step_N ("" for a job resumed from nothing)."""
    return JobDir.of(jobs, sid).resolved().get("resumed_from") or ""


def chain_of(jobs: Path, sid: str) -> list:
    """The ids of sid's retry chain, first to last ([sid] when it has none),
    for 50_status and the nightly's report. The forward links are the
    retries' names (<first>-r1, -r2, ...: a few stats, never a directory
    listing); each retry must name its checkpoint (resolved.resumed_from), so
    a job merely called like one is no link."""
    m = RETRY_ID.match(sid)
    first = m.group("first") if m and resumed_from(jobs, sid) and (jobs / m.group("first")).is_dir() else sid
    ids = [first]
    while (jobs / f"{first}-r{len(ids)}").is_dir() and resumed_from(jobs, f"{first}-r{len(ids)}"):
        ids.append(f"{first}-r{len(ids)}")
    return ids


def chain_text(ids: list) -> str:
    """`<first> -> -r1 -> -r2`."""
    return " -> ".join([ids[0], *(i[len(ids[0]):] for i in ids[1:])])
