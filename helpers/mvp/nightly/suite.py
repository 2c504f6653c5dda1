"""`nightly-suite`: the nightly's suite file (MVP_NIGHTLY_SUITE, default
config/nightly.yaml), read and checked before anything is written, and the
night's plan from it as key=value lines for scripts/60_nightly_regression.sh:
the jobs in order (--only, the resume-fidelity extra run), each job's submit
script, JobSpec, words (overrides, a verl command line), retries and checks.

A bad file, --only, MVP_NIGHTLY_RESUME or MVP_NIGHTLY_OVERRIDES is one ERROR
line that names the file and the entry."""
import re
import sys
from pathlib import Path

from ..jobs.planning import cmdline, jobspec, trainer_profile, workloads
from ..worker import kv
from ..worker.errors import MvpError

NAME = re.compile(r"[a-z0-9_]+\Z")
FIELDS = ("name", "spec", "command", "overrides", "checks", "retries", "profiles", "rises")
# The runbook's own templates go through their scripts (40-42), as the night
# always submitted them: with MVP_MODEL_ID's model, the one step 30 prepares.
TEMPLATE_SCRIPTS = {"ppo.yaml": "40_submit_ppo_epoch1", "grpo.yaml": "41_submit_grpo_epoch1",
                    "sft.yaml": "42_submit_sft_minimal"}
GENERIC_SCRIPT = "43_submit_jobspec"
# The judge's checks (nightly/judge.py, resumed_check.py, resume_fidelity.py, history.py);
# `submitted` (the submit script gave an id) always counts.
CHECKS = ("submitted_from_head", "driver_on_worker", "job_dir_complete", "metrics_parsed", "checkpoint_policy",
          "inputs_persisted", "import_from_code_path", "succeeded_in_time", "resumed", "resume_fidelity", "regression",
          "signal")
# Those one job's directory does not decide alone, which 61's probes leave out
# (bisection.PROBE_CHECKS): the night's own evidence (the head's name, step
# 30), other runs (the resume's reference, the nights before), and signal,
# which a probe gets only when its job rises (bisection.record).
NIGHT_CHECKS = ("submitted_from_head", "inputs_persisted", "resume_fidelity", "regression", "signal")
# Those that prove a resumed chain went on from its checkpoint (its first
# step the next one, its data position, its checkpoints), without a band.
CHAIN_CHECKS = ("resumed", "checkpoint_policy")
RESUMED = "_resumed"


class Job:
    """One entry of the suite, checked."""

    def __init__(self, name: str, script: str, spec: str, command: list, workload: str):
        self.name, self.script, self.spec, self.command, self.workload = name, script, spec, command, workload
        self.overrides, self.checks, self.retries, self.profiles, self.rises = [], [], None, [], False

    def same_submission(self, other) -> bool:
        """Both submit the same thing (script, JobSpec, command line, overrides)."""
        return (self.script, self.spec, self.command, self.overrides) == (
            other.script, other.spec, other.command, other.overrides)


def _yaml():
    """PyYAML, which this host's python (compose, ssh: the system's python3)
    may lack: then one ERROR line saying how to get it."""
    try:
        import yaml
    except ImportError:
        raise MvpError(f"{sys.executable} has no PyYAML, which reading the nightly's suite file needs; install it "
                       "for this host's python3 (apt-get install python3-yaml, or pip install pyyaml)") from None
    return yaml


def resolve(path: str, repo: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else repo / p


def load(path: Path, repo: Path) -> list:
    """The suite's jobs, in order; MvpError naming the file and entry for anything wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MvpError(f"MVP_NIGHTLY_SUITE={path}: cannot read it ({exc.strerror}); point MVP_NIGHTLY_SUITE at a "
                       "suite file (config/nightly.yaml is the default)") from None
    yaml = _yaml()
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" line {where.line + 1}" if where else ""
        raise MvpError(f"{path}:{line} is not YAML ({getattr(exc, 'problem', exc)}); fix the file") from None
    entries = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise MvpError(f"{path}: no `jobs:` list; the file holds a top-level `jobs:` list of entries with a name "
                       "and a spec or a command (config/nightly.yaml shows one)")
    jobs = []
    for i, entry in enumerate(entries):
        job = _entry(entry, f"{path}: jobs[{i}]", repo)
        if any(j.name == job.name for j in jobs):
            raise MvpError(f"{path}: jobs[{i}]: the name '{job.name}' is taken by an earlier job; give each job "
                           "its own name")
        jobs.append(job)
    return jobs


def _entry(entry, where: str, repo: Path) -> Job:
    if not isinstance(entry, dict):
        raise MvpError(f"{where}: an entry is a mapping (name: ..., spec: ... or command: ...); fix it")
    name = entry.get("name")
    if not isinstance(name, str) or not NAME.match(name) or name.endswith(RESUMED):
        raise MvpError(f"{where}: name {name!r} is not a job name: give [a-z0-9_]+, not ending in {RESUMED} "
                       "(the resume-fidelity run's suffix)")
    where = f"{where} ({name})"
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        raise MvpError(f"{where}: unknown field '{unknown[0]}'; an entry has {', '.join(FIELDS)}")
    if ("spec" in entry) == ("command" in entry):
        raise MvpError(f"{where}: give exactly one of spec (a JobSpec) or command (a verl command line)")
    job = spec_job(name, entry["spec"], where, repo) if "spec" in entry else _command_job(name, entry["command"], where)
    job.overrides = _overrides(entry.get("overrides", []), where)
    job.checks = _checks(entry.get("checks"), where)
    job.retries = _retries(entry.get("retries"), where)
    job.profiles = _profiles(entry.get("profiles"), where)
    job.rises = entry.get("rises", False)
    if not isinstance(job.rises, bool):
        raise MvpError(f"{where}: rises must be true or false (true: the job's score must rise, check `signal`)")
    return job


def spec_job(name: str, spec, where: str, repo: Path) -> Job:
    if not isinstance(spec, str) or not spec:
        raise MvpError(f"{where}: spec must be a JobSpec's path (relative to the repo, or absolute)")
    path = resolve(spec, repo)
    if not path.is_file():
        raise MvpError(f"{where}: spec {spec} does not exist ({path}); give a JobSpec's path, relative to the repo "
                       "or absolute")
    _yaml()  # PyYAML, or the one ERROR line saying how to get it
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MvpError(f"{where}: spec {spec} is not a readable YAML JobSpec ({exc}); fix it") from None
    # The JobSpec's own reader (no YAML aliases), as 40-44 read it.
    doc = jobspec.load_yaml(jobspec.decode_input(data, spec), f"{where}: spec {spec}")
    workload = doc.get("workload")
    if doc.get("entrypoint") and not workload:
        workload = cmdline.workload_of(cmdline.parse(doc["entrypoint"], f"{where}: spec {spec}: entrypoint"))
    if not isinstance(workload, str) or not workload:
        raise MvpError(f"{where}: spec {spec} names no workload (nor an entrypoint:); it is not a JobSpec")
    template = repo / "templates" / "jobspecs" / path.name
    script = TEMPLATE_SCRIPTS.get(path.name) if path.resolve() == template.resolve() else None
    # A template goes through its script, which names it itself.
    return Job(name, script or GENERIC_SCRIPT, "" if script else str(path), [], workload)


def _command_job(name: str, command, where: str) -> Job:
    if not isinstance(command, (str, list)) or not command:
        raise MvpError(f"{where}: command must be a verl command line, a string or a list of words: "
                       f"{cmdline.USAGE}")
    words = cmdline.words(command, f"{where}: command")
    parsed = cmdline.parse(words, f"{where}: command")
    if any("\n" in w or "\r" in w for w in words):
        raise MvpError(f"{where}: command: a word spans lines; put each word on one line")
    return Job(name, GENERIC_SCRIPT, "", list(words), cmdline.workload_of(parsed))


def _overrides(items, where: str) -> list:
    if not isinstance(items, list) or not all(isinstance(i, str) and re.match(r"[^=\s]+=", i) and "\n" not in i
                                              for i in items):
        raise MvpError(f"{where}: overrides must be a list of KEY=VALUE strings, e.g. [trainer.total_epochs=2]")
    return list(items)


def _checks(items, where: str) -> list:
    if items is None:
        return []
    if not isinstance(items, list) or not items:
        raise MvpError(f"{where}: checks must be a non-empty list of the judge's checks: {', '.join(CHECKS)}")
    bad = [c for c in items if c not in CHECKS]
    if bad:
        raise MvpError(f"{where}: checks: '{bad[0]}' is not a check of the judge; use {', '.join(CHECKS)}")
    return list(items)


def _retries(value, where: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MvpError(f"{where}: retries must be a whole number >= 0, e.g. retries: 1")
    jobspec.check_retries(value, f"{where}: retries")
    return value


def _profiles(items, where: str) -> list:
    """`profiles:`: some of MVP_TRAINER_PROFILE's values (the contract lists them)."""
    if items is None:
        return []
    profiles = trainer_profile.PROFILES
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise MvpError(f"{where}: profiles must be a non-empty list of trainer profiles: {', '.join(profiles)}")
    bad = [p for p in items if p not in profiles]
    if bad:
        raise MvpError(f"{where}: profiles: '{bad[0]}' is not a trainer profile (MVP_TRAINER_PROFILE); use "
                       f"{', '.join(profiles)}")
    return list(items)


def for_profile(jobs: list, profile: str) -> list:
    """The jobs a night on trainer profile `profile` runs: those with no
    `profiles:`, and those whose `profiles:` name it (the learning probe,
    sized for the CPU profile's tiny model, runs on CPU nights only)."""
    return [j for j in jobs if not j.profiles or profile in j.profiles]


def select(jobs: list, only: str, where: Path, skipped: list = ()) -> list:
    """The jobs of --only (a comma list of names; a name that is no job's but
    that jobs' names extend with a number picks those: ppo = ppo1, ppo2), in
    --only's order (a job named twice runs once); every job, in the suite's
    order, when `only` is empty."""
    if not only:
        return list(jobs)
    names = [j.name for j in jobs]
    wanted = []
    for word in filter(None, only.split(",")):
        group = [word] if word in names else [n for n in names if re.fullmatch(re.escape(word) + r"[0-9]+", n)]
        if not group:
            other = next((j for j in skipped if j.name == word), None)
            if other:
                raise MvpError(f"--only: '{word}' runs on the trainer profile {', '.join(other.profiles)} only (its "
                               f"profiles: in {where}); use {', '.join(names)}{_groups(names)}")
            raise MvpError(f"--only: '{word}' is not a nightly job of {where}; use {', '.join(names)}{_groups(names)}")
        wanted += [n for n in group if n not in wanted]
    return [jobs[names.index(n)] for n in wanted]


def _groups(names: list) -> str:
    """` (ppo = ppo1, ppo2)`: the names --only takes for several jobs."""
    groups = {}
    for n in names:
        m = re.fullmatch(r"(.*[^0-9])[0-9]+", n)
        if m and m.group(1) not in names:
            groups.setdefault(m.group(1), []).append(n)
    shown = [f"{g} = {', '.join(ns)}" for g, ns in groups.items() if len(ns) > 1]
    return f" ({'; '.join(shown)})" if shown else ""


def plan_resume(jobs: list, selected: list, resume: str, where: Path) -> tuple:
    """(jobs in order, resumed job's name, its reference's name, why skipped):
    MVP_NIGHTLY_RESUME=NAME interrupts NAME and compares it with an earlier
    job of the night that submits the same (ppo2: ppo1), or else with NAME
    itself, running an extra NAME_resumed right after it."""
    if not resume:
        return selected, "", "", ""
    by_name = {j.name: j for j in jobs}
    if resume not in by_name:
        raise MvpError(f"MVP_NIGHTLY_RESUME='{resume}' is not {', '.join(by_name)} or empty (no resume check; "
                       f"the jobs of {where})")
    target = by_name[resume]
    earlier = [j for j in jobs[:jobs.index(target)] if j.same_submission(target)]
    names = [j.name for j in selected]
    ref = earlier[0].name if earlier else resume
    if ref not in names or (earlier and resume not in names):
        missing = ref if ref not in names else resume
        return selected, "", "", f"resume fidelity (MVP_NIGHTLY_RESUME={resume}: {missing} is not among tonight's jobs)"
    if earlier:
        return selected, resume, ref, ""
    extra = Job(resume + RESUMED, target.script, target.spec, target.command, target.workload)
    extra.overrides, extra.checks, extra.retries = target.overrides, target.checks, target.retries
    extra.profiles = target.profiles
    out = []
    for j in selected:
        out += [j, extra] if j is target else [j]
    return out, extra.name, ref, ""


def night_overrides(jobs: list, words: list, known: list = ()) -> dict:
    """MVP_NIGHTLY_OVERRIDES (JOB:KEY=VALUE words) by job name; a resumed extra
    run gets those of the job it repeats. A word for a job of `known` that
    tonight's profile does not run is taken and unused."""
    names = [j.name for j in jobs]
    out = {n: [] for n in [*names, *(j.name for j in known)]}
    for item in words:
        job, sep, rest = item.partition(":")
        if not sep or job not in out or not re.match(r"[^=]+=", rest):
            raise MvpError(f"MVP_NIGHTLY_OVERRIDES: '{item}' is not JOB:KEY=VALUE with JOB one of {', '.join(names)}")
        out[job].append(rest)
    return out


def emit_plan(night: list, resume_job: str, resume_ref: str, skip: str, extra: dict, where: Path) -> None:
    """The plan as key=value lines; a job's words are its --override pairs
    (the suite's, then the night's), then -- and its command line."""
    pairs = [("suite", where), ("jobs", " ".join(j.name for j in night)), ("resume_job", resume_job),
             ("resume_ref", resume_ref), ("resume_skip", skip)]
    for j in night:
        words = []
        for o in j.overrides + extra.get(j.name.removesuffix(RESUMED), []):
            words += ["--override", o]
        words += ["--", *j.command] if j.command else []
        key = f"job_{j.name}_"
        pairs += [(key + "script", j.script), (key + "spec", j.spec), (key + "workload", j.workload),
                  (key + "retries", "" if j.retries is None else j.retries), (key + "checks", ",".join(j.checks)),
                  (key + "rises", "1" if j.rises else ""), *kv.words(key, words)]
    kv.emit(*pairs)


DEFAULT = "config/nightly.yaml"
REPO = Path(__file__).resolve().parents[3]


def night(where: Path, only: str, resume: str, override_words: list, profile: str) -> tuple:
    """The night of the suite file `where` on trainer profile `profile`: (jobs
    in order, resumed job, its reference, why resume fidelity is skipped, the
    night's overrides by job); MvpError for a bad file, --only,
    MVP_NIGHTLY_RESUME or overrides."""
    every = load(where, REPO)
    jobs = for_profile(every, profile)
    if not jobs:
        raise MvpError(f"{where}: no job runs on the trainer profile {profile} (each names other profiles:); give "
                       "one job without profiles:, or one that names it")
    skipped = [j for j in every if j not in jobs]
    planned, resume_job, resume_ref, skip = plan_resume(jobs, select(jobs, only, where, skipped), resume, where)
    return planned, resume_job, resume_ref, skip, night_overrides(jobs, override_words, skipped)


def main(args, settings) -> int:
    where = resolve(settings.nightly_suite or DEFAULT, REPO)
    planned, resume_job, resume_ref, skip, extra = night(where, args.only, settings.nightly_resume,
                                                         list(settings.nightly_overrides), settings.trainer_profile)
    if args.count:
        kv.emit(("jobs", len(planned)))
        return 0
    emit_plan(planned, resume_job, resume_ref, skip, extra, where)
    # The resumed job's checkpoint limit, which 60 gives it (ckpt_keep.py honours it across the resume).
    resumed = [j.workload for j in planned if j.name == resume_job]
    kv.emit(("resume_ckpt_keep_key", workloads.ckpt_keep_key(resumed[0]) if resumed else ""))
    return 0
