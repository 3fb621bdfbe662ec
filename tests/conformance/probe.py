"""Records exact request/answer pairs from an A2A 1.0 JSON-RPC server, for the reports.

The two client scripts say whether a server passes each step; this says precisely what it
answered. It sends a fixed, ordered list of raw HTTP requests (standard library only) and
prints one JSON document: for each probe its name, the request (method, path, headers, JSON
body; an 8 MB body is shown shortened) and the answer (HTTP status, the headers that matter,
the JSON body or text, and for an SSE answer every event with the milliseconds since the
request was sent and whether the server closed the stream within the probe's window).
Earlier answers feed later probes (task ids), so the order is fixed. Every read has a
timeout, so the probe always ends (about 15 s against a local server).

Usage: python3 probe.py BASE_URL [--token T] [--out FILE]
"""

import argparse
import http.client
import json
import socket
import time
import urllib.parse

TIMEOUT_S = 10.0
KEEP_HEADERS = {"content-type", "content-length", "www-authenticate", "etag", "cache-control",
                "last-modified", "a2a-version", "connection", "transfer-encoding"}


def shrink(value, limit=300):
    """The value with every string longer than `limit` shortened (8 MB echoes stay small)."""
    if isinstance(value, str):
        return value if len(value) <= limit else f"<{len(value)} chars: {value[:60]}...>"
    if isinstance(value, list):
        return [shrink(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: shrink(v, limit) for k, v in value.items()}
    return value


class Prober:
    def __init__(self, base, token):
        url = urllib.parse.urlsplit(base)
        self.host, self.port = url.hostname, url.port or 80
        self.token = token
        self.records = []
        self.n = 0

    def headers(self, version="1.0", auth=True, extra=None):
        h = {"Content-Type": "application/json"}
        if version is not None:
            h["A2A-Version"] = version
        if auth and self.token:
            h["Authorization"] = f"Bearer {self.token}"
        h.update(extra or {})
        return h

    def rpc(self, method, params, **kw):
        self.n += 1
        return {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}

    def call(self, name, body, *, version="1.0", auth=True, raw=None, sse_window_s=None,
             http_method="POST", path="/", extra_headers=None):
        """Sends one request; records and returns the answer's parsed body (or events)."""
        headers = self.headers(version, auth, extra_headers)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        shown = body
        if raw is not None:
            shown = raw.decode(errors="replace") if len(raw) < 2000 else f"<{len(raw)} bytes: {raw[:120].decode(errors='replace')}...>"
        if headers.get("Authorization"):
            shown_headers = {**headers, "Authorization": "Bearer <token>"}
        else:
            shown_headers = headers
        record = {"name": name, "request": {"method": http_method, "path": path, "headers": shown_headers, "body": shown}}
        conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT_S)
        started = time.monotonic()
        try:
            conn.request(http_method, path, body=data, headers=headers if http_method == "POST" else
                         {k: v for k, v in headers.items() if k != "Content-Type"})
            self.sock = conn.sock  # http.client drops conn.sock once the answer owns it
            resp = conn.getresponse()
            answer = {"status": resp.status,
                      "headers": {k.lower(): v for k, v in resp.getheaders() if k.lower() in KEEP_HEADERS}}
            if "text/event-stream" in (resp.getheader("content-type") or ""):
                events, answer["closed"] = self.read_sse(self.sock, resp, started, sse_window_s or 2.0)
                parsed = [e["data"] for e in events]
                answer["events"] = shrink(events)
            else:
                text = resp.read().decode(errors="replace")
                try:
                    parsed = json.loads(text)
                except ValueError:
                    parsed = text
                answer["body"] = shrink(parsed)
            answer["ms"] = int((time.monotonic() - started) * 1000)
        except (OSError, http.client.HTTPException) as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}", "ms": int((time.monotonic() - started) * 1000)}
            parsed = None
        finally:
            conn.close()
        record["answer"] = answer
        self.records.append(record)
        return parsed

    @staticmethod
    def read_sse(sock, resp, started, window_s):
        """Reads SSE events until the server closes the stream or the window ends."""
        events, buf, closed = [], b"", False
        deadline = started + window_s
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = resp.read1(65536)
            except (socket.timeout, TimeoutError):
                break
            if not chunk:
                closed = True
                break
            buf += chunk
            while b"\n\n" in buf or b"\r\n\r\n" in buf:
                sep = b"\r\n\r\n" if b"\r\n\r\n" in buf and (b"\n\n" not in buf or buf.index(b"\r\n\r\n") < buf.index(b"\n\n")) else b"\n\n"
                block, buf = buf.split(sep, 1)
                data = "\n".join(l[5:].strip() for l in block.decode(errors="replace").splitlines() if l.startswith("data:"))
                if not data:
                    continue
                try:
                    data = json.loads(data)
                except ValueError:
                    pass
                events.append({"ms": int((time.monotonic() - started) * 1000), "data": data})
        return events, closed


def message(conv, turn, turns, task=None, ctx=None, data=True, whole=True, mid=None):
    parts = [{"text": f"turn {turn} of {conv}"}]
    if data:
        parts.append({"data": {"conversation": conv, "turn": turn if whole else float(turn),
                               "turns": turns if whole else float(turns)}})
    m = {"messageId": mid or f"probe-{conv}-{turn}", "role": "ROLE_USER", "parts": parts}
    if task:
        m["taskId"] = task
    if ctx:
        m["contextId"] = ctx
    return m


def task_of(answer):
    if isinstance(answer, dict):
        result = answer.get("result")
        if isinstance(result, dict):
            return result.get("task", result if "status" in result else None)
    return None


def run(p):
    # -- discovery and auth ------------------------------------------------------------
    p.call("card", None, http_method="GET", path="/.well-known/agent-card.json", version="1.0", auth=False)
    p.call("no-credential GetTask", p.rpc("GetTask", {"id": "no-such-task"}), auth=False)
    # -- data parts: what the Python SDK client sends (1.0) versus integers ---------------
    p.call("SendMessage data part with doubles (1.0)", p.rpc("SendMessage", {"message": message("pf", 1, 1, whole=False)}))
    first = task_of(p.call("SendMessage turn 1 of 3", p.rpc("SendMessage", {"message": message("p1", 1, 3)})))
    if first:
        tid, cid = first["id"], first["contextId"]
        p.call("SendMessage turn 2 of 3 (same task)", p.rpc("SendMessage", {"message": message("p1", 2, 3, tid, cid)}))
        p.call("GetTask historyLength 0", p.rpc("GetTask", {"id": tid, "historyLength": 0}))
        p.call("GetTask historyLength 1", p.rpc("GetTask", {"id": tid, "historyLength": 1}))
        p.call("GetTask no historyLength", p.rpc("GetTask", {"id": tid}))
        p.call("GetTask historyLength -1", p.rpc("GetTask", {"id": tid, "historyLength": -1}))
        p.call("SubscribeToTask at input-required", p.rpc("SubscribeToTask", {"id": tid}), sse_window_s=1.5)
    # -- ListTasks -------------------------------------------------------------------------
    p.call("ListTasks {}", p.rpc("ListTasks", {}))
    page = p.call("ListTasks pageSize 1", p.rpc("ListTasks", {"pageSize": 1}))
    token = (page or {}).get("result", {}).get("nextPageToken") if isinstance(page, dict) else None
    if token:
        p.call("ListTasks pageToken from page 1", p.rpc("ListTasks", {"pageSize": 1, "pageToken": token}))
    p.call("ListTasks pageSize 0", p.rpc("ListTasks", {"pageSize": 0}))
    p.call("ListTasks pageSize 101", p.rpc("ListTasks", {"pageSize": 101}))
    p.call("ListTasks pageToken garbage", p.rpc("ListTasks", {"pageToken": "garbage"}))
    p.call("ListTasks historyLength -1", p.rpc("ListTasks", {"historyLength": -1}))
    p.call("ListTasks statusTimestampAfter garbage", p.rpc("ListTasks", {"statusTimestampAfter": "yesterday"}))
    if first:
        p.call("ListTasks contextId + status filter", p.rpc("ListTasks", {"contextId": first["contextId"], "status": "TASK_STATE_INPUT_REQUIRED"}))
    # -- returnImmediately, then subscribe to the working task ----------------------------
    ri = task_of(p.call("SendMessage returnImmediately", p.rpc("SendMessage", {"message": message("p2", 1, 1), "configuration": {"returnImmediately": True}})))
    if ri:
        p.call("SubscribeToTask right after returnImmediately", p.rpc("SubscribeToTask", {"id": ri["id"]}), sse_window_s=2.5)
    streamed = p.call("SendStreamingMessage turn 1 of 1", p.rpc("SendStreamingMessage", {"message": message("p3", 1, 1)}), sse_window_s=3.0)
    done_id = None
    for event in streamed or []:
        result = event.get("result") if isinstance(event, dict) else None
        if isinstance(result, dict) and isinstance(result.get("task"), dict):
            done_id = result["task"].get("id")
    if done_id:
        p.call("SubscribeToTask on a completed task", p.rpc("SubscribeToTask", {"id": done_id}), sse_window_s=1.0)
    p.call("SubscribeToTask unknown id", p.rpc("SubscribeToTask", {"id": "no-such-task"}), sse_window_s=1.0)
    # -- cancel twice ---------------------------------------------------------------------
    c = task_of(p.call("SendMessage turn 1 of 2 (to cancel)", p.rpc("SendMessage", {"message": message("p4", 1, 2)})))
    if c:
        p.call("CancelTask", p.rpc("CancelTask", {"id": c["id"]}))
        p.call("CancelTask again", p.rpc("CancelTask", {"id": c["id"]}))
    # -- push configs ---------------------------------------------------------------------
    pt = task_of(p.call("SendMessage turn 1 of 2 (push)", p.rpc("SendMessage", {"message": message("p5", 1, 2)})))
    if pt:
        created = p.call("CreateTaskPushNotificationConfig (no id)", p.rpc(
            "CreateTaskPushNotificationConfig", {"taskId": pt["id"], "url": "http://127.0.0.1:9/hook", "token": "tok-1"}))
        cfg_id = (created or {}).get("result", {}).get("id") if isinstance(created, dict) else None
        p.call("CreateTaskPushNotificationConfig (id cfg-2, authentication)", p.rpc(
            "CreateTaskPushNotificationConfig", {"taskId": pt["id"], "id": "cfg-2", "url": "http://127.0.0.1:9/hook2",
                                                 "authentication": {"scheme": "Bearer", "credentials": "secret"}}))
        p.call("GetTaskPushNotificationConfig", p.rpc("GetTaskPushNotificationConfig", {"taskId": pt["id"], "id": cfg_id or pt["id"]}))
        p.call("ListTaskPushNotificationConfigs", p.rpc("ListTaskPushNotificationConfigs", {"taskId": pt["id"]}))
        p.call("DeleteTaskPushNotificationConfig", p.rpc("DeleteTaskPushNotificationConfig", {"taskId": pt["id"], "id": "cfg-2"}))
        p.call("GetTaskPushNotificationConfig deleted", p.rpc("GetTaskPushNotificationConfig", {"taskId": pt["id"], "id": "cfg-2"}))
    # -- errors and their order -----------------------------------------------------------
    p.call("GetTask unknown id", p.rpc("GetTask", {"id": "no-such-task"}))
    p.call("unknown method, A2A-Version 1.0", p.rpc("NoSuchMethod", {}))
    p.call("unknown method, no A2A-Version", p.rpc("NoSuchMethod", {}), version=None)
    p.call("unknown method, A2A-Version 2.0", p.rpc("NoSuchMethod", {}), version="2.0")
    p.call("bad params, A2A-Version 1.0", p.rpc("GetTask", {"id": 5}))
    p.call("bad params, no A2A-Version", p.rpc("GetTask", {"id": 5}), version=None)
    p.call("bad params, A2A-Version 2.0", p.rpc("GetTask", {"id": 5}), version="2.0")
    p.call("GetTask, A2A-Version 1.1", p.rpc("GetTask", {"id": "no-such-task"}), version="1.1")
    p.call("GetTask, A2A-Version 2.0", p.rpc("GetTask", {"id": "no-such-task"}), version="2.0")
    p.call("GetTask, A2A-Version empty", p.rpc("GetTask", {"id": "no-such-task"}), version="")
    p.call("SendMessage without message", p.rpc("SendMessage", {}))
    p.call("jsonrpc 1.0 envelope", {"jsonrpc": "1.0", "id": 99, "method": "GetTask", "params": {"id": "x"}})
    p.call("malformed JSON", None, raw=b'{"jsonrpc": "2.0", "id": 1, "method": ')
    p.call("0.3 message/send, no A2A-Version", p.rpc("message/send", {"message": {
        "kind": "message", "messageId": "probe-v03", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}, {"kind": "data", "data": {"conversation": "p6", "turn": 1, "turns": 1}}]}}),
        version=None)
    p.call("0.3 tasks/get, A2A-Version 0.3", p.rpc("tasks/get", {"id": "no-such-task"}), version="0.3")
    big = json.dumps(p.rpc("SendMessage", {"message": {"messageId": "probe-big", "role": "ROLE_USER", "parts": [
        {"text": "x" * (8 * 1024 * 1024)}, {"data": {"conversation": "big", "turn": 1, "turns": 1}}]}})).encode()
    p.call("SendMessage with an 8 MB body", None, raw=big)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("--token")
    parser.add_argument("--out")
    args = parser.parse_args()
    host = urllib.parse.urlsplit(args.base_url).hostname or ""
    if not (host == "localhost" or host.startswith("127.")):
        raise SystemExit("probe.py talks to loopback servers only")
    p = Prober(args.base_url, args.token)
    run(p)
    text = json.dumps({"base": args.base_url, "probes": p.records}, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
