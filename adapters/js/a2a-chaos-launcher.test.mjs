// Tests of the JS adapter's launcher, `node a2a-chaos-adapter.mjs run server.mjs`: a stub
// @a2a-js/sdk in a temporary directory (found through NODE_PATH), a stub ledger on a loopback
// port, and the launcher in a child process. The last test runs examples/my-agent-js/server.mjs
// on the real SDK when the a2a-js peer is installed (target/peer-a2a-js, or
// $A2A_CHAOS_PEER_JS), and says it skipped otherwise. Run with `node --test adapters/js/*.test.mjs`.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { Chaos, instrumentHandler, listenArgs } from './a2a-chaos-adapter.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const adapter = path.join(here, 'a2a-chaos-adapter.mjs');
const root = path.resolve(here, '../..');

// --- fixtures ----------------------------------------------------------------------------

let ledger;
let received = [];
let tmp;

before(async () => {
  ledger = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      received.push({ path: req.url, body: JSON.parse(body || '{}') });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(req.url === '/effect' ? { applied: true } : { version: received.length }));
    });
  });
  await new Promise((resolve) => ledger.listen(0, '127.0.0.1', resolve));

  // A stub SDK where NODE_PATH will find it, and a server module that imports it as a user's
  // server imports @a2a-js/sdk (a bare import its own folders cannot resolve).
  tmp = await mkdtemp(path.join(os.tmpdir(), 'a2a-chaos-launcher-'));
  const sdk = path.join(tmp, 'lib/node_modules/@a2a-js/sdk');
  await mkdir(sdk, { recursive: true });
  await mkdir(path.join(tmp, 'app'));
  await writeFile(path.join(sdk, 'package.json'), JSON.stringify({
    name: '@a2a-js/sdk', version: '0.0.0-stub', type: 'module', exports: { './server': './server.js' },
  }));
  await writeFile(path.join(sdk, 'server.js'), `
export class DefaultRequestHandler {
  constructor(agentCard, taskStore, agentExecutor, eventBusManager) {
    this.agentCard = agentCard;
    this.taskStore = taskStore;
    this.agentExecutor = agentExecutor;
    this.eventBusManager = eventBusManager;
  }
}
export class InMemoryTaskStore {
  tasks = new Map();
  async load(id) { return this.tasks.get(id); }
  async save(task) { this.tasks.set(task.id, task); }
}
export const other = 'another export';
`);
  await writeFile(path.join(tmp, 'app/server.mjs'), `
import http from 'node:http';
import { DefaultRequestHandler, InMemoryTaskStore, other } from '@a2a-js/sdk/server';
import * as namespace from '@a2a-js/sdk/server';
// The SDK's own class, by a path the hook does not touch.
import { DefaultRequestHandler as Sdk } from '../lib/node_modules/@a2a-js/sdk/server.js';
import { effect } from ${JSON.stringify(pathToFileURL(adapter).href)};

const charge = effect(async (n) => n * 2);
const executor = {
  async execute(ctx) {
    await handler.taskStore.save({ id: ctx.taskId, contextId: ctx.contextId, status: { state: 6 },
      artifacts: [{ artifactId: 'a', name: 'receipt' }], history: [ctx.userMessage] });
    return charge(21);
  },
  async cancelTask() {},
};
const handler = new DefaultRequestHandler({ name: 'stub' }, new InMemoryTaskStore(), executor, 'bus');
const server = http.createServer(async (req, res) => {
  const result = await handler.agentExecutor.execute({
    taskId: 't1', contextId: 'ctx',
    userMessage: { messageId: 'm1', role: 1, parts: [{ content: { $case: 'data', value: { conversation: 'c1', turn: 1, turns: 2 } } }] },
  }, {});
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({
    result, argv: process.argv.slice(2), script: process.argv[1], other,
    namespace: namespace.DefaultRequestHandler === DefaultRequestHandler,
    instance: handler instanceof Sdk, sdkClass: DefaultRequestHandler === Sdk,
    wrapped: handler.agentExecutor !== executor, bus: handler.eventBusManager,
  }));
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => console.log('listening ' + server.address().port));
`);
});

after(async () => {
  ledger.close();
  await rm(tmp, { recursive: true, force: true });
});

const ledgerUrl = () => `http://127.0.0.1:${ledger.address().port}`;

/** A free loopback port (bound, then released: what `live` does). */
async function freePort() {
  const probe = http.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The environment without any a2a-chaos variable or NODE_PATH, plus `extra`. */
function env(extra) {
  const base = Object.fromEntries(Object.entries(process.env)
    .filter(([k]) => !k.startsWith('A2A_CHAOS_') && k !== 'NODE_PATH'));
  return { ...base, ...extra };
}

/** `node a2a-chaos-adapter.mjs ARGS...` in a child process, until it prints a line matching
 *  `ready` (10 s at most) or exits. Resolves to {child, line, output, code}; `stop()` kills it. */
function launch(args, environment, ready = /^listening (\d+)/m) {
  const child = spawn(process.execPath, [adapter, ...args], { env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve) => {
    const done = (value) => { clearTimeout(timer); resolve({ child, output, ...value }); };
    const timer = setTimeout(() => done({ line: null, code: 'timeout' }), 10_000);
    const seen = (chunk) => {
      output += chunk;
      const m = output.match(ready);
      if (m) done({ line: m });
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => done({ line: null, code }));
  });
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

// --- pure parts --------------------------------------------------------------------------

test('listenArgs moves every form of a TCP listen to the port, and leaves the rest', () => {
  const cb = () => {};
  assert.deepEqual(listenArgs([9999, '127.0.0.1', cb], 5), [5, '127.0.0.1', cb]);
  assert.deepEqual(listenArgs(['9999', cb], 5), [5, cb]);
  assert.deepEqual(listenArgs([], 5), [5]);
  assert.deepEqual(listenArgs([cb], 5), [5, cb]);
  assert.deepEqual(listenArgs([undefined, '::1'], 5), [5, '::1']);
  assert.deepEqual(listenArgs([{ port: 9999, host: '127.0.0.1' }, cb], 5), [{ port: 5, host: '127.0.0.1' }, cb]);
  assert.equal(listenArgs(['/tmp/agent.sock', cb], 5), null);
  assert.equal(listenArgs([{ path: '/tmp/agent.sock' }], 5), null);
  assert.equal(listenArgs([{ fd: 3 }], 5), null);
});

test('instrumentHandler subclasses the SDK class, wrapping executor and store once', async () => {
  class Sdk {
    constructor(agentCard, taskStore, agentExecutor, ...rest) {
      Object.assign(this, { agentCard, taskStore, agentExecutor, rest });
    }
  }
  const saved = process.env.A2A_CHAOS_LEDGER;
  delete process.env.A2A_CHAOS_LEDGER;
  assert.equal(instrumentHandler(Sdk, new Chaos()), Sdk, 'disabled: the class itself');
  if (saved !== undefined) process.env.A2A_CHAOS_LEDGER = saved;

  const chaos = new Chaos({ ledger: ledgerUrl(), replica: 'replica-2' });
  const Handler = instrumentHandler(Sdk, chaos);
  assert.notEqual(Handler, Sdk);
  assert.equal(Handler.name, 'DefaultRequestHandler');
  assert.equal(instrumentHandler(Handler, chaos), Handler, 'never subclassed twice');
  const store = { async load() {}, async save() {} };
  const executor = { async execute() {}, async cancelTask() {} };
  const handler = new Handler('card', store, executor, 'bus', 'push');
  assert.ok(handler instanceof Sdk);
  assert.notEqual(handler.taskStore, store);
  assert.notEqual(handler.agentExecutor, executor);
  assert.deepEqual(handler.rest, ['bus', 'push']);
  // A server that wrapped them itself is not wrapped again (its saves reported once).
  const own = new Handler('card', handler.taskStore, handler.agentExecutor);
  assert.equal(own.taskStore, handler.taskStore);
  assert.equal(own.agentExecutor, handler.agentExecutor);
});

// --- the launcher ------------------------------------------------------------------------

test('run instruments an unchanged server: handler, port and replica header', async (t) => {
  received = [];
  const port = await freePort();
  const asked = await freePort();
  const { child, line, output } = await launch(['run', path.join(tmp, 'app/server.mjs'), String(asked), 'extra'], env({
    A2A_CHAOS_LEDGER: ledgerUrl(), A2A_CHAOS_REPLICA: 'replica-3', A2A_CHAOS_PORT: String(port),
    NODE_PATH: path.join(tmp, 'lib/node_modules'),
  }));
  t.after(() => stop(child));
  assert.ok(line, `the server did not start:\n${output}`);
  assert.equal(Number(line[1]), port, 'it listens on $A2A_CHAOS_PORT, not the port it asked for');

  const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(5000) });
  assert.equal(res.headers.get('x-a2a-chaos-replica'), 'replica-3');
  const seen = await res.json();
  assert.deepEqual(seen, {
    result: 42, argv: [String(asked), 'extra'], script: path.join(tmp, 'app/server.mjs'),
    other: 'another export', namespace: true, instance: true, sdkClass: false, wrapped: true, bus: 'bus',
  });
  assert.deepEqual(received.map((r) => r.path), ['/save', '/effect']);
  assert.deepEqual(received[0].body.artifacts, ['receipt']);
  assert.equal(received[0].body.replica, 'replica-3');
  assert.deepEqual(received[1].body, {
    task_id: 't1', context_id: 'ctx', conversation: 'c1', turn: 1, message_id: 'm1',
    replica: 'replica-3', key: null, sent_ms: 0,
  });
});

test('without a ledger, run only runs the script (NODE_PATH still applies to its imports)', async (t) => {
  received = [];
  const asked = await freePort();
  const { child, line, output } = await launch(['run', path.join(tmp, 'app/server.mjs'), String(asked)], env({
    A2A_CHAOS_PORT: String(await freePort()), NODE_PATH: path.join(tmp, 'lib/node_modules'),
  }));
  t.after(() => stop(child));
  assert.ok(line, `the server did not start:\n${output}`);
  assert.equal(Number(line[1]), asked, 'the port it asked for');
  const res = await fetch(`http://127.0.0.1:${asked}/`, { signal: AbortSignal.timeout(5000) });
  assert.equal(res.headers.get('x-a2a-chaos-replica'), null);
  const seen = await res.json();
  assert.equal(seen.result, 42);
  assert.equal(seen.sdkClass, true, "the SDK's own class");
  assert.equal(seen.wrapped, false);
  assert.deepEqual(received, []);
});

test('without NODE_PATH the stub SDK is not found (the launcher is what resolved it)', async () => {
  const { child, line, code, output } = await launch(['run', path.join(tmp, 'app/server.mjs'), '0'], env({}));
  await stop(child);
  assert.equal(line, null);
  assert.equal(code, 1);
  assert.match(output, /Cannot find package '@a2a-js\/sdk'/);
});

test('run without a script prints the usage (exit 2)', async () => {
  const { line, code, output } = await launch(['run'], env({}));
  assert.equal(line, null);
  assert.equal(code, 2);
  assert.match(output, /usage: node a2a-chaos-adapter\.mjs run SCRIPT/);
});

// --- the example on the real SDK ----------------------------------------------------------

const peer = process.env.A2A_CHAOS_PEER_JS || path.join(root, 'target/peer-a2a-js');
const sdkInstalled = existsSync(path.join(peer, 'node_modules/@a2a-js/sdk/package.json'));

test('examples/my-agent-js on @a2a-js/sdk, through the launcher', {
  skip: sdkInstalled ? false : `no @a2a-js/sdk in ${peer} (tests/peers/a2a-js/setup.sh)`,
}, async (t) => {
  received = [];
  const port = await freePort();
  const { child, line, output } = await launch(['run', path.join(root, 'examples/my-agent-js/server.mjs')], env({
    A2A_CHAOS_LEDGER: ledgerUrl(), A2A_CHAOS_REPLICA: 'replica-1', A2A_CHAOS_PORT: String(port),
    NODE_PATH: path.join(peer, 'node_modules'),
  }), /listening on http:\/\/127\.0\.0\.1:(\d+)/);
  t.after(() => stop(child));
  assert.ok(line, `the example did not start:\n${output}`);
  assert.equal(Number(line[1]), port);

  const send = async (message) => {
    const res = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message } }),
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(res.headers.get('x-a2a-chaos-replica'), 'replica-1');
    const body = await res.json();
    assert.ok(body.result?.task, JSON.stringify(body));
    return body.result.task;
  };
  // A plain text message, as a person would send it: turn 1 of a conversation named after its context.
  const task = await send({ messageId: 'm1', contextId: 'ctx-1', role: 'ROLE_USER', parts: [{ text: 'two coffees' }] });
  assert.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED');
  assert.deepEqual(task.artifacts.map((a) => a.name), ['receipt']);
  const effects = received.filter((r) => r.path === '/effect');
  assert.deepEqual(effects.map((r) => r.body), [{
    task_id: task.id, context_id: 'ctx-1', conversation: 'ctx-1', turn: 1, message_id: 'm1',
    replica: 'replica-1', key: null, sent_ms: 0,
  }]);
  const saves = received.filter((r) => r.path === '/save').map((r) => r.body);
  assert.ok(saves.length >= 2, JSON.stringify(saves));
  assert.deepEqual(saves.at(-1).artifacts, ['receipt']);
  assert.equal(saves.at(-1).state, 'input-required');
  assert.ok(saves.every((s) => s.replica === 'replica-1' && s.mode === 'overwrite'));

  // "No" to "anything else?" completes the task, with no second order.
  const done = await send({ messageId: 'm2', contextId: 'ctx-1', taskId: task.id, role: 'ROLE_USER', parts: [{ text: 'no, thanks' }] });
  assert.equal(done.status.state, 'TASK_STATE_COMPLETED');
  assert.equal(received.filter((r) => r.path === '/effect').length, 1);
  assert.equal(received.filter((r) => r.path === '/save').at(-1).body.state, 'completed');
});
