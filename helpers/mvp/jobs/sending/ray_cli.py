"""`ray job submit`, its start-up paid while the runbook checks the job.

Ray's CLI spends most of its time importing (Ray, Serve, pandas: ~1.4 s of
a ~1.8 s `ray job submit` here) before it reads a word of its command line.
So the submitter starts it first: `python -m mvp.jobs.sending.ray_cli` imports the entry
point the `ray` script runs (`ray.scripts.scripts.main`), then waits for its
words on stdin. The JobSpec check, the admission step and the job directory
happen meanwhile; once they pass, the words go down the pipe and the CLI runs
as `ray WORDS...` would. A refused submission kills it before it has read a
word, so Ray never hears of that job. A submission that joins the --queue
line lets its CLI go and starts another once admitted: a queue may last
hours, and a CLI with Ray imported holds ~190 MB.

The words are not secret-bearing (the runtime_env travels through a pipe the
CLI opens as /dev/fd/N), and they never reach this process's argv either."""
import json
import os
import subprocess
import sys
import threading

from ...worker.errors import MvpError


class WarmCli:
    """The Ray CLI, importing, then waiting for its words (start())."""

    def __init__(self, command: list):
        self.command = command
        self._spawn()

    def _spawn(self) -> None:
        # The runtime_env's pipe: the CLI inherits the read end now and opens
        # it as /dev/fd/N once it has its words.
        self.env_read, self.env_write = os.pipe()
        try:
            # Unbuffered: the CLI's stdout lines and its traceback on stderr
            # reach the one pipe in the order they were written.
            self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True, pass_fds=(self.env_read,),
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except OSError:
            os.close(self.env_write)
            raise
        finally:
            os.close(self.env_read)

    def ready(self) -> str:
        """The runtime_env's file as the CLI will name it, after starting the
        CLI afresh if it was let go (release)."""
        if self.proc.poll() is not None:
            self._spawn()
        return f"/dev/fd/{self.env_read}"

    def release(self) -> None:
        """Ends the waiting CLI for now (a --queue wait may last hours, and a
        CLI with Ray imported holds ~190 MB); ready() starts another."""
        self.discard()

    def run(self, words: list, runtime_env: bytes, timeout_s: float) -> tuple:
        """Gives the CLI its words (after `ray`) and the runtime_env; waits at
        most timeout_s: (exit code, merged output)."""
        # A thread writes the runtime_env, so one larger than the pipe's
        # buffer cannot block against the CLI's own output.
        feeder = threading.Thread(target=_feed, args=(self.env_write, runtime_env))
        self.env_write = None  # the feeder closes it
        feeder.start()
        try:
            output, _ = self.proc.communicate(json.dumps(words) + "\n", timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.discard()
            raise MvpError(f"ray job submit did not finish in {timeout_s:g} s") from None
        finally:
            feeder.join()
        return self.proc.returncode, output

    def discard(self) -> None:
        """Ends a CLI that will not be used (or is stuck): it has read no word,
        or its time is up."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            stream.close()
        if self.env_write is not None:
            os.close(self.env_write)
            self.env_write = None


def _feed(fd: int, data: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(data)
    except BrokenPipeError:  # the CLI ended without reading; its exit code says why
        pass


# This module run as the CLI's process; tests put a stand-in in its place.
COMMAND = [sys.executable, "-m", "mvp.jobs.sending.ray_cli"]


def start() -> WarmCli:
    """The CLI, importing. Should this process die before giving it words,
    the CLI reads end-of-file once imported and exits having done nothing."""
    try:
        return WarmCli(COMMAND)
    except OSError as exc:
        raise MvpError(f"ray job submit did not run: {exc}") from None


def _main() -> int:
    """In the CLI's process: the import first, then the words."""
    from ray.scripts.scripts import main
    line = sys.stdin.readline()
    if not line:  # the submitter went away before the job was admitted
        return 0
    sys.argv = ["ray", *json.loads(line)]
    return main()


if __name__ == "__main__":
    sys.exit(_main())
