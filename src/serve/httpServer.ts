import { randomUUID, timingSafeEqual } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest, isJSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Mode } from "../core/toolViews.js";
import type { Bridge } from "../core/bridge.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { RateLimitedLog } from "../log/rateLimitedLog.js";
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
  transport: StreamableHTTPServerTransport;
  frontend: McpFrontend;
  /** Requests and streams of this session still open. */
  busy: number;
  /** When it was last used (ms since the epoch). */
  lastActive: number;
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
export const MCP_PATH = "/mcp";

/** At most one log line per this window for each kind of refused request. */
const REFUSAL_LOG_WINDOW_MS = 10_000;

function hostOf(value: string): string {
  // "127.0.0.1:8080" -> "127.0.0.1"; "[::1]:8080" -> "[::1]"
  if (value.startsWith("[")) return value.slice(0, value.indexOf("]") + 1);
  const colon = value.lastIndexOf(":");
  return colon === -1 ? value : value.slice(0, colon);
}

/**
 * DNS rebinding defence: a page on evil.example that resolves its name to 127.0.0.1 reaches our
 * port with `Host: evil.example` (and its own Origin). Only loopback names are accepted.
 */
export function checkLoopbackRequest(headers: IncomingMessage["headers"]): string | undefined {
  const host = headers.host;
  if (host === undefined || !LOOPBACK_HOSTS.has(hostOf(host))) return `Host ${JSON.stringify(host ?? "")} is not a loopback address`;
  const origin = headers.origin;
  if (origin !== undefined && origin !== "null") {
    let originHost: string;
    try {
      originHost = new URL(origin).host;
    } catch {
      return `Origin ${JSON.stringify(origin)} is not a URL`;
    }
    if (!LOOPBACK_HOSTS.has(hostOf(originHost))) return `Origin ${JSON.stringify(origin)} is not a loopback origin`;
  }
  return undefined;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function sendJsonError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

async function readBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new AbridgeError(ErrorCode.INPUT_INVALID, `request body over ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `invalid JSON: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/**
 * Cancels the requests of a POST whose client went away before their answers were written. The
 * SDK does not: when the response stream closes early its web-standard transport only forgets the
 * stream (the ReadableStream's `cancel`), and a handler's `extra.signal` fires only on
 * `notifications/cancelled` or when the whole session closes, so a dropped call ran on upstream
 * until its `timeout_ms`. Delivering the cancellation the client would have sent aborts the
 * handler's signal, which the bridge passes on (the upstream gets `notifications/cancelled`).
 */
function cancelOnDisconnect(transport: StreamableHTTPServerTransport, res: ServerResponse, body: unknown, logger: Logger): void {
  const ids = (Array.isArray(body) ? body : [body]).filter((m) => isJSONRPCRequest(m)).map((m) => m.id);
  if (ids.length === 0) return;
  res.once("close", () => {
    // A response that was written completely closes too; its requests are finished, not dropped.
    if (res.writableFinished) return;
    logger.debug("HTTP client disconnected; cancelling its requests", { requests: ids.length });
    for (const requestId of ids) {
      transport.onmessage?.({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason: "client disconnected" } });
    }
  });
}

/**
 * Serves the bridge over streamable HTTP on loopback: stateful sessions (one SDK transport and one
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
  /** Initializations under way: counted against the cap before their session exists. */
  let opening = 0;
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

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== MCP_PATH) {
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

    const sessionId = req.headers["mcp-session-id"];
    const existing = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
    if (req.method === "POST") {
      let body: unknown;
      try {
        body = await readBody(req, maxBody);
      } catch (err) {
        sendJsonError(res, err instanceof AbridgeError && err.message.startsWith("request body over") ? 413 : 400, -32700, `parse error: ${err instanceof Error ? err.message : String(err)}`);
        return;
      }
      if (existing) {
        track(existing, res);
        cancelOnDisconnect(existing.transport, res, body, logger);
        await existing.transport.handleRequest(req, res, body);
        return;
      }
      if (typeof sessionId === "string") {
        sendJsonError(res, 404, -32001, "session not found");
        return;
      }
      const initializing = Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
      if (!initializing) {
        sendJsonError(res, 400, -32600, "bad request: no session; the first request must be initialize");
        return;
      }
      if (sessions.size + opening >= maxSessions) {
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
      opening += 1;
      try {
        await openSession(req, res, body);
      } finally {
        opening -= 1;
      }
      return;
    }
    if (req.method === "GET" || req.method === "DELETE") {
      if (!existing) {
        sendJsonError(res, typeof sessionId === "string" ? 404 : 400, -32600, typeof sessionId === "string" ? "session not found" : "bad request: missing mcp-session-id");
        return;
      }
      track(existing, res);
      await existing.transport.handleRequest(req, res);
      return;
    }
    sendJsonError(res, 405, -32601, `method ${req.method ?? ""} not allowed`, { allow: "GET, POST, DELETE" });
  };

  const openSession = async (req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> => {
    const newSessionId = randomUUID();
    const frontend = createMcpFrontend(bridge, {
      ...(options.mode ? { mode: options.mode } : {}),
      logger,
      client: `http:${newSessionId}`,
      ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => newSessionId,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, frontend, busy: 0, lastActive: Date.now() });
        logger.debug("HTTP session opened", { session: id });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      if (sessions.size < maxSessions) capLogged = false;
      frontend.dispose();
      logger.debug("HTTP session closed", { session: transport.sessionId });
    };
    await frontend.server.connect(transport);
    cancelOnDisconnect(transport, res, body, logger);
    await transport.handleRequest(req, res, body);
    if (transport.sessionId === undefined) {
      // The SDK refused the initialize (wrong Accept, bad protocol version...) before a session
      // began: onclose will never fire for this transport, so let go of its front end now.
      frontend.dispose();
      await frontend.server.close().catch(() => undefined);
    }
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
