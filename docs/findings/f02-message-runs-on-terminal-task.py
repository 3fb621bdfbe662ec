"""a2a-sdk 1.3.0: outside cluster mode, a message runs on a task that is already COMPLETED
or CANCELED: the ActiveTask's producer checks the task's state only when an event stream is
configured.

Needs only a2a-sdk 1.3.0 and uvicorn (pip install "a2a-sdk[http-server,sqlite,postgresql]==1.3.0"
uvicorn).
The SDK's own JSON-RPC server (DefaultRequestHandler) on loopback ports, driven with plain
httpx (A2A 1.0 JSON-RPC). Two cases:

  queued (one server, the SDK's default InMemoryTaskStore): turn 1 ends input-required; the
     last turn (turn 2) is sent, and while it runs the same message is sent again (a client
     retry, same messageId) to the same server. The retry is answered with turn 2's
     COMPLETED task; then the SDK runs it anyway on the COMPLETED task: GetTask says
     WORKING, and the side effect of turn 2 happens twice.
  remote-cancel (two replicas sharing the SDK's DatabaseTaskStore, no event stream): turn 1
     -> replica 0 ends input-required; CancelTask -> replica 1: ok CANCELED; turn 2 ->
     replica 0 is answered ok, runs its side effect and reopens the canceled task.

    python f02-message-runs-on-terminal-task.py               # both cases, SQLite file
    python f02-message-runs-on-terminal-task.py --cluster     # contrast: cluster mode refuses
    A2A_FINDING_DB=postgresql+asyncpg://USER@127.0.0.1:5432/DB python f02-...py

The only timing hold: the agent waits on an asyncio.Event in turn 2, so that the retry
arrives while turn 2 runs, and so that GetTask can look while the retry runs.

Exit 1 and "REPRODUCED" when a message ran on a terminal task in either case, 0 when it does
not, 2 on an error.
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
from a2a.server.tasks import DatabaseTaskStore, InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities, AgentCard, AgentInterface, Part, Task, TaskState, TaskStatus,
)

TURNS = 2  # turn 1 ends input-required, turn 2 completes
GATES = []  # in the queued case, each run of turn 2 waits at its (reached, release) pair


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
        if turn == 2 and GATES:
            reached, release = GATES.pop(0)
            reached.set()
            await asyncio.wait_for(release.wait(), 10)
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
    elif store_kind == "memory":
        store = InMemoryTaskStore()
    else:
        store = DatabaseTaskStore(engine)
    if store_kind != "memory":
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


def outcome(answer):
    if "result" in answer:
        return brief(answer["result"]["task"])
    return f"error {answer['error']['code']} {answer['error']['message'][:50]!r}"


async def queued(client, db_url, store_kind):
    """One server; a retry of the last turn arrives while that turn runs."""
    effects = []
    gates = [(asyncio.Event(), asyncio.Event()) for _ in range(2)]
    GATES[:] = gates
    a = await start_replica("server", db_url, store_kind, effects)
    try:
        context_id = str(uuid.uuid4())
        task = (await rpc(client, a, "SendMessage", send(None, context_id, 1)))["result"]["task"]
        print(f"  turn 1:              {brief(task)}")
        turn2 = send(task["id"], context_id, 2)
        first = asyncio.create_task(rpc(client, a, "SendMessage", turn2))
        await asyncio.wait_for(gates[0][0].wait(), 10)
        retry = asyncio.create_task(rpc(client, a, "SendMessage", turn2))  # same messageId
        await asyncio.sleep(0.3)  # the retry reaches the server and waits behind turn 2
        gates[0][1].set()
        print(f"  turn 2 answered:     {outcome(await asyncio.wait_for(first, 10))}")
        print(f"  its retry answered:  {outcome(await asyncio.wait_for(retry, 10))}")
        during = None
        try:
            await asyncio.wait_for(gates[1][0].wait(), 2)  # a second run of turn 2 began
            await asyncio.sleep(0.2)
            during = (await rpc(client, a, "GetTask", {"id": task["id"]}))["result"]
            print(f"  then GetTask:        {brief(during)}  (turn 2 runs again)")
        except asyncio.TimeoutError:
            pass
        gates[1][1].set()
        await asyncio.sleep(0.3)
        final = (await rpc(client, a, "GetTask", {"id": task["id"]}))["result"]
        print(f"  final GetTask:       {brief(final)}")
    finally:
        GATES.clear()
        gates[1][1].set()
        await stop_replica(a)
    runs = sum(1 for e in effects if e[1] == 2)
    print(f"  side effects of turn 2: {runs}")
    return runs > 1 or (during is not None and during["status"]["state"] != "TASK_STATE_COMPLETED")


async def remote_cancel(client, db_url, store_kind):
    """Two replicas; a message to the replica where the task waited, after a remote cancel."""
    effects = []
    a = await start_replica("replica-0", db_url, store_kind, effects)
    b = await start_replica("replica-1", db_url, store_kind, effects)
    try:
        context_id = str(uuid.uuid4())
        task = (await rpc(client, a, "SendMessage", send(None, context_id, 1)))["result"]["task"]
        print(f"  turn 1 -> replica-0: {brief(task)}")
        c = await rpc(client, b, "CancelTask", {"id": task["id"]})
        print(f"  cancel -> replica-1: {brief(c['result']) if 'result' in c else c['error']}")
        r2 = await rpc(client, a, "SendMessage", send(task["id"], context_id, 2))
        print(f"  turn 2 -> replica-0: {outcome(r2)}")
        await asyncio.sleep(0.3)
        final = (await rpc(client, b, "GetTask", {"id": task["id"]}))["result"]
        print(f"  final GetTask:       {brief(final)}")
    finally:
        await stop_replica(a)
        await stop_replica(b)
    runs = sum(1 for e in effects if e[1] == 2)
    print(f"  side effects of turn 2: {runs}")
    canceled = "result" in c and c["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    return canceled and (runs > 0 or final["status"]["state"] != "TASK_STATE_CANCELED")


async def main(cluster, db_url):
    hits = []
    async with httpx.AsyncClient() as client:
        store = "versioned" if cluster else "memory"
        print(f"case queued ({'cluster mode' if cluster else 'InMemoryTaskStore'}):")
        if await queued(client, db_url, store):
            hits.append("queued: the retry ran again on the COMPLETED task")
        store = "versioned" if cluster else "plain"
        print(f"case remote-cancel ({'cluster mode' if cluster else 'DatabaseTaskStore'}):")
        if await remote_cancel(client, db_url, store):
            hits.append("remote-cancel: turn 2 ran after the acknowledged cancel")
    if hits:
        print("REPRODUCED: a message ran on a terminal task: " + "; ".join(hits))
        return 1
    print("not reproduced: no message ran on a terminal task")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", action="store_true",
                        help="both cases in cluster mode (VersionedDatabaseTaskStore + event"
                             " stream), where the SDK refuses the message")
    parser.add_argument("-v", action="store_true", help="show the SDK's logs")
    opts = parser.parse_args()
    logging.basicConfig(level=logging.INFO if opts.v else logging.CRITICAL)
    url = os.environ.get("A2A_FINDING_DB")
    tmp = None
    if not url:
        tmp = tempfile.TemporaryDirectory()
        url = f"sqlite+aiosqlite:///{tmp.name}/tasks.db"
    print(f"a2a-sdk 1.3.0, database {url.split('@')[-1]}")
    try:
        code = asyncio.run(asyncio.wait_for(main(opts.cluster, url), 60))
    except Exception:  # a crash or a timeout is not a reproduction
        traceback.print_exc()
        code = 2
    sys.exit(code)
