"""A ledger stand-in for running the a2a-python test peer on its own (tests/conformance/).

tests/peers/a2a-python/server.py reports every business effect (``POST /effect``) and every
task save (``POST /save``) to the a2a-chaos ledger host, and needs an answer to go on. For
conformance runs nothing reads those reports, so this stub answers both with ``200 {}``
(any other path: 404). It also counts what it received, so a run can show that the agent's
turns really reached their effect step: ``GET /counts`` answers ``{"effect": N, "save": M}``.

Loopback only. It prints ``ledger on http://127.0.0.1:PORT/`` as its first line (port 0
picks a free one) and serves until SIGTERM or SIGINT.

Usage: python3 ledger_stub.py [--port 0]
"""

import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COUNTS = {"effect": 0, "save": 0}
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    """Answers POST /effect and POST /save with 200 {}; GET /counts with the tallies."""

    protocol_version = "HTTP/1.1"

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        kind = self.path.strip("/")
        if kind in COUNTS:
            with LOCK:
                COUNTS[kind] += 1
            self._answer(200, {})
        else:
            self._answer(404, {"error": f"no such ledger path {self.path}"})

    def do_GET(self):  # noqa: N802
        if self.path == "/counts":
            with LOCK:
                self._answer(200, dict(COUNTS))
        else:
            self._answer(404, {"error": f"no such ledger path {self.path}"})

    def log_message(self, *args):  # quiet: the peer posts twice per save
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"ledger on http://127.0.0.1:{server.server_address[1]}/", flush=True)

    def stop(*_):
        # shutdown() must not run on the serving thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()
    server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
