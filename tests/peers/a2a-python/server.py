"""A real a2a-python replica that performs a2a-chaos's scripted turns.

One process is one replica. It serves A2A 1.0 JSON-RPC on ``POST /`` and its card at
``/.well-known/agent-card.json`` with the SDK's own request handler
(``DefaultRequestHandler``), and keeps its tasks in a database shared by every replica:

- ``--store plain``: the SDK's ``DatabaseTaskStore`` (1.3 wraps it in the
  ``LegacyTaskStoreAdapter``: no versions, last writer wins);
- ``--store memory``: the SDK's ``InMemoryTaskStore``, one per process (nothing shared:
  ``--db`` is ignored, and the final tasks are read from each replica with GetTask);
- ``--store versioned``: 1.3's cluster mode, ``VersionedDatabaseTaskStore`` plus
  ``DatabaseTaskEventStream`` (compare-and-swap, shared event log).

The executor performs the turn of src/replica/turn.rs: turn ``n`` of a conversation (read from
the message's data part ``{conversation, turn, turns}``) sets the task working, thinks, performs
one business effect by POSTing it to the a2a-chaos ledger (``/effect``), composes, writes
artifact ``turn-n`` and ends input-required, or completed on the conversation's last turn.
A message without that data part (plain text) is a turn too: on a new task, turn 1 of a
conversation named after its contextId, ``--turns`` (default 2) long; on an existing task,
its next turn (the distinct user messages already in the task's history, plus one).

The store is wrapped by an observer that reports every save to the ledger host's ``/save``
(a2a-chaos keeps it as the save log its checkers read, as the simulator's store host does):
with the store's versions for the versioned store; without versions for the plain store,
where a2a-chaos numbers the saves and works out from the content (artifacts and message
ids) which version each save was built on. The SDK's own code decides what is read, cached
and written; the wrapper only watches. The observers and the effect report are the user
adapter's, ``adapters/python/a2a_chaos_adapter.py`` (this peer is its first user).

``--store module:Class`` (with ``--pythonpath DIR``, repeatable) runs your own task store
instead: the class is imported, constructed as ``Class(db_url)`` with the ``--db`` URL, and
``await store.initialize()`` is called when it has that method. A subclass of a2a-sdk's
``VersionedTaskStore`` runs the SDK in cluster mode (with the store's ``event_stream``
attribute as the event stream when it has one, else none); any other ``TaskStore`` runs as
a plain store. Either way its saves are reported (docs/PEERS.md).

``--push`` switches push notifications on (off by default, as server.py always was): the
card says ``pushNotifications: true`` and the handler gets the SDK's
``InMemoryPushNotificationConfigStore`` (per process) and ``BasePushNotificationSender``
(httpx, 5 s timeout, no URL validator). ``a2a-chaos live --allow-loopback-push`` passes it.
With ``--webhook-via HOST:PORT`` every push goes to that address whatever URL it names:
``a2a-chaos live`` gives each replica its own link to the run's webhook there, so a
partition, hold or latency between one replica and the webhook acts on that replica's pushes
alone.

``--bearer`` puts an auth middleware in front of the SDK, as the profiles assume a
deployment does: ``POST /`` needs a Bearer token (a2a-chaos's ``simjwt:`` tokens, issuer
and audience checked, signature not), refused 401 without one, and the token's subject
becomes the request's user, so the SDK's stores scope every task to it (its default
``owner_resolver``). The models' ``[fidelity] args`` pass it. The ground-truth read looks
each task's owner up first, so it finds a task whoever owns it.

``server.py --dump --db URL TASK_ID...`` prints the stored tasks as one JSON object (the
ground truth a live run reads at its end, from the database rather than from a replica).
A serving replica with a database store answers the same read at ``POST /a2a-chaos/dump``
(body ``{"ids": [...]}``), from its store underneath the observer; a live run asks a
running replica that way and starts ``--dump`` only when none runs.

With PostgreSQL, each live run gets a database of its own: ``server.py --create-db NAME --db
URL`` creates database NAME on URL's server (the role needs CREATEDB) and prints the run's
URL (URL with NAME as its database); ``server.py --drop-db NAME --db URL`` drops it at the
end of the run.

Usage: server.py --port P --name replica-0 --ledger http://127.0.0.1:L --db URL
       [--store plain|versioned|memory|module:Class] [--pythonpath DIR] [--think-ms 40] [--ledger-timeout-ms 500]
       [--compose-ms 10] [--turns 2] [--bearer]
       server.py --dump --db URL [--store ...] [--pythonpath DIR] -- TASK_ID...
"""

import argparse
import asyncio
import gc
import importlib
import inspect
import json
import logging
import os
import sys
from pathlib import Path

import uvicorn
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from a2a.auth.user import User
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import DatabaseTaskStore, InMemoryTaskStore, TaskStore, TaskUpdater
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
        TaskEventStream,
        VersionedDatabaseTaskStore,
        VersionedTaskStore,
    )
except ImportError:  # 1.1: no cluster package
    VersionedTaskStore = None

# The user adapter (adapters/python/ at the repository root) reports effects and saves.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "adapters" / "python"))
from a2a_chaos_adapter import DEFAULT_TURNS, Chaos, turn_of  # noqa: E402

LOG = logging.getLogger("a2a-chaos-peer")

#: The stores this peer knows by name; anything else is `module:Class`.
BUILT_IN_STORES = ("plain", "versioned", "memory")


def shape_of(message):
    """The agent's shape the turn's data part asks for (src/replica/shape.rs): whether it
    performs its effect (``"effect": false`` performs none) and how many progress updates
    it saves while it thinks (``"progress": N``, at most 10; a protobuf Struct sends
    numbers as doubles)."""
    for part in message.parts:
        if part.HasField("data"):
            data = MessageToDict(part.data)
            if isinstance(data, dict) and "turn" in data:
                progress = data.get("progress", 0)
                progress = int(progress) if isinstance(progress, (int, float)) else 0
                return data.get("effect") is not False, max(0, min(progress, 10))
    return True, 0


class TurnExecutor(AgentExecutor):
    """Turn n: working, think, one effect at the ledger, compose, artifact turn-n, then
    input-required (or completed on the last turn). A turn that asks for progress updates
    sets its task working again that many times, evenly spread over its think; one that
    asks for no effect performs none."""

    def __init__(self, chaos, think_s, compose_s, turns=DEFAULT_TURNS):
        self.chaos = chaos
        self.think_s = think_s
        self.compose_s = compose_s
        self.turns = turns

    async def execute(self, context: RequestContext, event_queue):
        message = context.message
        # The data part's turn, or, for a plain text message, the task's next turn.
        info = turn_of(message, context.current_task, context.context_id, self.turns)
        conversation, turn, turns = info.conversation, info.turn, info.turns
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
        effect, progress = shape_of(message)
        for _ in range(progress):
            await asyncio.sleep(self.think_s / (progress + 1))
            await updater.update_status(TaskState.TASK_STATE_WORKING)
        await asyncio.sleep(self.think_s / (progress + 1))
        if effect:
            # The business effect: reported to the ledger, which is also where it "happens".
            await self.chaos.report_effect(context, conversation=conversation, turn=turn)
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


#: What a2a-chaos's tokens say (src/auth.rs): ``simjwt:ISSUER|AUDIENCE|SUBJECT|SIGNATURE``.
TOKEN_PREFIX = "simjwt:"
TOKEN_ISSUER = "https://idp.example"
TOKEN_AUDIENCE = "http://router:8080"


class BearerOwner:
    """ASGI middleware for ``--bearer``: the authentication a deployment puts in front of
    a2a-sdk, which has none of its own. ``POST /`` needs ``Authorization: Bearer`` with a
    token from the expected issuer for the agent's audience (the card and the dump route
    stay open); its subject becomes the request's Starlette user, so the SDK's call context
    carries it and its task stores scope every task to it (``owner_resolver``:
    ``resolve_user_scope``, the SDK's default). Without a valid token: HTTP 401,
    ``WWW-Authenticate: Bearer``, a JSON-RPC error, as the models with ``bearer =
    "required"`` answer. The signature is not checked: a test harness's tokens."""

    def __init__(self, app):
        self.app = app

    @staticmethod
    def subject(headers):
        for name, value in headers:
            if name.lower() != b"authorization":
                continue
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not token.startswith(TOKEN_PREFIX):
                return None
            parts = token[len(TOKEN_PREFIX):].split("|")
            if len(parts) != 4 or parts[0] != TOKEN_ISSUER or parts[1] != TOKEN_AUDIENCE:
                return None
            return parts[2] or None
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != "/":
            return await self.app(scope, receive, send)
        subject = self.subject(scope.get("headers", []))
        if subject is None:
            # A2A 1.0 §3.3.2: an authentication error is a JSON-RPC *custom* error with the
            # challenge; -32000 is outside JSON-RPC's standard codes and A2A's own, with an
            # ErrorInfo (§9.5), as a2a-chaos's simulated replicas answer (src/replica/rpc.rs).
            error = {
                "code": -32000,
                "message": "unauthorized: a valid Bearer token is required",
                "data": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "UNAUTHENTICATED",
                        "domain": "a2a-chaos",
                        "metadata": {"scheme": "Bearer"},
                    }
                ],
            }
            response = JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": error},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            return await response(scope, receive, send)
        from starlette.authentication import AuthCredentials, SimpleUser

        scope["user"] = SimpleUser(subject)
        scope["auth"] = AuthCredentials(["authenticated"])
        return await self.app(scope, receive, send)


class Owner(User):
    """The SDK's ``User`` for one owner: what a store's ``owner_resolver`` reads."""

    def __init__(self, name):
        self.name = name

    @property
    def is_authenticated(self):
        return bool(self.name)

    @property
    def user_name(self):
        return self.name


async def owners_of(store, ids):
    """``{id: owner}`` for the tasks among `ids` in a2a-sdk's own database `store` (its
    ``owner`` column), so the ground-truth read finds a task whoever owns it; ``{}`` for a
    store without one (the SDK before owners, or a user's store)."""
    model = getattr(store, "task_model", None)
    sessions = getattr(store, "async_session_maker", None)
    if model is None or sessions is None or not hasattr(model, "owner"):
        return {}
    from sqlalchemy import select

    async with sessions() as session:
        rows = await session.execute(select(model.id, model.owner).where(model.id.in_(list(ids))))
        return {task_id: owner for task_id, owner in rows}


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


def load_store_class(spec, pythonpath):
    """The class named by `spec` (``module:Class``, ``module:Outer.Inner``), imported with
    the directories of `pythonpath` first on ``sys.path``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        sys.exit(f"--store {spec!r}: expected plain, versioned or module:Class")
    for entry in reversed(pythonpath or []):
        for directory in reversed(entry.split(os.pathsep)):
            if directory:
                sys.path.insert(0, directory)
    try:
        obj = importlib.import_module(module_name)
    except ImportError as e:
        sys.exit(f"--store {spec!r}: cannot import {module_name} ({e}); is --pythonpath right?")
    for name in attr.split("."):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            sys.exit(f"--store {spec!r}: {module_name} has no {attr}")
    return obj


async def user_store(args):
    """The user's store of ``--store module:Class``: ``Class(db_url)``, initialised."""
    cls = load_store_class(args.store, args.pythonpath)
    versioned = (
        VersionedTaskStore is not None
        and inspect.isclass(cls)
        and issubclass(cls, VersionedTaskStore)
    )
    if not versioned and not (inspect.isclass(cls) and issubclass(cls, TaskStore)):
        sys.exit(
            f"--store {args.store!r} is not a subclass of a2a-sdk's TaskStore"
            + (" or VersionedTaskStore" if VersionedTaskStore is not None else "")
        )
    store = cls(args.db)
    initialize = getattr(store, "initialize", None)
    if callable(initialize):
        result = initialize()
        if inspect.isawaitable(result):
            await result
    return store


async def build(args):
    chaos = Chaos(ledger=args.ledger, replica=args.name, timeout=args.ledger_timeout_ms / 1000)
    event_stream = None
    # What the dump route reads: the store as --dump opens it, under no observer.
    stored = None
    if args.store not in BUILT_IN_STORES:
        inner = await user_store(args)
        stored = inner
        stream = getattr(inner, "event_stream", None)
        if VersionedTaskStore is not None and isinstance(stream, TaskEventStream):
            event_stream = stream
        store = chaos.observe_store(inner)
    elif args.store == "memory":
        store = chaos.observe_store(InMemoryTaskStore())
    else:
        engine = create_async_engine(args.db, connect_args=engine_args(args.db))
        plain = DatabaseTaskStore(engine)
        await plain.initialize()
        stored = plain
        if args.store == "versioned":
            if VersionedTaskStore is None:
                sys.exit("--store versioned needs a2a-sdk 1.2 or newer (a2a.server.cluster)")
            inner = VersionedDatabaseTaskStore(engine)
            await inner.initialize()
            store = chaos.observe_store(inner)
            event_stream = DatabaseTaskEventStream(engine)
            if hasattr(event_stream, "initialize"):
                await event_stream.initialize()
        else:
            store = chaos.observe_store(plain)
    url = f"http://127.0.0.1:{args.port}/"
    card = AgentCard(
        name="a2a-chaos scripted agent (a2a-python)",
        description=f"Scripted agent on {args.name}",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=args.push),
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
    executor = chaos.executor(
        TurnExecutor(chaos, args.think_ms / 1000, args.compose_ms / 1000, args.turns)
    )
    kwargs = {}
    if event_stream is not None:
        kwargs["event_stream"] = event_stream
    if args.interrupted_task_timeout_s is not None:
        if VersionedTaskStore is None:
            sys.exit("--interrupted-task-timeout-s needs a2a-sdk 1.3 or later")
        # Opt-in (a2a-sdk 1.3): release the ActiveTask of a task idle in input-required.
        kwargs["interrupted_task_timeout"] = args.interrupted_task_timeout_s
    if args.push:
        # The SDK's own push pieces, as a deployment wires them: configs in memory (per
        # process), sent by BasePushNotificationSender over httpx (5 s timeout, no URL
        # validator: the SDK's default, so a loopback receiver is reachable).
        import httpx
        from a2a.server.tasks import (
            BasePushNotificationSender,
            InMemoryPushNotificationConfigStore,
        )

        class Via(httpx.AsyncBaseTransport):
            """Sends every request to one address: this replica's link to the webhook."""

            def __init__(self, via):
                host, port = via.rsplit(":", 1)
                self.host, self.port = host, int(port)
                self.inner = httpx.AsyncHTTPTransport()

            async def handle_async_request(self, request):
                request.url = request.url.copy_with(host=self.host, port=self.port)
                return await self.inner.handle_async_request(request)

            async def aclose(self):
                await self.inner.aclose()

        transport = Via(args.webhook_via) if args.webhook_via else None
        configs = InMemoryPushNotificationConfigStore()
        kwargs["push_config_store"] = configs
        kwargs["push_sender"] = BasePushNotificationSender(
            httpx.AsyncClient(timeout=5.0, transport=transport), configs
        )
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=store, agent_card=card, **kwargs
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
    if stored is not None:
        routes.append(dump_route(stored))
    app = Starlette(routes=routes)
    if args.bearer:
        app = BearerOwner(app)
    return ReplicaHeader(app, args.name)


def engine_args(db):
    if db.startswith("sqlite"):
        # Several processes share one file: wait for its lock instead of failing at once.
        return {"timeout": 30}
    return {}


async def read_stored(store, ids):
    """``{id: task}`` (A2A 1.0 JSON) for the tasks among `ids` that `store` holds."""
    from a2a.server.context import ServerCallContext

    tasks = {}
    owners = await owners_of(store, ids)
    for task_id in ids:
        owner = owners.get(task_id)
        context = ServerCallContext() if owner is None else ServerCallContext(user=Owner(owner))
        found = await store.get(task_id, context)
        # A VersionedTaskStore answers a StoredTask (task and version).
        task = getattr(found, "task", found)
        if task is not None:
            tasks[task_id] = MessageToDict(task)
    return tasks


async def dump(args):
    """Prints ``{"tasks": {id: task}}`` for the stored tasks among `args.ids` (A2A 1.0 JSON),
    read from the database (or from the user's ``--store module:Class``)."""
    engine = None
    if args.store in BUILT_IN_STORES:
        engine = create_async_engine(args.db, connect_args=engine_args(args.db))
        store = DatabaseTaskStore(engine, create_table=False)
    else:
        store = await user_store(args)
    tasks = await read_stored(store, args.ids)
    if engine is not None:
        await engine.dispose()
    print(json.dumps({"tasks": tasks}))


def dump_route(store):
    """``POST /a2a-chaos/dump`` with ``{"ids": [...]}``: what ``--dump`` prints, read by a
    running replica from the store underneath its observer (no save, no ledger call), so a
    live run reads its ground truth without starting a Python process (about 1.5 s each)."""

    async def endpoint(request):
        body = await request.json()
        return JSONResponse({"tasks": await read_stored(store, body.get("ids", []))})

    return Route("/a2a-chaos/dump", endpoint, methods=["POST"])


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
    parser.add_argument(
        "--store",
        default="plain",
        help="plain, versioned, or module:Class (your TaskStore or VersionedTaskStore)",
    )
    parser.add_argument(
        "--pythonpath",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory to import --store module:Class from (repeatable)",
    )
    parser.add_argument("--think-ms", type=float, default=40)
    parser.add_argument(
        "--interrupted-task-timeout-s",
        type=float,
        default=None,
        help="a2a-sdk 1.3's interrupted_task_timeout: release a task parked in input-required "
        "after this many idle seconds (default: never)",
    )
    parser.add_argument(
        "--ledger-timeout-ms",
        type=float,
        default=500,
        help="how long a call to the ledger may take before the turn fails (default 500: the "
        "simulated replica's ledger timeout, Timing::ledger_timeout in src/replica/mod.rs)",
    )
    parser.add_argument("--compose-ms", type=float, default=10)
    parser.add_argument(
        "--push",
        action="store_true",
        help="push notifications on: the card says pushNotifications, the SDK's in-memory "
        "config store and BasePushNotificationSender are wired (a2a-chaos live "
        "--allow-loopback-push passes it); default off",
    )
    parser.add_argument(
        "--webhook-via",
        default="",
        metavar="HOST:PORT",
        help="send every push to HOST:PORT whatever URL it names (a2a-chaos live: this "
        "replica's own link to the run's webhook); default: the URL's own address",
    )
    parser.add_argument(
        "--bearer",
        action="store_true",
        help="authenticate POST / by Bearer token (401 without one) and scope every task to "
        "the token's subject with the SDK's owner resolver, as a deployment's auth "
        "middleware does (the models with bearer = required; a2a-chaos live passes it)",
    )
    parser.add_argument(
        "--turns",
        type=int,
        default=DEFAULT_TURNS,
        help="length of a conversation of plain text messages (no a2a-chaos data part)",
    )
    args = parser.parse_args()
    # A2A_CHAOS_PEER_LOG=DEBUG shows the SDK's own steps (its ActiveTask's producer,
    # consumer and cancel), timed to the ms, in the run's replica-N.log.
    logging.basicConfig(
        level=os.environ.get("A2A_CHAOS_PEER_LOG", "WARNING"),
        stream=sys.stderr,
        format="%(asctime)s.%(msecs)03d %(name)s %(message)s",
        datefmt="%H:%M:%S",
    )
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


def watch_stalls():
    """A2A_CHAOS_PEER_STALLS=1: names what holds the event loop, in the replica's log.

    asyncio's debug mode logs every callback that runs longer than 10 ms with the
    coroutine it belongs to, and each garbage collection longer than 5 ms is logged with
    its generation, so a gap in the SDK's own steps (A2A_CHAOS_PEER_LOG=DEBUG) reads as
    the code that ran in it, or as a replica that was not running at all (no entry)."""
    if os.environ.get("A2A_CHAOS_PEER_STALLS") != "1":
        return
    import time

    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = 0.010
    logging.getLogger("asyncio").setLevel(logging.WARNING)
    started = {}

    def on_gc(phase, info):
        if phase == "start":
            started["at"] = time.perf_counter()
        elif "at" in started:
            took = (time.perf_counter() - started.pop("at")) * 1000
            if took > 5:
                LOG.warning("gc generation %s took %.1f ms", info.get("generation"), took)

    gc.callbacks.append(on_gc)


async def serve(args):
    # One event loop for the database engine and the server.
    watch_stalls()
    app = await build(args)
    # The heap the imports and the build made is moved out of the collector's reach, as
    # pre-fork Python servers do (gc.freeze). Without it the process's first full
    # collection walks all of it and holds the event loop 45-65 ms (measured with
    # A2A_CHAOS_PEER_STALLS=1) at a moment set by allocation counts, not by the scenario:
    # in a race the stall decides the order (1.3-versioned seed 240, docs/FIDELITY.md).
    # A stall a scenario wants is a fault it asks for.
    gc.collect()
    gc.freeze()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="off"
    )
    await uvicorn.Server(config).serve()


if __name__ == "__main__":
    main()
