"""The night's same-night control (60 --control, MVP_NIGHTLY_CONTROL=1):
before the suite, the last good night's snapshot (the control) and
tonight's (the candidate) each run one short probe, bisection's (the
suite's job grpo, CONTROL_STEPS steps, a fixed seed), on the same machine,
one after the other. The pair is judged as bisection judges a probe
(bisection.verdict, figure_verdicts), beside the probes of earlier good
nights (their control.json): the candidate worse than its control is the
code's doing; control and candidate worse than that history alike is the
machine's. control.json in the night's directory holds the pair; the judge
puts its verdict into report.json (`control`)."""
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

from . import bisection
from ..worker import fsutil, kv
from ..worker.errors import MvpError
from ..core.rundir import Regressions, RunDir
from . import history, suite
from .judge import failed_checks

CONTROL_STEPS = 2
ROLES = ("control", "candidate")
# How many earlier good nights' probes the pair is judged beside.
HISTORY_NIGHTS = 7


def probe_job(settings) -> dict:
    """bisection's probe job: the suite's grpo (else its first job), CONTROL_STEPS steps, seed bisection.SEED."""
    names = [j.name for j in suite.load(suite.resolve(settings.nightly_suite or suite.DEFAULT, suite.REPO), suite.REPO)]
    name = bisection.DEFAULT_JOB if bisection.DEFAULT_JOB in names else names[0]
    return bisection.probe_job(SimpleNamespace(job=name, spec="", steps=str(CONTROL_STEPS)), settings)


def plan(run_dir: Path, settings) -> dict:
    """{skip: why} or the control's snapshot and the probe's words (for 60's key=value reader)."""
    run_dir = RunDir(run_dir)
    good = run_dir.regressions.last_good_night(run_dir.id)
    code = (good or {}).get("code_id") or ""
    skip = ("no good night kept to take the control from" if not good else
            f"the last good night {good['run_id']}'s snapshot {code or '(none)'} is not in the shared root"
            if not code or not settings.layout.snapshot(code).is_dir() else "")
    if skip:
        fsutil.write_json(run_dir.control, {"skip": skip})
        return {"skip": skip}
    job = probe_job(settings)
    fsutil.write_json(run_dir.control, {"run_id": good["run_id"], "code_id": code, "job": job})
    return {"control_code_id": code, "control_run": good["run_id"], "job": job["name"], "script": job["script"],
            "spec": job["spec"], **dict(kv.words("", job["words"]))}


def record(run_dir: Path, role: str, code_id: str, sid: str, settings) -> None:
    """One probe of the pair, judged by bisection's judge_probe, into control.json."""
    store = RunDir(run_dir).control
    state = fsutil.read_json(store)
    if not state or role not in ROLES:
        raise MvpError(f"{run_dir} has no control plan ({store.name}), or --role {role} is not one of {', '.join(ROLES)}")
    state[role] = {"code_id": code_id, "submission_id": sid or None,
                   "judged": bisection.judge_probe(state["job"], sid, settings)}
    fsutil.write_json(store, state)


def earlier_probes(regressions: Path, before: str) -> list:
    """The judged probes (control and candidate) of the last HISTORY_NIGHTS good nights before run `before`."""
    out = []
    for night in Regressions(regressions).good_nights(before):
        state = fsutil.read_json(night.control)
        if state:
            out += [state[r]["judged"] for r in ROLES if ok(state.get(r))]
        if len(out) >= 2 * HISTORY_NIGHTS:
            break
    return out


def ok(probe: Optional[dict]) -> bool:
    return bool(probe) and probe["judged"].get("status") == "SUCCEEDED" and \
        not failed_checks(probe["judged"])


def pair_verdict(control: dict, candidate: dict, past: list, settings) -> dict:
    """The pair's verdict: `code` (the candidate worse than its control beyond
    the noise), `machine` (not that, but control and candidate both worse than
    the earlier good nights' probes on the same figure), or `equal`."""
    code = bisection.verdict(candidate, [control], settings)
    if code["bad"]:
        return {"verdict": "code", "line": "code worse/slower than its control (same machine, same night): "
                + "; ".join(code["reasons"])}
    worse = {}
    for probe in (control, candidate):
        for v in bisection.figure_verdicts(probe, past, settings) if past else []:
            if v["regressed"]:
                worse.setdefault(v["figure"], []).append(v["evidence"])
    alike = [f"{figure}: control {ev[0]}, candidate {ev[1]}" for figure, ev in worse.items() if len(ev) == 2]
    if alike:
        return {"verdict": "machine", "line": "the machine is slower tonight, control and candidate alike ("
                + "; ".join(alike).replace(" of GOOD's ", " of the good nights' ") + ")"}
    return {"verdict": "equal", "line": "the candidate is within its control (same machine, same night): "
            + "; ".join(code["reasons"]) + (f"; {len(past)} earlier probes" if past else "; no earlier probes")}


def judge(run_dir: Path, settings) -> Optional[dict]:
    """report.json's `control`: the pair and its verdict; {skip} when a probe
    did not run through; None without a control plan (the night had none)."""
    run_dir = RunDir(run_dir)
    state = fsutil.read_json(run_dir.control)
    if not state:
        return None
    if state.get("skip"):
        return {"run_id": None, "verdict": "skip", "line": state["skip"]}
    out = {"run_id": state["run_id"], "job": state["job"]["name"], "steps": state["job"]["steps"],
           **{r: _shown(state.get(r)) for r in ROLES}}
    failed = [r for r in ROLES if not ok(state.get(r))]
    if failed:
        return {**out, "verdict": "skip", "line": f"no pair to judge: the {' and the '.join(failed)} probe "
                "did not pass its checks (see the night's log)"}
    past = earlier_probes(run_dir.regressions.path, run_dir.id)
    return {**out, **pair_verdict(state["control"]["judged"], state["candidate"]["judged"], past, settings)}


def _shown(probe: Optional[dict]) -> dict:
    if not probe:
        return {"code_id": None, "submission_id": None, "status": "NOT_RUN", "figures": {}}
    judged = probe["judged"]
    return {"code_id": probe["code_id"], "submission_id": probe["submission_id"], "status": judged.get("status"),
            "figures": history.figures(judged) if judged.get("metrics") else {}}


def cite(report: dict) -> None:
    """The pair's line beside each failed `regression` check of the night."""
    line = (report.get("control") or {}).get("line")
    if not line or report["control"]["verdict"] == "skip":
        return
    for check in (c for j in report["jobs"] for c in failed_checks(j) if c["name"] == "regression"):
        check["evidence"] += f"; control: {line}"


def main(args, settings) -> int:
    run_dir = settings.layout.named(args.run_dir)
    if args.role == "plan":
        kv.emit(*plan(run_dir, settings).items())
    else:
        record(run_dir, args.role, args.code_id, args.submission_id, settings)
    return 0
