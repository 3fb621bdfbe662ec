// A real @a2a-js/sdk (1.3.0) replica that performs a2a-chaos's scripted turns.
//
// One process is one replica, with the same command line as tests/peers/a2a-python/server.py:
//
//   node tests/peers/a2a-js/server.mjs --port P --name replica-0 --ledger http://127.0.0.1:L|none
//        [--think-ms 40] [--compose-ms 10] [--turns 2]
//
// It serves A2A 1.0 JSON-RPC on POST / with the SDK's own DefaultRequestHandler and
// jsonRpcHandler (express), its card at /.well-known/agent-card.json, and names itself in
// every answer (x-a2a-chaos-replica). Tasks live in the SDK's InMemoryTaskStore: one per
// process, so a replica knows only the tasks it saved itself (a follow-up, a GetTask or a
// resubscribe on another replica finds nothing, and a killed replica forgets everything).
//
// The executor performs the turn of src/replica/turn.rs: turn n of a conversation (the
// message's data part {conversation, turn, turns}; for a plain text message, the task's next
// turn of a --turns long conversation named after its contextId) sets the task working, thinks,
// reports one business effect to the a2a-chaos ledger (/effect), composes, writes artifact
// turn-n and ends input-required, or completed on the last turn. A cancel is cooperative:
// the executor stops at its next step once its task was canceled. Effects and saves are
// reported through the user adapter, adapters/js/a2a-chaos-adapter.mjs.
//
// GET /__a2a_chaos/tasks?ids=ID,ID... (or ?id=ID&id=ID...) answers {"tasks": {id: task}} (A2A 1.0 JSON) for the
// ids this replica's store holds, outside A2A: how a2a-chaos could read final tasks from a
// peer that has no shared database to dump (docs/PEERS.md).
//
// The SDK is loaded from the directory setup.sh installs it in: target/peer-a2a-js/ at the
// repository root, or $A2A_CHAOS_PEER_JS.

import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Chaos, DEFAULT_TURNS, turnOf } from '../../../adapters/js/a2a-chaos-adapter.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.A2A_CHAOS_PEER_JS || path.resolve(here, '../../../target/peer-a2a-js');
const require = createRequire(path.join(modules, 'package.json'));
let sdk, server, sdkExpress, express;
try {
  sdk = require('@a2a-js/sdk');
  server = require('@a2a-js/sdk/server');
  sdkExpress = require('@a2a-js/sdk/server/express');
  express = require('express');
} catch (e) {
  console.error(`the @a2a-js/sdk peer is not installed in ${modules} (${e.message}); run tests/peers/a2a-js/setup.sh`);
  process.exit(2);
}
const { Task, TaskState, Role } = sdk;
const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, ServerCallContext, UnauthenticatedUser } = server;
const { agentCardHandler, jsonRpcHandler, UserBuilder } = sdkExpress;

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    name: { type: 'string', default: 'replica-0' },
    ledger: { type: 'string' },
    'think-ms': { type: 'string', default: '40' },
    'compose-ms': { type: 'string', default: '10' },
    turns: { type: 'string', default: String(DEFAULT_TURNS) },
  },
  strict: true,
});
if (!args.port || !args.ledger) {
  console.error('--port and --ledger are required');
  process.exit(2);
}
const port = Number(args.port);
const thinkMs = Number(args['think-ms']);
const composeMs = Number(args['compose-ms']);
const turns = Number(args.turns);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => new Date().toISOString();
const textPart = (text) => ({ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: {} });

/** The agent's shape a message's scripted data part asks for: {effect, progress}. */
function shapeOf(message) {
  for (const part of message?.parts ?? []) {
    const data = part?.content?.$case === 'data' ? part.content.value : undefined;
    if (data && typeof data === 'object' && 'turn' in data) {
      const progress = Math.trunc(Number(data.progress ?? 0));
      return {
        effect: data.effect !== false,
        progress: Number.isFinite(progress) ? Math.max(0, Math.min(progress, 10)) : 0,
      };
    }
  }
  return { effect: true, progress: 0 };
}

/** Turn n: working, think, one effect at the ledger, compose, artifact turn-n, then
 *  input-required (or completed on the last turn). */
class TurnExecutor {
  constructor(chaos) {
    this.chaos = chaos;
    this.canceled = new Set();
  }

  async execute(requestContext, eventBus) {
    const { taskId, contextId } = requestContext;
    const message = requestContext.userMessage;
    const { conversation, turn, turns: length } = turnOf(message, requestContext.task, contextId, turns);
    // Every execution starts with a task event (the SDK requires it, follow-ups included).
    eventBus.publish(AgentEvent.task(requestContext.task ?? {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
      artifacts: [],
      history: [message],
      metadata: {},
    }));
    const status = (state, reply) => AgentEvent.statusUpdate({
      taskId, contextId, status: { state, message: reply, timestamp: now() }, metadata: {},
    });
    eventBus.publish(status(TaskState.TASK_STATE_WORKING, undefined));
    // The agent's shape the data part asks for (src/replica/shape.rs): progress updates
    // evenly spread over the think, and no effect with `effect: false`.
    const { effect, progress } = shapeOf(message);
    for (let k = 0; k < progress; k += 1) {
      await sleep(thinkMs / (progress + 1));
      if (this.canceled.has(taskId)) return;
      eventBus.publish(status(TaskState.TASK_STATE_WORKING, undefined));
    }
    await sleep(thinkMs / (progress + 1));
    if (this.canceled.has(taskId)) return;
    // The business effect: reported to the ledger, which is also where it "happens".
    if (effect) await this.chaos.reportEffect(requestContext, { conversation, turn });
    await sleep(composeMs);
    if (this.canceled.has(taskId)) return;
    eventBus.publish(AgentEvent.artifactUpdate({
      taskId,
      contextId,
      artifact: {
        artifactId: `${taskId}-turn-${turn}`,
        name: `turn-${turn}`,
        description: '',
        parts: [textPart(`result of turn ${turn}`)],
        metadata: {},
        extensions: [],
      },
      append: false,
      lastChunk: true,
      metadata: {},
    }));
    const reply = {
      messageId: randomUUID(),
      contextId,
      taskId,
      role: Role.ROLE_AGENT,
      parts: [textPart(`done turn ${turn}`)],
      metadata: {},
      extensions: [],
      referenceTaskIds: [],
    };
    eventBus.publish(status(turn >= length ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_INPUT_REQUIRED, reply));
  }

  async cancelTask(taskId, eventBus) {
    this.canceled.add(taskId);
    const task = await store.load(taskId, dumpContext());
    eventBus.publish(AgentEvent.statusUpdate({
      taskId,
      contextId: task?.contextId ?? '',
      status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: now() },
      metadata: {},
    }));
  }
}

// `--ledger none`: report nothing, as a server without the adapters (docs/PEERS.md: the
// invariants that need reports are then `unknown`).
if (args.ledger === 'none') delete process.env.A2A_CHAOS_LEDGER;
const chaos = new Chaos({ ledger: args.ledger === 'none' ? '' : args.ledger, replica: args.name });
const memory = new InMemoryTaskStore();
const store = chaos.observeStore(memory);
const card = {
  name: 'a2a-chaos scripted agent (a2a-js)',
  description: `Scripted agent on ${args.name}`,
  supportedInterfaces: [
    { url: `http://127.0.0.1:${port}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
  ],
  provider: undefined,
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain'],
  skills: [{
    id: 'scripted-turn',
    name: 'Scripted turn',
    description: 'Performs one business effect per turn and writes artifact turn-N.',
    tags: ['simulation'],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  }],
  signatures: [],
};
const handler = new DefaultRequestHandler(card, store, chaos.executor(new TurnExecutor(chaos)));

/** The call context the JSON-RPC route builds for an unauthenticated caller (the same
 *  owner scope as every task a2a-chaos creates here). */
function dumpContext() {
  return new ServerCallContext({ user: new UnauthenticatedUser() });
}

const app = express();
app.use((req, res, next) => {
  // Names the replica in every answer, as the simulated replicas do.
  res.setHeader('x-a2a-chaos-replica', args.name);
  next();
});
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.get('/__a2a_chaos/tasks', async (req, res) => {
  const ids = [req.query.ids ?? [], req.query.id ?? []]
    .flat()
    .flatMap((v) => String(v).split(','))
    .filter(Boolean);
  const tasks = {};
  for (const id of ids) {
    const task = await memory.load(id, dumpContext());
    if (task) tasks[id] = Task.toJSON(task);
  }
  res.json({ tasks });
});
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const listener = app.listen(port, '127.0.0.1', () => {
  console.error(`a2a-js replica ${args.name} on 127.0.0.1:${port}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => listener.close(() => process.exit(0)));
}
