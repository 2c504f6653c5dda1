"""Nights simulated for the unit tests of the nightly's history judge
(helpers/mvp/nightly/history.py): each night one job with the given figures
is judged by the real check against the history so far, then recorded by the
real index.record, as 60_nightly_regression.sh does."""
import json
import sys
from pathlib import Path
from types import SimpleNamespace

from mvp.nightly import history, index, judge


def settings(**over):
    base = dict(nightly_history=7, nightly_min_history=3, nightly_history_since="",
                nightly_band_k="5", nightly_band_steps=2, nightly_band_floor="2",
                nightly_tolerance={"step_s": "10", "throughput": "10", "final_score": "10"})
    base.update(over)
    return SimpleNamespace(**base)


def job(name="grpo", status="SUCCEEDED", step_s=10.0, throughput=100.0, **outcome):
    metrics = {"steps": 5, "mean_step_s": step_s, "mean_throughput": throughput, "sps": 1.0, "step_time_from": "timing_s/step",
               "step_mentions": 5, "final_score": None, "best_score": None, "final_loss": None, "peak_memory_gb": None}
    metrics.update(outcome)
    return {"name": name, "submission_id": f"{name}-x", "status": status, "duration_s": 60.0,
            "checks": [{"name": "succeeded_in_time", "passed": status == "SUCCEEDED", "evidence": ""}], "metrics": metrics}


def night(regressions: Path, day: int, jobs: list, cfg) -> dict:
    """Judges and records night number `day` (run ids sort by day)."""
    run_id = f"nightly-2026{1 + day // 28:02d}{1 + day % 28:02d}T023000Z"
    past = json.loads((regressions / "history.json").read_text()) if (regressions / "history.json").is_file() else []
    for j in jobs:
        j["checks"].append(history.check(j, past, run_id, cfg))
    rep = {"run_id": run_id, "started_at": run_id[8:12] + "-" + run_id[12:14] + "-" + run_id[14:16] + "T02:30:00Z",
           "jobs": jobs, "passed": all(c["passed"] is not False for j in jobs for c in j["checks"])}
    rep["summary"] = judge.summary_line(rep)
    index.write(regressions, rep)
    return rep


def regression(rep: dict, name: str = "grpo") -> dict:
    return next(c for j in rep["jobs"] if j["name"] == name for c in j["checks"] if c["name"] == "regression")


def series(regressions: Path, values: list, figure: str = "step_s", cfg=None) -> list:
    """One night per value of `figure` (None: the job FAILED that night);
    returns each night's regression verdict: True (passed), False, None."""
    out = []
    for day, v in enumerate(values):
        j = job(status="FAILED") if v is None else job(**{figure: v})
        out.append(regression(night(regressions, day, [j], cfg or settings()), "grpo")["passed"])
    return out


if __name__ == "__main__":
    print(json.dumps(eval(sys.argv[1])))  # a test's expression, e.g. series(Path(...), [...])
