"""An ordinary a2a-sdk (1.3) agent, written the way the official samples are: the
"order desk". Each message is an order: the agent places it (its business side effect),
answers with a receipt artifact and asks whether there is anything else
(input-required). It knows nothing of a2a-chaos except the two lines marked below.

    python server.py                        # http://127.0.0.1:9999, tasks in memory
    DATABASE_URL=sqlite+aiosqlite:///tasks.db python server.py   # tasks in a database

See README.md for how a2a-chaos runs it as replicas and judges it.
"""

import asyncio
import os
import uuid

import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import DatabaseTaskStore, InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)

from a2a_chaos_adapter import effect  # a2a-chaos (1 of 2)

PORT = 9999
ORDERS = []


@effect()  # a2a-chaos (2 of 2): report the side effect before it happens
async def place_order(text):
    """The business side effect: in a real agent, a payment or an order."""
    await asyncio.sleep(0.02)
    order_id = f"order-{uuid.uuid4().hex[:8]}"
    ORDERS.append((order_id, text))
    return order_id


class OrderDeskExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue):
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        text = context.get_user_input()
        order_id = await place_order(text)
        await updater.add_artifact(
            [Part(text=f"{order_id}: {text}")], name="receipt", last_chunk=True
        )
        await updater.requires_input(
            updater.new_agent_message([Part(text=f"Placed {order_id}. Anything else?")])
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue):
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def task_store():
    url = os.environ.get("DATABASE_URL")
    if not url:
        return InMemoryTaskStore()
    from sqlalchemy.ext.asyncio import create_async_engine

    # The table is created on first use; several processes may share one SQLite file.
    return DatabaseTaskStore(create_async_engine(url, connect_args={"timeout": 30}))


def build_app(store):
    card = AgentCard(
        name="Order desk",
        description="Places orders.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{PORT}/", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="order", name="Order", description="Places an order.", tags=["shop"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=OrderDeskExecutor(), task_store=store, agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
    return Starlette(routes=routes)


if __name__ == "__main__":
    app = build_app(task_store())
    uvicorn.run(app, host="127.0.0.1", port=PORT)
