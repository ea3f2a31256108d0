import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolResultSchema, ErrorCode as RpcCode, McpError, RELATED_TASK_META_KEY, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { silentLogger, type Logger } from "../log/logger.js";
import { isObject } from "../model/json.js";
import type { JsonObject } from "../model/types.js";
import type { McpFrontend, ToolCallContext, ToolCallParams } from "./mcpFrontend.js";

/** Any result object of a request relayed to the client, kept as the client sent it. */
const looseResult = z.looseObject({});

type RequestId = string | number;

/** Keys a JSON-RPC request may carry for this path to take it. */
const REQUEST_KEYS = new Set(["jsonrpc", "id", "method", "params"]);
/** Keys of tools/call params this path understands; anything else (e.g. `task`) goes to the SDK. */
const PARAM_KEYS = new Set(["name", "arguments", "_meta"]);

/**
 * The `tools/call` requests of a stdio client, answered beside the SDK `Server` rather than
 * through it. Profiling `serve` under load showed the SDK's per-request work, not the bridge's, as
 * a large share of each call: the message parsed by zod as a JSON-RPC message, then as a
 * `CallToolRequest` twice (the SDK's tools/call wrapper and the front end's own check), the
 * result parsed again as a `CallToolResult`, plus the promise turns in between. A request of the
 * plain shape (`name`, `arguments`, at most a progress token in `_meta`) is checked here by hand,
 * which accepts exactly what those schemas accept for that shape, and goes to the same
 * {@link McpFrontend.callTool} the SDK handler calls: policy, argument validation, output limits,
 * audit, timeouts, relays and the error mapping are the bridge's and apply the same. Anything
 * else (other methods, task-augmented calls, other `_meta` keys) returns `false` from
 * {@link take} and reaches the SDK server unchanged.
 *
 * What the SDK's protocol layer did for such a request is kept: `notifications/cancelled` for
 * one of these ids aborts it and no answer is sent; the end of the connection aborts all of
 * them; a result that is not the plain text form is checked with the SDK's `CallToolResult`
 * schema and refused the same way (-32602 "Invalid tools/call result").
 */
export class FastToolCalls {
  private readonly inFlight = new Map<RequestId, AbortController>();
  private readonly logger: Logger;

  constructor(
    private readonly frontend: McpFrontend,
    private readonly server: Server,
    private readonly send: (message: JSONRPCMessage) => Promise<void>,
    logger: Logger = silentLogger,
  ) {
    this.logger = logger;
  }

  /** Calls answered on this path and not finished yet. */
  get active(): number {
    return this.inFlight.size;
  }

  /**
   * Takes a parsed message the SDK server need not see: a plain `tools/call`, or the
   * cancellation of one taken before. `false` leaves the message to the SDK server.
   */
  take(message: unknown): boolean {
    if (!isObject(message) || message.jsonrpc !== "2.0") return false;
    if (message.method === "tools/call") return this.takeCall(message);
    if (message.method === "notifications/cancelled") return this.takeCancel(message);
    return false;
  }

  /** Aborts every call still running (the connection is closing), as the SDK does for its own. */
  abortAll(): void {
    const controllers = [...this.inFlight.values()];
    this.inFlight.clear();
    for (const controller of controllers) controller.abort(new McpError(RpcCode.ConnectionClosed, "Connection closed"));
  }

  private takeCall(message: JsonObject): boolean {
    const id = message.id;
    if ((typeof id !== "string" && typeof id !== "number") || this.inFlight.has(id)) return false;
    const params = plainParams(message);
    if (params === undefined) return false;
    const controller = new AbortController();
    this.inFlight.set(id, controller);
    const { server } = this;
    const context: ToolCallContext = {
      signal: controller.signal,
      // As the SDK's `extra` does: nothing more goes out for a call the client cancelled.
      async sendNotification(notification) {
        if (controller.signal.aborted) return;
        await server.notification(notification as never, { relatedRequestId: id });
      },
      async sendRequest(request, signal) {
        if (controller.signal.aborted) throw new McpError(RpcCode.ConnectionClosed, "Request was cancelled");
        return server.request(request as never, looseResult, { signal, relatedRequestId: id });
      },
    };
    this.frontend
      .callTool(params, context)
      .then(
        (result) => {
          if (controller.signal.aborted) return undefined;
          const checked = checkedResult(result);
          if ("error" in checked) return this.send(errorResponse(id, checked.error));
          return this.send({ result: checked.result, jsonrpc: "2.0", id } as JSONRPCMessage);
        },
        (error: unknown) => {
          if (controller.signal.aborted) return undefined;
          return this.send(errorResponse(id, error));
        },
      )
      .catch((err: unknown) => this.logger.debug("tools/call answer not delivered", { error: String(err) }))
      .finally(() => {
        if (this.inFlight.get(id) === controller) this.inFlight.delete(id);
      });
    return true;
  }

  private takeCancel(message: JsonObject): boolean {
    const params = message.params;
    if (!isObject(params)) return false;
    const id = params.requestId;
    if (typeof id !== "string" && typeof id !== "number") return false;
    const controller = this.inFlight.get(id);
    if (controller === undefined) return false;
    this.inFlight.delete(id);
    controller.abort(params.reason);
    return true;
  }
}

/**
 * The params of `message` when it is a tools/call of the plain shape this path takes, else
 * undefined. The checks are those of the SDK's `CallToolRequestSchema` for that shape: a string
 * name, arguments an object when present, `_meta` holding at most a string or integer-like
 * progress token.
 */
function plainParams(message: JsonObject): ToolCallParams | undefined {
  for (const key in message) if (!REQUEST_KEYS.has(key)) return undefined;
  const params = message.params;
  if (!isObject(params) || typeof params.name !== "string") return undefined;
  for (const key in params) if (!PARAM_KEYS.has(key)) return undefined;
  const args = params.arguments;
  if (args !== undefined && !isObject(args)) return undefined;
  const meta = params._meta;
  if (meta !== undefined) {
    if (!isObject(meta)) return undefined;
    for (const key in meta) if (key !== "progressToken") return undefined;
    const token = meta.progressToken;
    if (token !== undefined && typeof token !== "string" && !(typeof token === "number" && Number.isInteger(token))) return undefined;
  }
  return params as unknown as ToolCallParams;
}

/**
 * The result as the SDK server would send it. The common form (text blocks only, an optional
 * boolean `isError`, a `_meta` of untyped keys, no structured content) is what the schema returns unchanged, and
 * is passed without a parse; anything else goes through the SDK's `CallToolResultSchema`, which
 * may normalize it or refuse it as the SDK path does.
 */
function checkedResult(result: JsonObject): { result: JsonObject } | { error: McpError } {
  if (isPlainTextResult(result)) return { result };
  const parsed = CallToolResultSchema.safeParse(result);
  if (parsed.success) return { result: parsed.data as JsonObject };
  return { error: new McpError(RpcCode.InvalidParams, `Invalid tools/call result: ${parsed.error.message}`) };
}

function isPlainTextResult(result: JsonObject): boolean {
  for (const key in result) if (key !== "content" && key !== "isError" && key !== "_meta") return false;
  if (result.isError !== undefined && typeof result.isError !== "boolean") return false;
  // `_meta` is a loose object in the schema: kept as is, except the two keys it gives a type.
  const meta = result._meta;
  if (meta !== undefined) {
    if (!isObject(meta)) return false;
    for (const key in meta) if (key === "progressToken" || key === RELATED_TASK_META_KEY) return false;
  }
  const content = result.content;
  if (!Array.isArray(content)) return false;
  for (const block of content) {
    if (!isObject(block) || block.type !== "text" || typeof block.text !== "string") return false;
    for (const key in block) if (key !== "type" && key !== "text") return false;
  }
  return true;
}

/** The error answer the SDK's protocol layer writes for a handler's failure. */
function errorResponse(id: RequestId, error: unknown): JSONRPCMessage {
  const failure = (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  const code = typeof failure.code === "number" && Number.isSafeInteger(failure.code) ? failure.code : RpcCode.InternalError;
  const message = typeof failure.message === "string" ? failure.message : "Internal error";
  return { jsonrpc: "2.0", id, error: { code, message, ...(failure.data !== undefined ? { data: failure.data } : {}) } } as JSONRPCMessage;
}
