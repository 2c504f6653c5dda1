"""The job directory <shared_root>/jobs/<submission id>/: claimed once, never
reused; config/ at submission, logs/, debug/ and result.json when the job
ends. jobs/.index lists every claimed directory with its submission time, so
a listing reads the newest few directories, not all of them."""
import fcntl
import os
import shlex
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from . import bundle, fingerprint, fsutil, log, log_keeper
from .dashboard import TERMINAL, Dashboard
from .errors import MvpError
from .redact import Redactor

SUBDIRS = ("config", "logs", "checkpoints", "debug")
# Group members may read a job's (redacted) record; others may not enter.
DIR_MODE = 0o750
# How long archiving an ended job waits for the keeper of its log's last copy.
KEEPER_GRACE_S = 10
# The key of node_ray_dirs (node_logs) under which the ssh runtime's way into
# each node travels (MVP_NODE_SSH); the others are node addresses.
SSH_KEY = "ssh"


def claim(job: Path) -> Path:
    """Creates the job directory; mkdir is atomic, so two submitters of one id
    cannot both win, and an existing directory is never touched."""
    job.parent.mkdir(parents=True, exist_ok=True)
    try:
        job.mkdir(mode=DIR_MODE)
    except FileExistsError:
        raise MvpError(f"job directory {job} already exists; submission ids are never reused, "
                       "leave submission_id empty to get a new one") from None
    for sub in SUBDIRS:
        (job / sub).mkdir(mode=DIR_MODE)
    _index_add(job.parent, job.name)
    return job


INDEX = ".index"
INDEX_LOCK = ".index.lock"


class _IndexLock:
    """flock on a file of its own: the index is appended to in place and
    rewritten by rename, and both must exclude each other (O_APPEND alone
    is not atomic on NFS)."""

    def __init__(self, jobs: Path):
        self.path = jobs / INDEX_LOCK

    def __enter__(self):
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o640)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        os.close(self.fd)


def _index_add(jobs: Path, submission_id: str) -> None:
    """One "<ms> <id>" line per claimed directory. The first claim after an
    upgrade indexes the directories made before the index existed."""
    if not (jobs / INDEX).exists():
        _index_build(jobs)
    with _IndexLock(jobs):
        with open(jobs / INDEX, "a", encoding="utf-8") as f:
            f.write(f"{int(time.time() * 1000)} {submission_id}\n")


def _index_rewrite(jobs: Path, keep) -> None:
    """Rewrites the index with the (ms, id) pairs keep(pairs) returns."""
    with _IndexLock(jobs):
        tokens = _index_tokens(jobs)
        pairs = keep(list(zip(tokens[0::2], tokens[1::2])))
        fsutil.write_text(jobs / INDEX, "".join(f"{ms} {sid}\n" for ms, sid in pairs))


def _index_tokens(jobs: Path) -> list:
    try:
        return (jobs / INDEX).read_text(encoding="utf-8").split()
    except FileNotFoundError:
        return []


def index_remove(jobs: Path, removed: set) -> None:
    """Retention removed these directories: the index forgets them."""
    if removed and (jobs / INDEX).exists():
        _index_rewrite(jobs, lambda pairs: [p for p in pairs if p[1] not in removed])


def _index_build(jobs: Path) -> None:
    """Job directories made before the index existed, dated by their config/
    directory (written once, at submission)."""
    def dated(sid: str) -> int:
        try:
            return int(os.stat(jobs / sid / "config").st_mtime * 1000)
        except OSError:
            return 0
    found = names(jobs)
    _index_rewrite(jobs, lambda pairs: sorted(pairs + [(str(dated(s)), s) for s in found - {p[1] for p in pairs}],
                                              key=lambda p: int(p[0])))


def names(jobs: Path) -> set:
    """Every job directory's name (listdir: no stat per entry)."""
    try:
        return {n for n in os.listdir(jobs) if n[0] != "."}
    except FileNotFoundError:
        return set()


def newest(jobs: Path, limit: int) -> tuple:
    """(number of job directories, [(submitted_at_ms, id)] of the newest
    `limit`, newest first), from jobs/.index alone: it is in submission
    order, so only its end is looked at, and only those directories are
    checked. Never a listing of every directory (but once, to build the
    index where there is none)."""
    if not jobs.is_dir():
        return 0, []
    if not (jobs / INDEX).exists() and names(jobs):
        _index_build(jobs)
    tokens = _index_tokens(jobs)
    stamps, ids = tokens[0::2], tokens[1::2]
    found = {}
    for i in range(len(ids) - 1, -1, -1):
        if len(found) == limit:
            break
        if ids[i] not in found and (jobs / ids[i]).is_dir():
            found[ids[i]] = int(stamps[i])
    return len(set(ids)), sorted(((ms, sid) for sid, ms in found.items()), reverse=True)


def _iso(ms) -> Optional[str]:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat() if ms else None


def driver_location(job: dict, node_ips: dict, head_ids: set) -> dict:
    node_id = job.get("driver_node_id") or ((job.get("driver_info") or {}).get("node_id"))
    ip = (job.get("driver_info") or {}).get("node_ip_address") or node_ips.get(node_id)
    return {"driver_node_ip": ip, "driver_node_id": node_id,
            "driver_on_head": (node_id in head_ids) if node_id else None}


def node_logs(settings) -> dict:
    """Where archiving finds a node's own Ray logs: {node address: the
    directory of this host that holds its /tmp/ray} (MVP_NODE_RAY_DIRS,
    local), and under SSH_KEY the ssh runtime's MVP_NODE_SSH."""
    return dict(settings.node_ray_dirs, **{SSH_KEY: settings.node_ssh})


def _driver_log_on_node(job: dict, submission_id: str, node_ray_dirs: dict) -> Optional[str]:
    """Ray's own copy of the driver log, read from the directory of this host
    that holds the driver node's /tmp/ray (local runtime): it outlives the
    node's raylet, when the dashboard can no longer serve the log."""
    ip = (job.get("driver_info") or {}).get("node_ip_address")
    ray_dir = node_ray_dirs.get(ip)
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


def node_ssh(text: str) -> dict:
    """MVP_NODE_SSH (the ssh runtime: one line per node, its Ray address
    then the ssh command that enters it) as {address: argv}."""
    out = {}
    for line in text.splitlines():
        ip, _, argv = line.strip().partition(" ")
        if ip and argv:
            out[ip] = shlex.split(argv)
    return out


def _driver_log_over_ssh(job: dict, submission_id: str, ssh_by_ip: dict) -> tuple:
    """(text, "") Ray's own copy of the driver log, read over ssh from the
    driver's node's Ray log directory (ssh runtime): the node answers when
    its Ray does not. (None, why) when it cannot be read; (None, "") when
    this runtime has no ssh way in."""
    ip = (job.get("driver_info") or {}).get("node_ip_address")
    argv = ssh_by_ip.get(ip)
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


def _save_driver_log(jd: Path, dash: Optional[Dashboard], submission_id: str, job: dict, node_ray_dirs: dict,
                     redactor: Redactor) -> None:
    why = "the dashboard is gone"
    live = jd / "logs" / log_keeper.LIVE_NAME
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
        text = _driver_log_on_node(job, submission_id, node_ray_dirs)
    if text is None:
        text, over_ssh = _driver_log_over_ssh(job, submission_id, node_ssh(node_ray_dirs.get(SSH_KEY, "")))
        why += over_ssh
        if text is not None:
            log.info(f"job {submission_id}: its driver log read over ssh from its node's Ray log directory")
    if text is None and (jd / "logs" / log_keeper.DONE_NAME).is_file() and live.is_file():
        # The driver's node kept its log to the driver's end: that is all of it.
        text = _read_log(live)
    if text is not None:
        fsutil.write_text(jd / "logs" / "driver.log", redactor.text(text))
        (jd / "logs" / "driver.log.missing").unlink(missing_ok=True)
    else:
        kept = (f"; its node kept {live} while it ran (last copied {_mtime(live)})" if live.is_file()
                else "; no copy was kept while it ran")
        fsutil.write_text(jd / "logs" / "driver.log.missing", f"{why}; no copy on the driver's node either{kept}\n")


def _mtime(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wait_for_keepers(jd: Path, submission_id: str) -> None:
    """The ended job's directory must not change after archiving: the keepers
    of its driver's and its nodes' logs make their last copies first (at most
    KEEPER_GRACE_S in all; a keeper on a dead node holds nothing), and a node
    keeper that starts from now on copies nothing (log_keeper.CLOSED_NAME)."""
    logs = jd / "logs"
    if logs.is_dir():
        fsutil.write_text(logs / log_keeper.CLOSED_NAME, "")
    deadline = time.monotonic() + KEEPER_GRACE_S
    nodes = sorted(p for p in (logs / log_keeper.NODES_DIR).glob("*") if p.is_dir())
    for copy in [logs / log_keeper.LIVE_NAME] + nodes:
        if not log_keeper.wait_until_done(copy, max(0.0, deadline - time.monotonic())):
            log.warn(f"job {submission_id}: the keeper of {copy} still runs {KEEPER_GRACE_S:g}s after the job "
                     "ended; archiving without waiting for it")


def finalize(jd: Path, dash: Dashboard, submission_id: str, job: dict, timed_out: bool = False,
             node_ray_dirs: Optional[dict] = None) -> dict:
    """Copies the driver log, takes the final debug bundle and writes result.json."""
    redactor = Redactor.for_job(job)
    _wait_for_keepers(jd, submission_id)
    _save_driver_log(jd, dash, submission_id, job, node_ray_dirs or {}, redactor)
    got = bundle.collect(dash, jd / "debug", "final", redactor, job.get("job_id") or "")
    if not got:
        bundle.kept(jd, "final", f"the Ray dashboard at {dash.url} answered none of the bundle's questions")
    nodes = got.get("nodes", [])
    node_ips = {n["node_id"]: n["node_ip"] for n in nodes}
    head_ids = {n["node_id"] for n in nodes if n.get("is_head_node")}
    start, end = job.get("start_time"), job.get("end_time")
    result = {
        "submission_id": submission_id, "cluster": cluster_of(jd),
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
    fingerprint.write_job(jd, dash)
    fsutil.write_json(jd / "result.json", result)
    return result


def finalize_lost(jd: Path, submission_id: str, job: dict, evidence: str, node_ray_dirs: dict) -> dict:
    """The cluster went away before the job ended: what is known of it, with
    status LOST and the evidence, so the record never says RUNNING forever."""
    redactor = Redactor.for_job(job)
    _save_driver_log(jd, None, submission_id, job, node_ray_dirs, redactor)
    start = job.get("start_time")
    result = {
        "submission_id": submission_id, "cluster": cluster_of(jd), "status": "LOST", "last_ray_status": job.get("status"),
        "message": redactor.text(evidence), "start_time": _iso(start), "end_time": None,
        "start_time_ms": start, "end_time_ms": None, "duration_s": None, "driver_exit_code": None,
        "head_node_ids": [], "timed_out": False, "finalized_at": datetime.now(timezone.utc).isoformat(),
    }
    result.update(driver_location(job, {}, set()))
    bundle.kept(jd, "final", result["message"])
    bundle.cut_off(jd, "LOST")
    fingerprint.write_job(jd, None)
    fsutil.write_json(jd / "result.json", result)
    return result


def cluster_of(jd: Path) -> Optional[str]:
    """The cluster the job was submitted to (MVP_CLUSTER_NAME, or "at <address>"
    for a JobSpec's ray.address); None for a record older than cluster names."""
    spec = fsutil.read_json(jd / "config" / "job_spec.json", {}) or {}
    return (spec.get("resolved") or {}).get("cluster")


def is_of(jd: Path, cluster: str) -> bool:
    """Whether the job belongs to `cluster`; an unnamed (older) record does."""
    return cluster_of(jd) in (None, cluster)


def unfinished(jobs: Path, cluster: str) -> tuple:
    """([ids], [(id, cluster)]): submitted jobs without result.json yet, of
    `cluster` and of the other clusters that share the root."""
    own, others = [], []
    for sid in sorted(names(jobs)):
        jd = jobs / sid
        if not (jd / "result.json").exists() and any(
                e.get("event") == "submitted" for e in fsutil.read_json_lines(jd / "logs" / "submit.log")):
            name = cluster_of(jd)
            if name in (None, cluster):
                own.append(sid)
            else:
                others.append((sid, name))
    return own, others


def finalize_if_ended(jd: Path, dash: Dashboard, submission_id: str, job: dict, settings) -> None:
    """For jobs submitted without --wait: the first status call after they end archives them."""
    if settings.dry_run:
        return
    if job.get("status") in TERMINAL and (jd / "config").is_dir() and not (jd / "result.json").exists():
        try:
            finalize(jd, dash, submission_id, job, node_ray_dirs=node_logs(settings))
        except OSError:
            pass  # read-only view of the share: archiving is left to a writer
