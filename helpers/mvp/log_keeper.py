"""Keeps a copy of the driver's log in the job directory while the job runs
(standard library, fsutil.py and redact.py only: the launcher loads it on the worker
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
archiving (jobdir.finalize) can wait for that last copy (wait_until_done)."""
import fcntl
import os
import sys
import time

try:
    from . import fsutil, redact
except ImportError:  # loaded by launch.py as a top-level module
    import fsutil
    import redact

LIVE_NAME = "driver.live.log"
# How often the keeper looks whether the driver is still there: the last copy
# follows the driver's end within this, whatever the sync interval.
WATCH_S = 0.5


def driver_log_path() -> str:
    """The file this process's stdout writes to (Ray's job-driver-<id>.log),
    or "" when stdout is not a regular file (a terminal, a pipe)."""
    try:
        path = os.readlink("/proc/self/fd/1")
    except OSError:
        return ""
    return path if os.path.isfile(path) else ""


def start(job_dir: str, every_s: float) -> bool:
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
            keep(src, os.path.join(job_dir, "logs", LIVE_NAME), lambda: started(driver) == born, every_s,
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


def keep(src: str, dst: str, driver_alive, every_s: float, redactor) -> None:
    """Appends what the driver wrote since the last round, whole lines only
    (a secret split over two reads would escape the mask), until the driver
    is gone; then the rest."""
    pos, last = 0, 0.0
    # Owner and group only, as every file of a job directory.
    with os.fdopen(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, fsutil.FILE_MODE), "wb") as out:
        os.fchmod(out.fileno(), fsutil.FILE_MODE)
        fcntl.flock(out.fileno(), fcntl.LOCK_EX)
        while True:
            alive = driver_alive()
            if not alive or time.monotonic() - last >= every_s:
                pos = copy_new(src, out, pos, redactor, final=not alive)
                last = time.monotonic()
            if not alive:
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
