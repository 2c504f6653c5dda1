"""A fake Ray dashboard for unit tests of the compose runtime, where no Ray
runs: serves /api/version, /api/v0/nodes (from nodes.json, re-read on every
request so the docker stub can re-register nodes), an empty /api/jobs/ and
/api/jobs/ID from jobs/ID.json (404 without one, as Ray answers an unknown
id), a version from ray_version ("fake" without one), /api/jobs/ID/logs from jobs/ID.log (HTTP 500 as many times first as
jobs/ID.log.fails says: a job agent that missed its time). Each request's path is appended to requests.log: what a command asks.
Usage: python3 fake_dashboard.py STATE_DIR PORT_FILE"""
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

state = Path(sys.argv[1])


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?")[0]
        with open(state / "requests.log", "a", encoding="utf-8") as log:
            log.write(f"GET {path}\n")
        job = state / "jobs" / (path[len("/api/jobs/"):] + ".json")
        if path.startswith("/api/jobs/") and path.endswith("/logs"):
            self._logs(state / "jobs" / (path[len("/api/jobs/"):-len("/logs")] + ".log"))
            return
        if path == "/api/version":
            body = {"ray_version": (state / "ray_version").read_text().strip() if (state / "ray_version").is_file() else "fake",
                    "version": "4"}
        elif path == "/api/v0/nodes":
            body = {"data": {"result": {"result": json.loads((state / "nodes.json").read_text())}}}
        elif path == "/api/jobs/":
            body = []
        elif path.startswith("/api/jobs/") and job.is_file():
            body = json.loads(job.read_text())
        else:
            self.send_error(404)
            return
        self._send(body)

    def _logs(self, log: Path):
        fails = log.with_name(log.name + ".fails")
        left = int(fails.read_text()) if fails.is_file() else 0
        if left:
            fails.write_text(str(left - 1))
            self.send_error(500)
        elif log.is_file():
            self._send({"logs": log.read_text()})
        else:
            self.send_error(404)

    def _send(self, body):
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
Path(sys.argv[2]).write_text(str(server.server_address[1]))
server.serve_forever()
