"""A validated JobSpec resolved into what gets submitted: the job directory,
trainer overrides, runtime_env and the entrypoint. Pure: nothing is written here."""
import json
import os
import re
import time
from datetime import datetime, timezone
from pathlib import Path

from jobenv import mvp_private_env

from . import cmdline, epoch_boundary, preflight, rewards, trainer_profile, tracking, verl_release, workloads
from ...cluster import snapshot
from ...worker import redact
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ...core.layout import Layout, check_id
from ...core.settings import Settings
from .workloads import Workload

LAUNCHER = Path(__file__).parents[2] / "worker" / "launch.py"
# On a job's PYTHONPATH when it has private variables: mvp_private_env.py.
JOB_ENV_DIR = Path(__file__).parents[3] / "jobenv"

class Plan:
    """What one submission is made of. (A plain class: dataclasses costs 8 ms
    of imports on the submit path, which is benchmarked.)"""

    FIELDS = ("submission_id", "workload", "shared_root", "job_dir", "code_path", "code_id", "address",
              "entrypoint_num_cpus", "entrypoint_resources", "entrypoint_num_gpus", "trainer_module",
              "trainer_overrides", "env_vars", "preflight", "profile", "standin", "resumed_from", "cluster",
              "log_sync_s", "stop_at_step", "data_lines", "warnings", "trainer_args", "workdir")

    def __init__(self, python: str, **fields):
        for name in self.FIELDS:
            setattr(self, name, fields[name])
        self.entrypoint = [python, str(LAUNCHER), str(self.job_dir)]

    @property
    def private_env(self) -> dict:
        """The variables whose names mark them secret (redact.is_secret)."""
        return {k: v for k, v in self.env_vars.items() if redact.is_secret(k)}

    @property
    def runtime_env(self) -> dict:
        """What Ray gets, and shows and logs: the private variables only by
        reference (helpers/jobenv/mvp_private_env.py says why and how)."""
        public = {k: v for k, v in self.env_vars.items() if not redact.is_secret(k)}
        if len(public) == len(self.env_vars):
            return {"env_vars": public}
        public[mvp_private_env.REF_VAR] = mvp_private_env.key_of(self.submission_id)
        return {"env_vars": public, "worker_process_setup_hook": mvp_private_env.HOOK}

    def ray_cli_argv(self, runtime_env_args: list) -> list:
        """`ray job submit` words; runtime_env_args: ["--runtime-env", "/dev/fd/N"]
        to submit (no secret on argv), ["--runtime-env-json", redacted JSON]
        to show."""
        import json
        argv = ["ray", "job", "submit", "--address", self.address, "--submission-id", self.submission_id,
                "--entrypoint-num-cpus", f"{self.entrypoint_num_cpus:g}",
                "--entrypoint-resources", json.dumps(self.entrypoint_resources)]
        if self.entrypoint_num_gpus:
            argv += ["--entrypoint-num-gpus", f"{self.entrypoint_num_gpus:g}"]
        return argv + runtime_env_args + ["--no-wait", "--"] + self.entrypoint

    def resolved(self) -> dict:
        return {
            "submission_id": self.submission_id, "workload": self.workload,
            "shared_root": str(self.shared_root), "job_dir": str(self.job_dir),
            "code_path": str(self.code_path), "code_id": self.code_id,
            "address": self.address, "entrypoint_num_cpus": self.entrypoint_num_cpus,
            "entrypoint_resources": self.entrypoint_resources, "entrypoint_num_gpus": self.entrypoint_num_gpus,
            "entrypoint": self.entrypoint, "trainer_module": self.trainer_module,
            "trainer_overrides": self.trainer_overrides, "env_var_names": sorted(self.env_vars),
            "private_env_names": sorted(self.private_env),
            "trainer_profile": self.profile, "resumed_from": self.resumed_from, "cluster": self.cluster,
            "log_sync_s": self.log_sync_s, "stop_at_step": self.stop_at_step,
            "trainer_args": self.trainer_args, "workdir": self.workdir,
        }


def new_id(workload: str) -> str:
    return f"{workload}-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}-{os.urandom(3).hex()}"


def _inside(root: Path, value: str, field_name: str, must_exist: bool = True, under: Path = None) -> Path:
    """The path as written (relative to the root), after checking where it
    really leads: symlinks are resolved before the containment check, so a
    link that leaves the shared root (or `under`) is refused unopened."""
    p = Path(value)
    p = Path(os.path.normpath(p if p.is_absolute() else root / p))
    real, limit = Path(os.path.realpath(p)), Path(os.path.realpath(under or root))
    if real != limit and limit not in real.parents:
        shown = p if real == p else f"{p} (a link to {real})"
        if under:
            raise MvpError(f"{field_name}: {shown} must be under {under}")
        raise MvpError(f"{field_name}: {shown} is outside shared_root {root}; keep job inputs on shared storage")
    if must_exist and not p.exists():
        raise MvpError(f"{field_name}: {p} does not exist; run scripts/30_prepare_data_and_model.sh or fix the path")
    return p


def _safe_for_shell(*paths: tuple) -> None:
    """(path, what) pairs. Ray hands the entrypoint to a shell; these characters would be re-parsed."""
    for p, what in paths:
        bad = set(str(p)) & set("$`\"\\\n'")
        if bad:
            raise MvpError(f"{what} {p} contains {''.join(sorted(bad))!r}, which a shell would re-parse; use another path")


def _reward_fn(root: Path, spec: dict, snap: "preflight.SnapshotConfig") -> dict:
    """The reward function's path/name, under the key this snapshot's verl
    reads them from: reward.custom_reward_function (0.9.1, whose top-level
    custom_reward_function still composes and is ignored) or, in older verl,
    the top-level custom_reward_function."""
    if not spec.get("reward_fn_path"):
        return {}
    name = spec.get("reward_fn_name") or "compute_score"
    path = _reward_file(root, spec["reward_fn_path"], name, "reward_fn_path")
    where = _reward_key(snap, "reward_fn_path")
    return {f"{where}.path": str(path), f"{where}.name": name}


def _reward_key(snap: "preflight.SnapshotConfig", field: str) -> str:
    where = snap.reward_key()
    if where is None:
        raise MvpError(f"{field}: verl's config in {snap.where()} has no custom_reward_function "
                       f"(neither {' nor '.join(preflight.REWARD_KEYS)}); this verl cannot take a reward function")
    return where


def _reward_file(root: Path, value: str, name: str, field: str, name_field: str = "reward_fn_name") -> Path:
    """The reward function's file, under user/code, defining the function `name`."""
    path = _inside(root, value, field, under=Layout(root).user_code)
    if not path.is_file():
        raise MvpError(f"{field}: {path} is not a file")
    import ast
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise MvpError(f"{field}: {path} line {exc.lineno}: {exc.msg}") from None
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if name not in names:
        raise MvpError(f"{name_field}: {path} defines no function '{name}' (it has: {', '.join(sorted(names)) or 'none'})")
    return path


CHECKPOINT_STEP = re.compile(r"global_step_[0-9]+")


def _resume(layout: Layout, ref: str, workload: str, code_path: Path) -> tuple:
    """JOB_ID or JOB_ID/global_step_N -> (verl's resume overrides, the
    checkpoint as "JOB_ID/global_step_N"). The new job reads the old job's
    checkpoint and writes its own into its own directory: the old one stays
    as it was. SFT from an epoch-boundary checkpoint is refused (verl 7401)."""
    job_id, _, step = ref.partition("/")
    check_id(job_id, "--resume-from")
    old = layout.job(job_id)
    try:
        old_workload = old.load_spec()["resolved"]["workload"]
    except (OSError, ValueError, KeyError):
        raise MvpError(f"--resume-from {ref}: {old} is not a runbook job directory; "
                       "give the submission id of an earlier job") from None
    if old_workload != workload:
        raise MvpError(f"--resume-from {ref}: that job trained {old_workload}, this one {workload}; "
                       "resume a job of the same workload")
    checkpoints = old.checkpoints
    if not step:
        try:
            step = "global_step_" + (checkpoints / "latest_checkpointed_iteration.txt").read_text().strip()
        except OSError:
            raise MvpError(f"--resume-from {ref}: {checkpoints} has no latest_checkpointed_iteration.txt "
                           "(verl writes it after a complete save); the job saved no checkpoint") from None
    if not CHECKPOINT_STEP.fullmatch(step) or not (checkpoints / step).is_dir():
        have = sorted(p.name for p in checkpoints.glob("global_step_*")) if checkpoints.is_dir() else []
        raise MvpError(f"--resume-from {ref}: no checkpoint {checkpoints / step} (there are: "
                       f"{', '.join(have) or 'none'})")
    if workloads.for_job(workload).epoch_end_resume_trains_nothing:
        epoch_boundary.check(old, int(step[len("global_step_"):]), f"{job_id}/{step}", code_path)
    return ({"trainer.resume_mode": "resume_path", "trainer.resume_from_path": str(checkpoints / step)},
            f"{job_id}/{step}")


def set_override(overrides: dict, key: str, value: str) -> None:
    """Sets key=value, replacing an earlier value of the same key (with or
    without Hydra's leading +); overrides keep their order."""
    bare = key.lstrip("+")
    for old in [k for k in overrides if k.lstrip("+") == bare]:
        del overrides[old]
    overrides[key] = value


def build(spec: dict, ray_cfg: dict, settings: Settings, extra: tuple = (),
          submission_id: str = "", resume_from: str = "") -> Plan:
    """`extra`: (key, value) pairs from --override, after the JobSpec's own (or its command
    line's) and the trainer profile's; `resume_from`: JOB_ID[/global_step_N]. The steps: where,
    which code, which inputs, which resources, the trainer overrides, the environment, the preflight."""
    cmd = cmdline.parse(spec["entrypoint"], "entrypoint") if spec.get("entrypoint") else None
    workload = workloads.for_job(spec["workload"], cmd.module if cmd else "")
    root = _shared_root(spec, settings)
    layout = Layout(root)
    sid = check_id(submission_id or spec.get("submission_id") or new_id(workload.name), "submission_id")
    job_dir = layout.job(sid)
    code_path, code_id = _code(spec, settings, root, layout)
    t0 = time.perf_counter()
    snap = preflight.SnapshotConfig(code_path, workload.trainer_module, layout.preflight, label=code_id,
                                    config=(cmd.config_name, cmd.config_path) if cmd else ("", ""))
    snap_seconds = time.perf_counter() - t0
    standin = trainer_profile.is_standin(code_path)
    overlay = trainer_profile.overlay(settings.trainer_profile, workload.name)
    user, inputs = _user_inputs(spec, cmd, root, snap, workload, check_model=not standin)
    _safe_for_shell((job_dir, "job directory"), (LAUNCHER, "launcher"))
    resources = _entry_resources(spec, ray_cfg)
    address = (spec.get("ray") or {}).get("address") or ray_cfg.get("address") or settings.dashboard_url
    overrides = _runbook_overrides(workload, sid, job_dir, inputs, settings, snap)
    overrides.update(_reward_fn(root, spec, snap))
    resume_overrides, resumed_from = _resume(layout, resume_from, workload.name, code_path) if resume_from else ({}, "")
    overrides.update(resume_overrides)
    for key, value in [*(spec.get("trainer_overrides") or {}).items(), *user, *overlay.overrides.items(), *extra]:
        set_override(overrides, key, value)
    env = _job_env(spec, ray_cfg, settings, overlay, workload, code_path, address)
    tracking.apply(overrides, env, job_dir, tracking.chain_first(layout.jobs, sid, resumed_from), code_path, code_id)
    # The preflight's cost: reading the snapshot's config facts and checking the overrides.
    checked = preflight.verify(snap, override_words(overrides), time.perf_counter() - snap_seconds)
    return Plan(
        submission_id=sid, workload=workload.name, shared_root=root, job_dir=job_dir,
        code_path=code_path, code_id=code_id, address=address, trainer_module=workload.trainer_module,
        trainer_overrides=overrides, env_vars=env, python="python3", preflight=checked,
        profile=settings.trainer_profile, standin=standin, resumed_from=resumed_from,
        cluster=_cluster_name(address, settings), log_sync_s=settings.log_sync_s, stop_at_step=_stop_at_step(settings, resumed_from),
        **_checks(workload, inputs, overrides, layout, (code_path, code_id, standin), settings.trainer_profile, overlay),
        trainer_args=cmd.hydra_args() if cmd else [], workdir=_workdir(workload, code_path), **resources)


def override_words(overrides: dict) -> list:
    """The overrides as the trainer's words: KEY=VALUE, or ~KEY alone (value None)."""
    return [key if value is None else f"{key}={value}" for key, value in overrides.items()]


def _workdir(workload: Workload, code_path: Path) -> str:
    """Where a recipe's driver runs: the snapshot's root, as verl's docs run
    them (their configs find verl's with hydra.searchpath file://verl/trainer/config);
    the table's trainers run where Ray starts them."""
    return str(code_path) if workload.name == workloads.CUSTOM else ""


def _user_inputs(spec: dict, cmd, root: Path, snap, workload: Workload, check_model: bool) -> tuple:
    """(the command line's overrides, paths checked; the job's model and
    parquet: the command line's over the JobSpec's). A table workload needs
    both, from one or the other."""
    inputs = _inputs(spec, root, check_model)
    user = []
    if cmd:
        user, given = _command_paths(cmd, root, snap, check_model)
        inputs.update((k, v) for k, v in given.items() if v)
    if workload.name != workloads.CUSTOM:
        key = "data.train_files" if cmd else "dataset.train"
        if not inputs["train"]:
            raise MvpError(f"{key}: required (the training parquet on shared storage): give data.train_files=PATH "
                           "on the command line or dataset.train in the JobSpec")
        if inputs["model"] is None:
            raise MvpError(f"{workload.model_keys[0]}: required (the model on shared storage): give "
                           f"{workload.model_keys[0]}=PATH on the command line or model in the JobSpec")
    return user, inputs


# The command line's keys that name files, checked as a JobSpec's paths are.
_PATH_KINDS = {"data.train_files": "train", "data.val_files": "val", "actor_rollout_ref.model.path": "model",
               "critic.model.path": "model", "model.path": "model", "reward_model.model.path": "model",
               **{f"{key}.path": "reward" for key in preflight.REWARD_KEYS}}


def _command_paths(cmd, root: Path, snap, check_model: bool) -> tuple:
    """The command line's overrides with each path checked and written out
    absolute (the driver does not run in the shared root), and the inputs
    they name: {"model": the first model, "train": [...], "val": [...]}."""
    out, found = [], {"model": None, "train": [], "val": []}
    for key, value in cmd.overrides:
        bare = key.lstrip("+~")
        kind = _PATH_KINDS.get(bare)
        if kind is None or value is None:
            out.append((key, value))
            continue
        given = _path_values(bare, value, lists=kind in ("train", "val"))
        if kind in ("train", "val"):
            found[kind] = _files(root, given, bare)
            value = _hydra_files(found[kind])
        elif kind == "model":
            path = _model(root, given)
            if check_model:
                trainer_profile.check_model(path)
            found["model"] = found["model"] or path
            value = str(path)
        else:
            reward_key = _reward_key(snap, bare)
            if bare != f"{reward_key}.path":
                raise MvpError(f"{bare}: verl's config in {snap.where()} reads the reward function from "
                               f"{reward_key}, not from here; write {reward_key}.path=... and {reward_key}.name=...")
            value = str(_reward_file(root, given, cmd.value(f"{reward_key}.name") or "compute_score", bare,
                                     f"{reward_key}.name"))
        out.append((key, value))
    return out, found


def _path_values(key: str, value: str, lists: bool):
    """A path override's value as Hydra reads it: one path, or (data) a list of them."""
    if not set(value) & set("'\"[]{},\\$"):
        return value.strip()
    from hydra.core.override_parser.overrides_parser import OverridesParser
    try:
        parsed = OverridesParser.create().parse_override(f"{key}={value}").value()
    except Exception as exc:  # Hydra's own parse error
        raise MvpError(f"{key}: Hydra cannot read '{value}' ({str(exc).splitlines()[0]}); "
                       "quote a path with , [ ] or spaces ('...')") from None
    if isinstance(parsed, str) or (lists and isinstance(parsed, list) and parsed
                                   and all(isinstance(p, str) and p for p in parsed)):
        return parsed
    raise MvpError(f"{key}: '{value}' is not a path{' or a list of paths' if lists else ''}")


def _checks(workload: Workload, inputs: dict, overrides: dict, layout: Layout, code: tuple, profile: str,
            overlay) -> dict:
    """The preflight's lines about the job's data, its reward and its verl
    release (`data_lines`, `warnings`); code: (path, id, is the stand-in)."""
    code_path, code_id, standin = code
    lines, warnings = [], []
    if not standin:
        lines, warnings = verl_release.check(profile, bool(overlay.pythonpath), code_path, code_id)
    lines += _check_data(workload, inputs, overrides, layout)
    if workload.dataset == "rl":
        files = [("dataset.train", p) for p in inputs["train"]]
        files += [("dataset.val", p) for p in inputs["val"]] if rewards.validates(overrides) else []
        lines += rewards.check(files, overrides, code_path, code_id, layout.preflight)
    return {"data_lines": lines, "warnings": warnings}


def _check_data(workload: Workload, inputs: dict, overrides: dict, layout: Layout) -> list:
    """The job's parquet as its verl reads them, rendered with the model's
    tokenizer where the model has one (datacheck.py)."""
    from . import datacheck
    if not workload.dataset:
        return ["custom workload: its parquet are on shared storage; their columns are the recipe's to read"]
    files = [("dataset.train", p) for p in inputs["train"]] + [("dataset.val", p) for p in inputs["val"]]
    return datacheck.check(files, workload.dataset, overrides, inputs["model"], layout.preflight)


def _stop_at_step(settings: Settings, resumed_from: str):
    """The step after which the launcher SIGKILLs the trainer (stopper.py):
    MVP_STOP_AT_STEP, which the nightly sets for the job it interrupts; never
    for a resumption (its retry must go on), None when unset."""
    value = settings.stop_at_step
    if not value or resumed_from:
        return None
    if not value.isdigit() or int(value) < 1:
        raise MvpError(f"MVP_STOP_AT_STEP='{value}' must be a step >= 1 (or empty: no interruption)")
    return int(value)


def _cluster_name(address: str, settings: Settings) -> str:
    """The job record names its cluster (JobDir.cluster): a restarted head
    reconciles, and retention removes, its own cluster's jobs only."""
    return settings.cluster_name if address.rstrip("/") == settings.dashboard_url else f"at {address}"


def _shared_root(spec: dict, settings: Settings) -> Path:
    root = Path(os.path.normpath(settings.shared_root))
    if spec.get("shared_root") and Path(os.path.normpath(spec["shared_root"])) != root:
        raise MvpError(f"shared_root: {spec['shared_root']} is not the configured SHARED_ROOT {root}; "
                       "remove shared_root from the JobSpec or run with SHARED_ROOT set to it")
    if not root.is_dir():
        raise MvpError(f"shared_root: {root} does not exist; mount the shared storage or fix shared_root")
    return root


def _code(spec: dict, settings: Settings, root: Path, layout: Layout) -> tuple:
    """(code path, code id): the JobSpec's code_path, else CODE_ID's snapshot,
    else the newest snapshot; the id is the snapshot's own marker."""
    if spec.get("code_path"):
        code_path = _inside(root, spec["code_path"], "code_path", must_exist=False)
    else:
        code_id = settings.code_id or snapshot.newest(root) or ""
        if not code_id:
            raise MvpError("code_path: no code snapshot exists; run scripts/31_snapshot_verl_code.sh or set code_path")
        check_id(code_id, "CODE_ID")
        code_path = _inside(root, str(layout.snapshot(code_id)), "CODE_ID", must_exist=False)
    marker = snapshot.marker_of(code_path)
    if marker is None:
        raise MvpError(f"code_path: {code_path} is not a code snapshot (no mvp_marker.py); "
                       "create one with scripts/31_snapshot_verl_code.sh")
    return code_path, marker


def _inputs(spec: dict, root: Path, check_model: bool) -> dict:
    """The JobSpec's model and train/val parquet (each one file or a list,
    as verl's data.train_files), each checked to be on shared storage."""
    model = _model(root, spec["model"]) if spec.get("model") else None
    if check_model and model:
        trainer_profile.check_model(model)
    dataset = spec.get("dataset") or {}
    return {"model": model, "train": _files(root, dataset["train"], "dataset.train") if dataset.get("train") else [],
            "val": _files(root, dataset["val"], "dataset.val") if dataset.get("val") else []}


def _files(root: Path, value, field: str) -> list:
    if isinstance(value, str):
        return [_inside(root, value, field)]
    return [_inside(root, item, f"{field}[{i}]") for i, item in enumerate(value)]


def _model(root: Path, value: str) -> Path:
    """A path (absolute, or relative to the shared root) or a model's name
    under common/models (what 30 prepared: `Qwen/Qwen2.5-0.5B-Instruct`)."""
    models, given = Layout(root).models, Path(value)
    if given.is_absolute() or (root / given).exists():
        return _inside(root, value, "model")
    if (models / given).exists():
        return _inside(root, str(models / given), "model", under=models)
    have = sorted(str(p.parent.relative_to(models)) for p in models.glob("**/config.json")) if models.is_dir() else []
    raise MvpError(f"model: {os.path.normpath(root / given)} does not exist, nor is '{value}' a model under {models} "
                   f"(there: {', '.join(have) or 'none'}); prepare it with scripts/30_prepare_data_and_model.sh "
                   "--model ID_OR_DIR, or fix the path")


def _hydra_files(files: list) -> str:
    """data.train_files' value: the path, or a Hydra list of quoted paths."""
    if len(files) == 1:
        return str(files[0])
    for f in files:
        if set(str(f)) & set("'\\"):
            raise MvpError(f"dataset: {f} contains ' or \\, which a Hydra list cannot quote; rename it")
    return "[" + ",".join(f"'{f}'" for f in files) + "]"


def _entry_resources(spec: dict, ray_cfg: dict) -> dict:
    """What the driver asks Ray for: the Ray config's entrypoint_*, the
    JobSpec's resources over them. A resource > 0 is required: it is what
    keeps the driver off the head."""
    res = {**{k: v for k, v in ray_cfg.items() if k.startswith("entrypoint")}, **(spec.get("resources") or {})}
    entry_resources = res.get("entrypoint_resources") or {}
    if not any(v > 0 for v in entry_resources.values()):
        raise MvpError("resources.entrypoint_resources: needs a resource > 0 (e.g. {worker_node: 1}); "
                       "without one Ray runs the driver on the head")
    return {"entrypoint_num_cpus": float(res.get("entrypoint_num_cpus", 1)), "entrypoint_resources": entry_resources,
            "entrypoint_num_gpus": float(res.get("entrypoint_num_gpus", 0) or 0)}


def _runbook_overrides(workload: Workload, sid: str, jd: JobDir, inputs: dict, settings: Settings,
                       snap: "preflight.SnapshotConfig") -> dict:
    """The overrides the runbook sets before the JobSpec's own: where the job
    writes, its size on this cluster, its inputs, the workload's defaults. A
    custom module's config gets those of its keys that it has."""
    overrides = {
        "trainer.default_local_dir": str(jd.checkpoints),
        # Hydra writes its outputs/<date>/<time>/ in the driver's working directory otherwise.
        "hydra.run.dir": str(jd.hydra),
        "trainer.save_freq": "10", "trainer.total_epochs": "1",
        "trainer.project_name": "mvp", "trainer.experiment_name": sid,
        "trainer.logger": "['console']",
        "trainer.nnodes": str(settings.workers), "trainer.n_gpus_per_node": str(settings.gpus_per_worker),
    }
    if inputs["train"]:
        overrides["data.train_files"] = _hydra_files(inputs["train"])
    if inputs["val"]:
        overrides["data.val_files"] = _hydra_files(inputs["val"])
    if inputs["model"] is not None:
        overrides.update((key, str(inputs["model"])) for key in workload.model_keys)
    overrides.update(workload.defaults)
    if workload.name == workloads.CUSTOM:
        return {key: value for key, value in overrides.items() if key in snap.keys}
    return overrides


def _job_env(spec: dict, ray_cfg: dict, settings: Settings, overlay, workload: Workload, code_path: Path,
             address: str) -> dict:
    """The job's environment, lowest first: MVP_JOB_ENV_PASSTHROUGH, the Ray
    config's, the profile's, the JobSpec's; PYTHONPATH leads with the snapshot."""
    env = dict(settings.job_env)
    env.update((ray_cfg.get("runtime_env") or {}).get("env_vars") or {})
    env.update(overlay.env_vars)
    env.update(spec.get("env_vars") or {})
    user_pythonpath = env.pop("PYTHONPATH", "")
    private = sorted(name for name in env if redact.is_secret(name))
    if private and address != settings.dashboard_url:
        raise MvpError(f"env_vars {', '.join(private)}: private variables reach a job through the runbook's own "
                       f"cluster ({settings.dashboard_url}), not {address}; drop ray.address or the variables")
    job_env_dir = str(JOB_ENV_DIR) if private else ""
    env["PYTHONPATH"] = ":".join(p for p in (str(code_path), user_pythonpath, overlay.pythonpath, job_env_dir,
                                             "${PYTHONPATH}") if p)
    _trainer_env(env, workload)
    return env


def _trainer_env(env: dict, workload: Workload) -> None:
    """What each trainer needs in its environment, and what verl refuses
    there (the workload table says which and why)."""
    for name, value in workload.job_env.items():
        env.setdefault(name, value)
    for name in sorted(set(env) & set(workload.refused_env)):
        raise MvpError(f"env_vars.{name}: verl's main_ppo sets {name} in the runtime_env of its own ray.init "
                       f"(verl/trainer/constants_ppo.py) and Ray refuses a job env var of the same name; "
                       f"{workload.refused_env[name]}")
