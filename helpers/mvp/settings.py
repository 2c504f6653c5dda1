"""The runbook's settings as the helper receives them: the bash side
(scripts/lib/helper.sh, mvp::helper_env) passes every one as a variable, with
its defaults already applied from config/defaults.env. The helper keeps no
defaults of its own: a missing setting is an error that names it."""
import os
from pathlib import Path

from .errors import MvpError
from .layout import Layout


def _words(value: str) -> tuple:
    return tuple(value.split())


def _flag(value: str) -> bool:
    return value == "1"


def _pairs(value: str) -> dict:
    return dict(word.split("=", 1) for word in value.split())


# attribute: (variable, conversion). Read lazily, one variable per attribute:
# a command needs only the settings it reads.
FIELDS = {
    "shared_root": ("SHARED_ROOT", Path),
    "runtime": ("MVP_RUNTIME", str),
    "cluster_name": ("MVP_CLUSTER_NAME", str),
    "dashboard_url": ("MVP_DASHBOARD_URL", lambda v: v.rstrip("/")),
    "head_ip": ("MVP_HEAD_IP", str),
    "head_node": ("MVP_HEAD_NODE", str),
    "gcs_port": ("MVP_GCS_PORT", int),
    "worker_ips": ("MVP_WORKER_IPS", _words),
    "workers": ("MVP_WORKERS", int),
    "gpus_per_worker": ("MVP_GPUS_PER_WORKER", int),
    "job_timeout": ("MVP_JOB_TIMEOUT", float),
    "nodes_timeout": ("MVP_NODES_TIMEOUT", float),
    "lost_after": ("MVP_LOST_AFTER_S", float),
    "log_sync_s": ("MVP_LOG_SYNC_SECONDS", float),
    "admission_claim_s": ("MVP_ADMISSION_CLAIM_S", float),
    "min_free_mb": ("MVP_MIN_FREE_MB", int),
    "node_ray_dirs": ("MVP_NODE_RAY_DIRS", _pairs),
    "code_id": ("CODE_ID", str),
    "verl_src": ("MVP_VERL_SRC", Path),
    "gsm8k_source": ("MVP_GSM8K_SOURCE", str),
    "model_id": ("MVP_MODEL_ID", str),
    "model_source": ("MVP_MODEL_SOURCE", str),
    "skip_model": ("MVP_SKIP_MODEL", _flag),
    "nightly_keep": ("MVP_NIGHTLY_KEEP", int),
    "nightly_history": ("MVP_NIGHTLY_HISTORY", int),
    "nightly_min_history": ("MVP_NIGHTLY_MIN_HISTORY", int),
    "nightly_tolerance": ("MVP_NIGHTLY_TOLERANCE", _pairs),
    "nightly_history_since": ("MVP_NIGHTLY_HISTORY_SINCE", str),
    "nightly_notify_on": ("MVP_NIGHTLY_NOTIFY_ON", str),
    "nightly_mail_to": ("MVP_NIGHTLY_MAIL_TO", _words),
    "nightly_sendmail": ("MVP_NIGHTLY_SENDMAIL", str),
    "nightly_webhook_url_file": ("MVP_NIGHTLY_WEBHOOK_URL_FILE", str),
    "nightly_notify_tries": ("MVP_NIGHTLY_NOTIFY_TRIES", int),
    "nightly_notify_pause_s": ("MVP_NIGHTLY_NOTIFY_PAUSE_S", float),
    "dry_run": ("MVP_DRY_RUN", _flag),
    "job_env_names": ("MVP_JOB_ENV_NAMES", _words),
    "trainer_profile": ("MVP_TRAINER_PROFILE", str),
}


class Settings:
    """settings.NAME for each NAME of FIELDS, plus the layout of the shared
    root. (A plain class: dataclasses' imports cost 8 ms on the submit path,
    which is benchmarked against the bare Ray CLI.)"""

    def __getattr__(self, name: str):
        try:
            variable, convert = FIELDS[name]
        except KeyError:
            raise AttributeError(name) from None
        try:
            value = os.environ[variable]
        except KeyError:
            raise MvpError(f"setting {variable} was not passed to the helper; run it through the scripts "
                           "(scripts/lib/helper.sh passes every setting)") from None
        try:
            return convert(value)
        except ValueError:
            raise MvpError(f"{variable}='{value}' is not valid here; fix it in your config") from None

    @property
    def layout(self) -> Layout:
        return Layout(self.shared_root)

    @property
    def jobs_dir(self) -> Path:
        return self.layout.jobs

    @property
    def job_env(self) -> dict:
        """The config's variables every job's runtime_env gets (NCCL_*, GLOO_*...)."""
        return {name: os.environ.get(name, "") for name in self.job_env_names}


def load() -> Settings:
    return Settings()
