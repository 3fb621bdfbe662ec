// Smoke test of the Mastra peer (server.mjs) over raw JSON-RPC on loopback.
//
// Starts a tiny ledger stub (in this process) and two replicas (replica-0, replica-1: two
// Node processes, each with its own in-memory Mastra task store), then sends raw A2A
// requests (1.0 method names with `A2A-Version: 1.0`, and 0.3 `message/send` without the
// header) and prints each observation: the request, the answer (shortened) and whether it is
// what Mastra 1.69 is expected to do (A2A-BEHAVIOURS.md §3, or what this peer found).
//
// The ledger stub records every POST /effect and POST /save, and holds the answer to an
// effect whose conversation starts with "hold" until the test releases it (at most
// HOLD_MAX_MS), the way a2a-chaos's `hold-effect` does: that keeps a turn "inside its
// effect" long enough to cancel it or send a follow-up.
//
// Every process it starts is killed when it exits (normally, on an error, on SIGINT or
// SIGTERM); each child's pid is also appended to $A2A_CHAOS_SMOKE_PIDS when set (smoke.sh
// kills those on its own EXIT trap). Every wait is bounded, and a watchdog ends the whole
// run after WATCHDOG_MS. Exit code: 0 when every check held, 1 otherwise.
//
// Usage: DIR/bin/node tests/peers/mastra/smoke.mjs [--install-dir DIR] [--verbose]
// (smoke.sh runs it with the right node.)

import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    'install-dir': { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
});
const installDir = resolvePath(
  opts['install-dir'] || process.env.A2A_CHAOS_MASTRA_DIR || join(here, '..', '..', '..', 'target', 'peer-mastra'),
);

const WATCHDOG_MS = 180_000; // the whole run
const READY_MS = 60_000; // a replica's start (Mastra loads in a few seconds)
const CALL_MS = 15_000; // one JSON-RPC call
const HOLD_MAX_MS = 5_000; // a held effect is answered after this at the latest
const THINK_MS = 300; // long enough to cancel a streaming turn before its effect
const COMPOSE_MS = 10;

// --- processes and cleanup ---------------------------------------------------------------

const children = [];
function killChildren() {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}
process.on('exit', killChildren);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    console.error(`smoke: ${signal}, stopping`);
    process.exit(130);
  });
}
process.on('uncaughtException', (e) => {
  console.error(`smoke: ${e?.stack ?? e}`);
  process.exit(1);
});
process.on('unhandledRejection', (e) => {
  console.error(`smoke: ${e?.stack ?? e}`);
  process.exit(1);
});
const watchdog = setTimeout(() => {
  console.error(`smoke: watchdog: still running after ${WATCHDOG_MS / 1000} s, giving up`);
  process.exit(1);
}, WATCHDOG_MS);

/** A free loopback port (bound, read, released: the same way a2a-chaos picks them). */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- the ledger stub -----------------------------------------------------------------------

const ledger = {
  effects: [], // POST /effect bodies, in arrival order
  saves: [], // POST /save bodies
  pushes: [], // push notifications received at /push (Mastra should send none to loopback)
  held: new Map(), // conversation -> Set of release() functions, one per held effect answer
  waiters: [], // { pred, resolve } woken on each arrival
};

function notify() {
  for (const w of [...ledger.waiters]) {
    if (w.pred()) {
      ledger.waiters.splice(ledger.waiters.indexOf(w), 1);
      w.resolve(true);
    }
  }
}

/** Resolves true once `pred()` holds, false after `ms`. */
function until(pred, ms = CALL_MS) {
  if (pred()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const w = { pred, resolve };
    ledger.waiters.push(w);
    setTimeout(() => {
      const i = ledger.waiters.indexOf(w);
      if (i >= 0) ledger.waiters.splice(i, 1);
      resolve(pred());
    }, ms);
  });
}

/** Answers every held effect of `conversation`. */
function release(conversation) {
  for (const finish of [...(ledger.held.get(conversation) ?? [])]) finish();
}

function startLedger(port) {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const json = JSON.parse(body || '{}');
      const answer = (status, value) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.url === '/save') {
        ledger.saves.push(json);
        notify();
        return answer(200, { version: json.store_version ?? 0 });
      }
      if (req.url.startsWith('/push')) {
        ledger.pushes.push({ url: req.url, headers: req.headers, body: json });
        notify();
        return answer(200, {});
      }
      if (req.url === '/effect') {
        ledger.effects.push(json);
        notify();
        if (String(json.conversation).startsWith('hold')) {
          let done = false;
          const finish = () => {
            if (done) return;
            done = true;
            const set = ledger.held.get(json.conversation);
            set?.delete(finish);
            if (set?.size === 0) ledger.held.delete(json.conversation);
            answer(200, { applied: true });
            notify();
          };
          if (!ledger.held.has(json.conversation)) ledger.held.set(json.conversation, new Set());
          ledger.held.get(json.conversation).add(finish);
          setTimeout(finish, HOLD_MAX_MS);
          return undefined;
        }
        return answer(200, { applied: true });
      }
      return answer(404, { error: 'not found' });
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

// --- replicas ------------------------------------------------------------------------------

const runDir = join(installDir, 'smoke-runs', `run-${Date.now()}-${process.pid}`);

function startReplica(index, port, ledgerUrl) {
  const name = `replica-${index}`;
  mkdirSync(runDir, { recursive: true });
  const log = openSync(join(runDir, `${name}.log`), 'a');
  const child = spawn(
    process.execPath,
    [
      join(here, 'server.mjs'),
      '--port', String(port),
      '--name', name,
      '--ledger', ledgerUrl,
      '--think-ms', String(THINK_MS),
      '--compose-ms', String(COMPOSE_MS),
      '--install-dir', installDir,
    ],
    { stdio: ['ignore', log, log] },
  );
  children.push(child);
  if (process.env.A2A_CHAOS_SMOKE_PIDS) appendFileSync(process.env.A2A_CHAOS_SMOKE_PIDS, `${child.pid}\n`);
  return { name, port, url: `http://127.0.0.1:${port}`, child };
}

async function waitReady(replica) {
  const started = Date.now();
  while (Date.now() - started < READY_MS) {
    if (replica.child.exitCode !== null) break;
    try {
      const res = await fetch(`${replica.url}/.well-known/agent-card.json`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) return Date.now() - started;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  const log = readFileSync(join(runDir, `${replica.name}.log`), 'utf8');
  throw new Error(`${replica.name} did not serve its card within ${READY_MS / 1000} s:\n${log}`);
}

// --- JSON-RPC ------------------------------------------------------------------------------

let rpcId = 0;
const V1 = { 'A2A-Version': '1.0' };

/** One JSON-RPC call; returns { status, headers, json, text }. */
async function rpc(replica, method, params, { headers = V1, signal } = {}) {
  const body = { jsonrpc: '2.0', id: ++rpcId, method, params };
  const res = await fetch(`${replica.url}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: signal ?? AbortSignal.timeout(CALL_MS),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { request: body, status: res.status, headers: res.headers, json, text };
}

/**
 * A streaming call (SendStreamingMessage, SubscribeToTask): reads SSE events until the
 * stream ends, `stopAfter(events)` says stop, or `ms` pass; `onEvent` sees each event.
 * Returns { status, events, ended } (ended: the server closed the stream).
 */
async function stream(replica, method, params, { headers = V1, ms = CALL_MS, stopAfter, onEvent } = {}) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('stream timeout')), ms);
  const body = { jsonrpc: '2.0', id: ++rpcId, method, params };
  const events = [];
  let status;
  let ended = false;
  try {
    const res = await fetch(`${replica.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    status = res.status;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const chunk = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = chunk
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trim())
          .join('\n');
        if (data) {
          const event = JSON.parse(data);
          events.push(event);
          await onEvent?.(event, events);
        }
      }
      if (stopAfter?.(events)) break;
    }
  } catch (e) {
    if (!controller.signal.aborted) events.push({ transportError: String(e?.message ?? e) });
  } finally {
    clearTimeout(timer);
    controller.abort(); // the client hangs up (a no-op when the stream already ended)
  }
  return { request: body, status, events, ended };
}

// --- messages ------------------------------------------------------------------------------

let messageSeq = 0;
const nextId = () => `m${++messageSeq}-${process.pid}`;

/** A 1.0 user message; the turn info as JSON text (Mastra rejects a data part on a new task). */
function message({ conversation, turn, turns, contextId, taskId, messageId, asData = false, text }) {
  const info = { conversation, turn, turns };
  const parts =
    text !== undefined
      ? [{ text }]
      : asData
        ? [{ text: `turn ${turn} of ${conversation}` }, { data: info }]
        : [{ text: JSON.stringify(info) }];
  return {
    messageId: messageId ?? nextId(),
    ...(contextId ? { contextId } : {}),
    ...(taskId ? { taskId } : {}),
    role: 'ROLE_USER',
    parts,
  };
}

// --- observations --------------------------------------------------------------------------

let failures = 0;
let checks = 0;
const short = (value, n = 700) => {
  const s = typeof value === 'string' ? value : JSON.stringify(value);
  return s.length > n ? `${s.slice(0, n)}...(${s.length} chars)` : s;
};

/** Prints one observation and counts it. */
function observe(title, ok, { request, answer, note } = {}) {
  checks += 1;
  if (!ok) failures += 1;
  console.log(`\n[${ok ? 'ok' : 'FAIL'}] ${title}`);
  if (request !== undefined) console.log(`  request:  ${short(request, opts.verbose ? 5000 : 700)}`);
  if (answer !== undefined) console.log(`  answer:   ${short(answer, opts.verbose ? 5000 : 700)}`);
  if (note) console.log(`  note:     ${note}`);
}

const taskOf = (r) => r.json?.result?.task ?? r.json?.result;
const stateOf = (r) => taskOf(r)?.status?.state;
const effectsFor = (conversation, turn) =>
  ledger.effects.filter((e) => e.conversation === conversation && (turn === undefined || e.turn === turn));
const eventKinds = (events) =>
  events.map((e) => {
    const r = e.result ?? {};
    if (e.error) return `error ${e.error.code}`;
    if (e.transportError) return 'transport-error';
    if (r.task) return `task:${r.task.status?.state}`;
    if (r.statusUpdate) return `status:${r.statusUpdate.status?.state}${r.statusUpdate.final ? '(final)' : ''}`;
    if (r.artifactUpdate) return `artifact:${r.artifactUpdate.artifact?.name}${r.artifactUpdate.append ? '+' : ''}`;
    if (r.kind === 'task') return `task:${r.status?.state}`;
    if (r.kind === 'status-update') return `status:${r.status?.state}${r.final ? '(final)' : ''}`;
    if (r.kind === 'artifact-update') return `artifact:${r.artifact?.name}`;
    return 'other';
  });

// --- the run -------------------------------------------------------------------------------

async function main() {
  const ledgerPort = await freePort();
  await startLedger(ledgerPort);
  const ledgerUrl = `http://127.0.0.1:${ledgerPort}`;
  const r0 = startReplica(0, await freePort(), ledgerUrl);
  const r1 = startReplica(1, await freePort(), ledgerUrl);
  const [t0, t1] = [await waitReady(r0), await waitReady(r1)];
  console.log(`smoke: ledger ${ledgerUrl}; ${r0.name} ${r0.url} ready in ${t0} ms, ${r1.name} ${r1.url} ready in ${t1} ms`);
  console.log(`smoke: replica logs in ${runDir}`);

  // 1. The card, at the root path (the front's mapping) and at Mastra's own path.
  {
    const res = await fetch(`${r0.url}/.well-known/agent-card.json`, { signal: AbortSignal.timeout(CALL_MS) });
    const card = await res.json();
    observe(
      'card at /.well-known/agent-card.json (mapped onto Mastra\'s /api/.well-known/scripted/agent-card.json), named by x-a2a-chaos-replica',
      res.ok && res.headers.get('x-a2a-chaos-replica') === 'replica-0' && card.url?.endsWith('/api/a2a/scripted'),
      { answer: { status: res.status, vary: res.headers.get('vary'), card } },
    );
    const v1 = await fetch(`${r0.url}/api/.well-known/scripted/agent-card.json`, {
      headers: V1,
      signal: AbortSignal.timeout(CALL_MS),
    });
    const v1card = await v1.json();
    observe(
      'card with A2A-Version: 1.0 is the 1.0 card (supportedInterfaces 0.3 and 1.0, same URL); Vary: A2A-Version',
      v1.ok && Array.isArray(v1card.supportedInterfaces) && v1.headers.get('vary') === 'A2A-Version',
      { answer: v1card },
    );
    const native = await fetch(`${r0.url}/api/a2a/`, { method: 'POST', signal: AbortSignal.timeout(CALL_MS) });
    observe('Mastra itself serves nothing at the A2A root: POST /api/a2a/ is 404', native.status === 404, {
      answer: { status: native.status },
    });
  }

  // 2. Turn 1 and turn 2 of c1 on replica-0.
  let c1task;
  {
    const r = await rpc(r0, 'SendMessage', { message: message({ conversation: 'c1', turn: 1, turns: 2, contextId: 'ctx-c1' }) });
    c1task = taskOf(r);
    observe(
      'turn 1 of c1 on replica-0 (SendMessage, blocking): input-required, one effect; Mastra made NO artifact (the suspended step\'s text is not in the result)',
      stateOf(r) === 'TASK_STATE_INPUT_REQUIRED' && effectsFor('c1', 1).length === 1 && (c1task?.artifacts ?? []).length === 0,
      { request: r.request, answer: r.json },
    );
    const r2 = await rpc(r0, 'SendMessage', {
      message: message({ conversation: 'c1', turn: 2, turns: 2, contextId: 'ctx-c1', taskId: c1task.id, asData: true }),
    });
    const t = taskOf(r2);
    observe(
      'turn 2 of c1 on replica-0 (a data part: the resume data of the suspended run): completed, one effect, artifact response.txt = "turn-1\\nturn-2\\n"',
      stateOf(r2) === 'TASK_STATE_COMPLETED' &&
        effectsFor('c1', 2).length === 1 &&
        t?.artifacts?.length === 1 &&
        t.artifacts[0].name === 'response.txt' &&
        t.artifacts[0].parts?.[0]?.text === 'turn-1\nturn-2\n',
      { request: r2.request, answer: r2.json },
    );
    const again = await rpc(r0, 'SendMessage', {
      message: message({ conversation: 'c1', turn: 3, turns: 3, taskId: c1task.id }),
    });
    observe('a message to the completed task: -32600 (terminal: cannot be restarted)', again.json?.error?.code === -32600, {
      request: again.request,
      answer: again.json,
    });
  }

  // 3. Another process does not know the task.
  {
    const r = await rpc(r1, 'GetTask', { id: c1task.id });
    observe('GetTask of c1\'s task on replica-1: -32001 TaskNotFound (per-process store)', r.json?.error?.code === -32001, {
      request: r.request,
      answer: r.json,
    });
    const f = await rpc(r1, 'SendMessage', { message: message({ conversation: 'c1', turn: 2, turns: 2, taskId: c1task.id }) });
    observe('a follow-up naming c1\'s task on replica-1: -32001', f.json?.error?.code === -32001, { answer: f.json });
    const c = await rpc(r1, 'CancelTask', { id: c1task.id });
    observe('CancelTask of c1\'s task on replica-1: -32001', c.json?.error?.code === -32001, { answer: c.json });
    // The handler's error is thrown inside the SSE body: the answer is HTTP 200 with the
    // event-stream headers, then the body breaks off before any event (not a clean end).
    const s = await stream(r1, 'SubscribeToTask', { id: c1task.id }, { ms: 3000 });
    observe(
      'SubscribeToTask of c1\'s task on replica-1: HTTP 200 (text/event-stream), no event, then the body is cut (not a clean end)',
      s.status === 200 && !s.ended && s.events.length === 1 && s.events[0].transportError !== undefined,
      { request: s.request, answer: { status: s.status, events: s.events, ended: s.ended } },
    );
    const ss = await stream(r1, 'SendStreamingMessage', {
      message: message({ conversation: 'c1', turn: 2, turns: 2, taskId: c1task.id }),
    }, { ms: 3000 });
    observe(
      'SendStreamingMessage naming c1\'s task on replica-1: the same (HTTP 200, no event, body cut)',
      ss.status === 200 && !ss.ended && ss.events.length === 1 && ss.events[0].transportError !== undefined,
      { request: ss.request, answer: { status: ss.status, events: ss.events, ended: ss.ended } },
    );
  }

  // 4. A resend of the same messageId runs again, as a new task (no messageId dedup).
  {
    const m = message({ conversation: 'c2', turn: 1, turns: 2, contextId: 'ctx-c2' });
    const a = await rpc(r0, 'SendMessage', { message: m });
    const b = await rpc(r0, 'SendMessage', { message: m });
    const c = await rpc(r1, 'SendMessage', { message: m });
    const ids = [taskOf(a)?.id, taskOf(b)?.id, taskOf(c)?.id];
    observe(
      'the same message (same messageId) sent twice to replica-0 and once to replica-1: three tasks, three effects',
      effectsFor('c2', 1).length === 3 && new Set(ids).size === 3 && ids.every(Boolean),
      { request: a.request, answer: { tasks: ids, effects: effectsFor('c2', 1) } },
    );
  }

  // 5. Cancel during a blocking turn (held inside its effect at the ledger).
  {
    const m = message({ conversation: 'hold-c3', turn: 1, turns: 2, contextId: 'ctx-c3' });
    const blocking = rpc(r0, 'SendMessage', { message: m });
    await until(() => effectsFor('hold-c3').length > 0);
    const taskId = effectsFor('hold-c3')[0]?.task_id;
    const cancel = await rpc(r0, 'CancelTask', { id: taskId });
    observe(
      'CancelTask on the owner while a blocking turn is inside its effect: success, canceled',
      cancel.json?.result?.status?.state === 'TASK_STATE_CANCELED',
      { request: cancel.request, answer: cancel.json },
    );
    release('hold-c3');
    const answer = await blocking;
    observe(
      'the blocking caller is answered when its run ends, with the canceled task (the run went on: its effect stands)',
      stateOf(answer) === 'TASK_STATE_CANCELED' && effectsFor('hold-c3').length === 1,
      { answer: answer.json },
    );
    const second = await rpc(r0, 'CancelTask', { id: taskId });
    observe('a second CancelTask: -32002 TaskNotCancelable (cancel is not idempotent)', second.json?.error?.code === -32002, {
      request: second.request,
      answer: second.json,
    });
    const got = await rpc(r0, 'GetTask', { id: taskId });
    observe('GetTask afterwards: still canceled (the run\'s final save was skipped: skipIfCanceled)', stateOf(got) === 'TASK_STATE_CANCELED', {
      answer: got.json,
    });
  }

  // 6. Non-blocking follow-up to a working task; a blocking one runs alongside.
  {
    const first = await rpc(r0, 'SendMessage', {
      message: message({ conversation: 'hold-c4', turn: 1, turns: 3, contextId: 'ctx-c4' }),
      configuration: { returnImmediately: true },
    });
    const taskId = taskOf(first)?.id;
    observe('turn 1 with returnImmediately: true answers at once with the working task', stateOf(first) === 'TASK_STATE_WORKING', {
      request: first.request,
      answer: first.json,
    });
    await until(() => effectsFor('hold-c4').length > 0);
    const fm = message({ conversation: 'hold-c4', turn: 2, turns: 3, taskId });
    const follow = await rpc(r0, 'SendMessage', { message: fm, configuration: { returnImmediately: true } });
    const history = (taskOf(follow)?.history ?? []).map((h) => h.messageId);
    observe(
      'a non-blocking follow-up to the working task: success with the current task (working); the message is not processed',
      stateOf(follow) === 'TASK_STATE_WORKING' && !history.includes(fm.messageId),
      { request: follow.request, answer: follow.json },
    );
    const bm = message({ conversation: 'hold-c4', turn: 2, turns: 3, taskId });
    const blockingFollow = rpc(r0, 'SendMessage', { message: bm });
    const both = await until(() => effectsFor('hold-c4').length >= 2, 3000);
    release('hold-c4');
    const answer = await blockingFollow;
    await until(() => ledger.held.size === 0, HOLD_MAX_MS + 1000);
    await sleep(200);
    const got = await rpc(r0, 'GetTask', { id: taskId });
    observe(
      'a blocking follow-up to the working task runs alongside the first run (no per-task lock): a second effect',
      both && effectsFor('hold-c4', 2).length === 1 && !effectsFor('hold-c4').some((e) => e.message_id === fm.messageId),
      {
        request: blockingFollow.request ?? bm,
        answer: {
          followUpAnswer: stateOf(answer),
          effects: effectsFor('hold-c4').map((e) => `turn ${e.turn} ${e.message_id}`),
          finalTask: {
            state: stateOf(got),
            statusText: taskOf(got)?.status?.message?.parts?.[0]?.text,
            history: taskOf(got)?.history?.map((h) => h.messageId),
            artifacts: taskOf(got)?.artifacts,
          },
          saves: ledger.saves.filter((x) => x.task_id === taskId).map((x) => `${x.store_version}:${x.save_kind}:${x.state}:[${x.history}]`),
        },
      },
    );
  }

  // 7. Streaming: a streaming send, resubscribe on the owner during a turn, cancel of a
  // streaming turn before its effect, and a client that hangs up.
  {
    const s = await stream(r0, 'SendStreamingMessage', {
      message: message({ conversation: 'c5', turn: 1, turns: 2, contextId: 'ctx-c5' }),
    });
    const kinds = eventKinds(s.events);
    observe(
      'SendStreamingMessage (turn 1 of c5): task snapshot first, then the text as artifact response.txt, then a final input-required status',
      s.status === 200 && kinds[0] === 'task:TASK_STATE_WORKING' && kinds.at(-1) === 'status:TASK_STATE_INPUT_REQUIRED(final)' && s.ended,
      { request: s.request, answer: { kinds, events: s.events } },
    );
    const taskId = s.events[0]?.result?.task?.id;

    // Resubscribe while turn 2 is inside its (held) effect.
    const turn2 = rpc(r0, 'SendMessage', {
      message: message({ conversation: 'hold-c5', turn: 2, turns: 2, taskId }),
    });
    await until(() => effectsFor('hold-c5').length > 0);
    const sub = stream(r0, 'SubscribeToTask', { id: taskId }, { ms: HOLD_MAX_MS + 5000 });
    await sleep(300);
    release('hold-c5');
    const [subbed, t2] = [await sub, await turn2];
    const subKinds = eventKinds(subbed.events);
    observe(
      'SubscribeToTask on the owner during turn 2: the task snapshot (working), then the artifact and status changes, ending at completed',
      subKinds[0] === 'task:TASK_STATE_WORKING' && subKinds.at(-1) === 'status:TASK_STATE_COMPLETED(final)' && subbed.ended,
      { request: subbed.request, answer: { kinds: subKinds, events: subbed.events, turn2: stateOf(t2) } },
    );
    const done = await stream(r0, 'SubscribeToTask', { id: taskId }, { ms: 3000 });
    observe(
      'SubscribeToTask of a completed task: just the task snapshot, then the stream ends (no UnsupportedOperation error)',
      eventKinds(done.events).join(',') === 'task:TASK_STATE_COMPLETED' && done.ended,
      { answer: { events: done.events } },
    );

    // Cancel a streaming turn while the model is still thinking (before its effect).
    const before = ledger.effects.length;
    let canceled;
    const cs = await stream(
      r0,
      'SendStreamingMessage',
      { message: message({ conversation: 'c6', turn: 1, turns: 2, contextId: 'ctx-c6' }) },
      {
        ms: 10_000,
        onEvent: async (event, events) => {
          if (events.length === 1) canceled = await rpc(r0, 'CancelTask', { id: event.result?.task?.id });
        },
      },
    );
    await sleep(THINK_MS + 300);
    observe(
      'CancelTask of a streaming turn during its think: canceled, the run is aborted (no effect), the stream ends with a final canceled status',
      canceled?.json?.result?.status?.state === 'TASK_STATE_CANCELED' &&
        effectsFor('c6').length === 0 &&
        eventKinds(cs.events).at(-1) === 'status:TASK_STATE_CANCELED(final)',
      { request: canceled?.request, answer: { cancel: canceled?.json, kinds: eventKinds(cs.events), newEffects: ledger.effects.length - before } },
    );

    // The client hangs up on a streaming turn during its think.
    const hang = await stream(
      r0,
      'SendStreamingMessage',
      { message: message({ conversation: 'c7', turn: 1, turns: 2, contextId: 'ctx-c7' }) },
      { ms: 10_000, stopAfter: (events) => events.length >= 1 },
    );
    const hungId = hang.events[0]?.result?.task?.id;
    await sleep(THINK_MS + 500);
    const got = await rpc(r0, 'GetTask', { id: hungId });
    observe(
      'a client that hangs up on a streaming turn (after the first event): Mastra aborts the run and cancels the task ("the request was aborted"); no effect',
      stateOf(got) === 'TASK_STATE_CANCELED' && effectsFor('c7').length === 0,
      { answer: got.json },
    );
  }

  // 7b. A streaming follow-up (resumeStream), and a blocking follow-up that lands while a
  // streaming turn is working (each run saves its own copy of the task).
  {
    const t1 = await rpc(r0, 'SendMessage', { message: message({ conversation: 'c10', turn: 1, turns: 3, contextId: 'ctx-c10' }) });
    const taskId = taskOf(t1)?.id;
    const s2 = await stream(r0, 'SendStreamingMessage', { message: message({ conversation: 'c10', turn: 2, turns: 3, taskId }) });
    observe(
      'a streaming follow-up to an input-required task resumes the run (resumeStream): events and the final state',
      eventKinds(s2.events).at(-1) === 'status:TASK_STATE_INPUT_REQUIRED(final)' && effectsFor('c10', 2).length === 1,
      { request: s2.request, answer: { kinds: eventKinds(s2.events), events: s2.events } },
    );

    const sm = message({ conversation: 'hold-c11', turn: 1, turns: 3, contextId: 'ctx-c11' });
    let streamTaskId;
    const st = stream(r0, 'SendStreamingMessage', { message: sm }, {
      ms: HOLD_MAX_MS + 8000,
      onEvent: (event) => {
        streamTaskId ??= event.result?.task?.id;
      },
    });
    await until(() => effectsFor('hold-c11').length > 0);
    const fm = message({ conversation: 'c11', turn: 2, turns: 3, taskId: streamTaskId });
    const follow = await rpc(r0, 'SendMessage', { message: fm });
    release('hold-c11');
    const streamed = await st;
    await sleep(300);
    const got = await rpc(r0, 'GetTask', { id: streamTaskId });
    const history = (taskOf(got)?.history ?? []).map((h) => h.messageId);
    observe(
      'a blocking follow-up while a streaming turn is inside its effect: it runs (a second effect) and answers; the stream\'s later saves write its own copy of the task, without the follow-up\'s message',
      effectsFor('c11', 2).length === 1 && !history.includes(fm.messageId),
      {
        request: follow.request,
        answer: {
          followUp: stateOf(follow),
          stream: eventKinds(streamed.events),
          finalTask: { state: stateOf(got), history, artifacts: taskOf(got)?.artifacts },
          saves: ledger.saves.filter((x) => x.task_id === streamTaskId).map((x) => `${x.store_version}:${x.save_kind}:${x.state}:[${x.history}]`),
        },
      },
    );
    // Two blocking follow-ups to an input-required task: the first claims the suspended run
    // (a compare-and-swap to working) and resumes it; the second finds it working with a
    // suspended run and only waits for it to leave working.
    const t12 = await rpc(r0, 'SendMessage', { message: message({ conversation: 'c12', turn: 1, turns: 3, contextId: 'ctx-c12' }) });
    const id12 = taskOf(t12)?.id;
    const firstFollow = rpc(r0, 'SendMessage', { message: message({ conversation: 'hold-c12', turn: 2, turns: 3, taskId: id12 }) });
    await until(() => effectsFor('hold-c12').length > 0);
    const m2 = message({ conversation: 'c12', turn: 2, turns: 3, taskId: id12 });
    const secondFollow = rpc(r0, 'SendMessage', { message: m2 });
    await sleep(300);
    release('hold-c12');
    const [f1, f2] = [await firstFollow, await secondFollow];
    observe(
      'two blocking follow-ups to an input-required task: one resumes the run; the other waits until it leaves working and is answered with that task, its message not processed (no effect, not in the history)',
      stateOf(f1) === 'TASK_STATE_INPUT_REQUIRED' &&
        stateOf(f2) === 'TASK_STATE_INPUT_REQUIRED' &&
        effectsFor('c12', 2).length === 0 &&
        !(taskOf(f2)?.history ?? []).some((h) => h.messageId === m2.messageId),
      {
        request: m2,
        answer: {
          first: stateOf(f1),
          second: stateOf(f2),
          effects: ledger.effects.filter((e) => e.task_id === id12).map((e) => `${e.conversation}#${e.turn} ${e.message_id}`),
          history: taskOf(f2)?.history?.map((h) => h.messageId),
        },
      },
    );

    // A follow-up with a data part while a first turn is working: it is not a resume, so
    // Mastra converts it for the model and fails: the run's failure is saved over the
    // working task (failed), and the first run's final save then reopens it.
    const f13 = await rpc(r0, 'SendMessage', {
      message: message({ conversation: 'hold-c13', turn: 1, turns: 2, contextId: 'ctx-c13' }),
      configuration: { returnImmediately: true },
    });
    const id13 = taskOf(f13)?.id;
    await until(() => effectsFor('hold-c13').length > 0);
    const d13 = await rpc(r0, 'SendMessage', {
      message: message({ conversation: 'hold-c13', turn: 2, turns: 2, taskId: id13, asData: true }),
    });
    release('hold-c13');
    await until(() => ledger.saves.filter((x) => x.task_id === id13).length >= 6, 5000);
    const states13 = ledger.saves.filter((x) => x.task_id === id13).map((x) => x.state);
    observe(
      'a follow-up with a data part to a working task: -32603; the task is saved failed, then the first run\'s final save reopens it (failed -> input-required)',
      d13.json?.error?.code === -32603 && states13.join(',') === 'submitted,working,working,working,failed,input-required',
      { request: d13.request, answer: { error: d13.json?.error?.message, saves: states13 } },
    );

    const list = await rpc(r0, 'ListTasks', { contextId: 'ctx-c11' });
    observe('ListTasks (1.0) filters this process\'s tasks by contextId', list.json?.result?.tasks?.length === 1, {
      request: list.request,
      answer: list.json,
    });
  }

  // 8. Protocol versions and method names.
  {
    const m = { kind: 'message', messageId: nextId(), role: 'user', contextId: 'ctx-c8', parts: [{ kind: 'text', text: '{"conversation":"c8","turn":1,"turns":1}' }] };
    const r = await rpc(r1, 'message/send', { message: m }, { headers: {} });
    observe(
      '0.3 message/send without A2A-Version (turn 1 of a 1-turn c8 on replica-1): a bare 0.3 task (kind, state "completed"), one effect',
      r.json?.result?.kind === 'task' && r.json?.result?.status?.state === 'completed' && effectsFor('c8').length === 1,
      { request: r.request, answer: r.json },
    );
    const pascal = await rpc(r1, 'GetTask', { id: 'x' }, { headers: {} });
    observe('a 1.0 method (GetTask) without the header: -32601 method not found', pascal.json?.error?.code === -32601, {
      request: pascal.request,
      answer: pascal.json,
    });
    const bad = await rpc(r1, 'GetTask', { id: 'x' }, { headers: { 'A2A-Version': '2.0' } });
    observe('A2A-Version: 2.0: -32009 VersionNotSupported', bad.json?.error?.code === -32009, { answer: bad.json });
    const slash = await rpc(r1, 'tasks/get', { id: 'x' });
    observe('a slash name under A2A-Version: 1.0 works too (tasks/get → -32001 for an unknown id)', slash.json?.error?.code === -32001, {
      answer: slash.json,
    });
    const data = await rpc(r1, 'SendMessage', { message: message({ conversation: 'c9', turn: 1, turns: 2, contextId: 'ctx-c9', asData: true }) });
    observe(
      'a NEW task from a message with a data part (a2a-chaos\'s turn message): -32603 "Data parts are not supported in core messages", no effect',
      data.json?.error?.code === -32603 && /Data parts/.test(data.json?.error?.message ?? '') && effectsFor('c9').length === 0,
      { request: data.request, answer: { ...data.json, error: { ...data.json?.error, data: '(stack trace)' } } },
    );
    const failedSaves = ledger.saves.filter((x) => x.context_id === 'ctx-c9');
    observe(
      '... and that task was created and left failed (create, working, failed)',
      failedSaves.map((x) => x.state).join(',') === 'submitted,working,failed',
      { answer: failedSaves.map((x) => `${x.store_version}:${x.save_kind}:${x.state}`) },
    );
    const plain = await rpc(r1, 'SendMessage', { message: message({ text: 'hello', contextId: 'ctx-plain' }) });
    const plainTask = taskOf(plain);
    const plain2 = await rpc(r1, 'SendMessage', { message: message({ text: 'again', taskId: plainTask?.id }) });
    observe(
      'plain text: a new task is turn 1 of a 2-turn conversation named after its contextId, the next message its turn 2',
      stateOf(plain) === 'TASK_STATE_INPUT_REQUIRED' &&
        stateOf(plain2) === 'TASK_STATE_COMPLETED' &&
        effectsFor('ctx-plain', 1).length === 1 &&
        effectsFor('ctx-plain', 2).length === 1,
      { answer: { turn1: stateOf(plain), turn2: stateOf(plain2), effects: effectsFor('ctx-plain') } },
    );
    const mismatch = await rpc(r1, 'SendMessage', {
      message: message({ text: 'x', contextId: 'ctx-other' }),
    });
    const mm2 = await rpc(r1, 'SendMessage', {
      message: message({ text: 'y', taskId: taskOf(mismatch)?.id, contextId: 'ctx-not-the-tasks' }),
    });
    observe(
      'a follow-up whose contextId differs from its task\'s: accepted and run (never compared)',
      stateOf(mm2) === 'TASK_STATE_COMPLETED' && taskOf(mm2)?.contextId === 'ctx-other',
      { request: mm2.request, answer: mm2.json },
    );
  }

  // 8b. Push: a config is accepted at registration; the delivery to a loopback URL is
  // refused at send time, silently (the ledger stub's /push never hears from Mastra).
  {
    const pushUrl = `${ledgerUrl}/push`;
    const r = await rpc(r1, 'SendMessage', {
      message: message({ conversation: 'c14', turn: 1, turns: 2, contextId: 'ctx-c14' }),
      configuration: { taskPushNotificationConfig: { url: pushUrl, token: 'tok-14' } },
    });
    const id14 = taskOf(r)?.id;
    const cfg = await rpc(r1, 'CreateTaskPushNotificationConfig', { taskId: id14, id: 'second', url: pushUrl });
    const list = await rpc(r1, 'ListTaskPushNotificationConfigs', { taskId: id14 });
    const r2 = await rpc(r1, 'SendMessage', { message: message({ conversation: 'c14', turn: 2, turns: 2, taskId: id14 }) });
    await sleep(1000);
    observe(
      'push to a loopback URL: registration succeeds (SendMessage config and CreateTaskPushNotificationConfig), but no notification is ever sent (rejected at send time, no error to anyone)',
      stateOf(r) === 'TASK_STATE_INPUT_REQUIRED' &&
        cfg.json?.result?.url === pushUrl &&
        list.json?.result?.configs?.length === 2 &&
        stateOf(r2) === 'TASK_STATE_COMPLETED' &&
        ledger.pushes.length === 0,
      { request: cfg.request, answer: { create: cfg.json, list: list.json, pushesReceived: ledger.pushes.length } },
    );
  }

  // 9. The save log and the final tasks.
  {
    const c1saves = ledger.saves.filter((s) => s.task_id === c1task.id);
    observe(
      'saves of c1\'s task reported in order with the store\'s versions 1..n (create, working, input-required; claim, append, working, completed)',
      c1saves.map((s) => s.store_version).join(',') === c1saves.map((_, i) => i + 1).join(',') &&
        c1saves.map((s) => s.save_kind).join(',') === 'create,overwrite,overwrite,cas,cas,overwrite,overwrite',
      { answer: c1saves.map((s) => `${s.store_version}:${s.save_kind}:${s.state}:[${s.artifacts}]`) },
    );
    const d0 = await (await fetch(`${r0.url}/__a2a_chaos/tasks`, { signal: AbortSignal.timeout(CALL_MS) })).json();
    const d1 = await (await fetch(`${r1.url}/__a2a_chaos/tasks?ids=${c1task.id}`, { signal: AbortSignal.timeout(CALL_MS) })).json();
    writeFileSync(join(runDir, 'tasks-replica-0.json'), JSON.stringify(d0, null, 2));
    const t = d0.tasks?.[c1task.id];
    observe(
      'GET /__a2a_chaos/tasks: replica-0 holds c1\'s task (A2A 1.0 JSON, completed); replica-1 does not',
      t?.status?.state === 'TASK_STATE_COMPLETED' && Object.keys(d1.tasks ?? {}).length === 0,
      { answer: { replica0: Object.keys(d0.tasks ?? {}).length + ' tasks', c1: t, replica1: d1 } },
    );
  }

  console.log(`\n${checks - failures} passed, ${failures} failed`);
  clearTimeout(watchdog);
  process.exit(failures === 0 ? 0 : 1);
}

main();
