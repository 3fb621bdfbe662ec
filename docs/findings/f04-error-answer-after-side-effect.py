"""a2a-sdk 1.3.0 cluster mode: a request answered with JSON-RPC error -32603 still runs its
agent's side effect: the executor is not stopped when the event consumer fails.

Needs only a2a-sdk 1.3.0 and uvicorn (pip install "a2a-sdk[http-server,sqlite,postgresql]==1.3.0"
uvicorn). Two replicas of the SDK's own JSON-RPC server (DefaultRequestHandler, one
engine, store and ActiveTaskRegistry each) listen on loopback ports and share one database
in cluster mode (VersionedDatabaseTaskStore + DatabaseTaskEventStream):

    python f04-error-answer-after-side-effect.py          # SQLite file, 8 conversations
    python f04-error-answer-after-side-effect.py -n 20
    A2A_FINDING_DB=postgresql+asyncpg://USER@127.0.0.1:5432/DB python f04-...py

Each conversation: turn 1 -> replica 0 (input-required); then the same turn-2 message (one
messageId: a retry, or a duplicate from a gateway) is sent to replica 0 and replica 1 at
once. The agent thinks 200 ms, then runs its side effect. Both replicas run the agent (the
SDK has no messageId deduplication); the one that loses the version race conflicts twice and
answers -32603 InternalError, yet its agent goes on and performs the side effect, often
after the error was sent. No timing hold: the race is real, so the script runs several
conversations and counts.

Exit 1 and "REPRODUCED" when a replica answered an error and its side effect ran, 0 when it
does not, 2 on an error.
"""

import argparse
import asyncio
import logging
import os
import socket
import sys
import tempfile
import time
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
        await asyncio.sleep(0.2)  # the agent thinks
        # the side effect (a payment, an email), with when it happened
        self.effects.append((context.task_id, self.replica, turn, time.monotonic()))
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


async def conversation(client, replicas, effects):
    context_id = str(uuid.uuid4())
    a = replicas[0]
    task = (await rpc(client, a, "SendMessage", send(None, context_id, 1)))["result"]["task"]
    turn2 = send(task["id"], context_id, 2)  # one message, one messageId, sent twice

    async def to(replica):
        answer = await rpc(client, replica, "SendMessage", turn2)
        return answer, time.monotonic()
    answers = await asyncio.gather(*(to(r) for r in replicas))
    await asyncio.sleep(0.5)  # let every agent finish
    erred_yet_ran = 0
    for (answer, at), name in zip(answers, ("replica-0", "replica-1")):
        ran = [e[3] for e in effects if e[0] == task["id"] and e[1] == name and e[2] == 2]
        if "error" in answer:
            what = f"error {answer['error']['code']} {answer['error']['message'][:22]!r}..."
        else:
            what = f"ok {answer['result']['task']['status']['state']}"
        if ran:
            when = f"effect ran {1000 * (ran[0] - at):+.0f} ms after the answer"
        else:
            when = "no effect"
        print(f"  turn 2 -> {name}: {what}; {when}")
        if "error" in answer and ran:
            erred_yet_ran += 1
    return erred_yet_ran


async def main(store_kind, db_url, n):
    effects = []
    a = await start_replica("replica-0", db_url, store_kind, effects)
    b = await start_replica("replica-1", db_url, store_kind, effects)
    hits = 0
    try:
        async with httpx.AsyncClient() as client:
            for i in range(n):
                print(f"conversation {i + 1}:")
                hits += 1 if await conversation(client, [a, b], effects) else 0
    finally:
        await stop_replica(a)
        await stop_replica(b)
    print(f"side effects of turn 2: {sum(1 for e in effects if e[2] == 2)} for {n} turns")
    if hits:
        print(f"REPRODUCED in {hits} of {n} conversations: a replica answered turn 2 with an"
              " error, and its agent performed the side effect anyway")
        return 1
    print("not reproduced: no replica answered an error for a turn whose side effect ran")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", choices=["versioned", "plain"], default="versioned")
    parser.add_argument("-n", type=int, default=8, help="conversations (default 8)")
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
        code = asyncio.run(asyncio.wait_for(main(opts.store, url, opts.n), 30 + 5 * opts.n))
    except Exception:  # a crash or a timeout is not a reproduction
        traceback.print_exc()
        code = 2
    sys.exit(code)
