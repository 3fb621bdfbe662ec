"""Tests of the Python adapter against a stub ledger on a loopback port.

Run with an a2a-sdk 1.3 environment (tests/peers/a2a-python/setup.sh makes one):

    target/peer-venv/v1.3.0/bin/python -m unittest discover -s adapters/python -v
"""

import asyncio
import json
import os
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from a2a.server.cluster import StoredTask, TaskVersion, VersionedTaskStore
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf.struct_pb2 import Value

import a2a_chaos_adapter
from a2a_chaos_adapter import (
    Chaos,
    ObservedPlainStore,
    ObservedVersionedStore,
    ReplicaHeader,
    instrument,
    port,
    turn_of,
)

RECEIVED = []


class Ledger(BaseHTTPRequestHandler):
    """Records each POST and answers like the a2a-chaos ledger."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        RECEIVED.append((self.path, body))
        out = json.dumps({"applied": True}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def data_part(d):
    value = Value()
    value.struct_value.update(d)
    return Part(data=value)


def user(message_id, parts, context_id="ctx"):
    return Message(message_id=message_id, role=Role.ROLE_USER, parts=parts, context_id=context_id)


class FakeContext:
    """The parts of a2a-sdk's RequestContext the adapter reads."""

    def __init__(self, message, task=None):
        self.message = message
        self.current_task = task
        self.task_id = "t1"
        self.context_id = message.context_id


class StaleStore(VersionedTaskStore):
    """A versioned store that, like a read-modify-write without CAS, returns stored+1."""

    def __init__(self):
        self.version = 0

    async def save(self, task, *, event, prev, prev_version, context):
        self.version += 1
        return TaskVersion(self.version)

    async def get(self, task_id, context):
        return None

    async def list(self, params, context):
        raise NotImplementedError

    async def delete(self, task_id, context):
        pass


class PlainStore(TaskStore):
    async def save(self, task, context=None):
        pass

    async def get(self, task_id, context=None):
        return None

    async def list(self, params, context=None):
        raise NotImplementedError

    async def delete(self, task_id, context=None):
        pass


class AdapterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Ledger)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.url = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        RECEIVED.clear()

    def test_turn_from_the_data_part_with_doubles(self):
        m = user("m1", [Part(text="x"), data_part({"conversation": "c1", "turn": 2, "turns": 3})])
        t = turn_of(m)
        self.assertEqual((t.conversation, t.turn, t.turns, t.scripted), ("c1", 2, 3, True))

    def test_a_plain_message_is_the_next_turn(self):
        task = Task(id="t1", context_id="ctx")
        task.history.append(user("a", [Part(text="1")]))
        task.history.append(Message(message_id="r", role=Role.ROLE_AGENT))
        task.history.append(user("m", [Part(text="2")]))  # this message, already appended
        t = turn_of(user("m", [Part(text="2")]), task)
        self.assertEqual((t.conversation, t.turn, t.turns, t.scripted), ("ctx", 2, 2, False))
        self.assertEqual(turn_of(user("n", [Part(text="hi")], "c9")).turn, 1)

    def test_disabled_without_a_ledger(self):
        saved = os.environ.pop("A2A_CHAOS_LEDGER", None)
        try:
            chaos = Chaos()
            store = PlainStore()
            self.assertFalse(chaos.enabled)
            self.assertIs(chaos.observe_store(store), store)
            self.assertIsNone(asyncio.run(chaos.report_effect(FakeContext(user("m", [])))))
        finally:
            if saved is not None:
                os.environ["A2A_CHAOS_LEDGER"] = saved

    def test_the_effect_decorator_reports_the_running_turn(self):
        chaos = Chaos(ledger=self.url, replica="replica-1")

        @chaos.effect(key=lambda amount: f"charge-{amount}")
        async def charge(amount):
            return amount * 2

        class Executor:
            async def execute(self, context, event_queue):
                return await charge(21)

            async def cancel(self, context, event_queue):
                pass

        m = user("m1", [data_part({"conversation": "c1", "turn": 1, "turns": 2})])
        result = asyncio.run(chaos.executor(Executor()).execute(FakeContext(m), None))
        self.assertEqual(result, 42)
        self.assertEqual(
            RECEIVED,
            [
                (
                    "/effect",
                    {
                        "task_id": "t1",
                        "context_id": "ctx",
                        "conversation": "c1",
                        "turn": 1,
                        "message_id": "m1",
                        "replica": "replica-1",
                        "key": "charge-21",
                        "sent_ms": 0,
                    },
                )
            ],
        )
        with self.assertRaises(RuntimeError):  # outside an executor: no turn to report
            asyncio.run(charge(1))

    def test_the_replica_header_names_the_replica_in_every_answer(self):
        sent = []

        async def app(scope, receive, send):
            await send({"type": "http.response.start", "status": 200, "headers": [(b"a", b"1")]})
            await send({"type": "http.response.body", "body": b""})

        async def collect(message):
            sent.append(message)

        wrapped = Chaos(ledger=self.url, replica="replica-3").app(app)
        self.assertIsInstance(wrapped, ReplicaHeader)
        self.assertIs(Chaos(ledger=self.url).app(wrapped), wrapped)  # never twice
        asyncio.run(wrapped({"type": "http"}, None, collect))
        self.assertEqual(sent[0]["headers"], [(b"a", b"1"), (b"x-a2a-chaos-replica", b"replica-3")])

    def test_the_port_comes_from_the_environment_under_a2a_chaos(self):
        saved = os.environ.pop("A2A_CHAOS_PORT", None)
        try:
            self.assertEqual(port(9999), 9999)
            os.environ["A2A_CHAOS_PORT"] = "4321"
            self.assertEqual(port(9999), 4321)
        finally:
            os.environ.pop("A2A_CHAOS_PORT", None)
            if saved is not None:
                os.environ["A2A_CHAOS_PORT"] = saved

    def test_instrument_wraps_every_handler_and_uvicorn_server(self):
        import uvicorn
        from a2a.server.request_handlers import DefaultRequestHandler
        from a2a.types.a2a_pb2 import AgentCard

        chaos = Chaos(ledger=self.url, replica="replica-2")
        handler_init, config_init = DefaultRequestHandler.__init__, uvicorn.Config.__init__
        saved = os.environ.get("A2A_CHAOS_PORT")
        os.environ["A2A_CHAOS_PORT"] = "4321"
        try:
            instrument(chaos)
            instrument(chaos)  # a second call wraps nothing twice

            class Executor:
                async def execute(self, context, event_queue):
                    pass

                async def cancel(self, context, event_queue):
                    pass

            seen = {}

            def spy(self, agent_executor, task_store, agent_card, **kwargs):
                seen["executor"], seen["store"] = agent_executor, task_store

            DefaultRequestHandler.__init__ = spy
            instrument(chaos)
            DefaultRequestHandler(Executor(), task_store=PlainStore(), agent_card=AgentCard())
            self.assertIsInstance(seen["executor"], a2a_chaos_adapter._ReportingExecutor)
            self.assertIsInstance(seen["store"], ObservedPlainStore)

            async def app(scope, receive, send):
                pass

            config = uvicorn.Config(app, host="127.0.0.1", port=9999)
            self.assertEqual(config.port, 4321)
            self.assertIsInstance(config.app, ReplicaHeader)
        finally:
            DefaultRequestHandler.__init__ = handler_init
            uvicorn.Config.__init__ = config_init
            os.environ.pop("A2A_CHAOS_PORT", None)
            if saved is not None:
                os.environ["A2A_CHAOS_PORT"] = saved

    def test_observed_stores(self):
        chaos = Chaos(ledger=self.url, replica="replica-0")
        self.assertIsInstance(chaos.observe_store(PlainStore()), ObservedPlainStore)
        store = chaos.observe_store(StaleStore())
        self.assertIsInstance(store, ObservedVersionedStore)
        task = Task(id="t1", context_id="ctx", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))

        async def saves():
            await store.save(task, event=None, prev=None, prev_version=TaskVersion.MISSING, context=None)
            await store.save(task, event=None, prev=None, prev_version=TaskVersion(1), context=None)
            # Built on v1 although the store held v2: reported as such (counter versions).
            await store.save(task, event=None, prev=None, prev_version=TaskVersion(1), context=None)

        asyncio.run(saves())
        reports = [(b["mode"], b["before"], b["based_on"], b["version"]) for _, b in RECEIVED]
        self.assertEqual(reports, [("cas", None, None, 1), ("cas", 1, 1, 2), ("cas", 2, 1, 3)])
        self.assertIsInstance(StoredTask(task, TaskVersion(1)).version, TaskVersion)


if __name__ == "__main__":
    unittest.main()
