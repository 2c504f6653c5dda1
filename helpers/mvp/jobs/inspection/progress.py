"""A running job's progress, read from the copy of its driver log that its
node keeps in the job directory (log_keeper.py): the latest step, the total
from the trainer's progress bar, the latest loss or score, seconds per step
and the time left. Reading a file costs no Ray call, so `--wait` and
`50_status` can show it on every poll."""
import os
import re
from pathlib import Path
from typing import Optional

from ...worker.jobdir import JobDir
from ...core import metrics

# The end of the log holds the newest step and bar; a step line is < 4 KB.
TAIL_BYTES = 64 * 1024
# verl's and the stand-in's progress bars: `Training Progress: ...| 7/14 [...`
# (PPO, GRPO), `Epoch 1/1: ...| 3/8 [...` (SFT): done/total before the times.
BAR = re.compile(r"\|\s*(\d+)/(\d+) \[")
# The first of these a step line has is shown: what an operator watches.
FIGURES = (("critic/score/mean", "score"), ("train/loss", "loss"), ("actor/pg_loss", "pg_loss"))


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            start = max(0, os.fstat(f.fileno()).st_size - TAIL_BYTES)
            f.seek(start)
            data = f.read()
    except OSError:
        return ""
    if start:
        data = data[data.find(b"\n") + 1:]  # the first line is cut: drop it
    return data.decode("utf-8", errors="replace")


def of_text(text: str) -> Optional[dict]:
    """step, total (None when no bar), figure name and value, step_s, eta_s."""
    rows = metrics.step_lines(text)
    if not rows:
        return None
    last = rows[-1]
    bars = BAR.findall(metrics.ANSI.sub("", text))
    total = int(bars[-1][1]) if bars else None
    step_times = [r["timing_s/step"] for r in rows if isinstance(r.get("timing_s/step"), float)]
    step_s = step_times[-1] if step_times else (metrics.tqdm_step_seconds(text) or [None])[-1]
    name, value = next(((label, last[key]) for key, label in FIGURES if isinstance(last.get(key), float)),
                       (None, None))
    step = int(last["step"])
    eta = (total - step) * step_s if total and step_s is not None and total >= step else None
    return {"step": step, "total": total, "figure": name, "value": value, "step_s": step_s, "eta_s": eta}


def of_job(jd: JobDir) -> Optional[dict]:
    """The progress in the job's kept log, or None when it has no step yet."""
    return of_file(jd.live_log)


def of_file(path: Path) -> Optional[dict]:
    """The progress in the end of any log file (a kept node log too)."""
    return of_text(_tail(path))


def bar_total(path: Path) -> Optional[int]:
    """The total of the last progress bar in the end of a log file (a Ray
    worker's bar is in its .err, its step lines in its .out)."""
    bars = BAR.findall(metrics.ANSI.sub("", _tail(path)))
    return int(bars[-1][1]) if bars else None


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def text(p: dict) -> str:
    """`step 7/14, score 0.031, 2.0 s/step, ETA 14s`, as far as known."""
    parts = [f"step {p['step']}" + (f"/{p['total']}" if p["total"] else "")]
    if p["figure"]:
        parts.append(f"{p['figure']} {p['value']:.4g}")
    if p["step_s"] is not None:
        parts.append(f"{p['step_s']:.3g} s/step")
    if p["eta_s"] is not None:
        parts.append(f"ETA {_duration(p['eta_s'])}")
    return ", ".join(parts)
