"""Secrets reach the job but no file or log line: an env var whose name holds
TOKEN, SECRET, PASSWORD or KEY has its value replaced by ***."""
import json
import re
from typing import Any, Iterable

# The one owner of the secret-name rule: config.sh reads this line as it is
# (mvp::config::secret_name_rule), so keep it one line of this form.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|KEY", re.IGNORECASE)
MASK = "***"


def is_secret(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def secret_values(env_vars: dict) -> list:
    return sorted({str(v) for k, v in (env_vars or {}).items() if is_secret(k) and str(v)}, key=len, reverse=True)


def env(env_vars: dict) -> dict:
    return {k: (MASK if is_secret(k) else v) for k, v in env_vars.items()}


def env_vars_masked(data: Any) -> Any:
    """A copy of what the dashboard returned with the value of every
    env_vars entry, anywhere in it, masked: Ray's job list holds every job's
    runtime_env, secrets of other jobs included."""
    if isinstance(data, dict):
        return {k: ({n: MASK for n in v} if k == "env_vars" and isinstance(v, dict) else env_vars_masked(v))
                for k, v in data.items()}
    if isinstance(data, list):
        return [env_vars_masked(v) for v in data]
    return data


class Redactor:
    """Replaces known secret values wherever they appear, in text or in JSON."""

    def __init__(self, values: Iterable[str] = ()):
        self.values = [v for v in values if v]

    @classmethod
    def for_job(cls, job: dict) -> "Redactor":
        return cls(secret_values(((job or {}).get("runtime_env") or {}).get("env_vars") or {}))

    def text(self, text: str) -> str:
        for v in self.values:
            text = text.replace(v, MASK)
        return text

    def obj(self, data: Any) -> Any:
        if not self.values:
            return data
        raw = json.dumps(data)
        for v in self.values:
            raw = raw.replace(json.dumps(v)[1:-1], MASK)
        return json.loads(raw)
