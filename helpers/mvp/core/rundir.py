"""The nightly's run directories, the one object that names their files:
regressions/ (Regressions: history.json, index.html, fingerprints.json, the
lock) and each run in it, a night's <SHARED_ROOT>/regressions/nightly-<time>/
or a bisection's bisect-<time>/ (RunDir: report.json, plan.json, nightly.log,
...). No other module spells a file name of theirs (tests/unit/run_dir.bats);
bash reads them from shared-layout.txt (mvp::config::run_file). "The last good
night" is defined here once (last_good)."""
from datetime import datetime
from pathlib import Path
from typing import Iterable, Iterator, Optional

from ..worker import fsutil
from ..worker.jobdir import NamedFiles

# Every file of regressions/ and of a run in it: (name, path relative to
# regressions/, what it holds). shared-layout.txt lists them as comments.
FILES = (
    ("history", "history.json", "each night's compact entry (index.record); never pruned"),
    ("index", "index.html", "every night and each job's trend charts"),
    ("fingerprints", "fingerprints.json", "each night's environment fingerprint and what changed (night_fingerprint.py)"),
    ("lock", ".nightly.lock", "held by the running night (60): a run never overlaps another"),
    ("log", "<run id>/nightly.log", "everything the night's steps said"),
    ("inputs", "<run id>/inputs.json", "the input manifests' hashes before and after step 30"),
    ("plan", "<run id>/plan.json", "what the night ran, for the judge"),
    ("report", "<run id>/report.json", "the judged night (report_md and report_html are made of it)"),
    ("report_md", "<run id>/report.md", "the report for a terminal or a mail; a bisection's too"),
    ("report_html", "<run id>/report.html", "the report as one static page; a bisection's too"),
    ("control", "<run id>/control.json", "the same-night control's plan and probes (control.py)"),
    ("bisection", "<run id>/bisection.json", "what the night's bisection found, for the mail"),
    ("notified", "<run id>/notified.json", "what was sent: a night is told once"),
    ("bisect_state", "<bisect id>/bisect.json", "a bisection's state: its commits and probes (61)"),
    ("bisect_log", "<bisect id>/bisect.log", "a bisection's snapshots' and probes' logs"),
)
_ROOT = {name: rel for name, rel, _ in FILES if "/" not in rel}
_RUN = {name: rel.split("/", 1)[1] for name, rel, _ in FILES if "/" in rel}
NIGHT, BISECTION = "nightly-", "bisect-"
STAMP = "%Y%m%dT%H%M%SZ"
# A night's run id, as 60 makes it.
NIGHT_ID = NIGHT + r"\d{8}T\d{6}Z"


class RunDir(NamedFiles):
    """One night's or one bisection's directory. Each run-level name of FILES
    is an attribute, its path (rd.report, rd.log); takes a path or a RunDir."""
    NAMES = _RUN

    def __eq__(self, other) -> bool:
        return isinstance(other, RunDir) and self.path == other.path

    def __hash__(self) -> int:
        return hash(self.path)

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def regressions(self) -> "Regressions":
        return Regressions(self.path.parent)

    def read_report(self, default=None):
        """report.json, or `default` when the night was not judged (or it is unreadable)."""
        return fsutil.read_json(self.report, default)

    def read_plan(self, default=None):
        return fsutil.read_json(self.plan, default)


class Regressions(NamedFiles):
    """regressions/: its own files as attributes (regs.history, regs.index,
    regs.fingerprints, regs.lock), its runs as RunDirs."""
    NAMES = _ROOT

    def read_history(self) -> list:
        """history.json: each night's compact entry, oldest first ([] without one)."""
        return fsutil.read_json(self.history, []) or []

    def run(self, run_id: str) -> RunDir:
        return RunDir(self.path / run_id)

    def nights(self) -> list:
        """Every night's RunDir, oldest first."""
        return [RunDir(p) for p in sorted(self.path.glob(NIGHT + "*")) if p.is_dir()]

    def bisections(self) -> list:
        """Every bisection's RunDir, oldest first."""
        return [RunDir(p) for p in sorted(self.path.glob(BISECTION + "*")) if p.is_dir()]

    def new_bisection(self, now: datetime) -> RunDir:
        return self.run(BISECTION + now.strftime(STAMP))

    def reports(self) -> Iterator[tuple]:
        """(run id, report.json or None) of each night, newest first, read as asked."""
        return ((rd.id, rd.read_report()) for rd in reversed(self.nights()))

    def good_nights(self, before: str) -> Iterator[RunDir]:
        """The good nights before run `before`, newest first (is_good_before)."""
        return (self.run(run_id) for run_id, rep in self.reports() if is_good_before(run_id, rep, before))

    def last_good_night(self, before: str) -> Optional[dict]:
        """The report.json of the newest good night before run `before`."""
        return last_good(self.reports(), before)


def is_good_before(run_id: str, night: Optional[dict], before: str) -> bool:
    """The one definition of a good night before run `before`: it ran
    earlier and passed (night: its report.json, or its entry of a store)."""
    return run_id < before and bool(night) and bool(night.get("passed"))


def last_good(nights: Iterable[tuple], before: str) -> Optional[dict]:
    """The first of (run id, night) pairs, given newest first, that is a good night before run `before`."""
    return next((night for run_id, night in nights if is_good_before(run_id, night, before)), None)


def file_name(name: str) -> str:
    """The bare file name of FILES' `name` (for a message that names it)."""
    return (_ROOT.get(name) or _RUN[name]).rsplit("/", 1)[-1]
