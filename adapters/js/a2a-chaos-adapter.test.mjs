// Tests of the JS adapter without any SDK: a stub ledger on a loopback port records what
// the adapter reports. Run with `node --test adapters/js/*.test.mjs` (Node 20+).

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';

import { Chaos, REQUEST_CONTEXT_KEY, saveReport, stateName, turnOf } from './a2a-chaos-adapter.mjs';

let ledger;
let received = [];
before(async () => {
  ledger = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      received.push({ path: req.url, body: JSON.parse(body) });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ applied: true }));
    });
  });
  await new Promise((resolve) => ledger.listen(0, '127.0.0.1', resolve));
});
after(() => ledger.close());
const url = () => `http://127.0.0.1:${ledger.address().port}`;

const text = (t) => ({ content: { $case: 'text', value: t } });
const data = (d) => ({ content: { $case: 'data', value: d } });
const user = (id, parts) => ({ messageId: id, role: 1, parts });

test('turnOf reads the data part, doubles included', () => {
  const m = user('m1', [text('x'), data({ conversation: 'c1', turn: 2.0, turns: 3.0 })]);
  assert.deepEqual(turnOf(m), { conversation: 'c1', turn: 2, turns: 3, scripted: true });
  // A2A 1.0 JSON form.
  const j = { messageId: 'm1', role: 'ROLE_USER', parts: [{ data: { conversation: 'c2', turn: 1, turns: 2 } }] };
  assert.equal(turnOf(j).conversation, 'c2');
});

test('a plain text message is the next turn of its task', () => {
  const task = { contextId: 'ctx', history: [user('a', []), { messageId: 'r', role: 2 }, user('b', []), user('m', [])] };
  // 'm' (this message, already appended) does not count; the agent's reply neither.
  assert.deepEqual(turnOf(user('m', [text('hi')]), task), { conversation: 'ctx', turn: 3, turns: 2, scripted: false });
  assert.deepEqual(turnOf({ ...user('n', [text('hi')]), contextId: 'c9' }), { conversation: 'c9', turn: 1, turns: 2, scripted: false });
});

test('state names', () => {
  assert.equal(stateName(6), 'input-required');
  assert.equal(stateName('TASK_STATE_AUTH_REQUIRED'), 'auth-required');
  const r = saveReport({ id: 't', contextId: 'c', status: { state: 3 }, artifacts: [{ artifactId: 'x', name: 'turn-1' }], history: [] }, 'replica-1');
  assert.equal(r.state, 'completed');
  assert.deepEqual(r.artifacts, ['turn-1']);
  assert.equal(r.mode, 'overwrite');
});

test('disabled without a ledger: wrappers hand back what they got', () => {
  const saved = process.env.A2A_CHAOS_LEDGER;
  delete process.env.A2A_CHAOS_LEDGER;
  const chaos = new Chaos();
  const fn = async () => 1;
  assert.equal(chaos.enabled, false);
  assert.equal(chaos.effect(fn), fn);
  assert.equal(chaos.mastraTool(fn), fn);
  if (saved !== undefined) process.env.A2A_CHAOS_LEDGER = saved;
});

test('executor, effect and store report to the ledger', async () => {
  received = [];
  const chaos = new Chaos({ ledger: url(), replica: 'replica-1' });
  const memory = new Map();
  const store = chaos.observeStore({
    async load(id) { return memory.get(id); },
    async save(task) { memory.set(task.id, task); },
    async list() { return { tasks: [...memory.values()] }; },
  });
  const charge = chaos.effect(async (amount) => amount * 2, { key: (amount) => `charge-${amount}` });
  const executor = chaos.executor({
    async execute(ctx) {
      await store.save({ id: ctx.taskId, contextId: ctx.contextId, status: { state: 2 }, artifacts: [], history: [] });
      return charge(21);
    },
    async cancelTask() {},
  });
  const ctx = {
    taskId: 't1', contextId: 'ctx',
    userMessage: user('m1', [data({ conversation: 'c1', turn: 1, turns: 2 })]),
  };
  assert.equal(await executor.execute(ctx, {}), 42);
  assert.equal((await store.list()).tasks.length, 1);
  assert.deepEqual(received.map((r) => r.path), ['/save', '/effect']);
  assert.deepEqual(received[1].body, {
    task_id: 't1', context_id: 'ctx', conversation: 'c1', turn: 1, message_id: 'm1',
    replica: 'replica-1', key: 'charge-21', sent_ms: 0,
  });
  // Outside an executor, an effect has no turn: refused, not silently unreported.
  await assert.rejects(charge(1), /no current request/);
});

test('a Mastra tool reports from its requestContext entry (v1 signature)', async () => {
  received = [];
  const chaos = new Chaos({ ledger: url(), replica: 'replica-0' });
  const execute = chaos.mastraTool(async (inputData) => ({ ok: inputData.id }), { key: (inputData) => inputData.id });
  const entry = { taskId: 't2', contextId: 'ctx2', conversation: 'c2', turn: 3, messageId: 'm3' };
  const requestContext = new Map([[REQUEST_CONTEXT_KEY, entry]]);
  assert.deepEqual(await execute({ id: 'tx-1' }, { requestContext }), { ok: 'tx-1' });
  assert.equal(received.length, 1);
  assert.equal(received[0].body.turn, 3);
  assert.equal(received[0].body.key, 'tx-1');
  await assert.rejects(execute({ id: 'tx-2' }, {}), /no A2A turn/);
});
