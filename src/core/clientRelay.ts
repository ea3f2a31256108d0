import type { JsonObject } from "../model/types.js";

/**
 * The way back to the client a call came from: sampling and elicitation requests and log lines an
 * upstream sends while it runs that call go through it (see {@link BridgeCallOptions.relay}). A
 * front end that can carry them (MCP serve) passes one per call; the daemon and the CLI pass none,
 * and an upstream's request then gets an error.
 */
export interface ClientRelay {
  /** Identifies the downstream client (one per session): calls of one client may share answers. */
  client: string;
  /** Sends a request to that client, related to the call, and resolves with its answer. */
  request(method: string, params: JsonObject, signal: AbortSignal): Promise<JsonObject>;
  /** Sends a notification to that client, related to the call. */
  notify(method: string, params: JsonObject): void;
}

/** A notification of an upstream that no call took: resources/updated, list_changed, log lines outside calls. */
export interface BridgeNotification {
  method: string;
  params: JsonObject;
}
