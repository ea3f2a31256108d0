import type { IncomingMessage, ServerResponse } from "node:http";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { messageOf } from "../model/errors.js";
import { isObject } from "../model/json.js";
import type { JsonObject } from "../model/types.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { SSE_HEADERS, SSE_KEEP_ALIVE, sseEvent } from "./httpWire.js";
import type { StatelessAnswer, StatelessFrontend, StatelessRequest } from "./statelessFrontend.js";
import { httpStatusOf, mcpNameOf, META_PROTOCOL_VERSION, metaError, RPC_HEADER_MISMATCH, type StatelessError } from "./statelessWire.js";

/** How often an open listen stream with nothing to say gets a comment line. */
const KEEP_ALIVE_MS = 15_000;

/** The first value of a header, trimmed (HTTP allows whitespace around a field value). */
function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first?.trim();
}

/**
 * An `Mcp-Name` value as the client meant it: a name that is not plain ASCII travels base64
 * encoded as `=?base64?...?=` (SEP-2243); anything else is taken as it is.
 */
export function decodedName(value: string | undefined): string | undefined {
  const encoded = value === undefined ? undefined : /^=\?base64\?([A-Za-z0-9+/=_-]*)\?=$/i.exec(value);
  return encoded ? Buffer.from(encoded[1]!, "base64").toString("utf8") : value;
}

function sendJson(res: ServerResponse, status: number, message: JsonObject): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end();
    return;
  }
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(message));
}

function errorMessage(id: string | number | null, error: StatelessError): JsonObject {
  return { jsonrpc: "2.0", id, error: error as unknown as JsonObject };
}

/**
 * The HTTP side of stateless (2026-07-28) requests: a POST with one request and no session,
 * answered on its own. The headers are checked as the revision asks before anything runs:
 * `MCP-Protocol-Version` present and equal to the version in `_meta` (else -32020, HTTP 400), and
 * `Mcp-Method` and (for tools/call, prompts/get, resources/read) `Mcp-Name` present and equal to
 * the body's method and tool, prompt or URI, whitespace around them aside and a base64
 * `=?base64?...?=` name decoded (else -32020). Errors carry the request's id and the HTTP
 * status the revision gives their code (400, 404 for an unknown or removed method). The answer
 * is JSON unless something must reach the client first (progress, a log line it asked for):
 * then the response becomes an SSE stream with the answer last. `subscriptions/listen` is an
 * SSE stream that stays open until the client closes it. No session is looked up, made or kept.
 */
export class StatelessHttp {
  private readonly logger: Logger;
  /** Open listen streams, ended when serving stops. */
  private readonly streams = new Set<ServerResponse>();

  constructor(
    private readonly frontend: StatelessFrontend,
    options: { logger?: Logger } = {},
  ) {
    this.logger = options.logger ?? silentLogger;
  }

  /** Handles a POST whose body was read and validated as `messages` (`batch`: it was an array). */
  handlePost(req: IncomingMessage, res: ServerResponse, messages: JSONRPCMessage[], batch: boolean): void {
    if (batch) {
      sendJson(
        res,
        400,
        errorMessage(null, { code: -32600, message: "Invalid Request: protocol revision 2026-07-28 takes one message per POST, not a batch" }),
      );
      return;
    }
    const message = messages[0] as JsonObject;
    if (typeof message.method !== "string") {
      sendJson(res, 400, errorMessage(null, { code: -32600, message: "Invalid Request: a stateless server sends no requests, so it takes no responses" }));
      return;
    }
    const id = message.id as string | number | undefined;
    if (id === undefined) {
      // A notification (e.g. notifications/cancelled): nothing is held for it to act on.
      res.writeHead(202).end();
      return;
    }
    const request: StatelessRequest = { id, method: message.method, params: isObject(message.params) ? message.params : undefined };
    const refused = this.headerError(req, request);
    if (refused !== undefined) {
      sendJson(res, httpStatusOf(refused.code), errorMessage(id, refused));
      return;
    }
    if (request.method === "subscriptions/listen") this.listen(res, request);
    else this.answer(res, request);
  }

  /** Ends every listen stream (serving stops). */
  close(): void {
    for (const res of this.streams) res.end();
    this.streams.clear();
  }

  /**
   * Why the headers do not fit the request, in the revision's order: no version header (-32020),
   * `_meta` missing a required key (-32602), header and `_meta` disagreeing (-32020), a version
   * abridge does not serve statelessly (-32022), the method or name headers disagreeing (-32020).
   */
  private headerError(req: IncomingMessage, request: StatelessRequest): StatelessError | undefined {
    const version = headerOf(req, "mcp-protocol-version");
    if (version === undefined || version === "") return { code: RPC_HEADER_MISMATCH, message: "Bad Request: missing MCP-Protocol-Version header" };
    const meta = isObject(request.params?._meta) ? request.params._meta : undefined;
    const refused = metaError(meta);
    if (refused?.code === -32602) return refused;
    if (meta?.[META_PROTOCOL_VERSION] !== version) {
      return {
        code: RPC_HEADER_MISMATCH,
        message: `Bad Request: MCP-Protocol-Version header ${JSON.stringify(version)} does not match _meta protocolVersion ${JSON.stringify(meta?.[META_PROTOCOL_VERSION])}`,
      };
    }
    if (refused !== undefined) return refused;
    const method = headerOf(req, "mcp-method");
    if (method !== request.method) {
      return {
        code: RPC_HEADER_MISMATCH,
        message:
          method === undefined
            ? `Bad Request: missing Mcp-Method header (the body's method is ${JSON.stringify(request.method)})`
            : `Bad Request: Mcp-Method header ${JSON.stringify(method)} does not match the body's method ${JSON.stringify(request.method)}`,
      };
    }
    const expected = mcpNameOf(request.method, request.params);
    const name = decodedName(headerOf(req, "mcp-name"));
    if (expected !== undefined && name !== expected) {
      return {
        code: RPC_HEADER_MISMATCH,
        message:
          name === undefined
            ? `Bad Request: missing Mcp-Name header (the body names ${JSON.stringify(expected)})`
            : `Bad Request: Mcp-Name header ${JSON.stringify(name)} does not match ${JSON.stringify(expected)} in the body`,
      };
    }
    return undefined;
  }

  private answer(res: ServerResponse, request: StatelessRequest): void {
    const controller = new AbortController();
    let done = false;
    res.once("close", () => {
      if (!done) controller.abort(new Error("client disconnected"));
    });
    let streaming = false;
    const startStream = (): void => {
      if (streaming || res.headersSent) return;
      streaming = true;
      res.writeHead(200, SSE_HEADERS);
      res.flushHeaders();
    };
    const progressToken = isObject(request.params?._meta) ? request.params._meta.progressToken : undefined;
    // Progress is the likely next message: the stream opens at once, as for a session.
    if (progressToken !== undefined) startStream();
    const finish = (answer: StatelessAnswer): void => {
      done = true;
      if (res.destroyed || res.writableEnded) return;
      const message: JsonObject = "result" in answer ? { jsonrpc: "2.0", id: request.id, result: answer.result } : errorMessage(request.id, answer.error);
      if (streaming) {
        res.end(sseEvent(message as JSONRPCMessage));
        return;
      }
      sendJson(res, "result" in answer ? 200 : httpStatusOf(answer.error.code), message);
    };
    this.frontend
      .answer(request, {
        signal: controller.signal,
        notify: (notification) => {
          if (done || res.destroyed || res.writableEnded) return;
          startStream();
          // A client that does not read its stream loses notifications, never the answer.
          if (res.writableNeedDrain) return;
          res.write(sseEvent({ jsonrpc: "2.0", ...notification } as JSONRPCMessage));
        },
      })
      .then(finish, (err: unknown) => {
        this.logger.error("stateless request failed", { method: request.method, error: messageOf(err) });
        finish({ error: { code: -32603, message: "internal error" } });
      });
  }

  private listen(res: ServerResponse, request: StatelessRequest): void {
    let started = false;
    const sink = (notification: { method: string; params: JsonObject }): void => {
      if (res.destroyed || res.writableEnded) return;
      if (!started) {
        started = true;
        res.writeHead(200, SSE_HEADERS);
      }
      if (res.writableNeedDrain) return;
      res.write(sseEvent({ jsonrpc: "2.0", ...notification } as JSONRPCMessage));
    };
    const opened = this.frontend.listen(request, sink);
    if ("error" in opened) {
      sendJson(res, httpStatusOf(opened.error.code), errorMessage(request.id, opened.error));
      return;
    }
    this.streams.add(res);
    const keepAlive = setInterval(() => {
      if (!res.writableNeedDrain && !res.writableEnded) res.write(SSE_KEEP_ALIVE);
    }, KEEP_ALIVE_MS).unref();
    res.once("close", () => {
      clearInterval(keepAlive);
      this.streams.delete(res);
      opened.close();
    });
  }
}
