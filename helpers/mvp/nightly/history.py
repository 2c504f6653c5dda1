"""A nightly job judged against its own past: each figure of the night
(seconds per step, throughput, reward, loss, peak memory) against the median
of the same job's last K good nights in regressions/history.json.

A good night of a job is one where that job SUCCEEDED and passed every check,
this one included: a regressed night never becomes the baseline, so a
regression stays flagged until it is fixed (or MVP_NIGHTLY_HISTORY_SINCE
starts the history afresh after an intended change). With fewer good nights
than MVP_NIGHTLY_MIN_HISTORY a figure is "not judged yet": the check is then
neither a pass nor a fail (passed: null).

Where tonight's log and enough good nights have a figure's per-step curve,
its band (bands.py) judges it instead of the single figure(s) it covers
(REPLACED); elsewhere the single figure is judged as before, and the
band's verdict says why there was none."""
from statistics import median
from typing import Optional

from ..worker.errors import MvpError
from . import bands

# figure: (the direction that is worse, how the evidence names it).
FIGURES = {
    "step_s": ("higher", "s/step"),
    "throughput": ("lower", "throughput"),
    "final_score": ("lower", "final score"),
    "best_score": ("lower", "best score"),
    "final_loss": ("higher", "final loss"),
    "peak_memory_gb": ("higher", "peak memory GB"),
}
# A band figure (bands.FIGURES) and the single figures it judges instead, where it has a band.
REPLACED = {"score": ("final_score", "best_score"), "loss": ("final_loss",), "step_s": ("step_s",),
            "throughput": ("throughput",), "memory_gb": ("peak_memory_gb",),
            "cpu_memory_added_gb": ("peak_memory_gb",)}


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


def judge_figure(figure: str, value, past: list, tolerance_pct: float, min_nights: int, k: float = 0.0) -> dict:
    """One figure's verdict: regressed True/False, or None (not judged), with
    the band [median - half, median + half] it was judged against: half is
    the tolerance (a percent of the median), or k MADs of the past nights
    where they spread wider (k = 0: the tolerance alone)."""
    worse, label = FIGURES[figure]
    if value is None:
        return {"figure": figure, "regressed": None, "evidence": f"{label}: not in tonight's log"}
    if len(past) < min_nights:
        return {"figure": figure, "value": value, "regressed": None,
                "evidence": f"{label} {value:.4g}: not judged yet ({len(past)} good nights in history, {min_nights} needed)"}
    mid = median(past)
    band, spread = abs(mid) * tolerance_pct / 100, k * median(abs(v - mid) for v in past)
    width = f"{tolerance_pct:g}%"
    if spread > band:
        band, width = spread, (f"{spread / abs(mid) * 100:.0f}%: " if mid else "") + f"{k:g} MADs of its nights"
    change = (value - mid) / abs(mid) * 100 if mid else (0.0 if value == mid else float("inf") * (1 if value > mid else -1))
    regressed = value > mid + band if worse == "higher" else value < mid - band
    verdict = ("worse than" if regressed else "within" if abs(value - mid) <= band else "better, beyond") + f" {width}"
    return {"figure": figure, "value": value, "median": mid, "low": mid - band, "high": mid + band, "nights": len(past),
            "regressed": regressed,
            "evidence": f"{label} {value:.4g} vs median {mid:.4g} of {len(past)} nights: {change:+.0f}% ({verdict})"}


def band_rule(settings) -> bands.Rule:
    """The bands' rule from MVP_NIGHTLY_BAND_K, _STEPS, _FLOOR and
    MVP_NIGHTLY_MIN_HISTORY (the good nights a step's band needs), with the
    figures that need more (bands.NIGHTLY_AT_LEAST)."""
    try:
        k, floor = float(settings.nightly_band_k), float(settings.nightly_band_floor)
    except ValueError:
        k = floor = -1.0
    if not (0 < k < float("inf") and 0 <= floor < float("inf")) or settings.nightly_band_steps < 1:
        raise MvpError(f"MVP_NIGHTLY_BAND_K={settings.nightly_band_k}, MVP_NIGHTLY_BAND_FLOOR="
                       f"{settings.nightly_band_floor}, MVP_NIGHTLY_BAND_STEPS={settings.nightly_band_steps}: "
                       "K must be a number > 0, FLOOR a percent >= 0, STEPS a whole number >= 1")
    return bands.Rule(k=k, steps=settings.nightly_band_steps, min_refs=settings.nightly_min_history, floor=floor / 100,
                      at_least=bands.NIGHTLY_AT_LEAST)


def reference_curves(history: list, name: str, before_run: str, nights: int, since: str = "") -> list:
    """The per-step curves of job `name`'s last `nights` good nights that
    kept them (index.record keeps those of the newest good nights)."""
    out = []
    for night in history:
        run = night["run_id"]
        entry = night.get("jobs", {}).get(name)
        if run < before_run and not (since and run < since) and is_good(entry) and entry.get("curves"):
            out.append(entry["curves"])
    return out[-nights:]


def judge_bands(job: dict, history: list, run_id: str, settings, rule: bands.Rule) -> dict:
    """bands.judge_curves of tonight's curves against the good nights'; a
    figure without a band names the single figures judged in its place."""
    refs = reference_curves(history, job["name"], run_id, settings.nightly_history, settings.nightly_history_since)
    verdict = bands.judge_curves(job.get("curves") or {}, refs, rule)
    for fig in verdict["figures"]:
        if fig["regressed"] is None and fig["figure"] in REPLACED:
            fig["evidence"] += f"; judged by its single figure ({', '.join(REPLACED[fig['figure']])}) instead"
    return verdict


def check(job: dict, history: list, run_id: str, settings) -> dict:
    """The `regression` check of one judged job: its curves against their
    bands (`bands`) and, where a curve has none, each single figure's verdict
    (`figures`, kept in history.json for the trend charts)."""
    if job.get("status") != "SUCCEEDED":
        return {"name": "regression", "passed": None, "figures": [], "bands": [],
                "evidence": f"not judged: the job ended {job.get('status')}, its figures are not comparable"}
    rule = band_rule(settings)
    banded = judge_bands(job, history, run_id, settings, rule)
    replaced = {f for b in banded["figures"] if b["regressed"] is not None for f in REPLACED.get(b["figure"], ())}
    tolerances = settings.nightly_tolerance
    verdicts = [judge_figure(f, v, baseline(history, job["name"], f, run_id, settings.nightly_history,
                                            settings.nightly_history_since), float(tolerances.get(f, 10)),
                             settings.nightly_min_history, rule.k)
                for f, v in figures(job).items() if f not in replaced]
    judged = [v for v in verdicts if v["regressed"] is not None] + [b for b in banded["figures"] if b["regressed"] is not None]
    regressed = [v["evidence"] for v in verdicts if v["regressed"]] + banded["reasons"]
    # A regression speaks alone; otherwise every figure tonight's log has, judged or not yet.
    shown = regressed or [v["evidence"] for v in verdicts if "value" in v] + [b["evidence"] for b in banded["figures"]]
    evidence = "; ".join(shown) or "no figure in tonight's log"
    passed = None if not judged else not regressed
    return {"name": "regression", "passed": passed, "figures": verdicts, "bands": banded["figures"], "evidence": evidence}
