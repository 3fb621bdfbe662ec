"""a2a-sdk 1.3.0: a cancel on the replica where a task waits for input writes CANCELED on
that replica's stale copy and undoes the turns other replicas saved since (a lost write).

Needs only a2a-sdk 1.3.0 and uvicorn (pip install "a2a-sdk[http-server,sqlite,postgresql]==1.3.0"
uvicorn). Two replicas of the SDK's own JSON-RPC server (DefaultRequestHandler, one
engine, store and ActiveTaskRegistry each) listen on loopback ports and share one database:

    python f01-parked-cancel-undoes-later-turns.py               # cluster mode, SQLite file
    python f01-parked-cancel-undoes-later-turns.py --store plain # DatabaseTaskStore
    A2A_FINDING_DB=postgresql+asyncpg://USER@127.0.0.1:5432/DB python f01-...py

Cluster mode is VersionedDatabaseTaskStore + DatabaseTaskEventStream, the SDK's setup for
replicas. The client (plain httpx, A2A 1.0 JSON-RPC):

  1. turn 1 -> replica 0: the task ends input-required; replica 0 keeps its ActiveTask.
  2. turn 2 -> replica 1: acknowledged input-required with artifact turn-2.
  3. CancelTask -> replica 0: ok, CANCELED.
  4. GetTask: CANCELED, but artifact turn-2 and the turn-2 message are gone.

Exit 1 and "REPRODUCED" when the acknowledged turn 2 is missing from the final task, 0 when
it does not, 2 on an error.
"""

import argparse
import asyncio
import logging
import os
import socket
import sys
import tempfile
import traceback
import uuid

import httpx
import uvicorn
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
    engine = create_async_engine(db_url, connect_args=args)
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


async def main(store_kind, db_url):
    effects = []
    a = await start_replica("replica-0", db_url, store_kind, effects)
    b = await start_replica("replica-1", db_url, store_kind, effects)
    try:
        async with httpx.AsyncClient() as client:
            context_id = str(uuid.uuid4())
            r1 = await rpc(client, a, "SendMessage", send(None, context_id, 1))
            task = r1["result"]["task"]
            print(f"turn 1 -> replica-0: {brief(task)}")
            r2 = await rpc(client, b, "SendMessage", send(task["id"], context_id, 2))
            print(f"turn 2 -> replica-1: {brief(r2['result']['task'])}")
            seen = await rpc(client, b, "GetTask", {"id": task["id"]})
            print(f"GetTask:             {brief(seen['result'])}")
            c = await rpc(client, a, "CancelTask", {"id": task["id"]})
            print(f"cancel -> replica-0: {brief(c['result']) if 'result' in c else c['error']}")
            final = (await rpc(client, b, "GetTask", {"id": task["id"]}))["result"]
            print(f"GetTask:             {brief(final)}")
    finally:
        await stop_replica(a)
        await stop_replica(b)
    names = [x["name"] for x in final.get("artifacts", [])]
    if "turn-2" not in names:
        print("REPRODUCED: turn 2 was acknowledged by replica-1 (artifact turn-2), and the cancel"
              " on replica-0 wrote CANCELED on the copy it cached at turn 1: turn 2 is lost")
        return 1
    print("not reproduced: the final task keeps turn 2")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", choices=["versioned", "plain"], default="versioned")
    parser.add_argument("-v", action="store_true", help="show the SDK's logs")
    opts = parser.parse_args()
    logging.basicConfig(level=logging.INFO if opts.v else logging.CRITICAL)
    url = os.environ.get("A2A_FINDING_DB")
    tmp = None
    if not url:
        tmp = tempfile.TemporaryDirectory()
        url = f"sqlite+aiosqlite:///{tmp.name}/tasks.db"
    print(f"a2a-sdk 1.3.0, store {opts.store}, database {url.split('@')[-1]}")
    try:
        code = asyncio.run(asyncio.wait_for(main(opts.store, url), 60))
    except Exception:  # a crash or a timeout is not a reproduction
        traceback.print_exc()
        code = 2
    sys.exit(code)
