"""Keeps a copy of the driver's log in the job directory while the job runs
(standard library, fsutil.py, jobdir.py and redact.py only: the launcher loads it on the worker
that holds the driver, before the trainer replaces the launcher).

Ray keeps the driver log on the driver's node only; its dashboard serves it
while that node's Ray is up. When the node's Ray processes die (killed, OOM,
the head gone) the log may still sit on the node, unreachable from the head
on the ssh runtime, or be gone with the node. So the driver's own node copies
it to shared storage as it grows: every `every_s` seconds and once more when
the driver is gone, into <job dir>/logs/driver.live.log, secrets masked.

The keeper leaves the driver's process tree (a second fork, in its own
session): Ray stops a job by killing the driver and all its descendants
(job_supervisor.py: job_process.children(recursive=True)), which must not
take the last copy with it. It ends when the driver does, after that copy.
It holds an exclusive flock on the copy while it lives, so the job's
archiving (archive.finalize) can wait for that last copy (wait_until_done).

The Ray logs of the job's TaskRunner and worker actors are on the nodes that
run them (worker-<worker id>-<job id or ffffffff>-<pid>.out/.err in the
node's session logs; Ray 2.60 names a prestarted worker ffffffff and marks
its file `:job_id:<hex>` when it takes a task of the job). A keeper forked
beside the driver's (dispatch) learns the job's Ray job id from the name of
the driver's python-core-driver-<id>_<pid>.log, connects to the cluster's
GCS (not the dashboard), keeps its own node's files itself (a thread) and
places one detached NodeKeeper actor (num_cpus=0, pinned) on every other
alive node, again every round for nodes that join later. Each
copies its node's files of the job into <job dir>/logs/nodes/<node ip>/ the
same way (keep_node) until the driver's keeper is done and the job's workers
on that node are gone. It needs nothing of the runtime: Ray places it."""
import fcntl
import os
import sys
import time

try:
    from . import fsutil, redact, runenv
    from .jobdir import JobDir
except ImportError:  # loaded by launch.py as a top-level module
    import fsutil
    import redact
    import runenv
    from jobdir import JobDir

# Its files in the job directory (JobDir): live_log, the copy; live_done,
# written beside it once the keeper has made its last copy after the driver's
# end: the copy is then the whole driver log, which archiving keeps as the
# driver log when neither the dashboard nor the node's Ray logs can be read
# from where it runs (the driver's Ray processes killed on an ssh, compose or
# Slurm node that stays up); ray_job_id, the job's Ray job id (hex), written
# by the dispatcher once it knows it; node_copy(ip), each node's Ray worker
# logs of the job. closed is written by archiving (archive.finalize) before
# it waits for the node keepers: one that starts after it copies nothing.
# How long a node keeper goes on, once the driver's keeper is done, while the
# job's workers on its node still write: when the driver's node dies, Ray
# takes ~30 s to end the job, and a TaskRunner elsewhere trains on meanwhile.
WORKERS_GRACE_S = 60.0
# How often the keeper looks whether the driver is still there: the last copy
# follows the driver's end within this, whatever the sync interval.
WATCH_S = 0.5
# The first copies come this many seconds after the keeper starts, before
# the interval takes over: a node that dies in a job's first half minute
# (MVP_LOG_SYNC_SECONDS is 30) would otherwise leave a copy of one line.
FIRST_SYNCS_S = (1.0, 2.0, 5.0, 10.0)
# The metadata the dispatcher's own Ray connection carries: it shows in Ray's
# job list (dashboard /api/jobs/, `ray list jobs`) as a DRIVER job without a
# submission id, named by these keys as the keeper of its submission.
ROLE_KEY, ROLE, KEEPER_OF_KEY = "mvp_role", "log_keeper", "mvp_keeper_of"


def sync_times(every_s: float):
    """Seconds after the start at which a keeper copies: FIRST_SYNCS_S (those
    sooner than every_s), then every every_s seconds."""
    t = 0.0
    for first in FIRST_SYNCS_S:
        if first >= every_s:
            break
        t = first
        yield t
    while True:
        t += every_s
        yield t


def driver_log_path() -> str:
    """The file this process's stdout writes to (Ray's job-driver-<id>.log),
    or "" when stdout is not a regular file (a terminal, a pipe)."""
    try:
        path = os.readlink("/proc/self/fd/1")
    except OSError:
        return ""
    return path if os.path.isfile(path) else ""


def start(jd: JobDir, every_s: float) -> bool:
    """Starts the keeper when there is a log file to keep and every_s > 0;
    returns whether it did. The caller goes on (and execs the trainer)."""
    src = driver_log_path()
    driver = os.getpid()
    born = started(driver)
    if every_s <= 0 or not src or born is None:
        return False
    child = os.fork()
    if child:
        os.waitpid(child, 0)  # the first child ends at once; the keeper is its child
        return True
    try:
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            if os.fork() == 0:
                dispatch(jd, os.path.dirname(src), driver, lambda: started(driver) == born, every_s)
            else:
                keep(src, (str(jd.live_log), str(jd.live_done)), lambda: started(driver) == born, every_s,
                     redact.Redactor(redact.secret_values(dict(os.environ))))
    finally:
        os._exit(0)


def started(pid: int):
    """The process's start time (clock ticks since boot, /proc/PID/stat field
    22), or None when it is gone or a zombie: with the PID, it names one
    process even if the PID is used again."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def keep(src: str, dst_done: tuple, driver_alive, every_s: float, redactor) -> None:
    """Appends what the driver wrote since the last round, whole lines only
    (a secret split over two reads would escape the mask), into dst until the
    driver is gone; then the rest, and writes done ((dst, done) = dst_done)."""
    dst, done = dst_done
    pos, t0, due = 0, time.monotonic(), sync_times(every_s)
    next_at = next(due)
    # Owner and group only, as every file of a job directory.
    with os.fdopen(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, fsutil.FILE_MODE), "wb") as out:
        os.fchmod(out.fileno(), fsutil.FILE_MODE)
        fcntl.flock(out.fileno(), fcntl.LOCK_EX)
        pos = copy_new(src, out, pos, redactor, final=False)
        while True:
            alive = driver_alive()
            if not alive or time.monotonic() - t0 >= next_at:
                pos = copy_new(src, out, pos, redactor, final=not alive)
                while next_at <= time.monotonic() - t0:
                    next_at = next(due)
            if not alive:
                # Before the lock goes: archiving waits for it, then looks.
                os.close(os.open(done, os.O_WRONLY | os.O_CREAT, fsutil.FILE_MODE))
                return
            time.sleep(min(WATCH_S, every_s))


def wait_until_done(path, timeout_s: float) -> bool:
    """Waits until no keeper holds the copy at path (its last copy is made),
    at most timeout_s: a keeper on a dead node holds nothing, but one on a
    loaded node may need a few seconds to notice its driver's end."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return True
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.1)
    finally:
        os.close(fd)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _lock_free(path) -> bool:
    return wait_until_done(path, 0)


def ray_job_id(logs_dir: str, driver_pid: int, born_at: float) -> str:
    """The Ray job id (8 hex digits) of the driver with this PID, from the
    name of the core driver log its ray.init writes; "" before that. Only a
    log written since the driver started (born_at, epoch seconds) counts: a
    node started again in the same Ray session (a new PID namespace counts
    its PIDs from 1 again) gives its driver the PID of an earlier job's,
    whose log is still there."""
    suffix = f"_{driver_pid}.log"
    found = []
    for name in os.listdir(logs_dir):
        if name.startswith("python-core-driver-") and name.endswith(suffix):
            try:
                written = os.stat(os.path.join(logs_dir, name)).st_mtime
            except OSError:
                continue
            if written >= born_at:
                found.append((written, name[len("python-core-driver-"):][:8]))
    return max(found)[1] if found else ""


def started_at(pid: int):
    """When the process started, in epoch seconds (whole seconds: the boot
    time's precision, rounded down), or None when it is gone."""
    ticks = started(pid)
    if ticks is None:
        return None
    try:
        with open("/proc/stat", encoding="ascii") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, StopIteration, ValueError):
        return None
    return float(boot + int(ticks) // os.sysconf("SC_CLK_TCK"))


def job_files(logs_dir: str, job_hex: str, known: dict) -> list:
    """The job's worker logs in logs_dir: worker-*-<job hex>-*.out/.err, or a
    prestarted worker's (ffffffff) whose first line is `:job_id:<hex>`.
    known caches each file's answer once its first line is there."""
    marker = f":job_id:{job_hex}\n".encode()
    for name in os.listdir(logs_dir):
        if name in known or not name.startswith("worker-") or not name.endswith((".out", ".err")):
            continue
        parts = name[:-4].split("-")
        if len(parts) != 4:
            continue
        if parts[2] == job_hex:
            known[name] = True
        elif parts[2] == "ffffffff":
            try:
                with open(os.path.join(logs_dir, name), "rb") as f:
                    head = f.read(len(marker))
            except OSError:
                continue
            if len(head) == len(marker) or b"\n" in head:  # else: undecided, look again next round
                known[name] = head == marker
        else:
            known[name] = False
    return sorted(name for name, mine in known.items() if mine)


def writers_alive(names) -> bool:
    """Whether a process that writes one of these worker logs is alive (its
    PID ends the name; this keeper runs in the node's PID namespace)."""
    return any(started(int(name[:-4].rsplit("-", 1)[1])) is not None for name in names)


def keep_node(logs_dir: str, dst_dir: str, job_hex: str, job_over, every_s: float, redactor, closed: str,
              first=None) -> None:
    """Copies the job's worker logs of this node into dst_dir (one file each,
    same name), whole lines, every every_s seconds until job_over(names)
    says so; then the rest. Holds an exclusive flock on dst_dir meanwhile
    (wait_until_done), and copies nothing when `closed` exists (archiving
    has begun: the job directory is final). first(), when given, runs once
    the lock is held: what else the keeper writes into the job directory
    (the node's versions) is written before archiving, or not at all."""
    lock = _lock_node_dir(dst_dir, closed)
    if lock is None:
        return
    known, pos, outs, t0, due = {}, {}, {}, time.monotonic(), sync_times(every_s)
    next_at = 0.0
    try:
        if first:
            first()
        while True:
            names = job_files(logs_dir, job_hex, known)
            over = job_over(names)
            if over or time.monotonic() - t0 >= next_at:
                _copy_round(logs_dir, dst_dir, names, pos, outs, redactor, final=over)
                while next_at <= time.monotonic() - t0:
                    next_at = next(due)
            if over:
                return
            time.sleep(min(WATCH_S, every_s))
    finally:
        for out in outs.values():
            out.close()
        os.close(lock)


def _lock_node_dir(dst_dir: str, closed: str):
    """The node's copy directory, made and flock'ed (the descriptor), or None
    when archiving has begun (`closed` exists) before or while it was made."""
    if os.path.exists(closed):
        return None
    # Both levels (logs/nodes/ and the node's own) get the job directory's
    # mode: makedirs gives its mode to the last level only.
    os.makedirs(os.path.dirname(dst_dir), mode=0o750, exist_ok=True)
    os.makedirs(dst_dir, mode=0o750, exist_ok=True)
    lock = os.open(dst_dir, os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    # Archiving began between the look above and the lock: it may not have
    # seen this directory, so nothing goes in.
    if os.path.exists(closed):
        os.close(lock)
        try:
            os.rmdir(dst_dir)
        except OSError:
            pass
        return None
    return lock


def _copy_round(logs_dir: str, dst_dir: str, names: list, pos: dict, outs: dict, redactor, final: bool) -> None:
    """One copy of what each worker log gained since the last round (pos:
    bytes copied per name; outs: the open copies, opened on first sight)."""
    for name in names:
        if name not in outs:
            outs[name] = os.fdopen(os.open(os.path.join(dst_dir, name),
                                           os.O_WRONLY | os.O_CREAT | os.O_TRUNC, fsutil.FILE_MODE), "wb")
            os.fchmod(outs[name].fileno(), fsutil.FILE_MODE)
        src = os.path.join(logs_dir, name)
        if _size(src) < pos.get(name, 0):
            pos[name] = 0  # rotated by Ray (RAY_ROTATION_MAX_BYTES): the new file from its start
        pos[name] = copy_new(src, outs[name], pos.get(name, 0), redactor, final=final)


def node_job_over(driver_copy: str, grace_s: float = WORKERS_GRACE_S):
    """job_over for keep_node: the driver's keeper is done (the driver ended,
    or its node died) and Ray has ended the job's workers here, or grace_s
    passed since the driver's keeper was done."""
    done_at = []

    def over(names) -> bool:
        if not done_at:
            if not _lock_free(driver_copy):
                return False
            done_at.append(time.monotonic())
        return not writers_alive(names) or time.monotonic() - done_at[0] >= grace_s
    return over


class NodeKeeper:
    """One node's keeper as a Ray actor (ray.remote'd by dispatch): its
    thread runs keep_node over this node's session logs, then the actor ends.
    The work is not a method call: a detached actor outlives the dispatcher
    that created it (the driver's node may die), a call in flight may not."""

    def __init__(self, job_dir: str, job_hex: str, every_s: float):
        """job_dir: the job directory's path, as the dispatcher hands it to
        this actor's process (a JobDir does not survive pickling)."""
        import threading
        threading.Thread(target=self._run, args=(JobDir(job_dir), job_hex, every_s), daemon=True).start()

    def _run(self, jd: JobDir, job_hex: str, every_s: float) -> None:
        import ray
        try:
            if os.environ.get("MVP_PRIVATE_ENV"):
                import mvp_private_env  # beside the job's own: the masked values come from Ray's GCS store
                mvp_private_env.load_in_worker()
            node = ray._private.worker._global_node  # this worker's node: its session logs, its address
            ip = node.node_ip_address
            keep_node(node.get_logs_dir_path(), str(jd.node_copy(ip)), job_hex,
                      node_job_over(str(jd.live_log)), every_s,
                      redact.Redactor(redact.secret_values(dict(os.environ))), str(jd.closed),
                      first=lambda: runenv.write_node(jd, ip))
        finally:
            ray.kill(ray.get_runtime_context().current_actor, no_restart=True)


def dispatch(jd: JobDir, logs_dir: str, driver_pid: int, driver_alive, every_s: float) -> None:
    """Waits for the driver's Ray job id, writes it to logs/ray_job_id, then
    places a NodeKeeper on each alive node (each round: nodes may join) until
    the driver is gone. Any failure here leaves the driver's own copy as is."""
    job_hex, born_at = "", started_at(driver_pid) or 0.0
    while driver_alive() and not job_hex:
        time.sleep(WATCH_S)
        job_hex = ray_job_id(logs_dir, driver_pid, born_at)
    if not job_hex:
        return
    fsutil.write_text(jd.ray_job_id, job_hex + "\n")
    here = os.path.dirname(os.path.abspath(__file__))
    env = {"PYTHONPATH": ":".join([here, os.path.join(os.path.dirname(os.path.dirname(here)), "jobenv"), "${PYTHONPATH}"])}
    if os.environ.get("MVP_PRIVATE_ENV"):
        env["MVP_PRIVATE_ENV"] = os.environ["MVP_PRIVATE_ENV"]
    # Not the job's config: this connection is no part of the submitted job.
    os.environ.pop("RAY_JOB_CONFIG_JSON_ENV_VAR", None)
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    sid = jd.id
    ray.init(address=os.environ.get("RAY_ADDRESS") or "auto", namespace="mvp_log_keepers", log_to_driver=False,
             logging_level="ERROR", runtime_env={"env_vars": env},
             job_config=ray.job_config.JobConfig(metadata={ROLE_KEY: ROLE, KEEPER_OF_KEY: sid}))
    actor = ray.remote(NodeKeeper)
    own = _keep_own_node(jd, logs_dir, job_hex, every_s, ray.get_runtime_context().get_node_id())
    placed = {own.name}
    while driver_alive() and not jd.closed.exists():
        for node in ray.nodes():
            if node.get("Alive") and node["NodeID"] not in placed and _can_hold_job_work(node):
                placed.add(node["NodeID"])
                actor.options(name=f"{sid}@{node['NodeID'][:16]}", lifetime="detached", num_cpus=0, max_restarts=0,
                              scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
                              ).remote(str(jd), job_hex, every_s)
        deadline = time.monotonic() + every_s
        while driver_alive() and time.monotonic() < deadline:
            time.sleep(WATCH_S)
    own.join()


def _keep_own_node(jd: JobDir, logs_dir: str, job_hex: str, every_s: float, node_id: str):
    """The driver's own node is kept by the dispatcher itself, in a thread
    (named after the node) that runs keep_node as a NodeKeeper would: it
    already runs there, in the node's PID namespace, outside the driver's
    process tree, and a NodeKeeper actor would cost every job one more Ray
    worker process (about 2 s of CPU each on the test machines)."""
    import threading
    import ray
    ip = ray._private.worker._global_node.node_ip_address  # as NodeKeeper reads its node's
    own = threading.Thread(name=node_id, target=keep_node, args=(
        logs_dir, str(jd.node_copy(ip)), job_hex, node_job_over(str(jd.live_log)), every_s,
        redact.Redactor(redact.secret_values(dict(os.environ))), str(jd.closed)),
        kwargs={"first": lambda: runenv.write_node(jd, ip)})
    own.start()
    return own


def _can_hold_job_work(node: dict) -> bool:
    """Whether a node (ray.nodes()) has CPUs or GPUs for the job's workers:
    the control-plane head (0 CPU, 0 GPU) never runs any, and a keeper there
    would only cost the job a Python worker process for nothing."""
    res = node.get("Resources") or {}
    return res.get("CPU", 0) > 0 or res.get("GPU", 0) > 0


def copy_new(src: str, out, pos: int, redactor, final: bool) -> int:
    """Copies src's bytes from pos up to its last newline (to its end when
    final); returns the new position."""
    try:
        with open(src, "rb") as f:
            f.seek(pos)
            data = f.read()
    except OSError:
        return pos
    if not final:
        data = data[:data.rfind(b"\n") + 1]
    if data:
        out.write(redactor.text(data.decode("utf-8", errors="replace")).encode("utf-8"))
        out.flush()
    return pos + len(data)


if __name__ == "__main__":
    sys.exit("log_keeper is loaded by launch.py")
