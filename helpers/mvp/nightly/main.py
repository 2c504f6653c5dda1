"""`nightly judge|retention --run-dir DIR`: the helper's part of
scripts/60_nightly_regression.sh. The bash script runs the steps and writes
<run dir>/plan.json; this judges the jobs and writes the reports."""
from datetime import datetime, timezone
from pathlib import Path

from .. import fsutil
from ..dashboard import Dashboard
from . import index, judge, report, retention


def judge_run(run_dir: Path, settings) -> dict:
    plan = fsutil.read_json(run_dir / "plan.json")
    jobs = [] if plan.get("failed_step") else [judge.judge_job(j, settings.shared_root, plan) for j in plan["jobs"]]
    rep = {
        "run_id": plan["run_id"], "started_at": plan["started_at"],
        "finished_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "code_id": plan.get("code_id"),
        "failed_step": plan.get("failed_step"), "log": str(run_dir / "nightly.log"),
        "prepare": plan.get("prepare"), "jobs": jobs,
    }
    rep["passed"] = not rep["failed_step"] and bool(jobs) and all(c["passed"] for j in jobs for c in j["checks"])
    rep["summary"] = judge.summary_line(rep)
    fsutil.write_json(run_dir / "report.json", rep)
    fsutil.write_text(run_dir / "report.md", report.markdown(rep))
    fsutil.write_text(run_dir / "report.html", report.html(rep))
    return rep


def main(args, settings, log) -> int:
    run_dir = Path(args.run_dir)
    regressions = run_dir.parent
    if args.step == "judge":
        rep = judge_run(run_dir, settings)
        index.write(regressions, rep)
        print(rep["summary"])
        return 0 if rep["passed"] else 1
    if args.step == "retention":
        retention.prune(regressions, settings.jobs_dir, args.keep, Dashboard(settings.dashboard_url, timeout=5), log)
        return 0
    return 2
