import http from "node:http";
import { AbridgeError, ErrorCode } from "../src/model/errors.js";
import { sleep } from "./measure.js";
import type { Connected } from "./mcpTarget.js";
import { countListedTools } from "./rawStdioClient.js";

/** What a JSON-RPC answer carries that the bench reads. */
interface Answer {
  id?: number | string;
  method?: string;
  result?: unknown;
  error?: { message?: string };
}

const PROTOCOL_VERSION = "2025-06-18";
/** Sockets the agent may open: one per caller at the bench's highest concurrency. */
const MAX_SOCKETS = 64;

/**
 * The answer to request `id` in a POST's body: a JSON object (or batch), or an SSE stream whose
 * `data:` lines carry messages (notifications on the way are skipped).
 */
function answerIn(body: string, contentType: string, id: number): Answer | undefined {
  const candidates: unknown[] = [];
  if (contentType.startsWith("text/event-stream")) {
    for (const line of body.split("\n")) if (line.startsWith("data:")) candidates.push(JSON.parse(line.slice(5)));
  } else {
    const parsed = JSON.parse(body) as unknown;
    candidates.push(...(Array.isArray(parsed) ? parsed : [parsed]));
  }
  return candidates.find((m): m is Answer => typeof m === "object" && m !== null && (m as Answer).id === id && (m as Answer).method === undefined);
}

/**
 * An MCP client over streamable HTTP with no SDK on its side: node:http POSTs on a keep-alive
 * agent (up to 64 sockets, so 64 callers never queue behind each other), JSON or SSE answers read
 * whole. The SDK's own HTTP client tops out near 1,400 calls/s in one process (a fetch, a web
 * stream and an SSE parser per call), below the servers it would measure; this one leaves the
 * figure to the server. Both HTTP rows of the latency bench use it, so their ratio is fair.
 */
export async function connectRawHttp(
  url: string,
  options: { timeoutMs?: number; signal?: AbortSignal; onClose?: () => Promise<void>; pid?: number } = {},
): Promise<Connected> {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
  // Headers shared by every request; the session id joins them once the session exists.
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  let nextId = 1;

  const post = (message: object): Promise<{ status: number; contentType: string; body: string; sessionId?: string }> =>
    new Promise((resolve, reject) => {
      const payload = JSON.stringify(message);
      const req = http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: "POST",
          headers: { ...headers, "content-length": Buffer.byteLength(payload) },
        },
        (res) => {
          res.setEncoding("utf8");
          let body = "";
          res.on("data", (chunk: string) => (body += chunk));
          res.on("end", () => {
            const sessionId = res.headers["mcp-session-id"];
            resolve({
              status: res.statusCode ?? 0,
              contentType: res.headers["content-type"] ?? "",
              body,
              ...(typeof sessionId === "string" ? { sessionId } : {}),
            });
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });

  const request = async (method: string, params: unknown): Promise<unknown> => {
    const id = nextId++;
    const res = await post({ jsonrpc: "2.0", id, method, params });
    if (res.status !== 200) throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${method}: HTTP ${res.status}: ${res.body.slice(0, 200)}`);
    const answer = answerIn(res.body, res.contentType, id);
    if (answer === undefined) throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${method}: no answer in the response`);
    if (answer.error !== undefined) throw new Error(answer.error.message ?? "error");
    return answer.result;
  };

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let lastError: unknown;
  let initialized = false;
  // A server just spawned may not listen yet: retry initialize until it answers.
  while (!initialized && Date.now() < deadline) {
    options.signal?.throwIfAborted();
    try {
      const id = nextId++;
      const res = await post({
        jsonrpc: "2.0",
        id,
        method: "initialize",
        params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "abridge-bench-raw-http", version: "0.1.0" } },
      });
      if (res.status !== 200 || answerIn(res.body, res.contentType, id) === undefined)
        throw new Error(`initialize: HTTP ${res.status}: ${res.body.slice(0, 200)}`);
      if (res.sessionId !== undefined) headers["mcp-session-id"] = res.sessionId;
      headers["mcp-protocol-version"] = PROTOCOL_VERSION;
      initialized = true;
    } catch (err) {
      lastError = err;
      await sleep(200, options.signal);
    }
  }
  if (!initialized) {
    agent.destroy();
    await options.onClose?.();
    throw new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `no MCP server answered at ${url}`, { cause: lastError });
  }
  await post({ jsonrpc: "2.0", method: "notifications/initialized" });

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    if (headers["mcp-session-id"] !== undefined) {
      await new Promise<void>((resolve) => {
        const req = http.request({ agent, host: target.hostname, port: target.port, path: target.pathname, method: "DELETE", headers }, (res) => {
          res.resume();
          res.on("end", resolve);
        });
        req.on("error", () => resolve());
        req.end();
      });
    }
    agent.destroy();
    await options.onClose?.();
  };
  return {
    call: (tool, args) => request("tools/call", { name: tool, arguments: args }),
    listTools: () => countListedTools(request),
    ...(options.pid !== undefined ? { pid: options.pid } : {}),
    close: () => (closing ??= close()),
  };
}
