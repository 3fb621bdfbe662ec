"""a2a-sdk 1.3.0 on PostgreSQL: after the database restarts (or fails over, or a proxy
drops idle sessions), every replica answers its next request -32603: the SDK's stores run on
a pooled connection that is dead and do not retry a disconnect.

Needs only a2a-sdk 1.3.0 and uvicorn (pip install "a2a-sdk[http-server,postgresql]==1.3.0"
uvicorn) and a PostgreSQL server whose role may end its own sessions:

    export A2A_FINDING_DB=postgresql+asyncpg://USER@127.0.0.1:5432/DB
    python f05-stale-pool-after-db-restart.py
    python f05-stale-pool-after-db-restart.py --restart "pg_ctl -D DATA -m fast restart"
    python f05-stale-pool-after-db-restart.py --pre-ping    # the workaround: not reproduced

Two replicas of the SDK's own JSON-RPC server (DefaultRequestHandler, one engine, store and
ActiveTaskRegistry each) listen on loopback ports and share the database in cluster mode
(VersionedDatabaseTaskStore + DatabaseTaskEventStream; --store plain for DatabaseTaskStore).
The engines are built as the SDK's docs build them: create_async_engine(url), no pre-ping.

  1. one conversation turn on each replica: ok (each engine now pools a connection).
  2. the database drops every session: by default the script ends them all with
     pg_terminate_backend (what a restart or a failover does to them); --restart CMD runs a
     real restart command instead and waits until the server answers again.
  3. two new conversations on each replica, one after the other.

Exit 1 and "REPRODUCED" when a replica answered -32603 after the database was back, 0 when
it does not, 2 on an error.
"""

import argparse
import asyncio
import logging
import os
import subprocess
import socket
import sys
import traceback
import uuid

import httpx
import uvicorn
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.cluster import DatabaseTaskEventStream, VersionedDatabaseTaskStore
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import DatabaseTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities, AgentCard, AgentInterface, Part, Task, TaskState, TaskStatus,
)

TURNS = 3  # turns 1 and 2 end input-required, turn 3 completes
PRE_PING = False  # --pre-ping: the workaround (SQLAlchemy checks a connection before use)


class Agent(AgentExecutor):
    """Turn N ("turn N" in the message): working, one side effect, artifact turn-N, then
    input-required (completed on the last turn)."""

    def __init__(self, replica, effects):
        self.replica, self.effects = replica, effects

    async def execute(self, context: RequestContext, queue):
        turn = int(context.message.parts[0].text.split()[1])
        if context.current_task is None:
            await queue.enqueue_event(Task(
                id=context.task_id, context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message]))
        updater = TaskUpdater(queue, context.task_id, context.context_id)
        await updater.start_work()
        self.effects.append((self.replica, turn))  # the side effect (a payment, an email)
        await updater.add_artifact([Part(text=f"result {turn}")], artifact_id=f"turn-{turn}",
                                   name=f"turn-{turn}")
        reply = updater.new_agent_message([Part(text=f"done {turn}")])
        await (updater.complete(reply) if turn >= TURNS else updater.requires_input(reply))

    async def cancel(self, context: RequestContext, queue):
        await TaskUpdater(queue, context.task_id, context.context_id).cancel()


async def start_replica(name, db_url, store_kind, effects):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    args = {"timeout": 30} if db_url.startswith("sqlite") else {}
    engine = create_async_engine(db_url, connect_args=args, pool_pre_ping=PRE_PING)
    kwargs = {}
    if store_kind == "versioned":
        store = VersionedDatabaseTaskStore(engine)
        kwargs["event_stream"] = DatabaseTaskEventStream(engine)
        await kwargs["event_stream"].initialize()
    else:
        store = DatabaseTaskStore(engine)
    await store.initialize()
    card = AgentCard(
        name="finding", description="finding", version="1.0.0",
        supported_interfaces=[AgentInterface(
            url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"])
    handler = DefaultRequestHandler(agent_executor=Agent(name, effects), task_store=store,
                                    agent_card=card, **kwargs)
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/"))
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.01)
    return {"port": port, "server": server, "serving": serving, "handler": handler,
            "engine": engine}


async def stop_replica(r):
    r["server"].should_exit = True
    for step in (r["serving"], r["handler"].aclose(), r["engine"].dispose()):
        try:
            await asyncio.wait_for(step, 5)
        except (Exception, asyncio.CancelledError):
            pass


async def rpc(client, replica, method, params):
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    r = await client.post(f"http://127.0.0.1:{replica['port']}/", json=body,
                          headers={"A2A-Version": "1.0"}, timeout=10)
    return r.json()


def send(task_id, context_id, turn):
    message = {"messageId": str(uuid.uuid4()), "contextId": context_id, "role": "ROLE_USER",
               "parts": [{"text": f"turn {turn}"}]}
    if task_id:
        message["taskId"] = task_id
    return {"message": message}


def brief(task):
    return (f"{task['status']['state']} artifacts={[a['name'] for a in task.get('artifacts', [])]}"
            f" user-messages={sum(1 for m in task.get('history', []) if m['role'] == 'ROLE_USER')}")


async def drop_sessions(db_url, restart):
    """Every session of the database ends, as at a restart; then the server answers again."""
    if restart:
        subprocess.run(restart, shell=True, check=True, timeout=60)
    else:
        admin = create_async_engine(db_url, isolation_level="AUTOCOMMIT")
        async with admin.connect() as conn:
            ended = (await conn.execute(text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"))).scalar()
        await admin.dispose()
        print(f"  pg_terminate_backend ended {ended} session(s)")
    probe = create_async_engine(db_url)
    for _ in range(100):  # until the server takes sessions again (up to 20 s)
        try:
            async with probe.connect() as conn:
                await conn.execute(text("SELECT 1"))
            break
        except Exception:
            await asyncio.sleep(0.2)
    await probe.dispose()
    print("  the database answers again")


def outcome(answer):
    if "result" in answer:
        return f"ok {answer['result']['task']['status']['state']}"
    return f"error {answer['error']['code']} {answer['error']['message'][:70]!r}..."


async def main(store_kind, db_url, restart):
    effects = []
    replicas = [await start_replica(f"replica-{i}", db_url, store_kind, effects) for i in (0, 1)]
    failed = 0
    try:
        async with httpx.AsyncClient() as client:
            print("before the restart:")
            for i, r in enumerate(replicas):
                answer = await rpc(client, r, "SendMessage", send(None, str(uuid.uuid4()), 1))
                print(f"  turn 1 -> replica-{i}: {outcome(answer)}")
            print("the database restarts:")
            await drop_sessions(db_url, restart)
            print("after the restart:")
            for i, r in enumerate(replicas):
                for attempt in (1, 2):
                    answer = await rpc(client, r, "SendMessage", send(None, str(uuid.uuid4()), 1))
                    print(f"  turn 1 -> replica-{i} (request {attempt}): {outcome(answer)}")
                    failed += "error" in answer
    finally:
        for r in replicas:
            await stop_replica(r)
    print(f"side effects: {len(effects)} (one per request answered ok)")
    if failed:
        print(f"REPRODUCED: {failed} request(s) answered an error with the database up again;"
              " each replica's first store call ran on a dead pooled connection")
        return 1
    print("not reproduced: every request after the restart was served")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", choices=["versioned", "plain"], default="versioned")
    parser.add_argument("--restart", metavar="CMD",
                        help="a shell command that restarts the server (default: end every"
                             " session with pg_terminate_backend)")
    parser.add_argument("--pre-ping", action="store_true",
                        help="build the engines with pool_pre_ping=True (the workaround)")
    parser.add_argument("-v", action="store_true", help="show the SDK's logs")
    opts = parser.parse_args()
    logging.basicConfig(level=logging.INFO if opts.v else logging.CRITICAL)
    PRE_PING = opts.pre_ping
    url = os.environ.get("A2A_FINDING_DB", "")
    if not url.startswith("postgresql"):
        sys.exit("set A2A_FINDING_DB to a postgresql+asyncpg:// URL (this finding needs a server)")
    print(f"a2a-sdk 1.3.0, store {opts.store}, database {url.split('@')[-1]}"
          + (", pool_pre_ping=True" if PRE_PING else ""))
    try:
        code = asyncio.run(asyncio.wait_for(main(opts.store, url, opts.restart), 120))
    except Exception:  # a crash or a timeout is not a reproduction
        traceback.print_exc()
        code = 2
    sys.exit(code)
