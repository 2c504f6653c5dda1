"""The two YAML inputs of a submission, checked before anything is written:
the Ray base config (templates/configs/*.yaml) and the training JobSpec
(templates/jobspecs/*.yaml; the v1.1 runbook spec, point 5: docs/spec.md)."""
import re
from typing import Any

from jobenv import mvp_private_env

from . import cmdline, workloads
from ...core.layout import check_id
from ...worker.errors import MvpError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
OVERRIDE_KEY = re.compile(r"^\+{0,2}[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

OPT_STR = (str, type(None))
NUMBER = (int, float)
OPT_INT = (int, type(None))
# retries: how many times a job that ends FAILED or LOST may be resumed from
# its chain's newest checkpoint, each in a new job <first id>-rK (0 or empty:
# never). Honoured with --wait (40-44, the nightly); --retry N overrides it.
MAX_RETRIES = 20

JOBSPEC_FIELDS = {
    "submission_id": OPT_STR,
    "workload": str,
    "shared_root": OPT_STR,
    "code_path": OPT_STR,
    "reward_fn_path": OPT_STR,
    "reward_fn_name": OPT_STR,
    "model": OPT_STR,
    "dataset": dict,
    "ray": dict,
    "resources": dict,
    "trainer_overrides": (dict, type(None)),
    "env_vars": (dict, type(None)),
    "retries": OPT_INT,
    # A verl command line (cmdline.py): a list of words or one string.
    "entrypoint": (list, str, type(None)),
}
# As verl's data.train_files / data.val_files: one parquet or a list of them.
DATASET_FIELDS = {"train": (str, list), "val": (str, list, type(None))}
RAY_FIELDS = {"address": OPT_STR}
RESOURCE_FIELDS = {"entrypoint_resources": dict, "entrypoint_num_cpus": NUMBER, "entrypoint_num_gpus": NUMBER}
RAY_CONFIG_FIELDS = {"address": OPT_STR, "entrypoint_resources": dict, "entrypoint_num_cpus": NUMBER,
                     "entrypoint_num_gpus": NUMBER, "runtime_env": dict}
RUNTIME_ENV_FIELDS = {"env_vars": (dict, type(None))}


def _type_name(kinds) -> str:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    names = {str: "a string", dict: "a mapping", int: "a number", float: "a number", list: "a list",
             type(None): "empty"}
    if kinds == OPT_INT:
        return "a whole number or empty"
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def check_fields(data: Any, fields: dict, where: str) -> dict:
    """Unknown keys (typos) and wrong types, each as one line naming the field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise MvpError(f"{where}: must be a mapping of the fields {', '.join(fields)}")
    for key, value in data.items():
        if key not in fields:
            import difflib
            close = difflib.get_close_matches(str(key), fields, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f"; known fields: {', '.join(fields)}"
            raise MvpError(f"{where}: unknown field '{key}'{hint}")
        kinds = fields[key]
        if isinstance(value, bool) or not isinstance(value, kinds):
            if not (value is None and _allows_none(kinds)):
                # env_vars may hold secrets: their values are never echoed (cron mails stderr).
                shown = "" if key == "env_vars" else " " + _short(repr(value))
                raise MvpError(f"{where}.{key}: must be {_type_name(kinds)}, got {type(value).__name__}{shown}")
    return data


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _allows_none(kinds) -> bool:
    return isinstance(kinds, tuple) and type(None) in kinds


# A JobSpec or Ray config is a page of settings. The caps refuse, in
# milliseconds, what would otherwise take memory and minutes: a huge file,
# or YAML aliases, whose expansion grows exponentially ("billion laughs").
MAX_INPUT_BYTES = 256 * 1024


def decode_input(data: bytes, name: str) -> str:
    if len(data) > MAX_INPUT_BYTES:
        raise MvpError(f"{name}: {len(data)} bytes is more than the {MAX_INPUT_BYTES} a JobSpec or Ray config may have; "
                       "keep data and code in files on shared storage and name their paths")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MvpError(f"{name}: not UTF-8 text (byte {exc.start}); give a YAML file") from None


def load_yaml(text: str, name: str) -> dict:
    import yaml
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it: 3x faster
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                raise MvpError(f"{name}: line {mark.line + 1} uses a YAML alias (*{event.anchor}); "
                               "write the value out instead (aliases are not accepted)")
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise MvpError(f"{name}:{where} is not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(data, dict):
        raise MvpError(f"{name}: must be a YAML mapping")
    return data


def check_retries(value, where: str) -> None:
    if value is not None and not 0 <= value <= MAX_RETRIES:
        raise MvpError(f"{where}: {value} is not a number of resumptions from 0 to {MAX_RETRIES}; "
                       "a job failing more often than that needs a fix, not another try")


def check_dataset_list(value, where: str) -> None:
    """A list of files: each a non-empty path, and at least one."""
    if not isinstance(value, list):
        return
    if not value:
        raise MvpError(f"{where}: an empty list; give one parquet path or a list of them")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise MvpError(f"{where}[{i}]: must be a parquet path, got {_short(repr(item))}")


def check_resources(res: dict, where: str) -> None:
    for name, amount in (res.get("entrypoint_resources") or {}).items():
        if isinstance(amount, bool) or not isinstance(amount, NUMBER) or amount < 0:
            raise MvpError(f"{where}.entrypoint_resources.{name}: must be a number >= 0, got {amount!r}")
    cpus = res.get("entrypoint_num_cpus")
    if cpus is not None and cpus < 0:
        raise MvpError(f"{where}.entrypoint_num_cpus: must be >= 0, got {cpus!r}")


# Names the runbook (helpers/jobenv/mvp_private_env.py) and Ray's setup hook set.
RESERVED_ENV = (mvp_private_env.REF_VAR, "__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR")


def check_env_vars(env: dict, where: str) -> dict:
    out = {}
    for name, value in (env or {}).items():
        if not isinstance(name, str) or not ENV_NAME.match(name):
            raise MvpError(f"{where}: '{name}' is not a valid environment variable name")
        if name in RESERVED_ENV:
            raise MvpError(f"{where}: {name} is set by the runbook (it says where the job's private variables are); "
                           "use another name")
        if isinstance(value, (dict, list)) or value is None:
            raise MvpError(f"{where}.{name}: must be a string, got {type(value).__name__}")
        out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def override_text(key: str, value: Any, where: str) -> str:
    """The Hydra text of one override's value, after checking its key."""
    if not isinstance(key, str) or not OVERRIDE_KEY.match(key):
        raise MvpError(f"{where}: '{key}' is not a Hydra key (dotted names, optional leading +)")
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, NUMBER) or isinstance(value, str):
        text = str(value)
    else:
        raise MvpError(f"{where}.{key}: write lists and mappings as a Hydra string, e.g. \"['console']\"")
    return text


def parse_override_arg(item: str) -> tuple:
    """--override KEY=VALUE as (key, value text)."""
    key, sep, value = item.partition("=")
    if not sep:
        raise MvpError(f"--override '{item}': expected key=value")
    return key, override_text(key, value, "--override")


def parse_jobspec(text: str, name: str, command: list = None) -> dict:
    """command: the words after 43's `--`, which stand for the JobSpec's
    `entrypoint:` (with a command line, the JobSpec itself may be empty)."""
    spec = check_fields(load_yaml(text, name) if text.strip() or not command else {}, JOBSPEC_FIELDS, name)
    _entrypoint(spec, name, command)
    if spec.get("submission_id"):
        check_id(spec["submission_id"], f"{name}.submission_id")
    check_retries(spec.get("retries"), f"{name}.retries")
    check_fields(spec.get("dataset"), DATASET_FIELDS, f"{name}.dataset")
    # With a command line, its data.train_files and model path may take their place.
    if not (spec.get("dataset") or {}).get("train") and not spec.get("entrypoint"):
        raise MvpError(f"{name}.dataset.train: required (the training parquet on shared storage)")
    for part in ("train", "val"):
        check_dataset_list((spec.get("dataset") or {}).get(part), f"{name}.dataset.{part}")
    if not spec.get("model") and not spec.get("entrypoint"):
        raise MvpError(f"{name}.model: required (the model directory on shared storage)")
    check_fields(spec.get("ray"), RAY_FIELDS, f"{name}.ray")
    check_fields(spec.get("resources"), RESOURCE_FIELDS, f"{name}.resources")
    check_resources(spec.get("resources") or {}, f"{name}.resources")
    spec["env_vars"] = check_env_vars(spec.get("env_vars"), f"{name}.env_vars")
    spec["trainer_overrides"] = {key: override_text(key, value, f"{name}.trainer_overrides")
                                 for key, value in (spec.get("trainer_overrides") or {}).items()}
    return spec


def _entrypoint(spec: dict, name: str, command: list) -> None:
    """The workload: the JobSpec's, or the one its verl command line runs
    (whose words land in spec["entrypoint"], checked and split)."""
    if command and spec.get("entrypoint") is not None:
        raise MvpError(f"{name}.entrypoint: the JobSpec has a command line and so does the line after --; "
                       "give it once")
    if command:
        spec["entrypoint"] = list(command)
    workload = spec.get("workload")
    if spec.get("entrypoint") is None:
        if workload not in workloads.NAMES:
            raise MvpError(f"{name}.workload: '{workload}' is not a workload; use one of {', '.join(workloads.NAMES)}")
        return
    where = f"{name}.entrypoint" if not command else "the command line after --"
    spec["entrypoint"] = cmdline.words(spec["entrypoint"], where)
    runs = cmdline.workload_of(cmdline.parse(spec["entrypoint"], where))
    if workload is not None and workload != runs:
        raise MvpError(f"{name}.workload: '{workload}', but its command line runs {runs}; drop workload "
                       "(the command line says which)")
    spec["workload"] = runs


def parse_ray_config(text: str, name: str) -> dict:
    cfg = check_fields(load_yaml(text, name), RAY_CONFIG_FIELDS, name)
    check_resources(cfg, name)
    runtime_env = check_fields(cfg.get("runtime_env"), RUNTIME_ENV_FIELDS, f"{name}.runtime_env")
    runtime_env["env_vars"] = check_env_vars(runtime_env.get("env_vars"), f"{name}.runtime_env.env_vars")
    cfg["runtime_env"] = runtime_env
    return cfg
