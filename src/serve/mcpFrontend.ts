import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode as RpcCode,
  GetPromptRequestSchema,
  InitializedNotificationSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type LoggingLevel,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Mode } from "../config/schema.js";
import type { Bridge, ResourceSubscription } from "../core/bridge.js";
import { toAbridgeError } from "../model/errors.js";
import { silentLogger, type Logger } from "../log/logger.js";
import type { ClientRelay, JsonObject, ListedTool, ServerStatus, UpstreamNotification } from "../model/types.js";
import { VERSION } from "../model/version.js";
import { isObject } from "../model/json.js";
import { ClientSession } from "./clientSession.js";
import { decodeCursor, encodeCursor, instructionsFor, severity, toWireOutcome, withObjectType } from "./frontendWire.js";
import { RequestGate } from "./requestGate.js";
import { lazyValidator } from "../util/lazyValidator.js";

/** Options of {@link createMcpFrontend}. */
export interface McpFrontendOptions {
  /** How tools are shown (default: the config's mode). */
  mode?: Mode;
  logger?: Logger;
  /** Tools per `tools/list` page (default 500): large catalogs are paginated for the client too. */
  pageSize?: number;
  /** Who this front end serves, for logs and the audit trail (e.g. `stdio`, `http:<session>`). */
  client?: string;
}

/** The params of a tools/call the front end acts on. */
export interface ToolCallParams {
  name: string;
  arguments?: Record<string, unknown> | undefined;
  _meta?: { progressToken?: string | number | undefined } | undefined;
}

/** What a tools/call needs of the request it answers: its abort signal and the way back to its client. */
export interface ToolCallContext {
  /** Aborted when the client cancels the request or goes away. */
  signal: AbortSignal;
  /** Sends a request to the client, related to the call (sampling, elicitation). */
  sendRequest(request: { method: string; params: JsonObject }, signal: AbortSignal): Promise<JsonObject>;
  /** Sends a notification to the client, related to the call (progress, log lines). */
  sendNotification(notification: { method: string; params: JsonObject }): Promise<void>;
}

/** A front end's MCP server with a way to tell its client that the tool list changed. */
export interface McpFrontend {
  server: Server;
  /** Stops listening to the bridge (the server itself is closed by its transport). */
  dispose(): void;
  /**
   * Refuses new requests and resolves once those in flight are answered, or after `graceMs`
   * (then the caller closes the server, which aborts what is left).
   */
  drain(graceMs: number): Promise<void>;
  /**
   * Answers a tools/call that reached the front end beside its SDK server (the stdio fast path),
   * counted like any request for {@link drain}. Resolves with the result; a failure the client
   * sees as a JSON-RPC error is thrown as an `McpError`, one it sees as a tool error is a result.
   */
  callTool(params: ToolCallParams, context: ToolCallContext): Promise<JsonObject>;
}

/** Any result object of a relayed request, kept as the client sent it (the upstream validates it). */
const looseResult = z.looseObject({});

/** What a request handler gets besides the request. */
type HandlerExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** An SDK request schema: a zod object whose `method` is a literal. */
type RequestSchema = z.ZodObject<{ method: z.ZodLiteral<string> } & z.core.$ZodShape>;

/**
 * Registers `handler` for the method of `schema`, answering params that do not fit the schema
 * with -32602. The SDK parses them itself and lets the ZodError become -32603 (internal error),
 * which tells a client that abridge broke rather than that the request was wrong.
 */
function handle<S extends RequestSchema>(server: Server, schema: S, handler: (request: z.infer<S>, extra: HandlerExtra) => unknown, gate: RequestGate): void {
  const method = schema.shape.method.value;
  server.setRequestHandler(z.looseObject({ method: z.literal(method) }), async (request, extra) => {
    const parsed = schema.safeParse(request);
    if (!parsed.success) throw new McpError(RpcCode.InvalidParams, `invalid params of ${method}: ${z.prettifyError(parsed.error)}`);
    gate.enter(method);
    try {
      return (await handler(parsed.data, extra)) as never;
    } finally {
      gate.leave();
    }
  });
}

/** One validator for every front end's SDK `Server`, made on first use (it was most of the CPU of a first `initialize` after module loading). */
const frontendValidator = lazyValidator();

/**
 * Builds an SDK low-level `Server` over a {@link Bridge}: every upstream's tools (in the chosen
 * mode), resources and prompts, with calls, cancellation and progress passed through. One is made
 * per client connection; they all share the bridge.
 *
 * What upstreams send back is routed to the right client: progress by token; sampling and
 * elicitation requests and log lines made during a tool call go to the client whose call it is
 * (while only one client has calls in flight on that upstream: with overlapping calls of two
 * clients a request is refused and a log line goes to every client, since stdio carries nothing
 * that ties an upstream's message to one call); `resources/updated` goes to the clients that
 * subscribed; list_changed to every client that has listed what changed. `logging/setLevel` is
 * kept per client and filters what it is sent; it is not forwarded, because the upstreams are
 * shared and one client's level must not silence another's. Capabilities are declared whole (the
 * upstreams may not be up yet at `initialize`). Nothing is sent unasked before the client's
 * session has begun (see {@link ClientSession}).
 */
export function createMcpFrontend(bridge: Bridge, options: McpFrontendOptions = {}): McpFrontend {
  const mode = options.mode ?? bridge.config.mode;
  const logger = options.logger ?? silentLogger;
  const pageSize = options.pageSize ?? 500;
  const clientId = `${options.client ?? "client"}:${randomUUID()}`;

  const instructions = instructionsFor(bridge, mode);

  const gate = new RequestGate();
  const on = <S extends RequestSchema>(schema: S, handler: (request: z.infer<S>, extra: HandlerExtra) => unknown): void =>
    handle(server, schema, handler, gate);

  const server = new Server(
    { name: "abridge", version: VERSION },
    {
      jsonSchemaValidator: frontendValidator,
      capabilities: {
        tools: { listChanged: true },
        // Declared always: `initialize` is answered before the upstreams are up, and what they
        // offer is not known yet. A request for a server without the capability is refused (or,
        // for completions, answered empty) by its handler below.
        resources: { listChanged: true, subscribe: true },
        prompts: { listChanged: true },
        // abridge answers logging/setLevel itself and filters the upstreams' log lines per client.
        logging: {},
        completions: {},
      },
      instructions,
    },
  );

  const notDelivered =
    (what: string) =>
    (err: unknown): void =>
      logger.debug(`${what} not delivered`, { error: String(err) });
  // Everything sent to this client unasked goes through its session, which holds it until the
  // session has begun.
  const session = new ClientSession(notDelivered);
  // The MCP lifecycle: the session begins with the client's notifications/initialized. The SDK's
  // own handler of it is replaced; its `oninitialized` hook is still called.
  server.setNotificationHandler(InitializedNotificationSchema, () => {
    session.begin();
    server.oninitialized?.();
  });

  /** Digest of the list this client was last told of: its first tools/list, then each change sent. */
  let listedDigest: string | undefined;
  /** Lists wait this long for upstreams still starting (see `startup_grace_ms`). */
  const graceFor = (signal: AbortSignal): Promise<boolean> => bridge.waitReady(bridge.config.startup_grace_ms, signal);
  // The list a client is paging through: taken at its first page and served for the pages after
  // it. Reading the current list per page re-rendered all 100k tools for every page while
  // summaries were landing (each one invalidates the rendering): 201 pages took 42.7 s. A
  // snapshot also keeps a paging client's view consistent; list_changed tells it to start over.
  let snapshot: { id: number; tools: readonly ListedTool[] } | undefined;
  let snapshots = 0;
  on(ListToolsRequestSchema, async (request, extra) => {
    // A client lists right after initialize, which is answered at once: upstreams still starting
    // get a short grace, then the list is what is ready and the rest follow with list_changed.
    await graceFor(extra.signal);
    const cursor = decodeCursor(request.params?.cursor);
    // A first page, or a cursor of a list no longer kept (an older one): the current list.
    if (request.params?.cursor === undefined || snapshot === undefined || cursor.snapshot !== snapshot.id) {
      snapshot = { id: ++snapshots, tools: bridge.list(mode) };
      listedDigest ??= bridge.listDigest(mode);
      session.listed("tools");
    }
    const { tools: all, id } = snapshot;
    const { offset } = cursor;
    const page = all.slice(offset, offset + pageSize).map(withObjectType);
    return { tools: page, ...(offset + pageSize < all.length ? { nextCursor: encodeCursor(id, offset + pageSize) } : {}) };
  });

  // Unreadable lines are answered by the transport that read them (stdioServerTransport.ts over
  // stdio, httpServer.ts over HTTP); what reaches here is only logged.
  server.onerror = (error) => {
    logger.debug("MCP front end error", { error: error.message });
  };

  let logLevel: LoggingLevel | undefined;
  on(SetLevelRequestSchema, (request) => {
    logLevel = request.params.level;
    return {};
  });
  const wantsLog = (params: JsonObject): boolean => logLevel === undefined || severity(params.level) >= severity(logLevel);

  /**
   * A tools/call, answered the same way whichever path brought it (the SDK server, or the stdio
   * fast path of fastToolCalls.ts): the calling client's relay, progress by its token, the call
   * through the bridge, and failures mapped by {@link toWireOutcome} (an McpError is thrown).
   */
  /**
   * The way back to this client for what an upstream asks or logs during one of its requests
   * (tools/call, prompts/get, resources/read): refused at once for a request the client declared
   * no capability for.
   */
  const relayOf = (context: Pick<ToolCallContext, "sendRequest" | "sendNotification">): ClientRelay => ({
    client: clientId,
    async request(method, relayed, signal) {
      const capabilities = server.getClientCapabilities();
      const needs =
        method === "sampling/createMessage" ? "sampling" : method === "elicitation/create" ? "elicitation" : method === "roots/list" ? "roots" : undefined;
      if (needs === undefined || capabilities?.[needs] === undefined)
        throw new McpError(RpcCode.InvalidRequest, `abridge: the client does not support ${method}`);
      return context.sendRequest({ method, params: relayed }, signal);
    },
    notify(method, relayed) {
      if (method === "notifications/message" && !wantsLog(relayed)) return;
      context.sendNotification({ method, params: relayed }).catch(notDelivered(method));
    },
  });
  /** The relay of a request the SDK server answers: extra.sendRequest ties what is sent to it (over HTTP, its stream). */
  const relayOfExtra = (extra: HandlerExtra): ClientRelay =>
    relayOf({
      sendRequest: (relayed, signal) => extra.sendRequest(relayed as never, looseResult, { signal }),
      sendNotification: (notification) => extra.sendNotification(notification as never),
    });

  const callTool = async (params: ToolCallParams, context: ToolCallContext): Promise<JsonObject> => {
    const progressToken = params._meta?.progressToken;
    const relay = relayOf(context);
    try {
      return await bridge.callTool(params.name, params.arguments as JsonObject | undefined, {
        signal: context.signal,
        mode,
        relay,
        // Who called, for the audit log.
        ...(options.client !== undefined ? { client: options.client } : {}),
        ...(progressToken !== undefined
          ? {
              onProgress: (update) => {
                void context
                  .sendNotification({ method: "notifications/progress", params: { progressToken, ...update } })
                  .catch((err: unknown) => logger.debug("progress notification not delivered", { error: String(err) }));
              },
            }
          : {}),
      });
    } catch (err) {
      const outcome = toWireOutcome(err);
      if ("error" in outcome) throw outcome.error;
      return outcome.result;
    }
  };
  on(CallToolRequestSchema, (request, extra) =>
    callTool(request.params, {
      signal: extra.signal,
      // extra.sendRequest ties the request to this call: over HTTP it travels on the call's stream.
      sendRequest: (relayed, signal) => extra.sendRequest(relayed as never, looseResult, { signal }),
      sendNotification: (notification) => extra.sendNotification(notification as never),
    }),
  );

  const wireError = (err: unknown): McpError => {
    const outcome = toWireOutcome(err);
    return "error" in outcome ? outcome.error : new McpError(RpcCode.InternalError, toAbridgeError(err).message);
  };
  /** Runs a request of the bridge, answering a failure as its JSON-RPC error. */
  const wire = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw wireError(err);
    }
  };
  const who = options.client !== undefined ? { client: options.client } : {};

  // A list counts as seen from the moment it is asked for: a server coming up while the answer is
  // gathered may or may not be in it, so its change is announced rather than missed.
  on(ListResourcesRequestSchema, async (_request, extra) => {
    session.listed("resources");
    return { resources: await wire(() => bridge.listResources(extra.signal)) };
  });
  on(ListResourceTemplatesRequestSchema, async (_request, extra) => {
    session.listed("resources");
    return { resourceTemplates: await wire(() => bridge.listResourceTemplates(extra.signal)) };
  });
  on(ReadResourceRequestSchema, (request, extra) =>
    wire(() => bridge.readResource(request.params as JsonObject & { uri: string }, { signal: extra.signal, relay: relayOfExtra(extra), ...who })),
  );
  on(ListPromptsRequestSchema, async (_request, extra) => {
    session.listed("prompts");
    return { prompts: await wire(() => bridge.listPrompts(extra.signal)) };
  });
  on(GetPromptRequestSchema, (request, extra) =>
    wire(() => bridge.getPrompt(request.params as JsonObject & { name: string }, { signal: extra.signal, relay: relayOfExtra(extra), ...who })),
  );

  // Subscriptions of this client by URI; released when the client goes. `pending` while the
  // bridge is still subscribing, so that a repeated request does not subscribe twice.
  const subscribed = new Map<string, ResourceSubscription | "pending">();
  let disposed = false;
  on(SubscribeRequestSchema, async (request, extra) => {
    const uri = request.params.uri;
    if (subscribed.has(uri)) return {};
    subscribed.set(uri, "pending");
    let subscription: ResourceSubscription;
    try {
      subscription = await bridge.subscribe(uri, extra.signal);
    } catch (err) {
      subscribed.delete(uri);
      throw wireError(err);
    }
    // The client left, or unsubscribed, while this was under way: nobody would release it later.
    if (disposed || subscribed.get(uri) !== "pending") bridge.unsubscribe(subscription).catch(notDelivered("resources/unsubscribe"));
    else subscribed.set(uri, subscription);
    return {};
  });
  on(UnsubscribeRequestSchema, async (request, extra) => {
    const subscription = subscribed.get(request.params.uri);
    if (subscription === undefined) return {};
    subscribed.delete(request.params.uri);
    // Still subscribing: the subscribe handler releases it once it is done.
    if (subscription === "pending") return {};
    await wire(() => bridge.unsubscribe(subscription, extra.signal));
    return {};
  });

  on(CompleteRequestSchema, (request, extra) => wire(() => bridge.complete(request.params as JsonObject & { ref: { type: string } }, extra.signal)));

  const onUpstreamNotification = (origin: string, notification: UpstreamNotification): void => {
    const { method, params } = notification;
    switch (method) {
      case "notifications/message":
        if (wantsLog(params)) session.moment(method, () => server.notification({ method, params } as never));
        return;
      case "notifications/resources/updated":
        if (subscriptionOf(params.uri)?.server === origin)
          session.state(method, `${method} ${String(params.uri)}`, () => server.sendResourceUpdated(params as never));
        return;
      case "notifications/resources/list_changed":
        session.listChanged("resources", () => server.sendResourceListChanged());
        return;
      case "notifications/prompts/list_changed":
        session.listChanged("prompts", () => server.sendPromptListChanged());
        return;
    }
  };
  const subscriptionOf = (uri: unknown): ResourceSubscription | undefined => {
    const found = subscribed.get(String(uri));
    return found === "pending" ? undefined : found;
  };
  const stopNotifications = bridge.onNotification(onUpstreamNotification);
  // A server that comes up after this client connected (or again after a restart) may bring
  // resources and prompts the client has not seen: a client that has listed them is told (once its
  // session has begun). Its tools arrive through onListChanged below.
  const onStatus = (status: ServerStatus): void => {
    if (status.state !== "ready") return;
    if (isObject(status.capabilities?.resources)) session.listChanged("resources", () => server.sendResourceListChanged());
    if (isObject(status.capabilities?.prompts)) session.listChanged("prompts", () => server.sendPromptListChanged());
  };
  const stopStatus = bridge.onStatus(onStatus);

  // One list_changed per real change of the list: summaries that land in a mode that does not
  // show them (full) change nothing the client sees, and a client's prompt cache should not be
  // broken for it. Before its first tools/list the client has seen nothing to change (servers
  // coming up during the start-up grace are simply in that first list). The digest is shared by
  // every session (one per list change), not a copy of the list per session.
  const unsubscribe = bridge.onListChanged(() => {
    if (listedDigest === undefined) return;
    const next = bridge.listDigest(mode);
    if (next === listedDigest) return;
    listedDigest = next;
    session.listChanged("tools", () => server.sendToolListChanged());
  });

  return {
    server,
    dispose() {
      unsubscribe();
      stopNotifications();
      stopStatus();
      disposed = true;
      for (const subscription of subscribed.values()) {
        if (subscription !== "pending") bridge.unsubscribe(subscription).catch(notDelivered("resources/unsubscribe"));
      }
      subscribed.clear();
    },
    drain: (graceMs) => gate.drain(graceMs),
    callTool: async (params, context) => {
      gate.enter("tools/call");
      try {
        return await callTool(params, context);
      } finally {
        gate.leave();
      }
    },
  };
}
