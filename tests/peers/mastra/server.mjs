// A real Mastra replica that performs a2a-chaos's scripted turns.
//
// One process is one replica. It runs Mastra's own A2A server code, unchanged:
//
// - the HTTP server `mastra build` produces: `createHonoServer` from @mastra/deployer/server
//   (the Hono app with Mastra's server adapter and every built-in route under the `/api`
//   prefix), served by @hono/node-server on 127.0.0.1;
// - Mastra's A2A routes and handlers from @mastra/server (`POST /api/a2a/{agentId}`,
//   `GET /api/.well-known/{agentId}/agent-card.json`), with the per-process
//   `InMemoryTaskStore` that createHonoServer makes;
// - one @mastra/core `Agent` ("scripted") whose model is FAKE (no network): the model's
//   answer is the scripted agent's turn (below).
//
// a2a-chaos talks to a replica at `POST /` and reads its card at
// `/.well-known/agent-card.json`, so a thin front in this file maps those two paths onto the
// agent's Mastra paths (every other path, including the native `/api/...` ones, goes to
// Mastra as it is) and adds `x-a2a-chaos-replica: <name>` to every answer. It also serves
// `GET /__a2a_chaos/tasks` (the final tasks, below). The front never changes a request
// body or an answer body.
//
// The turn. Mastra's handler sets the task `working` and calls the agent; one model call is
// one turn of a conversation:
//   1. it reads {conversation, turn, turns} from what Mastra gave the model: on a new task
//      (or a follow-up to a working task) the user message's text, parsed as JSON when it is
//      JSON; on the follow-up to an input-required task, the resume data Mastra extracted
//      from the follow-up message (its data part, else its text, parsed as JSON when it can
//      be). A text that is not such JSON is a plain turn: a new task is turn 1 of a 2-turn
//      conversation named after its contextId, a message on an existing task is its next
//      turn (distinct user messages already in the task's history, plus one). Numbers may
//      come as doubles (1.0); they are truncated to whole numbers.
//   2. it thinks (--think-ms), POSTs the business effect to {ledger}/effect with the body
//      the a2a-python peer sends, and composes (--compose-ms);
//   3. it answers the text "turn-N" (plus a newline); before the conversation's last turn it
//      also calls the tool `awaitNextTurn`, which suspends the run (Mastra's human-in-the-
//      loop: `context.agent.suspend()`), and Mastra turns a suspended run into
//      `input-required`; on the last turn the run finishes and Mastra completes the task.
//   Mastra, not this file, decides the artifacts: one artifact "response.txt", replaced at
//   each run end: on the send path the run's text so far without the step that suspended
//   (so none after turn 1), on a stream that stream's own text (README.md).
//   The model honours the abort signal Mastra passes (a cancel or a client disconnect
//   aborts only streaming runs): an aborted turn stops before its effect.
//   The ids the effect needs (task, context, message) are not given to a model by Mastra;
//   the front keeps the JSON-RPC request's message in an AsyncLocalStorage scope for the
//   request, and the save observer (below) notes there which task the request saved.
//
// Saves. InMemoryTaskStore.prototype.save is wrapped (the store createHonoServer makes is
// an instance of it): the original save runs exactly as before, and each save it accepted
// is then reported to {ledger}/save, in the order the store applied them (one chain per
// process), before the save's caller continues (as the a2a-python peer does):
//   - `mode`: "cancel" for a save that writes the canceled state, with the store's version
//     (`version`); every other save is reported as "overwrite" without a version, so that
//     today's observer (src/live/observer.rs) numbers them itself (its numbers equal the
//     store's, since every accepted save of a task is reported, in order) and infers from
//     the content which version each was built on. Mastra's store has versions, but most of
//     its saves are not compare-and-swap (README.md), so this is the faithful reading.
//   - `at_unix_ms`: when the store applied the save (wall clock, ms): the observer books the
//     save then, not at the report's arrival, since Mastra's listeners (a subscription) hear
//     of it before the report lands.
//   - extra fields the observer ignores today: `store_version` (the version Mastra's store
//     gave the save), `store_before` (the version it replaced, 0 = none),
//     `expected_version` (the expectedVersion the handler passed; null = none: an
//     unconditional overwrite) and `save_kind` ("create", "cas", "overwrite", "cancel").
//   A save refused for a version conflict, or skipped because the task was canceled
//   (`skipIfCanceled`), wrote nothing and is not reported.
//
// Final tasks. The store is per process and in memory (no database to dump), so
// `GET /__a2a_chaos/tasks[?ids=ID,ID...]` answers {"tasks": {id: task}} for the tasks this
// process holds (all, or those named), each rendered as A2A 1.0 JSON by Mastra's own
// GetTask handler (the same JSON a `GetTask` with `A2A-Version: 1.0` returns).
//
// Usage: node server.mjs --port P --name replica-0 --ledger http://127.0.0.1:L
//            [--think-ms 40] [--compose-ms 10] [--ledger-timeout-ms 30000]
//            [--install-dir DIR] [--log-level warn]
// The packages come from DIR (default $A2A_CHAOS_MASTRA_DIR, else <repo>/target/peer-mastra,
// made by tests/peers/mastra/setup.sh); run it with DIR/bin/node (Node >= 22.13).

import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** The agent's id: its Mastra paths are /api/a2a/scripted and /api/.well-known/scripted/... */
const AGENT_ID = 'scripted';
/** The tool whose suspension ends a turn input-required. */
const AWAIT_TOOL = 'awaitNextTurn';
/** A conversation made of plain text messages is this long (as in the a2a-python peer). */
const DEFAULT_TURNS = 2;
/** How long the effect POST may wait for the ledger by default (a scenario may hold it);
 * a2a-chaos passes --ledger-timeout-ms 500, the simulated replica's (Timing::ledger_timeout
 * in src/replica/mod.rs), as it does to the a2a-python peer. */
const LEDGER_TIMEOUT_MS = 30_000;

// --- command line ------------------------------------------------------------------------

function cli() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      name: { type: 'string', default: 'replica-0' },
      ledger: { type: 'string' },
      'think-ms': { type: 'string', default: '40' },
      'compose-ms': { type: 'string', default: '10' },
      'ledger-timeout-ms': { type: 'string', default: String(LEDGER_TIMEOUT_MS) },
      'install-dir': { type: 'string' },
      'log-level': { type: 'string', default: 'warn' },
      help: { type: 'boolean', default: false },
    },
  });
  const usage =
    'usage: node server.mjs --port P --name replica-N --ledger http://127.0.0.1:L ' +
    '[--think-ms 40] [--compose-ms 10] [--ledger-timeout-ms 30000] [--install-dir DIR] [--log-level warn]';
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port <= 0 || !values.ledger) {
    console.error(`${usage}\n(--port and --ledger are required)`);
    process.exit(2);
  }
  const here = dirname(fileURLToPath(import.meta.url));
  return {
    port,
    name: values.name,
    ledger: values.ledger.replace(/\/+$/, ''),
    thinkMs: Number(values['think-ms']),
    composeMs: Number(values['compose-ms']),
    ledgerTimeoutMs: Number(values['ledger-timeout-ms']),
    installDir: resolvePath(
      values['install-dir'] ||
        process.env.A2A_CHAOS_MASTRA_DIR ||
        join(here, '..', '..', '..', 'target', 'peer-mastra'),
    ),
    logLevel: values['log-level'],
  };
}

// --- small helpers -------------------------------------------------------------------------

/** Sleeps `ms`; rejects at once with an AbortError when `signal` aborts. */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function abortError(signal) {
  return signal?.reason instanceof Error
    ? signal.reason
    : new DOMException('The operation was aborted.', 'AbortError');
}

/** POSTs JSON and returns the parsed answer; a non-2xx answer is an error. */
async function postJson(url, body, timeoutMs = LEDGER_TIMEOUT_MS) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${url} answered ${res.status}: ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : {};
}

/** The object as {conversation, turn, turns} when it is the a2a-chaos turn, else null. */
function asTurn(value) {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  if (!('conversation' in value && 'turn' in value && 'turns' in value)) return null;
  const turn = Math.trunc(Number(value.turn));
  const turns = Math.trunc(Number(value.turns));
  if (!Number.isFinite(turn) || !Number.isFinite(turns)) return null;
  // The agent's shape for the turn (src/replica/shape.rs): `effect: false` performs none.
  // Progress updates are not saved by Mastra's handler (it saves per step), so this agent
  // thinks through them as one think.
  const effect = value.effect !== false;
  return { conversation: String(value.conversation), turn, turns, scripted: true, effect };
}

/** `text` parsed as JSON, or undefined when it is not JSON. */
function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// --- the request scope ---------------------------------------------------------------------

/**
 * Per HTTP request: the JSON-RPC message it carries (messageId, taskId, contextId) and,
 * once the store has saved it, the task the request created or continued. Mastra does not
 * pass these ids to a model; the model and the save observer read them here.
 */
const requestScope = new AsyncLocalStorage();

function scopeOf(bodyText) {
  const body = parseJson(bodyText);
  const message = body?.params?.message;
  return {
    method: typeof body?.method === 'string' ? body.method : undefined,
    messageId: typeof message?.messageId === 'string' ? message.messageId : undefined,
    contextId: typeof message?.contextId === 'string' ? message.contextId : undefined,
    taskId: typeof message?.taskId === 'string' && message.taskId ? message.taskId : undefined,
    store: undefined,
  };
}

// --- the save observer ---------------------------------------------------------------------

/** Every InMemoryTaskStore that saved something (createHonoServer makes exactly one). */
const stores = new Set();

/**
 * Wraps InMemoryTaskStore.prototype.save so that every save it accepts is reported to the
 * ledger host. The original method runs unchanged; its body is synchronous up to its
 * return, so the version read just before calling it is the one it replaces.
 */
function observeSaves(InMemoryTaskStore, { replica, ledger }) {
  const originalSave = InMemoryTaskStore.prototype.save;
  let chain = Promise.resolve(); // reports go out one at a time, in the order of the saves

  InMemoryTaskStore.prototype.save = async function observedSave(args) {
    const { agentId, data, expectedVersion, skipIfCanceled = false } = args ?? {};
    stores.add(this);
    const taskId = data?.id;
    const existing = taskId ? this.loadWithVersion({ agentId, taskId }) : null;
    const before = taskId ? this.getVersion({ agentId, taskId }) : 0;
    // Mirrors the store's own rule: such a save returns the canceled task and writes nothing.
    const skipped =
      skipIfCanceled &&
      existing?.task.status.state === 'canceled' &&
      data?.status?.state !== 'canceled';

    // The save body is synchronous: it lands now, and Mastra's listeners hear of it at once,
    // before the report below reaches the ledger; so the report says when.
    const atUnixMs = performance.timeOrigin + performance.now();
    const stored = await originalSave.call(this, args); // a conflict throws: nothing to report
    if (skipped) return stored;

    const scope = requestScope.getStore();
    if (scope && !scope.taskId && data.history?.some((m) => m.messageId === scope.messageId)) {
      scope.taskId = data.id; // the task this request created
    }
    if (scope) scope.store = this;

    const version = before + 1;
    const canceled = data.status?.state === 'canceled';
    const saveKind = canceled
      ? 'cancel'
      : expectedVersion === undefined
        ? 'overwrite'
        : expectedVersion === 0
          ? 'create'
          : 'cas';
    const report = {
      task_id: data.id,
      context_id: data.contextId,
      state: data.status?.state,
      // Names, not the turns response.txt holds: the observer infers the version a save was
      // built on from content that only grows, and a run's text does not (a stream writes
      // its own), while the artifact, once made, stays.
      artifacts: (data.artifacts ?? []).map((a) => a.name || a.artifactId),
      history: (data.history ?? []).map((m) => m.messageId),
      replica,
      mode: canceled ? 'cancel' : 'overwrite',
      before: canceled ? (before > 0 ? before : null) : null,
      based_on: canceled && expectedVersion !== undefined && expectedVersion > 0 ? expectedVersion : null,
      version: canceled ? version : null,
      store_version: version,
      store_before: before,
      expected_version: expectedVersion ?? null,
      save_kind: saveKind,
      at_unix_ms: atUnixMs,
    };
    const sent = chain.then(() =>
      postJson(`${ledger}/save`, report).catch((e) =>
        console.error(`${replica}: save report for ${data.id} v${version} failed: ${e.message}`),
      ),
    );
    chain = sent;
    await sent;
    return stored;
  };
}

// --- the fake model ------------------------------------------------------------------------

/**
 * Which turn this model call is: from the last prompt message Mastra built (the user's text,
 * or the awaitNextTurn tool's result, which carries the resume data of the follow-up).
 */
function readTurn(prompt, scope) {
  const last = prompt[prompt.length - 1];
  let source;
  if (last?.role === 'tool') {
    const result = last.content.find((p) => p.type === 'tool-result');
    const value = result?.output?.value;
    source = value && typeof value === 'object' && 'next' in value ? value.next : value;
  } else if (last?.role === 'user') {
    const text = (Array.isArray(last.content) ? last.content : [{ type: 'text', text: last.content }])
      .filter((p) => p.type === 'text')
      .map((p) => p.text)
      .join('\n');
    source = parseJson(text.trim()) ?? text;
  }
  if (typeof source === 'string') source = parseJson(source.trim()) ?? source;
  const scripted = asTurn(source);
  if (scripted) return scripted;

  // A plain turn: named after the contextId; the distinct user messages already in the
  // task's history (not this message, nor an earlier attempt of it), plus one.
  const snapshot =
    scope?.store && scope.taskId
      ? scope.store.loadWithVersion({ agentId: AGENT_ID, taskId: scope.taskId })
      : null;
  const task = snapshot?.task;
  const earlier = new Set(
    (task?.history ?? [])
      .filter((m) => m.role === 'user' && m.messageId !== scope?.messageId)
      .map((m) => m.messageId),
  );
  return {
    conversation: scope?.contextId || task?.contextId || '',
    turn: earlier.size + 1,
    turns: DEFAULT_TURNS,
    scripted: false,
  };
}

/**
 * A minimal AI SDK LanguageModelV2 (the interface @mastra/core accepts as a model). Each
 * call performs one turn and answers its text, plus the awaitNextTurn tool call before the
 * conversation's last turn.
 */
function scriptedModel({ replica, ledger, thinkMs, composeMs, ledgerTimeoutMs }) {
  const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

  async function turn(options) {
    const scope = requestScope.getStore();
    if (!scope?.taskId) {
      throw new Error('scripted model: no task id in the request scope (not called from an A2A request?)');
    }
    const signal = options.abortSignal;
    const info = readTurn(options.prompt, scope);
    const task = scope.store?.loadWithVersion({ agentId: AGENT_ID, taskId: scope.taskId })?.task;
    await sleep(thinkMs, signal);
    if (signal?.aborted) throw abortError(signal);
    if (info.effect !== false) await postJson(`${ledger}/effect`, {
      task_id: scope.taskId,
      context_id: task?.contextId ?? scope.contextId ?? '',
      conversation: info.conversation,
      turn: info.turn,
      message_id: scope.messageId ?? '',
      replica,
      key: null,
      sent_ms: 0,
    }, ledgerTimeoutMs);
    await sleep(composeMs, signal);
    const content = [{ type: 'text', text: `turn-${info.turn}\n` }];
    const more = info.turn < info.turns;
    if (more) {
      content.push({
        type: 'tool-call',
        toolCallId: `${AWAIT_TOOL}-${info.turn}-${randomUUID()}`,
        toolName: AWAIT_TOOL,
        input: JSON.stringify({ turn: info.turn }),
      });
    }
    return { content, finishReason: more ? 'tool-calls' : 'stop' };
  }

  return {
    specificationVersion: 'v2',
    provider: 'a2a-chaos',
    modelId: 'scripted-turn',
    supportedUrls: {},
    async doGenerate(options) {
      const { content, finishReason } = await turn(options);
      return { content, finishReason, usage, warnings: [] };
    },
    async doStream(options) {
      const { content, finishReason } = await turn(options);
      const parts = [{ type: 'stream-start', warnings: [] }];
      for (const c of content) {
        if (c.type === 'text') {
          parts.push(
            { type: 'text-start', id: 'text-0' },
            { type: 'text-delta', id: 'text-0', delta: c.text },
            { type: 'text-end', id: 'text-0' },
          );
        } else {
          parts.push(c);
        }
      }
      parts.push({ type: 'finish', finishReason, usage });
      const stream = new ReadableStream({
        start(controller) {
          for (const p of parts) controller.enqueue(p);
          controller.close();
        },
      });
      return { stream };
    },
  };
}

// --- the front -----------------------------------------------------------------------------

/** The A2A 1.0 JSON of every task this process holds (or of those in `ids`). */
async function finalTasks(mastraApp, origin, ids) {
  const tasks = {};
  for (const store of stores) {
    for (const task of store.list({ agentId: AGENT_ID })) {
      if (ids && !ids.has(task.id)) continue;
      // Rendered by Mastra's own GetTask handler (A2A 1.0), as a client would read it.
      const res = await mastraApp.fetch(
        new Request(`${origin}/api/a2a/${AGENT_ID}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: `a2a-chaos-dump-${task.id}`,
            method: 'GetTask',
            params: { id: task.id },
          }),
        }),
      );
      const answer = await res.json();
      if (answer.result) tasks[task.id] = answer.result;
    }
  }
  return Response.json({ tasks });
}

/** The fetch handler in front of Mastra's Hono app. */
function front(mastraApp, { name }) {
  return async (req, env) => {
    const url = new URL(req.url);
    let res;
    if (req.method === 'GET' && url.pathname === '/__a2a_chaos/tasks') {
      const ids = url.searchParams.get('ids');
      res = await finalTasks(
        mastraApp,
        url.origin,
        ids ? new Set(ids.split(',').filter(Boolean)) : null,
      );
    } else {
      let path = url.pathname;
      if (req.method === 'POST' && path === '/') path = `/api/a2a/${AGENT_ID}`;
      if (req.method === 'GET' && path === '/.well-known/agent-card.json') {
        path = `/api/.well-known/${AGENT_ID}/agent-card.json`;
      }
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const body = hasBody ? new Uint8Array(await req.arrayBuffer()) : undefined;
      const headers = new Headers(req.headers);
      headers.delete('content-length'); // recomputed for the same bytes
      const inner = new Request(new URL(path + url.search, url.origin), {
        method: req.method,
        headers,
        body,
        signal: req.signal, // a client disconnect still reaches Mastra's handler
      });
      const scope = hasBody ? scopeOf(new TextDecoder().decode(body)) : null;
      res = scope
        ? await requestScope.run(scope, () => mastraApp.fetch(inner, env))
        : await mastraApp.fetch(inner, env);
    }
    const headers = new Headers(res.headers);
    headers.set('x-a2a-chaos-replica', name);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  };
}

// --- main ----------------------------------------------------------------------------------

async function main() {
  const args = cli();
  process.env.MASTRA_TELEMETRY_DISABLED ??= '1'; // no usage telemetry (no network here)

  // Packages are resolved from the install directory (setup.sh writes resolve.mjs there).
  let resolveDep;
  try {
    ({ resolve: resolveDep } = await import(pathToFileURL(join(args.installDir, 'resolve.mjs')).href));
  } catch (e) {
    console.error(
      `cannot load ${join(args.installDir, 'resolve.mjs')} (${e.message}); run tests/peers/mastra/setup.sh first`,
    );
    process.exit(2);
  }
  const load = (specifier) => import(resolveDep(specifier));
  const versionOf = (pkg) =>
    JSON.parse(readFileSync(join(args.installDir, 'node_modules', pkg, 'package.json'), 'utf8')).version;

  const { Agent } = await load('@mastra/core/agent');
  const { Mastra } = await load('@mastra/core/mastra');
  const { createTool } = await load('@mastra/core/tools');
  const { InMemoryStore } = await load('@mastra/core/storage');
  const { ConsoleLogger } = await load('@mastra/core/logger');
  const { InMemoryTaskStore } = await load('@mastra/server/a2a/store');
  const { createHonoServer } = await load('@mastra/deployer/server');
  const { serve } = await load('@hono/node-server');
  const { z } = await load('zod');

  // Saves are watched, not traffic: reported around the faulted ledger link when `live`
  // says where ($A2A_CHAOS_REPORTS, the ledger itself).
  const reports = (process.env.A2A_CHAOS_REPORTS || args.ledger).replace(/\/+$/, '');
  observeSaves(InMemoryTaskStore, { replica: args.name, ledger: reports });

  // Ends a turn input-required: suspends the run until the next message resumes it, then
  // hands that message's resume data to the model.
  const awaitNextTurn = createTool({
    id: AWAIT_TOOL,
    description: 'Ends this turn and waits for the next user turn.',
    inputSchema: z.object({ turn: z.number() }),
    execute: async (input, context) => {
      const agent = context?.agent;
      if (agent?.resumeData === undefined) {
        return await agent.suspend({
          message: `turn-${input.turn} done; send turn ${input.turn + 1}`,
        });
      }
      return { next: agent.resumeData };
    },
  });

  const agent = new Agent({
    id: AGENT_ID,
    name: AGENT_ID,
    instructions: `a2a-chaos scripted agent on ${args.name}: one business effect per turn.`,
    model: scriptedModel({
      replica: args.name,
      ledger: args.ledger,
      thinkMs: args.thinkMs,
      ledgerTimeoutMs: args.ledgerTimeoutMs,
      composeMs: args.composeMs,
    }),
    tools: { [AWAIT_TOOL]: awaitNextTurn },
  });

  const mastra = new Mastra({
    agents: { [AGENT_ID]: agent },
    // Suspended runs keep their snapshot in storage (needed to resume on input-required);
    // in memory, per process, like the A2A task store.
    storage: new InMemoryStore(),
    logger: new ConsoleLogger({ name: args.name, level: args.logLevel }),
  });

  const app = await createHonoServer(mastra, { tools: {} });
  const server = serve({ fetch: front(app, args), port: args.port, hostname: '127.0.0.1' }, () => {
    console.log(
      `${args.name}: Mastra A2A replica on http://127.0.0.1:${args.port} ` +
        `(@mastra/core ${versionOf('@mastra/core')}, @mastra/server ${versionOf('@mastra/server')}, ` +
        `@mastra/deployer ${versionOf('@mastra/deployer')}, node ${process.version}; ` +
        `agent "${AGENT_ID}", ledger ${args.ledger})`,
    );
  });
  const stop = () => {
    server.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  console.error(e?.stack ?? String(e));
  process.exit(1);
});
