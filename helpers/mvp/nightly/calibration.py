"""How often the nightly's judge is wrong, measured on a corpus of real runs
(tests/fixtures/detector/, recorded by bench/detector/record.sh): the replay
feeds the corpus to the judge exactly as nights would meet it and counts.

- False alarms: a same-code night (one recorded night of some of the
  suite's jobs) judged against MVP_NIGHTLY_HISTORY other same-code nights of
  the same jobs on its own machine drawn at random as its good history
  (leave-one-out: never itself; a nightly's history is its own cluster's),
  every job with the check `regression` (history.check: the bands and the
  single figures); the night is a false alarm when any job's check fails,
  or a job failed on its own: it ended other than SUCCEEDED, or another
  check of its recording night failed (resume_fidelity, signal, ...: they
  read the job alone, so the recorded verdict holds in any history). The
  suite's jobs may be recorded as parts, nights of disjoint sets of jobs
  (learn, grpo, sft; ppo1 and ppo2): a night of the suite passes when every
  part passes, its rate 1 - the product of each part's pass rate. The
  warm-up nights (MVP_NIGHTLY_MIN_HISTORY .. HISTORY - 1 good nights) are
  counted apart. The 95% interval is a bootstrap over the recorded nights
  (runs are resampled, so that pseudo-nights sharing runs are not counted
  as independent).
- Detection: a planted night (a fork's commit, bench/detector/plant.sh) as
  tonight, against a same-code history of its jobs on its machine, on its
  first bad night (the history holds no bad night); detected when any of
  its jobs fails the check `regression` or fails on its own; each job's own
  rate is kept too.
- Bisection: bisection.verdict of a planted run against two same-code runs of
  its job (GOOD's two probes): BAD or not, and the fewest leading steps of
  the run for which it already is BAD; same-code runs as probes give the
  bisection's own false BAD rate.

One regime at a time: a record carries the digest of the trainer profile
its night ran with (profile_sha256), and a changed profile changes what the
figures measure (a thread count, a batch size, the rollout's seeding). The
replay judges the records of today's CPU profile when they hold more than
MVP_NIGHTLY_HISTORY same-code nights, else those of the regime with the
most; config/detector.json says which, and trust() calls a night of another
profile than the measured one not calibrated.

The replay is deterministic (a fixed seed): the same corpus and judge give
the same figures, and config/detector.json holds them for the nightly's
reports (report.py, notify.py) and for the guard test (detector.bats).
Usage: python -m mvp detector [--corpus DIR] [--write FILE] [--draws N] [--boot N]"""
import gzip
import hashlib
import json
import math
import os
from fractions import Fraction
import random
from collections import Counter
from pathlib import Path
from statistics import mean, median
from typing import Optional

from ..core import metrics
from ..core.settings import Settings, fields, read_contract
from ..worker import fsutil
from ..worker.errors import MvpError
from . import bands, bisection, history, resume_fidelity, suite

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests/fixtures/detector/corpus"
CALIBRATION = REPO / "config/detector.json"
SEED = 20261128
# The corpus's table of the machine each file's records ran on, for the
# files recorded before records named it (tests/fixtures/detector/README.md).
MACHINES = "machines.json"


class JudgeSettings(Settings):
    """The nightly's settings as a night would read them: a variable set in
    the environment, else the contract's default (the replay runs outside
    the scripts, which pass every setting). Each is read once: the replay
    asks for them some 300,000 times."""

    _defaults = None

    def __getattr__(self, name: str):
        if JudgeSettings._defaults is None:
            JudgeSettings._defaults = {e.name: e.default or "" for e in read_contract()}
        try:
            variable, convert = fields()[name]
        except KeyError:
            raise AttributeError(name) from None
        value = self.__dict__[name] = convert(os.environ.get(variable, JudgeSettings._defaults[variable]))
        return value


def load(corpus: Path = CORPUS) -> list:
    """Every record of the corpus's files (*.jsonl, *.jsonl.gz), oldest file
    first, each with the `machine` it ran on: the one the record names (the
    recorder's boot id), else the one MACHINES names for its file (files
    recorded before records named it), else its file's own name."""
    named = fsutil.read_json(corpus / MACHINES, {}) or {}
    out = []
    for path in sorted(corpus.glob("*.jsonl*")):
        stem = path.name.split(".jsonl")[0]
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            out.extend({"machine": named.get(stem, stem), **json.loads(line)} for line in f if line.strip())
    return out


# The data a night trains on (MVP_GSM8K_SOURCE) changes what its figures
# measure, as a profile does: each source's nights are judged against
# nights of that source only. The goals are measured on GSM8K's files.
MAIN_SOURCE = "gsm8k"


def source_of(value: str) -> str:
    """A night's MVP_GSM8K_SOURCE as the replay groups it: synthetic, or
    gsm8k: hf and a directory of GSM8K's files give the same rows (records
    that kept none were made from ../shared/data/gsm8k)."""
    return "synthetic" if value == "synthetic" else MAIN_SOURCE


def by_source(records: list) -> dict:
    """source -> its records (source_of their data_source)."""
    out: dict = {}
    for r in records:
        out.setdefault(source_of(r.get("data_source") or ""), []).append(r)
    return out


def machines_of(records: list) -> dict:
    """night -> the machine it ran on: a night is judged against a history
    of its own machine's nights, as a nightly's cluster keeps its own."""
    return {r["night"]: r.get("machine") for r in records}


def profile_sha256(profile: str = "cpu") -> str:
    """The digest of templates/profiles/PROFILE.yaml today (the regime a night runs in)."""
    path = REPO / "templates/profiles" / f"{profile}.yaml"
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def regime_of(records: list, size: int, current: str) -> tuple:
    """(the profile digest the replay judges, its records): today's when its
    same-code nights number more than `size`, else the digest with the most
    same-code nights ("" holds the records made before records kept it)."""
    nights: dict = {}
    for r in records:
        if not r.get("planted") and r["status"] == "SUCCEEDED":
            nights.setdefault(r.get("profile_sha256", ""), set()).add(r["night"])
    chosen = current if len(nights.get(current, ())) > size else \
        max(sorted(nights), key=lambda d: len(nights[d]), default=current)
    return chosen, [r for r in records if r.get("profile_sha256", "") == chosen]


def summary_of(rows: list, stored: Optional[dict] = None) -> dict:
    """The judge's metrics of a run: as the night summed up its log
    (stored), or from the step rows (a run cut to its first steps)."""
    if stored is not None:
        return stored
    step_s = [r["timing_s/step"] for r in rows if isinstance(r.get("timing_s/step"), float)]
    thr = [r["perf/throughput"] for r in rows if isinstance(r.get("perf/throughput"), float)]
    return {"steps": len(rows), "mean_step_s": mean(step_s) if step_s else None,
            "mean_throughput": mean(thr) if thr else None, **metrics.outcome(rows)}


def as_job(record: dict, steps: Optional[int] = None) -> dict:
    """A record as the judge meets a judged job (judge.judge_job's dict),
    with the checks its recording night failed other than `regression`."""
    checks = [{"name": name, "passed": False} for name in record.get("failed_checks") or []]
    if "rows" not in record:  # a team's night from its history.json: its curves and figures as kept
        return {"name": record["job"], "status": record["status"], "checks": checks, "metrics": record["summary"],
                "curves": record["curves"]}
    rows = record["rows"] if steps is None else record["rows"][:steps]
    return {"name": record["job"], "status": record["status"], "checks": checks,
            "metrics": summary_of(rows, None if steps is not None else record["summary"]),
            "curves": bands.curves(rows)}


def as_entry(job: dict) -> dict:
    """A night's entry of a job in history.json (index._entry's fields the
    judge reads; a failed job is no good night, history.is_good)."""
    return {"status": job["status"], "failed_checks": [c["name"] for c in job["checks"] if c["passed"] is False],
            "figures": history.figures(job), "curves": job["curves"]}


def failed_alone(job: dict) -> str:
    """What failed in a judged job whatever its history ("" when nothing):
    it ended other than SUCCEEDED, or checks of its night failed."""
    if job["status"] != "SUCCEEDED":
        return f"ended {job['status']}"
    return ", ".join(c["name"] for c in job["checks"] if c["passed"] is False)


def nights_of(records: list, settings=None) -> tuple:
    """({night: {job: judged job}} of the same-code nights, {night: [its
    planted records]})."""
    settings = settings or JudgeSettings()
    same, planted = {}, {}
    for rec in records:
        (planted if rec.get("planted") else same).setdefault(rec["night"], []).append(rec)
    return {night: night_jobs(recs, settings) for night, recs in same.items()}, planted


def night_jobs(recs: list, settings) -> dict:
    """{job: judged job} of one night's records, its resumed job's
    resume_fidelity judged again under the settings' band (resumed_pair)."""
    jobs = {rec["job"]: as_job(rec) for rec in recs}
    pair = resumed_pair(recs, settings)
    if pair:
        ref, rec = pair
        ok = resume_fidelity.within_band(steps_of(ref), steps_of(rec), rec["workload"], settings.nightly_resume_band)
        job = jobs[rec["job"]]
        job["checks"] = [c for c in job["checks"] if c["name"] != resume_fidelity.NAME] + \
            ([] if ok else [{"name": resume_fidelity.NAME, "passed": False}])
    return jobs


def resumed_pair(recs: list, settings) -> Optional[tuple]:
    """(reference record, resumed record) of a night whose resumed job
    (MVP_NIGHTLY_RESUME) can be judged again from the rows: its record keeps
    the resumed steps, the reference is the night's other run of the same
    JobSpec, and the chain itself held (it succeeded, and `resumed` and
    `checkpoint_policy` passed: no band excuses a chain that did not go on
    from its checkpoint). None: the night's verdict stands as recorded."""
    rec = next((r for r in recs if r["job"] == settings.nightly_resume and "rows" in r), None)
    if rec is None or rec["status"] != "SUCCEEDED" or set(suite.CHAIN_CHECKS) & set(rec["failed_checks"] or ()):
        return None
    ref = next((r for r in recs if r is not rec and r.get("spec_sha256") == rec.get("spec_sha256")
                and r["status"] == "SUCCEEDED" and "rows" in r), None)
    return (ref, rec) if ref else None


def steps_of(record: dict) -> dict:
    """step -> its row, of a record's rows."""
    return {int(r["step"]): r for r in record["rows"]}


def parts_checked(same: dict) -> dict:
    """`same`, once its parts (each night's set of jobs) are seen not to
    overlap: a night of the suite is one night of each part."""
    parts = sorted({frozenset(jobs) for jobs in same.values()}, key=sorted)
    for i, a in enumerate(parts):
        for b in parts[i + 1:]:
            if a & b:
                raise MvpError(f"the corpus's same-code nights ran overlapping sets of jobs ({part_of(a)} and "
                               f"{part_of(b)}); record the suite's jobs as one set, or as sets that share no job")
    return same


def part_of(jobs) -> str:
    """The part of the suite a night recorded: its jobs, sorted."""
    return ",".join(sorted(jobs))


def nights_per_part(same: dict, machine: Optional[dict] = None, name: str = "") -> Counter:
    """part -> its same-code nights (on the machine `name`, with `machine`: night -> machine)."""
    return Counter(part_of(jobs) for n, jobs in same.items() if machine is None or machine.get(n) == name)


def independent_high(alarms: dict, nights: Counter) -> float:
    """Each part's exact binomial upper end for as many independent nights as
    it recorded, combined as night_rate combines the parts' rates."""
    return 1 - math.prod(1 - binomial_high(round(mean(hits) * nights[p]), nights[p]) for p, hits in alarms.items() if hits)


def night_rate(parts: dict) -> float:
    """A night's false-alarm rate from its parts' 0/1s (part -> [0/1]): the
    parts' jobs are judged each against their own history, so a night of the
    suite passes when every part passes. Parts recorded on other nights are
    taken as independent: a host slowed for the whole night makes the
    alarms of its parts go together, and this rate is then the higher one."""
    rates = [mean(v) for v in parts.values() if v]
    return 1 - math.prod(1 - r for r in rates) if rates else float("nan")


def judge_night(tonight: dict, refs: list, settings, blamed: Optional[dict] = None, rerun=None) -> dict:
    """{job: regressed True/False/None} of tonight's jobs against the good
    nights `refs` (each {job: judged job}), as history.check judges them;
    `blamed` counts "job: figure" of each figure that regressed. With
    MVP_NIGHTLY_RERUN, a job whose check `regression` alone failed is judged
    again on its rerun (`rerun(job)`: the run a rerun would be, or None when
    the corpus holds none): it stays failed unless the rerun passes."""
    past = [{"run_id": f"r{i:03d}", "jobs": {name: as_entry(job) for name, job in ref.items()}}
            for i, ref in enumerate(refs)]
    out = {}
    for name, job in tonight.items():
        mine: dict = {}
        out[name] = verdict_of(name, job, past, settings, mine)
        again = rerun(name) if out[name] and rerun and settings.nightly_rerun and not failed_alone(job) else None
        if again is not None:
            out[name] = verdict_of(name, again, past, settings, None) is not False
        if blamed is not None and out[name]:
            for key, times in mine.items():
                blamed[key] = blamed.get(key, 0) + times
    return out


def verdict_of(name: str, job: dict, past: list, settings, blamed: dict) -> Optional[bool]:
    """One job's verdict against `past` (True: it failed: its check
    `regression`, or alone); `blamed` counts what failed."""
    check, alone = history.check(job, past, "tonight", settings), failed_alone(job)
    if blamed is not None and alone:
        blamed[f"{name}: {alone}"] = blamed.get(f"{name}: {alone}", 0) + 1
    elif blamed is not None:
        for fig in check["figures"] + check["bands"]:
            if fig.get("regressed"):
                key = f"{name}: {fig['figure']}{' band' if 'key' in fig else ''}"
                blamed[key] = blamed.get(key, 0) + 1
    return True if alone else None if check["passed"] is None else not check["passed"]


def rerun_from(pool: dict, tonight: str, history: set, machine: dict):
    """What a rerun of tonight's job would be: its run in the nearest later
    night of `pool` ({night: {job: judged job}}) on tonight's machine and
    outside tonight's history, else the nearest earlier one; the corpus's
    nights were recorded one after another, so that is a run of the same
    code some minutes later on the same machine, as a night's rerun is."""
    order = sorted(n for n in pool if n != tonight and n not in history and machine.get(n) == machine.get(tonight))
    near = [n for n in order if n > tonight] + [n for n in reversed(order) if n < tonight]
    return lambda job: next((pool[n][job] for n in near if job in pool[n]), None)


def false_alarms(same: dict, settings, rng: random.Random, draws: int, size: int, ids: Optional[list] = None,
                 blamed: Optional[dict] = None, machine: Optional[dict] = None, per: Optional[dict] = None) -> dict:
    """part -> one 0/1 per pseudo-night: tonight each recorded night in turn
    (or those of `ids`, a resample), `size` other nights of its part on its
    machine (`machine`: night -> machine; none: one machine) at random as
    history, a rerun from the nights outside it; `per` collects them by
    machine too (machine -> part -> 0/1s)."""
    ids = ids or sorted(same)
    machine = machine or {}
    out: dict = {}
    for t in ids:
        part = part_of(same[t])
        others = sorted({n for n in ids if n != t and machine.get(n) == machine.get(t) and part_of(same[n]) == part})
        if len(others) < size:
            continue
        for _ in range(draws):
            history = rng.sample(others, size)
            verdicts = judge_night(same[t], [same[n] for n in history], settings, blamed,
                                   rerun_from(same, t, set(history), machine))
            hit = 1 if any(v for v in verdicts.values()) else 0
            out.setdefault(part, []).append(hit)
            if per is not None:
                per.setdefault(machine.get(t, ""), {}).setdefault(part, []).append(hit)
    return out


def bootstrap_high(same: dict, settings, rng: random.Random, boot: int, size: int,
                   machine: Optional[dict] = None) -> float:
    """The 97.5th percentile of the false-alarm rate over resamples of the nights."""
    names = sorted(same)
    rates = []
    for _ in range(boot):
        pick = [rng.choice(names) for _ in names]
        # A night drawn twice is one run: tonight never meets its own copy in the history.
        alarms = false_alarms(same, settings, rng, 1, size, pick, machine=machine)
        if alarms:
            rates.append(night_rate(alarms))
    rates.sort()
    return rates[min(len(rates) - 1, int(0.975 * len(rates)))] if rates else float("nan")


def detections(planted: dict, same: dict, settings, rng: random.Random, draws: int, size: int,
               blamed: Optional[dict] = None, machine: Optional[dict] = None) -> dict:
    """kind -> [(machine, {job: the fraction of `draws` histories (same-code
    nights of its jobs on its machine) against which that job failed}, the
    fraction against which the night failed: any of its jobs, whether a
    rerun of the kind was recorded on its machine)], one per planted night
    whose machine has a judged history; a rerun is the kind's nearest other
    planted night there; `blamed`: kind -> {"job: figure": times it regressed}."""
    out: dict = {}
    machine = machine or {}
    judged = {night: night_jobs(recs, settings) for night, recs in planted.items()}
    for night, recs in sorted(planted.items()):
        tonight, kind = judged[night], recs[0]["planted"]
        names = sorted(n for n in same if machine.get(n) == machine.get(night) and set(tonight) <= set(same[n]))
        if len(names) < settings.nightly_min_history:
            continue
        kin = {n: jobs for n, jobs in judged.items() if planted[n][0]["planted"] == kind}
        rerun = rerun_from(kin, night, set(), machine)
        hits, caught = dict.fromkeys(tonight, 0), 0
        by = (blamed if blamed is not None else {}).setdefault(kind, {})
        for _ in range(draws):
            verdicts = judge_night(tonight, [same[n] for n in rng.sample(names, min(size, len(names)))], settings, by,
                                   rerun)
            caught += 1 if any(verdicts.values()) else 0
            for job, bad in verdicts.items():
                hits[job] += 1 if bad else 0
        reran = all(rerun(job) is not None for job in tonight)
        out.setdefault(kind, []).append((machine.get(night, ""), {j: h / draws for j, h in hits.items()},
                                         caught / draws, reran))
    return out


def probe_bad(rec: dict, goods: list, settings, steps: Optional[int] = None) -> bool:
    probe = as_job(rec, steps)
    refs = [as_job(g, steps) for g in goods]
    return bisection.verdict(probe, refs, settings)["bad"]


def bisections(planted: list, same_records: list, settings, rng: random.Random, draws: int) -> dict:
    """kind -> {bad: fraction of probes judged BAD, steps: median fewest
    leading steps judged BAD}; 'same-code' -> same-code probes judged BAD."""
    # 61's probes train from step 1 and are never interrupted: a resumed
    # job's curve (the night's ppo2) is no probe's, as GOOD or as BAD.
    from_start = [r for r in planted + same_records if not r.get("rows") or r["rows"][0].get("step") == 1]
    by_job: dict = {}
    for rec in from_start:
        if not rec.get("planted"):
            by_job.setdefault((rec["job"], rec.get("machine")), []).append(rec)
    out: dict = {}
    for rec in from_start:
        # GOOD's probes run on the cluster the bisection runs on: the probe's own machine.
        pool = [g for g in by_job.get((rec["job"], rec.get("machine")), []) if g is not rec]
        if len(pool) < bisection.GOOD_RUNS:
            continue
        kind = rec.get("planted") or "same-code"
        entry = out.setdefault(kind, {"bad": [], "steps": []})
        for _ in range(draws):
            goods = rng.sample(pool, bisection.GOOD_RUNS)
            bad = probe_bad(rec, goods, settings)
            entry["bad"].append(1 if bad else 0)
            # The first leading steps already BAD (none: only the whole run's summary was).
            first = next((n for n in range(1, len(rec["rows"]) + 1) if probe_bad(rec, goods, settings, n)), None) \
                if bad and rec.get("planted") else None
            if first is not None:
                entry["steps"].append(first)
    return {k: {"bad": round(mean(v["bad"]), 3), "probes": len(v["bad"]),
                "steps": median(v["steps"]) if v["steps"] else None} for k, v in out.items()}


def binomial_high(hits: int, n: int) -> float:
    """The exact (Clopper-Pearson) upper end of the 95% interval of a rate
    seen `hits` times in `n` independent trials: the p at which seeing at
    most `hits` has a chance of 2.5%. 0 hits in 10: 0.31; in 72: 0.05."""
    if n <= 0 or hits >= n:
        return 1.0
    low, high = hits / n, 1.0
    for _ in range(50):
        p = (low + high) / 2
        low, high = (p, high) if at_most(hits, n, p) > 0.025 else (low, p)
    return high


def at_most(hits: int, n: int, p: float) -> float:
    """The chance of at most `hits` in `n` trials of chance p, each term
    made from the last in logs (math.comb(n, i) outgrows a float from about
    n = 1030; terms below a float's range are 0, as they nearly are)."""
    log_term, step, total = n * math.log1p(-p), math.log(p) - math.log1p(-p), 0.0
    for i in range(hits + 1):
        total += math.exp(log_term)
        log_term += math.log((n - i) / (i + 1)) + step
    return total


def nights_needed(rate: float, goal: float) -> Optional[int]:
    """The independent same-code nights whose 95% interval's upper end would
    reach `goal` (a fraction) if the false-alarm rate stayed at `rate`;
    None when the rate itself is above the goal."""
    if rate >= goal:
        return None
    n = 1
    while binomial_high(round(rate * n), n) > goal:
        n = n * 2 if n < 64 else n + max(1, n // 8)
    lo = n // 2
    while lo < n:  # the least n that reaches it (the bound falls as n grows at a fixed rate, up to rounding)
        mid = (lo + n) // 2
        if binomial_high(round(rate * mid), mid) > goal:
            lo = mid + 1
        else:
            n = mid
    return n


def wilson_low(hits: int, n: int) -> float:
    """The lower end of the 95% Wilson interval of hits/n."""
    if not n:
        return 0.0
    z, p = 1.96, hits / n
    centre = p + z * z / (2 * n)
    spread = z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5
    return max(0.0, (centre - spread) / (1 + z * z / n))


def guard(records: list, measured: dict, settings=None, draws: int = 20) -> list:
    """What a judge (these settings, this code) does worse on the corpus than
    the calibration `measured` (config/detector.json) allows: the false-alarm
    rate above its 95% interval's high end, a kind's detection below its
    interval's low end. One line each; none: the judge keeps its word."""
    settings = settings or JudgeSettings()
    rng = random.Random(SEED)
    size = settings.nightly_history
    records = regime_of(by_source(records).get(MAIN_SOURCE, []), size, profile_sha256())[1]
    same, planted = nights_of(records, settings)
    parts_checked(same)
    machine = machines_of(records)
    rate = 100 * night_rate(false_alarms(same, settings, rng, draws, size, machine=machine))
    out = []
    if rate > measured["false_alarms_per_100_nights_ci95_high"]:
        out.append(f"false alarms {rate:.2f} per 100 nights, above the 95% interval's high end "
                   f"{measured['false_alarms_per_100_nights_ci95_high']} measured in config/detector.json")
    for kind, runs in sorted(detections(planted, same, settings, rng, draws, size, machine=machine).items()):
        low = measured["detected"].get(kind, {}).get("ci95_low", 0.0)
        hits = [night for _, _, night, _ in runs]
        if mean(hits) < low:
            out.append(f"detected.{kind} {mean(hits):.3f}, below the 95% interval's low end {low} measured in "
                       "config/detector.json")
    return out


def corpus_of(records: list, same: dict) -> dict:
    """What the corpus holds: records, same-code nights, runs per kind and job, dates."""
    runs: dict = {}
    for r in records:
        per_job = runs.setdefault(r.get("planted") or "same-code", {})
        per_job[r["job"]] = per_job.get(r["job"], 0) + 1
    dates = sorted(r["recorded_at"][:10] for r in records)
    machine = machines_of(records)
    return {"records": len(records), "same_code_nights": len(same), "runs": runs,
            "machines": dict(Counter(machine[night] for night in same)),
            "first": dates[0] if dates else None, "last": dates[-1] if dates else None,
            "jobs": sorted({r["job"] for r in records})}


def by_job(same: dict, settings, rng: random.Random, draws: int, size: int, machine: dict) -> dict:
    """Each job's own false alarms per 100 nights of its check `regression`
    (the night's other jobs, and its other checks, left out)."""
    out = {}
    for name in sorted({j for night in same.values() for j in night}):
        sub = {n: {name: {**jobs[name], "checks": []}} for n, jobs in same.items() if name in jobs}
        if len(sub) > size:
            out[name] = round(100 * night_rate(false_alarms(sub, settings, rng, draws, size, machine=machine)), 2)
    return out


def interval_high(same: dict, settings, rng: random.Random, boot: int, size: int, alarms: dict,
                  machine: dict) -> float:
    """The 95% interval's upper end of a night's rate. Each part's: a
    bootstrap over its recorded nights, and never below the exact binomial
    bound for as many independent nights as were recorded (pseudo-nights
    share runs: 0 alarms in 10 recorded nights is not 0 in 200; with few more
    nights than the history, most resamples hold too few distinct nights,
    and the bootstrap gives no figure). The parts' upper ends are combined
    as night_rate combines rates: all of them at once, wider than 95%."""
    highs, counts = [], nights_per_part(same)
    for part in sorted(alarms):
        boot_high = bootstrap_high({n: jobs for n, jobs in same.items() if part_of(jobs) == part}, settings, rng, boot,
                                   size, machine)
        high = independent_high({part: alarms[part]}, counts)
        highs.append(high if math.isnan(boot_high) else max(boot_high, high))
    return 1 - math.prod(1 - h for h in highs)


def by_machine(alarms: dict, same: dict, machine: dict, found: dict) -> dict:
    """Each machine's own rates: its pseudo-nights' false alarms (`alarms`:
    machine -> part -> 0/1s), the upper end that many independent nights at
    that rate would give, the nights that would bring it to 5 and to 1 per
    100, its parts, and each kind's detection on it (`found`: detections()'s)."""
    out = {}
    for name in sorted({machine.get(n, "") for n in same}):
        parts, nights = alarms.get(name, {}), nights_per_part(same, machine, name)
        detected = {k: round(mean(f for m, _, f, _ in v if m == name), 3)
                    for k, v in sorted(found.items()) if any(m == name for m, *_ in v)}
        if not parts:
            # Too few same-code nights for one history and a night beyond it: no false alarm counted.
            out[name] = {"same_code_nights": sum(nights.values()), "false_alarms_per_100_nights": None,
                         "ci95_high_independent": None, "nights_for_ci95_high": None, "parts": {}, "detected": detected}
            continue
        rate = night_rate(parts)
        high = independent_high(parts, nights)
        out[name] = {"same_code_nights": sum(nights.values()), "false_alarms_per_100_nights": round(100 * rate, 2),
                     "ci95_high_independent": round(100 * high, 2),
                     "nights_for_ci95_high": {"5": nights_needed(rate, 0.05), "1": nights_needed(rate, 0.01)},
                     "parts": {p: {"same_code_nights": nights[p], "false_alarms_per_100_nights": round(100 * mean(hits), 2)}
                               for p, hits in sorted(parts.items())},
                     "detected": detected}
    return out


def detected_of(found: dict, shown: dict) -> dict:
    """Each kind's detection: its rate over the planted nights, the
    interval's low end (it counts nights, not draws: the draws of one night
    share it), the jobs, each job's own rate and its nights' (any of their
    jobs), and the figures that showed it."""
    out = {}
    for k, planted in sorted(found.items()):
        v = [night for _, _, night, _ in planted]
        jobs = sorted({j for _, per_job, *_ in planted for j in per_job})
        own = {j: round(mean(per_job[j] for _, per_job, *_ in planted if j in per_job), 3) for j in jobs}
        night = {j: round(mean(n for _, per_job, n, _ in planted if j in per_job), 3) for j in jobs}
        out[k] = {"rate": round(mean(v), 3), "ci95_low": round(wilson_low(round(sum(v)), len(v)), 3), "nights": len(v),
                  "job": ",".join(jobs), "by_job": own, "nights_by_job": night,
                  "nights_without_rerun": sum(1 for *_, reran in planted if not reran),
                  "shown_by": dict(sorted(shown.get(k, {}).items(), key=lambda kv: (-kv[1], kv[0])))}
    return out


def regime(records: list, chosen: str, current: str) -> dict:
    """What the replay judged: the profile digest, whether it is today's, and what it left out."""
    today = {r["night"] for r in records if r.get("profile_sha256", "") == current and not r.get("planted")}
    return {"profile_sha256": chosen, "current": chosen == current, "current_same_code_nights": len(today),
            "records_left_out": sum(1 for r in records if r.get("profile_sha256", "") != chosen)}


def replay(records: list, settings=None, draws: int = 20, boot: int = 100) -> dict:
    settings = settings or JudgeSettings()
    rng = random.Random(SEED)
    size = settings.nightly_history
    current = profile_sha256()
    sources = by_source(records)
    chosen, records_in = regime_of(sources.get(MAIN_SOURCE, []), size, current)
    same, planted = nights_of(records_in, settings)
    parts_checked(same)
    machine, corpus = machines_of(records_in), enough_nights(corpus_of(records_in, same), size)
    blamed, per = {}, {}
    alarms = false_alarms(same, settings, rng, draws, size, blamed=blamed, machine=machine, per=per)
    rate = night_rate(alarms)
    warm = {str(h): round(100 * night_rate(false_alarms(same, settings, rng, max(1, draws // 4), h, machine=machine)), 2)
            for h in range(settings.nightly_min_history, size)}
    high = interval_high(same, settings, rng, boot, size, alarms, machine)
    shown: dict = {}
    found = detections(planted, same, settings, rng, draws, size, shown, machine)
    return {
        "profile": "cpu", "regime": regime(records, chosen, current), "corpus": corpus,
        "judge": {**tonight_judge(settings), "band_at_least": [list(t) for t in bands.NIGHTLY_AT_LEAST]},
        "false_alarms_per_100_nights": round(100 * rate, 2),
        "false_alarms_per_100_nights_ci95_high": round(100 * high, 2),
        "nights_for_ci95_high": {"5": nights_needed(rate, 0.05), "1": nights_needed(rate, 0.01)},
        "pseudo_nights": sum(map(len, alarms.values())), "draws": draws,
        "parts": part_rates(same, alarms),
        # Which figure of which job each false alarm came from (times, over the pseudo-nights).
        "false_alarms_by_figure": dict(sorted(blamed.items(), key=lambda kv: (-kv[1], kv[0]))),
        "false_alarms_per_100_nights_by_job": by_job(same, settings, rng, max(1, draws // 4), size, machine),
        "warm_up_per_100_nights": warm,
        "by_machine": by_machine(per, same, machine, found),
        "detected": detected_of(found, shown),
        "bisection": bisections([r for recs in planted.values() for r in recs if r["status"] == "SUCCEEDED"],
                                [r for r in records_in if not r.get("planted") and r["status"] == "SUCCEEDED"],
                                settings, rng, max(1, draws // 4)),
        "by_source": other_sources(sources, chosen, settings, rng, draws, size),
        "resume_fidelity": resume_spread(records_in, settings),
    }


def enough_nights(corpus: dict, size: int) -> dict:
    """corpus_of()'s dict, once a machine has more same-code nights than a history holds."""
    if max(corpus["machines"].values(), default=0) <= size:
        raise MvpError(f"the corpus has no machine with more than MVP_NIGHTLY_HISTORY={size} same-code nights of one "
                       f"CPU profile ({corpus['machines']}); record more (bench/detector/record.sh)")
    return corpus


def resume_spread(records: list, settings) -> dict:
    """How far the resumed job's steps lay from its reference's on the
    same-code nights, per figure: the nights' largest differences (median,
    most), how many lie beyond the band, and the share of nights a
    half-normal fitted to them puts beyond it (at its spread's estimate and
    at that spread's one-sided 95% upper end)."""
    nights: dict = {}
    for r in records:
        if not r.get("planted"):
            nights.setdefault(r["night"], []).append(r)
    pairs = [p for recs in nights.values() for p in [resumed_pair(recs, settings)] if p]
    if not pairs:
        return {}
    band, found = settings.nightly_resume_band, {}
    for ref, rec in pairs:
        for name, d in resume_fidelity.differences(steps_of(ref), steps_of(rec), rec["workload"]).items():
            if d is not None:
                found.setdefault(name, []).append(d)
    beyond = sum(not resume_fidelity.within_band(steps_of(ref), steps_of(rec), rec["workload"], band) for ref, rec in pairs)
    return {"job": pairs[0][1]["job"], "reference": pairs[0][0]["job"], "nights": len(pairs), "nights_beyond": beyond,
            "figures": {name: {"band": float(band.get(name, 0)), "median": round(median(ds), 4), "max": round(max(ds), 4),
                               "beyond": sum(d > float(band.get(name, 0)) for d in ds),
                               **half_normal_beyond(ds, float(band.get(name, 0)))} for name, ds in sorted(found.items())}}


def half_normal_beyond(ds: list, band: float) -> dict:
    """Per 100: the share of a half-normal fitted to `ds` beyond `band`, at
    the spread's estimate sqrt(mean d^2) and at its one-sided 95% upper end
    (the chi-square's 5th percentile, by Wilson and Hilferty's cube)."""
    n = len(ds)
    sigma = math.sqrt(sum(d * d for d in ds) / n)
    chi2_low = n * (1 - 2 / (9 * n) - 1.645 * math.sqrt(2 / (9 * n))) ** 3
    beyond = [0.0 if s == 0 else 100 * math.erfc(band / (s * math.sqrt(2))) for s in (sigma, sigma * math.sqrt(n / chi2_low))]
    return {"fitted_beyond_per_100": round(beyond[0], 3), "fitted_beyond_per_100_high": round(beyond[1], 3)}


def part_rates(same: dict, alarms: dict) -> dict:
    """part -> its same-code nights and its own false alarms per 100 of them."""
    nights = nights_per_part(same)
    return {p: {"same_code_nights": nights[p], "false_alarms_per_100_nights": round(100 * mean(hits), 2)}
            for p, hits in sorted(alarms.items())}


def other_sources(sources: dict, chosen: str, settings, rng: random.Random, draws: int, size: int) -> dict:
    """source -> source_rates() of its records of the profile `chosen`, for each source but the main one."""
    return {src: source_rates([r for r in recs if r.get("profile_sha256", "") == chosen], settings, rng, draws, size)
            for src, recs in sorted(sources.items()) if src != MAIN_SOURCE}


def source_rates(records: list, settings, rng: random.Random, draws: int, size: int) -> dict:
    """Another data source's own rates, judged as the main one's: its nights'
    false alarms (None with too few nights on one machine), the upper end
    that many independent nights would give, each kind's detection."""
    same, planted = nights_of(records, settings)
    parts_checked(same)
    machine = machines_of(records)
    blamed: dict = {}
    alarms = false_alarms(same, settings, rng, draws, size, blamed=blamed, machine=machine)
    rate = night_rate(alarms)
    found = detections(planted, same, settings, rng, draws, size, machine=machine)
    return {"same_code_nights": len(same), "jobs": sorted({j for jobs in same.values() for j in jobs}),
            "false_alarms_per_100_nights": None if math.isnan(rate) else round(100 * rate, 2),
            "ci95_high_independent": None if math.isnan(rate) else round(100 * independent_high(alarms, nights_per_part(same)), 2),
            "false_alarms_by_figure": dict(by_count(blamed)),
            "detected": {k: {"rate": round(mean(f for _, _, f, _ in v), 3), "nights": len(v)} for k, v in sorted(found.items())}}


def regime_line(reg: dict) -> str:
    """Which CPU profile the figures are of, in words."""
    which = "today's templates/profiles/cpu.yaml" if reg["current"] else (
        f"an older templates/profiles/cpu.yaml (today's has {reg['current_same_code_nights']} same-code nights recorded)")
    digest = reg["profile_sha256"][:12] or "not recorded"
    return f"profile {digest}: {which}; {reg['records_left_out']} records of other profiles left out"


def in_a_row(judge: dict) -> str:
    """The steps in a row a band's regression needs, in words, with the figures that need more."""
    def words(field: str, value: float) -> str:
        if field == "share":
            return f"{Fraction(value).limit_denominator(10)} of its steps in a row"
        return f"{value:g} " + {"k": "MAD", "steps": "steps in a row"}.get(field, field)
    more = "; ".join(f"{figure} {words(field, value)}" for figure, field, value in judge.get("band_at_least", []))
    return f"{judge['band_steps']} steps in a row" + (f" ({more})" if more else "")


def rerun_words(judge: dict) -> str:
    """MVP_NIGHTLY_RERUN, in words."""
    return "; a job whose check regression alone failed run once more, failing only if its rerun does" \
        if judge.get("rerun") else "; no reruns"


def table(out: dict) -> str:
    c = out["corpus"]
    lines = [f"corpus: {c['records']} records, {c['same_code_nights']} same-code nights, recorded {c['first']} .. {c['last']}; "
             f"{regime_line(out['regime'])}",
             f"judge: {out['judge']['history']} good nights of history (warm-up from {out['judge']['min_history']}), "
             f"band k={out['judge']['band_k']} MAD, {in_a_row(out['judge'])}{rerun_words(out['judge'])}",
             "",
             f"{'what':<28} {'measured':>10}  {'goal':<10} detail",
             f"{'false alarms / 100 nights':<28} {out['false_alarms_per_100_nights']:>10}  {'<= 1':<10} "
             f"95% high {out['false_alarms_per_100_nights_ci95_high']} (goal <= 5); {out['pseudo_nights']} pseudo-nights; "
             f"by job {out['false_alarms_per_100_nights_by_job']}"]
    lines += [f"{'  part ' + part:<28} {p['false_alarms_per_100_nights']:>10}  {'':<10} {p['same_code_nights']} nights"
              for part, p in out.get("parts", {}).items()]
    lines.append(f"{'warm-up nights (refs: rate)':<28} {'':>10}  {'':<10} {out['warm_up_per_100_nights']}")
    for name, m in out.get("by_machine", {}).items():
        lines.append(f"{'  on ' + name[:24]:<28} {none_dash(m['false_alarms_per_100_nights']):>10}  {'':<10} "
                     f"{m['same_code_nights']} nights; {machine_words(m)}")
    for kind, d in out["detected"].items():
        b = out["bisection"].get(kind, {})
        lines.append(f"{'detected: ' + kind:<28} {d['rate']:>10}  {'>= 0.95':<10} 95% low {d['ci95_low']}, "
                     f"{d['nights']} nights, by job {d.get('by_job')}; bisection probe BAD {b.get('bad')} (steps needed: {b.get('steps')})")
    same = out["bisection"].get("same-code")
    if same:
        lines.append(f"{'bisection: same-code BAD':<28} {same['bad']:>10}  {'0':<10} {same['probes']} probes")
    lines += [f"{'data ' + src:<28} {str(d['false_alarms_per_100_nights']):>10}  {'':<10} {source_words(d)}"
              for src, d in out.get("by_source", {}).items()]
    lines += [f"{'resumed ' + name:<28} {f['beyond']:>10}  {'':<10} {resume_words(out['resume_fidelity'], name)}"
              for name, f in out.get("resume_fidelity", {}).get("figures", {}).items()]
    return "\n".join(lines)


def resume_words(r: dict, name: str) -> str:
    """How far the resumed job's figure `name` lay from its reference's, in words."""
    f = r["figures"][name]
    return (f"nights of {r['nights']} beyond the band {f['band']:g} ({r['job']} resumed vs {r['reference']} on same-code "
            f"nights: largest difference median {f['median']:g}, most {f['max']:g}; a half-normal fitted to them puts "
            f"{f['fitted_beyond_per_100']:g} per 100 beyond, {f['fitted_beyond_per_100_high']:g} at its spread's 95% upper end)")


def source_words(d: dict) -> str:
    """Another data source's rates, in words."""
    found = ", ".join(f"{k} {v['rate']:g} ({v['nights']} nights)" for k, v in d["detected"].items()) or "no planted night"
    high = "" if d["ci95_high_independent"] is None else f", 95% high {d['ci95_high_independent']:g} if independent"
    blamed = ", ".join(f"{k} {n}" for k, n in d.get("false_alarms_by_figure", {}).items()) or "none"
    return (f"{d['same_code_nights']} same-code nights of {','.join(d['jobs'])}{high}; false alarms from {blamed}; "
            f"detected {found}")


# docs/nightly.md's measured table lies between these lines; make bench-detector rewrites it.
DOC = REPO / "docs/nightly.md"
BEGIN = "<!-- measured: generated by make bench-detector from config/detector.json -->"
END = "<!-- end of measured -->"


def markdown(out: dict) -> str:
    """The measured rates as docs/nightly.md shows them."""
    c, j = out["corpus"], out["judge"]
    same = c["runs"].get("same-code", {})
    lines = [f"Measured {c['last']} on {c['same_code_nights']} same-code nights ({', '.join(f'{n} {k}' for k, n in sorted(same.items()))} "
             f"runs) and {sum(sum(v.values()) for k, v in c['runs'].items() if k != 'same-code')} planted runs; "
             f"the judge's defaults (history {j['history']} nights, warm-up from {j['min_history']}, bands "
             f"k={j['band_k']} MAD, {in_a_row(j)}, floor {j['band_floor']}%, single figures' tolerances "
             f"{' '.join(f'{k}={v}%' for k, v in sorted(j['tolerance'].items()))}{rerun_words(j)}). The nights' trainer "
             f"{regime_line(out['regime'])}.",
             "", "| what | measured | goal |", "|---|---|---|",
             f"| false alarms per 100 same-code nights (all jobs of a night) | {out['false_alarms_per_100_nights']:g} | at most 1 |",
             f"| its 95% interval's upper end | {out['false_alarms_per_100_nights_ci95_high']:g} | at most 5 |"]
    need = [out["nights_for_ci95_high"][g] or "none: the rate is above it" for g in ("5", "1")]
    lines += [f"| false alarms per 100 nights of the part {part} ({p['same_code_nights']} nights; a night of the suite is "
              f"one of each part) | {p['false_alarms_per_100_nights']:g} | |" for part, p in out.get("parts", {}).items()]
    lines.append(f"| nights that would bring the upper end to 5 / to 1 at this rate | {need[0]} / {need[1]} | |")
    lines += [f"| false alarms per 100 nights, {job}'s check regression alone | {rate:g} | |"
              for job, rate in out["false_alarms_per_100_nights_by_job"].items()]
    lines += [f"| warm-up nights (history of {h}): false alarms per 100 | {rate:g} | |"
              for h, rate in out["warm_up_per_100_nights"].items()]
    lines += machine_rows(out)
    for kind, d in out["detected"].items():
        b = out["bisection"].get(kind, {})
        steps = "" if b.get("steps") is None else f", from step {b['steps']:g}"
        jobs = d["job"] if len(d.get("by_job", {})) < 2 else ", ".join(f"{j} {r:g}" for j, r in d["by_job"].items())
        alone = f"; {d['nights_without_rerun']} with no rerun recorded, judged on their first run" \
            if d.get("nights_without_rerun") else ""
        lines.append(f"| detected on the first bad night: {kind} ({jobs}, {d['nights']} nights{alone}) | {d['rate']:g} "
                     f"(95% low {d['ci95_low']:g}); a bisection's probe BAD {b.get('bad', '-')}{steps} | at least 0.95 |")
    same_probe = out["bisection"].get("same-code")
    if same_probe:
        lines.append(f"| a bisection's probe of unchanged code judged BAD | {same_probe['bad']:g} | 0 |")
    lines += other_rows(out)
    lines += ["", "Where the false alarms came from (figure: times it regressed in the pseudo-nights): "
              + (", ".join(f"{k} {n}" for k, n in by_count(out["false_alarms_by_figure"])) or "none") + "."]
    lines += [f"What showed {kind}: " + (", ".join(f"{k} {n}" for k, n in by_count(d["shown_by"])) or "nothing")
              + f" (of {d['nights']} nights x {out.get('draws', 0)} histories)." for kind, d in out["detected"].items()]
    return "\n".join(lines)


def other_rows(out: dict) -> list:
    """The measured table's rows of the other data sources and of resume_fidelity's band."""
    return [f"| false alarms per 100 nights on {src} data ({source_words(d)}) | "
            f"{'-' if d['false_alarms_per_100_nights'] is None else d['false_alarms_per_100_nights']} | |"
            for src, d in out.get("by_source", {}).items()] + \
        [f"| resume_fidelity's {name}: {resume_words(out['resume_fidelity'], name)} | {f['beyond']} | |"
         for name, f in out.get("resume_fidelity", {}).get("figures", {}).items()]


def machine_words(m: dict) -> str:
    """A machine's upper end, the nights to reach the goals and its detections, in words."""
    need = m["nights_for_ci95_high"]
    found = ", ".join(f"{k} {v:g}" for k, v in m["detected"].items()) or "no planted run"
    if need is None:
        return f"its false alarms not counted: a history and a night beyond it need more nights; detected {found}"
    return (f"95% high {m['ci95_high_independent']:g} if its nights were independent; nights for an upper end of "
            f"5 / 1: {need['5'] or 'none: the rate is above it'} / {need['1'] or 'none: the rate is above it'}; "
            f"detected {found}")


def machine_rows(out: dict) -> list:
    """The table's row of each machine's own rates."""
    return [f"| false alarms per 100 nights on the machine {name} alone ({m['same_code_nights']} nights; "
            f"{machine_words(m)}) | {none_dash(m['false_alarms_per_100_nights'])} | |"
            for name, m in out.get("by_machine", {}).items()]


def none_dash(value) -> str:
    """A measured number as the table shows it; none measured: a dash."""
    return "-" if value is None else f"{value:g}"


def by_count(counts: dict) -> list:
    """(name, times) pairs, the most frequent first."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def docs_block(text: str, out: dict, where: Path = DOC) -> str:
    """text (docs/nightly.md) with its measured block replaced by markdown(out)."""
    head, found, rest = text.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not (found and found_end):
        raise MvpError(f"{where} has no measured block ({BEGIN} ... {END}); put the two lines back")
    return f"{head}{BEGIN}\n{markdown(out)}\n{END}{tail}"


def key_values(out: dict) -> list:
    pairs = [("same_code_runs", sum(out["corpus"]["runs"].get("same-code", {}).values())),
             ("same_code_nights", out["corpus"]["same_code_nights"]),
             ("false_alarms_per_100_nights", out["false_alarms_per_100_nights"]),
             ("false_alarms_per_100_nights_ci95_high", out["false_alarms_per_100_nights_ci95_high"])]
    pairs += [(f"detected.{k}", d["rate"]) for k, d in out["detected"].items()]
    return pairs


def main(args, _settings) -> int:
    if args.guard:
        measured = read_calibration(Path(args.guard))
        if measured is None:
            raise MvpError(f"--guard {args.guard}: no calibration there; make bench-detector writes config/detector.json")
        worse = guard(load(Path(args.corpus) if args.corpus else CORPUS), measured, draws=args.draws)
        for line in worse:
            print(f"WORSE: {line}")
        print(f"guard: {'the judge keeps its measured word' if not worse else f'{len(worse)} figure(s) worse than measured'}")
        return 1 if worse else 0
    out = replay(load(Path(args.corpus) if args.corpus else CORPUS), draws=args.draws, boot=args.boot)
    print(table(out))
    print()
    for key, value in key_values(out):
        print(f"{key}={value}")
    # The page first: a page without its block writes neither file. The page
    # shows what the file holds (its keys sorted), as the test reads it back.
    out = json.loads(json.dumps(out, sort_keys=True))
    page = Path(args.docs) if args.docs else None
    text = docs_block(page.read_text(encoding="utf-8"), out, page) if page else ""
    if args.write:
        fsutil.write_text(Path(args.write), json.dumps(out, indent=1, sort_keys=True) + "\n", 0o644)
    if page:
        fsutil.write_text(page, text, 0o644)
    return 0


# The judge's settings a calibration was measured with: a night judged with
# other values is not the judge the corpus measured.
JUDGE_SETTINGS = {"history": "MVP_NIGHTLY_HISTORY", "min_history": "MVP_NIGHTLY_MIN_HISTORY",
                  "band_k": "MVP_NIGHTLY_BAND_K", "band_steps": "MVP_NIGHTLY_BAND_STEPS",
                  "band_floor": "MVP_NIGHTLY_BAND_FLOOR", "tolerance": "MVP_NIGHTLY_TOLERANCE",
                  "rerun": "MVP_NIGHTLY_RERUN"}


def tonight_judge(settings) -> dict:
    return {"history": settings.nightly_history, "min_history": settings.nightly_min_history,
            "band_k": settings.nightly_band_k, "band_steps": settings.nightly_band_steps,
            "band_floor": settings.nightly_band_floor, "tolerance": settings.nightly_tolerance,
            "rerun": bool(settings.nightly_rerun)}


def trust(job: str, settings, calibration: Optional[dict] = None) -> str:
    """One line: how far to trust the check `regression` of this job tonight,
    as config/detector.json measured it; "not calibrated (why)" for a job,
    profile or judge the corpus never measured."""
    cal = calibration if calibration is not None else read_calibration()
    where, why = measured_for(settings, cal)
    if why:
        return why
    source = source_of(getattr(settings, "gsm8k_source", "") or "")
    if source != MAIN_SOURCE:
        return source_trust(job, source, cal.get("by_source", {}).get(source), where)
    rate = cal["false_alarms_per_100_nights_by_job"].get(job)
    if rate is None:
        return f"not calibrated (the corpus has no runs of the job '{job}'; {where})"
    differ = [JUDGE_SETTINGS[k] for k, v in tonight_judge(settings).items() if cal["judge"].get(k) != v]
    if differ:
        return f"not calibrated (tonight's judge differs from the measured one in {', '.join(differ)}; {where})"
    kinds = [caught(k, d, job) for k, d in cal["detected"].items() if job in d.get("job", "").split(",")]
    found = f"; detects {', '.join(kinds)} on the first bad night" if kinds else ""
    return (f"this check's measured false-alarm rate: {rate:g} per 100 nights (all jobs of a night: "
            f"{cal['false_alarms_per_100_nights']:g}, 95% high {cal['false_alarms_per_100_nights_ci95_high']:g}){found}; {where}")


def measured_for(settings, cal: Optional[dict]) -> tuple:
    """(the corpus in words, "not calibrated (why)" or ""): whether the
    calibration `cal` measured nights of tonight's trainer profile."""
    if not cal:
        return "", "not calibrated (no config/detector.json: make bench-detector measures the judge)"
    corpus = cal["corpus"]
    where = f"corpus {corpus['last']}, {corpus['same_code_nights']} same-code nights"
    if settings.trainer_profile != cal.get("profile", "cpu"):
        return where, (f"not calibrated (the corpus holds {cal.get('profile', 'cpu')}-profile runs only, this night ran "
                       f"{settings.trainer_profile}; docs/first-gpu-night.md says how to calibrate your own nights)")
    measured = cal.get("regime", {})
    if measured.get("profile_sha256") != profile_sha256(settings.trainer_profile):
        return where, (f"not calibrated (the corpus measured CPU nights of another templates/profiles/cpu.yaml than "
                       f"tonight's, which has {measured.get('current_same_code_nights', 0)} recorded same-code nights; "
                       f"bench/detector/record.sh adds them; {where})")
    return where, ""


def resume_trust(job: str, settings, calibration: Optional[dict] = None) -> str:
    """One line: how far to trust the check `resume_fidelity` of the night's
    resumed job, as the replay measured its band on the same-code nights."""
    cal = calibration if calibration is not None else read_calibration()
    where, why = measured_for(settings, cal)
    if why:
        return why
    r = cal.get("resume_fidelity") or {}
    if r.get("job") != job or source_of(getattr(settings, "gsm8k_source", "") or "") != MAIN_SOURCE:
        return (f"not calibrated (the corpus measured the resume of {r.get('job') or 'no job'} on GSM8K's files; "
                f"this night resumed {job}; {where})")
    band = settings.nightly_resume_band
    differ = [name for name, f in r["figures"].items() if float(band.get(name, 0)) != f["band"]]
    if differ:
        return f"not calibrated (tonight's MVP_NIGHTLY_RESUME_BAND differs from the measured one in {', '.join(differ)}; {where})"
    fitted = ", ".join(f"{name} {f['fitted_beyond_per_100']:g} ({f['fitted_beyond_per_100_high']:g} at its spread's 95% "
                       f"upper end)" for name, f in r["figures"].items())
    return (f"this check's measured false-alarm rate: {r['nights_beyond']} of {r['nights']} same-code nights beyond "
            f"its band; a half-normal fitted to each figure's differences puts {fitted} per 100 nights beyond; {where}")


def source_trust(job: str, source: str, measured: Optional[dict], where: str) -> str:
    """The trust line of a night on another data source than GSM8K's files."""
    if not measured or measured["false_alarms_per_100_nights"] is None or job not in measured["jobs"]:
        return (f"not calibrated (the corpus has {measured['same_code_nights'] if measured else 0} same-code nights "
                f"on MVP_GSM8K_SOURCE={source}, {'none' if not measured or job not in measured['jobs'] else 'too few'} "
                f"of the job '{job}'; bench/detector/record.sh --source {source} adds them; {where})")
    found = ", ".join(f"{k} {v['rate']:.2g}" for k, v in measured["detected"].items())
    return (f"this check's measured false-alarm rate on {source} data: {measured['false_alarms_per_100_nights']:g} per "
            f"100 nights of {','.join(measured['jobs'])} (95% high {measured['ci95_high_independent']:g})"
            + (f"; detects {found} on the first bad night" if found else "") + f"; {where}")


def caught(kind: str, detected: dict, job: str) -> str:
    """A kind's detection by this job's checks, and by its nights' (any of
    their jobs) where that differs: a resume one step off shows on the
    interrupted job, not on its reference."""
    own = detected.get("by_job", {}).get(job, detected["rate"])
    night = detected.get("nights_by_job", {}).get(job, own)
    return f"{kind} {own:.2g}" + ("" if f"{own:.2g}" == f"{night:.2g}" else f" (its nights {night:.2g})")


def read_calibration(path: Path = CALIBRATION) -> Optional[dict]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
