"""Plain HTTP to the Ray dashboard: a few milliseconds a call, where a Ray CLI
call costs a second of Python start-up. Only stable endpoints are used.

Requests are HTTP/1.0 over a socket: the response ends when the server
closes, so there is no chunked encoding to undo. urllib would cost 17 ms of
imports (email, ssl) on every submission, which is benchmarked against the
bare `ray job submit`."""
import json
import os
import socket
import time
from typing import Any, Optional
from urllib.parse import urlsplit

from ..worker.errors import MvpError

TERMINAL = ("STOPPED", "SUCCEEDED", "FAILED")
# ray_unanswered: how often the GCS health check is asked before a real call decides.
GCS_HEALTH_TRIES = 3
GCS_HEALTH_PAUSE_S = 0.5


class HTTPError(Exception):
    def __init__(self, code: int, body: bytes):
        super().__init__(f"HTTP {code}")
        self.code = code
        self.body = body


def http(method: str, url: str, body: Optional[bytes], timeout: float, headers: dict) -> bytes:
    parts = urlsplit(url)
    if parts.scheme != "http":
        raise OSError(f"only http:// dashboard addresses are supported, not {parts.scheme}://")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"{method} {path} HTTP/1.0", f"Host: {parts.netloc}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")
    with socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    raw = b"".join(chunks)
    head, sep, payload = raw.partition(b"\r\n\r\n")
    try:
        code = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise OSError(f"not an HTTP response from {parts.netloc}") from None
    if not sep:
        raise OSError(f"truncated HTTP response from {parts.netloc}")
    if code >= 400:
        raise HTTPError(code, payload)
    return payload


class Dashboard:
    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._token: Optional[str] = None

    def token(self) -> str:
        """Ray's token, as Ray itself finds it: RAY_AUTH_TOKEN, else the file
        RAY_AUTH_TOKEN_PATH names (the runbook's way: no value in any argv)."""
        if self._token is None:
            self._token = os.environ.get("RAY_AUTH_TOKEN", "")
            path = os.environ.get("RAY_AUTH_TOKEN_PATH")
            if not self._token and path and os.environ.get("RAY_AUTH_MODE") == "token":
                try:
                    with open(path, encoding="utf-8") as f:
                        self._token = f.read().strip()
                except OSError as exc:
                    raise MvpError(f"cannot read the Ray auth token {path} ({exc.strerror}); "
                                   "scripts/20_start_head.sh creates it, or set MVP_RAY_AUTH=off") from None
        return self._token

    def _request(self, method: str, path: str, body: Optional[dict] = None) -> Any:
        headers = {"Content-Type": "application/json"}
        token = self.token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        if method == "POST" and data is None:
            data = b""
        raw = http(method, self.url + path, data, self.timeout, headers)
        return json.loads(raw) if raw.strip() else None

    def get(self, path: str) -> Any:
        try:
            return self._request("GET", path)
        except (HTTPError, OSError, ValueError) as exc:
            raise MvpError(f"the Ray dashboard at {self.url} does not answer {path} ({_reason(exc)}); "
                           "is the cluster up? (scripts/50_status.sh)") from exc

    def alive(self) -> bool:
        try:
            self._request("GET", "/api/version")
            return True
        except (HTTPError, OSError, ValueError):
            return False

    def ray_unanswered(self) -> str:
        """"" when Ray answers behind the dashboard, else why not: the
        dashboard outlives its GCS (killed, OOM) for a while and still
        answers /api/version, while every call that needs the GCS hangs
        until its timeout. /api/gcs_healthz asks the GCS with a 0.1 s limit,
        which a loaded GCS can miss: it is asked again, and only when it never
        answers does a real call (the job list, within the timeout) decide."""
        try:
            self._request("GET", "/api/version")
        except (HTTPError, OSError, ValueError) as exc:
            return f"the Ray dashboard at {self.url} does not answer ({_reason(exc)})"
        why = ""
        for attempt in range(GCS_HEALTH_TRIES):
            why = self._gcs_unhealthy()
            if not why:
                return ""
            if attempt + 1 < GCS_HEALTH_TRIES:
                time.sleep(GCS_HEALTH_PAUSE_S)
        try:
            self._request("GET", "/api/jobs/")
            return ""
        except (HTTPError, OSError, ValueError) as exc:
            return f"the Ray dashboard at {self.url} answers, but Ray's GCS behind it does not ({why}; {_reason(exc)})"

    def _gcs_unhealthy(self) -> str:
        try:
            self._request("GET", "/api/gcs_healthz")
        except HTTPError as exc:
            # A Ray without the endpoint: the dashboard's answer must do.
            return "" if exc.code == 404 else f"its GCS health check: HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            return f"its GCS health check: {_reason(exc)}"
        return ""

    def nodes(self) -> list:
        return self.get("/api/v0/nodes?limit=1000&detail=true")["data"]["result"]["result"]

    def actors(self) -> list:
        return self.get("/api/v0/actors?limit=1000")["data"]["result"]["result"]

    def failed_tasks(self, job_id: str, limit: int = 100) -> list:
        """The job's tasks and actor calls that raised, with Ray's record of
        the error (type, message with the traceback's end, node, process)."""
        query = (f"limit={limit}&detail=true&filter_keys=job_id&filter_predicates=%3D&filter_values={job_id}"
                 "&filter_keys=state&filter_predicates=%3D&filter_values=FAILED")
        keep = ("name", "error_type", "error_message", "node_id", "worker_pid", "actor_id", "start_time_ms")
        return [{k: t.get(k) for k in keep} for t in self.get(f"/api/v0/tasks?{query}")["data"]["result"]["result"]]

    def cluster_status(self) -> Any:
        return self.get("/api/cluster_status")

    def jobs(self) -> list:
        return self.get("/api/jobs/")

    def job(self, submission_id: str) -> Optional[dict]:
        """The job's details, or None when Ray does not know the id."""
        try:
            return self._request("GET", f"/api/jobs/{submission_id}")
        except HTTPError as exc:
            if exc.code == 404:
                return None
            raise MvpError(f"the Ray dashboard answered {exc.code} for job {submission_id}") from exc
        except (HTTPError, OSError, ValueError) as exc:
            raise MvpError(f"the Ray dashboard at {self.url} does not answer ({_reason(exc)}); "
                           "is the cluster up? (scripts/50_status.sh)") from exc

    def job_logs(self, submission_id: str) -> str:
        return self.get(f"/api/jobs/{submission_id}/logs").get("logs", "")

    def stop_job(self, submission_id: str) -> bool:
        try:
            return bool(self._request("POST", f"/api/jobs/{submission_id}/stop").get("stopped"))
        except (HTTPError, OSError, ValueError) as exc:
            raise MvpError(f"could not stop job {submission_id}: {_reason(exc)}") from exc


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "reason", exc))
