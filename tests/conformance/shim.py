"""A loopback proxy that lets generic A2A clients (the TCK) drive the scripted agents.

The scripted agents of ``a2a-chaos serve`` and of tests/peers/a2a-python/server.py read
their turn from a data part ``{conversation, turn, turns}``; a client that sends text only
(the a2a-tck suite, most real users) gets ``-32602`` from serve and a failed task from the
SDK peer. This proxy sits in front of either and, on every ``SendMessage`` /
``SendStreamingMessage`` (and 0.3 ``message/send`` / ``message/stream``):

- adds the data part when the message has none. Turn 1 for a message without ``taskId``;
  for a message on a task, one more than the last turn the proxy sent for that task. The
  TCK steers its SUT with messageId prefixes: ``tck-input-required...`` asks for a task left
  input-required, so that turn gets ``turns = turn + 1``; any other message completes the
  task (``turns = turn``);
- with ``--int-data``, rewrites whole-number floats in an existing data part's ``turn`` and
  ``turns`` to integers (the Python SDK client sends ``1.0``, which serve refuses);
- with ``--token T``, adds ``Authorization: Bearer T`` to requests that carry none (the TCK
  sends no credential, serve wants one).

The agent card is fetched from upstream and its interface URLs are rewritten to the proxy,
so a client that follows the card keeps talking through it. Every other request and every
answer (JSON or an SSE stream, chunk by chunk) passes through unchanged. Each answer is
closed after it is sent (HTTP/1.0 style), which every client handles.

It prints ``shim on http://127.0.0.1:PORT/ -> UPSTREAM`` as its first line and serves until
SIGTERM or SIGINT. Loopback only: it refuses an upstream that is not on 127.0.0.0/8 or
localhost. Upstream calls time out after 60 s.

Usage: python3 shim.py UPSTREAM_URL [--port 0] [--token T] [--int-data] [--log FILE]
"""

import argparse
import http.client
import json
import signal
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SEND_METHODS = {"SendMessage", "SendStreamingMessage", "message/send", "message/stream"}
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "upgrade"}
UPSTREAM_TIMEOUT_S = 60


class State:
    """What the proxy remembers: the last turn it sent per task id."""

    def __init__(self, args):
        self.args = args
        self.turns = {}
        self.lock = threading.Lock()
        self.log = open(args.log, "a") if args.log else None

    def note(self, text):
        if self.log:
            self.log.write(text + "\n")
            self.log.flush()


def has_turn_data(message):
    for part in message.get("parts") or []:
        data = part.get("data") if isinstance(part, dict) else None
        if isinstance(data, dict) and {"conversation", "turn", "turns"} <= data.keys():
            return data
        # 0.3 shape: {"kind": "data", "data": {...}} is the same key.
    return None


def rewrite_message(state, message):
    """Adds or normalises the data part of one message, in place. Returns a log line."""
    data = has_turn_data(message)
    if data is not None:
        if state.args.int_data:
            for key in ("turn", "turns"):
                value = data.get(key)
                if isinstance(value, float) and value.is_integer():
                    data[key] = int(value)
        return None
    task_id = message.get("taskId") or message.get("task_id")
    message_id = str(message.get("messageId") or message.get("message_id") or "")
    with state.lock:
        turn = state.turns.get(task_id, 1) + 1 if task_id else 1
        if task_id:
            state.turns[task_id] = turn
    turns = turn + 1 if "input-required" in message_id else turn
    conversation = message.get("contextId") or task_id or message_id or "shim"
    part = {"data": {"conversation": conversation, "turn": turn, "turns": turns}}
    if message.get("kind") == "message":  # a 0.3 message: parts carry a kind
        part["kind"] = "data"
    message.setdefault("parts", []).append(part)
    return f"added data part turn {turn} of {turns} to {message_id} (task {task_id})"


def rewrite_body(state, raw):
    """The request body with its message rewritten, or the body unchanged."""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(body, dict) or body.get("method") not in SEND_METHODS:
        return raw
    message = (body.get("params") or {}).get("message")
    if not isinstance(message, dict):
        return raw
    line = rewrite_message(state, message)
    if line:
        state.note(line)
    return json.dumps(body).encode()


def make_handler(state, upstream, public_base):
    up = urllib.parse.urlsplit(upstream)
    up_origin = f"{up.scheme}://{up.netloc}"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one answer per connection, closed at its end

        def _forward(self, method, body):
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
            if state.args.token and not any(k.lower() == "authorization" for k in headers):
                headers["Authorization"] = f"Bearer {state.args.token}"
            if body is not None:
                headers["Content-Length"] = str(len(body))
            conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=UPSTREAM_TIMEOUT_S)
            try:
                conn.request(method, self.path, body=body, headers=headers)
                response = conn.getresponse()
            except OSError as exc:
                conn.close()
                self.send_error(502, f"upstream: {exc}")
                return
            try:
                is_card = method == "GET" and self.path.startswith("/.well-known/")
                if is_card:
                    data = response.read().replace(up_origin.encode(), public_base.encode())
                    self.send_response(response.status)
                    for k, v in response.getheaders():
                        if k.lower() not in HOP_BY_HOP:
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(response.status)
                for k, v in response.getheaders():
                    if k.lower() not in HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Connection", "close")
                self.end_headers()
                while True:
                    chunk = response.read1(65536)
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except OSError:
                pass  # the client or upstream went away: nothing to tell anyone
            finally:
                conn.close()

        def do_GET(self):  # noqa: N802
            self._forward("GET", None)

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            self._forward("POST", rewrite_body(state, raw))

        def log_message(self, fmt, *args):
            state.note(fmt % args)

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("upstream", help="http://127.0.0.1:PORT of the A2A server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token", help="Bearer credential to add to requests without one")
    parser.add_argument("--int-data", action="store_true", help="turn 1.0 into 1 in data parts")
    parser.add_argument("--log", help="append what the proxy did to this file")
    args = parser.parse_args()
    host = urllib.parse.urlsplit(args.upstream).hostname or ""
    if not (host == "localhost" or host.startswith("127.")):
        sys.exit(f"shim: upstream {args.upstream} is not on loopback")
    state = State(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), None)
    public = f"http://127.0.0.1:{server.server_address[1]}"
    server.RequestHandlerClass = make_handler(state, args.upstream.rstrip("/"), public)
    server.daemon_threads = True
    print(f"shim on {public}/ -> {args.upstream}", flush=True)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()
    server.server_close()


if __name__ == "__main__":
    main()
