"""Plain HTTP to the Ray dashboard: a few milliseconds a call, where a Ray CLI
call costs a second of Python start-up. Only stable endpoints are used."""
import json
import os
import urllib.error
import urllib.request
from typing import Any, Optional

from .errors import MvpError

TERMINAL = ("STOPPED", "SUCCEEDED", "FAILED")


class Dashboard:
    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _request(self, method: str, path: str, body: Optional[dict] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        token = os.environ.get("RAY_AUTH_TOKEN")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        try:
            return self._request("GET", path)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise MvpError(f"the Ray dashboard at {self.url} does not answer {path} ({_reason(exc)}); "
                           "is the cluster up? (scripts/50_status.sh)") from exc

    def alive(self) -> bool:
        try:
            self._request("GET", "/api/version")
            return True
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def version(self) -> dict:
        return self.get("/api/version")

    def nodes(self) -> list:
        return self.get("/api/v0/nodes?limit=1000&detail=true")["data"]["result"]["result"]

    def actors(self) -> list:
        return self.get("/api/v0/actors?limit=1000")["data"]["result"]["result"]

    def cluster_status(self) -> Any:
        return self.get("/api/cluster_status")

    def jobs(self) -> list:
        return self.get("/api/jobs/")

    def job(self, submission_id: str) -> Optional[dict]:
        """The job's details, or None when Ray does not know the id."""
        try:
            return self._request("GET", f"/api/jobs/{submission_id}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise MvpError(f"the Ray dashboard answered {exc.code} for job {submission_id}") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise MvpError(f"the Ray dashboard at {self.url} does not answer ({_reason(exc)}); "
                           "is the cluster up? (scripts/50_status.sh)") from exc

    def job_logs(self, submission_id: str) -> str:
        return self.get(f"/api/jobs/{submission_id}/logs").get("logs", "")

    def stop_job(self, submission_id: str) -> bool:
        try:
            return bool(self._request("POST", f"/api/jobs/{submission_id}/stop").get("stopped"))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise MvpError(f"could not stop job {submission_id}: {_reason(exc)}") from exc


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "reason", exc))
