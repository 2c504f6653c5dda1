"""The job directory <shared_root>/jobs/<submission id>/, the one object that
names its files: JobDir gives each by name (jd.spec, jd.result, jd.logs, ...),
reads and writes the ones several modules share, and no other module spells
a file name of it (tests/unit/job_dir.bats). Claimed once, never reused:
config/ at submission, logs/ while it runs, debug/ and result.json when it
ends (archive.py). jobs/.index lists every claimed directory with its
submission time, so a listing reads the newest few directories, not all of
them. Standard library and fsutil only: the job's launcher, log keepers and
stopper load it on the worker as a top-level module (tests/unit/worker_side.bats)."""
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Optional

try:
    from . import fsutil
except ImportError:  # loaded by launch.py, the log keepers or the stopper as a top-level module
    import fsutil

# Every file and directory of a job directory: (name, path relative to it,
# what it holds). shared-layout.txt lists them as comments (00 creates no
# job directory).
FILES = (
    ("config", "config", "written once, at submission"),
    ("spec", "config/job_spec.json", "the JobSpec as given, its Ray config and what they resolved to (resolved)"),
    ("runtime_env", "config/runtime_env.json", "the runtime_env Ray got (private values as keys only)"),
    ("submit_cmd", "config/submit_cmd.txt", "the `ray job submit` argv, shlex-joined"),
    ("fingerprint_submitted", "config/fingerprint.json", "what the submitter knew: runtime, auth mode, image"),
    ("logs", "logs", "what the job and the runbook logged of it"),
    ("submit_log", "logs/submit.log", "JSON lines: the submission (host, via, command, Ray's answer)"),
    ("live_log", "logs/driver.live.log", "the driver log as its node kept it while it ran (log_keeper.py)"),
    ("live_done", "logs/.driver.live.done", "written once the keeper made its last copy after the driver's end"),
    ("ray_job_id", "logs/ray_job_id", "the job's Ray job id (hex), written by the keepers' dispatcher"),
    ("closed", "logs/.archiving", "written by archiving: a node keeper that starts after it copies nothing"),
    ("nodes", "logs/nodes", "<node ip>/worker-*: each node's Ray worker logs of the job, kept while it ran"),
    ("interrupt", "logs/interrupt.json", "the nightly's SIGKILL at a step (stopper.py)"),
    ("env_driver", "logs/env/driver.json", "the driver's Python, torch, CUDA, NCCL, GPU driver, Ray; its packages"),
    ("env_node", "logs/env/node-<ip>.json", "each node's versions, written by its log keeper (runenv.py)"),
    ("driver_log", "logs/driver.log", "the whole driver log, secrets masked, archived when the job ended"),
    ("driver_log_missing", "logs/driver.log.missing", "why no driver log could be archived"),
    ("checkpoints", "checkpoints", "verl's trainer.default_local_dir"),
    ("hydra", "hydra", "Hydra's outputs (hydra.run.dir)"),
    ("tracking", "tracking", "each tracking backend's directory (tracking.py)"),
    ("debug", "debug", "debug bundles: <stamp>_<submit|final>_<kind>.json, <stamp>_<phase>_kept.json"),
    ("cut_off", "debug/cut_off.txt", "`cut off at step N of M` of a job that ended before its last step"),
    ("fingerprint", "fingerprint.json", "the environment the job ran in, written when it is archived (job_fingerprint.py)"),
    ("result", "result.json", "the job's end: status, times, driver node, message (archive.py)"),
)
_PATHS = {name: rel for name, rel, _ in FILES}
# What a claim makes; the rest appears as the job runs and ends.
SUBDIRS = tuple(_PATHS[name] for name in ("config", "logs", "checkpoints", "debug"))
# Group members may read a job's (redacted) record; others may not enter.
DIR_MODE = 0o750


class NamedFiles:
    """A directory whose files a table names (NAMES: name -> path relative to
    it): each name is an attribute, its path. JobDir here; the nightly's
    RunDir and Regressions (core/rundir.py) the same way."""
    NAMES: dict = {}

    def __init__(self, path):
        self.path = Path(os.fspath(path))

    def __getattr__(self, name: str) -> Path:
        # Only the table's names: an unpickled copy asks for __setstate__
        # before it has a path, and must hear "no such attribute".
        if name.startswith("__") or name not in type(self).NAMES:
            raise AttributeError(name)
        return self.path / type(self).NAMES[name]

    def __fspath__(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)


class JobDir(NamedFiles):
    """One job directory. Each name of FILES is an attribute, its path
    (jd.result, jd.live_log); the methods read and write what more than one
    module reads. Takes a path as the caller sees the directory (this host's
    view or a node's), or another JobDir. Made once where a job directory
    enters the code (JobDir.of(jobs, id), Layout.job, claim(), the launcher's
    argument) and handed on as it is: a function given a job directory takes
    a JobDir, which pickles as its path does."""
    NAMES = _PATHS

    @classmethod
    def of(cls, jobs, submission_id: str) -> "JobDir":
        return cls(Path(os.fspath(jobs)) / submission_id)

    def __repr__(self) -> str:
        return f"JobDir({str(self.path)!r})"

    @property
    def id(self) -> str:
        return self.path.name

    def node_env(self, ip: str) -> Path:
        return self.path / _PATHS["env_node"].replace("<ip>", ip)

    def node_copy(self, ip: str) -> Path:
        """Where node ip's worker logs of the job are kept."""
        return self.nodes / ip

    def node_worker_logs(self) -> list:
        """Every node's kept worker logs of the job, sorted."""
        return sorted(p for p in self.nodes.glob("*/worker-*") if p.is_file())

    def read_spec(self) -> dict:
        """config/job_spec.json ({} when there is none or it is unreadable)."""
        return fsutil.read_json(self.spec, {}) or {}

    def load_spec(self) -> dict:
        """config/job_spec.json, or OSError/ValueError: for a reader that must have it."""
        return json.loads(self.spec.read_text(encoding="utf-8"))

    def resolved(self) -> dict:
        """What the submission resolved to (job_spec.json's `resolved`; {} without one)."""
        return self.read_spec().get("resolved") or {}

    def cluster(self) -> Optional[str]:
        """The cluster the job was submitted to (MVP_CLUSTER_NAME, or "at <address>"
        for a JobSpec's ray.address); None for a record older than cluster names."""
        return self.resolved().get("cluster")

    def read_result(self, default=None):
        """result.json, or `default` when the job is not archived (or it is unreadable)."""
        return fsutil.read_json(self.result, default)

    def status(self) -> Optional[str]:
        """The status result.json archived, or None."""
        return (self.read_result() or {}).get("status")

    def archived(self) -> bool:
        return self.result.exists()

    def write_result(self, result: dict) -> None:
        fsutil.write_json(self.result, result)

    def submit_events(self) -> list:
        return fsutil.read_json_lines(self.submit_log)

    def was_submitted(self) -> bool:
        """Ray took the job (submit.log has its `submitted` event)."""
        return any(e.get("event") == "submitted" for e in self.submit_events())

    def write_submit_event(self, event: dict) -> None:
        fsutil.write_text(self.submit_log, json.dumps(event) + "\n")

    def kept_driver_log(self) -> Optional[Path]:
        """The job's driver log: the archived copy, else the one its node kept
        while it ran; None when neither is there."""
        return next((p for p in (self.driver_log, self.live_log) if p.is_file()), None)

    def driver_log_text(self) -> Optional[str]:
        """kept_driver_log()'s text, or None."""
        path = self.kept_driver_log()
        return path.read_text(encoding="utf-8", errors="replace") if path else None


def claim(job) -> JobDir:
    """Creates the job directory (given as a path or a JobDir) and returns it
    as a JobDir; mkdir is atomic, so two submitters of one id cannot both
    win, and an existing directory is never touched."""
    from .errors import MvpError  # here: the job's worker loads this file as a top-level module
    jd = JobDir(job)
    jd.path.parent.mkdir(parents=True, exist_ok=True)
    try:
        jd.path.mkdir(mode=DIR_MODE)
    except FileExistsError:
        raise MvpError(f"job directory {jd} already exists; submission ids are never reused, "
                       "leave submission_id empty to get a new one") from None
    for sub in SUBDIRS:
        (jd.path / sub).mkdir(mode=DIR_MODE)
    _index_add(jd.path.parent, jd.id)
    return jd


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
            return int(os.stat(JobDir.of(jobs, sid).config).st_mtime * 1000)
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


def is_of(jd: JobDir, cluster: str) -> bool:
    """Whether the job belongs to `cluster`; an unnamed (older) record does."""
    return jd.cluster() in (None, cluster)


def unfinished(jobs: Path, cluster: str) -> tuple:
    """([ids], [(id, cluster)]): submitted jobs without result.json yet, of
    `cluster` and of the other clusters that share the root."""
    own, others = [], []
    for sid in sorted(names(jobs)):
        jd = JobDir.of(jobs, sid)
        if not jd.archived() and jd.was_submitted():
            name = jd.cluster()
            if name in (None, cluster):
                own.append(sid)
            else:
                others.append((sid, name))
    return own, others
