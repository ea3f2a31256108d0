import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { messageOf } from "../model/errors.js";
import { isObject } from "../model/json.js";
import type { JsonObject } from "../model/types.js";
import { silentLogger, type Logger } from "../log/logger.js";
import type { StatelessFrontend } from "./statelessFrontend.js";
import { isStatelessRequest, META_PROTOCOL_VERSION, requestMeta } from "./statelessWire.js";

type RequestId = string | number;

/**
 * The stdio side of stateless (2026-07-28) requests. Over stdio the revision has no headers: a
 * line whose request names its version in `_meta`, or asks for `server/discover` (the probe a
 * client of this revision starts with) or `subscriptions/listen`, is taken here, beside the SDK
 * server, and answered by the {@link StatelessFrontend}; every other line goes on to the
 * handshake-era server as before. A client of that era never sends such a line, so nothing
 * changes for it. `notifications/cancelled` for a request taken here aborts it, or closes its
 * listen stream.
 */
export class StatelessStdio {
  private readonly inFlight = new Map<RequestId, AbortController>();
  private readonly listening = new Map<RequestId, () => void>();
  /** The client sent initialize: it speaks the handshake era on this connection. */
  private handshake = false;
  private readonly logger: Logger;

  constructor(
    private readonly frontend: StatelessFrontend,
    private readonly send: (message: JSONRPCMessage) => Promise<void>,
    logger: Logger = silentLogger,
  ) {
    this.logger = logger;
  }

  /** Takes a parsed line this side answers; `false` leaves it to the handshake-era server. */
  take(message: unknown): boolean {
    if (!isObject(message) || message.jsonrpc !== "2.0" || typeof message.method !== "string") return false;
    const id = message.id;
    if (message.method === "notifications/cancelled") return this.cancel(message);
    // Once a client began the handshake, a line without the revision's _meta is that session's,
    // whatever its method: an older client asking for server/discover gets what it got before.
    const versioned = requestMeta(message)?.[META_PROTOCOL_VERSION] !== undefined;
    if (message.method === "initialize" && !versioned) this.handshake = true;
    if (!isStatelessRequest(message) || (this.handshake && !versioned)) return false;
    // A notification of a stateless client: nothing is kept that it could act on.
    if (typeof id !== "string" && typeof id !== "number") return true;
    const request = { id, method: message.method, params: isObject(message.params) ? message.params : undefined };
    if (request.method === "subscriptions/listen") {
      const opened = this.frontend.listen(request, (notification) => this.write({ jsonrpc: "2.0", ...notification }));
      if ("error" in opened) this.write({ jsonrpc: "2.0", id, error: opened.error as unknown as JsonObject });
      else this.listening.set(id, () => opened.close());
      return true;
    }
    const controller = new AbortController();
    this.inFlight.set(id, controller);
    void this.frontend
      .answer(request, {
        signal: controller.signal,
        notify: (notification) => {
          if (!controller.signal.aborted) this.write({ jsonrpc: "2.0", ...notification });
        },
      })
      .then((answer) => {
        if (controller.signal.aborted) return;
        this.write("result" in answer ? { jsonrpc: "2.0", id, result: answer.result } : { jsonrpc: "2.0", id, error: answer.error as unknown as JsonObject });
      })
      .finally(() => {
        if (this.inFlight.get(id) === controller) this.inFlight.delete(id);
      });
    return true;
  }

  /** Aborts what is running and closes listen streams (the connection is closing). */
  close(): void {
    for (const controller of this.inFlight.values()) controller.abort(new Error("connection closed"));
    this.inFlight.clear();
    for (const close of this.listening.values()) close();
    this.listening.clear();
  }

  private cancel(message: JsonObject): boolean {
    const id = isObject(message.params) ? message.params.requestId : undefined;
    if (typeof id !== "string" && typeof id !== "number") return false;
    const controller = this.inFlight.get(id);
    if (controller !== undefined) {
      this.inFlight.delete(id);
      controller.abort(new Error("cancelled by the client"));
      return true;
    }
    const close = this.listening.get(id);
    if (close === undefined) return false;
    this.listening.delete(id);
    close();
    return true;
  }

  private write(message: JsonObject): void {
    this.send(message as unknown as JSONRPCMessage).catch((err: unknown) => this.logger.debug("stateless answer not delivered", { error: messageOf(err) }));
  }
}
