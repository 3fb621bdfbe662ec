"""Probe for issue 22's slow-subscriber hazard (a2aproject/a2a-python#1136, #1137, #1209).

Calls a2a-sdk's DefaultRequestHandler directly (no HTTP): a non-blocking SendMessage whose
executor emits N working-status events, then COMPLETED. With `stall`, a SubscribeToTask
reads its first event (the snapshot) and then stops reading, as an SSE client whose socket
is no longer read does; after 3 s it reads again. Prints how many saves the task store got
while the reader stalled, the stored state then, and what the reader got afterwards.

    target/peer-venv/v1.3.0/bin/python tests/peers/a2a-python/probes/slow_subscriber.py 3000 stall
    <venv with a2a-sdk==1.1.3>/bin/python tests/peers/a2a-python/probes/slow_subscriber.py 3000 stall

Measured 2026-12-04 (N = 3000 and 6000):
- 1.1.3 (taps block): saves stop at 2051 (the sink's 1,024 + the dispatcher's incoming
  1,024 + 3) and the task stays WORKING while the reader stalls; the executor itself blocks
  about 2,048 events later. When the reader reads again it gets every event and the task
  completes: the stall freezes the task's event flow, it loses nothing.
- 1.3.0 and 1.1.5 (taps evict_on_full, #1137, in since 1.1.4): every save lands and the
  task completes; the stalled reader, read again, gets no event at all: its stream ends
  with no final state.
- Without `stall`, 1.1.3 completes too: the non-blocking send's own tap, abandoned when it
  answers, is closed when CPython finalises its generator, so it does not wedge the task
  here (#1136 reports that trigger over HTTP under a burst of requests; not reproduced).
Other tasks and the agent card are not touched by the code path: the wedge is the task's.
"""

import asyncio
import sys

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
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

N = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
STALL = len(sys.argv) > 2 and sys.argv[2] == "stall"
progress = {"emitted": 0, "saves": 0}


class Executor(AgentExecutor):
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
        for i in range(N):
            await updater.start_work()
            progress["emitted"] = i + 1
            await asyncio.sleep(0)
        await updater.complete()

    async def cancel(self, context, event_queue):
        pass


async def main():
    store = InMemoryTaskStore()
    save = store.save

    async def counted(task, *args, **kwargs):
        progress["saves"] += 1
        return await save(task, *args, **kwargs)

    store.save = counted
    card = AgentCard(name="probe", capabilities=AgentCapabilities(streaming=True))
    handler = DefaultRequestHandler(Executor(), store, card)
    request = SendMessageRequest(
        message=Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="hi")]),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    task = await handler.on_message_send(request, ServerCallContext())
    reader = None
    if STALL:
        reader = handler.on_subscribe_to_task(SubscribeToTaskRequest(id=task.id), ServerCallContext())
        await reader.__anext__()  # the snapshot; then the reader stops reading
    await asyncio.sleep(3)
    stored = await store.get(task.id, ServerCallContext())
    print(
        f"after 3 s: emitted={progress['emitted']} saves={progress['saves']} "
        f"stored={TaskState.Name(stored.status.state)}"
    )
    if reader is not None:
        got = []

        async def read_on():
            async for event in reader:
                got.append(event)

        try:
            await asyncio.wait_for(read_on(), 10)
        except asyncio.TimeoutError:
            got.append("timeout")
        last = got[-1] if got else None
        state = TaskState.Name(last.status.state) if hasattr(last, "status") else last
        print(f"the reader, reading again: {len(got)} events, the last {state}")
    await asyncio.sleep(1)
    stored = await store.get(task.id, ServerCallContext())
    print(f"at the end: saves={progress['saves']} stored={TaskState.Name(stored.status.state)}")


asyncio.run(main())
