"""a2a-sdk 1.3.0 cluster mode: a task that another replica CANCELED (or COMPLETED) is
reopened as input-required by a turn that was running when it ended.

Needs only a2a-sdk 1.3.0 and uvicorn (pip install "a2a-sdk[http-server,sqlite,postgresql]==1.3.0"
uvicorn). Two replicas of the SDK's own JSON-RPC server (DefaultRequestHandler, one
engine, store and ActiveTaskRegistry each) listen on loopback ports and share one database
in cluster mode (VersionedDatabaseTaskStore + DatabaseTaskEventStream):

    python f03-terminal-task-reopened.py                # SQLite file
    A2A_FINDING_DB=postgresql+asyncpg://USER@127.0.0.1:5432/DB python f03-...py

Turn 2 runs on replica 0 and waits (an asyncio.Event in the agent, the only timing hold)
while the task ends on replica 1; then it goes on. Two races, one task each:

  cancel:   turn 1 -> replica 0 (input-required); turn 2 -> replica 0, held after
            "working"; CancelTask -> replica 1: ok CANCELED; release turn 2.
  complete: turn 1 -> replica 0 (input-required); turn 2 -> replica 0, held after
            "working"; turn 3 (the last) -> replica 1: ok COMPLETED; release turn 2.

After the release, turn 2's artifact save conflicts, the re-read finds the task terminal and
the artifact is dropped, but the input-required status the agent had already queued is saved
on that terminal copy with its current version: GetTask then says INPUT_REQUIRED.

Exit 1 and "REPRODUCED" when a task left its terminal state, 0 when it does not, 2 on an
error.
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
HOLD = {"turn": 2, "reached": None, "release": None}  # turn 2 on replica-0 waits here


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
        if self.replica == "replica-0" and turn == HOLD["turn"]:
            HOLD["reached"].set()
            await asyncio.wait_for(HOLD["release"].wait(), 10)
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


async def until(check, what):
    for _ in range(200):
        if await check():
            return
        await asyncio.sleep(0.025)
    raise TimeoutError(what)


async def race(client, a, b, ender, effects):
    """Turn 2 held on replica-0 while `ender` ends the task on replica-1; the final task."""
    HOLD["reached"], HOLD["release"] = asyncio.Event(), asyncio.Event()
    context_id = str(uuid.uuid4())
    task = (await rpc(client, a, "SendMessage", send(None, context_id, 1)))["result"]["task"]
    tid = task["id"]
    print(f"  turn 1 -> replica-0: {brief(task)}")
    turn2 = asyncio.create_task(rpc(client, a, "SendMessage", send(tid, context_id, 2)))
    await asyncio.wait_for(HOLD["reached"].wait(), 10)

    async def working():
        t = (await rpc(client, b, "GetTask", {"id": tid}))["result"]
        return t["status"]["state"] == "TASK_STATE_WORKING" and len(t.get("history", [])) >= 3
    await until(working, "turn 2's working save")
    print("  turn 2 -> replica-0: working, held before its side effect")
    if ender == "cancel":
        e = await rpc(client, b, "CancelTask", {"id": tid})
        ended = e.get("result")
        print(f"  cancel -> replica-1: {brief(ended) if ended else e['error']}")
    else:
        e = await rpc(client, b, "SendMessage", send(tid, context_id, 3))
        ended = e.get("result", {}).get("task")
        print(f"  turn 3 -> replica-1: {brief(ended) if ended else e['error']}")
    before = len(effects)
    HOLD["release"].set()
    r2 = await asyncio.wait_for(turn2, 10)
    ran = sum(1 for e in effects[before:] if e == ("replica-0", 2))
    print(f"  turn 2 let go:       its side effect ran {ran} time(s) after that answer")
    answered = brief(r2["result"]["task"]) if "result" in r2 else r2["error"]
    print(f"  turn 2 answered:     {answered}")
    await asyncio.sleep(0.5)  # the queued status is saved after the answer
    final = (await rpc(client, b, "GetTask", {"id": tid}))["result"]
    print(f"  GetTask:             {brief(final)}")
    terminal = ended is not None and ended["status"]["state"] in (
        "TASK_STATE_CANCELED", "TASK_STATE_COMPLETED")
    return terminal, ended, final


async def main(store_kind, db_url):
    effects = []
    a = await start_replica("replica-0", db_url, store_kind, effects)
    b = await start_replica("replica-1", db_url, store_kind, effects)
    reopened = []
    try:
        async with httpx.AsyncClient() as client:
            for ender in ("cancel", "complete"):
                print(f"race '{ender}':")
                terminal, ended, final = await race(client, a, b, ender, effects)
                if terminal and final["status"]["state"] != ended["status"]["state"]:
                    reopened.append(f"{ended['status']['state']} -> {final['status']['state']}"
                                    f" ({ender})")
    finally:
        await stop_replica(a)
        await stop_replica(b)
    if reopened:
        print("REPRODUCED: a terminal task was reopened by the turn that ran when it ended: "
              + "; ".join(reopened))
        return 1
    print("not reproduced: both tasks kept their terminal state")
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
