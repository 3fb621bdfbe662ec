"""a2a-sdk 1.3.0 cluster mode on SQLite: a cancel and the end of a turn are both acknowledged,
COMPLETED and CANCELED, and one overwrites the other (a cancel can write over the COMPLETED
task a copy without the completed turn): the CANCELED save's row locks (SELECT ... FOR
UPDATE) are no locks on SQLite, and the cancel reuses a version number.

Needs only a2a-sdk 1.3.0 and uvicorn (pip install "a2a-sdk[http-server,sqlite,postgresql]==1.3.0"
uvicorn). Two replicas of the SDK's own JSON-RPC server (DefaultRequestHandler, one engine,
store and ActiveTaskRegistry each) listen on loopback ports and share one SQLite file in
cluster mode (VersionedDatabaseTaskStore + DatabaseTaskEventStream), as the SDK allows:

    python f06-sqlite-cancel-overwrites-completed.py          # 8 tries, SQLite file
    A2A_FINDING_DB=postgresql+asyncpg://USER@127.0.0.1:5432/DB python f06-...py   # contrast

Each try: turn 1 -> replica 0 (input-required); turn 2, the last turn, -> replica 0; as it
finishes, CancelTask -> replica 1, 0 to 28 ms after turn 2's agent is let go (the agent
waits on an asyncio.Event before its side effect, so the cancel meets the end of the turn).
On PostgreSQL the cancel either comes first (turn 2 ends CANCELED) or is refused -32002
(the task is COMPLETED). On SQLite the cancel reads the task and its version N, the turn
saves N+1, and the cancel writes CANCELED as N+1 again: both calls are answered ok, and
the task ends CANCELED (over COMPLETED) or, when the turn's COMPLETED save then passes its
compare-and-swap on the reused N+1, COMPLETED (over the acknowledged cancel).

Exit 1 and "REPRODUCED" when turn 2 was answered COMPLETED and the cancel CANCELED, 0 when
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

TURNS = 2  # turn 1 ends input-required, turn 2 completes
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


def outcome(answer, task=None):
    if "result" in answer:
        return "ok " + (task or answer["result"])["status"]["state"]
    return f"error {answer['error']['code']}"


async def attempt(client, a, b, stagger_s):
    HOLD["reached"], HOLD["release"] = asyncio.Event(), asyncio.Event()
    context_id = str(uuid.uuid4())
    task = (await rpc(client, a, "SendMessage", send(None, context_id, 1)))["result"]["task"]
    turn2 = asyncio.create_task(rpc(client, a, "SendMessage", send(task["id"], context_id, 2)))
    await asyncio.wait_for(HOLD["reached"].wait(), 10)
    await asyncio.sleep(0.1)  # turn 2's working save lands
    HOLD["release"].set()
    await asyncio.sleep(stagger_s)
    cancel = await rpc(client, b, "CancelTask", {"id": task["id"]})
    r2 = await asyncio.wait_for(turn2, 10)
    await asyncio.sleep(0.2)
    final = (await rpc(client, b, "GetTask", {"id": task["id"]}))["result"]
    turn2_state = outcome(r2, r2.get("result", {}).get("task"))
    names = [x["name"] for x in final.get("artifacts", [])]
    print(f"  cancel {1000 * stagger_s:2.0f} ms after: turn 2 {turn2_state}, cancel"
          f" {outcome(cancel)}, final {final['status']['state']} {names}")
    both = (turn2_state == "ok TASK_STATE_COMPLETED"
            and outcome(cancel) == "ok TASK_STATE_CANCELED")
    return both, final["status"]["state"], "turn-2" not in names


async def main(n, db_url):
    effects = []
    a = await start_replica("replica-0", db_url, "versioned", effects)
    b = await start_replica("replica-1", db_url, "versioned", effects)
    both = over_completed = lost = 0
    try:
        async with httpx.AsyncClient() as client:
            for i in range(n):
                hit, final, dropped = await attempt(client, a, b, (4 * i % 32) / 1000)
                both += hit
                over_completed += hit and final == "TASK_STATE_CANCELED"
                lost += hit and dropped
    finally:
        await stop_replica(a)
        await stop_replica(b)
    if both:
        print(f"REPRODUCED in {both} of {n} tries: turn 2 was answered COMPLETED and the cancel"
              f" CANCELED; {over_completed} ended CANCELED ({lost} without turn 2's artifact),"
              f" {both - over_completed} COMPLETED")
        return 1
    print("not reproduced: never were both the completion and the cancel acknowledged")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=8, help="tries (default 8)")
    parser.add_argument("-v", action="store_true", help="show the SDK's logs")
    opts = parser.parse_args()
    logging.basicConfig(level=logging.INFO if opts.v else logging.CRITICAL)
    url = os.environ.get("A2A_FINDING_DB")
    tmp = None
    if not url:
        tmp = tempfile.TemporaryDirectory()
        url = f"sqlite+aiosqlite:///{tmp.name}/tasks.db"
    print(f"a2a-sdk 1.3.0, cluster mode, database {url.split('@')[-1]}")
    try:
        code = asyncio.run(asyncio.wait_for(main(opts.n, url), 30 + 3 * opts.n))
    except Exception:  # a crash or a timeout is not a reproduction
        traceback.print_exc()
        code = 2
    sys.exit(code)
