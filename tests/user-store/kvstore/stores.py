"""The kvstore task stores: one table of JSON task blobs with a version counter.

Schema (created on ``initialize()``)::

    kv_tasks(task_id TEXT PRIMARY KEY, version INTEGER NOT NULL,
             state TEXT NOT NULL, body TEXT NOT NULL)
    kv_events(task_id TEXT, version INTEGER, data BLOB)    -- StreamingKVTaskStore only

``body`` is the task as protobuf JSON, ``state`` its status name (so a cancel can refuse a
terminal task in one statement), ``version`` counts the accepted saves of the task: 1, 2,
3, ... Every store is constructed from a SQLAlchemy async URL (``Class(db_url)``), the way
a2a-chaos's peer builds a ``--store module:Class``. Tasks are not scoped by owner or tenant:
this store serves one principal.
"""

import asyncio

from google.protobuf.json_format import MessageToJson, Parse
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import create_async_engine

from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskEventStream,
    TaskVersion,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import ListTasksResponse, StreamResponse, Task, TaskState
from a2a.utils.proto_utils import to_stream_response

TERMINAL = (
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
)
TERMINAL_NAMES = ", ".join(f"'{TaskState.Name(s)}'" for s in TERMINAL)


class KVTable:
    """The shared table, through one SQLAlchemy async engine per process."""

    def __init__(self, db_url):
        # Several processes share one SQLite file: wait for its lock rather than fail.
        connect_args = {"timeout": 30} if db_url.startswith("sqlite") else {}
        self.engine = create_async_engine(db_url, connect_args=connect_args)

    async def create(self):
        async with self.engine.begin() as conn:
            await conn.execute(
                text(
                    "CREATE TABLE IF NOT EXISTS kv_tasks ("
                    " task_id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
                    " state TEXT NOT NULL, body TEXT NOT NULL)"
                )
            )

    async def read(self, task_id):
        """``(task, version)`` of a stored task, or None."""
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    text("SELECT body, version FROM kv_tasks WHERE task_id = :id"),
                    {"id": task_id},
                )
            ).one_or_none()
        if row is None:
            return None
        return Parse(row.body, Task()), row.version

    async def read_all(self, context_id=None):
        async with self.engine.connect() as conn:
            rows = (await conn.execute(text("SELECT body FROM kv_tasks ORDER BY task_id"))).all()
        tasks = [Parse(r.body, Task()) for r in rows]
        return [t for t in tasks if not context_id or t.context_id == context_id]

    async def remove(self, task_id):
        async with self.engine.begin() as conn:
            await conn.execute(text("DELETE FROM kv_tasks WHERE task_id = :id"), {"id": task_id})


def _row(task, version):
    return {
        "id": task.id,
        "version": version,
        "state": TaskState.Name(task.status.state),
        "body": MessageToJson(task),
    }


class _KVBase:
    """What the stores share: construction from a URL, the schema, reads, list, delete."""

    def __init__(self, db_url):
        self.table = KVTable(db_url)

    async def initialize(self):
        await self.table.create()

    async def list(self, params, context):
        # A simplification: no paging, only the contextId filter.
        tasks = await self.table.read_all(params.context_id or None)
        return ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    async def delete(self, task_id, context):
        await self.table.remove(task_id)


class BuggyKVTaskStore(_KVBase, VersionedTaskStore):
    """A versioned store WITHOUT a version check: THE BUG.

    ``save`` reads the stored version, adds one and writes the task: a read-modify-write in
    two steps that ignores ``prev_version`` (and the terminal-task rule of a cancel). A
    replica holding an old copy of the task overwrites whatever another replica saved since,
    and gets a fresh version back as if all were well.
    """

    async def get(self, task_id, context):
        found = await self.table.read(task_id)
        if found is None:
            return None
        task, version = found
        return StoredTask(task, TaskVersion(version))

    async def save(self, task, *, event=None, prev=None, prev_version, context=None):
        found = await self.table.read(task.id)  # read ...
        version = (found[1] if found else 0) + 1  # ... modify ...
        async with self.table.engine.begin() as conn:  # ... write, whatever happened since
            if found is None:
                await conn.execute(
                    text(
                        "INSERT INTO kv_tasks (task_id, version, state, body)"
                        " VALUES (:id, :version, :state, :body)"
                    ),
                    _row(task, version),
                )
            else:
                await conn.execute(
                    text(
                        "UPDATE kv_tasks SET version = :version, state = :state, body = :body"
                        " WHERE task_id = :id"
                    ),
                    _row(task, version),
                )
        return TaskVersion(version)


class FixedKVTaskStore(_KVBase, VersionedTaskStore):
    """The same store with compare-and-swap on the version.

    - a first write (``prev_version`` MISSING) inserts version 1; a duplicate insert conflicts;
    - any other write lands only where the stored version is still ``prev_version``, and
      moves it to ``prev_version + 1``; otherwise ``ConcurrentTaskModificationError``;
    - a write to CANCELED overwrites a stored task that is not terminal, whatever its
      version, and conflicts when the task is missing or already terminal (the contract of
      ``VersionedTaskStore.save``).
    """

    async def get(self, task_id, context):
        found = await self.table.read(task_id)
        if found is None:
            return None
        task, version = found
        return StoredTask(task, TaskVersion(version))

    async def save(self, task, *, event=None, prev=None, prev_version, context=None):
        async with self.table.engine.begin() as conn:
            version = await self._compare_and_swap(conn, task, prev_version)
            await self._written(conn, task, event, version)
        return TaskVersion(version)

    async def _compare_and_swap(self, conn, task, prev_version):
        """Writes `task` if the stored version allows it; returns the new version."""
        if task.status.state == TaskState.TASK_STATE_CANCELED:
            row = (
                await conn.execute(
                    text(
                        "UPDATE kv_tasks SET version = version + 1, state = :state,"
                        " body = :body WHERE task_id = :id"
                        f" AND state NOT IN ({TERMINAL_NAMES}) RETURNING version"
                    ),
                    _row(task, 0),
                )
            ).one_or_none()
            if row is None:
                raise ConcurrentTaskModificationError(task.id)
            return row.version
        if prev_version.is_missing:
            try:
                await conn.execute(
                    text(
                        "INSERT INTO kv_tasks (task_id, version, state, body)"
                        " VALUES (:id, :version, :state, :body)"
                    ),
                    _row(task, 1),
                )
            except IntegrityError as e:
                raise ConcurrentTaskModificationError(task.id) from e
            return 1
        prev = prev_version._value  # noqa: SLF001 - TaskVersion has no public accessor
        result = await conn.execute(
            text(
                "UPDATE kv_tasks SET version = :version, state = :state, body = :body"
                " WHERE task_id = :id AND version = :prev"
            ),
            {**_row(task, prev + 1), "prev": prev},
        )
        if result.rowcount == 0:
            raise ConcurrentTaskModificationError(task.id)
        return prev + 1

    async def _written(self, conn, task, event, version):
        """Called inside the save's transaction once `task` is stored at `version`."""


class KVEventLog(TaskEventStream):
    """The event log of `StreamingKVTaskStore`: the ``kv_events`` rows of a task, polled.

    Each accepted save appends the event that produced it, at the task's new version, in
    the save's own transaction, so a replica that does not run the task can follow it.
    """

    def __init__(self, table, poll_s=0.5):
        self.table = table
        self.poll_s = poll_s

    async def publish(self, task_id, event):
        """Nothing to do: the store wrote the event with its save."""

    async def subscribe(self, task_id, *, after):
        seen = 0 if after.is_missing else after._value  # noqa: SLF001
        while True:
            async with self.table.engine.connect() as conn:
                rows = (
                    await conn.execute(
                        text(
                            "SELECT version, data FROM kv_events"
                            " WHERE task_id = :id AND version > :seen ORDER BY version"
                        ),
                        {"id": task_id, "seen": seen},
                    )
                ).all()
            for row in rows:
                seen = row.version
                response = StreamResponse()
                response.ParseFromString(row.data)
                event = getattr(response, response.WhichOneof("payload"))
                yield VersionedEvent(event=event, version=TaskVersion(row.version))
            if not rows:
                await asyncio.sleep(self.poll_s)

    async def destroy(self, task_id):
        """Nothing to do: the log is kept; subscribers stop at a terminal event."""


class StreamingKVTaskStore(FixedKVTaskStore):
    """`FixedKVTaskStore` plus an event log (``kv_events``), offered to the a2a-python peer
    as its ``event_stream`` attribute: a subscription on a replica that does not run the
    task then follows the other replica's saves (0.5 s polling)."""

    def __init__(self, db_url):
        super().__init__(db_url)
        self.event_stream = KVEventLog(self.table)

    async def initialize(self):
        await super().initialize()
        async with self.table.engine.begin() as conn:
            await conn.execute(
                text(
                    "CREATE TABLE IF NOT EXISTS kv_events ("
                    " task_id TEXT NOT NULL, version INTEGER NOT NULL, data BLOB NOT NULL,"
                    " PRIMARY KEY (task_id, version))"
                )
            )

    async def _written(self, conn, task, event, version):
        if event is not None:
            await conn.execute(
                text("INSERT INTO kv_events (task_id, version, data) VALUES (:id, :v, :data)"),
                {"id": task.id, "v": version, "data": to_stream_response(event).SerializeToString()},
            )


class PlainKVTaskStore(_KVBase, TaskStore):
    """The table as a plain ``TaskStore``: every save overwrites (last writer wins)."""

    async def get(self, task_id, context=None):
        found = await self.table.read(task_id)
        return None if found is None else found[0]

    async def save(self, task, context=None):
        found = await self.table.read(task.id)
        version = (found[1] if found else 0) + 1
        async with self.table.engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO kv_tasks (task_id, version, state, body)"
                    " VALUES (:id, :version, :state, :body)"
                    " ON CONFLICT (task_id) DO UPDATE SET version = excluded.version,"
                    " state = excluded.state, body = excluded.body"
                ),
                _row(task, version),
            )
