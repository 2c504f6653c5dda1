"""A webhook receiver for the notification tests: a real HTTP server on
127.0.0.1 (an ephemeral port, written to PORT_FILE) that answers the first
FAIL_FIRST POSTs with HTTP 500 and records every POST's path and body as one
JSON line in RECORD. With the environment's RECEIVER_WATCH set (the
environment, so that this process's own argv does not hold it), each line
also has "argv_with_watch": the command line of every process of this machine
that holds it while the POST is open (the sender is still waiting then), so
a secret passed on any argv shows.
Usage: webhook_receiver.py PORT_FILE RECORD FAIL_FIRST"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

port_file, record, fail_first = sys.argv[1], sys.argv[2], int(sys.argv[3])
watch = os.environ.get("RECEIVER_WATCH", "").encode()
seen = 0


def argv_with(text: bytes) -> list:
    """The command lines (NULs as spaces) of the processes whose argv holds text."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read()
        except OSError:
            continue
        if text in argv:
            found.append(argv.replace(b"\0", b" ").decode(errors="replace").strip())
    return found


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        global seen
        seen += 1
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        line = {"n": seen, "path": self.path, "type": self.headers.get("Content-Type"),
                "status": 500 if seen <= fail_first else 200, "body": body}
        if watch:
            line["argv_with_watch"] = argv_with(watch)
        with open(record, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        self.send_response(500 if seen <= fail_first else 200)
        self.end_headers()

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
# The rename makes the port file appear whole.
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
