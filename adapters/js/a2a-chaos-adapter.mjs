// a2a-chaos adapter for JavaScript A2A servers: @a2a-js/sdk (npm, 1.x) and Mastra tools.
//
// Drop this one file into your server's code base to let `a2a-chaos live` judge YOUR
// server: it reports each business side effect and each task-store save to the a2a-chaos
// ledger of the run (the contract is docs/PEERS.md). No dependencies: Node 20+ (global
// fetch, AsyncLocalStorage). Without a ledger it does nothing, so it can stay in production.
//
// Usage with @a2a-js/sdk:
//
//   import { Chaos } from './a2a-chaos-adapter.mjs';
//   import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
//
//   // --ledger / --name from the a2a-chaos peer template, or $A2A_CHAOS_LEDGER and
//   // $A2A_CHAOS_REPLICA; with neither, every wrapper hands back what it was given.
//   const chaos = new Chaos({ ledger: args.ledger, replica: args.name });
//   const store = chaos.observeStore(new InMemoryTaskStore());      // (b) saves
//   const executor = chaos.executor(new MyAgentExecutor());         // (a) knows the turn
//   const handler = new DefaultRequestHandler(card, store, executor);
//
//   // the business side effect, wherever the executor calls it:
//   const placeOrder = chaos.effect(async (order) => { ... }, { key: (order) => `order-${order.id}` });
//   // or, right before performing it:
//   await chaos.reportEffect(undefined, { key: `order-${order.id}` });
//
// Or none of that in your code: the launcher runs your server unchanged, instrumented
// (every DefaultRequestHandler's executor wrapped and task store observed, the HTTP server on
// $A2A_CHAOS_PORT, the replica header in every answer; see "the launcher" below):
//
//   node a2a-chaos-adapter.mjs run server.mjs [ARGS...]
//
// and in the server, only the effect:
//
//   import { effect } from './a2a-chaos-adapter.mjs';
//   const placeOrder = effect(async (order) => { ... });
//
// Usage with a Mastra tool (the tool's execute function is wrapped):
//
//   import { createTool } from '@mastra/core/tools';
//   const transfer = createTool({
//     id: 'transfer', inputSchema, description: 'Moves money',
//     execute: chaos.mastraTool(async (inputData, context) => { ... }, {
//       key: (inputData) => inputData.transferId,            // optional idempotency key
//       // optional: where this call's A2A turn comes from (see `mastraTool` below)
//       identify: (inputData, context) => context?.requestContext?.get('a2a-chaos'),
//     }),
//   });
//
// What is reported (field by field in docs/PEERS.md):
// - POST {ledger}/effect before the effect: task_id, context_id, conversation, turn,
//   message_id, replica, key, sent_ms. conversation and turn come from the message's
//   a2a-chaos data part {conversation, turn, turns} when there is one (a2a-chaos always sends
//   it); for a plain text message the conversation is the contextId and the turn is the
//   number of distinct user messages already in the task's history, plus one.
// - POST {ledger}/save just before each save of an @a2a-js/sdk TaskStore (which has no
//   versions: mode "overwrite"; a2a-chaos numbers the saves and infers what each was built on).

import { AsyncLocalStorage } from 'node:async_hooks';
import { realpathSync } from 'node:fs';
import http from 'node:http';
import { register } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Length of a conversation of plain text messages: turn 1 input-required, turn 2 completes. */
export const DEFAULT_TURNS = 2;

/** The request an executor wrapped by `Chaos.executor` is running. One per process, not per
 *  copy of this file: the launcher's copy wraps the executor, and the copy your server
 *  imports (next to it, say) reports the effect. */
const current = (globalThis[Symbol.for('a2a-chaos.current-request')] ??= new AsyncLocalStorage());

/** Marks a store or executor this adapter (any copy) already wraps: it is never wrapped twice. */
const OBSERVED = Symbol.for('a2a-chaos.observed');

/** The requestContext key `mastraTool` looks for (an object from `Chaos.turnEntry`). */
export const REQUEST_CONTEXT_KEY = 'a2a-chaos';

// --- transport ---------------------------------------------------------------------------

/** POSTs JSON; returns the JSON answer ({} when empty). Throws on a non-2xx answer. */
export async function postJson(url, body, timeoutMs = 5000) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`a2a-chaos ledger ${url}: HTTP ${res.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

// --- tasks, messages, turns -----------------------------------------------------------------

// TaskState numbers of A2A 1.0 (a2a.proto), as @a2a-js/sdk 1.x keeps them in memory.
const STATE_NAMES = {
  0: 'unspecified', 1: 'submitted', 2: 'working', 3: 'completed', 4: 'failed',
  5: 'canceled', 6: 'input-required', 7: 'rejected', 8: 'auth-required',
};

/** The a2a-chaos name of a state: 6, 'TASK_STATE_INPUT_REQUIRED' or 'input-required' -> 'input-required'. */
export function stateName(state) {
  if (typeof state === 'number') return STATE_NAMES[state] ?? 'unspecified';
  return String(state ?? '').replace(/^TASK_STATE_/, '').toLowerCase().replaceAll('_', '-');
}

const USER_ROLES = new Set([1, 'ROLE_USER', 'user']);

/** The value of a data part, in the SDK's in-memory form ({content: {$case: 'data', value}})
 *  or in A2A 1.0 JSON ({data: ...}); undefined for another part. */
function dataOf(part) {
  if (part?.content?.$case === 'data') return part.content.value;
  if (part && 'data' in part && !('content' in part)) return part.data;
  return undefined;
}

/** Which turn of which conversation a message is, on `task` (the task it continues, or
 *  undefined for a new one): {conversation, turn, turns, scripted}. See the header. */
export function turnOf(message, task, contextId, defaultTurns = DEFAULT_TURNS) {
  for (const part of message?.parts ?? []) {
    const data = dataOf(part);
    if (data && typeof data === 'object' && 'conversation' in data && 'turn' in data && 'turns' in data) {
      // A whole number may arrive as a double (1.0): truncate, as int() does in Python.
      return {
        conversation: String(data.conversation),
        turn: Math.trunc(Number(data.turn)),
        turns: Math.trunc(Number(data.turns)),
        scripted: true,
      };
    }
  }
  const earlier = new Set();
  for (const m of task?.history ?? []) {
    if (USER_ROLES.has(m.role) && m.messageId !== message?.messageId) earlier.add(m.messageId);
  }
  return {
    conversation: message?.contextId || task?.contextId || contextId || '',
    turn: earlier.size + 1,
    turns: defaultTurns,
    scripted: false,
  };
}

/** The body of POST {ledger}/save for one save of a task without versions. */
export function saveReport(task, replica, mode = 'overwrite', { before = null, basedOn = null, version = null } = {}) {
  return {
    task_id: task.id,
    context_id: task.contextId,
    state: stateName(task.status?.state),
    artifacts: (task.artifacts ?? []).map((a) => a.name || a.artifactId),
    history: (task.history ?? []).map((m) => m.messageId),
    replica,
    mode,
    before,
    based_on: basedOn,
    version,
  };
}

// --- the adapter ---------------------------------------------------------------------------

export class Chaos {
  /**
   * @param {object} [options]
   * @param {string} [options.ledger] the ledger's base URL ({ledger}); default $A2A_CHAOS_LEDGER.
   *   Without one the adapter is disabled.
   * @param {string} [options.replica] this replica's name ({name}); default $A2A_CHAOS_REPLICA.
   * @param {number} [options.timeoutMs] per report (an effect answer may be held by the scenario).
   * @param {number} [options.defaultTurns] length of a plain-text conversation.
   * @param {string} [options.reports] where saves are reported; default $A2A_CHAOS_REPORTS
   *   (`live` sets it to the ledger itself, around the link its faults stop), else the
   *   ledger. Effects are the replica's traffic and go through that link; a save is only
   *   watched, and a held link must not stall the store.
   */
  constructor({ ledger, replica, timeoutMs = 5000, defaultTurns = DEFAULT_TURNS, reports } = {}) {
    const url = ledger || process.env.A2A_CHAOS_LEDGER || '';
    this.ledger = url ? url.replace(/\/+$/, '') : null;
    const watch = reports || process.env.A2A_CHAOS_REPORTS || url;
    this.reports = watch ? watch.replace(/\/+$/, '') : null;
    this.replica = replica || process.env.A2A_CHAOS_REPLICA || 'replica-0';
    this.timeoutMs = timeoutMs;
    this.defaultTurns = defaultTurns;
  }

  /** Whether a ledger is configured. */
  get enabled() {
    return this.ledger !== null;
  }

  // (b) saves

  /** `store` (an @a2a-js/sdk TaskStore: load, save, list), with each save reported just
   *  before it is made. Everything else is the store's own. */
  observeStore(store) {
    if (!this.enabled || store?.[OBSERVED]) return store;
    if (typeof store?.save !== 'function' || typeof store?.load !== 'function') {
      throw new TypeError('observeStore: not an @a2a-js/sdk TaskStore (load/save)');
    }
    const save = async (task, context) => {
      await postJson(`${this.reports}/save`, saveReport(task, this.replica), this.timeoutMs);
      return store.save(task, context);
    };
    return new Proxy(store, {
      get(target, prop) {
        if (prop === 'save') return save;
        if (prop === OBSERVED) return true;
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  // (a) effects

  /** `executor` (execute(requestContext, eventBus), cancelTask(taskId, eventBus)), with
   *  the running request known to `reportEffect`, `effect` and `mastraTool`. */
  executor(executor) {
    if (!this.enabled || executor?.[OBSERVED]) return executor;
    return {
      [OBSERVED]: true,
      execute: (requestContext, eventBus) =>
        current.run(requestContext, () => executor.execute(requestContext, eventBus)),
      cancelTask: (taskId, eventBus) => executor.cancelTask(taskId, eventBus),
    };
  }

  /** The turn of an @a2a-js/sdk RequestContext (default: the one running now). */
  turn(requestContext = current.getStore()) {
    if (!requestContext) {
      throw new Error('a2a-chaos: no current request; wrap your AgentExecutor with chaos.executor() or pass the RequestContext');
    }
    return turnOf(requestContext.userMessage, requestContext.task, requestContext.contextId, this.defaultTurns);
  }

  /** What identifies the effect of an @a2a-js/sdk request: {taskId, contextId,
   *  conversation, turn, messageId}; also the value to put in a Mastra requestContext
   *  under REQUEST_CONTEXT_KEY for `mastraTool`. */
  turnEntry(requestContext = current.getStore()) {
    const t = this.turn(requestContext);
    return {
      taskId: requestContext.taskId,
      contextId: requestContext.contextId,
      conversation: t.conversation,
      turn: t.turn,
      messageId: requestContext.userMessage?.messageId ?? '',
    };
  }

  /** The body of POST {ledger}/effect for `ids` ({taskId, contextId, conversation, turn, messageId}). */
  effectReport(ids, key = null) {
    return {
      task_id: ids.taskId,
      context_id: ids.contextId,
      conversation: ids.conversation,
      turn: ids.turn,
      message_id: ids.messageId,
      replica: this.replica,
      key: key ?? null,
      sent_ms: 0,
    };
  }

  /** Reports one business effect of the request `requestContext` (default: the one running
   *  now), before it is performed. Resolves to whether the ledger applied it (false: an
   *  effect with the same key was applied before), or null when disabled. The answer may
   *  be held by the scenario (hold-effect): perform the effect only once this resolves. */
  async reportEffect(requestContext, { key = null, conversation, turn } = {}) {
    if (!this.enabled) return null;
    const ids = this.turnEntry(requestContext ?? current.getStore());
    if (conversation !== undefined) ids.conversation = conversation;
    if (turn !== undefined) ids.turn = turn;
    return this.send(ids, key);
  }

  /** POSTs the effect of `ids`; resolves to the ledger's `applied`. */
  async send(ids, key = null) {
    const answer = await postJson(`${this.ledger}/effect`, this.effectReport(ids, key), this.timeoutMs);
    return answer.applied ?? null;
  }

  /** `fn` (an async business side effect), reported before each call. `key` is a string or
   *  a function of the call's arguments giving the idempotency key; report one only if the
   *  effect really is idempotent on it (the ledger then counts it once, as your system would). */
  effect(fn, { key = null } = {}) {
    if (!this.enabled) return fn;
    return async (...args) => {
      await this.reportEffect(undefined, { key: typeof key === 'function' ? key(...args) : key });
      return fn(...args);
    };
  }

  /**
   * A Mastra tool's `execute` (v1: `(inputData, context)`; 0.x: `({ context, runtimeContext })`),
   * reported before each call as one business effect. The call's A2A turn is, in order:
   * 1. `identify(...args)`, when given: an object {taskId, contextId, conversation, turn, messageId};
   * 2. the request of an @a2a-js/sdk executor wrapped by `chaos.executor` that runs the
   *    Mastra agent (an a2a-js server with a Mastra agent inside its executor);
   * 3. the Mastra requestContext's REQUEST_CONTEXT_KEY entry (put there with `chaos.turnEntry`,
   *    or by a server middleware that reads the A2A message).
   * None of them: the call is refused with an error, since an effect the ledger never hears
   * of makes exactly-once-effects fail on a run that did it right.
   */
  mastraTool(execute, { key = null, identify } = {}) {
    if (!this.enabled) return execute;
    return async (...args) => {
      let ids = identify ? identify(...args) : undefined;
      if (!ids && current.getStore()) ids = this.turnEntry(current.getStore());
      if (!ids) {
        const requestContext = args[1]?.requestContext ?? args[0]?.requestContext ?? args[0]?.runtimeContext;
        ids = requestContext?.get?.(REQUEST_CONTEXT_KEY);
      }
      if (!ids) {
        throw new Error(`a2a-chaos: this tool call has no A2A turn; pass identify, run it inside chaos.executor(), or set requestContext '${REQUEST_CONTEXT_KEY}'`);
      }
      await this.send(ids, typeof key === 'function' ? key(...args) : key);
      return execute(...args);
    };
  }
}

// --- the launcher -------------------------------------------------------------------------
//
// `node a2a-chaos-adapter.mjs run server.mjs [ARGS...]` runs your @a2a-js/sdk server module
// unchanged, as `node server.mjs ARGS...` would (process.argv[1] is the script), after
// `instrument()`. Without a ledger it instruments nothing: it only runs the script.
//
// How it instruments, in two pieces (Node 20.6+):
//
// 1. The handler, with a module customization hook (`module.register`). An ES module's
//    exports cannot be replaced from outside, and DefaultRequestHandler keeps its executor and
//    store in class fields set by its constructor, out of reach of a patch of its prototype.
//    So when a module imports '@a2a-js/sdk/server', the hook hands it a four-line module
//    instead: all the SDK module exports (`export *`), except DefaultRequestHandler, which is
//    `instrumentHandler`'s subclass: its constructor passes `chaos.observeStore(taskStore)` and
//    `chaos.executor(agentExecutor)` on to the SDK's. Its instances are still `instanceof` the
//    SDK's class; nothing else changes. Only `import` goes through the hook: a server that
//    `require`s the SDK must wrap its executor and store itself (`Chaos`, above).
// 2. The port and the header, by wrapping `http.Server.prototype.listen`. The first HTTP
//    server to listen on a TCP port (Express's `app.listen(9999)` is one) listens on
//    $A2A_CHAOS_PORT instead, on the host it asked for; every HTTP server that listens names
//    this replica in each answer (`x-a2a-chaos-replica`, set as the request arrives).
//
// The hook also makes NODE_PATH work for `import` (Node applies it to `require` only): a bare
// import that the importing file's folders cannot resolve is looked up in each NODE_PATH
// directory (a `node_modules` directory), so a server can run on packages installed elsewhere.

/** The hooks, as a module of their own (they run on Node's loader thread). `settings` is
 *  `{instrument, adapter, nodePath}` from `instrument()`. */
const HOOKS = `
let settings;
export function initialize(data) { settings = data; }

const SHIM = 'a2a-chaos=instrumented';
const bare = (specifier) => !/^[./]/.test(specifier) && !specifier.includes(':');

export async function resolve(specifier, context, nextResolve) {
  let resolved;
  try {
    resolved = await nextResolve(specifier, context);
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !bare(specifier)) throw error;
    for (const parentURL of settings.nodePath) {
      try { resolved = await nextResolve(specifier, { ...context, parentURL }); break; } catch {}
    }
    if (!resolved) throw error;
  }
  if (settings.instrument && specifier === '@a2a-js/sdk/server') {
    const url = resolved.url + (resolved.url.includes('?') ? '&' : '?') + SHIM;
    return { ...resolved, url, shortCircuit: true };
  }
  return resolved;
}

export async function load(url, context, nextLoad) {
  if (!url.endsWith(SHIM)) return nextLoad(url, context);
  const sdk = JSON.stringify(url.slice(0, -SHIM.length - 1));
  const source = [
    'import { DefaultRequestHandler as Sdk } from ' + sdk + ';',
    'import { instrumentHandler } from ' + JSON.stringify(settings.adapter) + ';',
    'export * from ' + sdk + ';',
    'export const DefaultRequestHandler = instrumentHandler(Sdk);',
  ].join('\\n');
  return { format: 'module', source, shortCircuit: true };
}
`;

/** The `Chaos` `instrument()` was called with (the launcher's). */
let instrumented;

let shared;
/** The `Chaos` of this process, configured from $A2A_CHAOS_LEDGER and $A2A_CHAOS_REPLICA: the
 *  one `effect` reports through and the launcher instruments with. */
export function defaultChaos() {
  return (shared ??= new Chaos());
}

/** `defaultChaos().effect(fn, options)`: the one change your server needs under the launcher,
 *  around the async function that performs the business side effect. The turn it reports is
 *  the request the wrapped executor runs. */
export function effect(fn, options) {
  return defaultChaos().effect(fn, options);
}

/** The port to listen on: $A2A_CHAOS_PORT under a2a-chaos, else `fallback`. */
export function port(fallback) {
  return Number(process.env.A2A_CHAOS_PORT) || fallback;
}

/** @a2a-js/sdk's `DefaultRequestHandler` class, subclassed so that every handler built gets its
 *  executor wrapped (`chaos.executor`) and its task store observed (`chaos.observeStore`); the
 *  class itself when disabled. The launcher's hook exports this in the SDK's class's place. */
export function instrumentHandler(handlerClass, chaos = instrumented ?? defaultChaos()) {
  if (!chaos.enabled || handlerClass[OBSERVED]) return handlerClass;
  return class DefaultRequestHandler extends handlerClass {
    static [OBSERVED] = true;
    constructor(agentCard, taskStore, agentExecutor, ...rest) {
      super(agentCard, taskStore && chaos.observeStore(taskStore),
        agentExecutor && chaos.executor(agentExecutor), ...rest);
    }
  };
}

/** The arguments of a `server.listen(...)` call, listening on `port` instead; null for a
 *  listen that is not on a TCP port (a pipe path, a handle, a file descriptor). */
export function listenArgs(args, port) {
  const [first, ...rest] = args;
  if (first === undefined || first === null) return [port, ...rest];
  if (typeof first === 'function') return [port, ...args];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) return [port, ...rest];
  if (Object.getPrototypeOf(first) === Object.prototype && !('path' in first) && !('fd' in first) && !('handle' in first)) {
    return [{ ...first, port }, ...rest];
  }
  return null;
}

/** Wraps `http.Server.prototype.listen` (see the launcher's comment, piece 2). */
function serveAsReplica(chaos) {
  const listen = http.Server.prototype.listen;
  const chaosPort = port(null);
  let portGiven = false;
  http.Server.prototype.listen = function listenAsReplica(...args) {
    const moved = !portGiven && chaosPort ? listenArgs(args, chaosPort) : null;
    if (moved) {
      portGiven = true;
      args = moved;
    }
    if (!this[OBSERVED]) {
      this[OBSERVED] = true;
      this.prependListener('request', (req, res) => res.setHeader('x-a2a-chaos-replica', chaos.replica));
    }
    return listen.apply(this, args);
  };
}

/** Instruments the @a2a-js/sdk server this process imports from now on: every
 *  DefaultRequestHandler built gets its executor wrapped and its task store observed, and its
 *  HTTP server listens on $A2A_CHAOS_PORT with the replica header (see the launcher's
 *  comment). Does nothing without a ledger (but for NODE_PATH). Call it before the server's
 *  module is imported; `run` does. Returns the `Chaos` used. */
export function instrument(chaos = defaultChaos(), { nodePath = process.env.NODE_PATH } = {}) {
  if (instrumented) return instrumented;
  instrumented = chaos;
  const dirs = (nodePath ?? '').split(path.delimiter).filter(Boolean)
    .map((dir) => pathToFileURL(path.resolve(dir) + path.sep).href);
  if (chaos.enabled || dirs.length) {
    const data = { instrument: chaos.enabled, adapter: import.meta.url, nodePath: dirs };
    register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, { data });
  }
  if (chaos.enabled) serveAsReplica(chaos);
  return chaos;
}

/** `node a2a-chaos-adapter.mjs run SCRIPT [ARGS...]`. */
export async function main(argv = process.argv.slice(2)) {
  if (argv[0] !== 'run' || !argv[1]) {
    console.error('usage: node a2a-chaos-adapter.mjs run SCRIPT [ARGS...]');
    process.exit(2);
  }
  const script = path.resolve(argv[1]);
  process.argv = [process.argv[0], script, ...argv.slice(2)];
  instrument();
  await import(pathToFileURL(script).href);
}

function isMain() {
  try {
    return realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (isMain()) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
