"""`bisect` (helpers/mvp/nightly/bisection.py: a module named bisect would shadow the
standard library's wherever its folder is on sys.path; python_structure.bats refuses such names):
the first commit of a verl git checkout, between a good and a bad
one, that makes a nightly job worse (scripts/61_bisect_regression.sh).

61 drives it in steps, so that every probe goes through the runbook's normal
path (31 --git-repo, then the job's submit script with --wait, in bash, as the
nightly runs them): `start` checks the input and makes the bisection's
directory regressions/bisect-<time>/ (bisect.json, report.md, report.html);
`next` names the next commit to probe, and the job's words; `record` judges a
probe's job and adds it to the report; `finish` prints first_bad=<sha> and
exits 0, or 1 when GOOD is not good or BAD is not bad, or when commits the
runbook cannot test hide the first bad one ("first bad is one of A..B").

A probe the runbook cannot test is skipped, as `git bisect skip`, and is
never bad (`untestable`): no snapshot of its commit, a verl the CPU layer
cannot serve, a job the cluster did not admit or lost. A crash of verl
itself is bad.

The order: GOOD, GOOD_RUNS times (its spread is the noise the figures are
judged with), then BAD, then a binary search along BAD's first-parent line
back to GOOD. A probe's verdict is the nightly judge's (`verdict`), never
"the numbers differ"."""
import hashlib
import math
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from statistics import median
from typing import Optional

from ..worker import fsutil, kv
from ..core import log
from ..jobs.sending import admission
from ..jobs.planning import verl_release
from ..worker.errors import MvpError
from ..worker.jobdir import JobDir
from ..core.rundir import Regressions, RunDir, file_name
from . import bands, history, judge, report, suite
from .judge import failed_checks
from ..jobs.planning.workloads import WORKLOADS

BAD_INPUT = 2
GOOD_RUNS = 2
SEED = 1
NOISE_FACTOR = 3
DEFAULT_JOB = "grpo"
# The per-step curves (bands.FIGURES) that no single figure of the check
# `regression` stands for (history.REPLACED): a silent "learning stopped"
# (advantages zeroed: grad_norm 0 from step 1, nothing fails, the score not
# yet moved) shows in these first.
CURVES = tuple(name for name in bands.FIGURES if name not in history.REPLACED)
# verl's seed key of each workload (workloads.py).
SEED_KEYS = {w.name: w.seed_key for w in WORKLOADS.values()}
# The judge's checks one probe's job directory decides alone.
PROBE_CHECKS = ("submitted", *(c for c in suite.CHECKS if c not in suite.NIGHT_CHECKS))
# The state's file name in a bisection's directory (RunDir.bisect_state).
STATE = file_name("bisect_state")
TIME = "%Y-%m-%dT%H:%M:%SZ"


def _git(repo, *words) -> Optional[str]:
    """git's stdout, stripped; None when git fails."""
    done = subprocess.run(["git", "-C", str(repo), *words], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def is_checkout(repo: str) -> bool:
    return bool(repo) and Path(repo).is_dir() and _git(repo, "rev-parse", "--git-dir") is not None


def check_repo(repo: str) -> Path:
    path = Path(repo)
    if not is_checkout(repo):
        raise MvpError(f"--repo {repo or '(none)'} is not a git checkout; give the directory of a git clone of "
                       "verl (your fork)", BAD_INPUT)
    return path.resolve()


def commit_of(repo: Path, rev: str, flag: str) -> str:
    sha = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}") if rev else None
    if not sha:
        raise MvpError(f"{flag} {rev or '(none)'} is not a commit of {repo}; give a sha, branch or tag that "
                       f"'git -C {repo} log' shows", BAD_INPUT)
    return sha


def subject(repo: Path, sha: str) -> str:
    return _git(repo, "log", "-1", "--format=%s", sha) or ""


def commit_path(repo: Path, good: str, bad: str, asked: tuple = ("GOOD", "BAD")) -> list:
    """The commits the search runs over, oldest first: BAD's first-parent
    line back to GOOD (not included), so each one's parent is the one before."""
    if good == bad:
        raise MvpError(f"--good {asked[0]} and --bad {asked[1]} are the same commit {good}; give a good commit and "
                       "a later bad one",
                       BAD_INPUT)
    if _git(repo, "merge-base", "--is-ancestor", good, bad) is None:
        raise MvpError(f"--good {asked[0]} ({good}) is not an ancestor of --bad {asked[1]} ({bad}) in {repo}; "
                       "give a GOOD that BAD's "
                       "history contains (git merge-base --is-ancestor GOOD BAD)", BAD_INPUT)
    path = (_git(repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{good}..{bad}") or "").split()
    if not path or _git(repo, "rev-parse", f"{path[0]}^") != good:
        raise MvpError(f"--good {asked[0]} ({good}) is not on the first-parent line of --bad {asked[1]} ({bad}): it "
                       "came in through a merge; "
                       "give a GOOD on that line, e.g. the merge's first parent", BAD_INPUT)
    return path


def bounds(n: int, outcomes: list) -> tuple:
    """(lo, hi): the last index known good (-1: GOOD) and the first known bad
    (n - 1: BAD) among n commits, from the (index, bad) outcomes so far."""
    lo, hi = -1, n - 1
    for index, bad in outcomes:
        if bad:
            hi = min(hi, index)
        else:
            lo = max(lo, index)
    return lo, hi


def search_step(n: int, outcomes: list, skipped: frozenset = frozenset()) -> tuple:
    """The binary search over n commits whose last is known bad (and whose
    parent of the first is known good): from the (index, bad) outcomes so
    far, (the index to probe next, or None when done; the first bad so far).
    A skipped index (a commit the runbook cannot test, as `git bisect skip`)
    is never probed again: the one nearest the middle that is not skipped
    goes instead (the later one of two as near); when only skipped ones are
    left between the bounds, the search is done and the first bad is one of
    them or the bad bound (ambiguous)."""
    lo, hi = bounds(n, outcomes)
    left = [i for i in range(lo + 1, hi) if i not in skipped]
    if not left:
        return None, hi
    mid = (lo + hi) // 2
    return min(left, key=lambda i: (abs(i - mid), -i)), hi


def most_probes(n: int) -> int:
    """Probes at most for n commits after GOOD: GOOD_RUNS, BAD, the search."""
    return GOOD_RUNS + 1 + math.ceil(math.log2(n)) if n > 1 else GOOD_RUNS + 1


def probe_job(args, settings) -> dict:
    """What each probe submits: the suite's job NAME (default grpo) or the
    JobSpec --spec, for --steps steps with a fixed seed."""
    if args.job and args.spec:
        raise MvpError("--job and --spec: give one (a job of the nightly suite, or a JobSpec)", BAD_INPUT)
    if not (args.steps.isdigit() and int(args.steps) >= 1):
        raise MvpError(f"--steps {args.steps} is not a whole number of training steps >= 1, e.g. --steps 2", BAD_INPUT)
    job = _suite_job(args, settings)
    words = [w for o in job.overrides for w in ("--override", o)]
    words += ["--override", f"trainer.total_training_steps={args.steps}"]
    if job.workload in SEED_KEYS:
        words += ["--override", f"{SEED_KEYS[job.workload]}={SEED}"]
    words += ["--", *job.command] if job.command else []
    checks = [c for c in PROBE_CHECKS if not job.checks or c in job.checks or c == "submitted"]
    digest = hashlib.sha256(Path(job.spec).read_bytes()).hexdigest() if job.spec else ""
    return {"name": job.name, "script": job.script, "spec": job.spec, "spec_sha256": digest,
            "workload": job.workload, "words": words, "checks": checks, "steps": int(args.steps),
            **({"rises": True} if job.rises else {})}


def _suite_job(args, settings) -> suite.Job:
    """The JobSpec of --spec, or the suite's job --job; their refusals are bad input (exit 2)."""
    where = suite.resolve(settings.nightly_suite or suite.DEFAULT, suite.REPO)
    try:
        if args.spec:
            return suite.spec_job("spec", str(Path(args.spec).resolve()), f"--spec {args.spec}", suite.REPO)
        jobs = {j.name: j for j in suite.load(where, suite.REPO)}
    except MvpError as exc:
        raise MvpError(str(exc), BAD_INPUT) from None
    name = args.job or DEFAULT_JOB
    if name not in jobs:
        raise MvpError(f"--job {name} is not a job of the nightly suite {where}; use {', '.join(jobs)}", BAD_INPUT)
    return jobs[name]


def verdict(probe: dict, references: list, settings) -> dict:
    """Whether a probe's job is bad, and why, by the nightly judge: the judge's
    checks of the job, and each figure against the GOOD probes' (none: checks
    only) as history.judge_figure judges a night against its good nights,
    with the tolerance widened to NOISE_FACTOR times the GOOD probes' spread.
    The one place a probe is decided: point it at the per-step band verdict
    (bands.judge_runs) when the nightly's judge uses it."""
    failed = [f"{c['name']}: {c['evidence']}" for c in failed_checks(probe)]
    figures = figure_verdicts(probe, references, settings) if references and probe.get("status") == "SUCCEEDED" else []
    regressed = [v["evidence"] for v in figures if v["regressed"]]
    within = [v["evidence"] for v in figures if v["regressed"] is False]
    return {"bad": bool(failed or regressed), "reasons": failed + regressed or within or ["every check passed"]}


def figure_verdicts(probe: dict, references: list, settings) -> list:
    """Each single figure of the check `regression` against the references'
    (the tolerance widened to NOISE_FACTOR times their spread), then each
    per-step curve no single figure stands for (CURVES) against theirs."""
    out = []
    for figure, value in history.figures(probe).items():
        past = [v for v in (history.figures(r).get(figure) for r in references) if v is not None]
        tolerance = max(float(settings.nightly_tolerance.get(figure, 10)), NOISE_FACTOR * spread_pct(past))
        judged = history.judge_figure(figure, value, past, tolerance, 1)
        # The judge's words are a night's against its good nights; here the past is GOOD's probes.
        judged["evidence"] = judged["evidence"].replace(f" of {len(past)} nights:", f" of GOOD's {len(past)} probes:")
        out.append(judged)
    return out + curve_verdicts(probe, references, settings)


def curve_verdicts(probe: dict, references: list, settings) -> list:
    """The CURVES of a probe against the references' curves (bands.judge_figure),
    each band NOISE_FACTOR times the night's width, a regression outside it for
    the night's steps in a row (at most the probe's steps); only with
    GOOD_RUNS references or more (one run has no spread to make a band of)."""
    mine = probe.get("curves") or {}
    names = [name for name in CURVES if name in mine]
    if not names or len(references) < GOOD_RUNS:
        return []
    theirs = [r.get("curves") or {} for r in references]
    rule = history.band_rule(settings)
    out = []
    for name in names:
        own = bands.for_figure(rule, name)
        wide = own._replace(k=own.k * NOISE_FACTOR, steps=min(own.steps, len(mine[name]["steps"])), min_refs=GOOD_RUNS,
                            at_least=())
        judged = bands.judge_figure(name, mine[name], [t[name] for t in theirs if name in t], wide)
        judged["evidence"] = judged["evidence"].replace(" runs)", " GOOD probes)").replace(" runs;", " GOOD probes;")
        out.append(judged)
    return out


def spread_pct(values: list) -> float:
    """How far apart the values are, in percent of their median (0 for fewer than two)."""
    if len(values) < 2:
        return 0.0
    mid = median(values)
    return (max(values) - min(values)) / abs(mid) * 100 if mid else 0.0


def judge_probe(job: dict, sid: str, settings) -> dict:
    """The nightly judge's view of one probe's job, with the checks a probe counts."""
    plan = {"jobs": [{"submission_id": sid}], "head_node_name": settings.head_node,
            "worker_ips": list(settings.worker_ips), "job_timeout_s": settings.job_timeout, "prepare": None}
    judged = judge.judge_job({"name": job["name"], "submission_id": sid or None,
                              "error": f"the submit script gave no id (see {file_name('bisect_log')})"},
                             settings.shared_root, plan)
    judged["checks"] = [c for c in judged["checks"] if c["name"] in job["checks"]]
    return judged


def plan_next(state: dict) -> dict:
    """The next probe ({commit, role, index}) or the outcome ({done, first_bad}
    when found; {done: "ambiguous", one_of: [shas]} when skipped commits hide it)."""
    probes = state["probes"]
    goods = [p for p in probes if p["role"] == "good"]
    if any(p["verdict"]["bad"] or p["verdict"].get("skip") for p in goods):
        return {"done": "good_not_good"}
    if len(goods) < GOOD_RUNS:
        return {"commit": state["good"], "role": "good", "index": -1}
    bads = [p for p in probes if p["role"] == "bad"]
    n = len(state["path"])
    if not bads:
        return {"commit": state["bad"], "role": "bad", "index": n - 1}
    if not bads[0]["verdict"]["bad"]:
        return {"done": "bad_not_bad"}
    searched = [p for p in probes if p["role"] == "probe"]
    skipped = frozenset(p["index"] for p in searched if p["verdict"].get("skip"))
    outcomes = [(p["index"], p["verdict"]["bad"]) for p in searched if not p["verdict"].get("skip")]
    index, first = search_step(n, outcomes, skipped)
    if index is not None:
        return {"commit": state["path"][index], "role": "probe", "index": index}
    lo = bounds(n, outcomes)[0]
    if any(lo < i < first for i in skipped):
        return {"done": "ambiguous", "one_of": state["path"][lo + 1:first + 1]}
    return {"done": "found", "first_bad": state["path"][first]}


def load(directory: Path) -> dict:
    state = fsutil.read_json(RunDir(directory).bisect_state)
    if not state:
        raise MvpError(f"{directory} holds no {STATE}: not a bisection's directory (61 makes one with bisect start)")
    return state


def save(directory: Path, state: dict) -> None:
    run = RunDir(directory)
    fsutil.write_json(run.bisect_state, state)
    fsutil.write_text(run.report_md, markdown(state))
    fsutil.write_text(run.report_html, report.page(f"bisection {run.id}", html_body(state)))


def outcome_line(state: dict) -> str:
    step = plan_next(state)
    done = step.get("done")
    if done == "found":
        return f"first bad commit: {step['first_bad']} ({subject(Path(state['repo']), step['first_bad'])})"
    if done == "ambiguous":
        return ambiguous_line(state, step["one_of"])
    untested = [p for p in state["probes"] if p["role"] in ("good", "bad") and p["verdict"].get("skip")]
    if untested:
        p = untested[0]
        return f"{p['role'].upper()} {p['commit']} could not be tested: {p['verdict']['skip']}; nothing bisected"
    if done == "good_not_good":
        flat = [c["evidence"] for p in state["probes"] if p["role"] == "good" for c in failed_checks(p["judged"])
                if c["name"] == "signal"]
        if flat:
            return (f"GOOD {state['good']}'s probe of job {state['job']['name']} carries no signal ({flat[0]}): it cannot "
                    "tell a good commit from a bad one here; bisect with another job (--job), or data on which the "
                    "probe learns (docs/nightly.md, the learning probe); nothing bisected")
        return f"GOOD {state['good']} is not good: its probe failed the judge (see its reasons); nothing bisected"
    if done == "bad_not_bad":
        return f"BAD {state['bad']} is not bad: the judge finds its probe as good as GOOD's; nothing bisected"
    return "not finished"


def ambiguous_line(state: dict, one_of: list) -> str:
    """As git bisect says it when only skipped commits are left: the first bad
    is one of these (the skipped ones, then the first known bad), and why each was skipped."""
    skipped = {p["commit"]: p["verdict"]["skip"] for p in state["probes"] if p["verdict"].get("skip")}
    why = "; ".join(f"{sha[:12]} skipped: {skipped[sha]}" for sha in one_of if sha in skipped)
    return (f"first bad is one of {one_of[0]}..{one_of[-1]} ({len(one_of)} commits, BAD's first-parent line): "
            f"{why}; test those by hand, or bisect with a job the runbook can run on them")


def rows(state: dict) -> list:
    """One row per probe: number, role, commit, subject, snapshot, job, verdict, reasons."""
    return [(str(n), p["role"] + (f" (reused from {p['reused_from']})" if p.get("reused_from") else ""), p["commit"], p["subject"], p["code_id"] or "-", p["submission_id"] or "-",
             verdict_word(p), " ".join("; ".join(p["verdict"]["reasons"]).split()))
            for n, p in enumerate(state["probes"], 1)]


HEAD = ("#", "role", "commit", "subject", "snapshot", "job", "verdict", "reasons")


def markdown(state: dict) -> str:
    lines = [f"# Bisection {state['id']}", "",
             f"Repository {state['repo']}: GOOD {state['good']}, BAD {state['bad']}, {len(state['path'])} commits "
             f"after GOOD; job {state['job']['name']} ({state['job']['steps']} steps, seed {SEED}).", "",
             f"**{outcome_line(state)}**", "", "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows(state)]
    return "\n".join(lines) + "\n"


def html_body(state: dict) -> str:
    from html import escape
    cells = "".join(f"<tr>{''.join(f'<td>{escape(c)}</td>' for c in row)}</tr>" for row in rows(state))
    return (f"<h1>Bisection {escape(state['id'])}</h1><p>{escape(state['repo'])}: GOOD {escape(state['good'])}, "
            f"BAD {escape(state['bad'])}; job {escape(state['job']['name'])}</p>"
            f"<p><b>{escape(outcome_line(state))}</b></p><table><tr>{''.join(f'<th>{h}</th>' for h in HEAD)}</tr>"
            f"{cells}</table>")


def start(args, settings) -> int:
    repo = check_repo(args.repo)
    good, bad = commit_of(repo, args.good, "--good"), commit_of(repo, args.bad, "--bad")
    path = commit_path(repo, good, bad, (args.good, args.bad))
    job = probe_job(args, settings)
    if args.dry_run:
        kv.emit(("good", f"{good} {subject(repo, good)}"),
                *((f"commit_{i}", f"{sha} {subject(repo, sha)}") for i, sha in enumerate(path, 1)))
        log.info(f"would probe GOOD {GOOD_RUNS} times, BAD once, then at most {most_probes(len(path)) - GOOD_RUNS - 1} "
                 f"of these {len(path)} commits (at most {most_probes(len(path))} probes): each a snapshot (31 "
                 f"--git-repo) and scripts/{job['script']}.sh {' '.join(([job['spec']] if job['spec'] else []) + ['--wait'] + job['words'])}; "
                 "nothing submitted")
        return 0
    directory = Regressions(settings.layout.regressions).new_bisection(_now())
    try:
        directory.path.mkdir(parents=True)
    except FileExistsError:
        raise MvpError(f"{directory} exists: another bisection started this second; start again") from None
    state = {"id": directory.id, "repo": str(repo), "good": good, "bad": bad, "path": path, "job": job,
             "cluster": settings.cluster_name, "started_at": _now().strftime(TIME), "probes": []}
    state["probes"] = reusable_goods(settings.layout.regressions, state, settings.bisect_reuse_hours)
    save(directory, state)
    kv.emit(("report", directory), *((f"probe_{n}", probe_line(p)) for n, p in enumerate(state["probes"], 1)))
    return 0


def reusable_goods(regressions: Path, state: dict, hours: int) -> list:
    """GOOD's probes of the newest earlier bisection that ran the same GOOD
    commit and the same job (words, JobSpec content, steps) on the same
    cluster at most `hours` ago, both good; [] when none (or hours is 0)."""
    since = (_now() - timedelta(hours=hours)).strftime(TIME)
    for earlier in reversed(Regressions(regressions).bisections()):
        old = fsutil.read_json(earlier.bisect_state) if hours and earlier.id != state["id"] else None
        if not old or old.get("started_at", "") < since:
            continue
        same = all(old.get(k) == state[k] for k in ("good", "job", "cluster"))
        goods = [p for p in old.get("probes", []) if p["role"] == "good"]
        if same and len(goods) >= GOOD_RUNS and not any(p["verdict"]["bad"] for p in goods):
            return [{**p, "reused_from": old["id"]} for p in goods[:GOOD_RUNS]]
    return []


def _now() -> datetime:
    return datetime.now(timezone.utc)


def next_main(args, settings) -> int:
    state = load(Path(args.dir))
    step = plan_next(state)
    if "done" in step:
        kv.emit(("action", "done"))
        return 0
    job = state["job"]
    kv.emit(("action", "probe"), ("commit", step["commit"]), ("role", step["role"]), ("script", job["script"]),
            ("spec", job["spec"]), *kv.words("", job["words"]))
    return 0


def record(args, settings) -> int:
    directory = Path(args.dir)
    state = load(directory)
    step = plan_next(state)
    if step.get("commit") != args.commit:
        raise MvpError(f"--commit {args.commit} is not the probe this bisection waits for ({step.get('commit')})")
    judged = judge_probe(state["job"], args.submission_id, settings)
    if state["job"].get("rises"):
        # A probe whose score must rise (the learning probe) and is flat tells good from bad by nothing.
        judged["checks"].append(judge.check_signal(judged))
    references = [p["judged"] for p in state["probes"] if p["role"] == "good"] if step["role"] != "good" else []
    why = untestable(args, judged, settings)
    probe = {"role": step["role"], "index": step["index"], "commit": args.commit,
             "subject": subject(Path(state["repo"]), args.commit), "code_id": args.code_id,
             "submission_id": args.submission_id, "judged": judged,
             "verdict": {"bad": False, "skip": why, "reasons": [f"skipped: {why}"]} if why
             else verdict(judged, references, settings)}
    state["probes"].append(probe)
    save(directory, state)
    kv.emit((f"probe_{len(state['probes'])}", probe_line(probe)))
    return 0


def untestable(args, judged: dict, settings) -> str:
    """Why a probe cannot tell a good commit from a bad one ("" when it can),
    as `git bisect skip`: its commit has no snapshot; the runbook's CPU layer
    cannot serve its verl (the preflight's refusal, or the layer's marker in a
    failed job's driver log); the cluster, not the commit, kept it from an
    end (not admitted: exit 75; LOST). Any other crash, verl's own included,
    is no skip: a commit that crashes training has broken it (BAD)."""
    if not args.code_id:
        return f"no snapshot of its commit (31 --git-repo failed; see {file_name('bisect_log')})"
    if not args.submission_id:
        where = f"its ERROR line is in {file_name('bisect_log')}"
        if args.submit_rc == str(verl_release.UNSERVED_EXIT):
            return f"the runbook's CPU layer cannot serve its verl (the preflight's refusal, exit {args.submit_rc}; {where})"
        if args.submit_rc == str(admission.BUSY_EXIT):
            return f"the cluster did not admit its job (exit {args.submit_rc}; {where})"
        return ""
    if judged.get("status") == "LOST":
        return "its job was lost to the cluster (LOST: its driver's node or the head went away)"
    text = JobDir.of(settings.jobs_dir, args.submission_id).driver_log_text() or ""
    marker = verl_release.died_in_layer(text) if judged.get("status") == "FAILED" else ""
    return f"its job died in the runbook's CPU layer, not in verl: {marker}" if marker else ""


def verdict_word(probe: dict) -> str:
    """BAD, good, or skip (a commit the runbook cannot test)."""
    return "skip" if probe["verdict"].get("skip") else "BAD" if probe["verdict"]["bad"] else "good"


def probe_line(probe: dict) -> str:
    """A probe as one line (a check's evidence may hold a job's multi-line message)."""
    reused = f" (reused from {probe['reused_from']})" if probe.get("reused_from") else ""
    text = (f"{probe['commit']} {probe['role']} {verdict_word(probe)} snapshot "
            f"{probe['code_id'] or '-'} job {probe['submission_id'] or '-'}{reused}: "
            f"{'; '.join(probe['verdict']['reasons'])}")
    return " ".join(text.split())[:400]


def finish(args, settings) -> int:
    directory = Path(args.dir)
    state = load(directory)
    step = plan_next(state)
    if "done" not in step:
        raise MvpError(f"the bisection in {directory} is not finished: {step['commit']} is still to probe")
    state["outcome"] = {"done": step["done"], "first_bad": step.get("first_bad"), "line": outcome_line(state),
                        **({"one_of": step["one_of"]} if "one_of" in step else {})}
    save(directory, state)
    if step["done"] != "found":
        print(f"ERROR: {state['outcome']['line']} ({RunDir(directory).report_md})", file=sys.stderr)
        return 1
    print(f"first bad commit {step['first_bad']}: {subject(Path(state['repo']), step['first_bad'])} "
          f"({RunDir(directory).report_md})", file=sys.stderr)
    kv.emit(("first_bad", step["first_bad"]))
    return 0


def commit_of_snapshot(settings, code_id: str) -> str:
    """The git commit a snapshot's manifest records ("" for none, or a dirty tree)."""
    manifest = fsutil.read_json(settings.layout.snapshot(code_id) / "MANIFEST.json", {}) if code_id else {}
    manifest = manifest or {}
    return (manifest.get("git_commit") or "") if manifest.get("git_dirty") is False else ""


def night_plan(run_dir: Path, settings) -> dict:
    """What the nightly bisects after a failed night ({good, bad, job}), or
    {skip: why not}: tonight's commit must descend from the last good night's
    in MVP_NIGHTLY_BISECT_REPO, and a job of the suite must have failed."""
    run_dir = RunDir(run_dir)
    rep = run_dir.read_report() or {}
    if rep.get("passed") or rep.get("failed_step") or not rep.get("jobs"):
        return {"skip": "the night passed, or failed before its jobs ran"}
    bad = commit_of_snapshot(settings, rep.get("code_id"))
    good_night = run_dir.regressions.last_good_night(run_dir.id)
    good = commit_of_snapshot(settings, good_night["code_id"]) if good_night else ""
    if not bad or not good:
        return {"skip": f"{'tonight' if not bad else 'the last good night'}'s snapshot records no clean git commit"
                        if good_night else "no good night kept to start from"}
    repo = check_repo(str(settings.nightly_bisect_repo))
    if good == bad:
        return {"skip": f"tonight ran the last good night's commit {good}: not a code change"}
    if _git(repo, "merge-base", "--is-ancestor", good, bad) is None:
        return {"skip": f"{bad} is not a known descendant of the last good night's {good} in {repo}"}
    names = {j.name for j in suite.load(suite.resolve(settings.nightly_suite or suite.DEFAULT, suite.REPO), suite.REPO)}
    failed = [j["name"].removesuffix(suite.RESUMED) for j in rep["jobs"] if failed_checks(j)]
    job = next((n for n in failed if n in names), "")
    return {"good": good, "bad": bad, "job": job} if job else {"skip": "no failed job of the suite to probe with"}


def told(args, settings) -> int:
    """The bisection's outcome beside the night's report (bisection.json), for the mail."""
    state = load(Path(args.dir))
    fsutil.write_json(RunDir(settings.layout.named(args.run_dir)).bisection,
                      {"line": outcome_line(state), "first_bad": (state.get("outcome") or {}).get("first_bad"),
                       "report": str(RunDir(args.dir).report_md)})
    return 0


def night(args, settings) -> int:
    kv.emit(*night_plan(settings.layout.named(args.run_dir), settings).items())
    return 0
