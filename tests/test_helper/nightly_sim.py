"""Nights simulated for the unit tests of the nightly's history judge
(helpers/mvp/nightly/history.py): each night one job with the given figures
is judged by the real check against the history so far, then recorded by the
real index.record, as 60_nightly_regression.sh does."""
import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace

from mvp.nightly import bands, history, index, judge, report


def settings(**over):
    base = dict(nightly_history=7, nightly_min_history=3, nightly_history_since="",
                nightly_band_k="5", nightly_band_steps=2, nightly_band_floor="2",
                nightly_tolerance={"step_s": "10", "throughput": "10", "final_score": "10"})
    base.update(over)
    return SimpleNamespace(**base)


def job(name="grpo", status="SUCCEEDED", step_s=10.0, throughput=100.0, curves=None, **outcome):
    metrics = {"steps": 5, "mean_step_s": step_s, "mean_throughput": throughput, "sps": 1.0, "step_time_from": "timing_s/step",
               "step_mentions": 5, "final_score": None, "best_score": None, "final_loss": None, "peak_memory_gb": None}
    metrics.update(outcome)
    return {"name": name, "submission_id": f"{name}-x", "status": status, "duration_s": 60.0,
            "checks": [{"name": "succeeded_in_time", "passed": status == "SUCCEEDED", "evidence": ""}], "metrics": metrics,
            "curves": curves or {}}


def night(regressions: Path, day: int, jobs: list, cfg) -> dict:
    """Judges and records night number `day` (run ids sort by day)."""
    run_id = f"nightly-2026{1 + day // 28:02d}{1 + day % 28:02d}T023000Z"
    past = json.loads((regressions / "history.json").read_text()) if (regressions / "history.json").is_file() else []
    for j in jobs:
        j["checks"].append(history.check(j, past, run_id, cfg))
    rep = {"run_id": run_id, "started_at": run_id[8:12] + "-" + run_id[12:14] + "-" + run_id[14:16] + "T02:30:00Z",
           "jobs": jobs, "passed": all(c["passed"] is not False for j in jobs for c in j["checks"])}
    rep["summary"] = judge.summary_line(rep)
    index.write(regressions, rep, cfg.nightly_history)
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


# A run's curves as verl logs them: 10 steps of a GRPO job's figures.
BASE = {"critic/score/mean": [0.40 + 0.01 * s for s in range(10)], "actor/grad_norm": [0.25] * 10,
        "actor/entropy": [1.0 - 0.01 * s for s in range(10)], "timing_s/step": [10.0] * 10}


def rows(planted=None, seed=0, noise=0.01, base=None) -> list:
    """metrics.step_lines() rows of one run: BASE (or base) plus uniform
    noise of +-noise x the figure's size (seeded), then planted
    {key: {step: value}} values (a step from 1)."""
    rng = random.Random(seed)
    out = []
    for i in range(10):
        row = {"step": float(i + 1)}
        for key, values in (base or BASE).items():
            row[key] = values[i] * (1 + rng.uniform(-noise, noise))
        for key, at in (planted or {}).items():
            row[key] = at.get(i + 1, row[key])
        out.append(row)
    return out


def refs(n=5, **kw) -> list:
    """n good runs' rows, each with its own noise."""
    return [rows(seed=100 + i, **kw) for i in range(n)]


def verdict(planted=None, n=5, rule=None, **kw) -> dict:
    """bands.judge_runs of a run with `planted` values against n good runs."""
    return bands.judge_runs(rows(planted, seed=1, **kw), refs(n, **kw), rule or bands.Rule())


def curves(planted=None, seed=0) -> dict:
    return bands.curves(rows(planted, seed))


def pages(regressions: Path, rep: dict) -> None:
    """report.md and report.html of a simulated night, as judge_run writes them."""
    rep = {"finished_at": rep["started_at"], "log": "nightly.log", "code_id": "c", **rep}
    (regressions / rep["run_id"]).mkdir(parents=True, exist_ok=True)
    (regressions / rep["run_id"] / "report.md").write_text(report.markdown(rep))
    (regressions / rep["run_id"] / "report.html").write_text(report.html(rep))


if __name__ == "__main__":
    print(json.dumps(eval(sys.argv[1])))  # a test's expression, e.g. series(Path(...), [...])
