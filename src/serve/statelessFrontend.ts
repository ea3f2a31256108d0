import { McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Mode } from "../config/schema.js";
import type { Bridge, BridgeCallOptions, ResourceSubscription } from "../core/bridge.js";
import { messageOf, toAbridgeError } from "../model/errors.js";
import { isObject } from "../model/json.js";
import type { ClientRelay, JsonObject, ListedTool, ServerStatus, UpstreamNotification } from "../model/types.js";
import { VERSION } from "../model/version.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { cacheHint, type CacheHintOptions } from "./cacheHints.js";
import { ParkedCalls, StatelessCall } from "./inputRequired.js";
import { RequestGate } from "./requestGate.js";
import { decodeCursor, encodeCursor, instructionsFor, severity, toWireOutcome, withObjectType } from "./frontendWire.js";
import {
  ALL_VERSIONS,
  META_CLIENT_CAPABILITIES,
  META_LOG_LEVEL,
  META_SERVER_INFO,
  META_SUBSCRIPTION_ID,
  metaError,
  REMOVED_METHODS,
  RPC_MISSING_CLIENT_CAPABILITY,
  STATELESS_VERSION,
  type StatelessError,
} from "./statelessWire.js";

/** Options of {@link createStatelessFrontend}. */
export interface StatelessFrontendOptions {
  mode?: Mode;
  logger?: Logger;
  /** Tools per `tools/list` page (default 500). */
  pageSize?: number;
  /** Who is served, for the audit trail (`http`, `stdio`). */
  client?: string;
  /** Whether what is listed depends on who asks (a bearer token guards it): `cacheScope: "private"`. */
  privateLists?: boolean;
}

/** One request of a stateless client, as the transport read it. */
export interface StatelessRequest {
  id: string | number;
  method: string;
  params?: JsonObject | undefined;
}

/** What a request needs of its transport. */
export interface StatelessRequestContext {
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** Sends a notification tied to this request (progress, log lines it asked for). */
  notify(notification: { method: string; params: JsonObject }): void;
}

/** The answer of one request: a result, or an error. */
export type StatelessAnswer = { result: JsonObject } | { error: StatelessError };

/** A `subscriptions/listen` stream's way out: each notification it carries. */
export type ListenSink = (notification: { method: string; params: JsonObject }) => void;

/** The stateless (2026-07-28) side of `abridge serve`: one per transport, shared by all its clients. */
export interface StatelessFrontend {
  /** Answers one request (not `subscriptions/listen`: see {@link listen}). */
  answer(request: StatelessRequest, context: StatelessRequestContext): Promise<StatelessAnswer>;
  /**
   * Opens a `subscriptions/listen` stream: its acknowledgement goes to `sink` at once, then the
   * changes it asked for. Returns the error to answer instead, or the way to close it.
   */
  listen(request: StatelessRequest, sink: ListenSink): { error: StatelessError } | { close(): void };
  /** Refuses new requests; resolves once those in flight are answered or after `graceMs`. */
  drain(graceMs: number): Promise<void>;
  /** Ends listen streams and parked calls, and stops listening to the bridge. */
  dispose(): void;
  /** Calls waiting for their client's answers (`input_required`). */
  readonly parkedCalls: number;
}

/** The capabilities abridge declares, in either era (what upstreams offer is not known in advance). */
export const SERVER_CAPABILITIES: JsonObject = {
  tools: { listChanged: true },
  resources: { listChanged: true, subscribe: true },
  prompts: { listChanged: true },
  logging: {},
  completions: {},
};

/** The capability a relayed request needs of the client. */
const NEEDS: Record<string, string> = { "sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots" };

/** What one stateless call knows of the request it is currently answering (a retry replaces it). */
interface CallerView {
  capabilities: JsonObject;
  logLevel: unknown;
  notify: StatelessRequestContext["notify"];
}

function rpcError(code: number, message: string, data?: JsonObject): { error: StatelessError } {
  return { error: { code, message, ...(data !== undefined ? { data } : {}) } };
}

/** Maps a failure as the handshake era does ({@link toWireOutcome}), as a stateless answer. */
function failure(err: unknown): StatelessAnswer {
  const outcome = toWireOutcome(err);
  if ("result" in outcome) return { result: { ...outcome.result, resultType: "complete" } };
  const { code, message, data } = outcome.error;
  return rpcError(code, message.replace(/^MCP error -?\d+: /, ""), isObject(data) ? data : undefined);
}

/**
 * Serves clients of MCP revision 2026-07-28 over a {@link Bridge}: each request carries its
 * version and the client's capabilities in `_meta` and is answered on its own, with no session,
 * no SDK `Server` and no handshake. The behaviour behind each method is the handshake era's (the
 * same bridge calls, the same error mapping, the same order of tools); what differs is the
 * envelope: `resultType` on every result, `ttlMs` and `cacheScope` on lists and reads (see
 * cacheHints.ts), `server/discover` in place of `initialize`, `subscriptions/listen` in place of
 * the GET stream and `resources/subscribe`, and `input_required` results in place of requests to
 * the client (see inputRequired.ts). Log lines of a call reach the client only when its request
 * named a `logLevel`; a relayed request the client declared no capability for is refused, and a
 * call that then fails is answered -32021 naming that capability.
 */
export function createStatelessFrontend(bridge: Bridge, options: StatelessFrontendOptions = {}): StatelessFrontend {
  const mode = options.mode ?? bridge.config.mode;
  const logger = options.logger ?? silentLogger;
  const pageSize = options.pageSize ?? 500;
  const gate = new RequestGate();
  const parked = new ParkedCalls();
  const who = options.client !== undefined ? { client: options.client } : {};
  const relayClient = `${options.client ?? "client"}:stateless`;
  const hints: CacheHintOptions = { bridge, mode, privateLists: options.privateLists === true };
  /** Recent tools/list snapshots, so that a client paging through one gets the list it started. */
  const snapshots = new Map<number, { digest: string; tools: readonly ListedTool[] }>();
  let snapshotCount = 0;

  const graceFor = (signal: AbortSignal): Promise<boolean> => bridge.waitReady(bridge.config.startup_grace_ms, signal);

  const listTools = async (params: JsonObject | undefined, signal: AbortSignal): Promise<StatelessAnswer> => {
    await graceFor(signal);
    const cursor = typeof params?.cursor === "string" ? params.cursor : undefined;
    const { snapshot, offset } = decodeCursor(cursor);
    let id = snapshot;
    let tools = id !== undefined ? snapshots.get(id)?.tools : undefined;
    if (cursor === undefined || tools === undefined || id === undefined) {
      // Clients share a snapshot while the list does not change: a first page makes a new one
      // only when the list's digest moved on.
      const digest = bridge.listDigest(mode);
      const latest = snapshotCount > 0 ? snapshots.get(snapshotCount) : undefined;
      if (latest !== undefined && latest.digest === digest) {
        id = snapshotCount;
        tools = latest.tools;
      } else {
        id = ++snapshotCount;
        tools = bridge.list(mode);
        snapshots.set(id, { digest, tools });
        // A few lists are kept: enough for clients still paging through an older one.
        if (snapshots.size > 8) snapshots.delete(snapshots.keys().next().value as number);
      }
    }
    const page = tools.slice(offset, offset + pageSize).map(withObjectType);
    return {
      result: {
        tools: page as unknown as JsonObject[],
        ...(offset + pageSize < tools.length ? { nextCursor: encodeCursor(id, offset + pageSize) } : {}),
        resultType: "complete",
        ...cacheHint("tools/list", hints),
      },
    };
  };

  /**
   * A request whose upstream may ask the client on the way (tools/call, prompts/get,
   * resources/read): started once with the calling client's relay, parked on `input_required`,
   * resumed by the retry that carries the answers. `name` ties a retry to its request (the tool,
   * the prompt, the URI); `start` runs the request through the bridge.
   */
  const relayedCall = async (
    requested: string,
    name: string,
    params: JsonObject,
    context: StatelessRequestContext,
    caller: CallerView,
    start: (relay: ClientRelay, signal: AbortSignal, onProgress: BridgeCallOptions["onProgress"]) => Promise<JsonObject>,
  ): Promise<StatelessAnswer> => {
    const responses = params.inputResponses;
    if (responses !== undefined && !isResponses(responses)) {
      return rpcError(-32602, "Invalid params: inputResponses must map each key to the result object of the request it answers");
    }
    const state = params.requestState;
    let call: StatelessCall;
    let view: { current: CallerView; missing: JsonObject | undefined };
    if (state !== undefined) {
      const resumed = typeof state === "string" ? parked.take(state, requested, name) : undefined;
      if (resumed === undefined) {
        return rpcError(
          -32602,
          "Invalid or expired requestState: it names no call waiting for answers (abridge issues each one for one retry of the same request)",
          {
            reason: "invalid_request_state",
          },
        );
      }
      call = resumed;
      view = viewOf(call);
      view.current = caller;
      // Answers missing for some of the requests: those are asked again, with a new state.
      if (call.answer(isObject(responses) ? responses : {}) > 0 && !call.finished) {
        return inputRequired(call, call.pending(), requested, name);
      }
    } else {
      call = new StatelessCall();
      view = { current: caller, missing: undefined };
      views.set(call, view);
      if (isObject(responses)) call.preanswer(responses);
      const progressToken = isObject(params._meta) ? params._meta.progressToken : undefined;
      const relay: ClientRelay = {
        // One name for every stateless call of this transport: there is no session to tell
        // clients apart, and an upstream of the handshake era that asks mid-call is routed by
        // elimination (src/upstream/mcp/requestRelay.ts), the most recent call of one client first.
        client: relayClient,
        request: async (method, relayed, signal) => {
          const needs = NEEDS[method];
          if (needs === undefined || !isObject(view.current.capabilities[needs])) {
            view.missing = { [needs ?? method]: {} };
            throw new McpError(RPC_MISSING_CLIENT_CAPABILITY, `the client did not declare the ${needs ?? method} capability ${method} needs`, {
              requiredCapabilities: view.missing,
            });
          }
          return call.request(method, relayed, signal);
        },
        notify: (method, relayed) => {
          if (method === "notifications/message") {
            const level = view.current.logLevel;
            if (level === undefined || severity(relayed.level) < severity(level)) return;
          }
          view.current.notify({ method, params: relayed });
        },
      };
      const onProgress: BridgeCallOptions["onProgress"] =
        typeof progressToken === "string" || typeof progressToken === "number"
          ? (update) => view.current.notify({ method: "notifications/progress", params: { progressToken, ...update } })
          : undefined;
      call.run(start(relay, call.controller.signal, onProgress));
    }
    let step;
    try {
      step = await call.next(context.signal);
    } catch {
      // The client went away: nobody will send the answers, so the upstream call ends too.
      call.abort(new McpError(-32800, "client disconnected"));
      return rpcError(-32800, "Request cancelled: the client went away");
    }
    if ("input" in step) return inputRequired(call, step.input, requested, name);
    views.delete(call);
    const refused = view.missing;
    if ("failed" in step || step.done.isError === true) {
      if (refused !== undefined) {
        return rpcError(RPC_MISSING_CLIENT_CAPABILITY, `the call needs the ${Object.keys(refused).join(", ")} capability, which the client did not declare`, {
          requiredCapabilities: refused,
        });
      }
      if ("failed" in step) return failure(step.failed);
    }
    return { result: { ...(step as { done: JsonObject }).done, resultType: "complete" } };
  };

  /** What each call in progress knows of its current request. */
  const views = new WeakMap<StatelessCall, { current: CallerView; missing: JsonObject | undefined }>();
  const viewOf = (call: StatelessCall): { current: CallerView; missing: JsonObject | undefined } => {
    let view = views.get(call);
    if (view === undefined) {
      view = { current: { capabilities: {}, logLevel: undefined, notify: () => undefined }, missing: undefined };
      views.set(call, view);
    }
    return view;
  };

  const callTool = (params: JsonObject, context: StatelessRequestContext, caller: CallerView): Promise<StatelessAnswer> | StatelessAnswer => {
    const name = params.name;
    if (typeof name !== "string") return rpcError(-32602, "Invalid params: tools/call needs a string name");
    const args = params.arguments;
    if (args !== undefined && !isObject(args)) return rpcError(-32602, "Invalid params: tools/call arguments must be an object");
    return relayedCall(
      "tools/call",
      name,
      params,
      context,
      caller,
      (relay, signal, onProgress) =>
        bridge.callTool(name, args as JsonObject | undefined, { signal, mode, relay, ...who, ...(onProgress ? { onProgress } : {}) }) as Promise<JsonObject>,
    );
  };

  const inputRequired = (call: StatelessCall, requests: JsonObject, method: string, name: string): StatelessAnswer => {
    const requestState = parked.park(call, method, name);
    return { result: { resultType: "input_required", inputRequests: requests, requestState } };
  };

  const wired = async (run: () => Promise<JsonObject>): Promise<StatelessAnswer> => {
    try {
      return { result: { ...(await run()), resultType: "complete" } };
    } catch (err) {
      return failure(err);
    }
  };

  const dispatch = async (request: StatelessRequest, context: StatelessRequestContext): Promise<StatelessAnswer> => {
    const { method, params } = request;
    const meta = isObject(params?._meta) ? params._meta : undefined;
    const refused = metaError(meta);
    if (refused !== undefined) return { error: refused };
    const { signal } = context;
    switch (method) {
      case "server/discover":
        return {
          result: {
            supportedVersions: [...ALL_VERSIONS],
            capabilities: SERVER_CAPABILITIES,
            instructions: instructionsFor(bridge, mode),
            resultType: "complete",
            ...cacheHint("server/discover", hints),
            _meta: { [META_SERVER_INFO]: { name: "abridge", version: VERSION } },
          },
        };
      case "tools/list":
        return listTools(params, signal);
      case "tools/call":
        return callTool(params ?? {}, context, callerOf(meta, context));
      case "resources/list":
        return withHint(method, await wired(async () => ({ resources: await bridge.listResources(signal) })));
      case "resources/templates/list":
        return withHint(method, await wired(async () => ({ resourceTemplates: await bridge.listResourceTemplates(signal) })));
      case "resources/read": {
        const uri = params?.uri;
        if (typeof uri !== "string") return rpcError(-32602, "Invalid params: resources/read needs a string uri");
        const read = await relayedCall(method, uri, params as JsonObject, context, callerOf(meta, context), (relay, callSignal) =>
          bridge.readResource(forwardedParams(params as JsonObject & { uri: string }), { signal: callSignal, relay, ...who }),
        );
        const answer = withHint(method, read);
        // SEP-2164: a resource nobody offers is -32602 with the URI in data.
        if ("error" in answer && answer.error.code === -32602) answer.error.data = { ...answer.error.data, uri };
        return answer;
      }
      case "prompts/list":
        return withHint(method, await wired(async () => ({ prompts: await bridge.listPrompts(signal) })));
      case "prompts/get": {
        if (typeof params?.name !== "string") return rpcError(-32602, "Invalid params: prompts/get needs a string name");
        return relayedCall(method, params.name, params, context, callerOf(meta, context), (relay, callSignal) =>
          bridge.getPrompt(forwardedParams(params as JsonObject & { name: string }), { signal: callSignal, relay, ...who }),
        );
      }
      case "completion/complete":
        if (!isObject(params?.ref) || typeof params.ref.type !== "string") return rpcError(-32602, "Invalid params: completion/complete needs a ref");
        return wired(() => bridge.complete(params as JsonObject & { ref: { type: string } }, signal));
      default:
        if (REMOVED_METHODS.has(method)) return rpcError(-32601, `Method not found: ${method} is not part of protocol revision ${STATELESS_VERSION}`);
        return rpcError(-32601, `Method not found: ${method}`);
    }
  };

  /** What a relayed request knows of its caller: capabilities and log level from the envelope, its way back. */
  const callerOf = (meta: JsonObject | undefined, context: StatelessRequestContext): CallerView => ({
    capabilities: isObject(meta?.[META_CLIENT_CAPABILITIES]) ? meta[META_CLIENT_CAPABILITIES] : {},
    logLevel: meta?.[META_LOG_LEVEL],
    notify: context.notify,
  });

  const withHint = (method: string, answer: StatelessAnswer): StatelessAnswer =>
    "result" in answer ? { result: { ...answer.result, ...cacheHint(method, hints) } } : answer;

  // subscriptions/listen: each open stream, with the changes it asked for.
  interface Listener {
    id: string | number;
    filter: JsonObject;
    sink: ListenSink;
    subscriptions: Map<string, ResourceSubscription | "pending">;
    close(): void;
  }
  const listeners = new Set<Listener>();
  let toolsDigest: string | undefined;
  const tell = (wanted: string, method: string, params: JsonObject = {}, only?: (listener: Listener) => boolean): void => {
    for (const listener of listeners) {
      if (listener.filter[wanted] !== true && !(only?.(listener) ?? false)) continue;
      try {
        listener.sink({ method, params: { ...params, _meta: { [META_SUBSCRIPTION_ID]: listener.id } } });
      } catch (err) {
        logger.debug("listen notification not delivered", { error: messageOf(err) });
      }
    }
  };
  const stopListChanged = bridge.onListChanged(() => {
    if (listeners.size === 0) return;
    const next = bridge.listDigest(mode);
    if (next === toolsDigest) return;
    toolsDigest = next;
    tell("toolsListChanged", "notifications/tools/list_changed");
  });
  const stopNotifications = bridge.onNotification((origin: string, notification: UpstreamNotification) => {
    const { method, params } = notification;
    if (method === "notifications/prompts/list_changed") tell("promptsListChanged", method);
    else if (method === "notifications/resources/list_changed") tell("resourcesListChanged", method);
    else if (method === "notifications/resources/updated") {
      const uri = String(params.uri);
      tell("", method, { uri }, (listener) => {
        const subscription = listener.subscriptions.get(uri);
        return subscription !== undefined && subscription !== "pending" && subscription.server === origin;
      });
    }
  });
  const stopStatus = bridge.onStatus((status: ServerStatus) => {
    if (status.state !== "ready") return;
    if (isObject(status.capabilities?.resources)) tell("resourcesListChanged", "notifications/resources/list_changed");
    if (isObject(status.capabilities?.prompts)) tell("promptsListChanged", "notifications/prompts/list_changed");
  });

  const listen = (request: StatelessRequest, sink: ListenSink): { error: StatelessError } | { close(): void } => {
    const params = request.params;
    const refused = metaError(isObject(params?._meta) ? params._meta : undefined);
    if (refused !== undefined) return { error: refused };
    const filter = params?.notifications;
    if (!isObject(filter)) return rpcError(-32602, "Invalid params: subscriptions/listen needs a notifications filter object");
    const uris = filter.resourceSubscriptions;
    if (uris !== undefined && (!Array.isArray(uris) || !uris.every((uri) => typeof uri === "string"))) {
      return rpcError(-32602, "Invalid params: notifications.resourceSubscriptions must be a list of URIs");
    }
    let closed = false;
    const listener: Listener = {
      id: request.id,
      filter,
      sink,
      subscriptions: new Map(),
      close() {
        if (closed) return;
        closed = true;
        listeners.delete(listener);
        for (const subscription of listener.subscriptions.values()) {
          if (subscription !== "pending")
            bridge.unsubscribe(subscription).catch((err: unknown) => logger.debug("resources/unsubscribe failed", { error: messageOf(err) }));
        }
      },
    };
    toolsDigest ??= bridge.listDigest(mode);
    sink({ method: "notifications/subscriptions/acknowledged", params: { notifications: filter, _meta: { [META_SUBSCRIPTION_ID]: request.id } } });
    listeners.add(listener);
    for (const uri of (uris as string[] | undefined) ?? []) {
      listener.subscriptions.set(uri, "pending");
      bridge.subscribe(uri).then(
        (subscription) => {
          if (closed) bridge.unsubscribe(subscription).catch((err: unknown) => logger.debug("resources/unsubscribe failed", { error: messageOf(err) }));
          else listener.subscriptions.set(uri, subscription);
        },
        (err: unknown) => {
          listener.subscriptions.delete(uri);
          logger.debug("listen: resource subscription refused", { uri, error: toAbridgeError(err).message });
        },
      );
    }
    return { close: () => listener.close() };
  };

  return {
    async answer(request, context) {
      try {
        gate.enter(request.method);
      } catch (err) {
        return failure(err);
      }
      try {
        return await dispatch(request, context);
      } catch (err) {
        // A cursor that does not decode, or a bridge failure outside the paths above.
        return failure(err);
      } finally {
        gate.leave();
      }
    },
    listen,
    drain: (graceMs) => gate.drain(graceMs),
    dispose() {
      stopListChanged();
      stopNotifications();
      stopStatus();
      for (const listener of [...listeners]) listener.close();
      parked.clear();
    },
    get parkedCalls() {
      return parked.size;
    },
  };
}

/** The params of a prompts/get or resources/read as the upstream gets them: without this revision's answers and state, which were abridge's to take. */
function forwardedParams<T extends JsonObject>(params: T): T {
  const { inputResponses: _responses, requestState: _state, ...rest } = params;
  return rest as T;
}

/** True for an `inputResponses` map: each value an object (the result of the request it answers). */
function isResponses(value: unknown): value is JsonObject {
  return isObject(value) && Object.values(value).every((response) => isObject(response));
}
