"""Admission: the free-GPU check and the submission as one step per cluster.

Every runbook submission (40-44, the nightly, KubeRay's submitter pod: all run
`python -m mvp submit`) takes an exclusive flock on
<SHARED_ROOT>/admission/<cluster>/lock, looks, and submits before it lets go,
so two submitters never both find the same GPUs free. <cluster> is the
cluster's MVP_CLUSTER_NAME (cluster_dir).

Ray shows a job's GPUs only once its TaskRunner has made its placement groups,
seconds after Ray took the job. Until then the job counts through its claim,
claims/<submission id>.json (its planned need), written under the lock before
the submit. The next admission drops a claim when:
- Ray does not know the job: whoever holds the lock knows the claim's
  submitter has let go of it, so Ray refused the job or the submitter died
  before submitting (its half-made job directory goes too);
- the job has ended;
- its placement groups hold the claim's GPUs (from then on they count it;
  while fewer exist, the job counts as the larger of the two, never both);
- it is older than MVP_ADMISSION_CLAIM_S (a job that never makes any).
Jobs from outside the runbook count through their placement groups only.

--queue waiters hold a ticket, queue/<number>.<submission id>, numbered in
arrival order and flock'ed by its waiter while it waits: a ticket nobody
holds (its waiter died) is dropped. Only the first live ticket is admitted
(FIFO, no overtaking), and a submission without --queue is refused while
anyone waits."""
import fcntl
import json
import os
import re
import shutil
import signal
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

from ...worker import fsutil
from . import gpus
from ...core import log
from ...core.dashboard import TERMINAL, Dashboard
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ...core.layout import Layout

# sysexits' EX_TEMPFAIL: refused for now (GPUs held, others queued, the
# queue's deadline passed); the same submission may pass later.
BUSY_EXIT = 75
# A lock holder submits within submit.SUBMIT_TIMEOUT_S (120 s) and the
# debug bundle's HTTP calls; longer means it hangs.
LOCK_WAIT_S = 180.0
# Placement groups of a job that just ended are removed a moment later.
SETTLE_CHECKS, SETTLE_S = 3, 1.0
POLL_S, REPORT_S = 2.0, 30.0


def cluster_dir(shared_root: Path, cluster: str) -> Path:
    """admission/<MVP_CLUSTER_NAME>, or admission/<host_port> for a job sent
    to another address (plan.cluster "at <address>"): never an address for
    the runbook's own clusters, whose addresses repeat across hosts (compose)."""
    if cluster.startswith("at "):
        cluster = cluster[3:].split("://", 1)[-1].split("/", 1)[0]
    return Layout(shared_root).admission / re.sub(r"[^A-Za-z0-9.@-]", "_", cluster)


def _who(sid: str) -> str:
    return f"{sid} (host {os.uname().nodename}, pid {os.getpid()})"


class _Timeout(Exception):
    pass


def _raise_timeout(*_):
    raise _Timeout


class _Lock:
    """The cluster's admission lock. flock dies with its holder (on NFS: when
    the server's lease on a dead client runs out). Its holder writes who it is
    into the file, for the one who times out waiting."""

    def __init__(self, path: Path, sid: str):
        self.path, self.sid = path, sid

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Read-write: NFS emulates flock with POSIX locks, whose exclusive
        # kind needs a file open for writing.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o660)
        try:
            _flock(fd, self.path)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{_who(self.sid)}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def _flock(fd: int, path: Path) -> None:
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        old = signal.signal(signal.SIGALRM, _raise_timeout)
        signal.setitimer(signal.ITIMER_REAL, LOCK_WAIT_S)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    except _Timeout:
        holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or "an unknown process"
        raise MvpError(f"the admission lock {path} is still held after {LOCK_WAIT_S:g}s, by {holder}; "
                       "a submission takes seconds under it, so that one hangs: stop it, then submit again",
                       BUSY_EXIT) from None
    except OSError as exc:
        raise MvpError(f"cannot lock {path} ({exc.strerror}): the file system under SHARED_ROOT has no working "
                       "flock, so admission cannot be one step and nothing was submitted; mount the share with "
                       "locking (NFSv4, or NFSv3 with lockd; not 'nolock')") from None


class _View:
    """GPUs of one cluster as admission counts them."""

    def __init__(self, total: float, held: dict, claimed: set, settling: bool):
        self.total, self.held, self.claimed, self.settling = total, held, claimed, settling
        self.free = total - sum(held.values())

    def holders(self) -> str:
        return ", ".join(f"{name} ({gpus:g}{', submitted, not yet placed' if name in self.claimed else ''})"
                         for name, gpus in sorted(self.held.items())) or "no job Ray names"


def _read_claims(claims: Path) -> list:
    try:
        names = [n for n in os.listdir(claims) if n.endswith(".json") and n[0] != "."]
    except FileNotFoundError:
        return []
    return [(claims / n, fsutil.read_json(claims / n, {})) for n in names]


def _drop(path: Path, claim: dict, why: str) -> None:
    path.unlink(missing_ok=True)
    if not why:
        return
    jd = JobDir(claim.get("job_dir") or "/nonexistent")
    # Never submitted (no submission log): the directory a killed submitter left half-made.
    if jd.path.is_dir() and not jd.submit_log.exists():
        shutil.rmtree(jd, ignore_errors=True)
    log.warn(f"dropped the claim of {claim.get('submission_id')} ({why})")


def _view(dash: Dashboard, cdir: Path, claim_max: float) -> _View:
    total = gpus.total(dash)
    placed = gpus.held_by_ray_job(dash)
    claims = _read_claims(cdir / "claims")
    jobs = dash.jobs() if claims or placed else []
    by_sid = {j.get("submission_id"): j for j in jobs if j.get("submission_id")}
    by_id = {j.get("job_id"): j for j in jobs if j.get("job_id")}
    held, claimed, now = {}, set(), time.time()
    for path, claim in claims:
        sid, need = claim.get("submission_id"), float(claim.get("need") or 0)
        job = by_sid.get(sid)
        if job is None:
            _drop(path, claim, "Ray does not know it: refused, or its submitter died before submitting")
        elif job.get("status") in TERMINAL or placed.get(job.get("job_id"), 0) >= need:
            _drop(path, claim, "")
        elif now - float(claim.get("at") or 0) > claim_max:
            _drop(path, claim, f"no placement groups after MVP_ADMISSION_CLAIM_S={claim_max:g}s")
        else:
            held[sid] = need
            claimed.add(sid)
    settling = False
    for job_id, gpus_held in placed.items():
        job = by_id.get(job_id) or {}
        name = job.get("submission_id") or f"Ray job {job_id}"
        if gpus_held >= held.get(name, 0):
            held[name] = gpus_held
            claimed.discard(name)
        settling = settling or job.get("status") in TERMINAL
    return _View(total, held, claimed, settling)


class _Ticket:
    """A --queue waiter's place in line, made under the admission lock."""

    def __init__(self, queue: Path, sid: str, need: int):
        queue.mkdir(parents=True, exist_ok=True)
        # After every ticket there is, whatever the clocks of other hosts say.
        number = max([time.time_ns()] + [int(t) + 1 for t, _ in _ticket_names(queue)])
        self.name = f"{number:020d}.{sid}"
        self.path = queue / self.name
        self.fd: Optional[int] = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o660)
        fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(self.fd, json.dumps({"submission_id": sid, "need": need, "who": _who(sid)}).encode())

    def leave(self) -> None:
        if self.fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None


def _ticket_names(queue: Path) -> list:
    try:
        return [tuple(n.split(".", 1)) for n in os.listdir(queue) if n[:1].isdigit() and "." in n]
    except FileNotFoundError:
        return []


def _waiting(queue: Path, mine: Optional[str]) -> list:
    """[(submission id, need)] of the live tickets ahead of `mine` (all, for
    None), in arrival order; drops tickets whose waiter is gone."""
    out = []
    for number, sid in sorted(_ticket_names(queue)):
        name = f"{number}.{sid}"
        if mine is not None and name >= mine:
            continue
        try:
            fd = os.open(queue / name, os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            (queue / name).unlink(missing_ok=True)  # nobody holds it: its waiter died
        except BlockingIOError:
            info = json.loads(os.pread(fd, 4096, 0) or b"{}")
            out.append((sid, info.get("need")))
        finally:
            os.close(fd)
    return out


def _ahead(waiting: list) -> str:
    return ", ".join(f"{sid} (needs {need})" for sid, need in waiting)


def _refusal(need: int, view: _View, waiting: list, waited: Optional[float]) -> str:
    after = f" after waiting {waited:.0f}s (MVP_JOB_TIMEOUT)" if waited is not None else ""
    if view.free >= need:
        return (f"the job needs {need} GPUs and {view.free:g} of {view.total:g} are free, but {len(waiting)} "
                f"submission(s) queued earlier go first{after}: {_ahead(waiting)}; submit with --queue to wait "
                "your turn")
    queued = f"; queued before it: {_ahead(waiting)}" if waiting else ""
    return (f"the job needs {need} GPUs but {view.free:g} of {view.total:g} are free{after} (held by "
            f"{view.holders()}{queued}); verl checks free GPUs and fails rather than queue: wait for those jobs, "
            "stop them (52_stop.sh), or submit with --queue")


def _never_fits(need: int, total: float) -> MvpError:
    return MvpError(f"the job needs {need} GPUs (trainer.nnodes x trainer.n_gpus_per_node) but the cluster has "
                    f"{total:g}; lower trainer.nnodes or trainer.n_gpus_per_node, or add workers")


@contextmanager
def _claimed(dash: Dashboard, cdir: Path, sid: str, need: int, jd: JobDir):
    """The claim, for the time of the submission and after it; gone again
    when the submission fails and Ray does not know the job."""
    path = cdir / "claims" / f"{sid}.json"
    fsutil.write_json(path, {"submission_id": sid, "need": need, "at": time.time(), "host": os.uname().nodename,
                             "pid": os.getpid(), "job_dir": str(jd)})
    try:
        yield
    except BaseException:
        try:
            known = dash.job(sid) is not None
        except MvpError:
            known = False
        if not known:
            path.unlink(missing_ok=True)
        raise


class _Waiter:
    """One submission's wait for its GPUs so far: its place in line (a
    ticket, with --queue), how often it found them taken, when it last said
    whom it waits for."""

    def __init__(self, cdir: Path, sid: str, need: int, queue: bool, timeout: float, on_queued=None):
        self.cdir, self.sid, self.need, self.queue, self.timeout = cdir, sid, need, queue, timeout
        self.on_queued = on_queued
        self.ticket: Optional[_Ticket] = None
        self.start, self.reported, self.checks = time.monotonic(), None, 0

    def taken(self, view: "_View", waiting: list) -> None:
        """The GPUs are taken (or someone queued earlier): without --queue a
        refusal once Ray's view has settled (BUSY_EXIT); with --queue a
        ticket, a line every REPORT_S, and a refusal at the timeout."""
        self.checks += 1
        waited = time.monotonic() - self.start
        if not self.queue and (self.checks >= SETTLE_CHECKS or not view.settling or waiting):
            raise MvpError(_refusal(self.need, view, waiting, None), BUSY_EXIT)
        if self.queue and waited >= self.timeout:
            raise MvpError(_refusal(self.need, view, waiting, waited), BUSY_EXIT)
        if self.queue and self.ticket is None:
            self.ticket = _Ticket(self.cdir / "queue", self.sid, self.need)
            if self.on_queued:
                self.on_queued()
        if self.queue and (self.reported is None or time.monotonic() - self.reported >= REPORT_S):
            ahead = f"; queued before it: {_ahead(waiting)}" if waiting else ""
            log.step(f"queued: {self.need} GPUs needed, {view.free:g} free; waiting for {view.holders()}{ahead} "
                     f"({waited:.0f}s of at most {self.timeout:g}s)")
            self.reported = time.monotonic()

    def leave(self) -> None:
        if self.ticket:
            self.ticket.leave()


@contextmanager
def admit(dash: Dashboard, shared_root: Path, cluster: str, sid: str, jd: JobDir, need: int, queue: bool,
          timeout: float, claim_max: float, on_queued=None):
    """The body runs (it submits) under the cluster's lock once `need` GPUs
    are free and nobody queued earlier waits; raises MvpError (one line)
    otherwise: BUSY_EXIT when the GPUs are taken, 1 when they never can be.
    on_queued() runs once, when the submission joins the --queue line."""
    if need <= 0:
        yield
        return
    cdir = cluster_dir(shared_root, cluster)
    waiter = _Waiter(cdir, sid, need, queue, timeout, on_queued)
    try:
        while True:
            t0 = time.perf_counter()
            with _Lock(cdir / "lock", sid):
                view = _view(dash, cdir, claim_max)
                if need > view.total:
                    raise _never_fits(need, view.total)
                waiting = _waiting(cdir / "queue", waiter.ticket.name if waiter.ticket else None)
                if view.free >= need and not waiting:
                    waiter.leave()
                    with _claimed(dash, cdir, sid, need, jd):
                        # bench/submit.sh reads the ms.
                        log.info(f"admitted: {need} GPUs needed, {view.free:g} of {view.total:g} free; claimed "
                                 f"under {cdir / 'lock'} ({(time.perf_counter() - t0) * 1000:.0f} ms)")
                        yield
                    return
                waiter.taken(view, waiting)
            time.sleep(POLL_S if queue else SETTLE_S)
    finally:
        waiter.leave()
