"""Each nightly job judged against the v1.1 runbook spec's points (docs/spec.md), every check
with the evidence it was decided on, read from the job directory alone."""
import re
import shlex
from pathlib import Path

from ..jobs.after_sending import bundle, job_fingerprint, resumed_check
from ..jobs.planning import ckpt_keep, workloads
from ..jobs.after_sending.chain import chain_of, resumed_from
from ..worker.jobdir import JobDir
from ..core.layout import Layout
from ..core.rundir import file_name
from . import bands, resume_fidelity
from ..core import metrics

# The files (JobDir names) and directories every judged job directory must hold.
REQUIRED_FILES = ("spec", "runtime_env", "submit_cmd", "driver_log", "result")
REQUIRED_DIRS = ("checkpoints",)


def _overrides(spec: dict) -> dict:
    return {key.lstrip("+"): value for key, value in ((spec.get("resolved") or {}).get("trainer_overrides") or {}).items()}


def _check(name: str, passed: bool, evidence: str) -> dict:
    return {"name": name, "passed": bool(passed), "evidence": evidence}


def _int(value, default):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def check_submitted_from_head(jd: JobDir, head_name: str) -> dict:
    events = [e for e in jd.submit_events() if e.get("event") == "submitted"]
    submitted = events[-1] if events else {}
    cmd = jd.submit_cmd.read_text(encoding="utf-8") if jd.submit_cmd.is_file() else ""
    host = submitted.get("host")
    # submit_cmd.txt is shlex.join of the argv (submit.py): read back as argv, not as text.
    try:
        argv = shlex.split(cmd)
    except ValueError:
        argv = []
    return _check("submitted_from_head", host == head_name and argv[:3] == ["ray", "job", "submit"],
                  f"submitted from host {host} (head: {head_name}), via {submitted.get('via')}, {jd.submit_cmd.name}: {cmd[:60]}...")


def check_driver_on_worker(result: dict, worker_ips: tuple) -> dict:
    ip, node = result.get("driver_node_ip"), result.get("driver_node_id")
    heads = result.get("head_node_ids") or []
    ok = ip in worker_ips and node is not None and node not in heads and result.get("driver_on_head") is False
    return _check("driver_on_worker", ok, f"driver {ip} node {str(node)[:12]}; workers {', '.join(worker_ips)}; "
                  f"head node {', '.join(h[:12] for h in heads) or '?'}")


def check_job_dir(jd: JobDir, sid: str, spec: dict, ids_in_run: list) -> dict:
    missing = ([str(getattr(jd, f).relative_to(jd.path)) for f in REQUIRED_FILES if not getattr(jd, f).is_file()]
               + [str(getattr(jd, d).relative_to(jd.path)) for d in REQUIRED_DIRS if not getattr(jd, d).is_dir()])
    kinds = sorted(bundle.kinds_present(jd.debug))
    own = (spec.get("resolved") or {}).get("submission_id") == sid == jd.id
    unique = ids_in_run.count(sid) == 1
    ok = not missing and len(kinds) >= 2 and own and unique
    return _check("job_dir_complete", ok, f"{jd}: missing {missing or 'nothing'}; debug kinds {kinds}; "
                  f"directory is this submission's: {own}; id unique in run: {unique}")


def check_metrics_parsed(summary: dict, status: str) -> dict:
    """The driver log's metric lines were understood: a parse failure is named
    here, not left to look like a checkpoint or performance problem."""
    steps, mentions = summary["steps"], summary.get("step_mentions", 0)
    if steps:
        ok = status != "SUCCEEDED" or summary["mean_step_s"] is not None
        return _check("metrics_parsed", ok, f"{steps} steps parsed from {mentions} step lines; step time "
                      f"{summary['mean_step_s']} s from {summary.get('step_time_from') or 'nothing (no timing_s/step, no tqdm rate)'}")
    if mentions:
        return _check("metrics_parsed", False, f"the driver log has {mentions} step lines but none parsed: "
                      "the metric parser does not read this log's shape (core/metrics.py)")
    return _check("metrics_parsed", status != "SUCCEEDED",
                  f"no step line in the driver log; the job ended {status}")


def check_checkpoints(jd: JobDir, workload: str, overrides: dict, steps: int, status: str, start: int = 1) -> dict:
    """start: the first step this job trained (a resumed job saves from the
    checkpoint's next step on; the ones before are its chain's)."""
    save_freq = _int(overrides.get("trainer.save_freq"), -1)
    root = Path(overrides.get("trainer.default_local_dir", jd.checkpoints))
    present = sorted(_int(p.name.split("_")[-1], -1) for p in root.glob("global_step_*")) if root.is_dir() else []
    latest = (root / "latest_checkpointed_iteration.txt")
    latest_value = _int(latest.read_text().strip(), None) if latest.is_file() else None
    steps_from = "steps run"
    if not steps and latest_value:
        # The metric lines did not parse (metrics_parsed says so): judge the
        # policy against the last step verl says it saved.
        steps, steps_from = latest_value, "steps (from latest_checkpointed_iteration)"
    multiples = {s for s in range(start, steps + 1) if save_freq > 0 and s % save_freq == 0}
    finished = status == "SUCCEEDED"
    expected = set(multiples)
    if finished and steps and (save_freq > 0 or workloads.always_saves_at_end(workload)):
        expected.add(steps)
    # With save_freq=10 and >= 10 steps, `expected` holds 10: global_step_10 is checked here.
    ok = set(present) == expected
    keep = ckpt_keep.limit({"workload": workload, "trainer_overrides": overrides})
    kept = ""
    if keep:
        # verl removed the older ones (SFT: whole; PPO/GRPO: actor/ and critic/, data.pt stays).
        whole = [s for s, _ in ckpt_keep.complete(jd)] if root == jd.checkpoints else present
        ok = set(present) <= expected and whole == sorted(expected)[-keep:]
        kept = f", complete {whole} (max_ckpt_to_keep {keep})"
    if expected:
        ok = ok and latest_value == max(expected)
    return _check("checkpoint_policy", ok, f"save_freq={save_freq}, {steps_from} {steps}, saved at {present}, "
                  f"expected {sorted(expected)}{kept}, latest_checkpointed_iteration={latest_value}")


def check_inputs_persisted(prepare: dict, overrides: dict, shared_root: str) -> dict:
    notes, ok = [], True
    for name, ev in sorted((prepare or {}).items()):
        before, after = ev.get("before"), ev.get("after")
        if after is None:
            ok = False
            notes.append(f"{name}: no manifest after prepare")
        elif before is None:
            notes.append(f"{name}: built in this run (first time)")
        elif before.get("sha256") == after.get("sha256"):
            notes.append(f"{name}: SKIP (manifest unchanged)")
        elif before.get("source") != after.get("source"):
            # A deliberate change (say MVP_GSM8K_SOURCE from synthetic to a directory): right to rebuild.
            notes.append(f"{name}: rebuilt: source changed from {before.get('source')} to {after.get('source')}")
        else:
            ok = False
            notes.append(f"{name}: REBUILT although a valid copy existed (source {after.get('source')} unchanged)")
    paths = [p for k, v in overrides.items() if k in ("data.train_files", "actor_rollout_ref.model.path", "model.path")
             for p in _paths_of(v)]
    outside = [p for p in paths if not p.startswith(shared_root.rstrip("/") + "/")]
    if outside:
        ok = False
        notes.append(f"not on shared storage: {outside}")
    return _check("inputs_persisted", ok and bool(prepare), "; ".join(notes) or "no prepare evidence")


def _paths_of(value: str) -> list:
    """An override's paths: one, or the items of the Hydra list plan.py
    writes for several files (['/a','/b'], no quote inside a path)."""
    if value.startswith("[") and value.endswith("]"):
        return re.findall(r"'([^']*)'", value)
    return [value]


def check_import_source(log_text: str, spec: dict) -> dict:
    resolved = spec.get("resolved") or {}
    marker = re.search(r"^MVP_PRECHECK_MARKER=(.*)$", log_text, re.MULTILINE)
    verl_file = re.search(r"^MVP_PRECHECK_VERL_FILE=(.*)$", log_text, re.MULTILINE)
    code_path = resolved.get("code_path", "")
    ok = (marker and marker.group(1) == resolved.get("code_id") and verl_file
          and verl_file.group(1).startswith(code_path.rstrip("/") + "/"))
    return _check("import_from_code_path", ok, f"MVP_PRECHECK_MARKER={marker.group(1) if marker else None} "
                  f"(want {resolved.get('code_id')}); MVP_PRECHECK_VERL_FILE={verl_file.group(1) if verl_file else None} "
                  f"(want under {code_path})")


def check_succeeded(result: dict, deadline_s: float) -> dict:
    ok = result.get("status") == "SUCCEEDED" and not result.get("timed_out")
    return _check("succeeded_in_time", ok, f"status {result.get('status')}, duration {result.get('duration_s')}s, "
                  f"deadline {deadline_s:g}s, timed out: {result.get('timed_out')}; {result.get('message', '')[:160]}")


# A score that moves less than this from its lowest to its highest step is flat.
FLAT = 0.02


def check_signal(job: dict) -> dict:
    """The check `signal` of a job whose score must rise (the suite's
    `rises: true`, the learning probe): a score flat at every step (at its
    cap from step 1, or never moving) carries no signal: such a probe cannot
    tell a good night from a bad one, so it is never judged good. A score
    that falls is a signal (a regression: the bands judge it). Not judged
    when the job did not succeed (its other checks fail the night)."""
    if job.get("status") != "SUCCEEDED":
        return {"name": "signal", "passed": None, "evidence": f"not judged: the job ended {job.get('status')}"}
    score = [v for v in ((job.get("curves") or {}).get("score") or {}).get("values", []) if v is not None]
    if not score:
        return _check("signal", False, "no signal: the log has no score (critic/score/mean) at any step")
    shape = f"score {score[0]:.4g} at step 1, {min(score):.4g} to {max(score):.4g} over {len(score)} steps"
    if max(score) - min(score) <= FLAT:
        return _check("signal", False, f"no signal: the score is flat ({shape}; it moved at most {FLAT}): an untrained "
                      "model already earns the probe's reward on this data, or nothing is learnt")
    return _check("signal", True, f"the score moves ({shape})")


def judge_job(job: dict, shared_root: Path, plan: dict) -> dict:
    sid = job.get("submission_id")
    if not sid:
        return {"name": job["name"], "submission_id": None, "status": "NOT_SUBMITTED", "duration_s": None,
                "checks": [_check("submitted", False, job.get("error") or "the submit script failed")],
                "metrics": metrics.summarize("", None)}
    jobs = Layout(shared_root).jobs
    jd = JobDir.of(jobs, sid)
    spec, result = jd.read_spec(), jd.read_result({}) or {}
    log_text = jd.driver_log.read_text(encoding="utf-8", errors="replace") if jd.driver_log.is_file() else ""
    overrides = _overrides(spec)
    workload = (spec.get("resolved") or {}).get("workload", "")
    per_prompt = workloads.samples_per_prompt_key(workload)
    samples = _int(overrides.get("data.train_batch_size"), 0) * (_int(overrides.get(per_prompt), 1) if per_prompt else 1)
    gpus = _int(overrides.get("trainer.nnodes"), 0) * _int(overrides.get("trainer.n_gpus_per_node"), 0)
    summary = metrics.summarize(log_text, samples or None, gpus or None)
    chain = chain_of(jobs, sid)
    chain = chain[:chain.index(sid) + 1] if sid in chain else [sid]
    from_step = resumed_check.checkpoint_step(resumed_from(jobs, sid)) or 0
    checks = [
        check_submitted_from_head(jd, plan["head_node_name"]),
        check_driver_on_worker(result, tuple(plan["worker_ips"])),
        check_job_dir(jd, sid, spec, [j.get("submission_id") for j in plan["jobs"]]),
        check_metrics_parsed(summary, result.get("status")),
        check_checkpoints(jd, workload, overrides, summary["steps"], result.get("status"), from_step + 1),
        check_inputs_persisted(plan.get("prepare"), overrides, str(shared_root)),
        check_import_source(log_text, spec),
        check_succeeded(result, float(plan["job_timeout_s"])),
    ]
    went_on = resumed_check.check(jobs, sid, chain[:-1])
    if went_on:
        checks.append(went_on)
    out = {"name": job["name"], "submission_id": sid, "workload": workload, "status": result.get("status"),
           "duration_s": result.get("duration_s"), "checks": checks, "metrics": summary,
           "curves": bands.curves(metrics.step_lines(log_text))}
    if len(chain) > 1:
        out["attempts"] = attempts(jobs, chain)
    return out


def add_resume_fidelity(judged: list, plan: dict, jobs: Path, band: dict) -> None:
    """The check `resume_fidelity` on the night's interrupted job (plan.resume),
    against its reference's run; not judged (null) when the reference did not
    run to the end (that job's own checks fail the night)."""
    what = plan.get("resume") or {}
    by_name = {j["name"]: j for j in judged}
    job, ref = by_name.get(what.get("job")), by_name.get(what.get("reference"))
    if not job or not job.get("submission_id"):
        return
    if not ref or ref.get("status") != "SUCCEEDED":
        job["checks"].append(resume_fidelity.check_not_judged(f"the reference {what.get('reference')} did not succeed: "
                                                     "nothing uninterrupted to compare with"))
        return
    chain = [a["submission_id"] for a in job.get("attempts") or []] or [job["submission_id"]]
    if not what["stop_at_step"]:
        job["checks"].append(resume_fidelity.check_failed("no step was drawn to interrupt at: the job ran uninterrupted "
                                                 "(the night's log says why)"))
    else:
        job["checks"].append(resume_fidelity.check(jobs, chain, ref["submission_id"], what["stop_at_step"], band))
    job["resume"] = what


def confirm(check: dict, rerun: dict, again: dict) -> None:
    """The check `regression` of a job that failed it and ran once more
    (MVP_NIGHTLY_RERUN): it passes when the rerun's passes, the first run's
    figures then being the machine's, for minutes, not the code's; it stays
    failed when the rerun's fails too, or cannot be judged. `rerun` keeps
    the rerun's job and verdict; the figures and bands stay the first run's."""
    sid = rerun.get("submission_id")
    check["rerun"] = {"submission_id": sid, "status": rerun.get("status"), "passed": again["passed"],
                      "evidence": again["evidence"]}
    if check["passed"] is not False:
        return
    if again["passed"]:
        check["passed"] = True
        check["evidence"] = f"its rerun {sid} passed ({again['evidence']}), so the first run's figures were the " \
                            f"machine's, not the code's: {check['evidence']}"
    elif again["passed"] is False:
        check["evidence"] += f"; its rerun {sid} too: {again['evidence']}"
    else:
        why = again["evidence"] if sid else rerun["checks"][0]["evidence"]
        check["evidence"] += f"; its rerun {sid or '(not submitted)'} could not be judged: {why}"


def attempts(jobs: Path, chain: list) -> list:
    """A retried job's chain, first to last: each attempt's status and links."""
    return [{"submission_id": a, "status": JobDir.of(jobs, a).status(),
             "resumed_from": resumed_from(jobs, a) or None, "resumed_by": chain[i + 1] if i + 1 < len(chain) else None}
            for i, a in enumerate(chain)]


def failed_checks(job: dict) -> list:
    """The checks a judged job (or probe) failed: passed is False (None is
    "not judged yet", which fails nothing). The one definition the report,
    the index, the mail, the control and bisection use."""
    return [c for c in job["checks"] if c["passed"] is False]


def summary_line(report: dict) -> str:
    run = report["run_id"]
    if report.get("failed_step"):
        return f"NIGHTLY FAIL {run}: step {report['failed_step']} failed before the jobs ran (see {report['log']})"
    failed = [(j["name"], [c["name"] for c in failed_checks(j)]) for j in report["jobs"]]
    failed = [(name, checks) for name, checks in failed if checks]
    code = " (control: code worse than its control)" if (report.get("control") or {}).get("verdict") == "code" else ""
    if not failed and not code:
        return f"NIGHTLY PASS {run}: {len(report['jobs'])}/{len(report['jobs'])} jobs passed every check"
    what = "; ".join(f"{name} [{', '.join(checks)}]" for name, checks in failed)
    return f"NIGHTLY FAIL {run}: {len(failed)}/{len(report['jobs'])} jobs failed{': ' + what if what else ''}{code}"


# How many changes the judge's one line names (report.md lists them all).
FINGERPRINT_NAMED = 4


def fingerprint_line(diff: dict) -> str:
    """One line naming what changed since the last good night, or "" when
    nothing did (or there is no good night to compare with)."""
    found = job_fingerprint.changes(diff or {})
    if len(found) > 1:  # the package list's digest adds nothing to the changes it sums up
        found = [f for f in found if not f.startswith("packages.sha256 ")]
    if not found or not diff.get("since"):
        return ""
    more = f" (and {len(found) - FINGERPRINT_NAMED} more: {file_name('report_md')})" if len(found) > FINGERPRINT_NAMED else ""
    return f"fingerprint changed since the last good night {diff['since']}: {', '.join(found[:FINGERPRINT_NAMED])}{more}"


def name_changed_fingerprint(report: dict) -> None:
    """Beside each failed check of the night (a regression, whatever found
    it), the line naming the changed fingerprint: `fingerprint` of the check
    and of the report. A night that passed, or whose fingerprint did not
    change, gets nothing."""
    line = fingerprint_line(report.get("fingerprint_diff"))
    failed = [c for j in report["jobs"] for c in failed_checks(j)]
    if not line or not (failed or report.get("failed_step")):
        return
    report["fingerprint_changed"] = line
    for check in failed:
        check["fingerprint_changed"] = line
