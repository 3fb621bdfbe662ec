"""Drives an A2A server over the 0.3 wire with the official 0.3 Python client (PyPI a2a-sdk 0.3.26).

Part of the conformance harness (tests/conformance/, see docs/CONFORMANCE.md). It uses the
0.3 SDK as shipped: its ``A2ACardResolver`` reads the card at BASE_URL (validated as a 0.3
``AgentCard``: ``url``, ``protocolVersion``, ...), its ``ClientFactory`` picks the transport
and URL from the card (``preferredTransport``, ``url``, ``additionalInterfaces``), and the
resulting ``JsonRpcTransport`` makes every call (slash method names, no ``A2A-Version``
header, the SDK's pydantic types validating every answer). Three push-config calls the 0.3 transport has no
method for (``list``, ``delete``) are sent as the SDK's own request models and their answers
validated with its response models.

Steps (each must do what A2A 0.3 says; ``value`` is a short measured answer):
  v03-card             the card resolver's card and the factory's client: its URL, version
  v03-send             message/send, text only: a Task (kind task), its state
  v03-continue         message/send on that task (taskId, contextId): the task, its state
  v03-stream           message/stream, a new task: the events' kinds, the last state, final
  v03-get              tasks/get with historyLength 1: the task, at most one history message
  v03-resubscribe      tasks/resubscribe to an input-required task: the first event is the Task
  v03-push-set         tasks/pushNotificationConfig/set on an input-required task: the config
  v03-push-get         tasks/pushNotificationConfig/get with the config id
  v03-push-list        tasks/pushNotificationConfig/list: a list holding the config
  v03-push-delivered   the task's next turn: a POST reaches the config's loopback URL
  v03-push-delete      tasks/pushNotificationConfig/delete: result null
  v03-cancel           tasks/cancel of an input-required task: the task, canceled
  v03-cancel-again     tasks/cancel again: a JSON-RPC error (-32002)
  v03-unknown-method   tasks/list (not a 0.3 method) with no header: a JSON-RPC error

Output: one JSON line per step ``{"client":"python-0.3","step","ok","detail","value"}`` and
a summary line. Every call has a timeout and the run has one (RUN_TIMEOUT_S).

Usage: python v03_client.py BASE_URL [--token T]
Run it with target/conformance-v03-venv/bin/python (tests/conformance/setup.sh makes it).
"""

import argparse
import asyncio
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from a2a.client.card_resolver import A2ACardResolver
from a2a.client.client import ClientConfig
from a2a.client.client_factory import ClientFactory
from a2a.client.errors import A2AClientJSONRPCError
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.types import (
    DeleteTaskPushNotificationConfigParams,
    DeleteTaskPushNotificationConfigRequest,
    DeleteTaskPushNotificationConfigResponse,
    GetTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigResponse,
    Message,
    MessageSendConfiguration,
    MessageSendParams,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskState,
    TextPart,
)

CLIENT = "python-0.3"
CALL_TIMEOUT_S = 15.0
RUN_TIMEOUT_S = 90.0
STEPS = [
    "v03-card",
    "v03-send",
    "v03-continue",
    "v03-stream",
    "v03-get",
    "v03-resubscribe",
    "v03-push-set",
    "v03-push-get",
    "v03-push-list",
    "v03-push-delivered",
    "v03-push-delete",
    "v03-cancel",
    "v03-cancel-again",
    "v03-unknown-method",
]


class Receiver:
    """A loopback webhook: records every POST it gets."""

    def __init__(self):
        posts = self.posts = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                posts.append({"path": self.path, "body": body.decode("utf-8", "replace")})
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self):
        self.server.shutdown()


def text_message(text, task=None):
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.user,
        parts=[Part(root=TextPart(text=text))],
        task_id=task.id if task else None,
        context_id=task.context_id if task else None,
    )


class Run:
    def __init__(self, args):
        self.args = args
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        self.http = httpx.AsyncClient(timeout=CALL_TIMEOUT_S, headers=headers)
        self.t = None  # the transport the factory picks from the card (v03-card)
        self.url = None  # the URL it calls
        self.receiver = Receiver()
        self.results = []
        self.ok = set()
        self.task = None  # the conversation of v03-send
        self.parked = None  # an input-required task for push and cancel

    def emit(self, step, ok, detail, value=None):
        line = {"client": CLIENT, "step": step, "ok": bool(ok), "detail": detail, "value": value}
        self.results.append(line)
        if ok:
            self.ok.add(step)
        print(json.dumps(line), flush=True)

    async def step(self, name, fn, needs):
        missing = [n for n in needs if n not in self.ok]
        if missing:
            self.emit(name, False, f"skipped: needs {', '.join(missing)}")
            return
        try:
            ok, detail, value = await asyncio.wait_for(fn(), CALL_TIMEOUT_S + 5)
        except A2AClientJSONRPCError as e:
            err = e.error
            ok, detail, value = False, f"JSON-RPC error {err.code}: {err.message}", f"error {err.code}"
        except Exception as e:  # the step failed: say how
            ok, detail, value = False, f"{type(e).__name__}: {e}"[:400], type(e).__name__
        self.emit(name, ok, detail, value)

    async def send(self, message, blocking=True):
        cfg = MessageSendConfiguration(blocking=blocking, accepted_output_modes=["text/plain"])
        return await self.t.send_message(MessageSendParams(message=message, configuration=cfg))

    async def s_card(self):
        card = await A2ACardResolver(self.http, self.args.base_url).get_agent_card()
        factory = ClientFactory(ClientConfig(httpx_client=self.http, streaming=True))
        client = factory.create(card)
        self.t = client._transport  # the SDK's own choice; the steps call it directly
        if not isinstance(self.t, JsonRpcTransport):
            return False, f"the factory chose {type(self.t).__name__}", type(self.t).__name__
        self.url = self.t.url
        detail = (f"url {card.url}, protocolVersion {card.protocol_version}, "
                  f"preferredTransport {card.preferred_transport}, "
                  f"{len(card.additional_interfaces or [])} additional interfaces")
        return True, detail, f"protocolVersion {card.protocol_version}"

    async def s_send(self):
        r = await self.send(text_message("hello over 0.3"))
        if not isinstance(r, Task):
            return False, f"answer is {type(r).__name__}, not a Task", type(r).__name__
        self.task = r
        return r.kind == "task", f"task {r.id}: {r.status.state.value}", r.status.state.value

    async def s_continue(self):
        r = await self.send(text_message("next turn", self.task))
        ok = isinstance(r, Task) and r.id == self.task.id
        return ok, f"task {r.id}: {r.status.state.value}", r.status.state.value

    async def s_stream(self):
        kinds, state, final = [], None, None
        req = MessageSendParams(message=text_message("streamed over 0.3"))
        async for ev in self.t.send_message_streaming(req):
            kinds.append(ev.kind)
            if ev.kind in ("task", "status-update"):
                state = ev.status.state.value
            if ev.kind == "status-update":
                final = ev.final
        ok = bool(kinds) and kinds[0] in ("task", "message") and state is not None
        return ok, f"events {kinds}, last state {state}, final {final}", f"{kinds[0] if kinds else '-'} .. {state}"

    async def s_get(self):
        r = await self.t.get_task(TaskQueryParams(id=self.task.id, history_length=1))
        n = len(r.history or [])
        return r.id == self.task.id and n <= 1, f"{r.status.state.value}, {n} history", f"{r.status.state.value} h{n}"

    async def park(self):
        """A new task left input-required (turn 1 of the default 2)."""
        r = await self.send(text_message("a task to park"))
        if not isinstance(r, Task) or r.status.state != TaskState.input_required:
            raise RuntimeError(f"expected an input-required task, got {getattr(r, 'status', r)}")
        return r

    async def s_resubscribe(self):
        parked = await self.park()
        first = None
        gen = self.t.resubscribe(TaskIdParams(id=parked.id))
        try:
            first = await asyncio.wait_for(gen.__anext__(), 5)
        finally:
            await gen.aclose()
        ok = first is not None and first.kind == "task" and first.id == parked.id
        return ok, f"first event {first.kind if first else None}", first.kind if first else "-"

    async def s_push_set(self):
        self.parked = await self.park()
        cfg = TaskPushNotificationConfig(
            task_id=self.parked.id,
            push_notification_config=PushNotificationConfig(id="v03-hook", url=self.receiver.url, token="tok-03"),
        )
        r = await self.t.set_task_callback(cfg)
        ok = r.task_id == self.parked.id and r.push_notification_config.url == self.receiver.url
        return ok, f"config {r.push_notification_config.id}", r.push_notification_config.id

    async def s_push_get(self):
        r = await self.t.get_task_callback(
            GetTaskPushNotificationConfigParams(id=self.parked.id, push_notification_config_id="v03-hook")
        )
        return r.push_notification_config.url == self.receiver.url, f"url {r.push_notification_config.url}", r.push_notification_config.id

    async def raw(self, request, response_model):
        resp = await self.http.post(self.url or self.args.base_url, json=request.model_dump(mode="json", exclude_none=True))
        resp.raise_for_status()
        return response_model.model_validate(resp.json()).root

    async def s_push_list(self):
        req = ListTaskPushNotificationConfigRequest(id=str(uuid.uuid4()), params=ListTaskPushNotificationConfigParams(id=self.parked.id))
        r = await self.raw(req, ListTaskPushNotificationConfigResponse)
        if not hasattr(r, "result"):
            return False, f"error {r.error.code}: {r.error.message}", f"error {r.error.code}"
        urls = [c.push_notification_config.url for c in r.result]
        return self.receiver.url in urls, f"{len(urls)} configs", f"{len(urls)} configs"

    async def s_push_delivered(self):
        await self.send(text_message("the last turn", self.parked))
        for _ in range(50):
            if self.receiver.posts:
                break
            await asyncio.sleep(0.1)
        n = len(self.receiver.posts)
        return n > 0, f"{n} POSTs: {self.receiver.posts[:1]}"[:400], f"{n} POSTs"

    async def s_push_delete(self):
        req = DeleteTaskPushNotificationConfigRequest(
            id=str(uuid.uuid4()),
            params=DeleteTaskPushNotificationConfigParams(id=self.parked.id, push_notification_config_id="v03-hook"),
        )
        r = await self.raw(req, DeleteTaskPushNotificationConfigResponse)
        if not hasattr(r, "result"):
            return False, f"error {r.error.code}: {r.error.message}", f"error {r.error.code}"
        return r.result is None, "result null", "null"

    async def s_cancel(self):
        self.canceled = await self.park()
        r = await self.t.cancel_task(TaskIdParams(id=self.canceled.id))
        return r.status.state == TaskState.canceled, f"{r.status.state.value}", r.status.state.value

    async def s_cancel_again(self):
        try:
            r = await self.t.cancel_task(TaskIdParams(id=self.canceled.id))
        except A2AClientJSONRPCError as e:
            return True, f"JSON-RPC error {e.error.code}", f"error {e.error.code}"
        return False, f"answered {r.status.state.value}", r.status.state.value

    async def s_unknown(self):
        resp = await self.http.post(self.url or self.args.base_url, json={"jsonrpc": "2.0", "id": 7, "method": "tasks/list", "params": {}})
        body = resp.json()
        code = body.get("error", {}).get("code")
        return code is not None, f"HTTP {resp.status_code}, error {code}", f"error {code}"

    async def main(self):
        plan = {
            "v03-card": (self.s_card, ()),
            "v03-send": (self.s_send, ("v03-card",)),
            "v03-continue": (self.s_continue, ("v03-send",)),
            "v03-stream": (self.s_stream, ("v03-card",)),
            "v03-get": (self.s_get, ("v03-send",)),
            "v03-resubscribe": (self.s_resubscribe, ("v03-card",)),
            "v03-push-set": (self.s_push_set, ("v03-card",)),
            "v03-push-get": (self.s_push_get, ("v03-push-set",)),
            "v03-push-list": (self.s_push_list, ("v03-push-set",)),
            "v03-push-delivered": (self.s_push_delivered, ("v03-push-set",)),
            "v03-push-delete": (self.s_push_delete, ("v03-push-set",)),
            "v03-cancel": (self.s_cancel, ("v03-card",)),
            "v03-cancel-again": (self.s_cancel_again, ("v03-cancel",)),
            "v03-unknown-method": (self.s_unknown, ()),
        }
        assert list(plan) == STEPS
        try:
            for name in STEPS:
                fn, needs = plan[name]
                await self.step(name, fn, needs)
        finally:
            try:
                await asyncio.wait_for(self.http.aclose(), 5)
            except Exception:
                pass
            self.receiver.close()
        ran = [r for r in self.results if not r["detail"].startswith("skipped:")]
        summary = {
            "steps": len(self.results),
            "ok": sum(r["ok"] for r in self.results),
            "failed": sum(not r["ok"] for r in ran),
            "skipped": len(self.results) - len(ran),
        }
        print(json.dumps({"client": CLIENT, "summary": summary}), flush=True)
        return 0 if summary["failed"] == 0 and summary["skipped"] == 0 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("--token", help="a Bearer credential for the server")
    args = parser.parse_args()

    def watchdog():
        time.sleep(RUN_TIMEOUT_S)
        print(json.dumps({"client": CLIENT, "summary": {"error": f"run timed out after {RUN_TIMEOUT_S:.0f} s"}}), flush=True)
        os._exit(1)

    threading.Thread(target=watchdog, daemon=True).start()
    sys.exit(asyncio.run(Run(args).main()))


if __name__ == "__main__":
    main()
