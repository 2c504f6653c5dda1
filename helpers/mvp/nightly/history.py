"""A nightly job judged against its own past: each figure of the night
(seconds per step, throughput, reward, loss, peak memory) against the median
of the same job's last K good nights in regressions/history.json.

A good night of a job is one where that job SUCCEEDED and passed every check,
this one included: a regressed night never becomes the baseline, so a
regression stays flagged until it is fixed (or MVP_NIGHTLY_HISTORY_SINCE
starts the history afresh after an intended change). With fewer good nights
than MVP_NIGHTLY_MIN_HISTORY a figure is "not judged yet": the check is then
neither a pass nor a fail (passed: null)."""
from statistics import median
from typing import Optional

# figure: (the direction that is worse, how the evidence names it).
FIGURES = {
    "step_s": ("higher", "s/step"),
    "throughput": ("lower", "throughput"),
    "final_score": ("lower", "final score"),
    "best_score": ("lower", "best score"),
    "final_loss": ("higher", "final loss"),
    "peak_memory_gb": ("higher", "peak memory GB"),
}


def figures(job: dict) -> dict:
    """The night's figures of a judged job (None where the log has none)."""
    m = job["metrics"]
    out = {"step_s": m.get("mean_step_s"), "throughput": m.get("mean_throughput")}
    out.update({k: m.get(k) for k in ("final_score", "best_score", "final_loss", "peak_memory_gb")})
    return out


def is_good(entry: Optional[dict]) -> bool:
    return bool(entry) and entry.get("status") == "SUCCEEDED" and not entry.get("failed_checks") and "figures" in entry


def baseline(history: list, name: str, figure: str, before_run: str, nights: int, since: str = "") -> list:
    """The figure's values on the last `nights` good nights of job `name`
    before run `before_run` (and not before `since`), oldest first."""
    values = []
    for night in history:
        run = night["run_id"]
        if run >= before_run or (since and run < since):
            continue
        entry = night.get("jobs", {}).get(name)
        if is_good(entry) and entry["figures"].get(figure) is not None:
            values.append(entry["figures"][figure])
    return values[-nights:]


def judge_figure(figure: str, value, past: list, tolerance_pct: float, min_nights: int) -> dict:
    """One figure's verdict: regressed True/False, or None (not judged), with
    the band [median - tolerance, median + tolerance] it was judged against."""
    worse, label = FIGURES[figure]
    if value is None:
        return {"figure": figure, "regressed": None, "evidence": f"{label}: not in tonight's log"}
    if len(past) < min_nights:
        return {"figure": figure, "value": value, "regressed": None,
                "evidence": f"{label} {value:.4g}: not judged yet ({len(past)} good nights in history, {min_nights} needed)"}
    mid = median(past)
    band = abs(mid) * tolerance_pct / 100
    change = (value - mid) / abs(mid) * 100 if mid else (0.0 if value == mid else float("inf") * (1 if value > mid else -1))
    regressed = value > mid + band if worse == "higher" else value < mid - band
    verdict = ("worse than" if regressed else "within" if abs(value - mid) <= band else "better, beyond") + f" {tolerance_pct:g}%"
    return {"figure": figure, "value": value, "median": mid, "low": mid - band, "high": mid + band, "nights": len(past),
            "regressed": regressed,
            "evidence": f"{label} {value:.4g} vs median {mid:.4g} of {len(past)} nights: {change:+.0f}% ({verdict})"}


def check(job: dict, history: list, run_id: str, settings) -> dict:
    """The `regression` check of one judged job, with each figure's verdict
    in `figures` (kept in history.json for the trend charts)."""
    if job.get("status") != "SUCCEEDED":
        return {"name": "regression", "passed": None, "figures": [],
                "evidence": f"not judged: the job ended {job.get('status')}, its figures are not comparable"}
    tolerances = settings.nightly_tolerance
    verdicts = [judge_figure(f, v, baseline(history, job["name"], f, run_id, settings.nightly_history,
                                            settings.nightly_history_since), float(tolerances.get(f, 10)),
                             settings.nightly_min_history)
                for f, v in figures(job).items()]
    judged = [v for v in verdicts if v["regressed"] is not None]
    regressed = [v for v in judged if v["regressed"]]
    # A regression speaks alone; otherwise every figure tonight's log has, judged or not yet.
    shown = regressed or [v for v in verdicts if "value" in v]
    evidence = "; ".join(v["evidence"] for v in shown) or "no figure in tonight's log"
    passed = None if not judged else not regressed
    return {"name": "regression", "passed": passed, "figures": verdicts, "evidence": evidence}
