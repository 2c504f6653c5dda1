"""Experiment tracking as verl 0.9.1 does it (verl/utils/tracking.py,
`Tracking`): the backends of `trainer.logger` are the user's, console kept
(the runbook reads verl's console lines: progress, --steps, the nightly);
what each backend writes lands in the job directory, `<job dir>/tracking/`,
unless the job's own environment says otherwise; a W&B run goes on across a
chain of resumptions. Keys (WANDB_API_KEY, ...) are private variables by
their names (redact.is_secret): nothing here touches them."""
import hashlib
import re
from pathlib import Path

from . import ckpt_keep
from ...core import log
from ...worker.jobdir import JobDir
from ...worker.errors import MvpError

KEY = "trainer.logger"
CONSOLE = "console"
# tracking.py:66-69: "tracking" is verl's deprecated name for wandb.
ALIASES = {"tracking": "wandb"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# W&B refuses a run id with any of these (wandb/sdk/wandb_settings.py validate_run_id);
# the runbook's ids ([A-Za-z0-9._-]) have none. Kept short, as W&B's docs ask of ids.
WANDB_ID_MAX = 64


def backends(value) -> list:
    """trainer.logger's override as verl receives it: one name or a list of
    names (tracking.py:63-64 turns a string into a one-item list)."""
    text = str(value).strip()
    items = text[1:-1].split(",") if text.startswith("[") and text.endswith("]") else [text]
    names = []
    for item in (i.strip() for i in items):
        if len(item) >= 2 and item[0] == item[-1] and item[0] in "'\"":
            item = item[1:-1].strip()
        if not _NAME.fullmatch(item):
            raise MvpError(f"{KEY}: '{value}' is not a backend or a list of backends; "
                           f"write {KEY}=['console','wandb'] (verl's names: console, wandb, mlflow, tensorboard, swanlab, ...)")
        names.append(item)
    return names


def supported(code_path: Path) -> list:
    """The snapshot's own `Tracking.supported_backend` (verl 0.9.1:
    verl/utils/tracking.py:49-60), read with ast, never imported; [] when
    the snapshot has no such list (then nothing is refused)."""
    import ast  # only for a job that logs beyond the console: ast costs ms on the submit path
    try:
        tree = ast.parse((code_path / "verl" / "utils" / "tracking.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Tracking":
            for stmt in node.body:
                if (isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "supported_backend" for t in stmt.targets)
                        and isinstance(stmt.value, ast.List)):
                    return [e.value for e in stmt.value.elts if isinstance(e, ast.Constant)]
    return []


def keep_console(overrides: dict, code_path: Path, where: str) -> list:
    """Checks trainer.logger's backends against the snapshot's verl (which
    asserts each is supported, tracking.py:65-71, once the job runs) and
    puts console first when the user's list lacks it. Returns the backends
    ([] when the job's config has no trainer.logger or it is deleted)."""
    key = next((k for k in overrides if k.lstrip("+~") == KEY), None)
    if key is None or overrides[key] is None:
        return []
    names = backends(overrides[key])
    known = supported(code_path) if set(names) - {CONSOLE} else []
    for name in names:
        if known and name not in known and name not in ALIASES:
            raise MvpError(f"{KEY}: '{name}' is not a backend of verl's Tracking in {where} "
                           f"(verl/utils/tracking.py supported_backend: {', '.join(known)}); fix the name")
    if CONSOLE not in names:
        names = [CONSOLE, *names]
        overrides[key] = "[" + ",".join(f"'{n}'" for n in names) + "]"
        log.info(f"{KEY}: console added ({overrides[key]}): the runbook reads verl's console lines "
                 "(progress, 51_logs.sh --steps, the nightly's judge)")
    return [ALIASES.get(n, n) for n in names]


def wandb_run_id(chain_first: str) -> str:
    """The W&B run id of a chain: its first job's id, shortened with a hash
    when longer than W&B wants."""
    if len(chain_first) <= WANDB_ID_MAX:
        return chain_first
    return f"{chain_first[:WANDB_ID_MAX - 9]}-{hashlib.sha256(chain_first.encode()).hexdigest()[:8]}"


def chain_first(jobs: Path, submission_id: str, resumed_from: str) -> str:
    """The first job of the chain this job continues: resumed_from
    ("JOB/global_step_N", from --resume-from or --retry) followed back as
    max_ckpt_to_keep follows it (ckpt_keep.chain_back); the job itself when
    it resumes nothing."""
    before = resumed_from.partition("/")[0]
    return ckpt_keep.chain_back(jobs, before)[-1] if before else submission_id


def job_env(names: list, jd: JobDir, first: str) -> dict:
    """What each backend of `names` gets in the job's environment (the
    caller keeps the user's own values): where verl would otherwise write
    relative to the worker's working directory, or on the node's /tmp."""
    out = jd.tracking
    env = {}
    if "tensorboard" in names:
        # tracking.py:557: TENSORBOARD_DIR, else tensorboard_log/<project>/<experiment> in the cwd.
        env["TENSORBOARD_DIR"] = str(out / "tensorboard")
    if "mlflow" in names:
        # tracking.py:104: MLFLOW_TRACKING_URI, else sqlite:////tmp/mlruns.db on the trainer's node.
        # A file store: plain files on the shared root (sqlite needs full mlflow, and locks NFS
        # poorly); MLflow 3 refuses one unless MLFLOW_ALLOW_FILE_STORE=true.
        env["MLFLOW_TRACKING_URI"] = (out / "mlruns").as_uri()
        env["MLFLOW_ALLOW_FILE_STORE"] = "true"
    if "wandb" in names:
        # tracking.py:85: wandb.init gets no id, dir or resume, so wandb reads
        # WANDB_DIR (else ./wandb), WANDB_RUN_ID and WANDB_RESUME from the environment.
        env.update(WANDB_DIR=str(out), WANDB_RUN_ID=wandb_run_id(first), WANDB_RESUME="allow")
    if "swanlab" in names:
        # tracking.py:137: SWANLAB_LOG_DIR, else swanlog in the cwd (its mode: apply).
        env["SWANLAB_LOG_DIR"] = str(out / "swanlog")
    if "file" in names:
        # tracking.py:534-539: VERL_FILE_LOGGER_PATH, else VERL_FILE_LOGGER_ROOT (else .)/<project>/<experiment>.jsonl.
        env["VERL_FILE_LOGGER_ROOT"] = str(out / "file")
    return env


def apply(overrides: dict, env: dict, jd: JobDir, first: str, code_path: Path, where: str) -> list:
    """trainer.logger checked (console kept) and the backends' variables set
    in `env` where the job did not set them; returns the backends."""
    names = keep_console(overrides, code_path, where)
    ours = job_env(names, jd, first)
    if "MLFLOW_TRACKING_URI" in env:  # the user's server or store: MLflow's file-store switch is theirs too
        ours.pop("MLFLOW_ALLOW_FILE_STORE", None)
    if "swanlab" in names and "SWANLAB_API_KEY" not in env:
        # tracking.py:138-140: SWANLAB_MODE, else "cloud", which with no key (no swanlab.login)
        # fails in swanlab.init; offline writes the run into SWANLAB_LOG_DIR alone (`swanlab sync` uploads it).
        ours["SWANLAB_MODE"] = "offline"
    for name, value in ours.items():
        env.setdefault(name, value)
    _warn_keyless(names, env)
    return names


def _warn_keyless(names: list, env: dict) -> None:
    """One line, not a refusal (a node may be logged in through ~/.netrc):
    wandb online without WANDB_API_KEY fails in wandb.init, minutes into the job."""
    if "wandb" in names and "WANDB_API_KEY" not in env and env.get("WANDB_MODE", "online") not in ("offline", "disabled", "dryrun"):
        log.warn("trainer.logger has wandb, and the job has no WANDB_API_KEY (nor WANDB_MODE=offline): wandb.init "
                 "fails unless its nodes are logged in; give the key in the JobSpec's env_vars (docs/tracking.md)")
