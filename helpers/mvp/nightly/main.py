"""The steps of `nightly STEP --run-dir DIR`, one function each: the
helper's part of scripts/60_nightly_regression.sh, which runs the steps.
`inputs` records the input manifests' hashes before and after step 30
(inputs.json); `retention` prunes old runs and jobs; `judge` writes plan.json
from what the night did, judges the jobs and writes the reports;
`stop-step` draws the step the interrupted job stops after. (`control` is
control.py's.)"""
from datetime import datetime, timezone
from pathlib import Path

from ..worker import fsutil, kv
from ..worker.errors import MvpError
from ..core.dashboard import Dashboard
from ..core.rundir import Regressions, RunDir
from . import calibration, control, night_fingerprint, history, index, judge, report, resume_fidelity, retention


def input_manifests(settings) -> dict:
    """sha256 and source of each input's MANIFEST.json (None when absent):
    whether step 30 rebuilt anything shows as a change between before and
    after, and a changed source says why."""
    layout = settings.layout
    dirs = {"gsm8k": layout.gsm8k, "gsm8k_sft": layout.gsm8k_sft}
    if not settings.skip_model:
        dirs["model"] = layout.model(settings.model_id)
    out = {}
    for name, d in dirs.items():
        manifest = d / "MANIFEST.json"
        out[name] = ({"sha256": fsutil.sha256_file(manifest), "source": (fsutil.read_json(manifest, {}) or {}).get("source")}
                     if manifest.is_file() else None)
    return out


def record_inputs(run_dir: Path, phase: str, settings) -> None:
    inputs = RunDir(run_dir).inputs
    recorded = fsutil.read_json(inputs, {}) or {}
    recorded[phase] = input_manifests(settings)
    fsutil.write_json(inputs, recorded)


def write_plan(run_dir: Path, args, settings) -> dict:
    """plan.json: what the night ran, for the judge and for people."""
    run_dir = RunDir(run_dir)
    inputs = fsutil.read_json(run_dir.inputs, {}) or {}
    before, after = inputs.get("before") or {}, inputs.get("after") or {}
    jobs = _jobs_arg("--job", args.job, run_dir)
    plan = {"run_id": run_dir.id, "cluster": settings.cluster_name, "started_at": args.started, "code_id": args.code_id,
            "resume": _resume_arg(args.resume), "checks": _checks_arg(args.checks),
            "failed_step": args.failed_step or None, "head_node_name": args.head_host or settings.head_node,
            "worker_ips": list(settings.worker_ips), "jobs": jobs, "job_timeout_s": settings.job_timeout,
            "rises": list(args.rises), "reruns": _jobs_arg("--rerun", args.rerun, run_dir),
            "prepare": {k: {"before": before.get(k), "after": v} for k, v in after.items()}}
    fsutil.write_json(run_dir.plan, plan)
    return plan


def _jobs_arg(flag: str, items: list, run_dir: RunDir) -> list:
    """--job (or --rerun) NAME=SUBMISSION_ID ... -> [{name, submission_id, error}]."""
    jobs = []
    for item in items:
        try:
            name, sid = kv.parse_line(item)
        except ValueError as exc:
            raise MvpError(f"--job or --rerun: {exc} ({flag} '{item}'); give NAME=SUBMISSION_ID (empty id: the "
                           "submit script failed)") from None
        jobs.append({"name": name, "submission_id": sid or None,
                     "error": "" if sid else f"the submit script failed; see {run_dir.log}"})
    return jobs


def _resume_arg(value: str):
    """--resume JOB=REFERENCE:STEP -> {job, reference, stop_at_step}, or None."""
    if not value:
        return None
    job, _, rest = value.partition("=")
    reference, _, step = rest.rpartition(":")
    if not job or not reference or not step.isdigit():
        raise MvpError(f"--resume: '{value}' is not JOB=REFERENCE:STEP")
    return {"job": job, "reference": reference, "stop_at_step": int(step)}


def _checks_arg(items: list) -> dict:
    """--checks NAME=CHECK,CHECK... -> {NAME: [CHECK, ...]}: the suite's `checks:`."""
    out = {}
    for item in items:
        name, sep, checks = item.partition("=")
        if not sep or not name or not checks:
            raise MvpError(f"--checks: '{item}' is not NAME=CHECK,CHECK...")
        out[name] = checks.split(",")
    return out


def only_checks(jobs: list, wanted: dict) -> None:
    """Keeps, of each job the suite gives `checks:` for, those checks (and
    `submitted`, which always counts); a resumed extra run (NAME_resumed)
    keeps those of the job it repeats."""
    for job in jobs:
        keep = wanted.get(job["name"]) or wanted.get(job["name"].removesuffix("_resumed"))
        if keep:
            job["checks"] = [c for c in job["checks"] if c["name"] in keep or c["name"] == "submitted"]


def judge_jobs(run_dir: RunDir, settings, plan: dict) -> list:
    """Every job of the night judged, its check `regression` against the
    good nights before it (confirmed by its rerun where one ran)."""
    jobs = [] if plan.get("failed_step") else [judge.judge_job(j, settings.shared_root, plan) for j in plan["jobs"]]
    judge.add_resume_fidelity(jobs, plan, settings.jobs_dir, settings.nightly_resume_band)
    past = run_dir.regressions.read_history()
    measured = calibration.read_calibration()
    reruns = {r["name"]: r for r in plan.get("reruns") or []}
    for job in jobs:
        check = history.check(job, past, plan["run_id"], settings)
        if job["name"] in reruns:
            again = judge.judge_job(reruns[job["name"]], settings.shared_root, plan)
            judge.confirm(check, again, history.check({**again, "name": job["name"]}, past, plan["run_id"], settings))
        # How far to trust it: the judge's error rates measured on real runs (config/detector.json).
        check["trust"] = calibration.trust(job["name"], settings, measured)
        for resumed in (c for c in job["checks"] if c["name"] == resume_fidelity.NAME and c["passed"] is not None):
            resumed["trust"] = calibration.resume_trust(job["name"], settings, measured)
        job["checks"].append(check)
        if job["name"] in (plan.get("rises") or []):
            job["checks"].append(judge.check_signal(job))
    only_checks(jobs, plan.get("checks") or {})
    return jobs


def to_rerun(jobs: list, plan: dict, settings) -> list:
    """The jobs to run once more before the night is judged
    (MVP_NIGHTLY_RERUN): those whose one failed check is `regression`, when
    no rerun ran yet; a job that failed anything else fails without one."""
    if not settings.nightly_rerun or plan.get("reruns"):
        return []
    return [j["name"] for j in jobs if [c["name"] for c in judge.failed_checks(j)] == ["regression"]]


def judge_run(run_dir: Path, settings, plan: dict, jobs: list) -> dict:
    run_dir = RunDir(run_dir)
    rep = {
        "run_id": plan["run_id"], "started_at": plan["started_at"],
        "finished_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "code_id": plan.get("code_id"),
        "failed_step": plan.get("failed_step"), "log": str(run_dir.log),
        "prepare": plan.get("prepare"), "jobs": jobs,
    }
    pair = control.judge(run_dir, settings)
    if pair:
        rep["control"] = pair
        control.cite(rep)
    # A failed check of any job (judge.failed_checks: one not judged yet fails nothing), or a candidate
    # worse than its control, fails the night.
    rep["passed"] = not rep["failed_step"] and bool(jobs) and not any(judge.failed_checks(j) for j in jobs) \
        and (pair or {}).get("verdict") != "code"
    night_fingerprint.add(rep, run_dir.regressions.path, settings.jobs_dir)
    rep["summary"] = judge.summary_line(rep)
    fsutil.write_json(run_dir.report, rep)
    fsutil.write_text(run_dir.report_md, report.markdown(rep))
    fsutil.write_text(run_dir.report_html, report.html(rep))
    return rep


def inputs_main(args, settings) -> int:
    record_inputs(settings.layout.named(args.run_dir), args.phase, settings)
    return 0


def judge_main(args, settings) -> int:
    run_dir = settings.layout.named(args.run_dir)
    plan = write_plan(run_dir, args, settings)
    jobs = judge_jobs(RunDir(run_dir), settings, plan)
    again = to_rerun(jobs, plan, settings)
    if again:
        # The night is judged once its reruns ran: no report yet (plan.json is written again with them).
        kv.emit(("rerun", " ".join(again)))
        return 1
    rep = judge_run(run_dir, settings, plan, jobs)
    index.write(run_dir.parent, rep, settings.nightly_history)
    kv.emit(("summary", rep["summary"]))
    return 0 if rep["passed"] else 1


def stop_step_main(args, settings) -> int:
    # --run-dir is checked as every step's is, though the draw reads only the reference's job.
    settings.layout.named(args.run_dir)
    step, low, high = resume_fidelity.stop_step(settings.jobs_dir, args.reference)
    kv.emit(("stop_at_step", step), ("drawn_from", f"{low}-{high}"))
    return 0


def retention_main(args, settings) -> int:
    regressions = settings.layout.named(args.run_dir).parent
    retention.prune(regressions, settings.jobs_dir, settings.nightly_keep, Dashboard(settings.dashboard_url, timeout=5),
                    settings.cluster_name)
    return 0
