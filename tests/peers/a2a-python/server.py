"""A real a2a-python replica that performs a2a-chaos's scripted turns.

One process is one replica. It serves A2A 1.0 JSON-RPC on ``POST /`` and its card at
``/.well-known/agent-card.json`` with the SDK's own request handler
(``DefaultRequestHandler``), and keeps its tasks in a database shared by every replica:

- ``--store plain``: the SDK's ``DatabaseTaskStore`` (1.3 wraps it in the
  ``LegacyTaskStoreAdapter``: no versions, last writer wins);
- ``--store versioned``: 1.3's cluster mode, ``VersionedDatabaseTaskStore`` plus
  ``DatabaseTaskEventStream`` (compare-and-swap, shared event log).

The executor performs the turn of src/replica.rs: turn ``n`` of a conversation (read from the
message's data part ``{conversation, turn, turns}``) sets the task working, thinks, performs
one business effect by POSTing it to the a2a-chaos ledger (``/effect``), composes, writes
artifact ``turn-n`` and ends input-required, or completed on the conversation's last turn.

The store is wrapped by an observer that reports every save to the ledger host's ``/save``
(a2a-chaos keeps it as the save log its checkers read, as the simulator's store host does):
with the store's versions for the versioned store; without versions for the plain store,
where a2a-chaos numbers the saves and works out from the content (artifacts and message
ids) which version each save was built on. The SDK's own code decides what is read, cached
and written; the wrapper only watches.

``server.py --dump --db URL TASK_ID...`` prints the stored tasks as one JSON object (the
ground truth a live run reads at its end, from the database rather than from a replica).

With PostgreSQL, each live run gets a database of its own: ``server.py --create-db NAME --db
URL`` creates database NAME on URL's server (the role needs CREATEDB) and prints the run's
URL (URL with NAME as its database); ``server.py --drop-db NAME --db URL`` drops it at the
end of the run.

Usage: server.py --port P --name replica-0 --ledger http://127.0.0.1:L --db URL
       [--store plain|versioned] [--think-ms 40] [--compose-ms 10]
"""

import argparse
import asyncio
import json
import logging
import sys
import urllib.request

import uvicorn
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import DatabaseTaskStore, TaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)

try:  # 1.3: cluster mode
    from a2a.server.cluster import (
        ConcurrentTaskModificationError,
        DatabaseTaskEventStream,
        VersionedDatabaseTaskStore,
        VersionedTaskStore,
    )
except ImportError:  # 1.1: no cluster package
    VersionedTaskStore = None

LOG = logging.getLogger("a2a-chaos-peer")


def post_json(url, body, timeout=5.0):
    """POSTs JSON with the standard library (no extra dependency); returns the JSON answer."""
    data = json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"{}")


async def post(url, body):
    return await asyncio.to_thread(post_json, url, body)


def state_name(state):
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


def save_report(task, replica, mode, before=None, based_on=None, version=None):
    return {
        "task_id": task.id,
        "context_id": task.context_id,
        "state": state_name(task.status.state),
        "artifacts": [a.name or a.artifact_id for a in task.artifacts],
        "history": [m.message_id for m in task.history],
        "replica": replica,
        "mode": mode,
        "before": before,
        "based_on": based_on,
        "version": version,
    }


class ObservedPlainStore(TaskStore):
    """A plain store that reports each save before making it (the observer numbers them)."""

    def __init__(self, inner, replica, ledger):
        self.inner = inner
        self.replica = replica
        self.ledger = ledger

    async def get(self, task_id, context=None, *args, **kwargs):
        return await self.inner.get(task_id, context, *args, **kwargs)

    async def save(self, task, context=None, *args, **kwargs):
        await post(f"{self.ledger}/save", save_report(task, self.replica, "overwrite"))
        await self.inner.save(task, context, *args, **kwargs)

    async def list(self, *args, **kwargs):
        return await self.inner.list(*args, **kwargs)

    async def delete(self, *args, **kwargs):
        return await self.inner.delete(*args, **kwargs)


if VersionedTaskStore is not None:

    class ObservedVersionedStore(VersionedTaskStore):
        """The cluster store, reporting each accepted save with the SDK's own versions."""

        def __init__(self, inner, replica, ledger):
            self.inner = inner
            self.replica = replica
            self.ledger = ledger

        async def save(self, task, *, event, prev, prev_version, context):
            version = await self.inner.save(
                task, event=event, prev=prev, prev_version=prev_version, context=context
            )
            canceled = task.status.state == TaskState.TASK_STATE_CANCELED
            prev_value = None if prev_version.is_missing else prev_version._value
            await post(
                f"{self.ledger}/save",
                save_report(
                    task,
                    self.replica,
                    "cancel" if canceled else "cas",
                    before=None if canceled else prev_value,
                    based_on=prev_value,
                    version=version._value,
                ),
            )
            return version

        async def get(self, task_id, context):
            return await self.inner.get(task_id, context)

        async def list(self, params, context):
            return await self.inner.list(params, context)

        async def delete(self, task_id, context):
            return await self.inner.delete(task_id, context)


def turn_info(message):
    for part in message.parts:
        if part.HasField("data"):
            data = MessageToDict(part.data)
            if isinstance(data, dict) and {"conversation", "turn", "turns"} <= data.keys():
                return data["conversation"], int(data["turn"]), int(data["turns"])
    return None


class TurnExecutor(AgentExecutor):
    """Turn n: working, think, one effect at the ledger, compose, artifact turn-n, then
    input-required (or completed on the last turn)."""

    def __init__(self, replica, ledger, think_s, compose_s):
        self.replica = replica
        self.ledger = ledger
        self.think_s = think_s
        self.compose_s = compose_s

    async def execute(self, context: RequestContext, event_queue):
        message = context.message
        info = turn_info(message)
        if info is None:
            raise ValueError("the scripted agent needs a data part {conversation, turn, turns}")
        conversation, turn, turns = info
        task_id, context_id = context.task_id, context.context_id
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=task_id,
                    context_id=context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[message],
                )
            )
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        await asyncio.sleep(self.think_s)
        await post(
            f"{self.ledger}/effect",
            {
                "task_id": task_id,
                "context_id": context_id,
                "conversation": conversation,
                "turn": turn,
                "message_id": message.message_id,
                "replica": self.replica,
                "key": None,
                "sent_ms": 0,
            },
        )
        await asyncio.sleep(self.compose_s)
        await updater.add_artifact(
            [Part(text=f"result of turn {turn}")],
            artifact_id=f"{task_id}-turn-{turn}",
            name=f"turn-{turn}",
            last_chunk=True,
        )
        reply = updater.new_agent_message([Part(text=f"done turn {turn}")])
        if turn >= turns:
            await updater.complete(reply)
        else:
            await updater.requires_input(reply)

    async def cancel(self, context: RequestContext, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


class ReplicaHeader:
    """ASGI middleware naming the replica in every answer (x-a2a-chaos-replica), as the
    simulated replicas do, so the client's history records who answered."""

    def __init__(self, app, name):
        self.app = app
        self.header = (b"x-a2a-chaos-replica", name.encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_named(message):
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [self.header]
            await send(message)

        return await self.app(scope, receive, send_named)


async def build(args):
    engine = create_async_engine(args.db, connect_args=engine_args(args.db))
    plain = DatabaseTaskStore(engine)
    await plain.initialize()
    event_stream = None
    if args.store == "versioned":
        if VersionedTaskStore is None:
            sys.exit("--store versioned needs a2a-sdk 1.2 or newer (a2a.server.cluster)")
        inner = VersionedDatabaseTaskStore(engine)
        await inner.initialize()
        store = ObservedVersionedStore(inner, args.name, args.ledger)
        event_stream = DatabaseTaskEventStream(engine)
        if hasattr(event_stream, "initialize"):
            await event_stream.initialize()
    else:
        store = ObservedPlainStore(plain, args.name, args.ledger)
    url = f"http://127.0.0.1:{args.port}/"
    card = AgentCard(
        name="a2a-chaos scripted agent (a2a-python)",
        description=f"Scripted agent on {args.name}",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="scripted-turn",
                name="Scripted turn",
                description="Performs one business effect per turn and writes artifact turn-N.",
                tags=["simulation"],
            )
        ],
    )
    executor = TurnExecutor(args.name, args.ledger, args.think_ms / 1000, args.compose_ms / 1000)
    kwargs = {}
    if event_stream is not None:
        kwargs["event_stream"] = event_stream
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=store, agent_card=card, **kwargs
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
    return ReplicaHeader(Starlette(routes=routes), args.name)


def engine_args(db):
    if db.startswith("sqlite"):
        # Several processes share one file: wait for its lock instead of failing at once.
        return {"timeout": 30}
    return {}


async def dump(args):
    from a2a.server.context import ServerCallContext

    engine = create_async_engine(args.db, connect_args=engine_args(args.db))
    store = DatabaseTaskStore(engine, create_table=False)
    tasks = {}
    for task_id in args.ids:
        task = await store.get(task_id, ServerCallContext())
        if task is not None:
            tasks[task_id] = MessageToDict(task)
    await engine.dispose()
    print(json.dumps({"tasks": tasks}))


def database_name(name):
    """NAME quoted as a PostgreSQL identifier (a2a-chaos makes it from letters, digits, _)."""
    if not name or not all(c.isalnum() or c == "_" for c in name):
        sys.exit(f"not a database name a2a-chaos makes: {name!r}")
    return f'"{name}"'


async def create_database(args):
    """Creates database NAME on the server of --db and prints its URL."""
    engine = create_async_engine(args.db, isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        await conn.execute(text(f"CREATE DATABASE {database_name(args.create_db)}"))
    await engine.dispose()
    print(make_url(args.db).set(database=args.create_db).render_as_string(hide_password=False))


async def drop_database(args):
    """Drops database NAME on the server of --db, closing its connections (PostgreSQL 13+)."""
    engine = create_async_engine(args.db, isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        await conn.execute(
            text(f"DROP DATABASE IF EXISTS {database_name(args.drop_db)} WITH (FORCE)")
        )
    await engine.dispose()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", action="store_true", help="print the stored tasks IDS")
    parser.add_argument("ids", nargs="*")
    parser.add_argument("--create-db", metavar="NAME", help="create database NAME on --db's server")
    parser.add_argument("--drop-db", metavar="NAME", help="drop database NAME on --db's server")
    parser.add_argument("--port", type=int)
    parser.add_argument("--name", default="replica-0")
    parser.add_argument("--ledger", help="http://127.0.0.1:PORT of the ledger")
    parser.add_argument("--db", required=True, help="SQLAlchemy URL of the shared database")
    parser.add_argument("--store", choices=["plain", "versioned"], default="plain")
    parser.add_argument("--think-ms", type=float, default=40)
    parser.add_argument("--compose-ms", type=float, default=10)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.dump:
        asyncio.run(dump(args))
        return
    if args.create_db:
        asyncio.run(create_database(args))
        return
    if args.drop_db:
        asyncio.run(drop_database(args))
        return
    if args.port is None or args.ledger is None:
        parser.error("--port and --ledger are required to serve")
    asyncio.run(serve(args))


async def serve(args):
    # One event loop for the database engine and the server.
    app = await build(args)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="off"
    )
    await uvicorn.Server(config).serve()


if __name__ == "__main__":
    main()
