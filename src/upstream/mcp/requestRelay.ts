import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../log/logger.js";
import type { ClientRelay, JsonObject, UpstreamNotification } from "../../model/types.js";

/** Stands in for the caller of a call that came without a relay (CLI, daemon). */
const NO_RELAY_CLIENT = "\0no-relay";

/** A tools/call in flight and who made it. */
interface CallOwner {
  client: string;
  relay: ClientRelay | undefined;
}

/** Options of a {@link RequestRelay}. */
export interface RequestRelayOptions {
  /** Server name, for refusals. */
  server: string;
  logger: Logger;
  /** Where a log line goes when no single client owns it. */
  onNotification?: (notification: UpstreamNotification) => void;
}

/**
 * Routes what an upstream sends to abridge during tool calls (and prompts/get, resources/read)
 * back to the client that made them: sampling, elicitation and roots requests, and log lines. An
 * upstream's request or log line carries no reference to the call it belongs to (stdio has no
 * such field), so it is routed by elimination: the calls in flight are kept in start order with
 * their client, and when they all come from one client that client is asked. When calls of
 * several clients overlap, a request is refused rather than guessed (guessing could show one
 * user's prompt to another).
 */
export class RequestRelay {
  private readonly server: string;
  private readonly logger: Logger;
  private readonly onNotification: ((notification: UpstreamNotification) => void) | undefined;
  private readonly inFlight = new Map<number, CallOwner>();

  constructor(options: RequestRelayOptions) {
    this.server = options.server;
    this.logger = options.logger;
    this.onNotification = options.onNotification;
  }

  /** A tools/call, prompts/get or resources/read `id` starts, made by the client behind `relay` (none: CLI, daemon). */
  enter(id: number, relay: ClientRelay | undefined): void {
    this.inFlight.set(id, { client: relay?.client ?? NO_RELAY_CLIENT, relay });
  }

  /** The call `id` is over. */
  leave(id: number): void {
    this.inFlight.delete(id);
  }

  /**
   * Whom an upstream request or log line made now belongs to: the most recent call when every
   * call in flight comes from the same client; `ambiguous` when calls of several clients overlap;
   * `none` with no call in flight.
   */
  private target(): CallOwner | "none" | "ambiguous" {
    const calls = [...this.inFlight.values()];
    const last = calls.at(-1);
    if (last === undefined) return "none";
    return calls.every((c) => c.client === last.client) ? last : "ambiguous";
  }

  /** A log line of the upstream: to the client whose calls run now, else server-wide. */
  log(notification: UpstreamNotification): void {
    const target = this.target();
    if (typeof target === "object" && target.relay) target.relay.notify(notification.method, notification.params);
    else this.onNotification?.(notification);
  }

  /**
   * Relays a server->client request of the upstream to the client whose call it is part of.
   *
   * @throws McpError InvalidRequest when no client, or more than one, could be meant.
   */
  async request(method: string, params: JsonObject, signal: AbortSignal): Promise<JsonObject> {
    const target = this.target();
    const name = this.server;
    if (target === "ambiguous") {
      this.logger.warn("refused an upstream request: calls of several clients are in flight", { method });
      throw new McpError(
        RpcErrorCode.InvalidRequest,
        `abridge: ${method} from ${name} arrived while calls of several clients were in flight; abridge cannot tell which client to ask, so it refuses rather than ask the wrong one`,
      );
    }
    if (target === "none" || target.relay === undefined) {
      throw new McpError(
        RpcErrorCode.InvalidRequest,
        `abridge: ${method} from ${name} arrived outside any tools/call, prompts/get or resources/read of a client that can answer it`,
      );
    }
    return target.relay.request(method, params, signal);
  }
}
