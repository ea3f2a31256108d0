import { randomUUID, timingSafeEqual } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Mode } from "../config/schema.js";
import type { Bridge } from "../core/bridge.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { RateLimitedLog } from "../log/rateLimitedLog.js";
import { HttpSessionTransport } from "./httpSessionTransport.js";
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
   * A session with no request in flight and no open stream for this long is closed (default
   * {@link DEFAULT_SESSION_IDLE_MS}); its client gets 404 and, as the spec says, initializes again.
   */
  sessionIdleMs?: number;
  /** Open sessions at most (default {@link DEFAULT_MAX_SESSIONS}); past it initialize gets 503. */
  maxSessions?: number;
}

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
  /**
   * Closes every session and the listener. Idempotent. With `graceMs`, calls in flight first get
   * that long to be answered (new requests are refused meanwhile), as on SIGTERM.
   */
  close(graceMs?: number): Promise<void>;
}

/** One MCP session: its transport and front end, and whether it is in use. */
interface Session {
  transport: HttpSessionTransport;
  frontend: McpFrontend;
  /** Requests and streams of this session still open. */
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

  /** Marks `session` busy until `res` closes (a long GET stream keeps it alive while it is open). */
  const track = (session: Session, res: ServerResponse): void => {
    session.busy += 1;
    session.lastActive = Date.now();
    res.once("close", () => {
      session.busy -= 1;
      session.lastActive = Date.now();
    });
  };

  // Sessions are never closed by clients that just vanish (no DELETE): without expiry every
  // initialize would hold its SDK server and front end for the life of the process.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions) {
        if (session.busy > 0 || now - session.lastActive < idleMs) continue;
        sessions.delete(id);
        logger.debug("HTTP session expired", { session: id, idleMs });
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
      sendJsonError(res, status, status === 413 ? -32600 : -32700, `${status === 413 ? "request too large" : "parse error"}: ${err instanceof Error ? err.message : String(err)}`);
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
      track(existing, res);
      if (req.method === "GET") existing.transport.handleGet(req, res);
      else existing.transport.handleDelete(res);
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
    const transport = new HttpSessionTransport(id, logger);
    const session: Session = { transport, frontend, busy: 0, lastActive: Date.now() };
    sessions.set(id, session);
    transport.onclose = () => {
      sessions.delete(id);
      if (sessions.size < maxSessions) capLogged = false;
      frontend.dispose();
      logger.debug("HTTP session closed", { session: id });
    };
    await frontend.server.connect(transport);
    logger.debug("HTTP session opened", { session: id });
    return session;
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error("HTTP request failed", { error: err instanceof Error ? err.message : String(err) });
      sendJsonError(res, 500, -32603, "internal error");
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err) => reject(new AbridgeError(ErrorCode.USAGE, `--http: cannot listen on ${host}:${options.port}: ${err.message}`, { cause: err })));
    server.listen(options.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}${MCP_PATH}`,
    port,
    sessions: () => sessions.size,
    close(graceMs = 0) {
      closing ??= (async () => {
        clearInterval(sweep);
        if (graceMs > 0) await Promise.allSettled([...sessions.values()].map((s) => s.frontend.drain(graceMs)));
        await Promise.allSettled([...sessions.values()].map((s) => s.transport.close()));
        sessions.clear();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      })();
      return closing;
    },
  };
}
