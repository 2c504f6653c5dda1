"""A verl command line as a job: `python3 -m MODULE [--config-name NAME]
KEY=VALUE...`, the words verl's docs and examples give, after 43's `--` or in
a JobSpec's `entrypoint:` (a list of words, or one string split as a POSIX
shell splits words, with nothing expanded or run).

Hydra's command line (hydra/_internal/utils.py, get_args_parser): overrides
are positional words `KEY=VALUE`, `+KEY=VALUE` (add), `++KEY=VALUE` (add or
set), `~KEY[=VALUE]` (delete); `--config-name/-cn NAME` and `--config-path/-cp
DIR` (relative to the module's file) choose the config. Its other flags
(--multirun, --cfg, --help, ...) do something else than train and are refused.

The runbook keeps what makes a job one of its jobs: where it writes and the
cluster's shape (RUNBOOK_KEYS); a command line that sets one is refused with
the setting to use instead."""
import re
import shlex

from . import workloads
from ...worker.errors import MvpError

PYTHON = re.compile(r"(?:.*/)?python(?:3(?:\.[0-9]+)?)?\Z")
MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
# Hydra's override key: a dotted name, a config group path or a package (@).
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./@-]*\Z")
OVERRIDE = re.compile(r"(\+\+|\+|~)?([^=]*)(?:=(.*))?\Z", re.DOTALL)
CONFIG_FLAGS = {"--config-name": "config_name", "-cn": "config_name",
                "--config-path": "config_path", "-cp": "config_path"}
_JOB_DIR = "the job directory (<SHARED_ROOT>/jobs/<submission id>/: choose it with --shared-root and the JobSpec's submission_id)"
RUNBOOK_KEYS = {
    "trainer.default_local_dir": f"checkpoints go to checkpoints/ in {_JOB_DIR}; to start from another job's "
                                 "checkpoint use --resume-from ID[/global_step_N]",
    "hydra.run.dir": f"Hydra writes to hydra/ in {_JOB_DIR}",
    "trainer.nnodes": "it is the cluster's number of workers: set MVP_WORKERS",
    "trainer.n_gpus_per_node": "it is each worker's GPUs: set MVP_GPUS_PER_WORKER",
}
USAGE = "python3 -m MODULE [--config-name NAME] KEY=VALUE..."


class Command:
    """A parsed command line: the module, Hydra's config choice and the
    overrides in order, each (KEY with its prefix, VALUE or None for ~KEY)."""

    def __init__(self, module: str, config_name: str, config_path: str, overrides: list):
        self.module, self.config_name, self.config_path = module, config_name, config_path
        self.overrides = overrides

    def hydra_args(self) -> list:
        """The config choice as the trainer's own arguments."""
        out = ["--config-name", self.config_name] if self.config_name else []
        return out + (["--config-path", self.config_path] if self.config_path else [])

    def value(self, bare_key: str):
        """The last value the line gives bare_key (with any prefix), unquoted; None if unset."""
        found = None
        for key, value in self.overrides:
            if key.lstrip("+~") == bare_key:
                found = None if value is None else value.strip("'\"")
        return found


def words(entrypoint, where: str) -> list:
    """A JobSpec's `entrypoint:` (or 43's words) as a list of words."""
    if isinstance(entrypoint, list):
        if not all(isinstance(w, str) for w in entrypoint):
            raise MvpError(f"{where}: every word must be a string; write the command line as in verl's docs: {USAGE}")
        return entrypoint
    # A shell's line continuation (backslash-newline) is no character; comments are none either.
    text = re.sub(r"\\\r?\n", "", entrypoint)
    try:
        return shlex.split(text, comments=True, posix=True)
    except ValueError as exc:
        raise MvpError(f"{where}: cannot split it into words as a shell would ({exc}); close the quote") from None


def parse(given, where: str) -> Command:
    """The command line, checked: python -m MODULE, then the config choice and overrides."""
    argv = words(given, where)
    if len(argv) < 3 or not PYTHON.match(argv[0]) or argv[1] != "-m":
        head = shlex.join(argv[:3]) or "(empty)"
        raise MvpError(f"{where}: '{head}' does not start a verl command line; write {USAGE} "
                       "(environment variables go in the JobSpec's env_vars)")
    if not MODULE.match(argv[2]):
        raise MvpError(f"{where}: '{argv[2]}' is not a Python module name (dotted, as verl.trainer.main_ppo)")
    config = {"config_name": "", "config_path": ""}
    overrides = []
    rest = iter(argv[3:])
    for word in rest:
        flag, eq, inline = word.partition("=")
        if flag in CONFIG_FLAGS:
            value = inline if eq else next(rest, "")
            if not value:
                raise MvpError(f"{where}: {flag} needs a value, e.g. {flag} ppo_trainer")
            config[CONFIG_FLAGS[flag]] = value
        elif word.startswith("-"):  # no override starts so
            raise MvpError(f"{where}: '{word}' is a flag the runbook does not pass on to Hydra; give "
                           "--config-name NAME and KEY=VALUE overrides only")
        else:
            overrides.append(_override(word, where))
    return Command(argv[2], config["config_name"], config["config_path"], overrides)


def _override(word: str, where: str) -> tuple:
    prefix, key, value = OVERRIDE.match(word).groups()
    if not KEY.match(key) or (value is None and prefix != "~"):
        raise MvpError(f"{where}: '{word}' is not a Hydra override; write KEY=VALUE (or +KEY=VALUE, ~KEY)")
    if key in RUNBOOK_KEYS:
        raise MvpError(f"{where}: {key} is the runbook's to set: {RUNBOOK_KEYS[key]}; drop it from the command line")
    return (prefix or "") + key, value


def workload_of(command: Command) -> str:
    """The workload the command line runs: the table's workload whose module
    it is and whose selecting overrides it gives (main_ppo with
    algorithm.adv_estimator=grpo: grpo), else that module's plain workload
    (main_ppo: ppo); any other module is `custom`."""
    plain = ""
    for name, w in workloads.WORKLOADS.items():
        if w.trainer_module != command.module:
            continue
        if not w.selected_by:
            plain = plain or name
        elif all(command.value(k) == v for k, v in w.selected_by.items()):
            return name
    return plain or workloads.CUSTOM
