"""A webhook receiver for the notification tests: a real HTTP server on
127.0.0.1 (an ephemeral port, written to PORT_FILE) that answers the first
FAIL_FIRST POSTs with HTTP 500 and records every POST's path and body as one
JSON line in RECORD. Usage: webhook_receiver.py PORT_FILE RECORD FAIL_FIRST"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

port_file, record, fail_first = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = 0


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        global seen
        seen += 1
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        with open(record, "a", encoding="utf-8") as f:
            f.write(json.dumps({"n": seen, "path": self.path, "type": self.headers.get("Content-Type"),
                                "status": 500 if seen <= fail_first else 200, "body": body}) + "\n")
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
