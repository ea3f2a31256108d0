import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ErrorCode as RpcCode, McpError, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { silentLogger, type Logger } from "../log/logger.js";
import { isObject } from "../model/json.js";
import type { JsonObject } from "../model/types.js";
import type { McpFrontend, ToolCallContext, ToolCallParams } from "./mcpFrontend.js";
import { checkedResult, plainToolCall, type RequestId } from "./toolCallChecks.js";

/** Any result object of a request relayed to the client, kept as the client sent it. */
const looseResult = z.looseObject({});

/**
 * The `tools/call` requests of a stdio client, answered beside the SDK `Server` rather than
 * through it. Profiling `serve` under load showed the SDK's per-request work, not the bridge's, as
 * a large share of each call: the message parsed by zod as a JSON-RPC message, then as a
 * `CallToolRequest` twice (the SDK's tools/call wrapper and the front end's own check), the
 * result parsed again as a `CallToolResult`, plus the promise turns in between. A request of the
 * plain shape (`name`, `arguments`, at most a progress token in `_meta`) is checked by hand
 * (toolCallChecks.ts, beside the SDK schemas it stands in for), which accepts exactly what those
 * schemas accept for that shape, and goes to the same
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
    const call = plainToolCall(message);
    if (call === undefined || this.inFlight.has(call.id)) return false;
    const { id, params } = call;
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
    void this.answer(id, params, context, controller);
    return true;
  }

  /** Runs one taken call and writes its answer (none once cancelled); one async frame, not a chain of promises. */
  private async answer(id: RequestId, params: ToolCallParams, context: ToolCallContext, controller: AbortController): Promise<void> {
    try {
      let answer: JSONRPCMessage;
      try {
        const checked = checkedResult(await this.frontend.callTool(params, context));
        answer = "error" in checked ? errorResponse(id, checked.error) : ({ result: checked.result, jsonrpc: "2.0", id } as JSONRPCMessage);
      } catch (error) {
        answer = errorResponse(id, error);
      }
      if (!controller.signal.aborted) await this.send(answer);
    } catch (err) {
      this.logger.debug("tools/call answer not delivered", { error: String(err) });
    } finally {
      if (this.inFlight.get(id) === controller) this.inFlight.delete(id);
    }
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

/** The error answer the SDK's protocol layer writes for a handler's failure. */
function errorResponse(id: RequestId, error: unknown): JSONRPCMessage {
  const failure = (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  const code = typeof failure.code === "number" && Number.isSafeInteger(failure.code) ? failure.code : RpcCode.InternalError;
  const message = typeof failure.message === "string" ? failure.message : "Internal error";
  return { jsonrpc: "2.0", id, error: { code, message, ...(failure.data !== undefined ? { data: failure.data } : {}) } } as JSONRPCMessage;
}
