import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import { jsonTextDeeperThan, MAX_JSON_DEPTH } from "../model/jsonDepth.js";

/** Where MCP is served. */
export const MCP_PATH = "/mcp";

/** Host names a loopback-only server answers to. */
export const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

/** Messages one POST may carry at most (as the SDK's transport allows). */
export const MAX_BATCH_MESSAGES = 100;

/** Headers of every SSE response; the session's id is added per session, once. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  // A buffering reverse proxy would hold progress back until the call ends.
  "x-accel-buffering": "no",
};

/**
 * The name of a Host header (or of an Origin's host) that is exactly `name` or `name:port`
 * ("127.0.0.1:8080" -> "127.0.0.1"; "[::1]:8080" -> "[::1]"), lower-cased; undefined for anything
 * else. Taking what precedes the last colon accepted `127.0.0.1:80@evil.example` as 127.0.0.1.
 */
function hostOf(value: string): string | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[^\s:@/\\[\]?#]+)(?::\d{1,5})?$/.exec(value);
  return match?.[1]?.toLowerCase();
}

/** True when a Host header or an Origin's host names a loopback address, with an optional port and nothing else. */
function isLoopbackHost(value: string): boolean {
  const name = hostOf(value);
  return name !== undefined && LOOPBACK_HOSTS.has(name);
}

/** Origins already checked, with their verdict: a client sends the same one on every request. */
const originVerdicts = new Map<string, string | undefined>();
const MAX_ORIGIN_VERDICTS = 64;

function checkOrigin(origin: string): string | undefined {
  if (originVerdicts.has(origin)) return originVerdicts.get(origin);
  let verdict: string | undefined;
  if (origin === "null") {
    // Sent by sandboxed iframes, file: pages and some redirects: a page that could be anyone's.
    verdict = 'Origin "null" (a sandboxed or local page) is not a loopback origin';
  } else {
    try {
      const url = new URL(origin);
      if ((url.protocol !== "http:" && url.protocol !== "https:") || !isLoopbackHost(url.host))
        verdict = `Origin ${JSON.stringify(origin)} is not a loopback origin`;
    } catch {
      verdict = `Origin ${JSON.stringify(origin)} is not a URL`;
    }
  }
  // Bounded: a client inventing origins must not grow it.
  if (originVerdicts.size < MAX_ORIGIN_VERDICTS) originVerdicts.set(origin, verdict);
  return verdict;
}

/**
 * DNS rebinding defence: a page on evil.example that resolves its name to 127.0.0.1 reaches our
 * port with `Host: evil.example` (and its own Origin). Only loopback names are accepted.
 */
export function checkLoopbackRequest(headers: IncomingHttpHeaders): string | undefined {
  const host = headers.host;
  if (host === undefined || !isLoopbackHost(host)) return `Host ${JSON.stringify(host ?? "")} is not a loopback address`;
  const origin = headers.origin;
  if (origin !== undefined) return checkOrigin(origin);
  return undefined;
}

/** Answers with a JSON-RPC error object (`id: null`: it answers the HTTP request, not one message). */
export function sendJsonError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end();
    return;
  }
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

/**
 * Why a body could not be read: too large (413, -32600), not JSON (400, -32700) or JSON nested
 * deeper than {@link MAX_JSON_DEPTH} (400, -32600).
 */
export class BodyError extends AbridgeError {
  constructor(
    readonly status: 400 | 413,
    message: string,
    options?: { cause?: unknown; rpcCode?: number },
  ) {
    super(ErrorCode.INPUT_INVALID, message, options?.cause !== undefined ? { cause: options.cause } : {});
    this.rpcCode = options?.rpcCode ?? (status === 413 ? -32600 : -32700);
  }

  /** The JSON-RPC code of the answer. */
  readonly rpcCode: number;
}

/**
 * Reads and parses a JSON body of at most `limit` bytes. A body announced larger than the limit
 * is refused before it is read; one that grows past it is refused as soon as it does, and the
 * rest is not buffered. A body nested deeper than {@link MAX_JSON_DEPTH} levels is refused before
 * it is parsed (a 15 MiB run of brackets took 9 s and 1.2 GB to parse, and held up every other
 * session meanwhile). An empty body is `undefined`.
 */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(req.headers["content-length"]);
  if (declared > limit) {
    req.resume();
    return Promise.reject(new BodyError(413, `request body over ${limit} bytes`));
  }
  return new Promise((resolve, reject) => {
    // Most bodies arrive in one chunk: no array, no concat.
    let first: Buffer | undefined;
    let more: Buffer[] | undefined;
    let size = 0;
    let refused = false;
    req.on("data", (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > limit) {
        refused = true;
        first = undefined;
        more = undefined;
        reject(new BodyError(413, `request body over ${limit} bytes`));
        return;
      }
      if (first === undefined) first = chunk;
      else (more ??= [first]).push(chunk);
    });
    req.once("error", (err) => reject(err));
    req.once("end", () => {
      if (refused) return;
      const bytes = more !== undefined ? Buffer.concat(more) : first;
      if (bytes !== undefined && jsonTextDeeperThan(bytes, MAX_JSON_DEPTH)) {
        reject(new BodyError(400, `Invalid Request: JSON nested deeper than ${MAX_JSON_DEPTH} levels; not parsed`, { rpcCode: -32600 }));
        return;
      }
      const text = bytes?.toString("utf8") ?? "";
      if (text.trim() === "") return resolve(undefined);
      try {
        resolve(JSON.parse(text) as unknown);
      } catch (err) {
        reject(new BodyError(400, `invalid JSON: ${messageOf(err)}`, { cause: err }));
      }
    });
  });
}

/** True when an Accept header lists `type` (or a wildcard that covers it). */
export function accepts(header: string | undefined, type: "application/json" | "text/event-stream"): boolean {
  if (header === undefined) return false;
  return header.includes(type) || header.includes("*/*") || header.includes(type === "application/json" ? "application/*" : "text/*");
}

/** True for `application/json`, with or without parameters (`; charset=utf-8`). */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  if (header === "application/json") return true;
  const semicolon = header.indexOf(";");
  return (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase() === "application/json";
}

/**
 * Why an `MCP-Protocol-Version` header is refused, or undefined. Absent is accepted: the spec
 * says a server without it assumes 2025-03-26, and clients of that version never send it.
 */
export function protocolVersionError(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const version = Array.isArray(header) ? header[0] : header;
  if (version !== undefined && SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
  return `Bad Request: unsupported MCP-Protocol-Version ${JSON.stringify(version ?? "")} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")})`;
}

/** One SSE event carrying `message`. */
export function sseEvent(message: JSONRPCMessage): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/** A comment line: keeps an idle SSE stream from being cut by something that times out silence. */
export const SSE_KEEP_ALIVE = ": keepalive\n\n";
