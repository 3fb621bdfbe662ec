// An ordinary @a2a-js/sdk (1.3) agent, written the way the SDK's samples are: the "order
// desk". Each message is an order: the agent places it (its business side effect), answers
// with a receipt artifact and asks whether there is anything else (input-required); "no" (or
// "done", "that's all") completes the task. It knows nothing of a2a-chaos except the two
// lines marked below.
//
//   node server.mjs          # http://127.0.0.1:9999, tasks in memory (InMemoryTaskStore)
//
// See README.md for how a2a-chaos runs it as replicas and judges it.

import { randomUUID } from 'node:crypto';

import express from 'express';
import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';

import { effect } from '../../adapters/js/a2a-chaos-adapter.mjs'; // a2a-chaos (1 of 2)

const PORT = 9999;
const orders = [];

/** The business side effect: in a real agent, a payment or an order. */
const placeOrder = effect(async (text) => { // a2a-chaos (2 of 2): reported before it happens
  await new Promise((resolve) => setTimeout(resolve, 20));
  const orderId = `order-${randomUUID().slice(0, 8)}`;
  orders.push({ orderId, text });
  return orderId;
});

const textPart = (text) => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});

const agentMessage = (taskId, contextId, text) => ({
  role: Role.ROLE_AGENT,
  messageId: randomUUID(),
  parts: [textPart(text)],
  taskId,
  contextId,
  extensions: [],
  metadata: {},
  referenceTaskIds: [],
});

class OrderDeskExecutor {
  /** taskId -> contextId of the tasks being executed (a canceled one is removed). */
  running = new Map();

  async execute(requestContext, eventBus) {
    const { userMessage, task, taskId, contextId } = requestContext;
    this.running.set(taskId, contextId);
    try {
      await this.takeOrder(requestContext, eventBus);
    } finally {
      this.running.delete(taskId);
    }
  }

  async takeOrder(requestContext, eventBus) {
    const { userMessage, task, taskId, contextId } = requestContext;
    const status = (state, message) => AgentEvent.statusUpdate({
      taskId,
      contextId,
      status: { state, message, timestamp: new Date().toISOString() },
      metadata: {},
    });

    // 1. A new task starts with its Task event.
    if (!task) {
      eventBus.publish(AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString(), message: undefined },
        artifacts: [],
        history: [userMessage],
        metadata: userMessage.metadata,
      }));
    }
    eventBus.publish(status(TaskState.TASK_STATE_WORKING, undefined));

    const text = userMessage.parts
      .filter((part) => part.content?.$case === 'text')
      .map((part) => part.content.value)
      .join(' ')
      .trim();

    // 2. "No" to "anything else?": the order is complete.
    if (task && /^(no|nothing|done|that'?s all)\b/i.test(text)) {
      eventBus.publish(status(TaskState.TASK_STATE_COMPLETED,
        agentMessage(taskId, contextId, 'Thank you, your orders are placed.')));
      return;
    }

    // 3. Otherwise an order: place it, give the receipt, ask for more.
    const orderId = await placeOrder(text);
    if (!this.running.has(taskId)) return; // canceled while the order was placed
    eventBus.publish(AgentEvent.artifactUpdate({
      taskId,
      contextId,
      artifact: {
        artifactId: randomUUID(),
        name: 'receipt',
        description: 'The placed order.',
        parts: [textPart(`${orderId}: ${text}`)],
        metadata: undefined,
        extensions: [],
      },
      append: false,
      lastChunk: true,
      metadata: undefined,
    }));
    eventBus.publish(status(TaskState.TASK_STATE_INPUT_REQUIRED,
      agentMessage(taskId, contextId, `Placed ${orderId}. Anything else?`)));
  }

  async cancelTask(taskId, eventBus) {
    const contextId = this.running.get(taskId) ?? '';
    this.running.delete(taskId);
    eventBus.publish(AgentEvent.statusUpdate({
      taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_CANCELED, timestamp: new Date().toISOString(), message: undefined },
      metadata: {},
    }));
  }
}

const agentCard = {
  name: 'Order desk',
  description: 'Places orders.',
  supportedInterfaces: [
    { url: `http://127.0.0.1:${PORT}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
  ],
  provider: undefined,
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{
    id: 'order',
    name: 'Order',
    description: 'Places an order.',
    tags: ['shop'],
    examples: ['two coffees'],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  }],
  signatures: [],
};

const requestHandler = new DefaultRequestHandler(agentCard, new InMemoryTaskStore(), new OrderDeskExecutor());

const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
app.use('/', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
const server = app.listen(PORT, '127.0.0.1', () => {
  console.log(`[OrderDesk] listening on http://127.0.0.1:${server.address().port}`);
});
