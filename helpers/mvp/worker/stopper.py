"""The nightly's interruption of a job at a chosen step (standard library only:
the launcher starts it on the worker that holds the driver, before the trainer
replaces the launcher).

When the job's record asks for it (resolved.stop_at_step = K, set by the
nightly through MVP_STOP_AT_STEP, never for a resumed job), a forked watcher
reads the driver's own Ray log file as it grows, the file verl's `step:N - ...`
lines reach (PPO/GRPO's from the TaskRunner actor, SFT's from the driver),
and once verl has logged step K it sends SIGKILL to the driver: the trainer
gets no notice, runs no handler and saves nothing more, as when the kernel's
OOM killer or a preempted node ends it. Ray then ends the job FAILED and
kills its actors; `--retry` answers it as it answers any crash. What happened
is written to <job dir>/logs/interrupt.json (JobDir.interrupt, read by the nightly's judge) and
said in the driver log. The watcher stays in the driver's process tree, so
Ray's own stop takes it along; it ends with the driver."""
import os
import re
import signal
import time
from pathlib import Path

try:
    from . import fsutil, log_keeper
    from .jobdir import JobDir
except ImportError:  # loaded by launch.py as a top-level module
    import fsutil
    import log_keeper
    from jobdir import JobDir

# verl's step line, after Ray's prefix, ANSI colours or tqdm's bar (core/metrics.py STEP).
STEP = re.compile(rb"(?:^|(?<=[\s\])m]))step:(\d+) - ")
POLL_S = 0.05


def start(jd: JobDir, stop_at_step) -> bool:
    """Forks the watcher when stop_at_step is a step >= 1 and the driver log is
    a file; returns whether it did. The caller goes on (and execs the trainer)."""
    src = log_keeper.driver_log_path()
    driver = os.getpid()
    born = log_keeper.started(driver)
    if not isinstance(stop_at_step, int) or stop_at_step < 1 or not src or born is None:
        return False
    if os.fork():
        return True
    try:
        watch(src, str(jd.interrupt), driver, lambda: log_keeper.started(driver) == born,
              stop_at_step)
    finally:
        os._exit(0)


def last_step(chunk: bytes, seen: int) -> int:
    """The highest training step logged in chunk (seen: the highest before)."""
    for m in STEP.finditer(chunk.replace(b"\r", b"\n")):
        seen = max(seen, int(m.group(1)))
    return seen


def watch(src: str, record: str, driver: int, driver_alive, at_step: int) -> None:
    """Reads src's new whole lines until verl logged at_step (then SIGKILLs
    the driver) or the driver ended; writes the record either way."""
    pos, seen, rest = 0, 0, b""
    while driver_alive():
        try:
            with open(src, "rb") as f:
                f.seek(pos)
                data = f.read()
        except OSError:
            data = b""
        pos += len(data)
        head, _, rest = (rest + data).rpartition(b"\n")
        seen = last_step(head, seen)
        if seen >= at_step:
            os.kill(driver, signal.SIGKILL)
            _record(record, {"stop_at_step": at_step, "killed": True, "signal": "SIGKILL", "pid": driver,
                             "last_step_seen": seen})
            print(f"mvp stopper: SIGKILL sent to the trainer (pid {driver}) once verl logged step {seen} "
                  f"(asked: after step {at_step}); the nightly's resume-fidelity check", flush=True)
            return
        time.sleep(POLL_S)
    _record(record, {"stop_at_step": at_step, "killed": False, "last_step_seen": seen})


def _record(path: str, value: dict) -> None:
    value["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    fsutil.write_json(Path(path), value)
