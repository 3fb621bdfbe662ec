"""kvstore: a user-written a2a-sdk task store on a plain key-value table (tests/user-store/).

This is the kind of store a team writes when the SDK's own does not fit: one table of JSON
blobs on whatever database the replicas already share, reached through the same SQLAlchemy
URL. a2a-chaos's test peer runs it with ``server.py --store kvstore:FixedKVTaskStore
--pythonpath tests/user-store`` (see tests/user-store/README.md and docs/PEERS.md).

- `BuggyKVTaskStore`: a ``VersionedTaskStore`` whose save is a read-modify-write that never
  looks at ``prev_version``: it reads the stored version, adds one and writes. Concurrent
  continuations on two replicas overwrite each other, and the SDK never hears of a conflict.
- `FixedKVTaskStore`: its twin with compare-and-swap on the version: the write lands only
  when the stored version is still ``prev_version``, else ``ConcurrentTaskModificationError``.
- `StreamingKVTaskStore`: the fixed store plus an event log (``kv_events``), offered as its
  ``event_stream``, so that a replica that does not run a task can stream it.
- `PlainKVTaskStore`: the same table as a plain ``TaskStore`` (last writer wins, no versions).
"""

from kvstore.stores import (
    BuggyKVTaskStore,
    FixedKVTaskStore,
    KVEventLog,
    PlainKVTaskStore,
    StreamingKVTaskStore,
)

__all__ = [
    "BuggyKVTaskStore",
    "FixedKVTaskStore",
    "KVEventLog",
    "PlainKVTaskStore",
    "StreamingKVTaskStore",
]
