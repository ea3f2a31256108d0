import { randomUUID, timingSafeEqual } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Mode } from "../config/schema.js";
import type { Bridge } from "../core/bridge.js";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { RateLimitedLog } from "../log/rateLimitedLog.js";
import { FdBudget, HttpConnections, PRE_AUTH_DEADLINE_MS } from "./httpConnections.js";
import { DEFAULT_MAX_CALLS_IN_FLIGHT, DEFAULT_STREAM_STALL_MS, HttpSessionTransport } from "./httpSessionTransport.js";
import {
  accepts,
  BodyError,
  checkLoopbackRequest,
  isJsonContentType,
  LOOPBACK_HOSTS,
  MAX_BATCH_MESSAGES,
  MCP_PATH,
  protocolVersionError,
  readJsonBody,
  sendJsonError,
} from "./httpWire.js";
import { createMcpFrontend, type McpFrontend } from "./mcpFrontend.js";
import { StatelessHttp } from "./httpStateless.js";
import { createStatelessFrontend } from "./statelessFrontend.js";
import { isStatelessRequest } from "./statelessWire.js";

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions {
  /** `127.0.0.1` (default), `localhost` or `::1`: abridge serves loopback only. */
  host?: string;
  /** 0 picks a free port. */
  port: number;
  mode?: Mode;
  /** Bearer token every request must carry (`--token` / `$ABRIDGE_TOKEN`). */
  token?: string;
  logger?: Logger;
  pageSize?: number;
  /** Largest request body accepted (default 16 MiB). */
  maxBodyBytes?: number;
  /**
   * A session with no request in flight for this long is closed, its GET stream too if one is open
   * (default {@link DEFAULT_SESSION_IDLE_MS}); its client gets 404 and, as the spec says,
   * initializes again.
   */
  sessionIdleMs?: number;
  /** Open sessions at most (default {@link DEFAULT_MAX_SESSIONS}); past it initialize gets 503. */
  maxSessions?: number;
  /**
   * Requests of one session that reach the upstreams at once, at most (default 64); past it a
   * call is answered at once with a retryable busy error.
   */
  maxCallsPerSession?: number;
  /** Connections that passed the checks, at most (default 512; see httpConnections.ts). */
  maxConnections?: number;
  /** How long a connection may stay without a request that passes the checks (default 10 s). */
  preAuthMs?: number;
  /** The headers of a request must be in within this after it starts (default {@link HEADERS_TIMEOUT_MS}). */
  headersTimeoutMs?: number;
  /** A whole request, headers and body, must be in within this (default {@link REQUEST_TIMEOUT_MS}). */
  requestTimeoutMs?: number;
  /** A keep-alive connection with no request is closed after this (default {@link KEEP_ALIVE_TIMEOUT_MS}). */
  keepAliveTimeoutMs?: number;
  /** A stream whose client has not read for this long is ended (default 30 s). */
  streamStallMs?: number;
}

/** Default of {@link HttpServerOptions.headersTimeoutMs}: Node's own is 60 s, checked every 30 s. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** Default of {@link HttpServerOptions.requestTimeoutMs}: Node's own is 300 s (a body is 16 MiB at most, on loopback). */
export const REQUEST_TIMEOUT_MS = 30_000;
/** Default of {@link HttpServerOptions.keepAliveTimeoutMs}. */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** How often Node checks the header and request timeouts (its default, 30 s, let a trickled header live 96 s). */
const TIMEOUT_CHECK_MS = 1_000;

/** Default of {@link HttpServerOptions.sessionIdleMs}: 30 minutes. */
export const DEFAULT_SESSION_IDLE_MS = 30 * 60_000;
/** Default of {@link HttpServerOptions.maxSessions}. */
export const DEFAULT_MAX_SESSIONS = 1000;

/** A running streamable HTTP front end. */
export interface HttpFrontend {
  /** `http://127.0.0.1:PORT/mcp`. */
  url: string;
  port: number;
  /** Open MCP sessions. */
  sessions(): number;
  /** What the bounds did so far: open connections, those closed by each rule, notifications dropped, streams ended. */
  stats(): HttpFrontendStats;
  /**
   * Closes every session and the listener. Idempotent. With `graceMs`, calls in flight first get
   * that long to be answered (new requests are refused meanwhile), as on SIGTERM.
   */
  close(graceMs?: number): Promise<void>;
}

/** See {@link HttpFrontend.stats}. */
export interface HttpFrontendStats {
  connections: { authenticated: number; unauthenticated: number };
  /** Connections closed to make room (`evicted`), refused near the descriptor limit, answered 503 over the cap, closed without the token in time. */
  connectionsClosed: { evicted: number; refused: number; overCap: number; timedOut: number };
  /** Notifications dropped because a stream was not read, over every session so far. */
  droppedNotifications: number;
  /** Streams ended because their client did not read, over every session so far. */
  stalledStreams: number;
}

/** One MCP session: its transport and front end, and whether it is in use. */
interface Session {
  transport: HttpSessionTransport;
  frontend: McpFrontend;
  /** Requests of this session still open (not its GET stream: see the sweep). */
  busy: number;
  /** When it was last used (ms since the epoch). */
  lastActive: number;
}

/** At most one log line per this window for each kind of refused request. */
const REFUSAL_LOG_WINDOW_MS = 10_000;

/** Answers 400 to a request of a session whose `MCP-Protocol-Version` header abridge cannot serve; true when it did. */
function refusedVersion(req: IncomingMessage, res: ServerResponse): boolean {
  const versionError = protocolVersionError(req.headers["mcp-protocol-version"]);
  if (versionError === undefined) return false;
  sendJsonError(res, 400, -32000, versionError);
  return true;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Serves the bridge over streamable HTTP on loopback: stateful sessions (one {@link HttpSessionTransport} and one
 * MCP server per session), Host/Origin checked against loopback, optional bearer token.
 */
export async function startHttpServer(bridge: Bridge, options: HttpServerOptions): Promise<HttpFrontend> {
  const logger = options.logger ?? silentLogger;
  // An empty token would match a request with no Authorization header at all: authentication
  // off, silently. The CLI refuses it with the variable's name; a library caller is refused here.
  if (options.token !== undefined && options.token.trim() === "") {
    throw new AbridgeError(ErrorCode.USAGE, "the bearer token is empty: give a token, or none to serve without one");
  }
  // One line per refused request let any local process fill the log: 10,000 bad tokens, 10,000
  // lines. As the daemon does: a line per window, with the count of those left out.
  const forbidden = new RateLimitedLog(logger, "refused HTTP request", REFUSAL_LOG_WINDOW_MS);
  const unauthorized = new RateLimitedLog(logger, "refused HTTP request: missing or wrong bearer token", REFUSAL_LOG_WINDOW_MS);
  const host = options.host ?? "127.0.0.1";
  if (!LOOPBACK_HOSTS.has(host) && !LOOPBACK_HOSTS.has(`[${host}]`)) {
    throw new AbridgeError(ErrorCode.USAGE, `--http: abridge serves loopback only (127.0.0.1, localhost, ::1), got "${host}"`);
  }
  const maxBody = options.maxBodyBytes ?? 16 * 1024 * 1024;
  const idleMs = options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS;
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const sessions = new Map<string, Session>();
  /** Whether reaching the cap was logged (again once the sessions fell below it). */
  let capLogged = false;
  const connections = new HttpConnections({
    logger,
    ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
    preAuthMs: options.preAuthMs ?? PRE_AUTH_DEADLINE_MS,
    fds: FdBudget.forThisProcess(),
  });
  // Clients of the stateless revision (2026-07-28) share one front end: nothing is kept per client.
  const stateless = createStatelessFrontend(bridge, {
    ...(options.mode ? { mode: options.mode } : {}),
    logger,
    client: "http",
    privateLists: options.token !== undefined,
    ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
  });
  const statelessHttp = new StatelessHttp(stateless, { logger });
  /** Of sessions already closed: what {@link HttpFrontend.stats} sums over every session. */
  const pushbackOfClosed = { droppedNotifications: 0, stalledStreams: 0 };

  /** Marks `session` busy until `res` closes (a POST answered as a stream stays busy while its calls run). */
  const track = (session: Session, res: ServerResponse): void => {
    session.busy += 1;
    session.lastActive = Date.now();
    res.once("close", () => {
      session.busy -= 1;
      session.lastActive = Date.now();
    });
  };

  // Sessions are never closed by clients that just vanish (no DELETE): without expiry every
  // initialize would hold its SDK server and front end for the life of the process. An open GET
  // stream does not keep a session: 50 sessions listening and never calling held a cap of 50 and
  // locked every new client out. A session whose only activity is its stream expires like an idle
  // one, and the stream is ended (its client initializes again, as after any expiry).
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions) {
        if (session.busy > 0 || now - session.lastActive < idleMs) continue;
        sessions.delete(id);
        logger.debug("HTTP session expired", { session: id, idleMs, streaming: session.transport.streaming });
        session.transport.close().catch((err: unknown) => logger.debug("closing an expired session failed", { error: String(err) }));
      }
    },
    Math.max(10, Math.min(Math.floor(idleMs / 2), 30_000)),
  );
  sweep.unref();

  /** The messages of a POST body, or why they are refused (status, JSON-RPC code, message). */
  const messagesOf = (body: unknown): JSONRPCMessage[] | [number, number, string] => {
    const items = Array.isArray(body) ? (body as unknown[]) : [body];
    if (items.length === 0) return [400, -32600, "Invalid Request: empty batch"];
    if (items.length > MAX_BATCH_MESSAGES) return [400, -32600, `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages`];
    const messages: JSONRPCMessage[] = [];
    for (const item of items) {
      const parsed = JSONRPCMessageSchema.safeParse(item);
      if (!parsed.success) return [400, -32600, "Invalid Request: not a JSON-RPC 2.0 message"];
      messages.push(parsed.data);
    }
    return messages;
  };

  const handlePost = async (req: IncomingMessage, res: ServerResponse, sessionId: string | undefined): Promise<void> => {
    let body: unknown;
    try {
      body = await readJsonBody(req, maxBody);
    } catch (err) {
      const status = err instanceof BodyError ? err.status : 400;
      const code = err instanceof BodyError ? err.rpcCode : -32700;
      const what = status === 413 ? "request too large: " : code === -32700 ? "parse error: " : "";
      sendJsonError(res, status, code, `${what}${messageOf(err)}`);
      return;
    }
    if (body === undefined) {
      sendJsonError(res, 400, -32700, "parse error: empty body");
      return;
    }
    const messages = messagesOf(body);
    if (typeof messages[0] === "number") {
      const [status, code, message] = messages as [number, number, string];
      sendJsonError(res, status, code, message);
      return;
    }
    const accept = req.headers.accept;
    // The spec has a client accept both: the answer may be JSON or a stream, decided per request.
    if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream")) {
      sendJsonError(res, 406, -32000, "Not Acceptable: the client must accept both application/json and text/event-stream");
      return;
    }
    if (!isJsonContentType(req.headers["content-type"])) {
      sendJsonError(res, 415, -32000, "Unsupported Media Type: Content-Type must be application/json");
      return;
    }
    const list = messages as JSONRPCMessage[];
    // A request of the stateless revision carries no session; one that does is the handshake era's.
    if (sessionId === undefined) {
      const versionHeader = req.headers["mcp-protocol-version"];
      if (list.some((m) => isStatelessRequest(m, Array.isArray(versionHeader) ? versionHeader[0] : versionHeader))) {
        statelessHttp.handlePost(req, res, list, Array.isArray(body));
        return;
      }
    }
    const initializing = list.some((m) => "method" in m && m.method === "initialize" && "id" in m);
    const existing = sessionId !== undefined ? sessions.get(sessionId) : undefined;
    if (sessionId !== undefined && existing === undefined) {
      sendJsonError(res, 404, -32001, "session not found");
      return;
    }
    if (existing !== undefined) {
      if (initializing) {
        sendJsonError(res, 400, -32600, "Invalid Request: this session is already initialized");
        return;
      }
      if (refusedVersion(req, res)) return;
      track(existing, res);
      existing.transport.handlePost(req, res, list, Array.isArray(body));
      return;
    }
    if (!initializing) {
      sendJsonError(res, 400, -32600, "bad request: no session; the first request must be initialize");
      return;
    }
    if (list.length > 1) {
      sendJsonError(res, 400, -32600, "Invalid Request: initialize must be sent alone");
      return;
    }
    if (sessions.size >= maxSessions) {
      // Retry-After: by then idle sessions may have expired; the cap itself bounds memory.
      const retryAfterS = Math.max(1, Math.min(60, Math.ceil(idleMs / 1000)));
      // Once per time the cap is reached, not once per refused request (a flood would flood the log).
      if (!capLogged) logger.warn("refusing HTTP initialize: too many sessions", { sessions: sessions.size, maxSessions });
      capLogged = true;
      sendJsonError(res, 503, -32000, `server busy: ${maxSessions} sessions are open; retry later or end unused sessions with DELETE`, {
        "retry-after": String(retryAfterS),
      });
      return;
    }
    const session = await openSession();
    track(session, res);
    session.transport.handlePost(req, res, list, Array.isArray(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const target = req.url ?? "/";
    const query = target.indexOf("?");
    if ((query === -1 ? target : target.slice(0, query)) !== MCP_PATH) {
      sendJsonError(res, 404, -32601, `not found: MCP is served at ${MCP_PATH}`);
      return;
    }
    const refused = checkLoopbackRequest(req.headers);
    if (refused) {
      forbidden.warn({ reason: refused });
      sendJsonError(res, 403, -32600, `forbidden: ${refused}`);
      return;
    }
    if (options.token !== undefined) {
      const auth = req.headers.authorization ?? "";
      const given = auth.startsWith("Bearer ") ? auth.slice(7) : "";
      if (!sameSecret(given, options.token)) {
        unauthorized.warn({});
        sendJsonError(res, 401, -32600, "unauthorized: missing or wrong bearer token", { "www-authenticate": 'Bearer realm="abridge"' });
        return;
      }
    }
    if (!connections.authenticate(req.socket)) {
      // The body is read (and let go of) first: closing a connection with unread bytes resets it,
      // and the client would see ECONNRESET instead of the answer. requestTimeout bounds the wait.
      const refuse = (): void =>
        sendJsonError(res, 503, -32000, "server busy: too many connections are open; retry later", { connection: "close", "retry-after": "1" });
      if (req.complete) refuse();
      else req.once("end", refuse).resume();
      return;
    }

    const header = req.headers["mcp-session-id"];
    const sessionId = typeof header === "string" ? header : undefined;
    if (req.method === "POST") {
      await handlePost(req, res, sessionId);
      return;
    }
    if (req.method === "GET" || req.method === "DELETE") {
      const existing = sessionId !== undefined ? sessions.get(sessionId) : undefined;
      if (!existing) {
        sendJsonError(res, sessionId !== undefined ? 404 : 400, -32600, sessionId !== undefined ? "session not found" : "bad request: missing mcp-session-id");
        return;
      }
      if (refusedVersion(req, res)) return;
      if (req.method === "GET") {
        // Opening the stream is a request; holding it open is not activity (see the sweep).
        existing.lastActive = Date.now();
        existing.transport.handleGet(req, res);
      } else {
        track(existing, res);
        existing.transport.handleDelete(res);
      }
      return;
    }
    sendJsonError(res, 405, -32601, `method ${req.method ?? ""} not allowed`, { allow: "GET, POST, DELETE" });
  };

  /** A new session: its own MCP server and front end over the shared bridge. */
  const openSession = async (): Promise<Session> => {
    const id = randomUUID();
    const frontend = createMcpFrontend(bridge, {
      ...(options.mode ? { mode: options.mode } : {}),
      logger,
      client: `http:${id}`,
      ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
    });
    const transport = new HttpSessionTransport(id, {
      logger,
      stallMs: options.streamStallMs ?? DEFAULT_STREAM_STALL_MS,
      maxCallsInFlight: options.maxCallsPerSession ?? DEFAULT_MAX_CALLS_IN_FLIGHT,
    });
    const session: Session = { transport, frontend, busy: 0, lastActive: Date.now() };
    sessions.set(id, session);
    transport.onclose = () => {
      sessions.delete(id);
      pushbackOfClosed.droppedNotifications += transport.pushback.droppedNotifications;
      pushbackOfClosed.stalledStreams += transport.pushback.stalledStreams;
      if (sessions.size < maxSessions) capLogged = false;
      frontend.dispose();
      logger.debug("HTTP session closed", { session: id });
    };
    await frontend.server.connect(transport);
    logger.debug("HTTP session opened", { session: id });
    return session;
  };

  const headersTimeout = options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  const server = http.createServer(
    {
      headersTimeout,
      requestTimeout: Math.max(headersTimeout, options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS),
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, headersTimeout),
    },
    (req, res) => {
      handle(req, res).catch((err: unknown) => {
        logger.error("HTTP request failed", { error: messageOf(err) });
        sendJsonError(res, 500, -32603, "internal error");
      });
    },
  );
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? KEEP_ALIVE_TIMEOUT_MS;
  let closing: Promise<void> | undefined;
  server.on("connection", (socket: Socket) => {
    if (closing !== undefined) socket.destroy();
    else connections.accept(socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err) =>
      reject(new AbridgeError(ErrorCode.USAGE, `--http: cannot listen on ${host}:${options.port}: ${err.message}`, { cause: err })),
    );
    server.listen(options.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}${MCP_PATH}`,
    port,
    sessions: () => sessions.size,
    stats() {
      let { droppedNotifications, stalledStreams } = pushbackOfClosed;
      for (const session of sessions.values()) {
        droppedNotifications += session.transport.pushback.droppedNotifications;
        stalledStreams += session.transport.pushback.stalledStreams;
      }
      return { connections: connections.open, connectionsClosed: connections.closedByRule, droppedNotifications, stalledStreams };
    },
    close(graceMs = 0) {
      closing ??= (async () => {
        clearInterval(sweep);
        if (graceMs > 0) await Promise.allSettled([stateless.drain(graceMs), ...[...sessions.values()].map((s) => s.frontend.drain(graceMs))]);
        statelessHttp.close();
        stateless.dispose();
        await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()));
        sessions.clear();
        server.closeAllConnections();
        connections.clear();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      })();
      return closing;
    },
  };
}
