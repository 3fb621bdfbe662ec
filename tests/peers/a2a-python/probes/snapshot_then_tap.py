"""Probe for issue 22's snapshot-then-follow race (no upstream issue; read from the code).

Calls a2a-sdk's request handlers directly (no HTTP). A non-blocking SendMessage whose
executor emits WORKING and then waits; a SubscribeToTask reads its first event (the
snapshot). The executor is then let go to COMPLETED, and the subscriber reads on after K
turns of the event loop (K = 0, 1, 2, ... and after 100 ms). The legacy handler taps the
task's queue only when the subscriber reads on, after its snapshot; the default handler
(DefaultRequestHandlerV2) tapped before it read the task. Prints, per K, the events the
subscriber got after the snapshot and how its stream ended.

    target/peer-venv/v1.3.0/bin/python tests/peers/a2a-python/probes/snapshot_then_tap.py legacy
    target/peer-venv/v1.3.0/bin/python tests/peers/a2a-python/probes/snapshot_then_tap.py v2

Measured on a2a-sdk 1.3.0 (Python 3.11): LegacyRequestHandler's subscriber got WORKING and
nothing more in every case: reading on after 0-2 loop turns, a clean end of stream (the tap
opened before the run's consumer closed the queue, and was closed with it); after 3-4, the
stream still open 2 s later (tapped a closed queue, never closed); after 5 or more, or
100 ms, TaskNotFoundError (the queue dropped). DefaultRequestHandlerV2's subscriber got
WORKING, then COMPLETED, then a clean end, in every case.
"""

import asyncio
import sys

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandlerV2, LegacyRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
    TaskStatus,
)

HANDLER = LegacyRequestHandler if sys.argv[1:2] == ["legacy"] else DefaultRequestHandlerV2


class Executor(AgentExecutor):
    def __init__(self):
        self.go = asyncio.Event()

    async def execute(self, context: RequestContext, event_queue):
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
        await self.go.wait()
        await updater.complete()

    async def cancel(self, context, event_queue):
        pass


def name(event):
    if hasattr(event, "status"):
        return TaskState.Name(event.status.state).removeprefix("TASK_STATE_")
    return type(event).__name__


async def once(turns):
    store = InMemoryTaskStore()
    executor = Executor()
    card = AgentCard(name="probe", capabilities=AgentCapabilities(streaming=True))
    handler = HANDLER(executor, store, card)
    request = SendMessageRequest(
        message=Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="hi")]),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    task = await handler.on_message_send(request, ServerCallContext())
    for _ in range(50):  # let the run reach WORKING
        await asyncio.sleep(0)
    reader = handler.on_subscribe_to_task(SubscribeToTaskRequest(id=task.id), ServerCallContext())
    snapshot = name(await reader.__anext__())  # named now: the SDK may mutate it later
    executor.go.set()
    if turns is None:
        await asyncio.sleep(0.1)
    else:
        for _ in range(turns):
            await asyncio.sleep(0)
    got = []

    async def read_on():
        async for event in reader:
            got.append(name(event))

    try:
        await asyncio.wait_for(read_on(), 2)
        end = "clean end"
    except asyncio.TimeoutError:
        end = "still open after 2 s"
    except Exception as e:  # noqa: BLE001
        end = f"raised {type(e).__name__}"
    stored = await store.get(task.id, ServerCallContext())
    when = "after 100 ms" if turns is None else f"after {turns:>2} loop turns"
    print(f"{HANDLER.__name__}: snapshot {snapshot}, read on {when}: {got} then {end}; stored {name(stored)}")


async def main():
    for turns in [0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, None]:
        await once(turns)


asyncio.run(main())
