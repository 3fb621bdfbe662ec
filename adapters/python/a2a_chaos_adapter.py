"""a2a-chaos adapter for a2a-python (PyPI ``a2a-sdk``) servers.

Drop this one file into your server's code base to let ``a2a-chaos live`` judge YOUR
server: it reports each business side effect and each task-store save to the a2a-chaos
ledger of the run (the contract is docs/PEERS.md). It needs only the standard library and
``a2a-sdk`` (1.1 or newer; ``VersionedTaskStore`` needs 1.2+), and does nothing at all when
no ledger is configured, so it can stay in production code.

Usage::

    from a2a_chaos_adapter import Chaos

    # --ledger / --name from the a2a-chaos peer template, or $A2A_CHAOS_LEDGER and
    # $A2A_CHAOS_REPLICA; with neither, every call below is a no-op pass-through.
    chaos = Chaos(ledger=args.ledger, replica=args.name)

    # (b) every save of your store is reported (plain TaskStore or VersionedTaskStore)
    store = chaos.observe_store(VersionedDatabaseTaskStore(engine))

    # (a) the executor wrapper makes the current turn known to the effect reporter
    executor = chaos.executor(MyAgentExecutor())
    handler = DefaultRequestHandler(agent_executor=executor, task_store=store, ...,
                                    event_stream=DatabaseTaskEventStream(engine))

    # the business side effect, wherever your executor calls it:
    @chaos.effect(key=lambda order: f"order-{order.id}")   # key: optional idempotency key
    async def place_order(order):
        ...

    # or, without the decorator, right before performing the effect:
    await chaos.report_effect(key=f"order-{order.id}")

What is reported (field by field in docs/PEERS.md):

- ``POST {ledger}/effect`` before the effect runs: task_id, context_id, conversation, turn,
  message_id, replica, key, sent_ms. The conversation and turn come from the message's
  a2a-chaos data part ``{conversation, turn, turns}`` when there is one (a2a-chaos always
  sends it); for a plain text message the conversation is the contextId and the turn is the
  number of distinct user messages already in the task's history, plus one.
- ``POST {ledger}/save`` for each save: a plain store's save is reported just before it is
  made (without versions: a2a-chaos numbers them and infers what each was built on); a
  versioned store's save is reported once it was accepted, with its versions.

The wrappers only watch: what the SDK reads, caches and writes is unchanged.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import os
import runpy
import sys
import urllib.request
from dataclasses import dataclass

from google.protobuf.json_format import MessageToDict

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import Role, TaskState

try:  # a2a-sdk 1.2+: cluster mode
    from a2a.server.cluster import VersionedTaskStore
except ImportError:  # 1.1: no a2a.server.cluster
    VersionedTaskStore = None

__all__ = [
    "Chaos",
    "ReplicaHeader",
    "effect",
    "instrument",
    "port",
    "ObservedPlainStore",
    "ObservedVersionedStore",
    "Turn",
    "post",
    "post_json",
    "save_report",
    "state_name",
    "turn_of",
]

LOG = logging.getLogger("a2a-chaos-adapter")

#: The length of a conversation made of plain text messages (no a2a-chaos data part):
#: turn 1 ends input-required, turn 2 completes.
DEFAULT_TURNS = 2


# --- transport -------------------------------------------------------------------------


def post_json(url, body, timeout=5.0):
    """POSTs JSON with the standard library (no extra dependency); returns the JSON answer."""
    data = json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"{}")


async def post(url, body, timeout=5.0):
    """`post_json` in a worker thread, so the event loop keeps serving."""
    return await asyncio.to_thread(post_json, url, body, timeout)


async def post_quietly(url, body, timeout=5.0):
    """`post`, for a report that may be lost (an older a2a-chaos has no such route)."""
    try:
        await post(url, body, timeout)
    except Exception:  # noqa: BLE001 - a lost read report only makes the observer laxer
        pass


# --- turns -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """Which turn of which conversation a message is."""

    conversation: str
    turn: int
    turns: int
    #: True when read from the a2a-chaos data part, False when derived from a plain message.
    scripted: bool


def _data_part_turn(message):
    """The a2a-chaos data part ``{conversation, turn, turns}`` of a message, if any.

    Numbers in a protobuf Struct are doubles, so ``1`` arrives as ``1.0``: ``int()`` makes
    it whole again (a fraction is truncated).
    """
    for part in message.parts:
        if part.HasField("data"):
            data = MessageToDict(part.data)
            if isinstance(data, dict) and {"conversation", "turn", "turns"} <= data.keys():
                return data["conversation"], int(data["turn"]), int(data["turns"])
    return None


def turn_of(message, task=None, context_id=None, default_turns=DEFAULT_TURNS):
    """The turn a message is, on `task` (the task it continues, or None for a new one).

    With the a2a-chaos data part, that part says. Otherwise the conversation is named after
    the contextId (the message's, else the task's, else `context_id`) and the turn is the
    number of distinct user messages already in the task's history (not counting this
    message, which the SDK may already have appended, nor an earlier attempt of it) plus
    one; a conversation is `default_turns` long.
    """
    scripted = _data_part_turn(message)
    if scripted is not None:
        conversation, turn, turns = scripted
        return Turn(conversation, turn, turns, True)
    conversation = (
        message.context_id or (task.context_id if task is not None else "") or context_id or ""
    )
    earlier = set()
    if task is not None:
        for m in task.history:
            if m.role == Role.ROLE_USER and m.message_id != message.message_id:
                earlier.add(m.message_id)
    return Turn(conversation, len(earlier) + 1, default_turns, False)


def state_name(state):
    """The a2a-chaos name of a task state: ``TASK_STATE_INPUT_REQUIRED`` -> ``input-required``."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


# --- saves -----------------------------------------------------------------------------


def save_report(task, replica, mode, before=None, based_on=None, version=None):
    """The body of ``POST {ledger}/save`` for one save of `task` (docs/PEERS.md)."""
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
    """A plain store that reports each save before making it (the observer numbers them),
    and each read after it (what a replica read is what its next save is built on)."""

    def __init__(self, inner, replica, ledger):
        self.inner = inner
        self.replica = replica
        self.ledger = ledger

    async def get(self, task_id, context=None, *args, **kwargs):
        task = await self.inner.get(task_id, context, *args, **kwargs)
        if task is not None:
            # After the read: the observer books the newest version it knows of, never an
            # older one than this replica saw (src/live/observer.rs).
            await post_quietly(
                f"{self.ledger}/read",
                {"task_id": task.id, "context_id": task.context_id, "replica": self.replica},
            )
        return task

    async def save(self, task, context=None, *args, **kwargs):
        await post(f"{self.ledger}/save", save_report(task, self.replica, "overwrite"))
        await self.inner.save(task, context, *args, **kwargs)

    async def list(self, *args, **kwargs):
        return await self.inner.list(*args, **kwargs)

    async def delete(self, *args, **kwargs):
        return await self.inner.delete(*args, **kwargs)


def _int_version(version):
    """The integer a TaskVersion wraps; None for MISSING; raises TypeError otherwise."""
    if version.is_missing:
        return None
    value = version._value  # noqa: SLF001 - TaskVersion has no public accessor
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not an integer version: {value!r}")
    return value


if VersionedTaskStore is not None:

    class ObservedVersionedStore(VersionedTaskStore):
        """A versioned store, reporting each accepted save with the store's own versions.

        `versions` says what the store's versions are:

        - ``"counter"`` (default): integers counting the accepted saves of each task, 1, 2,
          3, ... (the SDK's ``VersionedDatabaseTaskStore``). The version stored before a save
          is then its new version minus one, whatever `prev_version` the SDK passed, so a
          store that accepts a save built on an older version than the stored one (no
          compare-and-swap) is reported as such and ``versions-monotonic`` fails.
        - ``"opaque"``: any increasing integers (a global sequence, a timestamp). The version
          before is taken to be `prev_version`, which is only true of a store whose CAS
          works: a store that ignores `prev_version` is then caught only by what it breaks
          (lost writes, a terminal task reopened), or by versions that repeat or go back.

        A version that is not an integer cannot be reported: the save is then reported as a
        plain overwrite (no versions; a2a-chaos infers them from the content), with a warning
        in the log the first time.
        """

        def __init__(self, inner, replica, ledger, versions="counter"):
            if versions not in ("counter", "opaque"):
                raise ValueError(f"versions must be 'counter' or 'opaque', not {versions!r}")
            self.inner = inner
            self.replica = replica
            self.ledger = ledger
            self.versions = versions
            self._warned = False

        async def save(self, task, *, event, prev, prev_version, context):
            version = await self.inner.save(
                task, event=event, prev=prev, prev_version=prev_version, context=context
            )
            await post(f"{self.ledger}/save", self._report(task, prev_version, version))
            return version

        def _report(self, task, prev_version, version):
            try:
                prev_value = _int_version(prev_version)
                new_value = _int_version(version)
                if new_value is None:
                    raise TypeError("the store returned TaskVersion.MISSING")
            except TypeError as e:
                if not self._warned:
                    LOG.warning("a2a-chaos: reporting saves without versions (%s)", e)
                    self._warned = True
                return save_report(task, self.replica, "overwrite")
            if task.status.state == TaskState.TASK_STATE_CANCELED:
                # The cancel save skips the version check (A2A-BEHAVIOURS.md §2.1):
                # a2a-chaos works out the version before from the new one.
                return save_report(
                    task, self.replica, "cancel", based_on=prev_value, version=new_value
                )
            if self.versions == "counter":
                before = new_value - 1 if new_value > 1 else None
            else:
                before = prev_value
            return save_report(
                task, self.replica, "cas", before=before, based_on=prev_value, version=new_value
            )

        async def get(self, task_id, context):
            return await self.inner.get(task_id, context)

        async def list(self, params, context):
            return await self.inner.list(params, context)

        async def delete(self, task_id, context):
            return await self.inner.delete(task_id, context)

else:  # a2a-sdk 1.1
    ObservedVersionedStore = None


# --- the adapter -----------------------------------------------------------------------

_OBSERVED = tuple(c for c in (ObservedPlainStore, ObservedVersionedStore) if c is not None)

#: The request an executor wrapped by `Chaos.executor` is running (per asyncio task).
_CURRENT = contextvars.ContextVar("a2a_chaos_request", default=None)


class _ReportingExecutor(AgentExecutor):
    """Runs the wrapped executor with its RequestContext known to `Chaos.report_effect`."""

    def __init__(self, inner):
        self.inner = inner

    async def execute(self, context, event_queue):
        token = _CURRENT.set(context)
        try:
            return await self.inner.execute(context, event_queue)
        finally:
            _CURRENT.reset(token)

    async def cancel(self, context, event_queue):
        return await self.inner.cancel(context, event_queue)


class Chaos:
    """Reports business effects and task-store saves of one replica to an a2a-chaos ledger.

    `ledger` is the ledger's base URL (``http://127.0.0.1:PORT``, the ``{ledger}``
    placeholder); `replica` the replica's name (``{name}``, ``replica-N``). Either defaults
    to ``$A2A_CHAOS_LEDGER`` / ``$A2A_CHAOS_REPLICA``. Without a ledger the adapter is
    disabled: the wrappers hand back what they were given and nothing is sent.

    Effects go to `ledger`: they are the replica's business traffic, and a scenario's fault
    on that link must reach them. Saves and reads are only watched, so they go to `reports`
    (default ``$A2A_CHAOS_REPORTS``, which ``live`` sets to the ledger itself, around the
    link it faults; else `ledger`): a held link must not stall the store, nor hide when a
    save happened.
    """

    def __init__(
        self, ledger=None, replica=None, timeout=5.0, default_turns=DEFAULT_TURNS, reports=None
    ):
        ledger = ledger or os.environ.get("A2A_CHAOS_LEDGER") or None
        self.ledger = ledger.rstrip("/") if ledger else None
        reports = reports or os.environ.get("A2A_CHAOS_REPORTS") or self.ledger
        self.reports = reports.rstrip("/") if reports else None
        self.replica = replica or os.environ.get("A2A_CHAOS_REPLICA") or "replica-0"
        self.timeout = timeout
        self.default_turns = default_turns

    @property
    def enabled(self):
        """Whether a ledger is configured."""
        return self.ledger is not None

    # (b) saves

    def observe_store(self, store, versions="counter"):
        """`store`, wrapped so that each save is reported (see ObservedVersionedStore for
        `versions`). A ``VersionedTaskStore`` stays one (the SDK then runs in cluster mode);
        any other ``TaskStore`` is observed as a plain store."""
        if not self.enabled or isinstance(store, _OBSERVED):
            return store
        if VersionedTaskStore is not None and isinstance(store, VersionedTaskStore):
            return ObservedVersionedStore(store, self.replica, self.reports, versions)
        if isinstance(store, TaskStore):
            return ObservedPlainStore(store, self.replica, self.reports)
        raise TypeError(
            f"{type(store).__name__} is neither an a2a-sdk TaskStore nor a VersionedTaskStore"
        )

    # (a) effects

    def executor(self, executor):
        """`executor`, wrapped so that `report_effect` and `effect` know the current turn."""
        if not self.enabled or isinstance(executor, _ReportingExecutor):
            return executor
        return _ReportingExecutor(executor)

    # (c) serving: the port a2a-chaos gives, and the replica's name in every answer

    def app(self, app):
        """`app` (any ASGI app: Starlette, FastAPI), naming this replica in every answer
        (``x-a2a-chaos-replica``); `app` itself when disabled."""
        if not self.enabled or isinstance(app, ReplicaHeader):
            return app
        return ReplicaHeader(app, self.replica)

    def serve(self, app, host="127.0.0.1", port=8000, **kwargs):
        """``uvicorn.run(app, host=host, port=port)``, but on ``$A2A_CHAOS_PORT`` when
        a2a-chaos started this process, and with `app` wrapped by `Chaos.app`."""
        import uvicorn

        uvicorn.run(self.app(app), host=host, port=_port(port), **kwargs)

    def turn(self, context=None):
        """The `Turn` of the request `context` (default: the one running now)."""
        context = context or _CURRENT.get()
        if context is None:
            raise RuntimeError(
                "a2a-chaos: no current request; wrap your AgentExecutor with chaos.executor() "
                "or pass the RequestContext"
            )
        return turn_of(
            context.message, context.current_task, context.context_id, self.default_turns
        )

    def effect_report(self, context=None, *, key=None, conversation=None, turn=None):
        """The body of ``POST {ledger}/effect`` for the request `context` (default: the one
        running now); `conversation` and `turn` default to the message's `Turn`."""
        context = context or _CURRENT.get()
        if context is None:
            raise RuntimeError(
                "a2a-chaos: no current request; wrap your AgentExecutor with chaos.executor() "
                "or pass the RequestContext"
            )
        if conversation is None or turn is None:
            t = self.turn(context)
            conversation = t.conversation if conversation is None else conversation
            turn = t.turn if turn is None else turn
        return {
            "task_id": context.task_id,
            "context_id": context.context_id,
            "conversation": conversation,
            "turn": turn,
            "message_id": context.message.message_id,
            "replica": self.replica,
            "key": key,
            "sent_ms": 0,
        }

    async def report_effect(self, context=None, *, key=None, conversation=None, turn=None):
        """Reports one business effect, before it is performed; returns whether the ledger
        applied it (False: an effect with the same `key` was applied before), or None when
        disabled. The answer may be held by the scenario (``hold-effect``): perform the
        effect only after this returns."""
        if not self.enabled:
            return None
        body = self.effect_report(context, key=key, conversation=conversation, turn=turn)
        answer = await post(f"{self.ledger}/effect", body, self.timeout)
        return answer.get("applied")

    def effect(self, key=None):
        """Decorator for the async function that performs the business side effect: each
        call is reported first. `key` is a string, or a function of the call's arguments
        returning the idempotency key (report one only if your effect really is idempotent
        on it: the ledger then counts the effect once, as your system would apply it)."""

        def wrap(func):
            @functools.wraps(func)
            async def reported(*args, **kwargs):
                if self.enabled:
                    k = key(*args, **kwargs) if callable(key) else key
                    await self.report_effect(key=k)
                return await func(*args, **kwargs)

            return reported

        return wrap


# --- serving ---------------------------------------------------------------------------


class ReplicaHeader:
    """ASGI middleware naming the replica in every answer (``x-a2a-chaos-replica``), so
    that a2a-chaos's history records which replica answered each call."""

    def __init__(self, app, name):
        self.app = app
        self.header = (b"x-a2a-chaos-replica", name.encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_named(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + [self.header]
            await send(message)

        return await self.app(scope, receive, send_named)


def _port(default):
    """``$A2A_CHAOS_PORT`` when set (a2a-chaos started this process), else `default`."""
    value = os.environ.get("A2A_CHAOS_PORT")
    return int(value) if value else default


def port(default=None):
    """The port to listen on: ``$A2A_CHAOS_PORT`` under a2a-chaos, else `default`."""
    return _port(default)


_DEFAULT = None


def _default_chaos():
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Chaos()
    return _DEFAULT


def effect(key=None):
    """`Chaos.effect` of a `Chaos` configured from the environment: the one line to add
    above your business side effect (``@effect()``). The turn it reports is the request
    the wrapped executor runs (`instrument` or `Chaos.executor` wraps it)."""
    return _default_chaos().effect(key)


def instrument(chaos=None):
    """Instruments an a2a-sdk server without changing its code: every
    ``DefaultRequestHandler`` built afterwards gets its executor wrapped
    (`Chaos.executor`) and its task store observed (`Chaos.observe_store`), and every
    ``uvicorn`` server listens on ``$A2A_CHAOS_PORT`` with the replica header
    (`Chaos.app`). Does nothing without a ledger. Returns the `Chaos` used.

    Call it before the server builds its handler; ``python a2a_chaos_adapter.py run
    server.py ARGS...`` calls it, then runs ``server.py`` as ``__main__``."""
    chaos = chaos or _default_chaos()
    if not chaos.enabled:
        return chaos
    from a2a.server import request_handlers

    handler = request_handlers.DefaultRequestHandler
    original = handler.__init__
    if not getattr(original, "_a2a_chaos", False):
        signature = inspect.signature(original)

        @functools.wraps(original)
        def init(self, *args, **kwargs):
            bound = signature.bind(self, *args, **kwargs)
            given = bound.arguments
            if given.get("agent_executor") is not None:
                given["agent_executor"] = chaos.executor(given["agent_executor"])
            if given.get("task_store") is not None:
                given["task_store"] = chaos.observe_store(given["task_store"])
            original(*bound.args, **bound.kwargs)

        init._a2a_chaos = True
        handler.__init__ = init
    try:
        import uvicorn
    except ImportError:  # served otherwise: the server must read $A2A_CHAOS_PORT itself
        return chaos
    config_init = uvicorn.Config.__init__
    if not getattr(config_init, "_a2a_chaos", False):

        @functools.wraps(config_init)
        def config(self, app, *args, **kwargs):
            if isinstance(app, str):
                LOG.warning(
                    "a2a-chaos: uvicorn was given the import string %r: no replica header", app
                )
            else:
                app = chaos.app(app)
            config_init(self, app, *args, **kwargs)
            self.port = _port(self.port)

        config._a2a_chaos = True
        uvicorn.Config.__init__ = config
    return chaos


def main(argv=None):
    """``python a2a_chaos_adapter.py run SCRIPT [ARGS...]`` (or ``run -m MODULE``): runs
    your server instrumented (`instrument`), with no change to its code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[0] != "run":
        sys.exit("usage: a2a_chaos_adapter.py run SCRIPT [ARGS...] | run -m MODULE [ARGS...]")
    # The adapter under its importable name, so that `from a2a_chaos_adapter import effect`
    # in the server finds this very module (and its executor's current request).
    sys.modules.setdefault("a2a_chaos_adapter", sys.modules[__name__])
    instrument()
    if argv[1] == "-m":
        sys.argv = [argv[2], *argv[3:]]
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv[1:]
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[1])))
        runpy.run_path(argv[1], run_name="__main__")


if __name__ == "__main__":
    main()
