// Drives an A2A 1.0 server with the official JS client (npm @a2a-js/sdk 1.3.0).
//
// Part of the conformance harness (tests/conformance/, see docs/CONFORMANCE.md). It runs the
// same ordered list of named steps as python_client.py, using the SDK's client as shipped:
// the card through DefaultAgentCardResolver, a Client from ClientFactory with the SDK's
// JsonRpcTransportFactory, and, when the card declares security schemes, the SDK's
// createAuthenticatingFetchWithRetry to attach the credential. Requests are built from JSON
// with the SDK's own message types (SendMessageRequest.fromJSON ...). A few steps are raw
// HTTP on purpose (malformed JSON, an 8 MB body, an unknown method, bad params, versions).
//
// Output: one JSON line per step, {"client":"js","step":...,"ok":...,"detail":...,"value":...},
// then {"client":"js","summary":{...}}. The expectations are the ones listed in STEPS in
// python_client.py (the same names, in the same order). Every call has an AbortSignal
// timeout, each step a timer, and the whole run a watchdog (RUN_TIMEOUT_MS), so the script
// always ends. Exit code: 0 if every step was ok, 1 otherwise, 2 for unusable arguments.
//
// Usage: node js_client.mjs BASE_URL [--token T] [--v03] [--plain]
// The SDK is loaded from target/conformance-node/ (tests/conformance/setup.sh installs it);
// $A2A_JS_SDK_DIR overrides that directory.

import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const CLIENT = "js";
const CALL_TIMEOUT_MS = 10_000; // one client call
const STEP_TIMEOUT_MS = 15_000; // one step
const RUN_TIMEOUT_MS = 150_000; // the whole run
const DETAIL_CHARS = Number(process.env.CONFORMANCE_DETAIL_CHARS || 400);
const TERMINAL = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_FAILED", "TASK_STATE_REJECTED"]);
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

// The same step names, in the same order, as STEPS in python_client.py.
const STEP_NAMES = [
  "card", "no-credential", "auth-from-card", "send-blocking", "status-timestamp", "history-ids",
  "send-streaming", "continue-task", "get-task-history-length", "list-tasks", "subscribe-snapshot",
  "subscribe-live", "return-immediately", "poll-until-done", "cancel", "cancel-again", "push-create",
  "push-get", "push-list", "push-delivered", "push-delete", "v03-message-send", "raw-malformed-json",
  "raw-unknown-method", "raw-bad-params", "raw-unknown-method-no-version", "raw-bad-params-no-version",
  "raw-version-1.1", "raw-version-2.0", "raw-error-data", "field-violations", "raw-8mb-body",
];

// ---- arguments and the SDK -------------------------------------------------------------

function parseArgs(argv) {
  const args = { token: null, v03: false, plain: false, base: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--token") args.token = argv[++i];
    else if (a === "--v03") args.v03 = true;
    else if (a === "--plain") args.plain = true;
    else if (!a.startsWith("--") && !args.base) args.base = a;
    else {
      console.error(`unknown argument ${a}`);
      process.exit(2);
    }
  }
  if (!args.base) {
    console.error("usage: node js_client.mjs BASE_URL [--token T] [--v03] [--plain]");
    process.exit(2);
  }
  args.base = args.base.replace(/\/+$/, "");
  return args;
}

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.A2A_JS_SDK_DIR ||
  path.join(here, "..", "..", "target", "conformance-node", "node_modules", "@a2a-js", "sdk");
const sdkClient = await import(pathToFileURL(path.join(sdkDir, "dist", "client", "index.js")).href);
const sdk = await import(pathToFileURL(path.join(sdkDir, "dist", "index.js")).href);
const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry } = sdkClient;
const { SendMessageRequest, GetTaskRequest, ListTasksRequest, CancelTaskRequest, SubscribeToTaskRequest,
  TaskPushNotificationConfig, GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
  DeleteTaskPushNotificationConfigRequest, Task, StreamResponse, AgentCard, ListTasksResponse,
  ListTaskPushNotificationConfigsResponse, Message } = sdk;

// ---- helpers ---------------------------------------------------------------------------

function short(text, limit = DETAIL_CHARS) {
  const t = String(text).split(/\s+/).join(" ");
  return t.length <= limit ? t : t.slice(0, limit - 3) + "...";
}

/** The JSON-RPC code an SDK error carries (envelopeCode on the SDK's A2A errors). */
function errorCode(err) {
  if (err && typeof err.envelopeCode === "number") return err.envelopeCode;
  const m = /Code: (-?\d+)|JSON-RPC.*?(-?\d{5})/.exec(String(err?.message || err));
  if (m) return Number(m[1] || m[2]);
  if (err?.cause) return errorCode(err.cause);
  return null;
}

function describe(err) {
  const code = errorCode(err);
  const cause = err?.cause && err.cause !== err ? `; cause ${err.cause?.name}: ${err.cause?.message}` : "";
  return short(`${code !== null ? code + " " : ""}${err?.name || "Error"}: ${err?.message || err}${cause}`);
}

function callOptions(ms = CALL_TIMEOUT_MS) {
  return { signal: AbortSignal.timeout(ms) };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The last task state named in a list of wire-JSON stream events or push payloads. */
function lastState(events) {
  let state = null;
  for (const e of events) {
    for (const key of ["task", "statusUpdate"]) {
      if (e && typeof e[key] === "object") state = e[key]?.status?.state ?? state;
    }
    if (e && typeof e.status === "object") state = e.status?.state ?? state;
  }
  return state;
}

const firstKey = (o) => (o && typeof o === "object" ? Object.keys(o)[0] ?? "?" : "?");

/** SendMessageResult (Task | Message) to wire JSON: {task: ...} or {message: ...}. */
function resultJson(result) {
  if (result && "status" in result) return { task: Task.toJSON(result) };
  return { message: Message.toJSON(result) };
}

/** A loopback receiver for push notifications; records every POST. */
function startReceiver() {
  const received = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString();
      let body;
      try { body = JSON.parse(text || "null"); } catch { body = text; }
      received.push({ path: req.url, headers: req.headers, body });
      res.writeHead(200, { "content-length": "0" });
      res.end();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const url = `http://127.0.0.1:${server.address().port}/push`;
      resolve({ url, received, close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }) });
    });
  });
}

// ---- the run ---------------------------------------------------------------------------

class Run {
  constructor(args, receiver) {
    this.args = args;
    this.receiver = receiver;
    this.results = [];
    this.state = {};
    this.authHeaders = {};
    this.fetchImpl = fetch;
  }

  emit(step, ok, detail, value) {
    const line = { client: CLIENT, step, ok: Boolean(ok), detail: short(detail) };
    if (value !== undefined && value !== null) line.value = short(value, 80);
    this.results.push(line);
    console.log(JSON.stringify(line));
  }

  async step(name, fn, needs = []) {
    const missing = needs.filter((n) => !(n in this.state));
    if (missing.length) {
      this.emit(name, false, `skipped: needs ${missing.join(", ")}`, "skip");
      return;
    }
    const started = Date.now();
    let timer;
    let out;
    try {
      out = await Promise.race([
        fn(),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new Error("__step_timeout__")), STEP_TIMEOUT_MS); }),
      ]);
    } catch (err) {
      if (err?.message === "__step_timeout__") out = [false, `step timed out after ${STEP_TIMEOUT_MS / 1000} s`, "timeout"];
      else {
        const code = errorCode(err);
        // An SDK error without a JSON-RPC code was raised by the client itself (for
        // example push calls when the card says pushNotifications: false): nothing was sent.
        out = [false, describe(err) + (code === null ? " [raised by the client; no request sent]" : ""),
          code !== null ? String(code) : `${err?.name || "Error"} (client)`];
      }
    } finally {
      clearTimeout(timer);
    }
    const [ok, detail, value] = out;
    this.emit(name, ok, `${detail} (${Date.now() - started} ms)`, value);
  }

  request(conversation, turn, turns, { taskId, contextId, ...configuration } = {}) {
    const parts = [{ text: `turn ${turn} of ${conversation}` }];
    if (!this.args.plain) parts.push({ data: { conversation, turn, turns } });
    const message = {
      messageId: `js-${conversation}-${turn}-${Math.random().toString(16).slice(2, 10)}`,
      role: "ROLE_USER",
      parts,
    };
    if (taskId) message.taskId = taskId;
    if (contextId) message.contextId = contextId;
    const body = { message };
    if (Object.keys(configuration).length) body.configuration = configuration;
    return SendMessageRequest.fromJSON(body);
  }

  async sendBlocking(request) {
    return resultJson(await this.client.sendMessage(request, callOptions()));
  }

  async raw(body, { version = "1.0", content, auth = true } = {}) {
    const headers = { "content-type": "application/json", ...(auth ? this.authHeaders : {}) };
    if (version !== null) headers["A2A-Version"] = version;
    const response = await fetch(this.rpcUrl, {
      method: "POST", headers, body: content ?? JSON.stringify(body), signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    try { return [response.status, JSON.parse(text)]; } catch { return [response.status, text]; }
  }

  static rpcError(answer) {
    return answer && typeof answer === "object" && answer.error && typeof answer.error === "object" ? answer.error : null;
  }

  // -- steps ----------------------------------------------------------------------------

  async card() {
    this.cardObj = await new DefaultAgentCardResolver({ fetchImpl: (u, i) => fetch(u, { ...i, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }) }).resolve(this.args.base);
    const card = AgentCard.toJSON(this.cardObj);
    const jsonrpc = (card.supportedInterfaces || []).filter((i) => i.protocolBinding === "JSONRPC");
    this.rpcUrl = jsonrpc[0]?.url || this.args.base + "/";
    this.state.card = true;
    const ok = jsonrpc.length > 0 && String(jsonrpc[0].protocolVersion || "").startsWith("1.");
    return [ok, `${JSON.stringify(card.name)}; interfaces ${JSON.stringify(card.supportedInterfaces)}; capabilities ${JSON.stringify(card.capabilities)}; securitySchemes ${JSON.stringify(card.securitySchemes)}; securityRequirements ${JSON.stringify(card.securityRequirements)}`,
      `JSONRPC ${jsonrpc[0]?.protocolVersion ?? "none"}`];
  }

  declaresSchemes() {
    const c = this.cardObj;
    return Object.keys(c.securitySchemes || {}).length > 0 && (c.securityRequirements || []).length > 0;
  }

  async noCredential() {
    const [status, answer] = await this.raw({ jsonrpc: "2.0", id: "nc", method: "GetTask", params: { id: "no-such-task" } }, { auth: false });
    this.state["no-credential"] = status;
    const declares = this.declaresSchemes();
    if (status === 401) {
      const jsonrpc = answer && typeof answer === "object" && answer.jsonrpc === "2.0" && "error" in answer;
      const why = [];
      if (!declares) why.push("the card declares no securitySchemes");
      if (!jsonrpc) why.push("the 401 body is not a JSON-RPC response");
      // How the SDK's own client reads the refusal: an authentication failure is a JSON-RPC
      // custom error (A2A 1.0 §3.3.2), never a malformed request (-32600 reads as one).
      let read = "no error";
      try {
        const anonymous = await new ClientFactory().createFromAgentCard(this.cardObj);
        await anonymous.getTask(GetTaskRequest.fromJSON({ id: "no-such-task" }), callOptions());
      } catch (e) {
        read = e.name;
      }
      const mapped = read !== "RequestMalformedError" && read !== "no error";
      if (!mapped) why.push(`the SDK's client reads it as ${read}`);
      return [declares && jsonrpc && mapped, `HTTP 401 body ${typeof answer === "string" ? answer : JSON.stringify(answer)}; the SDK's client throws ${read}; ${why.join("; ")}`, "401"];
    }
    const err = Run.rpcError(answer);
    return [true, `HTTP ${status}: ${JSON.stringify(answer)}`, `${status} ${err ? err.code : "result"}`];
  }

  async authFromCard() {
    const declares = this.declaresSchemes();
    const token = this.args.token;
    if (token) {
      this.authHeaders = { Authorization: `Bearer ${token}` };
      // The SDK's auth helper. A real caller wires it when the card asks for a credential;
      // when the card declares none but the server wants one, we wire it anyway (fallback)
      // so that the later steps can be measured.
      this.fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
        headers: async () => ({ Authorization: `Bearer ${token}` }),
        shouldRetryWithHeaders: async () => undefined,
      });
    }
    const transports = [new JsonRpcTransportFactory({ fetchImpl: this.fetchImpl })];
    const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports });
    this.factoryOptions = options;
    this.client = await new ClientFactory(options).createFromAgentCard(this.cardObj);
    this.state.clients = true;
    const schemes = JSON.stringify(AgentCard.toJSON(this.cardObj).securitySchemes);
    if (declares) return [true, `card declares ${schemes}; the auth fetch sends the token`, "declared"];
    if (this.state["no-credential"] === 401) {
      return [false, "calls need a Bearer token but the card declares no securitySchemes, so a client that follows the card sends none; sending --token through createAuthenticatingFetchWithRetry to measure the rest", "undeclared"];
    }
    return [true, "no credential needed, none declared", "none"];
  }

  async sendBlockingStep() {
    const answer = await this.sendBlocking(this.request("c1", 1, 3));
    const task = answer.task;
    if (!task) return [false, `answer is not a task: ${JSON.stringify(answer)}`, "no task"];
    this.state.c1 = task;
    const state = task.status?.state;
    const names = (task.artifacts || []).map((a) => a.name);
    return [state === "TASK_STATE_INPUT_REQUIRED" && names.includes("turn-1"), `state ${state}, artifacts ${JSON.stringify(names)}, task ${JSON.stringify(task)}`, state];
  }

  async statusTimestamp() {
    const ts = this.state.c1.status?.timestamp;
    if (!ts) return [false, `status has no timestamp: ${JSON.stringify(this.state.c1.status)}`, "absent"];
    return [RFC3339.test(ts), `status.timestamp ${JSON.stringify(ts)}`, ts];
  }

  async historyIds() {
    const history = this.state.c1.history || [];
    const missing = history.filter((m) => !(m.taskId && m.contextId))
      .map((m) => `${m.messageId} lacks ${JSON.stringify(["taskId", "contextId"].filter((k) => !m[k]))}`);
    return [history.length > 0 && missing.length === 0, `${history.length} messages; ${missing.join("; ") || "all carry both"}`, `${missing.length} of ${history.length} lack ids`];
  }

  async sendStreaming() {
    const events = [];
    const started = Date.now();
    for await (const ev of this.client.sendMessageStream(this.request("c2", 1, 1), callOptions())) {
      events.push(StreamResponse.toJSON(ev));
    }
    const kinds = events.map(firstKey);
    const final = lastState(events);
    return [kinds[0] === "task" && final === "TASK_STATE_COMPLETED", `${events.length} events ${JSON.stringify(kinds)}, last state ${final}, ${Date.now() - started} ms`, `${kinds[0] ?? "-"}..${final}`];
  }

  async continueTask() {
    const c1 = this.state.c1;
    const answer = await this.sendBlocking(this.request("c1", 2, 3, { taskId: c1.id, contextId: c1.contextId }));
    const task = answer.task || {};
    const state = task.status?.state;
    const names = (task.artifacts || []).map((a) => a.name);
    const ok = task.id === c1.id && state === "TASK_STATE_INPUT_REQUIRED" && names.includes("turn-1") && names.includes("turn-2");
    if (ok) this.state["c1-2"] = task;
    return [ok, `task ${task.id}, state ${state}, artifacts ${JSON.stringify(names)}`, state];
  }

  async historyLength() {
    const task = Task.toJSON(await this.client.getTask(GetTaskRequest.fromJSON({ id: this.state.c1.id, historyLength: 1 }), callOptions()));
    const n = (task.history || []).length;
    return [n <= 1, `historyLength=1 gave ${n} history messages`, `${n} messages`];
  }

  async listTasks() {
    const c1 = this.state.c1;
    const answer = ListTasksResponse.toJSON(await this.client.listTasks(ListTasksRequest.fromJSON({ contextId: c1.contextId }), callOptions()));
    const ids = (answer.tasks || []).map((t) => t.id);
    const rest = Object.fromEntries(Object.entries(answer).filter(([k]) => k !== "tasks"));
    return [ids.includes(c1.id), `${ids.length} tasks, other fields ${JSON.stringify(rest)}`, `${ids.length} tasks`];
  }

  async subscribeSnapshot() {
    const c1 = this.state.c1;
    const sub = { events: [], closed: false, error: null, opened: Date.now(), abort: new AbortController() };
    this.state.sub = sub;
    sub.done = (async () => {
      try {
        const signal = AbortSignal.any([sub.abort.signal, AbortSignal.timeout(30_000)]);
        for await (const ev of this.client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: c1.id }), { signal })) {
          sub.events.push([Date.now(), StreamResponse.toJSON(ev)]);
        }
      } catch (err) {
        sub.error = describe(err);
      } finally {
        sub.closed = true;
      }
    })();
    const deadline = Date.now() + 5000;
    while (!sub.events.length && !sub.closed && Date.now() < deadline) await sleep(10);
    if (!sub.events.length) return [false, `no event within 5 s (closed ${sub.closed}, error ${sub.error})`, sub.error || "nothing"];
    const [at, first] = sub.events[0];
    const kind = firstKey(first);
    this.state.subscribed = true;
    return [kind === "task", `first event ${kind} after ${at - sub.opened} ms: ${JSON.stringify(first).slice(0, 200)}`, `${kind} @${at - sub.opened}ms`];
  }

  async subscribeLive() {
    const sub = this.state.sub;
    const c1 = this.state.c1;
    await sleep(300); // let a server that ends the stream at input-required do so
    const closedEarly = sub.closed;
    const before = sub.events.length;
    const sent = Date.now();
    const answer = await this.sendBlocking(this.request("c1", 3, 3, { taskId: c1.id, contextId: c1.contextId }));
    const answered = Date.now();
    const deadline = answered + 5000;
    while (!sub.closed && Date.now() < deadline) {
      if (TERMINAL.has(lastState(sub.events.map(([, e]) => e)))) break;
      await sleep(10);
    }
    const later = sub.events.slice(before);
    const finalAt = later.find(([, e]) => TERMINAL.has(lastState([e])))?.[0];
    sub.abort.abort();
    const kinds = later.map(([, e]) => firstKey(e));
    const blockingState = answer.task?.status?.state;
    if (closedEarly) {
      return [false, `the stream closed at input-required after ${before} events, before turn 3 was sent (error ${sub.error}); turn 3 answered ${blockingState}`, "closed at input-required"];
    }
    if (finalAt === undefined) return [false, `turn 3 answered ${blockingState}; the stream gave ${JSON.stringify(kinds)} and no terminal state within 5 s`, "no terminal event"];
    const lag = finalAt - answered;
    return [true, `after turn 3 (answered ${blockingState} in ${answered - sent} ms) the stream gave ${JSON.stringify(kinds)}; terminal event ${lag} ms after the blocking answer`, `terminal ${lag >= 0 ? "+" : ""}${lag} ms`];
  }

  async returnImmediately() {
    const started = Date.now();
    const answer = await this.sendBlocking(this.request("c3", 1, 1, { returnImmediately: true }));
    const task = answer.task;
    if (!task) return [false, `answer is not a task: ${JSON.stringify(answer)}`, "no task"];
    this.state.c3 = task;
    const state = task.status?.state;
    return [!TERMINAL.has(state), `returned ${state} in ${Date.now() - started} ms: ${JSON.stringify(task).slice(0, 300)}`, state];
  }

  async poll() {
    const seen = [];
    const deadline = Date.now() + 8000;
    while (Date.now() < deadline) {
      const task = Task.toJSON(await this.client.getTask(GetTaskRequest.fromJSON({ id: this.state.c3.id }), callOptions()));
      const state = task.status?.state;
      if (seen.at(-1) !== state) seen.push(state);
      if (TERMINAL.has(state)) return [state === "TASK_STATE_COMPLETED", `states seen ${JSON.stringify(seen)}`, state];
      await sleep(100);
    }
    return [false, `not terminal after 8 s; states seen ${JSON.stringify(seen)}`, seen.at(-1) ?? "-"];
  }

  async cancel() {
    const answer = await this.sendBlocking(this.request("c4", 1, 2));
    const task = answer.task || {};
    const canceled = Task.toJSON(await this.client.cancelTask(CancelTaskRequest.fromJSON({ id: task.id }), callOptions()));
    this.state.c4 = task;
    const state = canceled.status?.state;
    return [state === "TASK_STATE_CANCELED", `task was ${task.status?.state}, cancel answered ${state}`, state];
  }

  async cancelAgain() {
    try {
      const again = Task.toJSON(await this.client.cancelTask(CancelTaskRequest.fromJSON({ id: this.state.c4.id }), callOptions()));
      return [true, `second cancel answered the task, ${again.status?.state}`, again.status?.state];
    } catch (err) {
      const code = errorCode(err);
      return [code !== null, `second cancel refused: ${describe(err)}`, String(code)];
    }
  }

  async pushCreate() {
    const answer = await this.sendBlocking(this.request("c5", 1, 2));
    const task = answer.task || {};
    this.state.c5 = task;
    const created = TaskPushNotificationConfig.toJSON(await this.client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({ taskId: task.id, url: this.receiver.url, token: "push-token-1" }), callOptions()));
    const missing = ["id", "taskId", "url"].filter((k) => !created[k]);
    if (created.id) this.state.push = created;
    this.state["push-created"] = true;
    return [missing.length === 0, `answer ${JSON.stringify(created)}${missing.length ? "; lacks " + JSON.stringify(missing) : ""}`,
      missing.length ? "lacks " + missing.join(",") : "id " + created.id.slice(0, 12)];
  }

  async pushGet() {
    const p = this.state.push;
    const got = TaskPushNotificationConfig.toJSON(await this.client.getTaskPushNotificationConfig(
      GetTaskPushNotificationConfigRequest.fromJSON({ taskId: p.taskId, id: p.id }), callOptions()));
    return [got.url === this.receiver.url, `answer ${JSON.stringify(got)}`, got.url === this.receiver.url ? "url ok" : "wrong"];
  }

  async pushList() {
    const p = this.state.push;
    const listed = ListTaskPushNotificationConfigsResponse.toJSON(await this.client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: p.taskId }), callOptions()));
    const ids = (listed.configs || []).map((c) => c.id);
    return [ids.includes(p.id), `answer ${JSON.stringify(listed)}`, `${ids.length} configs`];
  }

  async pushDelivered() {
    const c5 = this.state.c5;
    const before = this.receiver.received.length;
    const answer = await this.sendBlocking(this.request("c5", 2, 2, { taskId: c5.id, contextId: c5.contextId }));
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      const got = this.receiver.received.slice(before).map((r) => r.body).filter((b) => b && typeof b === "object");
      if (TERMINAL.has(lastState(got))) break;
      await sleep(50);
    }
    const got = this.receiver.received.slice(before);
    const state = answer.task?.status?.state;
    if (!got.length) return [false, `turn 2 answered ${state}; nothing reached ${this.receiver.url} within 5 s`, "0 posts"];
    const kinds = got.map((r) => firstKey(r.body));
    return [true, `${got.length} POSTs ${JSON.stringify(kinds)}; notification token header ${JSON.stringify(got[0].headers["x-a2a-notification-token"])}; first body ${JSON.stringify(got[0].body).slice(0, 200)}`, `${got.length} posts`];
  }

  async pushDelete() {
    const p = this.state.push;
    await this.client.deleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: p.taskId, id: p.id }), callOptions());
    const listed = ListTaskPushNotificationConfigsResponse.toJSON(await this.client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: p.taskId }), callOptions()));
    const ids = (listed.configs || []).map((c) => c.id);
    return [!ids.includes(p.id), `deleted; list now ${JSON.stringify(listed)}`, `${ids.length} left`];
  }

  async v03() {
    if (!this.args.v03) return [true, "not asked (--v03 not given)", "not run"];
    // The SDK's 0.3 transport: legacyCompat on, and the card's interface marked 0.3.
    const legacy = AgentCard.fromJSON(AgentCard.toJSON(this.cardObj));
    for (const iface of legacy.supportedInterfaces) iface.protocolVersion = "0.3";
    const transports = [new JsonRpcTransportFactory({ fetchImpl: this.fetchImpl, legacyCompat: { enabled: true } })];
    const client = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports })).createFromAgentCard(legacy);
    const result = await client.sendMessage(this.request("c6", 1, 1), callOptions());
    const answer = resultJson(result);
    const state = answer.task?.status?.state;
    return [state === "TASK_STATE_COMPLETED", `transport ${client.transport.constructor.name}; answer ${JSON.stringify(answer).slice(0, 300)}`, state];
  }

  async rawMalformed() {
    const [status, answer] = await this.raw(null, { content: '{"jsonrpc": "2.0", "id": 1, "method": ' });
    const err = Run.rpcError(answer);
    return [status === 200 && err?.code === -32700 && answer.id === null, `HTTP ${status}: ${JSON.stringify(answer)}`, `${status} ${err?.code ?? "-"}`];
  }

  async rawCode(body, version, expect) {
    const [status, answer] = await this.raw(body, { version });
    const err = Run.rpcError(answer);
    return [err?.code === expect, `HTTP ${status}: ${typeof answer === "string" ? answer : JSON.stringify(answer)}`, String(err ? err.code : "result")];
  }

  async rawV11() {
    const [status, answer] = await this.raw({ jsonrpc: "2.0", id: 6, method: "GetTask", params: { id: "no-such-task" } }, { version: "1.1" });
    const err = Run.rpcError(answer);
    return [typeof answer === "object", `HTTP ${status}: ${JSON.stringify(answer)}`, String(err ? err.code : "result")];
  }

  async rawErrorData() {
    const [status, answer] = await this.raw({ jsonrpc: "2.0", id: 8, method: "GetTask", params: { id: "no-such-task" } });
    const data = Run.rpcError(answer)?.data;
    const info = Array.isArray(data) ? data.filter((d) => d?.["@type"] === "type.googleapis.com/google.rpc.ErrorInfo") : [];
    const ok = info.length > 0 && info[0].domain === "a2a-protocol.org" && Boolean(info[0].reason);
    return [ok, `HTTP ${status}: ${JSON.stringify(answer)}`, info[0]?.reason ?? "no ErrorInfo"];
  }

  /** GetTask without its id through the SDK client: -32602, and the error's data (which
   * this client keeps whole) names the field in a google.rpc.BadRequest. */
  async fieldViolations() {
    try {
      await this.client.getTask(GetTaskRequest.fromJSON({ id: "" }), callOptions());
      return [false, "GetTask without an id answered a task", "result"];
    } catch (err) {
      const code = errorCode(err);
      const data = Array.isArray(err?.data) ? err.data : (Array.isArray(err?.cause?.data) ? err.cause.data : null);
      const bad = (data || []).find((d) => d?.["@type"] === "type.googleapis.com/google.rpc.BadRequest");
      const fields = (bad?.fieldViolations || []).map((v) => v.field);
      const ok = code === -32602 && JSON.stringify(fields) === JSON.stringify(["id"]);
      return [ok, `${describe(err)}; data ${JSON.stringify(data)}`, `${code} ${JSON.stringify(fields)}`];
    }
  }

  async raw8mb() {
    const body = {
      jsonrpc: "2.0", id: 9, method: "SendMessage",
      params: { message: { messageId: `js-big-${Date.now()}`, role: "ROLE_USER",
        parts: [{ text: "x".repeat(8 * 1024 * 1024) }, { data: { conversation: "big", turn: 1, turns: 1 } }] } },
    };
    let status, answer;
    try {
      [status, answer] = await this.raw(body);
    } catch (err) {
      return [false, `no HTTP answer: ${describe(err)}`, "connection error"];
    }
    const err = Run.rpcError(answer);
    const shown = typeof answer === "string" ? answer.slice(0, 300) : JSON.stringify(answer).slice(0, 300);
    return [true, `HTTP ${status}: ${shown}`, `${status} ${err ? err.code : typeof answer === "object" ? "result" : "-"}`];
  }

  async main() {
    const plan = {
      "card": [() => this.card(), []],
      "no-credential": [() => this.noCredential(), ["card"]],
      "auth-from-card": [() => this.authFromCard(), ["card"]],
      "send-blocking": [() => this.sendBlockingStep(), ["clients"]],
      "status-timestamp": [() => this.statusTimestamp(), ["c1"]],
      "history-ids": [() => this.historyIds(), ["c1"]],
      "send-streaming": [() => this.sendStreaming(), ["clients"]],
      "continue-task": [() => this.continueTask(), ["c1"]],
      "get-task-history-length": [() => this.historyLength(), ["c1"]],
      "list-tasks": [() => this.listTasks(), ["c1"]],
      "subscribe-snapshot": [() => this.subscribeSnapshot(), ["c1-2"]],
      "subscribe-live": [() => this.subscribeLive(), ["subscribed"]],
      "return-immediately": [() => this.returnImmediately(), ["clients"]],
      "poll-until-done": [() => this.poll(), ["c3"]],
      "cancel": [() => this.cancel(), ["clients"]],
      "cancel-again": [() => this.cancelAgain(), ["c4"]],
      "push-create": [() => this.pushCreate(), ["clients"]],
      "push-get": [() => this.pushGet(), ["push"]],
      "push-list": [() => this.pushList(), ["push"]],
      "push-delivered": [() => this.pushDelivered(), ["push-created"]],
      "push-delete": [() => this.pushDelete(), ["push"]],
      "v03-message-send": [() => this.v03(), ["clients"]],
      "raw-malformed-json": [() => this.rawMalformed(), ["card"]],
      "raw-unknown-method": [() => this.rawCode({ jsonrpc: "2.0", id: 2, method: "NoSuchMethod", params: {} }, "1.0", -32601), ["card"]],
      "raw-bad-params": [() => this.rawCode({ jsonrpc: "2.0", id: 3, method: "GetTask", params: { id: 5 } }, "1.0", -32602), ["card"]],
      "raw-unknown-method-no-version": [() => this.rawCode({ jsonrpc: "2.0", id: 4, method: "NoSuchMethod", params: {} }, null, -32601), ["card"]],
      "raw-bad-params-no-version": [() => this.rawCode({ jsonrpc: "2.0", id: 5, method: "GetTask", params: { id: 5 } }, null, -32602), ["card"]],
      "raw-version-1.1": [() => this.rawV11(), ["card"]],
      "raw-version-2.0": [() => this.rawCode({ jsonrpc: "2.0", id: 7, method: "GetTask", params: { id: "no-such-task" } }, "2.0", -32009), ["card"]],
      "raw-error-data": [() => this.rawErrorData(), ["card"]],
      "field-violations": [() => this.fieldViolations(), ["card"]],
      "raw-8mb-body": [() => this.raw8mb(), ["card"]],
    };
    if (JSON.stringify(Object.keys(plan)) !== JSON.stringify(STEP_NAMES)) throw new Error("plan and STEP_NAMES differ");
    for (const name of STEP_NAMES) {
      const [fn, needs] = plan[name];
      await this.step(name, fn, needs);
    }
    this.state.sub?.abort.abort();
    const ran = this.results.filter((r) => !r.detail.startsWith("skipped:"));
    const summary = {
      steps: this.results.length,
      ok: this.results.filter((r) => r.ok).length,
      failed: ran.filter((r) => !r.ok).length,
      skipped: this.results.length - ran.length,
      plain: this.args.plain,
      v03: this.args.v03,
    };
    console.log(JSON.stringify({ client: CLIENT, summary }));
    return summary.failed === 0 && summary.skipped === 0 ? 0 : 1;
  }
}

const args = parseArgs(process.argv.slice(2));
const watchdog = setTimeout(() => {
  console.log(JSON.stringify({ client: CLIENT, summary: { error: `run timed out after ${RUN_TIMEOUT_MS / 1000} s` } }));
  process.exit(1);
}, RUN_TIMEOUT_MS);
watchdog.unref();
const receiver = await startReceiver();
let code = 1;
try {
  code = await new Run(args, receiver).main();
} finally {
  await receiver.close();
}
// Open keep-alive sockets of fetch must not hold the process.
process.exit(code);
