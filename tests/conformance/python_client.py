"""Drives an A2A 1.0 server with the official Python client (PyPI a2a-sdk 1.3.0).

Part of the conformance harness (tests/conformance/, see docs/CONFORMANCE.md). It runs the
same ordered list of named steps as js_client.mjs, using the SDK's client as shipped: the
card through ``A2ACardResolver``, a client from ``ClientFactory``, credentials through the
SDK's ``AuthInterceptor`` when the card declares security schemes, and the SDK's own
request types. A few steps are raw HTTP on purpose (malformed JSON, an 8 MB body, an
unknown method, bad params, version headers), because no client sends those.

Output: one JSON line per step, ``{"client":"python","step":...,"ok":...,"detail":...,
"value":...}``, then a summary line ``{"client":"python","summary":{...}}``. ``ok`` says
whether the server did what the step expects (the expectation is in STEPS below: the A2A
1.0 specification where it is clear, else what a2a-sdk 1.3.0's server does); ``value`` is a
short measured answer for the side-by-side table; a detail starting ``skipped:`` means an
earlier step it needs failed. Every call has a timeout, each step has one, and the whole
run has one (RUN_TIMEOUT_S), so the script always ends. Exit code: 0 if every step that
ran was ok, 1 otherwise, 2 for unusable arguments.

Messages carry a text part and a data part ``{conversation, turn, turns}`` (what the
scripted agents of serve and of tests/peers/a2a-python read); ``--plain`` sends text only.

Usage: python python_client.py BASE_URL [--token T] [--v03] [--plain]
Run it with target/peer-venv/v1.3.0/bin/python (it has a2a-sdk 1.3.0).
"""

import argparse
import asyncio
import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict

from a2a.client import (
    A2ACardResolver,
    AuthInterceptor,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    InMemoryContextCredentialStore,
)
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP

CLIENT = "python"
CALL_TIMEOUT_S = 10.0  # one client call
STEP_TIMEOUT_S = 15.0  # one step (a step may make a few calls)
RUN_TIMEOUT_S = 150.0  # the whole run: a watchdog thread exits the process after this
SESSION = "conformance"  # the credential store's session key
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_FAILED", "TASK_STATE_REJECTED"}
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")

# The ordered steps, the same names in js_client.mjs. Each: (name, what it expects).
STEPS = [
    ("card", "the card resolver fetches /.well-known/agent-card.json; a JSONRPC 1.0 interface"),
    ("no-credential", "a call without credentials: accepted, or refused 401 only if the card declares securitySchemes; a refusal body is JSON-RPC"),
    ("auth-from-card", "the card declares securitySchemes + securityRequirements when calls need a token, so the SDK auth helper sends it"),
    ("send-blocking", "SendMessage turn 1 of 3 returns a Task, TASK_STATE_INPUT_REQUIRED, artifact turn-1"),
    ("status-timestamp", "the Task's status.timestamp is set, RFC 3339 (the SDK: ...Z, microseconds)"),
    ("history-ids", "every history message carries taskId and contextId (the SDK sets both)"),
    ("send-streaming", "SendStreamingMessage turn 1 of 1: first event a Task, last TASK_STATE_COMPLETED"),
    ("continue-task", "SendMessage turn 2 of 3 on the same taskId: input-required, artifacts turn-1 and turn-2"),
    ("get-task-history-length", "GetTask historyLength=1 returns at most 1 history message"),
    ("list-tasks", "ListTasks filtered by contextId returns the task"),
    ("subscribe-snapshot", "SubscribeToTask on an input-required task: the first event is a Task snapshot"),
    ("subscribe-live", "the stream stays open at input-required and delivers turn 3's events up to TASK_STATE_COMPLETED"),
    ("return-immediately", "SendMessage returnImmediately=true returns a non-terminal Task at once (the SDK: SUBMITTED)"),
    ("poll-until-done", "GetTask polled until the returnImmediately task completes"),
    ("cancel", "CancelTask on an input-required task returns TASK_STATE_CANCELED"),
    ("cancel-again", "informational: a second CancelTask (spec: idempotent; a2a-sdk: -32002)"),
    ("push-create", "CreateTaskPushNotificationConfig answers the config with id, taskId and url"),
    ("push-get", "GetTaskPushNotificationConfig by taskId and id answers the config"),
    ("push-list", "ListTaskPushNotificationConfigs lists the config"),
    ("push-delivered", "the final turn of the task POSTs at least one event to the loopback receiver"),
    ("push-delete", "DeleteTaskPushNotificationConfig succeeds and the list is then empty"),
    ("v03-message-send", "with --v03: the client's 0.3 transport (message/send, A2A-Version 0.3) gets a task"),
    ("raw-malformed-json", "malformed JSON: HTTP 200, JSON-RPC -32700, id null"),
    ("raw-unknown-method", "an unknown method with A2A-Version 1.0: -32601"),
    ("raw-bad-params", "GetTask with params {id: 5} (not a string): -32602"),
    ("raw-unknown-method-no-version", "an unknown method without A2A-Version: -32601 (a2a-sdk looks the method up before the version)"),
    ("raw-bad-params-no-version", "bad params without A2A-Version: -32602 (a2a-sdk parses params before the version check)"),
    ("raw-version-1.1", "informational: A2A-Version 1.1 on GetTask (a2a-sdk accepts any 1.x; spec: Major.Minor must match)"),
    ("raw-version-2.0", "A2A-Version 2.0: -32009"),
    ("raw-error-data", "an error's data is [google.rpc.ErrorInfo{reason, domain a2a-protocol.org}] (a2a-sdk)"),
    ("field-violations", "GetTask without its id through the SDK client: -32602 naming the field, as the client surfaces it (ErrorInfo metadata.errors)"),
    ("raw-8mb-body", "an 8 MB SendMessage body gets an HTTP answer (JSON-RPC error or 413), not a reset connection"),
]
STEP_NAMES = [name for name, _ in STEPS]


DETAIL_CHARS = int(os.environ.get("CONFORMANCE_DETAIL_CHARS", "400"))


def short(text, limit=None):
    """One line, at most `limit` characters (details stay readable in a table)."""
    limit = limit or DETAIL_CHARS
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_code(exc):
    """The JSON-RPC code of an SDK client exception, when it maps to one."""
    for cls in type(exc).__mro__:
        if cls in JSON_RPC_ERROR_CODE_MAP:
            return JSON_RPC_ERROR_CODE_MAP[cls]
    match = re.search(r"JSON-RPC Error (-?\d+)", str(exc))
    return int(match.group(1)) if match else None


def describe(exc):
    code = error_code(exc)
    prefix = f"{code} " if code is not None else ""
    return short(f"{prefix}{type(exc).__name__}: {exc}")


class PushReceiver:
    """A loopback HTTP receiver for push notifications; records every POST it gets."""

    def __init__(self):
        self.received = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    payload = json.loads(body or b"null")
                except ValueError:
                    payload = body.decode(errors="replace")
                receiver.received.append(
                    {"path": self.path, "headers": dict(self.headers), "body": payload}
                )
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/push"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Run:
    """One run of every step against one server."""

    def __init__(self, args):
        self.args = args
        self.base = args.base_url.rstrip("/")
        self.results = []
        self.state = {}  # what later steps need from earlier ones
        self.card = None
        self.client = None  # blocking (streaming=False)
        self.stream_client = None  # streaming
        self.auth_headers = {}  # raw-HTTP steps send what the clients send
        self.http = None
        self.receiver = PushReceiver()

    # -- output ----------------------------------------------------------------------

    def emit(self, step, ok, detail, value=None):
        line = {"client": CLIENT, "step": step, "ok": bool(ok), "detail": short(detail)}
        if value is not None:
            line["value"] = short(value, 80)
        self.results.append(line)
        print(json.dumps(line), flush=True)

    async def step(self, name, fn, needs=()):
        missing = [n for n in needs if n not in self.state]
        if missing:
            self.emit(name, False, f"skipped: needs {', '.join(missing)}", "skip")
            return
        started = time.monotonic()
        try:
            ok, detail, value = await asyncio.wait_for(fn(), STEP_TIMEOUT_S)
        except asyncio.TimeoutError:
            ok, detail, value = False, f"step timed out after {STEP_TIMEOUT_S:.0f} s", "timeout"
        except Exception as exc:  # every failure is a result, never a crash
            code = error_code(exc)
            ok, detail, value = False, describe(exc), str(code) if code is not None else type(exc).__name__
        ms = int((time.monotonic() - started) * 1000)
        self.emit(name, ok, f"{detail} ({ms} ms)", value)

    # -- helpers ---------------------------------------------------------------------

    def ctx(self):
        """A call context: the credential store's session and a bounded timeout."""
        return ClientCallContext(state={"sessionId": SESSION}, timeout=CALL_TIMEOUT_S)

    def request(self, conversation, turn, turns, task_id=None, context_id=None, **config):
        """A SendMessageRequest built the way an SDK user builds one (ParseDict of JSON)."""
        parts = [{"text": f"turn {turn} of {conversation}"}]
        if not self.args.plain:
            parts.append({"data": {"conversation": conversation, "turn": turn, "turns": turns}})
        message = {
            "messageId": f"py-{conversation}-{turn}-{uuid.uuid4().hex[:8]}",
            "role": "ROLE_USER",
            "parts": parts,
        }
        if task_id:
            message["taskId"] = task_id
        if context_id:
            message["contextId"] = context_id
        body = {"message": message}
        if config:
            body["configuration"] = config
        return ParseDict(body, SendMessageRequest())

    async def send_blocking(self, request):
        """SendMessage through the blocking client; returns the answer as a dict."""
        answers = []
        async for event in self.client.send_message(request, context=self.ctx()):
            answers.append(MessageToDict(event))
        if len(answers) != 1:
            raise RuntimeError(f"blocking send yielded {len(answers)} answers")
        return answers[0]

    async def raw(self, body, version="1.0", content=None):
        """One raw JSON-RPC POST; returns (status, parsed body or text)."""
        headers = {"content-type": "application/json", **self.auth_headers}
        if version is not None:
            headers["A2A-Version"] = version
        data = content if content is not None else json.dumps(body).encode()
        response = await self.http.post(self.rpc_url, content=data, headers=headers)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, response.text

    @staticmethod
    def rpc_error(answer):
        if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
            return answer["error"]
        return None

    # -- the steps -------------------------------------------------------------------

    async def s_card(self):
        async with httpx.AsyncClient(timeout=CALL_TIMEOUT_S) as http:
            self.card = await A2ACardResolver(http, self.base).get_agent_card()
        card = MessageToDict(self.card)
        interfaces = card.get("supportedInterfaces", [])
        jsonrpc = [i for i in interfaces if i.get("protocolBinding") == "JSONRPC"]
        self.rpc_url = jsonrpc[0]["url"] if jsonrpc else self.base + "/"
        ok = bool(jsonrpc) and jsonrpc[0].get("protocolVersion", "").startswith("1.")
        self.state["card"] = True
        caps = card.get("capabilities", {})
        return ok, (
            f"{card.get('name')!r}; interfaces {interfaces}; capabilities {caps}; "
            f"securitySchemes {card.get('securitySchemes')}; "
            f"securityRequirements {card.get('securityRequirements')}"
        ), "JSONRPC " + (jsonrpc[0].get("protocolVersion", "?") if jsonrpc else "none")

    def declares_schemes(self):
        return bool(self.card.security_schemes) and bool(self.card.security_requirements)

    async def s_no_credential(self):
        body = {"jsonrpc": "2.0", "id": "nc", "method": "GetTask", "params": {"id": "no-such-task"}}
        status, answer = await self._raw_no_auth(body)
        self.state["no-credential"] = status
        declares = self.declares_schemes()
        if status == 401:
            jsonrpc = isinstance(answer, dict) and answer.get("jsonrpc") == "2.0" and "error" in answer
            ok = declares and jsonrpc
            why = [] if declares else ["the card declares no securitySchemes"]
            if not jsonrpc:
                why.append("the 401 body is not a JSON-RPC response")
            return ok, f"HTTP 401 body {json.dumps(answer) if not isinstance(answer, str) else answer}; " + "; ".join(why), "401"
        err = self.rpc_error(answer)
        return True, f"HTTP {status}: {json.dumps(answer)}", f"{status} {err['code'] if err else 'result'}"

    async def _raw_no_auth(self, body):
        headers = {"content-type": "application/json", "A2A-Version": "1.0"}
        response = await self.http.post(self.rpc_url, json=body, headers=headers)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, response.text

    async def s_auth_from_card(self):
        """Builds both clients: the SDK AuthInterceptor (from the card) plus, when the card
        declares nothing but --token was given, a plain header so later steps can run."""
        interceptors = []
        store = InMemoryContextCredentialStore()
        declares = self.declares_schemes()
        if declares and self.args.token:
            for name in self.card.security_schemes:
                await store.set_credentials(SESSION, name, self.args.token)
            interceptors.append(AuthInterceptor(store))
        fallback = bool(self.args.token) and not declares
        headers = {"Authorization": f"Bearer {self.args.token}"} if fallback else {}
        if self.args.token:
            self.auth_headers = {"Authorization": f"Bearer {self.args.token}"}
        self._httpx_clients = []

        def make(streaming):
            http = httpx.AsyncClient(timeout=CALL_TIMEOUT_S, headers=headers)
            self._httpx_clients.append(http)
            config = ClientConfig(streaming=streaming, httpx_client=http)
            return ClientFactory(config).create(self.card, interceptors=interceptors)

        self.client = make(False)
        self.stream_client = make(True)
        self.state["clients"] = True
        needed = self.state.get("no-credential") == 401
        schemes = MessageToDict(self.card).get("securitySchemes")
        if declares:
            return True, f"card declares {schemes}; AuthInterceptor sends the token", "declared"
        if needed:
            return False, (
                "calls need a Bearer token but the card declares no securitySchemes, so the SDK's "
                "AuthInterceptor sends none; sending --token as a plain header to measure the rest"
            ), "undeclared"
        return True, "no credential needed, none declared", "none"

    async def s_send_blocking(self):
        answer = await self.send_blocking(self.request("c1", 1, 3))
        task = answer.get("task")
        if not task:
            return False, f"answer is not a task: {json.dumps(answer)}", "no task"
        self.state["c1"] = task
        state = task.get("status", {}).get("state")
        names = [a.get("name") for a in task.get("artifacts", [])]
        ok = state == "TASK_STATE_INPUT_REQUIRED" and "turn-1" in names
        return ok, f"state {state}, artifacts {names}, task {json.dumps(task)}", state

    async def s_status_timestamp(self):
        ts = self.state["c1"].get("status", {}).get("timestamp")
        if not ts:
            return False, f"status has no timestamp: {json.dumps(self.state['c1'].get('status'))}", "absent"
        return bool(RFC3339.match(ts)), f"status.timestamp {ts!r}", ts

    async def s_history_ids(self):
        history = self.state["c1"].get("history", [])
        missing = [
            f"{m.get('messageId')} lacks {[k for k in ('taskId', 'contextId') if not m.get(k)]}"
            for m in history
            if not (m.get("taskId") and m.get("contextId"))
        ]
        ok = bool(history) and not missing
        return ok, (f"{len(history)} messages; " + ("; ".join(missing) or "all carry both")), (
            f"{len(missing)} of {len(history)} lack ids"
        )

    async def s_send_streaming(self):
        events, kinds, started = [], [], time.monotonic()
        async for event in self.stream_client.send_message(self.request("c2", 1, 1), context=self.ctx()):
            as_dict = MessageToDict(event)
            events.append(as_dict)
            kinds.append(next(iter(as_dict), "?"))
        final = last_state(events)
        ok = bool(kinds) and kinds[0] == "task" and final == "TASK_STATE_COMPLETED"
        ms = int((time.monotonic() - started) * 1000)
        return ok, f"{len(events)} events {kinds}, last state {final}, {ms} ms", f"{kinds[0] if kinds else '-'}..{final}"

    async def s_continue(self):
        c1 = self.state["c1"]
        answer = await self.send_blocking(self.request("c1", 2, 3, task_id=c1["id"], context_id=c1["contextId"]))
        task = answer.get("task", {})
        state = task.get("status", {}).get("state")
        names = [a.get("name") for a in task.get("artifacts", [])]
        ok = task.get("id") == c1["id"] and state == "TASK_STATE_INPUT_REQUIRED" and {"turn-1", "turn-2"} <= set(names)
        if ok:
            self.state["c1-2"] = task
        return ok, f"task {task.get('id')}, state {state}, artifacts {names}", state

    async def s_history_length(self):
        task = MessageToDict(
            await self.client.get_task(
                ParseDict({"id": self.state["c1"]["id"], "historyLength": 1}, GetTaskRequest()),
                context=self.ctx(),
            )
        )
        n = len(task.get("history", []))
        return n <= 1, f"historyLength=1 gave {n} history messages", f"{n} messages"

    async def s_list_tasks(self):
        c1 = self.state["c1"]
        answer = MessageToDict(
            await self.client.list_tasks(ParseDict({"contextId": c1["contextId"]}, ListTasksRequest()), context=self.ctx())
        )
        ids = [t.get("id") for t in answer.get("tasks", [])]
        ok = c1["id"] in ids
        keys = sorted(k for k in answer if k != "tasks")
        return ok, f"{len(ids)} tasks, other fields {keys}: {json.dumps({k: answer[k] for k in keys})}", f"{len(ids)} tasks"

    async def s_subscribe_snapshot(self):
        """Opens SubscribeToTask on c1 (input-required) and keeps reading in the background."""
        c1 = self.state["c1"]
        sub = {"events": [], "closed": False, "error": None, "opened": time.monotonic()}
        self.state["sub"] = sub

        async def reader():
            try:
                async for event in self.stream_client.subscribe(
                    ParseDict({"id": c1["id"]}, SubscribeToTaskRequest()),
                    context=ClientCallContext(state={"sessionId": SESSION}, timeout=30.0),
                ):
                    sub["events"].append((time.monotonic(), MessageToDict(event)))
            except Exception as exc:
                sub["error"] = describe(exc)
            finally:
                sub["closed"] = True

        sub["task"] = asyncio.create_task(reader())
        deadline = time.monotonic() + 5.0
        while not sub["events"] and not sub["closed"] and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if not sub["events"]:
            return False, f"no event within 5 s (closed {sub['closed']}, error {sub['error']})", sub["error"] or "nothing"
        at, first = sub["events"][0]
        kind = next(iter(first), "?")
        ms = int((at - sub["opened"]) * 1000)
        self.state["subscribed"] = True
        return kind == "task", f"first event {kind} after {ms} ms: {json.dumps(first)[:200]}", f"{kind} @{ms}ms"

    async def s_subscribe_live(self):
        sub, c1 = self.state["sub"], self.state["c1"]
        await asyncio.sleep(0.3)  # let a server that ends the stream at input-required do so
        closed_early = sub["closed"]
        before = len(sub["events"])
        sent = time.monotonic()
        answer = await self.send_blocking(self.request("c1", 3, 3, task_id=c1["id"], context_id=c1["contextId"]))
        answered = time.monotonic()
        deadline = answered + 5.0
        while not sub["closed"] and time.monotonic() < deadline:
            if last_state([e for _, e in sub["events"]]) in TERMINAL:
                break
            await asyncio.sleep(0.01)
        later = sub["events"][before:]
        final_at = next(
            (at for at, e in later if last_state([e]) in TERMINAL), None
        )
        sub["task"].cancel()
        kinds = [next(iter(e), "?") for _, e in later]
        blocking_state = answer.get("task", {}).get("status", {}).get("state")
        if closed_early:
            return False, (
                f"the stream closed at input-required after {before} events, before turn 3 was sent "
                f"(error {sub['error']}); turn 3 answered {blocking_state}"
            ), "closed at input-required"
        if final_at is None:
            return False, f"turn 3 answered {blocking_state}; the stream gave {kinds} and no terminal state within 5 s", "no terminal event"
        lag = int((final_at - answered) * 1000)
        return True, (
            f"after turn 3 (sent, answered {blocking_state} in {int((answered - sent) * 1000)} ms) the stream gave "
            f"{kinds}; terminal event {lag} ms after the blocking answer"
        ), f"terminal {lag:+d} ms"

    async def s_return_immediately(self):
        started = time.monotonic()
        answer = await self.send_blocking(self.request("c3", 1, 1, returnImmediately=True))
        ms = int((time.monotonic() - started) * 1000)
        task = answer.get("task")
        if not task:
            return False, f"answer is not a task: {json.dumps(answer)}", "no task"
        self.state["c3"] = task
        state = task.get("status", {}).get("state")
        return state not in TERMINAL, f"returned {state} in {ms} ms: {json.dumps(task)[:300]}", state

    async def s_poll(self):
        task_id = self.state["c3"]["id"]
        seen = []
        deadline = time.monotonic() + 8.0
        while time.monotonic() < deadline:
            task = MessageToDict(await self.client.get_task(ParseDict({"id": task_id}, GetTaskRequest()), context=self.ctx()))
            state = task.get("status", {}).get("state")
            if not seen or seen[-1] != state:
                seen.append(state)
            if state in TERMINAL:
                return state == "TASK_STATE_COMPLETED", f"states seen {seen}", state
            await asyncio.sleep(0.1)
        return False, f"not terminal after 8 s; states seen {seen}", seen[-1] if seen else "-"

    async def s_cancel(self):
        answer = await self.send_blocking(self.request("c4", 1, 2))
        task = answer.get("task", {})
        canceled = MessageToDict(
            await self.client.cancel_task(ParseDict({"id": task["id"]}, CancelTaskRequest()), context=self.ctx())
        )
        state = canceled.get("status", {}).get("state")
        self.state["c4"] = task
        return state == "TASK_STATE_CANCELED", f"task was {task.get('status', {}).get('state')}, cancel answered {state}", state

    async def s_cancel_again(self):
        try:
            again = MessageToDict(
                await self.client.cancel_task(ParseDict({"id": self.state["c4"]["id"]}, CancelTaskRequest()), context=self.ctx())
            )
        except Exception as exc:
            code = error_code(exc)
            return code is not None, f"second cancel refused: {describe(exc)}", str(code)
        state = again.get("status", {}).get("state")
        return True, f"second cancel answered the task, {state}", state

    async def s_push_create(self):
        answer = await self.send_blocking(self.request("c5", 1, 2))
        task = answer.get("task", {})
        self.state["c5"] = task
        config = ParseDict(
            {"taskId": task["id"], "url": self.receiver.url, "token": "push-token-1"},
            TaskPushNotificationConfig(),
        )
        created = MessageToDict(await self.client.create_task_push_notification_config(config, context=self.ctx()))
        missing = [k for k in ("id", "taskId", "url") if not created.get(k)]
        if created.get("id"):
            self.state["push"] = created
        self.state["push-created"] = True
        return not missing, f"answer {json.dumps(created)}" + (f"; lacks {missing}" if missing else ""), (
            "lacks " + ",".join(missing) if missing else "id " + created["id"][:12]
        )

    async def s_push_get(self):
        push = self.state["push"]
        got = MessageToDict(
            await self.client.get_task_push_notification_config(
                ParseDict({"taskId": push["taskId"], "id": push["id"]}, GetTaskPushNotificationConfigRequest()),
                context=self.ctx(),
            )
        )
        return got.get("url") == self.receiver.url, f"answer {json.dumps(got)}", "url ok" if got.get("url") == self.receiver.url else "wrong"

    async def s_push_list(self):
        push = self.state["push"]
        listed = MessageToDict(
            await self.client.list_task_push_notification_configs(
                ParseDict({"taskId": push["taskId"]}, ListTaskPushNotificationConfigsRequest()), context=self.ctx()
            )
        )
        ids = [c.get("id") for c in listed.get("configs", [])]
        return push["id"] in ids, f"answer {json.dumps(listed)}", f"{len(ids)} configs"

    async def s_push_delivered(self):
        c5 = self.state["c5"]
        before = len(self.receiver.received)
        answer = await self.send_blocking(self.request("c5", 2, 2, task_id=c5["id"], context_id=c5["contextId"]))
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            if any(last_state([r["body"]]) in TERMINAL for r in self.receiver.received[before:] if isinstance(r["body"], dict)):
                break
            await asyncio.sleep(0.05)
        got = self.receiver.received[before:]
        state = answer.get("task", {}).get("status", {}).get("state")
        if not got:
            return False, f"turn 2 answered {state}; nothing reached {self.receiver.url} within 5 s", "0 posts"
        kinds = [next(iter(r["body"]), "?") if isinstance(r["body"], dict) else "text" for r in got]
        token = got[0]["headers"].get("X-A2A-Notification-Token") or got[0]["headers"].get("x-a2a-notification-token")
        return True, (
            f"{len(got)} POSTs {kinds}; notification token header {token!r}; first body "
            f"{json.dumps(got[0]['body'])[:200]}"
        ), f"{len(got)} posts"

    async def s_push_delete(self):
        push = self.state["push"]
        await self.client.delete_task_push_notification_config(
            ParseDict({"taskId": push["taskId"], "id": push["id"]}, DeleteTaskPushNotificationConfigRequest()),
            context=self.ctx(),
        )
        listed = MessageToDict(
            await self.client.list_task_push_notification_configs(
                ParseDict({"taskId": push["taskId"]}, ListTaskPushNotificationConfigsRequest()), context=self.ctx()
            )
        )
        ids = [c.get("id") for c in listed.get("configs", [])]
        return push["id"] not in ids, f"deleted; list now {json.dumps(listed)}", f"{len(ids)} left"

    async def s_v03(self):
        if not self.args.v03:
            return True, "not asked (--v03 not given)", "not run"
        legacy = AgentCard()
        legacy.CopyFrom(self.card)
        for iface in legacy.supported_interfaces:
            iface.protocol_version = "0.3"
        http = httpx.AsyncClient(timeout=CALL_TIMEOUT_S, headers=self._httpx_clients[0].headers)
        self._httpx_clients.append(http)
        interceptors = list(self.client._interceptors)
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(legacy, interceptors=interceptors)
        events = []
        async for event in client.send_message(self.request("c6", 1, 1), context=self.ctx()):
            events.append(MessageToDict(event))
        task = events[0].get("task", {}) if events else {}
        state = task.get("status", {}).get("state")
        return state == "TASK_STATE_COMPLETED", f"transport {type(client._transport).__name__}; answer {json.dumps(events)[:300]}", state

    async def s_raw_malformed(self):
        status, answer = await self.raw(None, content=b'{"jsonrpc": "2.0", "id": 1, "method": ')
        err = self.rpc_error(answer)
        ok = status == 200 and err is not None and err.get("code") == -32700 and answer.get("id") is None
        return ok, f"HTTP {status}: {json.dumps(answer)}", f"{status} {err.get('code') if err else '-'}"

    async def _raw_code(self, body, version, expect):
        status, answer = await self.raw(body, version=version)
        err = self.rpc_error(answer)
        code = err.get("code") if err else None
        return code == expect, f"HTTP {status}: {json.dumps(answer) if not isinstance(answer, str) else answer}", str(code if err else "result")

    async def s_raw_unknown(self):
        return await self._raw_code({"jsonrpc": "2.0", "id": 2, "method": "NoSuchMethod", "params": {}}, "1.0", -32601)

    async def s_raw_bad_params(self):
        return await self._raw_code({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": 5}}, "1.0", -32602)

    async def s_raw_unknown_nov(self):
        return await self._raw_code({"jsonrpc": "2.0", "id": 4, "method": "NoSuchMethod", "params": {}}, None, -32601)

    async def s_raw_bad_params_nov(self):
        return await self._raw_code({"jsonrpc": "2.0", "id": 5, "method": "GetTask", "params": {"id": 5}}, None, -32602)

    async def s_raw_v11(self):
        status, answer = await self.raw({"jsonrpc": "2.0", "id": 6, "method": "GetTask", "params": {"id": "no-such-task"}}, version="1.1")
        err = self.rpc_error(answer)
        return isinstance(answer, dict), f"HTTP {status}: {json.dumps(answer)}", str(err.get("code") if err else "result")

    async def s_raw_v20(self):
        return await self._raw_code({"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "no-such-task"}}, "2.0", -32009)

    async def s_raw_error_data(self):
        status, answer = await self.raw({"jsonrpc": "2.0", "id": 8, "method": "GetTask", "params": {"id": "no-such-task"}})
        err = self.rpc_error(answer) or {}
        data = err.get("data")
        info = [d for d in data if isinstance(d, dict) and d.get("@type") == "type.googleapis.com/google.rpc.ErrorInfo"] if isinstance(data, list) else []
        ok = bool(info) and info[0].get("domain") == "a2a-protocol.org" and bool(info[0].get("reason"))
        return ok, f"HTTP {status}: {json.dumps(answer)}", (info[0].get("reason") if info else "no ErrorInfo")

    async def s_field_violations(self):
        try:
            await self.client.get_task(ParseDict({"id": ""}, GetTaskRequest()), context=self.ctx())
        except Exception as exc:
            code = error_code(exc)
            data = getattr(exc, "data", None)
            errors = data.get("errors") if isinstance(data, dict) else None
            fields = [e.get("field") for e in errors] if isinstance(errors, list) else []
            ok = code == -32602 and fields == ["id"]
            return ok, f"{describe(exc)}; data {json.dumps(data)}", f"{code} {fields}"
        return False, "GetTask without an id answered a task", "result"

    async def s_raw_8mb(self):
        text = "x" * (8 * 1024 * 1024)
        body = {
            "jsonrpc": "2.0", "id": 9, "method": "SendMessage",
            "params": {"message": {"messageId": f"py-big-{uuid.uuid4().hex[:8]}", "role": "ROLE_USER",
                                   "parts": [{"text": text}, {"data": {"conversation": "big", "turn": 1, "turns": 1}}]}},
        }
        try:
            status, answer = await self.raw(body)
        except httpx.HTTPError as exc:
            return False, f"no HTTP answer: {type(exc).__name__}: {exc}", "connection error"
        err = self.rpc_error(answer)
        shown = json.dumps(answer)[:300] if not isinstance(answer, str) else answer[:300]
        return True, f"HTTP {status}: {shown}", f"{status} {err.get('code') if err else ('result' if isinstance(answer, dict) else '-')}"

    # -- the run ---------------------------------------------------------------------

    async def main(self):
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(CALL_TIMEOUT_S, write=30.0))
        plan = {
            "card": (self.s_card, ()),
            "no-credential": (self.s_no_credential, ("card",)),
            "auth-from-card": (self.s_auth_from_card, ("card",)),
            "send-blocking": (self.s_send_blocking, ("clients",)),
            "status-timestamp": (self.s_status_timestamp, ("c1",)),
            "history-ids": (self.s_history_ids, ("c1",)),
            "send-streaming": (self.s_send_streaming, ("clients",)),
            "continue-task": (self.s_continue, ("c1",)),
            "get-task-history-length": (self.s_history_length, ("c1",)),
            "list-tasks": (self.s_list_tasks, ("c1",)),
            "subscribe-snapshot": (self.s_subscribe_snapshot, ("c1-2",)),
            "subscribe-live": (self.s_subscribe_live, ("subscribed",)),
            "return-immediately": (self.s_return_immediately, ("clients",)),
            "poll-until-done": (self.s_poll, ("c3",)),
            "cancel": (self.s_cancel, ("clients",)),
            "cancel-again": (self.s_cancel_again, ("c4",)),
            "push-create": (self.s_push_create, ("clients",)),
            "push-get": (self.s_push_get, ("push",)),
            "push-list": (self.s_push_list, ("push",)),
            "push-delivered": (self.s_push_delivered, ("push-created",)),
            "push-delete": (self.s_push_delete, ("push",)),
            "v03-message-send": (self.s_v03, ("clients",)),
            "raw-malformed-json": (self.s_raw_malformed, ("card",)),
            "raw-unknown-method": (self.s_raw_unknown, ("card",)),
            "raw-bad-params": (self.s_raw_bad_params, ("card",)),
            "raw-unknown-method-no-version": (self.s_raw_unknown_nov, ("card",)),
            "raw-bad-params-no-version": (self.s_raw_bad_params_nov, ("card",)),
            "raw-version-1.1": (self.s_raw_v11, ("card",)),
            "raw-version-2.0": (self.s_raw_v20, ("card",)),
            "raw-error-data": (self.s_raw_error_data, ("card",)),
            "field-violations": (self.s_field_violations, ("card",)),
            "raw-8mb-body": (self.s_raw_8mb, ("card",)),
        }
        assert list(plan) == STEP_NAMES, "plan and STEPS must list the same steps in order"
        try:
            for name in STEP_NAMES:
                fn, needs = plan[name]
                await self.step(name, fn, needs)
        finally:
            for client in (self.client, self.stream_client):
                if client is not None:
                    try:
                        await asyncio.wait_for(client.close(), 5)
                    except Exception:
                        pass
            for http in getattr(self, "_httpx_clients", []) + [self.http]:
                try:
                    await asyncio.wait_for(http.aclose(), 5)
                except Exception:
                    pass
            self.receiver.close()
        ran = [r for r in self.results if not r["detail"].startswith("skipped:")]
        summary = {
            "steps": len(self.results),
            "ok": sum(r["ok"] for r in self.results),
            "failed": sum(not r["ok"] for r in ran),
            "skipped": len(self.results) - len(ran),
            "plain": self.args.plain,
            "v03": self.args.v03,
        }
        print(json.dumps({"client": CLIENT, "summary": summary}), flush=True)
        return 0 if summary["failed"] == 0 and summary["skipped"] == 0 else 1


def last_state(events):
    """The last task state named in a list of StreamResponse / push payload dicts."""
    state = None
    for event in events:
        for key in ("task", "statusUpdate"):
            if isinstance(event.get(key), dict):
                state = event[key].get("status", {}).get("state", state)
        if "status" in event and isinstance(event["status"], dict):  # a bare Task
            state = event["status"].get("state", state)
    return state


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("--token", help="a Bearer credential for the server")
    parser.add_argument("--v03", action="store_true", help="also run the 0.3 message/send step")
    parser.add_argument("--plain", action="store_true", help="text-only messages (no data part)")
    args = parser.parse_args()

    def watchdog():
        time.sleep(RUN_TIMEOUT_S)
        print(json.dumps({"client": CLIENT, "summary": {"error": f"run timed out after {RUN_TIMEOUT_S:.0f} s"}}), flush=True)
        os._exit(1)

    threading.Thread(target=watchdog, daemon=True).start()
    sys.exit(asyncio.run(Run(args).main()))


if __name__ == "__main__":
    main()
